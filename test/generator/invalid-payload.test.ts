// A generation job that names no job of the store (what Bull Board's "add job" makes of an empty form,
// a payload without a job id, an id of no job) fails once, as a permanent failure, and its give-up is
// recorded without error: the sweep of the failed set never meets it as a job it must skip and read
// again. In-process: the generator's own consumer and service on the real `generation` queue of a
// real Redis, under a key prefix of the test's own.
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { createBlobStore, type BlobStore } from '@media/blob-store';
import { bullPrefix, loadConfig } from '@media/common';
import { JobQueue, type QueueConsumer } from '@media/queues';
import { JobRepository } from '@media/jobs';
import { createGeneratorBackend } from '../../services/generator/src/backends';
import { createGenerationConsumer } from '../../services/generator/src/generation-consumer';
import { GenerationService } from '../../services/generator/src/generation-service';
import { ModerationPolicy } from '../../services/generator/src/moderation';
import { capturingLogger } from '../support/log-capture';
import { deleteKeysUnder, eventually, REDIS_URL } from '../support/stack';
import { allKeys } from '../support/store-keys';

const prefix = `invalid-payload-${randomBytes(6).toString('hex')}`;
const log = capturingLogger('generator');
let redis: Redis;
let dir: string;
let blobs: BlobStore;
let events: JobQueue<'job-events'>;
let consumer: QueueConsumer<'generation'>;
let generation: Queue;
let eventsView: Queue;

beforeAll(async () => {
  redis = new Redis(REDIS_URL, { maxRetriesPerRequest: null });
  dir = await mkdtemp(join(tmpdir(), 'invalid-payload-'));
  blobs = await createBlobStore({ kind: 'fs', dir });
  events = new JobQueue('job-events', redis, prefix, log.logger);
  const config = loadConfig({ KEY_PREFIX: prefix });
  const service = new GenerationService({
    jobs: new JobRepository(redis, allKeys(prefix)),
    blobs,
    events,
    backend: await createGeneratorBackend(config, log.logger),
    moderation: new ModerationPolicy([]),
    logger: log.logger,
    timeoutMs: config.generationTimeoutMs,
    retentionMs: config.mediaRetentionSeconds * 1_000,
  });
  consumer = createGenerationConsumer(service, { connection: redis, keyPrefix: prefix, concurrency: 2, lockDurationMs: 5_000, logger: log.logger });
  await consumer.waitUntilReady();
  generation = new Queue('generation', { connection: redis, prefix: bullPrefix(prefix, 'generation') });
  eventsView = new Queue('job-events', { connection: redis, prefix: bullPrefix(prefix, 'job-events') });
});

afterAll(async () => {
  await consumer?.close();
  await events?.close();
  await generation?.close();
  await eventsView?.close();
  await blobs?.close();
  if (redis) await deleteKeysUnder(redis, prefix);
  await redis?.quit();
  if (dir) await rm(dir, { recursive: true, force: true });
});

/** Each job as someone other than the gateway might add it, and the permanent failure it must end in. */
const JOBS = [
  // Bull Board's add with a cross-site text/plain form: no name, empty data.
  { id: 'board-empty', name: '', data: {}, code: 'unknown_job' },
  { id: 'no-job-id', name: 'generate-image', data: {}, code: 'invalid_payload' },
  { id: 'id-not-text', name: 'generate-video', data: { jobId: 42 }, code: 'invalid_payload' },
  { id: 'no-such-job', name: 'edit-image', data: { jobId: 'img_doesnotexist0000000000' }, code: 'no_record' },
];

it('fails each job once as a permanent failure, announces nothing, and the give-up sweep records them all, again and again, without skipping one', async () => {
  // Retries allowed, and quick: a transient failure would show as more than one attempt.
  for (const job of JOBS) await generation.add(job.name, job.data, { jobId: job.id, attempts: 3, backoff: { type: 'fixed', delay: 50 } });

  const states = await eventually(
    async () => {
      const all = await Promise.all(JOBS.map((job) => generation.getJobState(job.id)));
      return all.every((state) => state === 'failed' || state === 'completed') ? all : undefined;
    },
    15_000,
    'every job to finish in BullMQ',
  );
  expect(states).toEqual(JOBS.map(() => 'failed'));
  for (const job of JOBS) {
    const failed = (await generation.getJob(job.id))!;
    expect([job.id, failed.attemptsMade, failed.failedReason]).toEqual([job.id, 1, expect.stringMatching(new RegExp(`^\\[${job.code}\\] `))]);
  }
  expect(await generation.getFailedCount()).toBe(JOBS.length);

  // The sweep reads back over the recent failed set on every turn (every 20 s with a 10 s lock):
  // each of these is handed to the give-up and recorded, none skipped to be read again.
  expect(await consumer.sweep()).toBe(JOBS.length);
  expect(await consumer.sweep()).toBe(JOBS.length);
  expect(log.lines.filter((l) => l.message === 'give-up sweep skipped a job' || l.message === 'could not record a give-up; the sweep will')).toEqual([]);

  // Nothing ran them again, and no job-finished event went out for a job that does not exist.
  expect(await generation.getJobCounts('wait', 'prioritized', 'delayed', 'active')).toEqual({ wait: 0, prioritized: 0, delayed: 0, active: 0 });
  for (const job of JOBS) expect((await generation.getJob(job.id))!.attemptsMade).toBe(1);
  expect(await eventsView.getJobCountByTypes('wait', 'prioritized', 'delayed', 'active', 'completed', 'failed')).toBe(0);

  // One line for each, when it failed: an operator sees what was dropped, once. It names the BullMQ
  // job, or the job id its payload names.
  for (const job of JOBS) {
    const names = (l: Record<string, unknown>) => l.job === job.id || ('jobId' in job.data && l.job_id === job.data.jobId);
    expect([job.id, log.lines.filter((l) => l.level === 'warn' && l.code === job.code && names(l)).length]).toEqual([job.id, 1]);
  }
});
