import { generationQueueEntry, type JobQueue } from '@media/queues';
import type { Logger } from '@media/common';
import { isFinished } from '@media/domain';
import type { JobRepository } from '@media/jobs';

/** How long a stored job may wait for the gateway to queue it before the repair does. */
export const INTAKE_GRACE_MS = 5_000;
const BATCH = 100;

/**
 * Queues jobs that a gateway stored but died before queueing (they would stay `queued` or
 * `in_progress` for ever). Queueing uses the job's own id, so a job that was queued after all is
 * not queued twice; one job that cannot be repaired is logged and skipped.
 */
export class IntakeRepair {
  constructor(
    private readonly jobs: JobRepository,
    private readonly generation: JobQueue<'generation'>,
    private readonly logger: Logger,
  ) {}

  /** Repairs what is older than the grace period, on every shard; returns how many jobs were queued. */
  async run(now = Date.now()): Promise<number> {
    let queued = 0;
    for (const shard of this.jobs.shards) queued += await this.runOn(shard, now);
    return queued;
  }

  private async runOn(shard: number, now: number): Promise<number> {
    let queued = 0;
    for (const id of await this.jobs.unqueuedSince(shard, now - INTAKE_GRACE_MS, BATCH)) {
      try {
        const job = await this.jobs.get(id);
        if (job && !isFinished(job.status)) {
          // The workspace's unfinished count now stands in for the rank it had at acceptance, seconds ago.
          const entry = generationQueueEntry(job, await this.jobs.unfinishedCount(job.workspace_id));
          await this.generation.add(entry.name, entry.payload, entry.opts);
          queued++;
          this.logger.warn('queued a job its gateway left unqueued', { job_id: id });
        }
        await this.jobs.markQueued(id);
      } catch (err) {
        this.logger.error('intake repair skipped a job', { job_id: id, error: String(err) });
      }
    }
    return queued;
  }
}
