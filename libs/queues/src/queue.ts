import { Job, Queue, Worker, type JobsOptions } from 'bullmq';
import type { Redis } from 'ioredis';
import { QueueDepth } from './depth';
import { SchedulePromoter } from './schedule';
import {
  hasSchedule,
  JOB_SCHEDULERS,
  QUEUE_DEFAULTS,
  type JobNameOf,
  type JobScheduler,
  type PayloadOf,
  type QueueName,
  type ScheduledQueue,
} from './catalogue';
import { bullKey, bullPrefix, duplicateRedis, logRedisErrors, PermanentJobError, withTimeout, type AppConfig, type Logger } from '@media/common';

/** A producer for one queue of the catalogue. */
export class JobQueue<Q extends QueueName> {
  private readonly queue: Queue;

  constructor(
    readonly name: Q,
    private readonly connection: Redis,
    private readonly keyPrefix: string,
    logger: Logger,
    overrides: JobsOptions = {},
  ) {
    this.queue = new Queue(name, {
      connection,
      prefix: bullPrefix(keyPrefix, name),
      defaultJobOptions: { ...QUEUE_DEFAULTS[name], ...overrides },
    });
    // BullMQ re-emits its connection's errors; with no listener it prints them to the console.
    logRedisErrors(this.queue, logger, `queue:${name}`);
  }

  /** Adds a job; with a `jobId` in `opts`, adding the same id again while it exists is a no-op. */
  async add<N extends JobNameOf<Q>>(name: N, payload: PayloadOf<Q, N>, opts: JobsOptions = {}): Promise<void> {
    await this.queue.add(name as never, payload as never, opts);
  }

  /** Adds many jobs in one round trip (each with its own options, e.g. a `jobId` and a delay). */
  async addBulk<N extends JobNameOf<Q>>(jobs: { name: N; payload: PayloadOf<Q, N>; opts?: JobsOptions }[]): Promise<void> {
    if (jobs.length === 0) return;
    await this.queue.addBulk(jobs.map((j) => ({ name: j.name as never, data: j.payload as never, opts: j.opts })));
  }

  /**
   * Declares the queue's job schedulers (`JOB_SCHEDULERS`) with their intervals from `config`.
   * Idempotent, and the last declaration's interval wins, so each replica declares them at start.
   */
  async declareSchedulers(config: AppConfig): Promise<void> {
    const schedulers = (JOB_SCHEDULERS[this.name] ?? {}) as Record<string, JobScheduler<Q, JobNameOf<Q>> | undefined>;
    for (const [name, scheduler] of Object.entries(schedulers)) {
      if (!scheduler) continue;
      await this.queue.upsertJobScheduler(name, { every: config[scheduler.everyMsFrom] }, { name, data: scheduler.payload as never });
    }
  }

  /**
   * Makes a delayed job runnable now; nothing happens when no such job exists, or when it is
   * waiting or running already.
   */
  async promote(jobId: string): Promise<void> {
    const job = await this.queue.getJob(jobId);
    // BullMQ refuses to promote a job that is not delayed; that is the "already runnable" case.
    await job?.promote().catch(() => undefined);
  }

  /** Removes a waiting or delayed job; false if it is running or gone. */
  async remove(jobId: string): Promise<boolean> {
    try {
      return (await this.queue.remove(jobId)) === 1;
    } catch {
      return false; // locked by a worker right now
    }
  }

