import type { Redis } from 'ioredis';
import type { StoreKeys } from '@media/storage';
import { AccountKeys } from './keys';
import { storeScript } from './lua';

/** A dashboard session as stored, under the hash of its cookie token (never the token). */
export interface StoredSession {
  workspace_id: string;
  email: string;
  /** The CSRF token the page sends back on every state-changing request. */
  csrf_token: string;
  created_ms: number;
  /** The member's session epoch when the session was opened ('' for members stored before epochs). */
  member_epoch: string;
}

/** Dashboard sessions: one Redis hash per session that expires when idle. */
export class SessionRepository {
  private readonly accountKeys: AccountKeys;

  constructor(
    private readonly redis: Redis,
    keys: StoreKeys,
  ) {
    this.accountKeys = new AccountKeys(keys);
  }

  async create(tokenHash: string, session: StoredSession, idleSeconds: number): Promise<void> {
    const key = this.accountKeys.session(tokenHash);
    await this.redis
      .multi()
      .hset(key, { ...session, created_ms: String(session.created_ms) })
      .expire(key, idleSeconds)
      .exec();
  }

  /** The session as stored; undefined when it expired or was ended. Its idle timer is not touched. */
  async get(tokenHash: string): Promise<StoredSession | undefined> {
    const raw = await this.redis.hgetall(this.accountKeys.session(tokenHash));
    if (!raw.workspace_id) return undefined;
    return {
      workspace_id: raw.workspace_id,
      email: raw.email,
      csrf_token: raw.csrf_token,
      created_ms: Number(raw.created_ms),
      member_epoch: raw.member_epoch ?? '',
    };
  }

  /** Restarts a session's idle timer (only one that still exists: a session ended meanwhile stays ended). */
  async refresh(tokenHash: string, idleSeconds: number): Promise<void> {
    await this.redis.expire(this.accountKeys.session(tokenHash), idleSeconds, 'XX');
  }

  async delete(tokenHash: string): Promise<void> {
    await this.redis.del(this.accountKeys.session(tokenHash));
  }
}

const RESERVE = storeScript('sign-in-reserve');

/** How sign-in failures are limited (see `lua/sign-in-reserve.lua`). */
export interface SignInLimits {
  failuresPerAddress: number;
  windowSeconds: number;
  freeFailuresPerEmailAndAddress: number;
  firstWaitMs: number;
  longestWaitMs: number;
}

/**
 * Failed sign-ins, counted per client address and per e-mail and address together. An attempt
 * takes a place first ({@link reserve}); a successful one gives it back and clears its e-mail's
 * count from that address ({@link release}), so only failures stay counted.
 */
export class FailureCounter {
  private readonly accountKeys: AccountKeys;

  constructor(
    private readonly redis: Redis,
    keys: StoreKeys,
    private readonly limits: SignInLimits,
  ) {
    this.accountKeys = new AccountKeys(keys);
  }

  /** Takes a place for one attempt; refused with how long to wait, when the address is over its limit or the pair must slow down. */
  async reserve(emailHash: string, addressHash: string, nowMs: number): Promise<{ allowed: boolean; retryAfterMs: number }> {
    const l = this.limits;
    const [allowed, retryAfterMs] = (await RESERVE.run(
      this.redis,
      [this.accountKeys.signInFailures('address', addressHash), this.accountKeys.signInFailures('pair', `${emailHash}:${addressHash}`)],
      [l.failuresPerAddress, l.windowSeconds, l.freeFailuresPerEmailAndAddress, l.firstWaitMs, l.longestWaitMs, nowMs],
    )) as [number, number];
    return { allowed: allowed === 1, retryAfterMs };
  }

  /** Gives back the place of an attempt that succeeded. */
  async release(emailHash: string, addressHash: string): Promise<void> {
    await this.redis
      .multi()
      .decr(this.accountKeys.signInFailures('address', addressHash))
      .del(this.accountKeys.signInFailures('pair', `${emailHash}:${addressHash}`))
      .exec();
  }
}
