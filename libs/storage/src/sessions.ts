import type { Redis } from 'ioredis';
import type { StoreKeys } from './keys';

/** A dashboard session as stored, under the hash of its cookie token (never the token). */
export interface StoredSession {
  workspace_id: string;
  email: string;
  /** The CSRF token the page sends back on every state-changing request. */
  csrf_token: string;
  created_ms: number;
}

/** Dashboard sessions: one Redis hash per session that expires when idle. */
export class SessionRepository {
  constructor(
    private readonly redis: Redis,
    private readonly keys: StoreKeys,
  ) {}

  async create(tokenHash: string, session: StoredSession, idleSeconds: number): Promise<void> {
    const key = this.keys.session(tokenHash);
    await this.redis
      .multi()
      .hset(key, { ...session, created_ms: String(session.created_ms) })
      .expire(key, idleSeconds)
      .exec();
  }

  /** The session, its idle timer restarted; undefined when it expired or was ended. */
  async touch(tokenHash: string, idleSeconds: number): Promise<StoredSession | undefined> {
    const key = this.keys.session(tokenHash);
    const [[error, raw], [expireError, refreshed]] = (await this.redis.multi().hgetall(key).expire(key, idleSeconds, 'XX').exec()) as [
      [Error | null, Record<string, string>],
      [Error | null, number],
    ];
    if (error ?? expireError) throw error ?? expireError;
    if (!raw.workspace_id || refreshed !== 1) return undefined;
    return { workspace_id: raw.workspace_id, email: raw.email, csrf_token: raw.csrf_token, created_ms: Number(raw.created_ms) };
  }

  async delete(tokenHash: string): Promise<void> {
    await this.redis.del(this.keys.session(tokenHash));
  }
}

// Counts the attempt before the password is checked, so that a burst of parallel attempts cannot
// all read a count under the limit and all get a (costly) password check. Past the limit the
// count is put back and the attempt refused. ARGV: 1 limit, 2 window seconds.
const RESERVE = `
local count = redis.call('INCR', KEYS[1])
if count == 1 then redis.call('EXPIRE', KEYS[1], ARGV[2]) end
if count > tonumber(ARGV[1]) then
  redis.call('DECR', KEYS[1])
  return {0, redis.call('PTTL', KEYS[1])}
end
return {1, 0}
`;

/**
 * A fixed-window counter of failed attempts per subject (e.g. sign-ins per e-mail). An attempt
 * reserves a place first ({@link reserve}); a successful one gives it back ({@link release}), so
 * only failures stay counted.
 */
export class FailureCounter {
  constructor(
    private readonly redis: Redis,
    private readonly keys: StoreKeys,
  ) {}

  /** Takes a place for one attempt; refused, with the ms until the window ends, when `limit` failures are counted. */
  async reserve(scope: 'email' | 'address', hash: string, limit: number, windowSeconds: number): Promise<{ allowed: boolean; resetMs: number }> {
    const [allowed, resetMs] = (await this.redis.eval(RESERVE, 1, this.keys.signInFailures(scope, hash), String(limit), String(windowSeconds))) as [number, number];
    return { allowed: allowed === 1, resetMs: Math.max(0, resetMs) };
  }

  /** Gives back the place of an attempt that succeeded. */
  async release(scope: 'email' | 'address', hash: string): Promise<void> {
    await this.redis.decr(this.keys.signInFailures(scope, hash));
  }
}
