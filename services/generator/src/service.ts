import {
  checkScratchDir,
  removeScratchDir,
  createMetricsRegistry,
  coalesceWrites,
  createRedis,
  drainWithin,
  every,
  FaultInjector,
  StoreReachability,
  PromGenerationMetrics,
  PromRetentionMetrics,
  registerScrapedGauge,
  replicaWaitShortCounter,
  startOpsServer,
  type AppConfig,
  type Logger,
} from '@media/common';
import { JobQueue, QueueConsumer, QueueDepth, registerQueueGauges } from '@media/queues';
import { checkBlobStoreWritable, createBlobStore } from '@media/blob-store';
import { CallbackRepository } from '@media/callbacks';
import { JobRepository } from '@media/jobs';
import { ReplicaWait, StoreKeys } from '@media/storage';
import { MediaRetention } from '@media/retention';
import { createGeneratorBackend } from './backends';
import { createGenerationConsumer } from './generation-consumer';
import { GenerationService } from './generation-service';
import { IntakeRepair } from './intake-repair';
import { startTracing } from '@media/tracing';
import { ModerationPolicy } from './moderation';

const INTAKE_REPAIR_INTERVAL_MS = 5_000;

/** A started generator: main.ts runs one per process and stops it on SIGTERM; the tests run it in-process too. */
export interface RunningGenerator {
  /**
   * Stops taking jobs and waits for the running ones (up to SHUTDOWN_TIMEOUT_MS), then closes
   * everything; past the deadline it aborts the encoders and drops the connection instead, leaving
   * the rest to the process's exit. Same promise for every call.
   */
  stop(signal: string): Promise<void>;
}

