import type { StoreKeys } from '@media/storage';

/**
 * The Redis keys of jobs, their charges and the limits on making them (see StoreKeys for the
 * keyspace): a job's record on the shard its id names (its workspace's), the workspace's listing
 * indexes, ledger, unfinished set, limits and rate counters there too, and each shard's intake,
 * uploading and expiry sets. Only this package reads or writes them (the dependency rules refuse an
 * import of this file from elsewhere).
 */
export class JobKeys {
  readonly #store: StoreKeys;

  constructor(store: StoreKeys) {
    this.#store = store;
  }

  workspaceVideos = (id: string) => `${this.#store.beside(id)}:ws:${id}:videos`;
  workspaceImages = (id: string) => `${this.#store.beside(id)}:ws:${id}:images`;
  /** The workspace's listing index of a job's kind (`/v1/videos` or `/v1/images`). */
  workspaceJobs = (id: string, kind: 'video' | 'image') => (kind === 'video' ? this.workspaceVideos(id) : this.workspaceImages(id));
  workspaceLedger = (id: string) => `${this.#store.beside(id)}:ws:${id}:ledger`;
  /** Ids of the workspace's accepted, unfinished jobs (the waiting-jobs cap counts them). */
  workspaceUnfinished = (id: string) => `${this.#store.beside(id)}:ws:${id}:unfinished`;
  /** Per-workspace overrides of the configured limits (hash: create_per_minute, read_per_minute, max_waiting_jobs). */
  workspaceLimits = (id: string) => `${this.#store.beside(id)}:ws:${id}:limits`;
  /** Request counter of one rate-limit bucket (`create`, `read`) for the current window; expires with it. */
  workspaceRate = (id: string, bucket: string) => `${this.#store.beside(id)}:ws:${id}:rate:${bucket}`;
  /** Failed API-key authentications from one client address (hashed) in the current minute; expires with it. */
  authFailures = (addressHash: string) => `${this.#store.prefix}:authfail:${addressHash}`;
  job = (id: string) => `${this.#store.beside(id)}:job:${id}`;
  /** A shard's jobs stored but not yet known to be queued, scored by creation time (the intake repair reads it). */
  intake = (shard: number) => `${this.#store.onShard(shard)}:intake`;
  /**
   * A shard's edits whose uploads are being stored before their job exists: member the blob folder
   * (`<workspace>/<job>`), score when the storing began (Unix ms). Storing the job takes it out; one
   * left long after names uploads whose gateway died first, which retention removes.
   */
  uploading = (shard: number) => `${this.#store.onShard(shard)}:uploading`;
  /** A shard's finished jobs by when their record and media expire (Unix ms): what the retention sweep removes. */
  jobExpiry = (shard: number) => `${this.#store.onShard(shard)}:expiry:jobs`;
  idempotency = (workspaceId: string, keyHash: string) => `${this.#store.beside(workspaceId)}:idem:${workspaceId}:${keyHash}`;
  /** Pub/sub channel on which finished job ids are announced (synchronous image calls wait on it). */
  jobFinishedChannel = () => `${this.#store.prefix}:job-finished`;
}
