import { randomInt } from 'node:crypto';
import { PRIORITY_LIMIT, type JobsOptions } from 'bullmq';
import { type AttemptTrigger, generationJobName, isSynchronous, type JobRecord, parseScheduledAttempt, scheduledAttemptId } from '@media/domain';
import type { AppConfig } from '@media/common';

/**
 * The one job catalogue: every queue, the job names it carries and their payloads. Producers and
 * workers both type against it, so a renamed job or a missing handler fails to compile.
 * Payloads carry ids only; the records live in the store.
 */
export interface JobCatalogue {
  generation: {
    'generate-image': { jobId: string };
    'edit-image': { jobId: string };
    'generate-video': { jobId: string };
  };
  'job-events': {
    /**
     * `workspaceId`: the job's workspace, so that its webhook endpoints and relay listeners are read
     * beside the job itself rather than after it; absent from events queued before it was added.
     * `requeue`: how many times BullMQ gave up on this event before (transient trouble); absent at first.
     */
    'job-finished': { jobId: string; workspaceId?: string; requeue?: number };
  };
  'callback-deliveries': {
    /**
     * `requeue`: how many times BullMQ gave up on this attempt before (transient trouble); absent at first.
     * `deferrals`: how many times the attempt found its destination without a free slot and went on as
     * a new delayed job (see `jobIds.deferral`); absent at first.
     * `holdChecks`: how many times a manual attempt found another run of its request sending it and
     * went on as a new delayed job to look again (see `jobIds.holdCheck`); absent at first.
     */
    deliver: { messageId: string; attempt: number; trigger: AttemptTrigger; requeue?: number; deferrals?: number; holdChecks?: number };
    /** A dashboard test callback: the request (URL, workspace) and its outcome live under this id in the store. */
    'test-callback': { testId: string };
  };
  /** Housekeeping that runs on a clock (BullMQ job schedulers, see {@link JOB_SCHEDULERS}), not per request. */
  maintenance: {
    /** Removes what retention has let go: finished jobs with their media, ended callbacks with their attempts. */
    'retention-sweep': Record<string, never>;
  };
}

export type QueueName = keyof JobCatalogue;
export type JobNameOf<Q extends QueueName> = Extract<keyof JobCatalogue[Q], string>;
export type PayloadOf<Q extends QueueName, N extends JobNameOf<Q>> = JobCatalogue[Q][N];

/** Default options per queue: how many times a transient failure is retried and what is kept. */
export const QUEUE_DEFAULTS: { [Q in QueueName]: JobsOptions } = {
  generation: {
    backoff: { type: 'exponential', delay: 1_000 },
    // The job record is the truth about a finished job; a handled queue job only shows in Bull Board.
    // The latest 100 are kept for that, so the queue's keys do not grow with traffic (they did: an
    // hour of jobs, up to 10,000 of about 1 KB each).
    removeOnComplete: { count: 100 },
    removeOnFail: { age: 7 * 86_400 },
  },
  'job-events': {
    attempts: 20,
    backoff: { type: 'exponential', delay: 1_000 },
    // Only the latest few are kept, to look at in Bull Board: a handled event is not needed to
    // ignore its replay (the callback's id is derived from the job, its record says how far the
    // ladder got), and one kept per finished job cost about 1.2 KB of Redis each for a day.
    removeOnComplete: { count: 100 },
    removeOnFail: { age: 7 * 86_400 },
  },
  'callback-deliveries': {
    // An attempt whose worker died is retried by BullMQ; the ladder's future attempts wait in the
    // queue's schedule (QUEUE_SCHEDULES) until they are due.
    attempts: 10,
    backoff: { type: 'exponential', delay: 1_000 },
    removeOnComplete: true,
    removeOnFail: { age: 7 * 86_400 },
  },
  maintenance: {
    // A sweep that fails is simply the next one's work; a few quick retries cover a Redis blip.
    attempts: 3,
    backoff: { type: 'exponential', delay: 1_000 },
    removeOnComplete: { count: 10 },
    removeOnFail: { count: 100 },
  },
};

