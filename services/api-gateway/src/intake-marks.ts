import type { JobRepository } from '@media/jobs';

/** How long a cleared mark may wait for others to share its round trip; far below the repair's grace (seconds). */
export const MARK_BATCH_MS = 10;

/**
 * Clears the intake marks of queued jobs in batches: one ZREM for all the jobs queued within
 * {@link MARK_BATCH_MS}, rather than one more round trip in every creation call. The mark only
 * tells the generator's intake repair that a job might not be queued; a mark left behind (the
 * gateway killed before its batch went out, or Redis unreachable for it) makes the repair add the
 * job again under its own BullMQ job id after the grace period, which changes nothing for a job
 * that is queued, and clears the mark.
 */
export class IntakeMarks {
  private pending: string[] = [];
  private timer: NodeJS.Timeout | undefined;
  private readonly sending = new Set<Promise<void>>();

  constructor(private readonly jobs: Pick<JobRepository, 'markQueued'>) {}

  /** The job is queued: its mark goes with the next batch. */
  clear(jobId: string): void {
    this.pending.push(jobId);
    if (this.timer) return;
    this.timer = setTimeout(() => void this.flush(), MARK_BATCH_MS);
    this.timer.unref();
  }

  /** Sends what is pending now; resolves once it was sent (or failed: see the class comment). */
  flush(): Promise<void> {
    clearTimeout(this.timer);
    this.timer = undefined;
    const ids = this.pending;
    this.pending = [];
    if (ids.length === 0) return Promise.resolve();
    const sent: Promise<void> = this.jobs
      .markQueued(...ids)
      .catch(() => undefined)
      .finally(() => this.sending.delete(sent));
    this.sending.add(sent);
    return sent;
  }

  /** Sends what is pending and waits for every batch still under way; safe to call twice. */
  async close(): Promise<void> {
    await this.flush();
    await Promise.all([...this.sending]);
  }
}
