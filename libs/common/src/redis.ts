import { Redis } from 'ioredis';
import type { Logger } from './logger';

/** One log line per this many ms at most while a connection keeps failing (ioredis retries every few ms). */
const ERROR_LOG_INTERVAL_MS = 10_000;

/**
 * Connections for workers must retry forever (BullMQ requires `maxRetriesPerRequest: null`);
 * request-path connections fail fast so an HTTP call does not hang while Redis is away.
 *
 * With a logger, connection errors go to the JSON log (throttled) instead of ioredis's
 * "Unhandled error event" on the console; every long-lived connection should pass one.
 */
export function createRedis(url: string, role: 'worker' | 'request', logger?: Logger): Redis {
  const redis = new Redis(url, {
    maxRetriesPerRequest: role === 'worker' ? null : 3,
    enableReadyCheck: true,
    connectionName: undefined,
  });
  if (logger) logRedisErrors(redis, logger, role);
  return redis;
}

/**
 * Sends an emitter's `error` events to the log, at most one line per interval, with a count of
 * what was left out. Also used for BullMQ queues and workers, which re-emit their connection's errors.
 */
export function logRedisErrors(emitter: { on(event: 'error', listener: (err: Error) => void): unknown }, logger: Logger, source: string): void {
  let lastLogged = 0;
  let suppressed = 0;
  emitter.on('error', (err: Error) => {
    const now = Date.now();
    if (now - lastLogged < ERROR_LOG_INTERVAL_MS) {
      suppressed++;
      return;
    }
    logger.warn('redis connection error', { source, error: err.message, suppressed });
    lastLogged = now;
    suppressed = 0;
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
