// The three services on Redis behind Sentinels, as a platform team runs them: clients submit
// asynchronous images with callbacks at a steady rate, the primary is SIGKILLed mid-run and later
// comes back (the Sentinels make it a replica). Intake must answer 2xx again within 30 s of the
// kill, without restarting any service; every job the store holds ends once, is called back with
// one webhook-id and charged at most once; nothing is written to REDIS_URL's Redis. Replication is
// asynchronous, so without REDIS_WAIT_REPLICAS jobs acknowledged just before the kill may be lost
// with the old primary: their number is reported, not asserted. With REDIS_WAIT_REPLICAS=1 none may be.
import { DispatcherHarness } from '../dispatcher/support/harness';
import { eventually } from '../support/stack';
import { TestRedisSentinel } from '../support/redis-sentinel';
import { steadyIntakeThroughFailover } from './support/failover-run';

/** Intake must be back within this of the primary's SIGKILL. */
const INTAKE_BACK_WITHIN_MS = 30_000;

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
    let old = 0;
    const run = await steadyIntakeThroughFailover(h, {
      kill: async () => {
        old = await sentinel.primaryPort();
        await sentinel.kill(old);
      },
      relaunch: () => sentinel.launchNode(old),
      promoted: async () => (await sentinel.primaryPort()) !== old,
      describe: () => sentinel.describe(),
      settled: async () => {
        expect(await sentinel.primaryPort()).not.toBe(old);
        await eventually(async () => ((await sentinel.roleOf(old)) === 'slave' ? true : undefined), 30_000, 'the old primary to be a replica');
      },
    });
    console.log(
      `Sentinel, REDIS_WAIT_REPLICAS=${waitReplicas}: ${run.accepted.length} jobs acknowledged (${run.retries} retried submissions); ` +
        `intake p50 ${run.steady.p50} ms, p99 ${run.steady.p99} ms before the kill; 202 again ${run.intakeGapMs} ms after the primary's SIGKILL; ` +
        `${run.lost.length} acknowledged jobs lost with the old primary; /readyz not 200 (probes, 250 ms apart): ${JSON.stringify(run.notReady)}`,
    );
    // Each service says in its log which node took over, once (on-call reads it there).
    const primary = `127.0.0.1:${await sentinel.primaryPort()}`;
    for (const [name, service] of h.stack.services) {
      const said = service.lines.filter((l) => l.message === 'redis primary changed: the Sentinels promoted a replica').map((l) => l.primary);
      expect({ name, said }).toEqual({ name, said: [primary] });
    }
    expect(run.intakeGapMs).toBeLessThan(INTAKE_BACK_WITHIN_MS);
    if (waitReplicas > 0) expect(run.lost).toEqual([]);
  }, 360_000);
});
