import type { Redis } from 'ioredis';
import type { AppConfig } from '@media/common';
import type { StoreKeys } from '@media/storage';
import { JobKeys } from './keys';
import { storeScript } from './lua';

/** The limits a workspace works under: the configured defaults, or its own overrides. */
export interface WorkspaceLimits {
  /** Creation calls (`POST /v1/images/generations`, `/v1/images/edits`, `/v1/videos`) per minute. */
  create_per_minute: number;
  /** Read and list calls (`GET /v1/images/…`, `/v1/videos…`) per minute. */
  read_per_minute: number;
  /** Jobs accepted and not yet finished. */
  max_waiting_jobs: number;
}

/** The defaults every workspace without overrides works under. */
export function configuredLimits(config: AppConfig): WorkspaceLimits {
  return {
    create_per_minute: config.rateLimitCreatePerMinute,
    read_per_minute: config.rateLimitReadPerMinute,
    max_waiting_jobs: config.maxWaitingJobsPerWorkspace,
  };
}

export type LimitName = keyof WorkspaceLimits;
export const LIMIT_NAMES: readonly LimitName[] = ['create_per_minute', 'read_per_minute', 'max_waiting_jobs'];

/** Each bucket counts against its own per-minute limit. */
export type RateBucket = 'create' | 'read';
const BUCKET_LIMIT: { [B in RateBucket]: LimitName } = { create: 'create_per_minute', read: 'read_per_minute' };

export interface RateVerdict {
  allowed: boolean;
  limit: number;
  /** Calls left in this window after this one. */
  remaining: number;
  /** Milliseconds until the window ends and the count starts again. */
  resetMs: number;
}

export interface WaitingVerdict {
  accepted: boolean;
  /** Jobs waiting, this one included when it was accepted. */
  waiting: number;
  max: number;
}

const WINDOW_MS = 60_000;

/**
 * What one dashboard member may do per minute, each on their own count: reads (page loads and the
 * Requests page's refresh) and writes (revoke a key, rotate the secret, change a member). Never the
 * workspace's API buckets, so that API traffic, a leaked key's included, cannot use them up.
 */
export const DASHBOARD_LIMITS = { read: 600, write: 60 } as const;
export type DashboardBucket = keyof typeof DASHBOARD_LIMITS;

// lua/<name>.lua: each file's header gives the script's KEYS, ARGV, answers, and why it is one step.
const HIT = storeScript('limit-hit');
const ACCEPT = storeScript('limit-accept');

/**
 * Per-workspace limits kept in Redis, so every gateway replica counts against the same numbers:
 * requests per minute in two buckets, and jobs waiting (accepted, not finished). The waiting jobs
 * are the workspace's set of unfinished job ids, which `JobRepository` also keeps (entered with the
 * record, left in the transaction that finishes it); every call here is idempotent per job.
 */
export class LimitRepository {
  private readonly jobKeys: JobKeys;

  constructor(
    private readonly redis: Redis,
    keys: StoreKeys,
    /** The limits of a workspace without overrides. */
    readonly defaults: WorkspaceLimits,
  ) {
    this.jobKeys = new JobKeys(keys);
  }

  /** The limits in force for the workspace. */
  async effective(workspaceId: string): Promise<WorkspaceLimits> {
    const overrides = await this.redis.hgetall(this.jobKeys.workspaceLimits(workspaceId));
    const limits = { ...this.defaults };
    for (const name of LIMIT_NAMES) if (Object.hasOwn(overrides, name)) limits[name] = Number(overrides[name]);
    return limits;
  }

  /** Sets (a number) or removes (null, back to the default) overrides; returns the limits now in force. */
  async override(workspaceId: string, changes: Partial<Record<LimitName, number | null>>): Promise<WorkspaceLimits> {
    const key = this.jobKeys.workspaceLimits(workspaceId);
    const tx = this.redis.multi();
    for (const name of LIMIT_NAMES) {
      const value = changes[name];
      if (value === null) tx.hdel(key, name);
      else if (value !== undefined) tx.hset(key, name, String(value));
    }
    await tx.exec();
    return this.effective(workspaceId);
  }

