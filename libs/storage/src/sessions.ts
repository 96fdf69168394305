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

/** A fixed-window counter per subject, e.g. failed sign-ins per e-mail. */
export class FailureCounter {
  constructor(
    private readonly redis: Redis,
    private readonly keys: StoreKeys,
  ) {}

  /** The count in the current window and the ms until the window ends (0 when nothing is counted). */
  async read(scope: 'email' | 'address', hash: string): Promise<{ count: number; resetMs: number }> {
    const key = this.keys.signInFailures(scope, hash);
    const [[e1, count], [e2, ttl]] = (await this.redis.multi().get(key).pttl(key).exec()) as [[Error | null, string | null], [Error | null, number]];
    if (e1 ?? e2) throw e1 ?? e2;
    return { count: Number(count ?? 0), resetMs: Math.max(0, ttl) };
  }

  /** Counts one failure; the window starts with the first failure and lasts `windowSeconds`. */
  async add(scope: 'email' | 'address', hash: string, windowSeconds: number): Promise<void> {
    const key = this.keys.signInFailures(scope, hash);
    await this.redis.multi().incr(key).expire(key, windowSeconds, 'NX').exec();
  }
}