  /** How many jobs failed at or after `sinceMs` (BullMQ scores its failed set by `finishedOn`). */
  async failedSince(sinceMs: number): Promise<number> {
    return this.connection.zcount(bullKey(this.keyPrefix, this.name, 'failed'), sinceMs, '+inf');
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
  /**
   * The liveness bound (WORKER_LIVENESS_BOUND_MS): {@link QueueConsumer.health} reports a wedge when
   * work has waited longer than this while the worker, with free slots, did nothing for as long,
   * or when its Redis connection has been down for longer than this.
   */
  livenessBoundMs?: number;
}

/** What a liveness probe needs to know about one consumer. */
export interface ConsumerHealth {
  queue: QueueName;
  healthy: boolean;
  /** Why it is not healthy, or a note (closing, busy, depth unknown). */
  reason?: string;
  /** Since the worker last took, finished or failed a job, or found the queue empty. */
  idleMs: number;
  inFlight: number;
  redis: string;
  backlog?: number;
  oldestWaitingSeconds?: number;
}

/** Failed jobs read per round trip while sweeping. */
const SWEEP_PAGE = 100;
const DEFAULT_SWEEP_LOOKBACK_MS = 24 * 3_600_000;
const MIN_SWEEP_OVERLAP_MS = 60_000;
const UNRECORDED_HOLD_MS = 3_600_000;
const DEFAULT_LIVENESS_BOUND_MS = 120_000;
/** A probe must answer well within the kubelet's timeout, Redis or not. */
const HEALTH_READ_TIMEOUT_MS = 1_000;

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
  /** Also the producer the schedule's due entries are added through. */
  private readonly failed: JobQueue<Q>;
  private readonly promoter: SchedulePromoter<ScheduledQueue> | undefined;
  private readonly sweepIntervalMs: number;
  private sweepTimer: NodeJS.Timeout | undefined;
  /** Failed jobs older than this were seen by an earlier sweep. */
  private sweptSince: number;
  private sweeping: Promise<number> | undefined;
  /** Give-ups being recorded from `failed` events; close() waits for them. */
  private readonly recording = new Set<Promise<void>>();
  private closing: Promise<void> | undefined;
  /** Own connection for health reads, so they never queue behind the worker's own commands. */
  private readonly probe: Redis;
  private readonly depth: QueueDepth;
  private lastActivityMs = Date.now();
  /** When the health probe last read the queue; a probe blind for longer than the bound fails liveness. */
  /**
   * The first failed read since the last good one (or busy spell): how long the queue has been
   * unreadable is counted from it, not from the last good read, which may be long before when
   * nothing probed in between.
   */
  private probeFailingSinceMs: number | undefined;
  private inFlight = 0;
  /** Set while the shared connection is down; cleared when it is ready again. */
  private disconnectedSinceMs: number | undefined;

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
        const handler = Object.hasOwn(handlers, job.name) ? (handlers[job.name as JobNameOf<Q>] as (p: unknown, j: Job) => Promise<void>) : undefined;
        if (!handler) {
          // Only a job added by hand (Bull Board, a script) has such a name; it fails once, here.
          logger.warn('job has no handler; failing it', { job: job.id, name: String(job.name).slice(0, 100), code: 'unknown_job' });
          throw new PermanentJobError('unknown_job', `no handler for job "${job.name}" on queue "${name}"`);
        }
        this.inFlight++;
        try {
          await handler(job.data, job);
        } finally {
          this.inFlight--;
        }
      },
      {
        connection: opts.connection,
        prefix: bullPrefix(opts.keyPrefix, name),
        concurrency: opts.concurrency,
        lockDuration: opts.lockDurationMs,
        stalledInterval: Math.max(500, Math.floor(opts.lockDurationMs / 2)),
        maxStalledCount: opts.maxStalledCount ?? 5,
      },
    );
    logRedisErrors(this.worker, logger, `worker:${name}`);
    // A job whose lock lapsed while it ran (its worker died, or stalled past JOB_LOCK_MS) runs again:
    // for callbacks that may be a second POST with the same webhook-id.
    this.worker.on('stalled', (jobId) => logger.warn('job stalled; it runs again', { job: jobId }));
    // Every sign that the worker loop turns: it took a job, ended one, or looked and found none.
    for (const event of ['active', 'completed', 'failed', 'drained', 'ready'] as const) {
      this.worker.on(event, () => (this.lastActivityMs = Date.now()));
    }
    if (opts.connection.status !== 'ready') this.disconnectedSinceMs = Date.now();
    opts.connection.on('close', () => (this.disconnectedSinceMs ??= Date.now()));
    opts.connection.on('ready', () => (this.disconnectedSinceMs = undefined));
    this.probe = duplicateRedis(opts.connection, { maxRetriesPerRequest: 1 });
    logRedisErrors(this.probe, logger, `health:${name}`);
    this.depth = new QueueDepth(this.probe, opts.keyPrefix);
    this.failed = new JobQueue(name, opts.connection, opts.keyPrefix, logger);
    if (hasSchedule(name)) {
      // Due entries wait in the backlog that health() reads, so a promoter that stops turning
      // shows as work waiting while the worker sits idle: a wedge.
      // A promoter that dies mid-step leaves its claimed entries to the others after a lock, as a
      // dead worker leaves its jobs.
      this.promoter = new SchedulePromoter(name, opts.connection, opts.keyPrefix, this.failed as JobQueue<typeof name>, logger, opts.lockDurationMs);
      this.promoter.start();
    }
    // Stalls are detected at lock granularity, so sweeping much more often would find nothing new.
    this.sweepIntervalMs = Math.max(5_000, opts.lockDurationMs * 2);
    this.sweptSince = Date.now() - (opts.sweepLookbackMs ?? DEFAULT_SWEEP_LOOKBACK_MS);

    if (opts.onGaveUp) {
      const onGaveUp = opts.onGaveUp;
      this.worker.on('failed', (job) => {
        // `failed` fires for every failed try; finishedOn is set only when BullMQ has given up.
        if (!job?.finishedOn) return;
        const recording = onGaveUp(gaveUp<Q>(job))
          .catch((err: unknown) => {
            logger.error('could not record a give-up; the sweep will', { job: job.id, error: String(err) });
          })
          .finally(() => this.recording.delete(recording));
        this.recording.add(recording);
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
   * Whether this worker is doing its job, for a liveness probe. Wedged means: the BullMQ worker is
   * not running; or its Redis connection has been down longer than the bound; or work has waited
   * longer than the bound while this worker had free slots and did nothing for as long (BullMQ's
   * known failure after a failover or a lost lock: "running", connected, silent). A worker whose
   * slots are all taken is busy, not wedged; its jobs have their own timeouts and locks.
   */
  async health(nowMs = Date.now()): Promise<ConsumerHealth> {
    const bound = this.opts.livenessBoundMs ?? DEFAULT_LIVENESS_BOUND_MS;
    const base = { queue: this.name, idleMs: nowMs - this.lastActivityMs, inFlight: this.inFlight, redis: this.opts.connection.status };
    // A draining worker has stopped on purpose; a restart now would only cut the drain short.
    if (this.closing) return { ...base, healthy: true, reason: 'closing' };
    if (!this.worker.isRunning()) return { ...base, healthy: false, reason: 'worker not running' };
    if (this.disconnectedSinceMs !== undefined && nowMs - this.disconnectedSinceMs > bound) {
      return { ...base, healthy: false, reason: `no Redis connection for ${Math.round((nowMs - this.disconnectedSinceMs) / 1000)}s` };
    }
    if (this.inFlight >= this.opts.concurrency) {
      // Not probed while busy: blindness is counted from the end of the busy spell, not before it.
      this.probeFailingSinceMs = undefined;
      return { ...base, healthy: true, reason: 'busy' };
    }
    let reading;
    try {
      reading = await withTimeout(this.depth.read(this.name, nowMs), HEALTH_READ_TIMEOUT_MS);
      this.probeFailingSinceMs = undefined;
    } catch {
      // A short outage is readiness's business. But a connection that is half-open after a failover
      // never emits `close`, so the bound also applies to how long the queue could not be read:
      // from the first failed read.
      this.probeFailingSinceMs ??= nowMs;
      const blindMs = nowMs - this.probeFailingSinceMs;
      if (blindMs > bound) return { ...base, healthy: false, reason: `queue unreadable for ${Math.round(blindMs / 1000)}s` };
      return { ...base, healthy: true, reason: 'queue depth unknown' };
    }
    const stats = { backlog: reading.backlog, oldestWaitingSeconds: reading.oldestWaitingSeconds };
    // An operator paused the queue: restarting its workers would not make them take work.
    if (reading.paused) return { ...base, ...stats, healthy: true, reason: 'queue paused' };
    if (reading.oldestWaitingSeconds * 1000 > bound && base.idleMs > bound) {
      return { ...base, ...stats, healthy: false, reason: `work has waited ${Math.round(reading.oldestWaitingSeconds)}s while the worker was idle` };
    }
    return { ...base, ...stats, healthy: true };
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
    // The oldest give-up this sweep could not record: the next sweeps read back to it again.
    let oldestUnrecorded = Infinity;
    try {
      // One count first: most sweeps find nothing new, and a page of failed jobs is heavy to read.
      // (Paging itself is not bounded by the count: jobs failing meanwhile shift the ranks.)
      const fresh = await this.failed.failedSince(this.sweptSince);
      pages: for (let start = 0; fresh > 0; start += SWEEP_PAGE) {
        const page = await this.failed.failedJobs(start, SWEEP_PAGE);
        for (const job of page) {
          if ((job.finishedOn ?? 0) < this.sweptSince) break pages;
          try {
            await onGaveUp(gaveUp<Q>(job));
            handled++;
          } catch (err) {
            oldestUnrecorded = Math.min(oldestUnrecorded, job.finishedOn ?? 0);
            this.opts.logger.error('give-up sweep skipped a job', { queue: this.name, job: job.id, error: String(err) });
          }
        }
        if (page.length < SWEEP_PAGE) break;
      }
      // Overlap: a job that failed while this sweep was paging, or whose failing pod's clock runs
      // behind ours, may sort behind where it read. A give-up that could not be recorded holds the
      // mark back, but for an hour at most, so one record that never can be does not make every
      // sweep read everything after it for ever.
      const overlapMs = Math.max(this.sweepIntervalMs, MIN_SWEEP_OVERLAP_MS);
      this.sweptSince = Math.max(Math.min(startedAt - overlapMs, oldestUnrecorded), startedAt - UNRECORDED_HOLD_MS);
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
      await this.promoter?.close();
      await this.worker.close();
      // Give-ups of the last jobs are still being written: the connection must outlive them.
      await Promise.all(this.recording);
      await this.sweeping?.catch(() => undefined);
      await this.failed.close();
      this.probe.disconnect();
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
