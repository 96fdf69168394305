// A single Redis that wants a password, given as the platform team keeps it: REDIS_URL (an address,
// in a ConfigMap) and REDIS_PASSWORD (in a Secret). Every connection the services make carries it,
// BullMQ's own blocking connections (duplicates) included.
import { Queue, Worker } from 'bullmq';
import { createRedis, loadConfig } from '@media/common';
import { PrivateRedis } from '../support/private-redis';

const PASSWORD = 'a-long-redis-password-for-this-test';
let server: PrivateRedis;

beforeAll(async () => {
  server = await PrivateRedis.start({ password: PASSWORD });
}, 30_000);

afterAll(async () => {
  await server?.destroy();
});

it('connects with REDIS_PASSWORD beside a REDIS_URL without credentials, and BullMQ works through it', async () => {
  const redis = createRedis(loadConfig({ REDIS_URL: server.url, REDIS_PASSWORD: PASSWORD }).redis, 'worker');
  const queue = new Queue('auth-check', { connection: redis });
  const worker = new Worker('auth-check', async (job) => `done ${job.data.n}`, { connection: redis });
  try {
    expect(await redis.ping()).toBe('PONG');
    const job = await queue.add('one', { n: 1 });
    const finished = await new Promise<string>((resolve, reject) => {
      worker.on('completed', (done, result) => done.id === job.id && resolve(result as string));
      worker.on('failed', (_, err) => reject(err));
    });
    expect(finished).toBe('done 1');
  } finally {
    await worker.close();
    await queue.close();
    redis.disconnect();
  }
}, 30_000);

it('is refused without it, with the reason Redis gives', async () => {
  const redis = createRedis(loadConfig({ REDIS_URL: server.url }).redis, 'request');
  redis.on('error', () => undefined);
  try {
    await expect(redis.ping()).rejects.toThrow(/NOAUTH/);
  } finally {
    redis.disconnect();
  }
}, 30_000);
