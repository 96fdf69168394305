import { UnrecoverableError, Worker } from 'bullmq';
import { bullPrefix, createLogger } from '@media/common';
import { JobQueue, SchedulePromoter } from '@media/queues';
import { PrivateRedis } from '../support/private-redis';
import { eventually } from '../support/stack';
import { DispatcherHarness } from './support/harness';

/**
 * Spec 8: a callback is marked failed only after attempt 6 has failed. Whatever makes BullMQ give
 * up on one attempt (its retries or stall recoveries used up, a Redis outage) must not end the
 * ladder early: the attempt is made again and the rest of the ladder follows.
 */
const LADDER = { WEBHOOK_RETRY_SCHEDULE: '400ms,400ms,400ms,400ms,400ms', JOB_LOCK_MS: '2000' };

async function expectFullLadder(h: DispatcherHarness, messageId: string, path: string): Promise<void> {
  const fifth = await h.attempts(messageId, 5, 60_000);
  const beforeLast = await h.callbacks.get(messageId);
  if (beforeLast!.ladder_attempt === 5) expect(beforeLast!.state).toBe('pending');
  expect(fifth.length).toBeGreaterThanOrEqual(5);
  const { callback, attempts } = await h.settled(messageId, ['failed'], 60_000);
  expect(attempts.map((a) => a.ladder_attempt)).toEqual([1, 2, 3, 4, 5, 6]);
  // Each was answered with the receiver's 500 (the records in full when one was not, to say why).
  expect(attempts.filter((a) => a.status !== 500)).toEqual([]);
  expect(callback).toMatchObject({ state: 'failed', attempt_count: 6, ladder_attempt: 6, next_attempt_ms: null });
  // Every attempt really reached the receiver, all under the callback's one webhook-id.
  const requests = h.receiver.requestsTo(path);
  expect(requests.length).toBeGreaterThanOrEqual(6);
  expect(new Set(requests.map((r) => r.headers['webhook-id']))).toEqual(new Set([messageId]));
}

describe('when BullMQ gives up on an attempt', () => {
  let h: DispatcherHarness;

  beforeAll(async () => {
    h = await DispatcherHarness.start(LADDER);
  });

  afterAll(async () => {
    await h?.stop();
  });

  it('queues that attempt again and walks the rest of the ladder', async () => {
    const path = '/gave-up';
    h.receiver.script(path, () => ({ status: 500 }));
    const messageId = await h.messageIdOf(await h.jobs.image(h.receiver.url(path), 'given up mid-ladder'));
    await h.attempts(messageId, 2);
    await h.stack.service('webhook-dispatcher').kill('SIGKILL');

    // While no dispatcher runs, a worker whose tries all fail takes attempt 3 once it is due and
    // promoted from the schedule: BullMQ gives up on it at once (as after exhausted retries), for a
    // reason that is not a typed permanent failure.
    const connection = h.stack.redis.duplicate({ maxRetriesPerRequest: null });
    const logger = createLogger('test', 'error');
    const producer = new JobQueue('callback-deliveries', connection, h.stack.prefix, logger);
    const promoter = new SchedulePromoter('callback-deliveries', connection, h.stack.prefix, producer, logger);
    promoter.start();
    const saboteur = new Worker(
      'callback-deliveries',
      async () => {
        throw new UnrecoverableError('Connection is closed.');
      },
      { connection, prefix: bullPrefix(h.stack.prefix, 'callback-deliveries') },
    );
    const deliveries = h.queue('callback-deliveries');
    try {
      await eventually(async () => ((await deliveries.getJobState(`${messageId}.3`)) === 'failed' ? true : undefined), 15_000, 'attempt 3 to fail in BullMQ');
    } finally {
      await promoter.close();
      await producer.close();
      await saboteur.close();
      connection.disconnect();
      await deliveries.close();
    }
    expect((await h.callbacks.get(messageId))?.state).toBe('pending');

    // A dispatcher that starts finds the give-up in the failed set (its `failed` event was lost).
    await h.stack.startService('webhook-dispatcher');
    await expectFullLadder(h, messageId, path);
  });
});

describe('a Redis outage mid-ladder', () => {
  let redis: PrivateRedis;
  let h: DispatcherHarness;

  beforeAll(async () => {
    redis = await PrivateRedis.start();
    h = await DispatcherHarness.start({ ...LADDER, REDIS_URL: redis.url });
  });

  afterAll(async () => {
    await h?.stop();
    await redis?.destroy();
  });

  it('still makes all six attempts, and every service keeps logging JSON only', async () => {
    const path = '/outage';
    h.receiver.script(path, () => ({ status: 500 }));
    const messageId = await h.messageIdOf(await h.jobs.image(h.receiver.url(path), 'outage mid-ladder'));
    await h.attempts(messageId, 2);

    // Killed, not shut down: longer than the job lock, so running attempts lose their locks.
    await redis.kill();
    const down = h.receiver.requestsTo(path).length;
    await new Promise((r) => setTimeout(r, 5_000)); // the outage itself, not a synchronisation
    await redis.launch();
    expect(h.receiver.requestsTo(path).length).toBeLessThanOrEqual(down + 1);

    await expectFullLadder(h, messageId, path);
    for (const name of ['api-gateway', 'generator', 'webhook-dispatcher'] as const) {
      expect(h.stack.service(name).nonJson).toEqual([]);
    }
  });
});
