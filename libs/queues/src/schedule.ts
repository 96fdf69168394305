import { join } from 'node:path';
import type { JobsOptions } from 'bullmq';
import type { Redis } from 'ioredis';
import { LuaScript, scheduleKey, storeShards, type Logger } from '@media/common';
import { QUEUE_SCHEDULES, type JobNameOf, type PayloadOf, type ScheduledJob, type ScheduledQueue } from './catalogue';

/** Where a promoter adds the due jobs: the queue that runs it (`JobQueue.addBulk` in ./queue). */
export interface ScheduleTarget<Q extends ScheduledQueue> {
  addBulk<N extends JobNameOf<Q>>(jobs: { name: N; payload: PayloadOf<Q, N>; opts?: JobsOptions }[]): Promise<void>;
}

/** Entries moved into the queue per round trip. */
const BATCH = 500;
/**
 * The longest a due entry waits for a promoter that is idle: a schedule written by another
 * process (or another replica) is seen within this. Every ladder gap is far longer.
 */
const MAX_SLEEP_MS = 200;
const ERROR_SLEEP_MS = 1_000;
/**
 * How long a promoter's claim on due entries keeps the other promoters off them, unless its
 * consumer gives its own (QueueConsumer: JOB_LOCK_MS, after which a dead worker's jobs run again
 * too). A step takes a few round trips; a claim ends early only for a promoter that died mid-step.
 */
export const DEFAULT_CLAIM_MS = 10_000;

// Takes the due entries of one shard's schedule for one promoter; its header says why.
const CLAIM_DUE = LuaScript.load(join(__dirname, '..', 'lua'), 'schedule-claim');

/**
 * Moves due entries of a queue's schedule (see {@link QUEUE_SCHEDULES}) into the queue as ordinary
 * jobs. It runs in every consumer of such a queue, so it lives and dies with the workers.
 *
 * Each step claims the due entries (lua/schedule-claim.lua: they stay in the schedule, due again
 * only when the claim ends), adds their jobs under the entry's job id, then removes the entries.
 * So several promoters (one per replica) may run at once and each entry is added once: a job id
 * does not keep a second add out by itself, since a delivery job is removed once it completes and
 * an attempt set aside for a busy destination completes within milliseconds.
 *
 * None can lose an entry, because an entry is removed only after its job was added. A promoter
 * that dies or fails between the claim and the removal leaves its entries to be promoted again once
 * the claim ends: BullMQ ignores the add while the job exists, a job that made its attempt finds it
 * recorded, and one that had set its attempt aside may make it again (with the same webhook-id,
 * the at-least-once of a crash).
 */
export class SchedulePromoter<Q extends ScheduledQueue> {
  /** The queue's schedule on each store shard. */
  private readonly keys: string[];
  private running: Promise<void> | undefined;
  private closed = false;
  private wakeUp: (() => void) | undefined;
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly queue: Q,
    private readonly redis: Redis,
    keyPrefix: string,
    private readonly target: ScheduleTarget<Q>,
    private readonly logger: Logger,
    /** How long a claim on due entries lasts (see {@link DEFAULT_CLAIM_MS}). */
    private readonly claimMs: number = DEFAULT_CLAIM_MS,
  ) {
    this.keys = storeShards(keyPrefix).map((shard) => scheduleKey(keyPrefix, queue, shard));
  }

  start(): void {
    this.running ??= this.loop();
  }

  /** Stops after the step under way (whose jobs are then added); safe to call twice. */
  async close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.timer);
    this.wakeUp?.();
    await this.running;
  }

  /**
   * Promotes every entry due at `nowMs`, on every shard; returns how many. The loop calls it; tests
   * and tools may call it directly.
   */
  async promoteDue(nowMs = Date.now()): Promise<number> {
    const counts = await Promise.all(this.keys.map((key) => this.promoteDueIn(key, nowMs)));
    return counts.reduce((a, b) => a + b, 0);
  }

  private async promoteDueIn(key: string, nowMs: number): Promise<number> {
    const toJob = QUEUE_SCHEDULES[this.queue] as (jobId: string) => ScheduledJob<Q> | undefined;
    let promoted = 0;
    for (;;) {
      const due = (await CLAIM_DUE.run(this.redis, [key], [nowMs, nowMs + this.claimMs, BATCH])) as string[];
      if (due.length === 0) return promoted;
      const jobs = due.flatMap((jobId) => {
        const job = toJob(jobId);
        if (!job) this.logger.error('schedule entry names no job; dropped', { queue: this.queue, job_id: jobId });
        return job ? [{ name: job.name, payload: job.payload, opts: { jobId } }] : [];
      });
      await this.target.addBulk(jobs);
      await this.redis.zrem(key, ...due);
      promoted += jobs.length;
      if (due.length < BATCH) return promoted;
    }
  }

  /**
   * One look at every shard's earliest entry (one command per shard, which is all an idle
   * promoter costs), then the promotion of the shards that have something due. Answers how long
   * to sleep: until the earliest entry is due, at most {@link MAX_SLEEP_MS}, none after promoting.
   */
  private async step(): Promise<number> {
    const nowMs = Date.now();
    const firsts = await Promise.all(this.keys.map((key) => this.redis.zrange(key, 0, 0, 'WITHSCORES')));
    let sleepMs = MAX_SLEEP_MS;
    const due: string[] = [];
    firsts.forEach((first, i) => {
      if (first.length !== 2) return;
      const atMs = Number(first[1]);
      if (atMs <= nowMs) due.push(this.keys[i]!);
      else sleepMs = Math.min(sleepMs, atMs - nowMs);
    });
    if (due.length === 0) return sleepMs;
    await Promise.all(due.map((key) => this.promoteDueIn(key, nowMs)));
    return 0;
  }

  private async loop(): Promise<void> {
    let failing = false;
    while (!this.closed) {
      let sleepMs = MAX_SLEEP_MS;
      try {
        sleepMs = await this.step();
        if (failing) this.logger.info('schedule promotion resumed', { queue: this.queue });
        failing = false;
      } catch (err) {
        // Logged once per outage, not once a second: the connection logs its own errors anyway.
        if (!failing) this.logger.warn('schedule promotion failed; retrying every second', { queue: this.queue, error: String(err) });
        failing = true;
        sleepMs = ERROR_SLEEP_MS;
      }
      if (this.closed) return;
      await new Promise<void>((resolve) => {
        this.wakeUp = resolve;
        this.timer = setTimeout(resolve, sleepMs);
      });
      this.wakeUp = undefined;
    }
  }
}
