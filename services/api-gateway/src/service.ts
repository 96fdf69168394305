import type { RequestListener } from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  checkScratchDir,
  removeScratchDir,
  createMetricsRegistry,
  createRedis,
  drainWithin,
  FaultInjector,
  DRAINING,
  STARTING,
  StoreReachability,
  PromHttpMetrics,
  replicaWaitShortCounter,
  startOpsServer,
  warnIfCallbackChecksRelaxed,
  warnIfSecretsUnsealed,
  type AppConfig,
  type Logger,
} from '@media/common';
import { QUEUE_NAMES, QueueDepth, registerQueueGauges } from '@media/queues';
import { checkBlobStoreWritable } from '@media/blob-store';
import { ReplicaWait } from '@media/storage';
import { startTracing } from '@media/tracing';
import { createStartingApp } from './app';
import { createApiServer, refuseUpgrade } from './http/api-server';
import { ApiError } from './http/api-error';
import { guardConnections } from './http/connection-guard';
import { isDependencyOutage } from './http/outage';
import { measureRequests } from './http/request-metrics';
import { mountOperatorBoard } from './operator-board';
import { createGateway, openApiRoute, type GatewayHandle } from './wiring';

/** How long listening waits for the first connection to Redis. */
const START_GRACE_MS = 2_000;
/** Back-off between start-up attempts while Redis cannot be reached. */
const START_RETRY_FIRST_MS = 250;
const START_RETRY_MAX_MS = 5_000;
/** How long closing the Redis side may take at shutdown; a Redis that is away must not hold the exit. */
const CLOSE_TIMEOUT_MS = 5_000;

/** A started gateway: main.ts runs one per process and stops it on SIGTERM; the tests run it in-process too. */
export interface RunningGateway {
  /** Stops accepting, lets in-flight requests finish, then closes everything; resolves once done (same promise for every call). */
  stop(signal: string): Promise<void>;
}

export interface GatewayServiceHooks {
  /** Start-up failed after listening (anything but Redis being away); the failure is logged first. */
  onStartFailed(err: unknown): void;
}

/**
 * The gateway from its configuration: the ops port, the public listener (answering 503 until Redis
 * answers) and the full app once connected. Resolves once the listener is asked to listen.
 */
