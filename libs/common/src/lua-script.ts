import { createHash } from 'node:crypto';
import type { Redis } from 'ioredis';

/**
 * A Lua script run by its SHA-1 (EVALSHA), so that a hot path sends a few bytes of arguments
 * rather than the script's text on every call; a Redis that has not seen it yet (restarted, or a
 * failover to a replica without it) answers NOSCRIPT, and the script is sent once with EVAL.
 *
 * Deliberately not ioredis's `defineCommand`: every script defined on a connection is copied into
 * each pipeline and MULTI made on it, and BullMQ already defines dozens on the same connection.
 */
export class LuaScript {
  readonly sha: string;

  constructor(readonly source: string) {
    this.sha = createHash('sha1').update(source).digest('hex');
  }

  async run(redis: Redis, keys: string[], args: (string | number)[]): Promise<unknown> {
    try {
      return await redis.evalsha(this.sha, keys.length, ...keys, ...args);
    } catch (err) {
      if (!(err instanceof Error) || !err.message.startsWith('NOSCRIPT')) throw err;
      return redis.eval(this.source, keys.length, ...keys, ...args);
    }
  }
}
