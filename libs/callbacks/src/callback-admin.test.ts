import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import type { JobQueue } from '@media/queues';
import { CallbackRepository } from './callback-store';
import type { CallbackRecord } from '@media/domain';
import { IdempotencyRepository } from '@media/jobs';
import { CallbackAdmin, RECOVERY_ATTEMPTS_PER_SECOND } from './callback-admin';
import { IdempotencyKeyReusedError } from './errors';
import { allKeys } from '../../../test/support/store-keys';

const redis = new Redis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379');
const keys = allKeys(`test-${randomBytes(6).toString('hex')}`);
const callbacks = new CallbackRepository(redis, keys);

afterAll(async () => {
  const found = (await Promise.all(keys.patterns.map((pattern) => redis.keys(pattern)))).flat();
  if (found.length > 0) await redis.del(...found);
  redis.disconnect();
});

/** The deliveries queue as the admin uses it: what it was asked to queue. */
function fakeQueue(fail?: () => boolean) {
  const added: { messageId: string; jobId: string; delay: number }[] = [];
  const queue: Pick<JobQueue<'callback-deliveries'>, 'add' | 'addBulk'> = {
    add: async (_name, payload, opts) => {
      if (fail?.()) throw new Error('Redis is away');
      added.push({ messageId: (payload as { messageId: string }).messageId, jobId: String(opts?.jobId), delay: Number(opts?.delay ?? 0) });
    },
    addBulk: async (jobs) => {
      for (const job of jobs)
        added.push({ messageId: (job.payload as { messageId: string }).messageId, jobId: String(job.opts?.jobId), delay: Number(job.opts?.delay) });
    },
  };
  return { added, ...queue };
}

async function failedCallback(ws: string, url: string, createdMs: number, type: CallbackRecord['type'] = 'image.completed'): Promise<CallbackRecord> {
  const id = `msg_${randomBytes(8).toString('hex')}`;
  const { callback } = await callbacks.create({
    id,
    workspace_id: ws,
    job_id: `req_${id}`,
    type,
    url,
    event_ms: createdMs,
    created_ms: createdMs,
    state: 'pending',
    attempt_count: 0,
    ladder_attempt: 0,
    next_attempt_ms: null,
    delivered_ms: null,
    last_attempt_ms: null,
  });
  return (await callbacks.giveUp(callback, createdMs + 1))!;
}

describe('CallbackAdmin recovery to one destination', () => {
  it('retries only the failed callbacks sent to that origin, whatever their path or query, and counts them the same before', async () => {
    const ws = `ws_${randomBytes(6).toString('hex')}`;
    const now = Date.now();
    const down = [
      await failedCallback(ws, 'https://down.example.test/hooks?token=a', now - 3_000),
      await failedCallback(ws, 'https://down.example.test:443/other', now - 2_000),
    ];
    await failedCallback(ws, 'https://up.example.test/hooks', now - 2_500);
    await failedCallback(ws, 'https://down.example.test:8443/hooks', now - 1_500);
    await failedCallback(`${ws}_other`, 'https://down.example.test/hooks', now - 1_000);

    const queue = fakeQueue();
    const admin = new CallbackAdmin({ callbacks, deliveries: queue, now: () => now });
    const window = { sinceMs: 0, origin: 'https://down.example.test:443' };
    expect(await admin.previewRecovery(ws, window)).toEqual({
      sinceMs: 0,
      untilMs: now,
      origin: 'https://down.example.test:443',
      count: 2,
      ratePerSecond: RECOVERY_ATTEMPTS_PER_SECOND,
    });
    expect(queue.added).toEqual([]);

    const recovery = await admin.recover(ws, window);
    expect(recovery).toMatchObject({ origin: 'https://down.example.test:443', count: 2 });
    expect(queue.added.map((a) => a.messageId)).toEqual(down.map((cb) => cb.id));
    // Oldest first, at the recovery's pace.
    expect(queue.added[1]!.delay - queue.added[0]!.delay).toBe(1000 / RECOVERY_ATTEMPTS_PER_SECOND);

    // Without an origin: every failed callback of the workspace.
    expect((await admin.previewRecovery(ws, { sinceMs: 0 })).count).toBe(4);
  });
});

