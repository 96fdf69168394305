/**
 * `@media/queues`: the typed job catalogue (catalogue.ts: every queue, job name and payload, and
 * the ids that make a job queued once) and the BullMQ wrappers every service uses: the producer and
 * consumer (queue.ts), queue depth and its gauges (depth.ts, gauges.ts), and the promoter that moves
 * due entries of a queue's schedule into it (schedule.ts).
 *
 * @packageDocumentation
 */
export {
  ASYNC_PRIORITY_BAND,
  generationPriority,
  generationQueueEntry,
  hasSchedule,
  JOB_SCHEDULERS,
  jobIds,
  QUEUE_DEFAULTS,
  QUEUE_NAMES,
  QUEUE_SCHEDULES,
  type JobCatalogue,
  type JobNameOf,
  type JobScheduler,
  type PayloadOf,
  type QueueName,
  type ScheduledJob,
  type ScheduledQueue,
} from './catalogue';
export { JobQueue, QueueConsumer, type ConsumerHealth, type ConsumerOptions, type GaveUpJob, type Handlers } from './queue';
export { QUEUE_STATES, QueueDepth, type QueueDepthReading, type QueueState } from './depth';
export { SchedulePromoter, type ScheduleTarget } from './schedule';
export { registerQueueGauges } from './gauges';
