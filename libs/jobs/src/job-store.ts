import type { Redis } from 'ioredis';
import { blobFolderOf, isFinished, isSynchronous, shardOfId, type JobRecord, type LedgerEntry } from '@media/domain';
import {
  encodeRecord,
  groupByShard,
  type IndexPage,
  mgetByShard,
  NO_REPLICA_WAIT,
  OverviewCounters,
  readIndexPage,
  REMOVED_KEPT_MAX,
  REMOVED_KEPT_MS,
  type ReplicaWait,
  type StoreKeys,
} from '@media/storage';
import type { IdempotencyEntry } from './idempotency';
import { JobKeys } from './keys';
import { storeScript } from './lua';

// lua/<name>.lua: each file's header gives the script's KEYS, ARGV, answers, and why it is one step.
const FINISH = storeScript('job-finish');
const HOLD = storeScript('job-hold');
const PURGE = storeScript('job-purge');
const UPDATE_ACTIVE = storeScript('job-update-active');
const ADMIT = storeScript('job-admit');

/**
 * What {@link JobRepository.admit} decided. `rank`: how many of the workspace's jobs are unfinished,
 * this one included, when it was admitted (the input of its generation queue priority).
 */
export type Admission =
  | { outcome: 'stored'; rank: number }
  /** A job with this id is stored already (an earlier call made it); nothing was written. */
  | { outcome: 'exists'; rank: number }
  /** The workspace is at its waiting-jobs cap; nothing was written but the key's claim. */
  | { outcome: 'over_cap'; waiting: number; max: number }
  /** The Idempotency-Key was claimed earlier, with the same request, for this job id. */
  | { outcome: 'replay'; jobId: string }
  /** The Idempotency-Key was claimed earlier for a different request. */
  | { outcome: 'mismatch' }
  /** `claimMustExist` was set and the claim is gone (its job was removed meanwhile); nothing was written. */
  | { outcome: 'claim_gone' };

export interface AdmitOptions {
  /** The cap of a workspace without an override of `max_waiting_jobs`. */
  maxWaitingDefault: number;
  /** An Idempotency-Key to claim for this job first (see `IdempotencyRepository.entry`). */
  idempotency?: IdempotencyEntry;
  /**
   * The job is rebuilt under the id an existing claim named (a crash fell between claiming and
   * storing): store it only while that claim still exists. If the job was removed meanwhile (its
   * claim goes with it), storing it again would make a second job and charge under the old id.
   */
  claimMustExist?: boolean;
}

/** A stored job record that cannot be read back; retrying cannot help, so callers fail the job. */
export class CorruptRecordError extends Error {
  override readonly name = 'CorruptRecordError';

  constructor(readonly recordId: string) {
    super(`record ${recordId} cannot be decoded`);
  }
}

export type ListPage = IndexPage;

/** A job's place in its workspace's listing (see {@link JobRepository.placeOf}). */
export interface ListPlace {
  id: string;
  kind: JobRecord['kind'];
  created_ms: number;
}

/** Job records, per-workspace indexes and the charge ledger. */
export class JobRepository {
  private readonly overview: OverviewCounters;

  private readonly jobKeys: JobKeys;

  constructor(
    private readonly redis: Redis,
    private readonly keys: StoreKeys,
    /** Held after an acceptance and a finish, before anyone is told of them. */
    private readonly replicaWait: ReplicaWait = NO_REPLICA_WAIT,
  ) {
    this.jobKeys = new JobKeys(keys);
    this.overview = new OverviewCounters(keys);
  }
  /** The pub/sub channel on which finished synchronous jobs are announced (the gateway's JobWaiter listens). */
  finishedChannel(): string {
    return this.jobKeys.jobFinishedChannel();
  }

  /** The store's shards, which the sweepers of the per-shard sets walk one by one. */
  get shards(): readonly number[] {
    return this.keys.shards;
  }

  /**
   * Notes that a job's uploads are about to be stored, before its record exists ({@link create}
   * takes the note out): a gateway that dies in between leaves files no record names, which
   * {@link abandonedUploads} finds for retention.
   */
  async uploadsStarting(job: Pick<JobRecord, 'id' | 'workspace_id'>, nowMs: number): Promise<void> {
    besideItsWorkspace(job);
    await this.redis.zadd(this.jobKeys.uploading(shardOfId(job.id)), nowMs, blobFolderOf(job));
  }

  /** Blob folders of a shard whose uploads began before `beforeMs` and whose job was never stored (or the note outlived a crash). */
  async abandonedUploads(shard: number, beforeMs: number, limit: number): Promise<{ workspaceId: string; jobId: string }[]> {
    const folders = await this.redis.zrangebyscore(this.jobKeys.uploading(shard), '-inf', beforeMs, 'LIMIT', 0, limit);
    return folders.map((folder) => {
      const [workspaceId = '', jobId = ''] = folder.split('/');
      return { workspaceId, jobId };
    });
  }

