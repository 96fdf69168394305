// Helpers that need nothing of the test stack, so that the stack and the Redis topologies it runs on
// (redis-cluster.ts, redis-sentinel.ts, private-redis.ts) can all use them without importing each other.
import { createServer } from 'node:net';
import { Redis } from 'ioredis';

export async function freePort(): Promise<number> {
  return new Promise((resolvePort, reject) => {
    const server = createServer();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolvePort(port));
    });
  });
}

/** Polls `check` until it returns a value other than undefined, or fails after `timeoutMs`. */
export async function eventually<T>(check: () => Promise<T | undefined> | T | undefined, timeoutMs = 20_000, what = 'condition'): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  for (;;) {
    try {
      const value = await check();
      if (value !== undefined) return value;
    } catch (err) {
      lastError = err;
    }
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}${lastError ? `: ${String(lastError)}` : ''}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** Waits until a Redis on loopback answers PING (a server the test just started). */
export async function redisAnswers(target: { port: number } | { url: string }, what: string): Promise<void> {
  await eventually(
    async () => {
      const options = { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null };
      const probe = 'url' in target ? new Redis(target.url, options) : new Redis(target.port, '127.0.0.1', options);
      probe.on('error', () => undefined);
      try {
        await probe.connect();
        return (await probe.ping()) === 'PONG' ? true : undefined;
      } finally {
        probe.disconnect();
      }
    },
    10_000,
    what,
  );
}
