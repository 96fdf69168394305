import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import type { Redis } from 'ioredis';
import { ConfigError } from './config';
import { createRedis } from './redis';

const url = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const prefix = `test-${randomBytes(6).toString('hex')}`;
const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve));

async function ready(redis: Redis): Promise<void> {
  if (redis.status !== 'ready') await once(redis, 'ready');
  // `connect` is emitted on the tick after the socket connects; let it run.
  await nextTurn();
}

describe('request connections coalesce the writes of one turn', () => {
  let redis: Redis;

  beforeEach(async () => {
    redis = createRedis(url, 'request');
    await ready(redis);
  });

  afterEach(async () => {
    const keys = await redis.keys(`${prefix}:*`);
    if (keys.length > 0) await redis.del(...keys);
    redis.disconnect();
  });

  it('holds the turn’s commands in the socket until its I/O callbacks have run, then answers each in order', async () => {
    const replies = Array.from({ length: 200 }, () => redis.incr(`${prefix}:counter`));
    expect(redis.stream.writableCorked).toBe(1);
    expect(redis.stream.writableLength).toBeGreaterThan(0);
    await nextTurn();
    expect(redis.stream.writableCorked).toBe(0);
    expect(await Promise.all(replies)).toEqual(Array.from({ length: 200 }, (_, i) => i + 1));
  });

  it('fails only the command that failed', async () => {
    const [ok, failed, after] = await Promise.allSettled([
      redis.set(`${prefix}:a`, '1'),
      redis.incrby(`${prefix}:not-counted`, 'not-a-number'),
      redis.get(`${prefix}:a`),
    ]);
    expect(ok).toEqual({ status: 'fulfilled', value: 'OK' });
    expect(failed.status).toBe('rejected');
    expect(String((failed as PromiseRejectedResult).reason)).toMatch(/ERR value is not an integer/);
    expect(after).toEqual({ status: 'fulfilled', value: '1' });
  });

  it('coalesces on the new socket after a reconnect', async () => {
    const first = redis.stream;
    const reconnected = once(redis, 'ready');
    redis.disconnect(true);
    await reconnected;
    await nextTurn();
    expect(redis.stream).not.toBe(first);
    const reply = redis.set(`${prefix}:b`, 'x');
    expect(redis.stream.writableCorked).toBe(1);
    expect(await reply).toBe('OK');
    expect(await redis.get(`${prefix}:b`)).toBe('x');
  });

  it('leaves worker connections alone', async () => {
    const worker = createRedis(url, 'worker');
    await ready(worker);
    const reply = worker.ping();
    expect(worker.stream.writableCorked).toBe(0);
    expect(await reply).toBe('PONG');
    worker.disconnect();
  });
});

it('names REDIS_TLS_CA_FILE when the file cannot be read, rather than only the file', () => {
  const target = { kind: 'single' as const, url: 'rediss://127.0.0.1:1', tls: { caFile: '/nonexistent/ca.pem' } };
  expect(() => createRedis(target, 'request')).toThrow(ConfigError);
  expect(() => createRedis(target, 'request')).toThrow(/REDIS_TLS_CA_FILE cannot be read: ENOENT/);
});