  /**
   * Takes the note of a job's uploads out; false when it was gone already (another sweep took it,
   * or the job was stored meanwhile): only the taker deals with the uploads.
   */
  async forgetUploads(upload: { workspaceId: string; jobId: string }): Promise<boolean> {
    const folder = blobFolderOf({ workspace_id: upload.workspaceId, id: upload.jobId });
    return (await this.redis.zrem(this.jobKeys.uploading(shardOfId(upload.jobId)), folder)) === 1;
  }

  /** Frees the place under its workspace's cap that a job took and never used (it was never stored). */
  async forgetUnstored(upload: { workspaceId: string; jobId: string }): Promise<void> {
    await this.redis.srem(this.jobKeys.workspaceUnfinished(upload.workspaceId), upload.jobId);
  }

  /**
   * Stores a new job; false when a job with that id already exists (an idempotent replay).
   *
   * The job is also entered in the intake set until {@link markQueued}: storing a job and queueing
   * it are two writes to two systems, and a gateway that dies between them would otherwise leave a
   * job that is listed and never run. {@link unqueuedSince} finds such jobs for the repair sweep.
   */
  async create(job: JobRecord): Promise<boolean> {
    besideItsWorkspace(job);
    const index = this.jobKeys.workspaceJobs(job.workspace_id, job.kind);
    const [[error, set]] = (await this.redis
      .multi()
      .set(this.jobKeys.job(job.id), encodeRecord(job), 'NX')
      .zadd(index, 'NX', job.created_ms, job.id)
      .zadd(this.jobKeys.intake(shardOfId(job.id)), 'NX', job.created_ms, job.id)
      .sadd(this.jobKeys.workspaceUnfinished(job.workspace_id), job.id)
      .zrem(this.jobKeys.uploading(shardOfId(job.id)), blobFolderOf(job))
      .exec()) as [[Error | null, unknown], ...unknown[]];
    if (error) throw error;
    await this.replicaWait.after(this.redis);
    return set === 'OK';
  }

  /**
   * Accepts a new job in one round trip (the intake's hot path): claims the Idempotency-Key if
   * one is given, then, unless the workspace is at its waiting-jobs cap, stores the job as
   * {@link create} does and enters it as waiting. A job already entered as waiting (a replay whose
   * record was never stored) is not counted twice.
   *
   * Keys touched: the job's record; the workspace's index, unfinished set, limits and
   * Idempotency-Key entry; and its shard's intake set.
   */
  async admit(job: JobRecord, options: AdmitOptions): Promise<Admission> {
    besideItsWorkspace(job);
    const index = this.jobKeys.workspaceJobs(job.workspace_id, job.kind);
    const keys = [
      this.jobKeys.job(job.id),
      index,
      this.jobKeys.intake(shardOfId(job.id)),
      this.jobKeys.workspaceUnfinished(job.workspace_id),
      this.jobKeys.workspaceLimits(job.workspace_id),
    ];
    const args: (string | number)[] = [encodeRecord(job), job.id, job.created_ms, options.maxWaitingDefault];
    if (options.idempotency) {
      keys.push(options.idempotency.redisKey);
      args.push(options.idempotency.value, options.idempotency.ttlSeconds, options.claimMustExist ? '1' : '0');
    }
    const [code, a, b] = (await ADMIT.run(this.redis, keys, args)) as [number, (number | string)?, number?];
    if (code === 1) await this.replicaWait.after(this.redis);
    switch (code) {
      case 1:
        return { outcome: 'stored', rank: Number(a) };
      case 2:
        return { outcome: 'exists', rank: Number(a) };
      case 3:
        return { outcome: 'over_cap', waiting: Number(a), max: Number(b) };
      case 4:
        return { outcome: 'replay', jobId: String(a) };
      case 5:
        return { outcome: 'mismatch' };
      case 6:
        return { outcome: 'claim_gone' };
      default:
        throw new Error(`unexpected admission answer ${String(code)}`);
    }
  }

  /** The jobs are on the generation queue: they no longer need the intake repair. */
  async markQueued(...ids: string[]): Promise<void> {
    await Promise.all([...groupByShard(ids)].map(([shard, inShard]) => this.redis.zrem(this.jobKeys.intake(shard), ...inShard)));
  }

  /** Ids of the shard's jobs stored before `beforeMs` and not yet marked queued, oldest first. */
  async unqueuedSince(shard: number, beforeMs: number, limit: number): Promise<string[]> {
    return this.redis.zrangebyscore(this.jobKeys.intake(shard), '-inf', beforeMs, 'LIMIT', 0, limit);
  }