describe('CallbackAdmin recovery of one kind of job', () => {
  it('retries only the failed callbacks of that kind, within the window and to the destination when given', async () => {
    const ws = `ws_${randomBytes(6).toString('hex')}`;
    const now = Date.now();
    const videos = [
      await failedCallback(ws, 'https://down.example.test/hooks', now - 3_000, 'video.completed'),
      await failedCallback(ws, 'https://down.example.test/hooks', now - 2_000, 'video.failed'),
    ];
    await failedCallback(ws, 'https://down.example.test/hooks', now - 2_500, 'image.completed');
    await failedCallback(ws, 'https://up.example.test/hooks', now - 1_000, 'video.completed');

    const queue = fakeQueue();
    const admin = new CallbackAdmin({ callbacks, deliveries: queue, now: () => now });
    expect((await admin.previewRecovery(ws, { sinceMs: 0, kind: 'video' })).count).toBe(3);
    expect((await admin.previewRecovery(ws, { sinceMs: 0, kind: 'image' })).count).toBe(1);
    expect((await admin.previewRecovery(ws, { sinceMs: now - 2_500, kind: 'video', origin: 'https://down.example.test:443' })).count).toBe(1);
    const recovery = await admin.recover(ws, { sinceMs: 0, kind: 'video', origin: 'https://down.example.test:443' });
    expect(recovery.count).toBe(2);
    expect(queue.added.map((a) => a.messageId)).toEqual(videos.map((cb) => cb.id));
  });
});

describe('CallbackAdmin manual retry with an Idempotency-Key', () => {
  const idempotency = new IdempotencyRepository(redis, keys, 86_400);

  it('queues one attempt per key, answers repeats with it, and refuses the key for another callback', async () => {
    const ws = `ws_${randomBytes(6).toString('hex')}`;
    const [one, two] = [await failedCallback(ws, 'https://a.example.test/h', Date.now()), await failedCallback(ws, 'https://a.example.test/h', Date.now())];
    const queue = fakeQueue();
    const admin = new CallbackAdmin({ callbacks, deliveries: queue, idempotency });
    const first = await admin.retryNow(ws, one.id, 'k1');
    const again = await admin.retryNow(ws, one.id, 'k1');
    expect([first.replayed, again.replayed, again.request_id]).toEqual([false, true, first.request_id]);
    expect(queue.added.map((a) => a.jobId)).toEqual([first.request_id]);
    await expect(admin.retryNow(ws, two.id, 'k1')).rejects.toThrow(IdempotencyKeyReusedError);
    // Another workspace's same key is a key of its own; without a key every call is an attempt.
    const elsewhere = await failedCallback(`${ws}_b`, 'https://a.example.test/h', Date.now());
    expect((await admin.retryNow(`${ws}_b`, elsewhere.id, 'k1')).replayed).toBe(false);
    await admin.retryNow(ws, one.id);
    await admin.retryNow(ws, one.id);
    expect(queue.added).toHaveLength(4);
  });

  it('leaves the key to the next repeat at once when queueing failed, which queues the same request', async () => {
    const ws = `ws_${randomBytes(6).toString('hex')}`;
    const cb = await failedCallback(ws, 'https://a.example.test/h', Date.now());
    let down = true;
    const queue = fakeQueue(() => down);
    const admin = new CallbackAdmin({ callbacks, deliveries: queue, idempotency });
    await expect(admin.retryNow(ws, cb.id, 'k2')).rejects.toThrow(/Redis is away/);
    down = false;
    const [retried, racing] = await Promise.all([admin.retryNow(ws, cb.id, 'k2'), admin.retryNow(ws, cb.id, 'k2')]);
    expect(retried.request_id).toBe(racing.request_id);
    // Under the failed call's id: had its add reached Redis after all, BullMQ would take it once.
    expect(queue.added.map((a) => a.jobId)).toEqual([retried.request_id]);
    expect(await admin.retryNow(ws, cb.id, 'k2')).toMatchObject({ replayed: true, request_id: retried.request_id });
    expect(queue.added).toHaveLength(1);
  });

  it('queues the attempt of a call that died between its claim and queueing, once the claim is old, and only once', async () => {
    const ws = `ws_${randomBytes(6).toString('hex')}`;
    const cb = await failedCallback(ws, 'https://a.example.test/h', Date.now());
    let now = Date.now();
    // The dead call's claim: made, never marked queued.
    await idempotency.claim(ws, 'k3', `retry ${cb.id}`, `${cb.id}.manual.123`, now);
    const queue = fakeQueue();
    const admin = new CallbackAdmin({ callbacks, deliveries: queue, idempotency, now: () => now });
    // Soon after, the first call may still be queueing it: nothing more is queued.
    expect((await admin.retryNow(ws, cb.id, 'k3')).request_id).toBe(`${cb.id}.manual.123`);
    expect(queue.added).toEqual([]);
    now += 31_000;
    const repeats = await Promise.all([admin.retryNow(ws, cb.id, 'k3'), admin.retryNow(ws, cb.id, 'k3'), admin.retryNow(ws, cb.id, 'k3')]);
    expect(repeats.map((r) => r.request_id)).toEqual(Array(3).fill(`${cb.id}.manual.123`));
    expect(queue.added.map((a) => a.jobId)).toEqual([`${cb.id}.manual.123`]);
    now += 60_000;
    await admin.retryNow(ws, cb.id, 'k3');
    expect(queue.added).toHaveLength(1);
  });
});
