import { NO_RETENTION_METRICS, type Logger, type RetentionMetrics } from '@media/common';
import { blobFolderOf, callbackIdFor, callbackIdsFor, eventTypeFor, type JobRecord } from '@media/domain';
import type { BlobStore } from '@media/blob-store';
import { CorruptRecordError, type JobRepository } from '@media/jobs';
import type { CallbackRepository } from '@media/callbacks';

export interface RetentionDeps {
  jobs: Pick<
    JobRepository,
    | 'shards'
    | 'get'
    | 'getMany'
    | 'dueForRemoval'
    | 'countDueForRemoval'
    | 'holdUntil'
    | 'postponeRemoval'
    | 'forgetRemoval'
    | 'remove'
    | 'awaitsCallback'
    | 'abandonedUploads'
    | 'forgetUploads'
    | 'forgetUnstored'
  >;
  callbacks: Pick<CallbackRepository, 'get' | 'getMany' | 'fanOutCallbackIdsOf' | 'endedBefore' | 'countEndedBefore' | 'remove' | 'postponeRemoval'>;
  blobs: Pick<BlobStore, 'removeAll'>;
  logger: Logger;
  metrics?: RetentionMetrics;
  /** How long an ended callback is kept after its last attempt (CALLBACK_RETENTION_SECONDS). */
  callbackRetentionMs: number;
  /** LINK_TTL_SECONDS in ms: a job held for its callback stays at least this long after the hold, so the next attempt's links are whole. */
  linkTtlMs: number;
  now?: () => number;
  /** Items read from a shard's index per step; {@link BATCH} by default. */
  batchSize?: number;
}

/** What one sweep did; the counts are also logged. */
export interface SweepReport {
  jobsRemoved: number;
  /** Due jobs kept for now because something still needs them (a pending callback, an unsent event). */
  jobsHeld: number;
  blobsRemoved: number;
  callbacksRemoved: number;
  /** Edits whose gateway died while storing their uploads, before the job existed: their files removed. */
  abandonedUploadsRemoved: number;
  /** Items that failed (logged, and looked at again later); they never stop the rest. */
  errors: number;
  /** False when the sweep stopped (time budget, shutdown) with more due: the next one goes on. */
  complete: boolean;
}

/** Ids read and handled per step: small enough that one step never holds Redis or the store for long. */
const BATCH = 100;
/**
 * How long an edit's uploads may be in storing before their job is given up for never stored: far
 * past any request (Node ends one after 5 minutes) and the Idempotency-Key's take-over of a request
 * that died (5 minutes), which stores the job under the same id.
 */
const ABANDONED_UPLOADS_MS = 30 * 60_000;
/** How far a due job that is still needed, or one that failed to go, is moved on: it is looked at again then. */
const HOLD_MS = 3_600_000;
/** A record that cannot be decoded is left for a person; it is looked at again a day later, not every sweep. */
const CORRUPT_HOLD_MS = 86_400_000;

/**
 * Removes what retention has let go, in batches, and repeatably: a sweep killed at any line leaves
 * only work that the next sweep finds and finishes. One item that fails is logged and moved on; it
 * never stops the others.
 *
 * - A finished job leaves at its `expires_ms` (set when it finished): first its media (everything
 *   under its blob folder), then its callback, then, in one Redis step, its record, listing entry,
 *   expiry entry and Idempotency-Key claim. Its charge stays in the ledger. A job whose callback is
 *   pending, or not yet created (the dispatcher has not handled its end), is held: every attempt
 *   renders the job with fresh links, so the hold moves its `expires_ms` (where links are cut) too.
 * - An ended callback (delivered or failed) leaves with its attempt log and index entries once its
 *   last attempt is older than the callback retention, or with its job, whichever comes first: a
 *   callback without its job could not be delivered again.
 */
export class MediaRetention {
  private readonly now: () => number;
  private readonly batch: number;
  private stopping = false;
  /** Where the next sweep starts among the shards (see `rotatedShards`). */
  private firstShard = 0;

  constructor(private readonly deps: RetentionDeps) {
    this.now = deps.now ?? Date.now;
    this.batch = deps.batchSize ?? BATCH;
  }

  /** The shards in the order this sweep takes them: one further on than the last sweep's. */
  private rotatedShards(): readonly number[] {
    const all = this.deps.jobs.shards;
    const start = this.firstShard++ % all.length;
    return [...all.slice(start), ...all.slice(0, start)];
  }

