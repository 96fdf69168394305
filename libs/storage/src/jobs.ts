import type { Redis } from 'ioredis';
import { isFinished, type JobRecord, type LedgerEntry } from '@media/domain';
import type { StoreKeys } from './keys';

// Completion and its charge in one step: a job ends once, so it is charged at most once even
// when a crashed worker's job is processed again.
const FINISH = `
local raw = redis.call('GET', KEYS[1])
if not raw then return -1 end
local status = cjson.decode(raw)['status']
if status == 'completed' or status == 'failed' then return 0 end
redis.call('SET', KEYS[1], ARGV[1])
if ARGV[2] ~= '' then redis.call('RPUSH', KEYS[2], ARGV[2]) end
redis.call('PUBLISH', ARGV[4], ARGV[3])
return 1
`;

// Progress and status writes must never overwrite a finished job.
const UPDATE_ACTIVE = `
local raw = redis.call('GET', KEYS[1])
if not raw then return -1 end
local status = cjson.decode(raw)['status']
if status == 'completed' or status == 'failed' then return 0 end
redis.call('SET', KEYS[1], ARGV[1])
return 1
`;

export interface ListPage {
  ids: string[];
  hasMore: boolean;
}

/** Job records, per-workspace indexes and the charge ledger. */
export class JobRepository {
  constructor(
    private readonly redis: Redis,
    private readonly keys: StoreKeys,
  ) {}

  /** Stores a new job; false when a job with that id already exists (an idempotent replay). */
  async create(job: JobRecord): Promise<boolean> {
    const index = job.kind === 'video' ? this.keys.workspaceVideos(job.workspace_id) : this.keys.workspaceImages(job.workspace_id);
    const [[, set]] = (await this.redis
      .multi()
      .set(this.keys.job(job.id), JSON.stringify(job), 'NX')
      .zadd(index, 'NX', job.created_ms, job.id)
      .exec()) as [[Error | null, unknown], ...unknown[]];
    return set === 'OK';
  }

  async get(id: string): Promise<JobRecord | undefined> {
    const raw = await this.redis.get(this.keys.job(id));
    return raw ? (JSON.parse(raw) as JobRecord) : undefined;
  }

  /** A job of this workspace; another workspace's job is indistinguishable from a missing one. */
  async getForWorkspace(workspaceId: string, id: string): Promise<JobRecord | undefined> {
    const job = await this.get(id);
    return job && job.workspace_id === workspaceId ? job : undefined;
  }

  /** Writes an unfinished job; false if it has finished meanwhile. */
  async updateActive(job: JobRecord): Promise<boolean> {
    if (isFinished(job.status)) throw new Error('use finish() for finished jobs');
    return (await this.redis.eval(UPDATE_ACTIVE, 1, this.keys.job(job.id), JSON.stringify(job))) === 1;
  }

  /**
   * Marks the job finished and writes its charge in one transaction, then announces it.
   * Returns false if it had already finished (nothing is written or charged again).
   */
  async finish(job: JobRecord, charge: LedgerEntry | null): Promise<boolean> {
    if (!isFinished(job.status)) throw new Error('finish() needs a finished job');
    const result = await this.redis.eval(
      FINISH,
      2,
      this.keys.job(job.id),
      this.keys.workspaceLedger(job.workspace_id),
      JSON.stringify(job),
      charge ? JSON.stringify(charge) : '',
      job.id,
      this.keys.jobFinishedChannel(),
    );
    if (result === -1) throw new Error(`job ${job.id} does not exist`);
    return result === 1;
  }

  /** Videos of a workspace, newest first by default, after a cursor id. */
  async listVideos(workspaceId: string, opts: { limit: number; after?: string; order: 'asc' | 'desc' }): Promise<ListPage> {
    const key = this.keys.workspaceVideos(workspaceId);
    let start = 0;
    if (opts.after) {
      const rank = opts.order === 'desc' ? await this.redis.zrevrank(key, opts.after) : await this.redis.zrank(key, opts.after);
      if (rank === null) return { ids: [], hasMore: false };
      start = rank + 1;
    }
    const stop = start + opts.limit; // one extra to learn whether more follow
    const ids = opts.order === 'desc' ? await this.redis.zrevrange(key, start, stop) : await this.redis.zrange(key, start, stop);
    return { ids: ids.slice(0, opts.limit), hasMore: ids.length > opts.limit };
  }

  async getMany(ids: string[]): Promise<JobRecord[]> {
    if (ids.length === 0) return [];
    const raws = await this.redis.mget(ids.map((id) => this.keys.job(id)));
    return raws.filter((r): r is string => r !== null).map((r) => JSON.parse(r) as JobRecord);
  }

  async ledger(workspaceId: string): Promise<LedgerEntry[]> {
    const raws = await this.redis.lrange(this.keys.workspaceLedger(workspaceId), 0, -1);
    return raws.map((r) => JSON.parse(r) as LedgerEntry);
  }
}
