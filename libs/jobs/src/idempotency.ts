import { createHash } from 'node:crypto';
import type { Redis } from 'ioredis';
import type { StoreKeys } from '@media/storage';
import { JobKeys } from './keys';
import { storeScript } from './lua';

const SWAP = storeScript('idempotency-swap');

/** An `Idempotency-Key` claim as stored: under which Redis key, what, and for how long. */
export interface IdempotencyEntry {
  redisKey: string;
  /** JSON `{job_id, fingerprint, claimed_ms}`; `JobRepository.admit` reads the first two too. */
  value: string;
  ttlSeconds: number;
}

/** A claim as one request holds it: its key and its exact value, which the steps that change it compare. */
export interface HeldClaim {
  redisKey: string;
  value: string;
}

/** A claim made by an earlier request with the same parameters, as read. */
export interface EarlierClaim extends HeldClaim {
  outcome: 'replay';
  jobId: string;
  /** When the claim was made (0 for one stored before claims said so: as good as old). */
  claimedMs: number;
  /** Whether the request that made it said its work was handed on ({@link IdempotencyRepository.markDone}). */
  done: boolean;
}

export type IdempotencyClaim = { outcome: 'new'; claim: HeldClaim } | EarlierClaim | { outcome: 'mismatch' };

/** How a key is named in the store and in the job it made (`idempotency_key_hash`): the key itself is the client's secret-ish token. */
export const idempotencyKeyHash = (key: string): string => createHash('sha256').update(key).digest('hex');

/** `Idempotency-Key` bookkeeping: one job per key and workspace for the key's lifetime. */
export class IdempotencyRepository {
  private readonly jobKeys: JobKeys;

  constructor(
    private readonly redis: Redis,
    keys: StoreKeys,
    private readonly ttlSeconds: number,
  ) {
    this.jobKeys = new JobKeys(keys);
  }

  /**
   * Claims `key` for `jobId`. A second call with the same key answers with the first job's claim, or
   * `mismatch` when the request differs (the same key must not be reused for other work).
   */
  async claim(workspaceId: string, key: string, fingerprint: string, jobId: string, nowMs = Date.now()): Promise<IdempotencyClaim> {
    const { redisKey, value } = this.entry(workspaceId, key, fingerprint, jobId, nowMs);
    if ((await this.redis.set(redisKey, value, 'EX', this.ttlSeconds, 'NX')) === 'OK') return { outcome: 'new', claim: { redisKey, value } };
    const existing = await this.redis.get(redisKey);
    if (!existing) return this.claim(workspaceId, key, fingerprint, jobId, nowMs); // expired between the two calls
    const stored = JSON.parse(existing) as { job_id: string; fingerprint: string; claimed_ms?: number; done?: boolean };
    if (stored.fingerprint !== fingerprint) return { outcome: 'mismatch' };
    return { outcome: 'replay', jobId: stored.job_id, claimedMs: stored.claimed_ms ?? 0, done: stored.done === true, redisKey, value: existing };
  }

  /**
   * Makes an earlier request's claim (whose job is not stored) this request's, as of `nowMs`; or
   * undefined when another request changed it first (a repeat racing this one took it over, or it is gone).
   */
  async takeOver(earlier: EarlierClaim, nowMs = Date.now()): Promise<HeldClaim | undefined> {
    return this.amend(earlier, { claimed_ms: nowMs });
  }

  /**
   * Notes on a claim that its work was handed on (a queued attempt), for work that leaves no record a
   * repeat could find; a no-op when another request changed the claim first.
   */
  async markDone(claim: HeldClaim): Promise<void> {
    await this.amend(claim, { done: true });
  }

  /**
   * Leaves a claim to the next repeat at once: its request failed at a point it cannot know (the work
   * may or may not have been handed on), so the repeat does it again under the same id, which the
   * work's own checks make harmless. A no-op when another request changed the claim first.
   */
  async orphan(claim: HeldClaim): Promise<void> {
    await this.amend(claim, { claimed_ms: 0 });
  }

  /** The claim with `fields` changed, written only if it is still as `claim` holds it; undefined when it was not. */
  private async amend(claim: HeldClaim, fields: { claimed_ms?: number; done?: boolean }): Promise<HeldClaim | undefined> {
    const value = JSON.stringify({ ...(JSON.parse(claim.value) as object), ...fields });
    const swapped = (await SWAP.run(this.redis, [claim.redisKey], [claim.value, value])) === 1;
    return swapped ? { redisKey: claim.redisKey, value } : undefined;
  }

  /** Whether `claim` is still as this request made it (no repeat has taken it over). */
  async holds(claim: HeldClaim): Promise<boolean> {
    return (await this.redis.get(claim.redisKey)) === claim.value;
  }

  /** Gives back a claim whose job was never stored, so that a retry makes the job; never one another request holds now. */
  async release(claim: HeldClaim): Promise<void> {
    await SWAP.run(this.redis, [claim.redisKey], [claim.value, '']);
  }

  /** The claim of `key` for `jobId`, for a caller that makes it in a step of its own (`JobRepository.admit`). */
  entry(workspaceId: string, key: string, fingerprint: string, jobId: string, nowMs = Date.now()): IdempotencyEntry {
    return {
      redisKey: this.jobKeys.idempotency(workspaceId, idempotencyKeyHash(key)),
      value: JSON.stringify({ job_id: jobId, fingerprint, claimed_ms: nowMs }),
      ttlSeconds: this.ttlSeconds,
    };
  }
}
