import {
  coalesceWrites,
  createMetricsRegistry,
  createRedis,
  drainWithin,
  FaultInjector,
  STARTING,
  StoreReachability,
  PromCallbackMetrics,
  registerScrapedGauge,
  startOpsServer,
  warnIfCallbackChecksRelaxed,
  warnIfSecretsUnsealed,
  type AppConfig,
  type Logger,
} from '@media/common';
import { QueueConsumer, QueueDepth, registerQueueGauges } from '@media/queues';
import { registerDestinationGauges } from './destination-gauges';
import { startTracing } from '@media/tracing';
import { createCallbackService } from './wiring';

/** A started dispatcher: main.ts runs one per process and stops it on SIGTERM; the tests run it in-process too. */
export interface RunningDispatcher {
  /**
   * Stops taking callbacks and lets running attempts finish (up to SHUTDOWN_TIMEOUT_MS), then
   * closes everything; past the deadline it drops the connection instead, leaving the rest to the
   * process's exit. Same promise for every call.
   */
  stop(signal: string): Promise<void>;
}

/** The dispatcher from its configuration: the ops port, then the job-events and deliveries consumers. */
export async function startDispatcherService(config: AppConfig, logger: Logger): Promise<RunningDispatcher> {
  const tracing = await startTracing('webhook-dispatcher', config.tracing);
  warnIfCallbackChecksRelaxed(config, logger);
  warnIfSecretsUnsealed(config, logger);
  const redis = createRedis(config.redis, 'worker', logger);
  const reachability = new StoreReachability(redis, config.keyPrefix, logger);
  reachability.start();
  // Each callback makes five commands on this connection (job read, callback record, secrets,
  // attempt record, BullMQ's moveToFinished), and one write(2) each, waking Redis every time, cost
  // more than rendering and signing the callback. With 50 attempts in flight, the commands of one
  // event-loop turn share a write. (BullMQ's blocking reads use a connection of their own.)
  coalesceWrites(redis);
  const faults = FaultInjector.killing(config.faultCrashPoints, logger);
  const registry = createMetricsRegistry('webhook-dispatcher');
  // The ops port opens first: started while Redis is away, the dispatcher must still answer its
  // liveness probe (and say it is not ready) rather than be restarted in a loop until Redis returns.
  const consumers: QueueConsumer<'job-events' | 'callback-deliveries'>[] = [];
  const ops = await startOpsServer({
    port: config.opsPort,
    host: config.opsHost,
    allowedHosts: config.opsAllowedHosts,
    logger,
    registry,
    isReady: async () => (consumers.length > 0 ? reachability.check() : STARTING),
    health: () => Promise.all(consumers.map((c) => c.health())),
  });
  const { service, tests, callbacks, destinations, close } = await createCallbackService(config, redis, logger, {
    faults,
    metrics: new PromCallbackMetrics(registry),
  });
  const consumerOptions = {
    connection: redis,
    keyPrefix: config.keyPrefix,
    concurrency: config.dispatcherConcurrency,
    // A dispatcher killed mid-attempt has its jobs picked up again after about this long.
    lockDurationMs: config.jobLockMs,
    livenessBoundMs: config.workerLivenessBoundMs,
    logger,
  };

  const events = new QueueConsumer(
    'job-events',
    {
      // Attempt 1 is made by the event's own handler (one queue from the job's end to the first
      // POST); an event given up on before sends it through the deliveries queue instead.
      'job-finished': async ({ jobId, workspaceId, requeue }, job) => {
        await service.onJobFinished(jobId, requeue ? 'queued' : 'now', job.timestamp, workspaceId);
      },
    },
    { ...consumerOptions, onGaveUp: (job) => service.onEventGaveUp(job) },
  );
  // Each attempt waits on a receiver for up to WEBHOOK_TIMEOUT_MS. What keeps one slow receiver from
  // holding everyone's workers is its destination's cap (an attempt over it is set aside and holds no
  // worker); concurrency is sized for many receivers at once, as attempts cost little but waiting.
  const deliveries = new QueueConsumer(
    'callback-deliveries',
    {
      deliver: async (request, job) => {
        if (!job.id) throw new Error('delivery job without an id');
        await service.deliver(request, job.id);
      },
      'test-callback': async ({ testId }) => {
        await tests.send(testId);
      },
    },
    { ...consumerOptions, onGaveUp: (job) => service.onDeliveryGaveUp(job) },
  );

  await Promise.all([events.waitUntilReady(), deliveries.waitUntilReady()]);
  consumers.push(events, deliveries);
  registerQueueGauges(registry, new QueueDepth(redis, config.keyPrefix), ['job-events', 'callback-deliveries'], logger);
  registerDestinationGauges(registry, destinations, logger);
  registerScrapedGauge(
    registry,
    { name: 'media_callbacks', help: 'Callbacks by delivery status, over every workspace.', labelNames: ['status'] },
    async () => Object.entries(await callbacks.countByState()).map(([status, n]) => [{ status }, n]),
    logger,
  );

  let stopping: Promise<void> | undefined;
  const stop = (signal: string) =>
    // close() lets running attempts finish; past the deadline they are left to BullMQ's stall
    // recovery, which repeats them with the same webhook-id.
    (stopping ??= (async () => {
      logger.info('draining', { signal });
      if ((await drainWithin(Promise.all([events.close(), deliveries.close()]), config.shutdownTimeoutMs)) === 'deadline') {
        // A BullMQ close still waits for running attempts; drop the connection instead and let their locks lapse.
        logger.warn('drain deadline passed; running attempts are left to stall recovery');
        redis.disconnect();
        return;
      }
      await close();
      await ops.close();
      await redis.quit();
      await tracing.shutdown();
      logger.info('stopped');
    })());
  logger.info('webhook-dispatcher started', {
    concurrency: config.dispatcherConcurrency,
    timeout_ms: config.webhookTimeoutMs,
    retry_schedule_ms: config.webhookRetryScheduleMs,
  });
  return { stop };
}
