import { createLogger, createRedis, loadConfig, startWorker, warnIfCallbackChecksRelaxed } from '@media/common';
import { createCallbackService } from './wiring';

async function main(): Promise<void> {
  const config = loadConfig();
  const logger = createLogger('webhook-dispatcher', config.logLevel);
  warnIfCallbackChecksRelaxed(config, logger);
  const redis = createRedis(config.redisUrl, 'worker');
  const { service, close } = await createCallbackService(config, redis, logger);
  const workerOptions = {
    connection: redis,
    keyPrefix: config.keyPrefix,
    concurrency: config.dispatcherConcurrency,
    // A dispatcher killed mid-attempt has its jobs picked up again after about this long.
    lockDurationMs: config.jobLockMs,
  };

  const events = startWorker(
    'job-events',
    {
      'job-finished': async ({ jobId }) => {
        await service.onJobFinished(jobId);
      },
    },
    workerOptions,
  );
  // Each attempt waits on a receiver for up to WEBHOOK_TIMEOUT_MS, so concurrency is what keeps one
  // slow receiver from holding up everyone else's callbacks.
  const deliveries = startWorker(
    'callback-deliveries',
    {
      deliver: async (request, job) => {
        if (!job.id) throw new Error('delivery job without an id');
        await service.deliver(request, job.id);
      },
    },
    workerOptions,
  );

  deliveries.on('failed', (job, err) => {
    // Transient errors exhausted BullMQ's retries, or the callback is undeliverable: an automatic
    // delivery must still end, as `failed`. A manual attempt leaves the callback as it was.
    if (!job) return;
    logger.error('delivery job failed', { message_id: job.data.messageId, trigger: job.data.trigger, error: err.message });
    if (job.data.trigger !== 'scheduled') return;
    void job
      .getState()
      .then(async (state) => {
        if (state === 'failed') await service.giveUp(job.data.messageId, err.message);
      })
      .catch((e) => logger.error('could not record given-up callback', { message_id: job.data.messageId, error: String(e) }));
  });
  events.on('failed', (job, err) => logger.error('job-finished event failed', { job_id: job?.data.jobId, error: err.message }));
  events.on('error', (err) => logger.error('worker error', { queue: 'job-events', error: String(err) }));
  deliveries.on('error', (err) => logger.error('worker error', { queue: 'callback-deliveries', error: String(err) }));

  await Promise.all([events.waitUntilReady(), deliveries.waitUntilReady()]);

  let stopping: Promise<void> | undefined;
  const shutdown = (signal: string) => {
    // close() lets running attempts finish; past the deadline they are left to BullMQ's stall
    // recovery, which repeats them with the same webhook-id.
    stopping ??= (async () => {
      logger.info('draining', { signal });
      const deadline = new Promise<'timeout'>((r) => setTimeout(() => r('timeout'), config.shutdownTimeoutMs).unref());
      const closed = Promise.all([events.close(), deliveries.close()]);
      if ((await Promise.race([closed, deadline])) === 'timeout') {
        // A forced BullMQ close still waits for running attempts; exit instead and let their locks lapse.
        logger.warn('drain deadline passed; running attempts are left to stall recovery');
        redis.disconnect();
        process.exit(0);
      }
      await close();
      await redis.quit();
      logger.info('stopped');
      process.exit(0);
    })();
  };
  process.on('SIGTERM', () => shutdown('SIGTERM'));
  process.on('SIGINT', () => shutdown('SIGINT'));
  logger.info('webhook-dispatcher started', {
    concurrency: config.dispatcherConcurrency,
    timeout_ms: config.webhookTimeoutMs,
    retry_schedule_ms: config.webhookRetryScheduleMs,
  });
}

main().catch((err) => {
  console.error(err instanceof Error ? err.message : err);
  process.exit(1);
});
