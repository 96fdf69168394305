import { join } from 'node:path';
import type { Redis } from 'ioredis';
import { bullKey, LuaScript, scheduleKey, storeShards } from '@media/common';
import { hasSchedule, type QueueName } from './catalogue';

/** The states of `media_queue_jobs`; `delayed_due` is part of `delayed`, not beside it. */
export const QUEUE_STATES = ['waiting', 'prioritized', 'delayed', 'delayed_due', 'active', 'failed'] as const;
export type QueueState = (typeof QUEUE_STATES)[number];

export interface QueueDepthReading {
  jobs: Record<QueueState, number>;
  /** What a worker has to do now: waiting + prioritized + delayed_due (what the autoscalers count). */
  backlog: number;
  /** Age of the oldest job that could run now (waiting, prioritized, or delayed and due), 0 when there is none. */
  oldestWaitingSeconds: number;
  /** Paused by an operator (Bull Board): its waiting work is not the workers' fault. */
  paused: boolean;
}

/**
 * BullMQ 6 scores a delayed job `dueAtMs * 0x1000 + counter` (getDelayedScore.lua), so "due by
 * now" is every score up to the last one of this millisecond.
 */
const DELAYED_SCORE_FACTOR = 0x1000;

/** How many priority levels {@link OLDEST_PRIORITIZED} looks at, at most. */
const MAX_PRIORITY_LEVELS = 5_000;

// The prioritized job that has waited longest; the header of lua/queue-oldest-prioritized.lua says why it takes a script.
const OLDEST_PRIORITIZED = LuaScript.load(join(__dirname, '..', 'lua'), 'queue-oldest-prioritized');

/**
 * Reads one queue's depth straight from BullMQ's keys in one round trip. BullMQ's own getCounts
 * has no "delayed and due" count: those jobs are promoted only while a worker runs, so with no
 * healthy worker they pile up in the delayed set looking like future work. Counting them here is
 * what lets the autoscaler and the dispatcher-lag alert see them.
 */
export class QueueDepth {
  constructor(
    private readonly redis: Redis,
    private readonly keyPrefix: string,
  ) {}

  async read(queue: QueueName, nowMs = Date.now()): Promise<QueueDepthReading> {
    const key = (suffix: string) => bullKey(this.keyPrefix, queue, suffix);
    const dueMax = (nowMs + 1) * DELAYED_SCORE_FACTOR - 1;
    // Pipelines, not MULTI: reads only, and they must pass a Redis paused for writes (CLIENT PAUSE
    // WRITE). Two of them, sent together: the queue's keys and its schedule live in different
    // cluster slots (keyspace.ts), and a cluster client sends a pipeline to one node only.
    const [queueReplies, scheduled, oldestPrioritized] = await Promise.all([
      this.redis
        .pipeline()
        .llen(key('wait'))
        .zcard(key('prioritized'))
        .zcard(key('delayed'))
        .zcount(key('delayed'), 0, dueMax)
        .llen(key('active'))
        .zcard(key('failed'))
        // Jobs are pushed on the left and taken from the right, so the oldest waiting one is last.
        .lindex(key('wait'), -1)
        .zrange(key('delayed'), 0, 0, 'WITHSCORES')
        // BullMQ 6 keeps a paused queue's jobs in `wait` and marks the pause in its meta hash.
        .hexists(key('meta'), 'paused')
        // The next prioritized job: the oldest one's stand-in on a Redis older than 7, which
        // cannot run a script flagged no-writes.
        .zrange(key('prioritized'), 0, 0)
        .exec(),
      // The queue's schedule (QUEUE_SCHEDULES; empty for queues without one) holds future jobs
      // as BullMQ's delayed set would: counted as delayed, and as delayed_due once their time came.
      this.readSchedule(queue, nowMs),
      OLDEST_PRIORITIZED.run(this.redis, [key('prioritized')], [MAX_PRIORITY_LEVELS]).then(
        (id) => (typeof id === 'string' ? id : null),
        () => undefined,
      ),
    ]);
    if (!queueReplies) throw new Error('queue depth pipeline returned nothing');
    const replies = queueReplies;
    const value = (i: number) => {
      const [err, result] = replies[i];
      if (err) throw err;
      return result;
    };
    const [waiting, prioritized, bullDelayed, bullDelayedDue, active, failed] = [0, 1, 2, 3, 4, 5].map((i) => Number(value(i)));
    const oldestWaitingId = value(6) as string | null;
    const firstDelayed = value(7) as string[];
    const paused = Number(value(8)) === 1;
    const nextPrioritized = (value(9) as string[])[0] ?? null;
    const delayed = bullDelayed + scheduled.count;
    const delayedDue = bullDelayedDue + scheduled.due;

    const oldestPrioritizedId = oldestPrioritized === undefined ? nextPrioritized : oldestPrioritized;
    let oldestMs = await this.waitingSinceMs(
      queue,
      [oldestWaitingId, oldestPrioritizedId].filter((id): id is string => Boolean(id)),
    );
    if (firstDelayed.length === 2) {
      // A due delayed job has been "waiting" since it fell due, not since it was added.
      const dueMs = Math.floor(Number(firstDelayed[1]) / DELAYED_SCORE_FACTOR);
      if (dueMs <= nowMs) oldestMs = Math.min(oldestMs, dueMs);
    }
    if (scheduled.firstDueMs <= nowMs) oldestMs = Math.min(oldestMs, scheduled.firstDueMs);
    return {
      jobs: { waiting, prioritized, delayed, delayed_due: delayedDue, active, failed },
      backlog: waiting + prioritized + delayedDue,
      paused,
      oldestWaitingSeconds: Number.isFinite(oldestMs) ? Math.max(0, (nowMs - oldestMs) / 1000) : 0,
    };
  }