/** A job BullMQ makes on a clock: its payload, and the setting that gives its interval. */
export interface JobScheduler<Q extends QueueName, N extends JobNameOf<Q>> {
  everyMsFrom: { [K in keyof AppConfig]: AppConfig[K] extends number ? K : never }[keyof AppConfig];
  payload: PayloadOf<Q, N>;
}

/**
 * Jobs that BullMQ makes on a clock (`upsertJobScheduler`), per queue: one scheduler per job name,
 * named after it, so every replica that declares them at start-up (`JobQueue.declareSchedulers`)
 * updates the same one rather than adding its own.
 */
export const JOB_SCHEDULERS: { [Q in QueueName]?: { [N in JobNameOf<Q>]?: JobScheduler<Q, N> } } = {
  maintenance: { 'retention-sweep': { everyMsFrom: 'retentionSweepIntervalMs', payload: {} } },
};

/** A job a schedule entry stands for: the name and payload it is added with (its id is the entry). */
export interface ScheduledJob<Q extends QueueName> {
  name: JobNameOf<Q>;
  payload: PayloadOf<Q, JobNameOf<Q>>;
}

/**
 * Queues with a schedule: future jobs that wait as one sorted-set entry each (member = the job id
 * they will get, score = when they are due) instead of as BullMQ delayed jobs, and are added to
 * the queue when due by the queue's consumers (`SchedulePromoter`). A BullMQ delayed job is a
 * hash of six fields, its options among them, about 0.9 KB in Redis; an entry is about 0.1 KB. The
 * callback ladder keeps one future attempt per pending callback for up to ten hours, so at a
 * million pending callbacks that difference is the bulk of Redis's memory. Each schedule maps an
 * entry back to its job: the entry alone says what to add.
 */
export const QUEUE_SCHEDULES = {
  /** Automatic attempts 2-6 of the retry ladder; the entry is the attempt's `scheduledAttemptId` (`@media/domain`). */
  'callback-deliveries': (jobId: string): ScheduledJob<'callback-deliveries'> | undefined => {
    const scheduled = parseScheduledAttempt(jobId);
    if (!scheduled) return undefined;
    return { name: 'deliver', payload: { messageId: scheduled.messageId, attempt: scheduled.attempt, trigger: 'scheduled' } };
  },
} satisfies { [Q in QueueName]?: (jobId: string) => ScheduledJob<Q> | undefined };

export type ScheduledQueue = keyof typeof QUEUE_SCHEDULES;

export function hasSchedule(queue: QueueName): queue is ScheduledQueue {
  return Object.hasOwn(QUEUE_SCHEDULES, queue);
}

/** Every queue of the catalogue (Bull Board, the gateway's queue gauges). */
export const QUEUE_NAMES = Object.keys(QUEUE_DEFAULTS) as QueueName[];

/** The random part of a manual attempt's id: twelve decimal digits. */
const MANUAL_ID_RANDOM = 1_000_000_000_000;

/**
 * Deterministic BullMQ job ids: adding the same work twice is a no-op. '.' separates the parts
 * because BullMQ 6 rejects custom ids containing ':' (it reserves them for repeatable jobs).
 */