  /** How many jobs of the workspace are accepted and not finished (the waiting-jobs cap; a queued job's rank). */
  async unfinishedCount(workspaceId: string): Promise<number> {
    return this.redis.scard(this.jobKeys.workspaceUnfinished(workspaceId));
  }

  /** @throws CorruptRecordError when the stored record is not JSON */
  async get(id: string): Promise<JobRecord | undefined> {
    const raw = await this.redis.get(this.jobKeys.job(id));
    return raw === null ? undefined : decodeJob(id, raw);
  }

  /** A job of this workspace; another workspace's job is indistinguishable from a missing one. */
  async getForWorkspace(workspaceId: string, id: string): Promise<JobRecord | undefined> {
    const job = await this.get(id);
    return job && job.workspace_id === workspaceId ? job : undefined;
  }

  /**
   * Where a job of the workspace sits in its listing: its kind and creation time, also for a job
   * removed lately, which its listing remembers ({@link REMOVED_KEPT_MS}); undefined for none.
   */
  async placeOf(workspaceId: string, id: string): Promise<ListPlace | undefined> {
    const job = await this.getForWorkspace(workspaceId, id);
    if (job) return { id: job.id, kind: job.kind, created_ms: job.created_ms };
    for (const kind of ['image', 'video'] as const) {
      const score = await this.redis.zscore(this.keys.removedFrom(this.jobKeys.workspaceJobs(workspaceId, kind)), id);
      if (score !== null) return { id, kind, created_ms: Number(score) };
    }
    return undefined;
  }

  /** Writes an unfinished job; false if it has finished meanwhile. */
  async updateActive(job: JobRecord): Promise<boolean> {
    if (isFinished(job.status)) throw new Error('use finish() for finished jobs');
    const result = await UPDATE_ACTIVE.run(this.redis, [this.jobKeys.job(job.id)], [encodeRecord(job)]);
    if (result === -2) throw new CorruptRecordError(job.id);
    return result === 1;
  }

  /**
   * Marks the job finished and writes its charge in one transaction, then announces it. A job with
   * `expires_ms` enters the expiry index in the same step, so no finished job escapes retention; one
   * with a `callback_url` is marked as awaiting its callback until the dispatcher creates it. The
   * finish is counted into the Overview's day in the same step.
   * Returns false if it had already finished (nothing is written or charged again).
   */
  async finish(job: JobRecord, charge: LedgerEntry | null): Promise<boolean> {
    if (!isFinished(job.status)) throw new Error('finish() needs a finished job');
    const count = this.overview.jobFinished(job.workspace_id, job.status, job.finished_ms ?? Date.now(), charge?.amount ?? 0);
    const result = await FINISH.run(
      this.redis,
      [
        this.jobKeys.job(job.id),
        this.jobKeys.workspaceLedger(job.workspace_id),
        this.jobKeys.workspaceUnfinished(job.workspace_id),
        this.jobKeys.intake(shardOfId(job.id)),
        this.jobKeys.jobExpiry(shardOfId(job.id)),
        this.keys.awaitingCallback(shardOfId(job.id)),
        ...count.keys,
      ],
      [
        encodeRecord(job),
        charge ? encodeRecord(charge) : '',
        job.id,
        // Only a synchronous call waits for its job (the gateway's JobWaiter): announcing every
        // finished job sent each one to every gateway (and, on a cluster, to every node).
        isSynchronous(job) ? this.jobKeys.jobFinishedChannel() : '',
        job.expires_ms ?? '',
        job.callback_url ? '1' : '',
        ...count.args,
      ],
    );
    if (result === -1) throw new Error(`job ${job.id} does not exist`);
    if (result === -2) throw new CorruptRecordError(job.id);
    // Also when it had already finished: that earlier finish may not have reached a replica yet.
    await this.replicaWait.after(this.redis);
    return result === 1;
  }

  /** Ids of the shard's finished jobs whose retention ended at or before `nowMs`, soonest first. */
  async dueForRemoval(shard: number, nowMs: number, limit: number): Promise<string[]> {
    return this.redis.zrangebyscore(this.jobKeys.jobExpiry(shard), '-inf', nowMs, 'LIMIT', 0, limit);
  }

  /** How many finished jobs, over every shard, are due for removal at `nowMs` and not yet removed (held ones are not due). */
  async countDueForRemoval(nowMs: number): Promise<number> {
    const counts = await Promise.all(this.keys.shards.map((shard) => this.redis.zcount(this.jobKeys.jobExpiry(shard), '-inf', nowMs)));
    return counts.reduce((a, b) => a + b, 0);
  }