  /** Ends a running sweep after the item at hand (shutdown); the next process's sweeps go on. */
  stop(): void {
    this.stopping = true;
  }

  /** What is due and not yet removed (`media_retention_due{kind}`): a number that grows means sweeps stopped or keep failing. */
  async due(): Promise<{ jobs: number; callbacks: number }> {
    const now = this.now();
    const [jobs, callbacks] = await Promise.all([
      this.deps.jobs.countDueForRemoval(now),
      this.deps.callbacks.countEndedBefore(now - this.deps.callbackRetentionMs),
    ]);
    return { jobs, callbacks };
  }

  /** Sweeps until nothing is due, `budgetMs` has passed, or {@link stop}. */
  async sweep(budgetMs = 30_000): Promise<SweepReport> {
    const started = this.now();
    const report: SweepReport = { jobsRemoved: 0, jobsHeld: 0, blobsRemoved: 0, callbacksRemoved: 0, abandonedUploadsRemoved: 0, errors: 0, complete: false };
    const goOn = () => !this.stopping && this.now() - started <= budgetMs;
    // Jobs first: a held job waits on its callback, which ends (and is then swept) only later.
    // Shard by shard: each keeps its own expiry and ended sets (keys.ts). Each sweep starts one
    // shard further on, so a backlog larger than one sweep's budget cannot hold the others back.
    const shards = this.rotatedShards();
    for (const shard of shards) {
      for (;;) {
        const ids = await this.deps.jobs.dueForRemoval(shard, this.now(), this.batch);
        const found = new Map((await this.deps.jobs.getMany(ids)).map((job) => [job.id, job]));
        for (const id of ids) {
          if (!goOn()) return this.done(report);
          await this.isolated(report, 'job', id, () => this.sweepJob(id, found.get(id), report));
        }
        if (ids.length < this.batch) break;
      }
    }
    for (const shard of shards) {
      for (;;) {
        const cutoff = this.now() - this.deps.callbackRetentionMs;
        const ids = await this.deps.callbacks.endedBefore(shard, cutoff, this.batch);
        for (const id of ids) {
          if (!goOn()) return this.done(report);
          await this.isolated(report, 'callback', id, async () => {
            if (await this.deps.callbacks.remove(id, cutoff)) report.callbacksRemoved++;
          });
        }
        if (ids.length < this.batch) break;
      }
    }
    for (const shard of shards) {
      for (;;) {
        const uploads = await this.deps.jobs.abandonedUploads(shard, this.now() - ABANDONED_UPLOADS_MS, this.batch);
        for (const upload of uploads) {
          if (!goOn()) return this.done(report);
          await this.isolated(report, 'upload', upload.jobId, () => this.sweepUploads(upload, report));
        }
        if (uploads.length < this.batch) break;
      }
    }
    report.complete = true;
    return this.done(report);
  }

  /** An edit's uploads whose job was never stored go; a job that was stored keeps its own (its note is stale). */
  private async sweepUploads(upload: { workspaceId: string; jobId: string }, report: SweepReport): Promise<void> {
    // The note is taken first, so that of two sweeps only one goes on; storing the job takes it too.
    if (!(await this.deps.jobs.forgetUploads(upload))) return;
    if ((await this.deps.jobs.get(upload.jobId)) !== undefined) return;
    report.blobsRemoved += await this.deps.blobs.removeAll(blobFolderOf({ workspace_id: upload.workspaceId, id: upload.jobId }));
    report.abandonedUploadsRemoved++;
    await this.deps.jobs.forgetUnstored(upload);
  }

  private async sweepJob(id: string, read: JobRecord | undefined, report: SweepReport): Promise<void> {
    const job = read ?? (await this.readAlone(id));
    if (job === 'corrupt') {
      await this.deps.jobs.postponeRemoval(id, this.now() + CORRUPT_HOLD_MS);
      return;
    }
    if (!job) {
      await this.deps.jobs.forgetRemoval(id);
      return;
    }
    if (await this.stillNeeded(job)) {
      report.jobsHeld++;
      await this.deps.jobs.holdUntil(job, this.now() + HOLD_MS + this.deps.linkTtlMs);
      return;
    }
    const removed = await removeJob(this.deps, job, this.now());
    report.blobsRemoved += removed.blobs;
    report.callbacksRemoved += removed.callbacks;
    if (removed.record) report.jobsRemoved++;
  }

