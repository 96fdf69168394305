import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import type { Express, RequestHandler } from 'express';
import type { Redis } from 'ioredis';
import { API_KEY_CACHE_MS, createAccounts, WorkspaceRepository } from '@media/accounts';
import { createBlobStore } from '@media/blob-store';
import { CallbackUrlGuard } from '@media/callback-guard';
import { CallbackRepository, createCallbackAdmin, DestinationGate, destinationLimits, RelayDirectory, RelayHub } from '@media/callbacks';
import { createRedis, FaultInjector, storeAnswers, type AppConfig, type Logger } from '@media/common';
import { JobQueue } from '@media/queues';
import { JobPresenter, LinkSigner } from '@media/domain';
import { configuredLimits, IdempotencyRepository, JobRepository, LimitRepository } from '@media/jobs';
import { OverviewRepository, loadLinkSigningKey, ReplicaWait, StoreKeys, SecretBox } from '@media/storage';
import { createApp } from './app';
import proxyaddr from 'proxy-addr';
import { FailedAuthThrottle } from './http/auth-throttle';
import { relayKeyCheck, relayListenUpgrade } from './http/relay-listen';
import { JobIntakeService } from './job-intake';
import { JobWaiter } from './job-waiter';
import { buildOpenApiDocument } from './openapi/document';
import { staticJson } from './routes/openapi';

/** A wired gateway app and what it holds beside the caller's Redis connection. */
export interface GatewayHandle {
  app: Express;
  /** The public listener's WebSocket upgrades: `media-callbacks listen` (GET /v1/webhook-relay/listen). */
  upgrade: (req: IncomingMessage, socket: Duplex, head: Buffer) => void;
  /** Sends the last intake marks, then releases the waiter's connection, the queue producers and the blob store; the Redis connection stays the caller's. */
  close(): Promise<void>;
}

export interface GatewayOverrides {
  faults?: FaultInjector;
  /** How acceptances wait for replicas; by default as configured, uncounted. */
  replicaWait?: ReplicaWait;
  /** The OpenAPI route, when the caller already serves it elsewhere (main's starting app) and it should be built once. */
  openApi?: RequestHandler;
}

/** `GET /v1/openapi.json` for this configuration. */
export const openApiRoute = (config: AppConfig): RequestHandler => staticJson(buildOpenApiDocument(config));

/**
 * Builds the gateway from the validated config, in one place for main and the tests. The first
 * step reads the link-signing key from Redis; nothing is created before it succeeds, so a caller
 * may simply try again while Redis cannot be reached.
 */
export async function createGateway(config: AppConfig, redis: Redis, logger: Logger, overrides: GatewayOverrides = {}): Promise<GatewayHandle> {
  const keys = new StoreKeys(config.keyPrefix);
  const box = SecretBox.of(config.secretsEncryptionKeys);
  const links = new LinkSigner(await loadLinkSigningKey(redis, keys, config.linkSigningSecret, box), config.publicBaseUrl, config.linkTtlSeconds);
  const jobs = new JobRepository(redis, keys, overrides.replicaWait ?? new ReplicaWait(config.redisWaitReplicas, config.redisWaitTimeoutMs));
  const blobs = await createBlobStore(config.blobStore);
  const waiter = new JobWaiter(createRedis(config.redis, 'worker', logger), jobs);
  const generation = new JobQueue('generation', redis, config.keyPrefix, logger, { attempts: config.generationAttempts });
  const limits = new LimitRepository(redis, keys, configuredLimits(config));
  const callbackAdmin = createCallbackAdmin(config, redis, logger);
  // Keys are trusted for API_KEY_CACHE_MS: the bound on how long a revoked key keeps working here.
  const accounts = createAccounts(config, redis, { apiKeyCacheMs: API_KEY_CACHE_MS });
  const relays = new RelayDirectory(redis, keys, config.publicBaseUrl);
  const relayHub = new RelayHub({
    redis,
    subscriber: () => createRedis(config.redis, 'worker', logger),
    keys,
    directory: relays,
    logger,
    keyStillValid: relayKeyCheck(accounts),
    timeoutMs: config.webhookTimeoutMs,
  });
  const intake = new JobIntakeService(
    jobs,
    blobs,
    new IdempotencyRepository(redis, keys, config.idempotencyTtlSeconds),
    generation,
    new CallbackUrlGuard({ allowHttp: config.callbackAllowHttp, allowedCidrs: config.callbackAllowedCidrs, allowedEndpoints: config.callbackAllowedEndpoints }),
    limits,
    overrides.faults,
    relays,
  );
  const callbacks = new CallbackRepository(redis, keys);
  const app = createApp({
    redis,
    logger,
    workspaces: new WorkspaceRepository(redis, keys, box),
    jobs,
    callbacks,
    limits,
    blobs,
    links,
    presenter: new JobPresenter(links),
    intake,
    waiter,
    callbackAdmin: callbackAdmin.admin,
    accounts,
    testCallbacks: callbackAdmin.tests,
    endpoints: callbackAdmin.endpoints,
    destinations: new DestinationGate(redis, keys, destinationLimits(config)),
    overview: new OverviewRepository(redis, keys, (workspaceId) => callbacks.pendingIndex(workspaceId)),
    relays,
    retryScheduleMs: config.webhookRetryScheduleMs,
    secureCookies: config.publicBaseUrl.startsWith('https:'),
    storeAnswers: () => storeAnswers(redis, config.keyPrefix),
    trustProxy: config.trustProxy,
    trustIncomingTraceContext: config.tracing.trustIncomingContext,
    syncImageTimeoutMs: config.syncImageTimeoutMs,
    maxUploadBytes: config.maxUploadBytes,
    maxUploadTotalBytes: config.maxUploadTotalBytes,
    maxJsonBytes: config.maxJsonBytes,
    authFailuresPerAddressPerMinute: config.authFailuresPerAddressPerMinute,
    maxConcurrentUploadsPerWorkspace: config.maxConcurrentUploadsPerWorkspace,
    minBodyBytesPerSecond: config.httpMinBodyBytesPerSecond,
    openApi: overrides.openApi ?? openApiRoute(config),
  });
  return {
    app,
    upgrade: relayListenUpgrade({
      hub: relayHub,
      directory: relays,
      accounts,
      logger,
      timeoutMs: config.webhookTimeoutMs,
      throttle: new FailedAuthThrottle(limits, config.authFailuresPerAddressPerMinute, logger),
      // The address Express gives a request (`req.ip`), from the app's own TRUST_PROXY setting.
      clientAddress: (req) => proxyaddr(req, app.get('trust proxy fn') as (address: string, hop: number) => boolean),
    }),
    close: async () => {
      // Listeners first: their CLIs reconnect to another gateway while this one finishes.
      await relayHub.close();
      // The intake marks of the last jobs queued go out before the connection closes.
      await intake.close();
      await waiter.close();
      await generation.close();
      await callbackAdmin.close();
      await blobs.close();
    },
  };
}