  /** The queue's schedule over every store shard (none for a queue without one): its entries, those due, and the earliest's due time (Infinity for none). */
  private async readSchedule(queue: QueueName, nowMs: number): Promise<{ count: number; due: number; firstDueMs: number }> {
    const total = { count: 0, due: 0, firstDueMs: Infinity };
    if (!hasSchedule(queue)) return total;
    const perShard = await Promise.all(
      storeShards(this.keyPrefix).map((shard) => {
        const schedule = scheduleKey(this.keyPrefix, queue, shard);
        return this.redis.pipeline().zcard(schedule).zcount(schedule, '-inf', nowMs).zrange(schedule, 0, 0, 'WITHSCORES').exec();
      }),
    );
    for (const replies of perShard) {
      if (!replies) throw new Error('schedule depth pipeline returned nothing');
      const [[e1, count], [e2, due], [e3, first]] = replies as [Error | null, unknown][];
      if (e1 || e2 || e3) throw e1 ?? e2 ?? e3;
      total.count += Number(count);
      total.due += Number(due);
      const firstEntry = first as string[];
      if (firstEntry.length === 2) total.firstDueMs = Math.min(total.firstDueMs, Number(firstEntry[1]));
    }
    return total;
  }

  /**
   * Since when the earliest of these jobs has waited (Unix ms; Infinity for none): since it could
   * first run, i.e. added (timestamp) plus its delay, or since its previous try started (a backoff
   * retry). A promoted delayed job keeps its add time in `timestamp`, so that alone would age an
   * 8 h retry by 8 h the moment it fell due.
   */
  private async waitingSinceMs(queue: QueueName, jobIds: string[]): Promise<number> {
    if (jobIds.length === 0) return Infinity;
    const pipeline = this.redis.pipeline();
    for (const id of jobIds) pipeline.hmget(bullKey(this.keyPrefix, queue, id), 'timestamp', 'opts', 'processedOn');
    let since = Infinity;
    for (const [err, fields] of (await pipeline.exec()) ?? []) {
      if (err) throw err;
      const [timestamp, opts, processedOn] = fields as (string | null)[];
      // Removed since the first read (taken and finished): it waits no more.
      if (!timestamp) continue;
      let delay = 0;
      try {
        delay = Number((JSON.parse(opts ?? '{}') as { delay?: number }).delay ?? 0);
      } catch {
        delay = 0;
      }
      since = Math.min(since, Math.max(Number(timestamp) + delay, Number(processedOn ?? 0)));
    }
    return since;
  }
}
