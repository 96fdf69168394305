// The three services on Redis behind Sentinels, as a platform team runs them: clients submit
// asynchronous images with callbacks at a steady rate, the primary is SIGKILLed mid-run and later
// comes back (the Sentinels make it a replica). Intake must answer 2xx again within 30 s of the
// kill, without restarting any service; every job the store holds ends once, is called back with
// one webhook-id and charged at most once; nothing is written to REDIS_URL's Redis. Replication is
// asynchronous, so without REDIS_WAIT_REPLICAS jobs acknowledged just before the kill may be lost
// with the old primary: their number is reported, not asserted. With REDIS_WAIT_REPLICAS=1 none may be.
import { Redis } from 'ioredis';
import { callbackIdFor, isFinished } from '@media/domain';
import { DispatcherHarness } from '../dispatcher/support/harness';
import { eventually, REDIS_URL } from '../support/stack';
import { TestRedisSentinel } from '../support/redis-sentinel';

const SUBMIT_EVERY_MS = 125;
const SUBMIT_FOR_MS = 24_000;
const KILL_AT_MS = 6_000;
const RELAUNCH_AT_MS = 14_000;
/** Intake must be back within this of the primary's SIGKILL. */
const INTAKE_BACK_WITHIN_MS = 30_000;

const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));

const percentile = (values: number[], p: number) => [...values].sort((a, b) => a - b)[Math.min(values.length - 1, Math.floor((values.length * p) / 100))];

describe.each([0, 1])('REDIS_WAIT_REPLICAS=%i', (waitReplicas) => {
  let sentinel: TestRedisSentinel;
  let h: DispatcherHarness;

  beforeAll(async () => {
    sentinel = await TestRedisSentinel.start();
    h = await DispatcherHarness.start(
      { WEBHOOK_RETRY_SCHEDULE: '200ms,200ms,200ms,200ms,200ms', JOB_LOCK_MS: '2000', REDIS_WAIT_REPLICAS: String(waitReplicas) },
      { redisSentinel: sentinel },
    );
  }, 90_000);

  afterAll(async () => {
    await h?.stop();
    await sentinel?.destroy();
  });

  it('goes on through a promotion: intake back within 30 s, every stored job called back once and charged at most once', async () => {
    const posts = new Map<string, Set<string>>();
    h.receiver.script('/failover', (_n, request) => {
      const body = JSON.parse(request.body) as { data: { id: string } };
      posts.set(body.data.id, (posts.get(body.data.id) ?? new Set()).add(request.headers['webhook-id'] ?? ''));
      return { status: 200 };
    });
    const callbackUrl = h.receiver.url('/failover');
    const started = Date.now();
    let killedAt = 0;
    const accepted: { id: string; atMs: number; tookMs: number }[] = [];
    let retries = 0;

    const submit = async (i: number) => {
      const headers = { authorization: `Bearer ${h.workspace.apiKey}`, 'content-type': 'application/json', 'idempotency-key': `failover-${i}` };
      const body = JSON.stringify({ model: 'pixel-1', prompt: `failover #${i}`, size: '256x256', callback_url: callbackUrl });
      for (;;) {
        const sentMs = Date.now();
        try {
          const res = await fetch(`${h.stack.baseUrl}/v1/images/generations`, { method: 'POST', headers, body, signal: AbortSignal.timeout(10_000) });
          const text = await res.text();
          if (res.status === 202) return void accepted.push({ id: (JSON.parse(text) as { id: string }).id, atMs: Date.now(), tookMs: Date.now() - sentMs });
          if (res.status < 500 && res.status !== 429) throw new Error(`submission ${i}: ${res.status} ${text}`);
        } catch (err) {
          if (String(err).includes('submission')) throw err;
        }
        retries++;
        await pause(250);
      }
    };

    const chaos = (async () => {
      await pause(KILL_AT_MS);
      const old = await sentinel.primaryPort();
      killedAt = Date.now();
      await sentinel.kill(old);
      await pause(RELAUNCH_AT_MS - KILL_AT_MS);
      await sentinel.launchNode(old);
      return old;
    })();
    const submissions: Promise<void>[] = [];
    for (let i = 0; Date.now() - started < SUBMIT_FOR_MS; i++) {
      submissions.push(submit(i));
      await pause(SUBMIT_EVERY_MS);
    }
    const old = await chaos;
    await Promise.all(submissions);

    const firstAfterKill = Math.min(...accepted.filter((a) => a.atMs > killedAt).map((a) => a.atMs));
    const intakeGapMs = firstAfterKill - killedAt;
    const promoted = await sentinel.primaryPort();
    expect(promoted).not.toBe(old);
    await eventually(async () => ((await sentinel.roleOf(old)) === 'slave' ? true : undefined), 30_000, 'the old primary to be a replica');

    // Every job the store holds ends and is called back; acknowledged ones missing from it were lost.
    const ids = accepted.map((a) => a.id);
    await eventually(
      async () => {
        const jobs = await h.stack.jobs.getMany(ids);
        return jobs.every((j) => isFinished(j.status) && posts.has(j.id)) ? true : undefined;
      },
      90_000,
      'every stored job to finish and be called back',
    );
    const jobs = await h.stack.jobs.getMany(ids);
    const lost = ids.filter((id) => !jobs.some((j) => j.id === id));
    const ledger = await h.stack.jobs.ledger(h.workspace.workspaceId);
    const steady = accepted.filter((a) => a.atMs < killedAt).map((a) => a.tookMs);
    console.log(
      `REDIS_WAIT_REPLICAS=${waitReplicas}: ${accepted.length} jobs acknowledged (${retries} retried submissions); intake p50 ${percentile(steady, 50)} ms, p99 ${percentile(steady, 99)} ms before the kill; ` +
        `202 again ${intakeGapMs} ms after the primary's SIGKILL; ${lost.length} acknowledged jobs lost with the old primary`,
    );

    expect(intakeGapMs).toBeLessThan(INTAKE_BACK_WITHIN_MS);
    if (waitReplicas > 0) expect(lost).toEqual([]);
    for (const job of jobs) {
      expect([job.id, [...(posts.get(job.id) ?? [])]]).toEqual([job.id, [callbackIdFor(job.id, `image.${job.status}` as never)]]);
      const charges = ledger.filter((entry) => entry.job_id === job.id).length;
      expect([job.id, job.status, charges]).toEqual([job.id, job.status, job.status === 'completed' ? 1 : 0]);
    }
    // The shared Redis that REDIS_URL names holds nothing of this stack's.
    const shared = new Redis(REDIS_URL);
    try {
      expect(await shared.keys(`${h.stack.prefix}*`)).toEqual([]);
    } finally {
      shared.disconnect();
    }
  }, 240_000);
});
