import { Job, Queue, Worker, type JobsOptions } from 'bullmq';
import type { Redis } from 'ioredis';
import { PermanentJobError } from './errors';
import type { Logger } from './logger';
import { QUEUE_DEFAULTS, type JobNameOf, type PayloadOf, type QueueName } from './queues';
import { logRedisErrors } from './redis';

/** BullMQ keys live under the deployment's key prefix, beside the store's own keys. */
export const bullPrefix = (keyPrefix: string) => `${keyPrefix}:bull`;

/** A producer for one queue of the catalogue. */
export class JobQueue<Q extends QueueName> {
  private readonly queue: Queue;

  constructor(readonly name: Q, connection: Redis, keyPrefix: string, logger: Logger, overrides: JobsOptions = {}) {
    this.queue = new Queue(name, {
      connection,
      prefix: bullPrefix(keyPrefix),
      defaultJobOptions: { ...QUEUE_DEFAULTS[name], ...overrides },
    });
    // BullMQ re-emits its connection's errors; with no listener it prints them to the console.
    logRedisErrors(this.queue, logger, `queue:${name}`);
  }

  /** Adds a job; with a `jobId` in `opts`, adding the same id again while it exists is a no-op. */
  async add<N extends JobNameOf<Q>>(name: N, payload: PayloadOf<Q, N>, opts: JobsOptions = {}): Promise<void> {
    await this.queue.add(name as never, payload as never, opts);
  }

  /** Removes a waiting or delayed job; false if it is running or gone. */
  async remove(jobId: string): Promise<boolean> {
    try {
      return (await this.queue.remove(jobId)) === 1;
    } catch {
      return false; // locked by a worker right now
    }
  }

  async getDelay(jobId: string): Promise<number | undefined> {
    const job = await this.queue.getJob(jobId);
    if (!job || !(await job.isDelayed())) return undefined;
    return job.timestamp + (job.delay ?? 0);
  }

  /** Failed jobs, newest first, from rank `start` (BullMQ's failed set is ordered by when they failed). */
  async failedJobs(start: number, count: number): Promise<Job[]> {
    const jobs = await this.queue.getFailed(start, start + count - 1);
    return jobs.filter((job): job is Job => job !== undefined && job !== null);
  }

  async close(): Promise<void> {
    await this.queue.close();
  }
}

/** One handler per job name of a queue: a job name without a handler fails to compile. */
export type Handlers<Q extends QueueName> = {
  [N in JobNameOf<Q>]: (payload: PayloadOf<Q, N>, job: Job) => Promise<void>;
};

/** A job BullMQ will not run again: retries or stall recoveries used up, or a permanent failure. */
export interface GaveUpJob<Q extends QueueName> {
  /** The BullMQ job id. */
  id: string;
  name: JobNameOf<Q>;
  payload: PayloadOf<Q, JobNameOf<Q>>;
  reason: string;
  /** Set when the job failed with a {@link PermanentJobError}; unset for exhausted retries or stalls. */
  permanent: { code: string; detail: string } | undefined;
}

export interface ConsumerOptions<Q extends QueueName> {
  connection: Redis;
  keyPrefix: string;
  concurrency: number;
  logger: Logger;
  /** BullMQ lock; a killed worker's job is picked up again roughly this long after it died. */
  lockDurationMs: number;
  maxStalledCount?: number;
  /**
   * Records the domain outcome of a job BullMQ gave up on. Called from the `failed` event and again
   * by the sweep of the failed set, so it must be idempotent.
   */
  onGaveUp?: (job: GaveUpJob<Q>) => Promise<void>;
  /** How far back the first sweep after start-up looks for give-ups that a crash left unrecorded. */
  sweepLookbackMs?: number;
}

/** Failed jobs read per round trip while sweeping. */
const SWEEP_PAGE = 100;
const DEFAULT_SWEEP_LOOKBACK_MS = 24 * 3_600_000;

/**
 * The one wrapper for every BullMQ consumer of the catalogue: routes each job to the handler for
 * its name, records give-ups at the one place where BullMQ has given up, sweeps BullMQ's failed
 * set for give-ups a crash kept from being recorded, and closes in order.
 *
 * A give-up is seen by the worker's `failed` event when retries run out or the failure is
 * permanent; a job failed for stalling too often raises no such event, and a process that dies
 * right after BullMQ moved a job to failed never records it. The sweep covers both, so the
 * outcome is recorded whatever the timing; `onGaveUp` makes the repeat harmless.
 */
export class QueueConsumer<Q extends QueueName> {
  private readonly worker: Worker;
  private readonly failed: JobQueue<Q>;
  private readonly sweepIntervalMs: number;
  private sweepTimer: NodeJS.Timeout | undefined;
  /** Failed jobs older than this were seen by an earlier sweep. */
  private sweptSince: number;
  private sweeping: Promise<number> | undefined;
  private closing: Promise<void> | undefined;