  /** Moves a job's next look to `untilMs` without changing its record (one that cannot be read); a job not in the index stays out. */
  async postponeRemoval(jobId: string, untilMs: number): Promise<void> {
    await this.redis.zadd(this.jobKeys.jobExpiry(shardOfId(jobId)), 'XX', untilMs, jobId);
  }

  /**
   * Keeps a finished job until `untilMs` (something still needs it): its `expires_at`, and so the
   * links minted for it from now on, move with its place in the expiry index. False when the record
   * changed since it was read (the next sweep looks again).
   */
  async holdUntil(job: JobRecord, untilMs: number): Promise<boolean> {
    const held = { ...job, expires_ms: Math.max(job.expires_ms ?? 0, untilMs) };
    return (
      (await HOLD.run(
        this.redis,
        [this.jobKeys.job(job.id), this.jobKeys.jobExpiry(shardOfId(job.id))],
        [job.id, String(job.expires_ms ?? ''), encodeRecord(held), held.expires_ms],
      )) === 1
    );
  }

  /** Whether a finished job's callback is still to be created (its job-finished event not yet handled). */
  async awaitsCallback(jobId: string): Promise<boolean> {
    return (await this.redis.sismember(this.keys.awaitingCallback(shardOfId(jobId)), jobId)) === 1;
  }

  /** Drops an expiry entry whose record is gone already (nothing else can be found for it). */
  async forgetRemoval(jobId: string): Promise<void> {
    await this.redis.zrem(this.jobKeys.jobExpiry(shardOfId(jobId)), jobId);
  }

  /**
   * Removes a job's record, its listing entry, its expiry entry and its Idempotency-Key's claim in
   * one step (its media are the caller's: remove them first, so a crash in between leaves a record
   * that a repeat finds). The listing remembers it for an hour ({@link REMOVED_KEPT_MS}), so that
   * a client paging the list after it goes on from its place. With `dueBeforeMs` it removes only a job still due by then, and answers
   * false when a postponement came first; false too when the record was gone already (another
   * removal came first). The charge stays in the ledger.
   */
  async remove(job: JobRecord, dueBeforeMs?: number): Promise<boolean> {
    const index = this.jobKeys.workspaceJobs(job.workspace_id, job.kind);
    const shard = shardOfId(job.id);
    const keys = [
      this.jobKeys.job(job.id),
      index,
      this.jobKeys.jobExpiry(shard),
      this.keys.awaitingCallback(shard),
      this.keys.removedFrom(index),
      this.keys.removedAt(index),
    ];
    if (job.idempotency_key_hash) keys.push(this.jobKeys.idempotency(job.workspace_id, job.idempotency_key_hash));
    return (await PURGE.run(this.redis, keys, [job.id, dueBeforeMs ?? '', REMOVED_KEPT_MS, REMOVED_KEPT_MAX, Date.now()])) === 1;
  }

  /** Video or image requests of a workspace, newest first by default, after a cursor id. */
  async list(
    workspaceId: string,
    kind: JobRecord['kind'],
    opts: { limit: number; after?: string; order: 'asc' | 'desc'; createdBeforeMs?: number },
  ): Promise<ListPage> {
    const key = this.jobKeys.workspaceJobs(workspaceId, kind);
    return readIndexPage(this.redis, key, {
      limit: opts.limit,
      after: opts.after,
      order: opts.order,
      maxScore: opts.createdBeforeMs,
      cursorScoreKeys: [this.keys.removedFrom(key)],
    });
  }

  async getMany(ids: string[]): Promise<JobRecord[]> {
    if (ids.length === 0) return [];
    const raws = await mgetByShard(this.redis, ids, this.jobKeys.job);
    // A list shows what it can read: one unreadable record must not hide the rest.
    return raws.flatMap((raw, i) => {
      if (raw === null) return [];
      try {
        return [decodeJob(ids[i], raw)];
      } catch {
        return [];
      }
    });
  }

  async ledger(workspaceId: string): Promise<LedgerEntry[]> {
    const raws = await this.redis.lrange(this.jobKeys.workspaceLedger(workspaceId), 0, -1);
    return raws.map((r) => JSON.parse(r) as LedgerEntry);
  }
}

/**
 * A job's id must name its workspace's shard (`newIdBeside`): its scripts join the two, which a
 * cluster refuses across slots and a single Redis would let pass unnoticed.
 */
function besideItsWorkspace(job: Pick<JobRecord, 'id' | 'workspace_id'>): void {
  if (shardOfId(job.id) !== shardOfId(job.workspace_id)) throw new Error(`job ${job.id} is not on the store shard of its workspace ${job.workspace_id}`);
}

function decodeJob(id: string, raw: string): JobRecord {
  try {
    return JSON.parse(raw) as JobRecord;
  } catch {
    throw new CorruptRecordError(id);
  }
}
