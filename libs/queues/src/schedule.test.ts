import { randomBytes } from 'node:crypto';
import { Queue, Worker } from 'bullmq';
import { Redis } from 'ioredis';
import { LEGACY_SHARD, scheduledAttemptId } from '@media/domain';
import { bullPrefix, createLogger, scheduleKey } from '@media/common';
import { JobQueue } from './queue';
import { QueueDepth } from './depth';
import { SchedulePromoter } from './schedule';

const redis = new Redis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379', { maxRetriesPerRequest: null });
const prefix = `test-${randomBytes(6).toString('hex')}`;
const logger = createLogger('test', 'error');
const producer = new JobQueue('callback-deliveries', redis, prefix, logger);
const inspect = new Queue('callback-deliveries', { connection: redis, prefix: bullPrefix(prefix, 'callback-deliveries') });
const key = scheduleKey(prefix, 'callback-deliveries', LEGACY_SHARD);
const promoter = new SchedulePromoter('callback-deliveries', redis, prefix, producer, logger);

afterAll(async () => {
  await promoter.close();
  await producer.close();
  await inspect.obliterate({ force: true });
  await inspect.close();
  await redis.del(key);
  redis.disconnect();
});

describe('SchedulePromoter', () => {
  it('adds due entries as jobs under their own ids, leaves future ones, and counts both as delayed', async () => {
    const now = Date.now();
    const due = scheduledAttemptId('msg_due1', 2);
    const later = scheduledAttemptId('msg_later', 3);
    await redis.zadd(key, now - 5_000, due, now + 60_000, later);

    const depth = new QueueDepth(redis, prefix);
    const before = await depth.read('callback-deliveries', now);
    expect(before.jobs).toMatchObject({ delayed: 2, delayed_due: 1, waiting: 0 });
    expect(before.backlog).toBe(1);
    expect(before.oldestWaitingSeconds).toBeCloseTo(5, 0);

    expect(await promoter.promoteDue(now)).toBe(1);
    const job = await inspect.getJob(due);
    expect(job?.name).toBe('deliver');
    expect(job?.data).toEqual({ messageId: 'msg_due1', attempt: 2, trigger: 'scheduled' });
    expect(await job?.isWaiting()).toBe(true);
    expect(await redis.zrange(key, 0, -1)).toEqual([later]);
    expect((await depth.read('callback-deliveries', now)).jobs).toMatchObject({ delayed: 1, delayed_due: 0, waiting: 1 });
  });

  it('adds nothing twice when an entry is promoted again (a crash between the add and the removal)', async () => {
    const entry = scheduledAttemptId('msg_twice', 4);
    await redis.zadd(key, Date.now() - 1, entry);
    expect(await promoter.promoteDue()).toBe(1);
    await redis.zadd(key, Date.now() - 1, entry);
    await promoter.promoteDue();
    expect((await inspect.getJobs(['waiting'])).filter((j) => j.id === entry)).toHaveLength(1);
    expect(await redis.zscore(key, entry)).toBeNull();
  });

  it('drops an entry that names no job rather than stopping the schedule', async () => {
    await redis.zadd(key, Date.now() - 1, 'not-a-delivery', Date.now() - 1, scheduledAttemptId('msg_after', 2));
    await promoter.promoteDue();
    expect(await redis.zscore(key, 'not-a-delivery')).toBeNull();
    expect(await inspect.getJob(scheduledAttemptId('msg_after', 2))).toBeDefined();
  });

  it('promotes on its own once started, when the entry falls due', async () => {
    const entry = scheduledAttemptId('msg_loop', 5);
    promoter.start();
    await redis.zadd(key, Date.now() + 300, entry);
    const deadline = Date.now() + 10_000;
    while (!(await inspect.getJob(entry)) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    expect(await inspect.getJob(entry)).toBeDefined();
    await promoter.close();
    await promoter.close();
  });
});

describe('SchedulePromoter beside another promoter (one per dispatcher replica)', () => {
  /** Runs every delivery job at once, as a worker does with an attempt its destination has no slot for, and counts the runs per job id. */
  async function countingWorker(): Promise<{ runs: string[]; close(): Promise<void> }> {
    const runs: string[] = [];
    const connection = redis.duplicate();
    const worker = new Worker('callback-deliveries', async (job) => void runs.push(job.id!), {
      connection,
      prefix: bullPrefix(prefix, 'callback-deliveries'),
    });
    await worker.waitUntilReady();
    return {
      runs,
      close: async () => {
        await worker.close();
        connection.disconnect();
      },
    };
  }

  /** Until `entry`'s job has run and been removed (delivery jobs are removed once completed), or was never added. */
  async function settled(entry: string): Promise<void> {
    const deadline = Date.now() + 10_000;
    while ((await inspect.getJob(entry)) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
  }

  it('adds an entry that both find due once, even when its job has run and been removed before the slower one adds it', async () => {
    const worker = await countingWorker();
    try {
      const entry = scheduledAttemptId('msg_race', 3);
      await redis.zadd(key, Date.now() - 1, entry);
      // One promoter has taken the due entry and is held just before its add (a slow round trip)...
      let release!: () => void;
      const held = new Promise<void>((resolve) => (release = resolve));
      let atAdd!: () => void;
      const reachedAdd = new Promise<void>((resolve) => (atAdd = resolve));
      const slow = new SchedulePromoter(
        'callback-deliveries',
        redis,
        prefix,
        {
          addBulk: async (jobs) => {
            atAdd();
            await held;
            await producer.addBulk(jobs);
          },
        },
        logger,
      );
      const slowStep = slow.promoteDue();
      await reachedAdd;
      // ...while the other one looks at the schedule, and whatever it added runs and completes.
      await new SchedulePromoter('callback-deliveries', redis, prefix, producer, logger).promoteDue();
      await settled(entry);

      release();
      expect(await slowStep).toBe(1);
      await settled(entry);
      expect(worker.runs.filter((id) => id === entry)).toEqual([entry]);
      expect(await redis.zscore(key, entry)).toBeNull();
    } finally {
      await worker.close();
    }
  });

  it('leaves the entries of a promoter that failed before its add to the next one, once its claim has ended', async () => {
    const entry = scheduledAttemptId('msg_claimed', 2);
    const now = Date.now();
    await redis.zadd(key, now - 1, entry);
    const failing = new SchedulePromoter('callback-deliveries', redis, prefix, { addBulk: () => Promise.reject(new Error('connection lost')) }, logger, 5_000);
    await expect(failing.promoteDue(now)).rejects.toThrow('connection lost');

    const other = new SchedulePromoter('callback-deliveries', redis, prefix, producer, logger);
    expect(await other.promoteDue(now + 4_999)).toBe(0);
    expect(await other.promoteDue(now + 5_000)).toBe(1);
    expect(await inspect.getJob(entry)).toBeDefined();
    expect(await redis.zscore(key, entry)).toBeNull();
  });
});