  /** Counts one call in the bucket's current window and says whether it is within the limit. */
  async hit(workspaceId: string, bucket: RateBucket): Promise<RateVerdict> {
    const name = BUCKET_LIMIT[bucket];
    const [count, limit, resetMs] = (await HIT.run(
      this.redis,
      [this.jobKeys.workspaceLimits(workspaceId), this.jobKeys.workspaceRate(workspaceId, bucket)],
      [name, this.defaults[name], WINDOW_MS],
    )) as [number, number, number];
    return { allowed: count <= limit, limit, remaining: Math.max(0, limit - count), resetMs };
  }

  /**
   * Counts one failed API-key authentication from a client address (`addressHash`: a hash of it) in
   * its fixed one-minute window, shared by every gateway replica; returns the count, this one
   * included, and the ms until the window ends.
   */
  async noteFailedAuthentication(addressHash: string): Promise<{ count: number; resetMs: number }> {
    const key = this.jobKeys.authFailures(addressHash);
    const replies = await this.redis.multi().incr(key).pexpire(key, WINDOW_MS, 'NX').pttl(key).exec();
    const [[countErr, count], , [ttlErr, ttl]] = replies as [[Error | null, number], unknown, [Error | null, number]];
    if (countErr || ttlErr) throw countErr ?? ttlErr;
    return { count, resetMs: ttl > 0 ? ttl : WINDOW_MS };
  }

  /** Counts one dashboard call of one member (`memberKey`: a hash of the e-mail) against {@link DASHBOARD_LIMITS}. */
  async hitMember(workspaceId: string, memberKey: string, bucket: DashboardBucket): Promise<RateVerdict> {
    const [count, limit, resetMs] = (await HIT.run(
      this.redis,
      [this.jobKeys.workspaceLimits(workspaceId), this.jobKeys.workspaceRate(workspaceId, `dashboard:${bucket}:${memberKey}`)],
      // No override is ever stored under this name: the limit is the constant.
      [`dashboard_${bucket}_per_minute`, DASHBOARD_LIMITS[bucket], WINDOW_MS],
    )) as [number, number, number];
    return { allowed: count <= limit, limit, remaining: Math.max(0, limit - count), resetMs };
  }

  /**
   * Enters the job as waiting unless the workspace is at its cap. At the cap, places held by jobs
   * that were never stored (a gateway that died between this call and storing the record) are
   * given back first, so such a crash cannot shrink the cap for good.
   */
  async onJobAccepted(workspaceId: string, jobId: string): Promise<WaitingVerdict> {
    const verdict = await this.tryAccept(workspaceId, jobId);
    if (verdict.accepted || (await this.reclaimUnstored(workspaceId)) === 0) return verdict;
    return this.tryAccept(workspaceId, jobId);
  }

  private async tryAccept(workspaceId: string, jobId: string): Promise<WaitingVerdict> {
    const [accepted, waiting, max] = (await ACCEPT.run(
      this.redis,
      [this.jobKeys.workspaceLimits(workspaceId), this.jobKeys.workspaceUnfinished(workspaceId)],
      [jobId, this.defaults.max_waiting_jobs],
    )) as [number, number, number];
    return { accepted: accepted === 1, waiting, max };
  }

  /**
   * Drops waiting entries that have no job record; returns how many. Runs only at the cap, so
   * rarely (`JobRepository.admit` callers call it when refused, as {@link onJobAccepted} does).
   */
  async reclaimUnstored(workspaceId: string): Promise<number> {
    const ids = await this.redis.smembers(this.jobKeys.workspaceUnfinished(workspaceId));
    if (ids.length === 0) return 0;
    const exists = await Promise.all(ids.map((id) => this.redis.exists(this.jobKeys.job(id))));
    const orphans = ids.filter((_, i) => exists[i] === 0);
    // A place taken a moment ago for a job being stored right now may go too; storing the job
    // enters it again (JobRepository.create), so the cap is at worst overshot by that one job.
    if (orphans.length > 0) await this.redis.srem(this.jobKeys.workspaceUnfinished(workspaceId), ...orphans);
    return orphans.length;
  }

  /** The job no longer waits (finished, or never stored); frees its place under the cap. */
  async onJobFinished(workspaceId: string, jobId: string): Promise<void> {
    await this.redis.srem(this.jobKeys.workspaceUnfinished(workspaceId), jobId);
  }
}