/** The generator from its configuration: consumers, retention, intake repair and the ops port. */
export async function startGeneratorService(config: AppConfig, logger: Logger): Promise<RunningGenerator> {
  // A directory it must write but cannot ends the process here, before it reports ready, rather than
  // failing every upload or video later (main.ts prints the error's one line).
  await checkScratchDir();
  await checkBlobStoreWritable(config.blobStore);
  const tracing = await startTracing('generator', config.tracing);
  const redis = createRedis(config.redis, 'worker', logger);
  const reachability = new StoreReachability(redis, config.keyPrefix, logger);
  reachability.start();
  // Each finished job makes several commands on this connection (BullMQ's moveToFinished, the
  // job-events add, the finish): with many jobs in flight, the commands of one event-loop turn share
  // a write(2), so Redis wakes once for them rather than once per command.
  coalesceWrites(redis);
  const keys = new StoreKeys(config.keyPrefix);
  const registry = createMetricsRegistry('generator');
  const replicaWaitShort = replicaWaitShortCounter(registry);
  const jobs = new JobRepository(redis, keys, new ReplicaWait(config.redisWaitReplicas, config.redisWaitTimeoutMs, () => replicaWaitShort.inc()));
  const events = new JobQueue('job-events', redis, config.keyPrefix, logger);
  // Jobs the intake repair queues get the same retries as the gateway's.
  const generation = new JobQueue('generation', redis, config.keyPrefix, logger, { attempts: config.generationAttempts });
  const faults = FaultInjector.killing(config.faultCrashPoints, logger);
  const blobs = await createBlobStore(config.blobStore);
  const service = new GenerationService({
    jobs,
    blobs,
    events,
    backend: await createGeneratorBackend(config, logger),
    backendName: config.generatorBackend.kind,
    moderation: new ModerationPolicy(config.moderationBlocklist),
    logger,
    timeoutMs: config.generationTimeoutMs,
    retentionMs: config.mediaRetentionSeconds * 1_000,
    faults,
    metrics: new PromGenerationMetrics(registry),
  });

  const consumer = createGenerationConsumer(service, {
    connection: redis,
    keyPrefix: config.keyPrefix,
    concurrency: config.generatorConcurrency,
    lockDurationMs: config.jobLockMs,
    livenessBoundMs: config.workerLivenessBoundMs,
    logger,
  });
  // Retention runs here, beside the media it removes: a BullMQ job scheduler on the maintenance
  // queue makes one sweep per interval, whichever generator replica takes it.
  const retention = new MediaRetention({
    jobs,
    callbacks: new CallbackRepository(redis, keys),
    blobs,
    logger,
    callbackRetentionMs: config.callbackRetentionSeconds * 1_000,
    linkTtlMs: config.linkTtlSeconds * 1_000,
    metrics: new PromRetentionMetrics(registry),
  });
  registerScrapedGauge(
    registry,
    {
      name: 'media_retention_due',
      help: 'Finished jobs and ended callbacks due for removal and not yet removed (held jobs are not due).',
      labelNames: ['kind'],
    },
    async () => {
      const due = await retention.due();
      return [
        [{ kind: 'job' }, due.jobs],
        [{ kind: 'callback' }, due.callbacks],
      ];
    },
    logger,
  );
  const maintenance = new JobQueue('maintenance', redis, config.keyPrefix, logger);
  const housekeeping = new QueueConsumer(
    'maintenance',
    {
      'retention-sweep': async () => {
        // Half an interval at most: a backlog drains over several sweeps instead of piling them up.
        await retention.sweep(Math.max(1_000, config.retentionSweepIntervalMs / 2));
      },
    },
    { connection: redis, keyPrefix: config.keyPrefix, concurrency: 1, lockDurationMs: config.jobLockMs, livenessBoundMs: config.workerLivenessBoundMs, logger },
  );
  registerQueueGauges(registry, new QueueDepth(redis, config.keyPrefix), ['generation', 'maintenance'], logger);
  const ops = await startOpsServer({
    port: config.opsPort,
    host: config.opsHost,
    allowedHosts: config.opsAllowedHosts,
    logger,
    registry,
    isReady: () => reachability.check(),
    health: async () => Promise.all([consumer.health(), housekeeping.health()]),
  });
  const repair = new IntakeRepair(jobs, generation, logger);
  const repairs = every(
    INTAKE_REPAIR_INTERVAL_MS,
    () => repair.run(),
    (e) => logger.warn('intake repair interrupted', { error: String(e) }),
  );

  // A clean stop leaves nothing for the next start's sweep, which is for processes that were killed.
  const removeScratch = () => removeScratchDir().catch((err: unknown) => logger.warn('scratch directory not removed', { error: String(err) }));
  let stopping: Promise<void> | undefined;
  const stop = (signal: string) =>
    // close() waits for running jobs; past the deadline they are left to BullMQ's stall recovery.
    (stopping ??= (async () => {
      logger.info('draining', { signal });
      repairs.stop();
      retention.stop();
      if ((await drainWithin(Promise.all([consumer.close(), housekeeping.close()]), config.shutdownTimeoutMs)) === 'deadline') {
        // BullMQ's close still waits for running processors, so stop the encoders here; their jobs
        // keep their lock until it lapses, then another generator takes them over.
        logger.warn('drain deadline passed; running jobs are left to stall recovery');
        service.abortAll();
        redis.disconnect();
        // The abandoned jobs' frames and encodes: another generator starts them over in its own.
        await removeScratch();
        return;
      }
      await Promise.all([events.close(), generation.close(), maintenance.close(), ops.close(), blobs.close()]);
      await redis.quit();
      await tracing.shutdown();
      await removeScratch();
      logger.info('stopped');
    })());
  // Not awaited: a generator starts, and answers its probes, while Redis is away; the declaration
  // waits in the connection's queue until Redis answers.
  maintenance.declareSchedulers(config).catch((err: unknown) => logger.error('could not declare the retention sweep', { error: String(err) }));
  const backend = config.generatorBackend;
  logger.info('generator started', {
    concurrency: config.generatorConcurrency,
    backend: backend.kind,
    ...(backend.kind === 'openai-compatible' ? { upstream: backend.baseUrl, models: Object.fromEntries(backend.modelMap) } : {}),
  });
  return { stop };
}
