import { bullKey, type CrashPoint } from '@media/common';
import { DispatcherHarness } from '../dispatcher/support/harness';
import { api, type ServiceName } from '../support/stack';
import { shardOfId } from '@media/domain';
import { idempotencyKeyHash } from '@media/jobs';

/**
 * A SIGKILL between any two writes of acceptance, completion and delivery loses and duplicates
 * nothing. Each case restarts one service with a crash point set (FAULT_CRASH_POINTS), makes it
 * reach that line and die there, restarts it without the point, and checks the invariants: the
 * job ends once, it is charged once if completed, and its callback reaches the receiver with one
 * event type and one webhook-id.
 */
let h: DispatcherHarness;

beforeAll(async () => {
  h = await DispatcherHarness.start({ WEBHOOK_RETRY_SCHEDULE: '300ms,300ms,300ms,300ms,300ms', JOB_LOCK_MS: '2000' });
});

afterAll(async () => {
  await h?.stop();
});

/** Restarts `service` with `point` armed; `died` resolves once the process has died at it. */
async function armed(service: ServiceName, point: CrashPoint): Promise<{ died: Promise<number | null> }> {
  await h.stack.service(service).kill('SIGKILL');
  const armedProcess = await h.stack.startService(service, { FAULT_CRASH_POINTS: point });
  // Wrapped: an async function returning the promise itself would wait for the exit.
  return { died: armedProcess.waitForExit() };
}

async function restart(service: ServiceName): Promise<void> {
  await h.stack.startService(service);
}

/** The invariants of one job: ended once, charged iff completed, called back with one id and type. */
async function expectEndedOnce(jobId: string, path: string, status: 'completed' | 'failed' = 'completed'): Promise<void> {
  const messageId = await h.messageIdOf(jobId);
  const { callback } = await h.settled(messageId, ['delivered'], 40_000);
  expect(callback.job_id).toBe(jobId);
  const job = await h.stack.jobs.get(jobId);
  expect(job?.status).toBe(status);
  const charges = (await h.stack.jobs.ledger(h.workspace.workspaceId)).filter((e) => e.job_id === jobId);
  expect(charges).toHaveLength(status === 'completed' ? 1 : 0);
  const requests = h.receiver.requestsTo(path);
  expect(requests.length).toBeGreaterThanOrEqual(1);
  expect(new Set(requests.map((r) => r.headers['webhook-id']))).toEqual(new Set([messageId]));
  expect(new Set(requests.map((r) => JSON.parse(r.body).type))).toEqual(new Set([`${jobId.startsWith('video_') ? 'video' : 'image'}.${status}`]));
}

describe('acceptance', () => {
  it('runs a job whose gateway died after storing it and before queueing it (intake repair)', async () => {
    const { died } = await armed('api-gateway', 'intake.stored');
    const call = api(h.stack, h.workspace.apiKey);
    const path = '/intake-stored';
    // The client gets no answer: the connection drops with the process.
    await expect(
      call('/v1/videos', { method: 'POST', json: { prompt: 'orphan', seconds: 1, size: '640x360', callback_url: h.receiver.url(path) } }),
    ).rejects.toThrow();
    await died;
    await restart('api-gateway');
    // The job was stored, so it is listed; the generator's intake repair queues it.
    const listed = await call('/v1/videos');
    const video = listed.json.data.find((v: { prompt: string }) => v.prompt === 'orphan');
    expect(video).toBeDefined();
    await expectEndedOnce(video.id, path);
  });

  it('answers a retry with the same Idempotency-Key with the one job, after the gateway died having queued it', async () => {
    const { died } = await armed('api-gateway', 'intake.queued');
    const call = api(h.stack, h.workspace.apiKey);
    const path = '/intake-queued';
    const request = {
      method: 'POST',
      headers: { 'idempotency-key': 'crash-once' },
      json: { prompt: 'queued then crashed', size: '256x256', callback_url: h.receiver.url(path) },
    };
    await expect(call('/v1/images/generations', request)).rejects.toThrow();
    await died;
    await restart('api-gateway');
    const retried = await call('/v1/images/generations', request);
    expect(retried.status).toBe(202);
    expect(retried.headers.get('idempotent-replayed')).toBe('true');
    await expectEndedOnce(retried.json.id, path);
    // One job for the key: the workspace's image index holds it once.
    expect(await h.stack.redis.zscore(h.stack.keys.workspaceImages(h.workspace.workspaceId), retried.json.id)).not.toBeNull();
    expect(await h.stack.redis.zscore(h.stack.keys.intake(shardOfId(retried.json.id)), retried.json.id)).toBeNull();
  });
});

