// Liveness and readiness against Redis trouble, on a redis-server of the test's own (the shared one
// is never paused or stopped): a worker whose Redis stops taking its writes is reported wedged, and
// a service reports not-ready while its Redis is away.
import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { createLogger } from '@media/common';
import { JobQueue, QueueConsumer } from '@media/queues';
import { PrivateRedis } from '../support/private-redis';
import { eventually, freePort, ServiceProcess, TestStack } from '../support/stack';

const logger = createLogger('worker-health-test', 'error');
const BOUND_MS = 1_000;

let redis: PrivateRedis;
beforeAll(async () => {
  redis = await PrivateRedis.start();
});
afterAll(async () => {
  await redis?.destroy();
});

describe('QueueConsumer.health', () => {
  let admin: Redis;
  let connection: Redis;
  let consumer: QueueConsumer<'generation'> | undefined;
  let producer: JobQueue<'generation'> | undefined;

  beforeEach(() => {
    admin = new Redis(redis.url);
    connection = new Redis(redis.url, { maxRetriesPerRequest: null });
    connection.on('error', () => undefined);
  });
  afterEach(async () => {
    await admin.call('CLIENT', 'UNPAUSE');
    await consumer?.close();
    await producer?.close();
    admin.disconnect();
    connection.disconnect();
  });

  function start(handled: string[]) {
    const prefix = `health-${randomBytes(4).toString('hex')}`;
    const run = async ({ jobId }: { jobId: string }) => void handled.push(jobId);
    consumer = new QueueConsumer(
      'generation',
      { 'generate-image': run, 'edit-image': run, 'generate-video': run },
      { connection, keyPrefix: prefix, concurrency: 2, lockDurationMs: 5_000, logger, livenessBoundMs: BOUND_MS },
    );
    producer = new JobQueue('generation', connection, prefix, logger);
    return { consumer, producer };
  }

  it('is healthy while idle with nothing to do, and while it keeps up with work', async () => {
    const handled: string[] = [];
    const { consumer, producer } = start(handled);
    await consumer.waitUntilReady();
    await producer.add('generate-image', { jobId: 'a' }, { jobId: 'a' });
    await eventually(() => (handled.includes('a') ? true : undefined), 10_000, 'job a');
    const health = await consumer.health(Date.now() + 10 * BOUND_MS);
    expect(health).toMatchObject({ queue: 'generation', healthy: true, backlog: 0 });
  });

  it('fails when work falls due while the worker cannot act (Redis paused for writes), and recovers', async () => {
    const handled: string[] = [];
    const { consumer, producer } = start(handled);
    await consumer.waitUntilReady();
    expect((await consumer.health()).healthy).toBe(true);
    // A retry that falls due while every write of the worker hangs: BullMQ's silent wedge.
    await producer.add('generate-image', { jobId: 'due' }, { jobId: 'due', delay: 300 });
    await admin.call('CLIENT', 'PAUSE', '60000', 'WRITE');
    const wedged = await eventually(
      async () => {
        const h = await consumer.health();
        return h.healthy ? undefined : h;
      },
      15_000,
      'liveness to fail',
    );
    expect(wedged.reason).toMatch(/waited \d+s while the worker was idle/);
    expect(wedged.backlog).toBe(1);
    expect(handled).toEqual([]);

    await admin.call('CLIENT', 'UNPAUSE');
    await eventually(() => (handled.includes('due') ? true : undefined), 15_000, 'the job to run after the pause');
    await eventually(async () => ((await consumer.health()).healthy ? true : undefined), 10_000, 'liveness to recover');
  });

  it('fails when its queue cannot be read for longer than the bound (a connection that hangs without closing)', async () => {
    const { consumer } = start([]);
    await consumer.waitUntilReady();
    expect((await consumer.health()).healthy).toBe(true);
    // Every client hangs, none is closed: what a half-open connection after a failover looks like.
    // (A pause of ALL also holds this test's own UNPAUSE, so it ends by itself.)
    await admin.call('CLIENT', 'PAUSE', '4000', 'ALL');
    const blind = await eventually(
      async () => {
        const h = await consumer.health();
        return h.healthy ? undefined : h;
      },
      15_000,
      'liveness to fail',
    );
    expect(blind.reason).toMatch(/queue unreadable for \d+s/);
    await eventually(async () => ((await consumer.health()).healthy ? true : undefined), 10_000, 'liveness to recover');
  });

  it('counts an unreadable queue from its first failed read, however long nothing probed before', async () => {
    const { consumer } = start([]);
    await consumer.waitUntilReady();
    expect((await consumer.health()).healthy).toBe(true);
    await admin.call('CLIENT', 'PAUSE', '3000', 'ALL');
    // The first probe in a long while meets the outage: one failed read is not yet a bound's worth.
    const later = Date.now() + 10 * BOUND_MS;
    expect(await consumer.health(later)).toMatchObject({ healthy: true, reason: 'queue depth unknown' });
    expect(await consumer.health(later + BOUND_MS + 1)).toMatchObject({ healthy: false, reason: expect.stringMatching(/queue unreadable for \d+s/) });
    await eventually(async () => ((await consumer.health()).healthy ? true : undefined), 10_000, 'liveness to recover');
  });

  it('stays healthy while closing, so a liveness probe cannot cut a drain short', async () => {
    const { consumer } = start([]);
    await consumer.waitUntilReady();
    const closing = consumer.close();
    expect(await consumer.health()).toMatchObject({ healthy: true, reason: 'closing' });
    await closing;
  });
});

describe('readiness of a worker service', () => {
  it('answers 503 on /readyz while its Redis is down and 200 again once it is back, staying alive meanwhile', async () => {
    const stack = await TestStack.start(['generator'], { REDIS_URL: redis.url, WORKER_LIVENESS_BOUND_MS: '60000' });
    try {
      const ops = stack.service('generator').opsUrl;
      const status = (path: string) => fetch(`${ops}${path}`).then((r) => r.status);
      await eventually(async () => ((await status('/readyz')) === 200 ? true : undefined), 10_000, 'ready');
      await redis.stop();
      await eventually(async () => ((await status('/readyz')) === 503 ? true : undefined), 10_000, 'not ready');
      // A Redis outage is not the worker's fault: within the bound, liveness holds, so no restart storm.
      expect(await status('/healthz')).toBe(200);
      await redis.launch();
      await eventually(async () => ((await status('/readyz')) === 200 ? true : undefined), 20_000, 'ready again');
    } finally {
      await stack.stop();
    }
  });
});

describe('a dispatcher started before its Redis', () => {
  it('answers its liveness probe at once, reports not ready, and starts working when Redis comes', async () => {
    const stack = await TestStack.start([], { REDIS_URL: redis.url });
    await redis.stop();
    const opsPort = await freePort();
    const dispatcher = new ServiceProcess('webhook-dispatcher', { ...stack.env, OPS_PORT: String(opsPort) });
    try {
      await dispatcher.start(/ops server listening/);
      const status = (path: string) => fetch(`http://127.0.0.1:${opsPort}${path}`).then((r) => r.status);
      expect(await status('/healthz')).toBe(200);
      expect(await status('/readyz')).toBe(503);
      await redis.launch();
      await eventually(async () => ((await status('/readyz')) === 200 ? true : undefined), 20_000, 'ready once Redis is there');
      expect(dispatcher.hasLog((l) => l.message === 'webhook-dispatcher started')).toBe(true);
    } finally {
      await dispatcher.kill('SIGKILL');
      await stack.stop();
    }
  });
});