export const jobIds = {
  generation: (jobId: string) => jobId,
  jobFinished: (jobId: string, requeue = 0) => (requeue === 0 ? `finished.${jobId}` : `finished.${jobId}.r${requeue}`),
  /**
   * An automatic attempt's job is named as it waits in the ladder's schedule (`scheduledAttemptId`),
   * so that promoting its entry adds it under that id; a requeue after BullMQ gave up on it is a job
   * of its own.
   */
  delivery: (messageId: string, attempt: number, trigger: AttemptTrigger, requeue = 0) =>
    trigger === 'manual'
      ? // Every request its own attempt: two in the same millisecond were one job before, and the
        // second request was answered 202 for an attempt that was never its own. Twelve random
        // digits: with six, 200 requests in one millisecond shared an id one time in fifty. Digits
        // only, so that no suffix reads as a deferral's (`.d<n>`) or a hold check's (`.h<n>`).
        `${messageId}.manual.${Date.now()}${String(randomInt(MANUAL_ID_RANDOM)).padStart(12, '0')}`
      : requeue === 0
        ? scheduledAttemptId(messageId, attempt)
        : `${scheduledAttemptId(messageId, attempt)}.r${requeue}`,
  /**
   * An attempt set aside for the `n`th time because its destination had no free slot: a job of its
   * own, so that a slot handed to it can never be confused with the job that set it aside (BullMQ
   * tracks a running job's lock by its id).
   */
  deferral: (jobId: string, n: number) => `${jobIds.beforeDeferral(jobId)}.d${n}`,
  /**
   * A run of a manual request looking again, for the `n`th time, whether another run of it has sent
   * it: named after the run it continues (`<request>` or `<request>.d<k>`), so its ids never meet
   * those of the run that is sending, whose job must not be mistaken for one of these.
   */
  holdCheck: (jobId: string, n: number) => `${jobId.replace(/\.h[0-9]+$/, '')}.h${n}`,
  /** The id an attempt was queued under before any deferral or hold check (a manual attempt is recorded under it). */
  beforeDeferral: (jobId: string) => jobId.replace(/\.h[0-9]+$/, '').replace(/\.d[0-9]+$/, ''),
  /** A manual attempt of a bulk recovery: one per callback per recovery, however often the recovery is re-run. */
  recoveryDelivery: (messageId: string, recoveryId: string) => `${messageId}.recovery.${recoveryId}`,
  /** Whether a delivery job is (a deferral of) an attempt of a bulk recovery. */
  isRecoveryDelivery: (jobId: string) => /\.recovery\.[^.]+$/.test(jobIds.beforeDeferral(jobId)),
};

/**
 * Where asynchronous jobs start on the generation queue's priority scale; synchronous calls rank
 * below it. BullMQ's scale ends at {@link PRIORITY_LIMIT} (2,097,151), so each band has room for
 * ranks far beyond any workspace's waiting-jobs cap.
 */
export const ASYNC_PRIORITY_BAND = 1_000_000;

/**
 * The BullMQ priority of a generation job: fair scheduling across workspaces, the same on every
 * replica because the rank comes from Redis.
 *
 * One FIFO let a workspace that queued hundreds of jobs hold every other workspace's job behind
 * all of them. BullMQ takes the lowest priority number first (FIFO among equals), so a job's
 * priority is its `rank`, its place among its workspace's unfinished jobs when it was accepted
 * (1 = the workspace had nothing else unfinished): every workspace's first job runs before
 * anyone's second. A job of rank r waits for the jobs already running and for those of rank r or
 * lower queued before it (about one per other busy workspace per rank), never for another
 * workspace's whole backlog.
 *
 * Synchronous calls hold a client connection, so they get a band of their own below every
 * asynchronous job: they never wait behind an asynchronous backlog, only for a free slot. They are
 * ranked too, rather than put on BullMQ's plain wait list (priority 0, taken before any
 * prioritized job), where one workspace's flood of synchronous calls would be a single FIFO again.
 *
 * The rank is fixed when the job is queued: it does not improve as the workspace's earlier jobs
 * finish, so under sustained load a job accepted deep in a backlog can be overtaken by jobs
 * accepted later at a lower rank, its own workspace's included.
 */
export function generationPriority({ synchronous, rank }: { synchronous: boolean; rank: number }): number {
  const place = Math.max(1, Math.floor(rank) || 1);
  return synchronous ? Math.min(place, ASYNC_PRIORITY_BAND) : Math.min(ASYNC_PRIORITY_BAND + place, PRIORITY_LIMIT);
}

/**
 * How a job record goes on the `generation` queue: one mapping for the gateway and the intake
 * repair. `rank` is the job's place among its workspace's unfinished jobs (see `generationPriority`);
 * the id is the job's own, so queueing a job that is queued already is a no-op.
 */
export function generationQueueEntry(job: JobRecord, rank: number) {
  return {
    name: generationJobName(job),
    payload: { jobId: job.id },
    opts: { jobId: jobIds.generation(job.id), priority: generationPriority({ synchronous: isSynchronous(job), rank }) },
  };
}