describe('an edit whose gateway died between claiming its Idempotency-Key and storing its job', () => {
  it('tells a repeat to retry while the claim is young, then makes the job under the claimed id, once', async () => {
    const { died } = await armed('api-gateway', 'intake.claimed');
    const call = api(h.stack, h.workspace.apiKey);
    const path = '/intake-claimed';
    const png = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==';
    const request = {
      method: 'POST',
      headers: { 'idempotency-key': 'claimed-then-crashed' },
      json: { prompt: 'claimed then crashed', size: '256x256', image: `data:image/png;base64,${png}`, callback_url: h.receiver.url(path) },
    };
    await expect(call('/v1/images/edits', request)).rejects.toThrow();
    await died;
    await restart('api-gateway');
    const claimKey = h.stack.keys.idempotency(h.workspace.workspaceId, idempotencyKeyHash('claimed-then-crashed'));
    const claim = JSON.parse((await h.stack.redis.get(claimKey))!) as { job_id: string; claimed_ms: number };
    expect(await h.stack.jobs.get(claim.job_id)).toBeUndefined();

    // The gateway cannot tell a dead request from one still storing its uploads until the claim is old.
    const early = await call('/v1/images/edits', request);
    expect([early.status, early.json.error?.code, early.headers.get('retry-after')]).toEqual([409, 'idempotency_key_in_use', '1']);
    // Five minutes on (the claim's time moved back, as waiting would leave it):
    await h.stack.redis.set(claimKey, JSON.stringify({ ...claim, claimed_ms: claim.claimed_ms - 301_000 }), 'KEEPTTL');
    const retried = await call('/v1/images/edits', request);
    expect([retried.status, retried.headers.get('idempotent-replayed'), retried.json.id]).toEqual([202, 'true', claim.job_id]);
    await expectEndedOnce(claim.job_id, path);
  });
});

describe('acceptance when queueing fails after the job was stored', () => {
  it('answers with the job, which the intake repair then queues: no 503 that would invite a duplicate', async () => {
    const call = api(h.stack, h.workspace.apiKey);
    const path = '/queue-refused';
    // A queue meta key of the wrong type makes BullMQ's add script fail before it writes the job
    // (it reads the meta first), as a dropped connection would: the job record is already stored.
    const metaKey = bullKey(h.stack.prefix, 'generation', 'meta');
    const savedKey = `${metaKey}.saved`;
    await h.stack.service('generator').kill('SIGKILL');
    const hadMeta = (await h.stack.redis.exists(metaKey)) === 1;
    if (hadMeta) await h.stack.redis.rename(metaKey, savedKey);
    await h.stack.redis.set(metaKey, 'not a hash');
    let accepted;
    try {
      accepted = await call('/v1/images/generations', {
        method: 'POST',
        json: { prompt: 'queued later', size: '256x256', callback_url: h.receiver.url(path) },
      });
    } finally {
      await h.stack.redis.del(metaKey);
      if (hadMeta) await h.stack.redis.rename(savedKey, metaKey);
    }
    expect(accepted.status).toBe(202);
    expect(await h.stack.redis.zscore(h.stack.keys.intake(shardOfId(accepted.json.id)), accepted.json.id)).not.toBeNull();
    await restart('generator');
    await expectEndedOnce(accepted.json.id, path);
  });
});

describe('completion', () => {
  it.each([['generation.rendered' as const], ['generation.finished' as const]])('finishes and charges once after a crash at %s', async (point) => {
    const { died } = await armed('generator', point);
    const path = `/${point}`;
    const jobId = await h.jobs.image(h.receiver.url(path), `crash at ${point}`);
    expect(await died).toBeNull(); // killed by SIGKILL
    await restart('generator');
    await expectEndedOnce(jobId, path);
  });
});

describe('delivery', () => {
  // After `delivery.sent` the unrecorded attempt 1 is made again (and now succeeds): at least once.
  it.each([
    ['callback.created' as const, [500, 200]],
    ['delivery.sent' as const, [200]],
    ['delivery.recorded' as const, [500, 200]],
  ])('records each ladder step once, with one webhook-id, after a crash at %s', async (point, statuses) => {
    const path = `/${point}`;
    // The first answer fails, so a crash after recording it must still lead to attempt 2.
    h.receiver.script(path, (n) => (n === 1 ? { status: 500 } : { status: 200 }));
    const { died } = await armed('webhook-dispatcher', point);
    const jobId = await h.jobs.image(h.receiver.url(path), `crash at ${point}`);
    expect(await died).toBeNull();
    await restart('webhook-dispatcher');
    await expectEndedOnce(jobId, path);
    const messageId = await h.messageIdOf(jobId);
    const attempts = await h.callbacks.attempts(messageId);
    // One record per ladder step however often a step was sent.
    expect(attempts.map((a) => a.ladder_attempt)).toEqual(statuses.map((_, i) => i + 1));
    expect(attempts.map((a) => a.status)).toEqual(statuses);
    expect(h.receiver.requestsTo(path)).toHaveLength(2);
  });
});
