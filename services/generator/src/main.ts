import type { Job } from 'bullmq';
import { createLogger, createRedis, JobQueue, loadConfig, startWorker } from '@media/common';
import { FileBlobStore, JobRepository, StoreKeys } from '@media/storage';
import { GenerationService } from './generation-service';
import { defaultFfmpegPath, ImageRenderer, VideoEncoder } from './media';
import { ModerationPolicy } from './moderation';

const FAILED_SWEEP_MS = 60_000;
const FAILED_SWEEP_BATCH = 100;

async function main(): Promise<void> {
  const config = loadConfig();
  const logger = createLogger('generator', config.logLevel);
  const redis = createRedis(config.redisUrl, 'worker');
  const keys = new StoreKeys(config.keyPrefix);
  const events = new JobQueue('job-events', redis, config.keyPrefix);
  const service = new GenerationService({
    jobs: new JobRepository(redis, keys),
    blobs: new FileBlobStore(config.mediaDir),
    events,
    images: new ImageRenderer(),
    videos: new VideoEncoder({ ffmpegPath: config.ffmpegPath ?? defaultFfmpegPath(), timeoutMs: config.generationTimeoutMs }),
    moderation: new ModerationPolicy(config.moderationBlocklist),
    logger,
    timeoutMs: config.generationTimeoutMs,
  });

  const run = async (payload: { jobId: string }, job: Job) =>
    service.run(payload.jobId, {
      isLast: job.attemptsMade + 1 >= (job.opts.attempts ?? 1),
      reportProgress: (percent) => job.updateProgress(percent),
    });
  const worker = startWorker(
    'generation',
    { 'generate-image': run, 'edit-image': run, 'generate-video': run },
    { connection: redis, keyPrefix: config.keyPrefix, concurrency: config.generatorConcurrency, lockDurationMs: config.jobLockMs },
  );
  worker.on('failed', (job, err) => {
    // Retries or stall recoveries exhausted: the job must still end, as `failed`.
    if (!job) return;
    void job.getState().then(async (state) => {
      if (state === 'failed') await service.giveUp(job.data.jobId, err.message);
    }).catch((e) => logger.error('could not record given-up job', { job_id: job.data.jobId, error: String(e) }));
  });
  worker.on('error', (err) => logger.error('worker error', { error: String(err) }));

  // The 'failed' listener runs once; if Redis or this process failed at that moment, the job would
  // stay in progress for ever. Sweeping the failed set now and then makes good any such loss.
  const generation = new JobQueue('generation', redis, config.keyPrefix);
  const sweepFailed = async () => {
    for (const { jobId } of await generation.failedPayloads(FAILED_SWEEP_BATCH)) await service.giveUp(jobId, 'found in the failed set');
  };
  const sweeper = setInterval(() => void sweepFailed().catch((e) => logger.warn('failed-job sweep', { error: String(e) })), FAILED_SWEEP_MS);
  void sweepFailed().catch((e) => logger.warn('failed-job sweep', { error: String(e) }));

  let stopping: Promise<void> | undefined;
  const shutdown = (signal: string) => {
    // close() waits for running jobs; past the deadline they are left to BullMQ's stall recovery.
    stopping ??= (async () => {
      logger.info('draining', { signal });
      clearInterval(sweeper);
      const deadline = new Promise<'timeout'>((r) => setTimeout(() => r('timeout'), config.shutdownTimeoutMs).unref());
      if ((await Promise.race([worker.close(), deadline])) === 'timeout') {
        // BullMQ's forced close still waits for running processors, so stop the encoders here;
        // their jobs keep their lock until it lapses, then another generator takes them over.
        logger.warn('drain deadline passed; running jobs are left to stall recovery');
        service.abortAll();
        redis.disconnect();
        process.exit(0);
      }
      await events.close();
      await generation.close();
      await redis.quit();
      logger.info('stopped');
      process.exit(0);
    })();
  };
  process.on('SIGTERM', () => shutdown('SIGTERM'));
  process.on('SIGINT', () => shutdown('SIGINT'));
  logger.info('generator started', { concurrency: config.generatorConcurrency });
}

main().catch((err) => {
  console.error(err instanceof Error ? err.message : err);
  process.exit(1);
});
