import type { JobQueue, Logger } from '@media/common';
import { jobIds } from '@media/common';
import { blobFolderOf, callbackIdFor, eventTypeFor, type JobRecord } from '@media/domain';
import type { BlobStore } from '@media/blob-store';
import { CorruptRecordError, type CallbackRepository, type JobRepository } from '@media/storage';

export interface RetentionDeps {
  jobs: Pick<JobRepository, 'get' | 'getMany' | 'dueForRemoval' | 'postponeRemoval' | 'forgetRemoval' | 'remove'>;
  callbacks: Pick<CallbackRepository, 'get' | 'endedBefore' | 'remove'>;
  blobs: Pick<BlobStore, 'removeAll'>;
  /** The dispatcher's queue: a job whose job-finished event is still waiting there must not go yet. */
  events: Pick<JobQueue<'job-events'>, 'isPending'>;
  logger: Logger;
  /** How long an ended callback is kept after its last attempt (CALLBACK_RETENTION_SECONDS). */
  callbackRetentionMs: number;
  now?: () => number;
}

/** What one sweep did; the counts are also logged. */
export interface SweepReport {
  jobsRemoved: number;
  /** Due jobs kept for now because something still needs them (a pending callback, an unsent event). */
  jobsHeld: number;
  blobsRemoved: number;
  callbacksRemoved: number;
  /** False when the sweep stopped at its time budget with more due: the next one goes on. */
  complete: boolean;
}

/** Ids read and handled per step: small enough that one step never holds Redis or the store for long. */
const BATCH = 100;
/** How far a due job that is still needed is moved on: it is looked at again then. */
const HOLD_MS = 3_600_000;
/** A record that cannot be decoded is left for a person; it is looked at again a day later, not every sweep. */
const CORRUPT_HOLD_MS = 86_400_000;

/**
 * Removes what retention has let go, in batches, and repeatably: a sweep killed at any line leaves
 * only work that the next sweep finds and finishes.
 *
 * - A finished job leaves at its `expires_ms` (set when it finished): first its media (everything
 *   under its blob folder), then, in one Redis step, its record, listing entry, expiry entry and
 *   Idempotency-Key claim. Its charge stays in the ledger. A job whose callback is still pending,
 *   or whose job-finished event has not been handled yet, is held: the callback renders the job,
 *   with fresh links, on every attempt.
 * - An ended callback (delivered or failed) leaves with its attempt log and index entries once its
 *   last attempt is older than the callback retention. A pending callback is never in that index.
 *
 * Download links are cut at the job's `expires_ms` when minted, so no link outlives its media.
 */
export class MediaRetention {
  private readonly now: () => number;

  constructor(private readonly deps: RetentionDeps) {
    this.now = deps.now ?? Date.now;
  }

  /** Sweeps until nothing is due or `budgetMs` has passed. */
  async sweep(budgetMs = 30_000): Promise<SweepReport> {
    const started = this.now();
    const report: SweepReport = { jobsRemoved: 0, jobsHeld: 0, blobsRemoved: 0, callbacksRemoved: 0, complete: false };
    // Jobs first: a held job waits on its callback, which ends (and is then swept) only later.
    for (;;) {
      const ids = await this.deps.jobs.dueForRemoval(this.now(), BATCH);
      if (ids.length > 0) await this.sweepJobs(ids, report);
      if (ids.length < BATCH) break;
      if (this.now() - started > budgetMs) return this.done(report);
    }
    for (;;) {
      const ids = await this.deps.callbacks.endedBefore(this.now() - this.deps.callbackRetentionMs, BATCH);
      for (const id of ids) if (await this.deps.callbacks.remove(id, this.now() - this.deps.callbackRetentionMs)) report.callbacksRemoved++;
      if (ids.length < BATCH) break;
      if (this.now() - started > budgetMs) return this.done(report);
    }
    report.complete = true;
    return this.done(report);
  }


  private async sweepJobs(ids: string[], report: SweepReport): Promise<void> {
    const found = new Map((await this.deps.jobs.getMany(ids)).map((job) => [job.id, job]));
    for (const id of ids) {
      const job = found.get(id) ?? (await this.readAlone(id));
      if (job === 'corrupt') {
        await this.deps.jobs.postponeRemoval(id, this.now() + CORRUPT_HOLD_MS);
        continue;
      }
      if (!job) {
        await this.deps.jobs.forgetRemoval(id);
        continue;
      }
      if (await this.stillNeeded(job)) {
        report.jobsHeld++;
        await this.deps.jobs.postponeRemoval(id, this.now() + HOLD_MS);
        continue;
      }
      const removed = await removeJob(this.deps, job, this.now());
      report.blobsRemoved += removed.blobs;
      if (removed.record) report.jobsRemoved++;
    }
  }

  /** Whether the job's callback still has attempts to make (each renders the job afresh). */
  private async stillNeeded(job: JobRecord): Promise<boolean> {
    if (!job.callback_url) return false;
    const callback = await this.deps.callbacks.get(callbackIdFor(job.id, eventTypeFor(job)));
    if (callback) return callback.state === 'pending';
    // No callback yet: the dispatcher has not handled the job's end (it was down, or behind).
    return this.deps.events.isPending(jobIds.jobFinished(job.id));
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
    if (report.jobsRemoved + report.jobsHeld + report.callbacksRemoved > 0 || !report.complete) {
      this.deps.logger.info('retention sweep', {
        jobs_removed: report.jobsRemoved,
        jobs_held: report.jobsHeld,
        blobs_removed: report.blobsRemoved,
        callbacks_removed: report.callbacksRemoved,
        complete: report.complete,
      });
    }
    return report;
  }
}

/**
 * Removes a finished job: its media first (everything under its blob folder), then, in one Redis
 * step, its record, listing entry, expiry entry and Idempotency-Key claim; a crash in between
 * leaves the record, so a repeat finds the job and finishes. The charge stays in the ledger.
 * `DELETE /v1/videos/{id}` calls it without `dueBeforeMs` (now, whatever the retention); a callback
 * still pending for the job then fails its next attempt, as for any job that no longer exists.
 */
export async function removeJob(
  deps: { jobs: Pick<JobRepository, 'remove'>; blobs: Pick<BlobStore, 'removeAll'> },
  job: JobRecord,
  dueBeforeMs?: number,
): Promise<{ blobs: number; record: boolean }> {
  const blobs = await deps.blobs.removeAll(blobFolderOf(job));
  return { blobs, record: await deps.jobs.remove(job, dueBeforeMs) };
}