  /** Whether one of the job's callbacks (its own `callback_url`'s, or an endpoint's) still has attempts to make, or is still to be created. */
  private async stillNeeded(job: JobRecord): Promise<boolean> {
    const toEndpoints = await this.deps.callbacks.getMany(await this.deps.callbacks.fanOutCallbackIdsOf(job.id));
    if (toEndpoints.some((callback) => callback.state === 'pending')) return true;
    if (!job.callback_url) return false;
    const callback = await this.deps.callbacks.get(callbackIdFor(job.id, eventTypeFor(job)));
    if (callback) return callback.state === 'pending';
    return this.deps.jobs.awaitsCallback(job.id);
  }

  /** One item's work; a failure is logged and the item is looked at again later, the sweep goes on. */
  private async isolated(report: SweepReport, kind: 'job' | 'callback' | 'upload', id: string, work: () => Promise<void>): Promise<void> {
    try {
      await work();
    } catch (err) {
      report.errors++;
      const corrupt = err instanceof CorruptRecordError;
      this.deps.logger.error(
        corrupt ? `expired ${kind} record cannot be read; left in place` : `retention could not remove a ${kind}; it is tried again later`,
        {
          [kind === 'callback' ? 'message_id' : 'job_id']: id,
          error: String(err),
        },
      );
      // Moved on, so it is not the first of every later batch: looked at again in an hour (a day if
      // its record is corrupt, which only a person can mend). A callback's place is its last
      // activity, so it moves to the time that makes it due again then.
      const later = this.now() + (corrupt ? CORRUPT_HOLD_MS : HOLD_MS);
      const postponed =
        kind === 'job' ? this.deps.jobs.postponeRemoval(id, later) : this.deps.callbacks.postponeRemoval(id, later - this.deps.callbackRetentionMs);
      await postponed.catch(() => undefined);
    }
  }

  /** A record `getMany` left out: gone, or unreadable (which only a person can mend). */
  private async readAlone(id: string): Promise<JobRecord | undefined | 'corrupt'> {
    try {
      return await this.deps.jobs.get(id);
    } catch (err) {
      if (!(err instanceof CorruptRecordError)) throw err;
      this.deps.logger.error('expired job record cannot be read; left in place', { job_id: id });
      return 'corrupt';
    }
  }

  private done(report: SweepReport): SweepReport {
    (this.deps.metrics ?? NO_RETENTION_METRICS).swept(report);
    if (report.jobsRemoved + report.jobsHeld + report.callbacksRemoved + report.errors > 0 || !report.complete) {
      this.deps.logger.info('retention sweep', {
        jobs_removed: report.jobsRemoved,
        jobs_held: report.jobsHeld,
        blobs_removed: report.blobsRemoved,
        callbacks_removed: report.callbacksRemoved,
        errors: report.errors,
        complete: report.complete,
      });
    }
    return report;
  }
}

/**
 * Removes a finished job: its media first (everything under its blob folder), then its callback
 * (which could not be delivered without the job), then, in one Redis step, its record, listing
 * entry, expiry entry and Idempotency-Key claim. A crash in between leaves the record, so a repeat
 * finds the job and finishes. The charge stays in the ledger. `DELETE /v1/videos/{id}` calls it
 * without `dueBeforeMs` (now, whatever the retention, a pending callback included).
 */
export async function removeJob(
  deps: { jobs: Pick<JobRepository, 'remove'>; callbacks: Pick<CallbackRepository, 'remove' | 'fanOutCallbackIdsOf'>; blobs: Pick<BlobStore, 'removeAll'> },
  job: JobRecord,
  dueBeforeMs?: number,
): Promise<{ blobs: number; callbacks: number; record: boolean }> {
  const blobs = await deps.blobs.removeAll(blobFolderOf(job));
  let callbacks = 0;
  // Both event types of its own callback: the job's end decides which one it has, and a record read
  // earlier may be stale. Then those to the workspace's endpoints.
  const ids = [...(job.callback_url ? callbackIdsFor(job.id, job.kind) : []), ...(await deps.callbacks.fanOutCallbackIdsOf(job.id))];
  for (const id of ids) {
    if (await deps.callbacks.remove(id, 'with-its-job')) callbacks++;
  }
  return { blobs, callbacks, record: await deps.jobs.remove(job, dueBeforeMs) };
}
