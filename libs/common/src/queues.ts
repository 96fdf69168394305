import type { JobsOptions } from 'bullmq';

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
    /** `requeue`: how many times BullMQ gave up on this event before (transient trouble); absent at first. */
    'job-finished': { jobId: string; requeue?: number };
  };
  'callback-deliveries': {
    /** `requeue`: how many times BullMQ gave up on this attempt before (transient trouble); absent at first. */
    deliver: { messageId: string; attempt: number; trigger: AttemptTrigger; requeue?: number };
    /** A dashboard test callback: the request (URL, workspace) and its outcome live under this id in the store. */
    'test-callback': { testId: string };
  };
}

export type AttemptTrigger = 'scheduled' | 'manual';
export type QueueName = keyof JobCatalogue;
export type JobNameOf<Q extends QueueName> = Extract<keyof JobCatalogue[Q], string>;
export type PayloadOf<Q extends QueueName, N extends JobNameOf<Q>> = JobCatalogue[Q][N];

/** Default options per queue: how many times a transient failure is retried and what is kept. */
export const QUEUE_DEFAULTS: { [Q in QueueName]: JobsOptions } = {
  generation: {
    backoff: { type: 'exponential', delay: 1_000 },
    removeOnComplete: { age: 3_600, count: 10_000 },
    removeOnFail: { age: 7 * 86_400 },
  },
  'job-events': {
    attempts: 20,
    backoff: { type: 'exponential', delay: 1_000 },
    // Kept a day so that a replayed event with the same job id is ignored by BullMQ.
    removeOnComplete: { age: 86_400 },
    removeOnFail: { age: 7 * 86_400 },
  },
  'callback-deliveries': {
    // An attempt whose worker died is retried by BullMQ; the ladder itself is our own delayed jobs.
    attempts: 10,
    backoff: { type: 'exponential', delay: 1_000 },
    removeOnComplete: true,
    removeOnFail: { age: 7 * 86_400 },
  },
};

/** Every queue of the catalogue (Bull Board, the gateway's queue gauges). */
export const QUEUE_NAMES = Object.keys(QUEUE_DEFAULTS) as QueueName[];

/**
 * Deterministic BullMQ job ids: adding the same work twice is a no-op. '.' separates the parts
 * because BullMQ 6 rejects custom ids containing ':' (it reserves them for repeatable jobs).
 */
export const jobIds = {
  generation: (jobId: string) => jobId,
  jobFinished: (jobId: string, requeue = 0) => (requeue === 0 ? `finished.${jobId}` : `finished.${jobId}.r${requeue}`),
  delivery: (messageId: string, attempt: number, trigger: AttemptTrigger, requeue = 0) =>
    trigger === 'manual'
      ? `${messageId}.manual.${Date.now()}`
      : requeue === 0
        ? `${messageId}.${attempt}`
        : `${messageId}.${attempt}.r${requeue}`,
  /** A manual attempt of a bulk recovery: one per callback per recovery, however often the recovery is re-run. */
  recoveryDelivery: (messageId: string, recoveryId: string) => `${messageId}.recovery.${recoveryId}`,
};
