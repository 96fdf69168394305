import { createServer } from 'node:net';
import { Redis } from 'ioredis';
import { BlobNotFoundError, BlobStoreUnavailableError } from '@media/blob-store';
import { isDependencyOutage } from './outage';

/** The errors ioredis really raises, from real connections: a port nobody listens on, a closed client, a wrong command. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

async function failure(run: () => Promise<unknown>): Promise<unknown> {
  try {
    await run();
  } catch (err) {
    return err;
  }
  throw new Error('expected a failure');
}

describe('isDependencyOutage', () => {
  it('recognises a command given up after the retries of a connection that never came up', async () => {
    const redis = new Redis(`redis://127.0.0.1:${await closedPort()}`, { maxRetriesPerRequest: 1, retryStrategy: (times) => (times > 5 ? null : 10) });
    redis.on('error', () => undefined);
    const err = await failure(() => redis.get('k'));
    redis.disconnect();
    expect(isDependencyOutage(err)).toBe(true);
  });

  it('recognises a client whose connection is closed, and one with its offline queue off', async () => {
    const closed = new Redis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379');
    await closed.ping();
    closed.disconnect();
    expect(isDependencyOutage(await failure(() => closed.get('k')))).toBe(true);

    const offline = new Redis(`redis://127.0.0.1:${await closedPort()}`, { enableOfflineQueue: false, lazyConnect: true });
    expect(isDependencyOutage(await failure(() => offline.get('k')))).toBe(true);
    offline.disconnect();
  });

  it('recognises a wrapped connection error', () => {
    const refused = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:1'), { code: 'ECONNREFUSED' });
    expect(isDependencyOutage(new Error('queue add failed', { cause: refused }))).toBe(true);
    expect(isDependencyOutage(new AggregateError([refused], 'all failed'))).toBe(true);
  });

  it('recognises a blob store that cannot be reached, but not a missing blob', () => {
    expect(isDependencyOutage(new BlobStoreUnavailableError('S3 store unavailable: TimeoutError'))).toBe(true);
    expect(isDependencyOutage(new BlobNotFoundError('ws/job/0.png'))).toBe(false);
  });

  it('leaves every other error alone', async () => {
    const redis = new Redis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379');
    const errorReply = await failure(() => redis.incrby('outage-test:not-counted', 'not-a-number'));
    redis.disconnect();
    expect(isDependencyOutage(errorReply)).toBe(false);
    expect(isDependencyOutage(new TypeError('x is undefined'))).toBe(false);
    expect(isDependencyOutage('Connection is closed.')).toBe(false);
    expect(isDependencyOutage(undefined)).toBe(false);
  });
});
