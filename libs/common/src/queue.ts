import { Job, Queue, Worker, type JobsOptions } from 'bullmq';
import type { Redis } from 'ioredis';
import { QUEUE_DEFAULTS, type JobNameOf, type PayloadOf, type QueueName } from './queues';

/** BullMQ keys live under the deployment's key prefix, beside the store's own keys. */
export const bullPrefix = (keyPrefix: string) => `${keyPrefix}:bull`;

/** A producer for one queue of the catalogue. */
export class JobQueue<Q extends QueueName> {
  private readonly queue: Queue;

  constructor(readonly name: Q, connection: Redis, keyPrefix: string, overrides: JobsOptions = {}) {
    this.queue = new Queue(name, {
      connection,
      prefix: bullPrefix(keyPrefix),
      defaultJobOptions: { ...QUEUE_DEFAULTS[name], ...overrides },
    });
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

  /** Payloads of the newest jobs in the failed set (BullMQ gave up on them). */
  async failedPayloads(limit: number): Promise<PayloadOf<Q, JobNameOf<Q>>[]> {
    const jobs = await this.queue.getFailed(0, limit - 1);
    return jobs.filter((job) => job !== undefined).map((job) => job.data as PayloadOf<Q, JobNameOf<Q>>);
  }

  async close(): Promise<void> {
    await this.queue.close();
  }
}

/** One handler per job name of a queue: a job name without a handler fails to compile. */
export type Handlers<Q extends QueueName> = {
  [N in JobNameOf<Q>]: (payload: PayloadOf<Q, N>, job: Job) => Promise<void>;
};

export interface WorkerOptions {
  connection: Redis;
  keyPrefix: string;
  concurrency: number;
  lockDurationMs?: number;
  maxStalledCount?: number;
}

/** Starts a BullMQ worker that routes each job to the handler for its name. */
export function startWorker<Q extends QueueName>(name: Q, handlers: Handlers<Q>, opts: WorkerOptions): Worker {
  return new Worker(
    name,
    async (job: Job) => {
      const handler = handlers[job.name as JobNameOf<Q>] as ((p: unknown, j: Job) => Promise<void>) | undefined;
      if (!handler) throw new Error(`no handler for job "${job.name}" on queue "${name}"`);
      await handler(job.data, job);
    },
    {
      connection: opts.connection,
      prefix: bullPrefix(opts.keyPrefix),
      concurrency: opts.concurrency,
      lockDuration: opts.lockDurationMs ?? 30_000,
      stalledInterval: Math.max(1_000, Math.floor((opts.lockDurationMs ?? 30_000) / 2)),
      maxStalledCount: opts.maxStalledCount ?? 5,
    },
  );
}
