import { createHash } from 'node:crypto';
import type { Redis } from 'ioredis';
import type { StoreKeys } from './keys';

/** An `Idempotency-Key` claim as stored: under which Redis key, what, and for how long. */
export interface IdempotencyEntry {
  redisKey: string;
  /** JSON `{job_id, fingerprint}`; `JobRepository.admit` reads both fields too. */
  value: string;
  ttlSeconds: number;
}

export type IdempotencyClaim = { outcome: 'new' } | { outcome: 'replay'; jobId: string } | { outcome: 'mismatch' };

/** How a key is named in the store and in the job it made (`idempotency_key_hash`): the key itself is the client's secret-ish token. */
export const idempotencyKeyHash = (key: string): string => createHash('sha256').update(key).digest('hex');

/** `Idempotency-Key` bookkeeping: one job per key and workspace for the key's lifetime. */
export class IdempotencyRepository {
  constructor(
    private readonly redis: Redis,
    private readonly keys: StoreKeys,
    private readonly ttlSeconds: number,
  ) {}

  /**
   * Claims `key` for `jobId`. A second call with the same key answers with the first job, or
   * `mismatch` when the request differs (the same key must not be reused for other work).
   */
  async claim(workspaceId: string, key: string, fingerprint: string, jobId: string): Promise<IdempotencyClaim> {
    const { redisKey, value } = this.entry(workspaceId, key, fingerprint, jobId);
    if ((await this.redis.set(redisKey, value, 'EX', this.ttlSeconds, 'NX')) === 'OK') return { outcome: 'new' };
    const existing = await this.redis.get(redisKey);
    if (!existing) return this.claim(workspaceId, key, fingerprint, jobId); // expired between the two calls
    const stored = JSON.parse(existing) as { job_id: string; fingerprint: string };
    return stored.fingerprint === fingerprint ? { outcome: 'replay', jobId: stored.job_id } : { outcome: 'mismatch' };
  }

  /** The claim of `key` for `jobId`, for a caller that makes it in a step of its own (`JobRepository.admit`). */
  entry(workspaceId: string, key: string, fingerprint: string, jobId: string): IdempotencyEntry {
    return {
      redisKey: this.keys.idempotency(workspaceId, idempotencyKeyHash(key)),
      value: JSON.stringify({ job_id: jobId, fingerprint }),
      ttlSeconds: this.ttlSeconds,
    };
  }
}