export async function startGatewayService(config: AppConfig, logger: Logger, hooks: GatewayServiceHooks): Promise<RunningGateway> {
  // A directory it must write but cannot ends the process here, before it reports ready, rather than
  // failing every upload or video later (main.ts prints the error's one line).
  await checkScratchDir();
  await checkBlobStoreWritable(config.blobStore);
  const tracing = await startTracing('api-gateway', config.tracing);
  warnIfCallbackChecksRelaxed(config, logger);
  warnIfSecretsUnsealed(config, logger);
  const redis = createRedis(config.redis, 'request', logger);
  const faults = FaultInjector.killing(config.faultCrashPoints, logger);
  // Served by the starting app and the full one alike: built once.
  const openApi = openApiRoute(config);
  let gateway: GatewayHandle | undefined;

  // Ops port: metrics and Bull Board never share the public listener. The gateway always runs, so
  // it exports every queue's gauges: a scaler still sees the backlog of a worker scaled to zero.
  const registry = createMetricsRegistry('api-gateway');
  registerQueueGauges(registry, new QueueDepth(redis, config.keyPrefix), QUEUE_NAMES, logger);
  const replicaWaitShort = replicaWaitShortCounter(registry);
  const replicaWait = new ReplicaWait(config.redisWaitReplicas, config.redisWaitTimeoutMs, () => replicaWaitShort.inc());
  let connected = false;
  let stopping: Promise<void> | undefined;
  const reachability = new StoreReachability(redis, config.keyPrefix, logger);
  reachability.start();
  let closeBoard: (() => Promise<void>) | undefined;
  const ops = await startOpsServer({
    port: config.opsPort,
    host: config.opsHost,
    allowedHosts: config.opsAllowedHosts,
    logger,
    registry,
    // Not ready once draining: the endpoints drop the pod while its last requests finish.
    isReady: async () => (stopping ? DRAINING : !connected ? STARTING : reachability.check()),
    mount: (app) => {
      const password = config.operatorPassword;
      if (password)
        closeBoard = mountOperatorBoard(app, {
          connection: redis,
          keyPrefix: config.keyPrefix,
          credentials: { username: config.operatorUsername, password },
          logger,
        });
    },
  });

  let handler: RequestListener = createStartingApp(logger, openApi, { publicHttps: config.publicBaseUrl.startsWith('https:'), trustProxy: config.trustProxy });
  const server = createApiServer(
    measureRequests(new PromHttpMetrics(registry), (req, res) => handler(req, res)),
    logger,
  );
  // WebSocket upgrades (the relay's listeners) once the gateway is up; refused with a 503 before.
  server.on('upgrade', (req, socket, head) => {
    if (gateway && !stopping) gateway.upgrade(req, socket, head);
    else refuseUpgrade(socket, ApiError.unavailable(), logger, stopping ? 'draining' : 'starting');
  });
  guardConnections(
    server,
    {
      maxConnections: config.httpMaxConnections,
      maxConnectionsPerAddress: config.httpMaxConnectionsPerAddress,
      headersTimeoutMs: config.httpHeadersTimeoutMs,
      trustProxy: config.trustProxy,
    },
    logger,
  );

  // A gateway started before Redis keeps trying, answering 503 meanwhile, instead of exiting; any
  // other start-up failure is a bug or a misconfiguration, and ends the process (hooks.onStartFailed).
  const connecting = (async () => {
    for (let delay = START_RETRY_FIRST_MS; !stopping; delay = Math.min(delay * 2, START_RETRY_MAX_MS)) {
      try {
        gateway = await createGateway(config, redis, logger, { faults, openApi, replicaWait });
        handler = gateway.app;
        connected = true;
        return;
      } catch (err) {
        if (!isDependencyOutage(err)) throw err;
      }
      await sleep(delay);
    }
  })();
  // Listening waits for Redis a little, so that the first calls to a gateway started beside a
  // running Redis are not 503s, but not for long: an unreachable host takes ioredis a while to give up on.
  const ready = await Promise.race([connecting.then(() => true), sleep(START_GRACE_MS).then(() => false)]);
  server.listen(config.port, () => logger.info('api-gateway listening', { port: config.port, ready }));
  if (!ready) logger.warn('redis unreachable; answering 503 until it answers');
  connecting.then(
    () => {
      if (!ready && !stopping) logger.info('api-gateway ready');
    },
    (err: unknown) => {
      logger.error('start-up failed', { error: err instanceof Error ? err.stack : String(err) });
      hooks.onStartFailed(err);
    },
  );

  return {
    // Stop accepting, let in-flight requests (including waiting sync image calls) finish, then close.
    stop: (signal) =>
      (stopping ??= (async () => {
        logger.info('draining', { signal });
        const closed = new Promise<void>((resolve) => server.close(() => resolve()));
        server.closeIdleConnections();
        await drainWithin(closed, config.shutdownTimeoutMs);
        const released = (async () => {
          await gateway?.close();
          await closeBoard?.();
          await ops.close();
          await redis.quit();
          await tracing.shutdown();
        })();
        if ((await drainWithin(released, CLOSE_TIMEOUT_MS)) === 'deadline') redis.disconnect();
        // Drained, or past the deadline, when an upload still open ends with the process: what the
        // scratch directory holds is nobody's now, and a clean stop leaves nothing for the next start's sweep.
        await removeScratchDir().catch((err: unknown) => logger.warn('scratch directory not removed', { error: String(err) }));
        logger.info('stopped');
      })()),
  };
}
