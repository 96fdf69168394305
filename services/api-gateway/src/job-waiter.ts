import type { Redis } from 'ioredis';
import { isFinished, type JobRecord } from '@media/domain';
import type { JobRepository } from '@media/jobs';

const RECHECK_MS = 2_000;

/**
 * Lets a synchronous image call wait for its job. One subscription per gateway process hears
 * every finished job id; the store is read after registering, so an early finish is not missed.
 */
export class JobWaiter {
  private readonly waiting = new Map<string, Set<() => void>>();
  private ready: Promise<unknown> | undefined;

  constructor(
    private readonly subscriber: Redis,
    private readonly jobs: JobRepository,
  ) {
    subscriber.on('message', (_channel: string, jobId: string) => {
      for (const wake of this.waiting.get(jobId) ?? []) wake();
    });
  }

  /** The finished job, or undefined if it is still running when the timeout passes. */
  async wait(jobId: string, timeoutMs: number): Promise<JobRecord | undefined> {
    this.ready ??= this.subscriber.subscribe(this.jobs.finishedChannel());
    await this.ready;
    const deadline = Date.now() + timeoutMs;
    let wake!: () => void;
    let woken = new Promise<void>((resolve) => (wake = resolve));
    const onMessage = () => wake();
    const set = this.waiting.get(jobId) ?? new Set();
    set.add(onMessage);
    this.waiting.set(jobId, set);
    let timer: NodeJS.Timeout | undefined;
    try {
      for (;;) {
        const job = await this.jobs.get(jobId);
        if (job && isFinished(job.status)) return job;
        const left = deadline - Date.now();
        if (left <= 0) return undefined;
        // Pub/sub is the fast path; re-reading now and then covers a message lost while Redis reconnected.
        await Promise.race([woken, new Promise<void>((resolve) => (timer = setTimeout(resolve, Math.min(left, RECHECK_MS))))]);
        clearTimeout(timer);
        woken = new Promise<void>((resolve) => (wake = resolve));
      }
    } finally {
      clearTimeout(timer);
      set.delete(onMessage);
      if (set.size === 0) this.waiting.delete(jobId);
    }
  }

  async close(): Promise<void> {
    await this.subscriber.quit().catch(() => undefined);
  }
}
