import { randomBytes } from 'node:crypto';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { bullPrefix } from '@media/common';
import { QueueDepth } from './depth';

const redis = new Redis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379', { maxRetriesPerRequest: null });
const prefix = `test-${randomBytes(6).toString('hex')}`;
// A producer only (no worker): what it adds stays where BullMQ put it.
const queue = new Queue('generation', { connection: redis, prefix: bullPrefix(prefix, 'generation') });
const depth = new QueueDepth(redis, prefix);

afterEach(async () => {
  await queue.obliterate({ force: true });
});
afterAll(async () => {
  await queue.close();
  redis.disconnect();
});

describe('QueueDepth with prioritized jobs (fair scheduling)', () => {
  it('ages the oldest prioritized job, not the one that runs next', async () => {
    const now = Date.now();
    // A backlog's deep job, queued 90 s ago, behind younger jobs of lower rank (they run first).
    await queue.add('generate-image', { jobId: 'deep' }, { jobId: 'deep', priority: 1_000_600, timestamp: now - 90_000 });
    await queue.add('generate-image', { jobId: 'mid' }, { jobId: 'mid', priority: 1_000_002, timestamp: now - 30_000 });
    await queue.add('generate-image', { jobId: 'next' }, { jobId: 'next', priority: 1, timestamp: now - 1_000 });
    await queue.add('generate-image', { jobId: 'next2' }, { jobId: 'next2', priority: 1, timestamp: now - 500 });

    const reading = await depth.read('generation', now);
    expect(reading.jobs).toMatchObject({ waiting: 0, prioritized: 4 });
    expect(reading.backlog).toBe(4);
    expect(reading.oldestWaitingSeconds).toBeCloseTo(90, 0);
  });

  it.each([
    ['the plain wait list', { plain: 20_000, ranked: 10_000 }, 20],
    ['the prioritized set', { ranked: 40_000, plain: 5_000 }, 40],
  ])('takes the older of the plain wait list and the prioritized set (older in %s)', async (_, agesMs: Record<string, number>, seconds) => {
    const now = Date.now();
    // Added oldest first, as time would have added them.
    for (const [id, ageMs] of Object.entries(agesMs)) {
      await queue.add('generate-image', { jobId: id }, { jobId: id, timestamp: now - ageMs, ...(id === 'ranked' ? { priority: 5 } : {}) });
    }
    expect((await depth.read('generation', now)).oldestWaitingSeconds).toBeCloseTo(seconds, 0);
  });

  it('reads 0 for an empty queue', async () => {
    expect(await depth.read('generation')).toMatchObject({ backlog: 0, oldestWaitingSeconds: 0 });
  });
});
