import { Redis } from 'ioredis';

/**
 * Connections for workers must retry forever (BullMQ requires `maxRetriesPerRequest: null`);
 * request-path connections fail fast so an HTTP call does not hang while Redis is away.
 */
export function createRedis(url: string, role: 'worker' | 'request'): Redis {
  return new Redis(url, {
    maxRetriesPerRequest: role === 'worker' ? null : 3,
    enableReadyCheck: true,
    connectionName: undefined,
  });
}

/** Waits until Redis answers or the deadline passes; used by start-up and /readyz. */
export async function pingRedis(redis: Redis, timeoutMs = 1_000): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  try {
    const reply = await Promise.race([
      redis.ping(),
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error('timeout')), timeoutMs);
      }),
    ]);
    return reply === 'PONG';
  } catch {
    return false;
  } finally {
    clearTimeout(timer);
  }
}