  constructor(
    readonly name: Q,
    handlers: Handlers<Q>,
    private readonly opts: ConsumerOptions<Q>,
  ) {
    const logger = opts.logger.child({ queue: name });
    this.worker = new Worker(
      name,
      async (job: Job) => {
        // Own names only: a job named after an Object.prototype member must not find one.
        const handler = Object.hasOwn(handlers, job.name)
          ? (handlers[job.name as JobNameOf<Q>] as (p: unknown, j: Job) => Promise<void>)
          : undefined;
        if (!handler) throw new PermanentJobError('unknown_job', `no handler for job "${job.name}" on queue "${name}"`);
        await handler(job.data, job);
      },
      {
        connection: opts.connection,
        prefix: bullPrefix(opts.keyPrefix),
        concurrency: opts.concurrency,
        lockDuration: opts.lockDurationMs,
        stalledInterval: Math.max(500, Math.floor(opts.lockDurationMs / 2)),
        maxStalledCount: opts.maxStalledCount ?? 5,
      },
    );
    logRedisErrors(this.worker, logger, `worker:${name}`);
    this.failed = new JobQueue(name, opts.connection, opts.keyPrefix, logger);
    // Stalls are detected at lock granularity, so sweeping much more often would find nothing new.
    this.sweepIntervalMs = Math.max(5_000, opts.lockDurationMs * 2);
    this.sweptSince = Date.now() - (opts.sweepLookbackMs ?? DEFAULT_SWEEP_LOOKBACK_MS);

    if (opts.onGaveUp) {
      const onGaveUp = opts.onGaveUp;
      this.worker.on('failed', (job) => {
        // `failed` fires for every failed try; finishedOn is set only when BullMQ has given up.
        if (!job?.finishedOn) return;
        void onGaveUp(gaveUp<Q>(job)).catch((err) =>
          logger.error('could not record a give-up; the sweep will', { job: job.id, error: String(err) }),
        );
      });
      this.sweepTimer = setInterval(() => void this.sweep(), this.sweepIntervalMs);
      this.sweepTimer.unref();
      void this.sweep();
    }
  }

  /** Resolves once the worker's connection is ready. */
  async waitUntilReady(): Promise<void> {
    await this.worker.waitUntilReady();
  }

  /**
   * Records every give-up in the failed set since the previous sweep (the first one looks back
   * `sweepLookbackMs`). One job that cannot be handled is logged and skipped; it never stops the
   * rest. Returns how many were handed to `onGaveUp`.
   */
  sweep(): Promise<number> {
    this.sweeping ??= this.sweepOnce().finally(() => (this.sweeping = undefined));
    return this.sweeping;
  }

  private async sweepOnce(): Promise<number> {
    const onGaveUp = this.opts.onGaveUp;
    if (!onGaveUp || this.closing) return 0;
    const startedAt = Date.now();
    let handled = 0;
    try {
      pages: for (let start = 0; ; start += SWEEP_PAGE) {
        const page = await this.failed.failedJobs(start, SWEEP_PAGE);
        for (const job of page) {
          if ((job.finishedOn ?? 0) < this.sweptSince) break pages;
          try {
            await onGaveUp(gaveUp<Q>(job));
            handled++;
          } catch (err) {
            this.opts.logger.error('give-up sweep skipped a job', { queue: this.name, job: job.id, error: String(err) });
          }
        }
        if (page.length < SWEEP_PAGE) break;
      }
      // Overlap by one interval: a job that failed while this sweep was paging may sort behind where it read.
      this.sweptSince = startedAt - this.sweepIntervalMs;
    } catch (err) {
      // Redis away: the next sweep starts again from the same point.
      this.opts.logger.warn('give-up sweep interrupted', { queue: this.name, error: String(err) });
    }
    return handled;
  }

  /**
   * Stops taking jobs, waits for the running ones, then releases the worker's and the sweep's
   * connections (the shared Redis connection stays the caller's). Safe to call more than once.
   */
  close(): Promise<void> {
    this.closing ??= (async () => {
      clearInterval(this.sweepTimer);
      await this.worker.close();
      await this.sweeping?.catch(() => undefined);
      await this.failed.close();
    })();
    return this.closing;
  }
}

function gaveUp<Q extends QueueName>(job: Job): GaveUpJob<Q> {
  const reason = job.failedReason ?? 'unknown';
  return {
    id: job.id ?? '',
    name: job.name as JobNameOf<Q>,
    payload: job.data as PayloadOf<Q, JobNameOf<Q>>,
    reason,
    permanent: PermanentJobError.parse(reason),
  };
}
