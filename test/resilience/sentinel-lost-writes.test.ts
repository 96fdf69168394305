// What a promotion loses, forced: the replica is cut off its primary (it can no longer
// authenticate) while clients go on submitting, and 1.5 s later the primary is SIGKILLed and the
// Sentinels promote the replica, which lacks everything of those 1.5 s: jobs accepted (their 202
// sent), jobs finished and charged, callbacks attempted. Without REDIS_WAIT_REPLICAS the accepted
// ones are gone; everything the store kept must still be repaired to the contract: every job ends,
// is called back with exactly one webhook-id (a delivery whose record was lost is made again, under
// the same id) and is charged exactly once if completed, never if not, although its finish and
// charge were lost and made again.
import { DispatcherHarness } from '../dispatcher/support/harness';
import { eventually } from '../support/stack';
import { TestRedisSentinel } from '../support/redis-sentinel';
import { steadyIntakeThroughFailover } from './support/failover-run';

const LOSS_WINDOW_MS = 1_500;

let sentinel: TestRedisSentinel;
let h: DispatcherHarness;

beforeAll(async () => {
  sentinel = await TestRedisSentinel.start();
  h = await DispatcherHarness.start({ WEBHOOK_RETRY_SCHEDULE: '200ms,200ms,200ms,200ms,200ms', JOB_LOCK_MS: '2000' }, { redisSentinel: sentinel });
}, 90_000);

afterAll(async () => {
  await h?.stop();
  await sentinel?.destroy();
});

it('repairs what a promotion lost: every job the new primary has ends, called back under one webhook-id, charged once if completed', async () => {
  let old = 0;
  let replica = 0;
  const run = await steadyIntakeThroughFailover(h, {
    kill: async () => {
      old = await sentinel.primaryPort();
      replica = sentinel.dataPorts.find((port) => port !== old)!;
      await sentinel.cutReplication(replica);
      await new Promise((r) => setTimeout(r, LOSS_WINDOW_MS));
      await sentinel.kill(old);
      await sentinel.restoreReplication(replica);
    },
    relaunch: () => sentinel.launchNode(old),
    describe: () => sentinel.describe(),
    settled: async () => {
      expect(await sentinel.primaryPort()).toBe(replica);
      await eventually(async () => ((await sentinel.roleOf(old)) === 'slave' ? true : undefined), 30_000, 'the old primary to be a replica');
    },
  });
  console.log(
    `Sentinel, ${LOSS_WINDOW_MS} ms of writes lost in the promotion: ${run.accepted.length} jobs acknowledged, ${run.lost.length} of them lost; ` +
      `every other one repaired (ended, called back under one webhook-id, charged once if completed); 202 again ${run.intakeGapMs} ms after the kill`,
  );
  // The scenario must have lost something, or it proved nothing about repairs.
  expect(run.lost.length).toBeGreaterThan(0);
}, 360_000);
