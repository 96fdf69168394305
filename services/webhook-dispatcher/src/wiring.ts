import { readFile } from 'node:fs/promises';
import type { Redis } from 'ioredis';
import { CallbackUrlGuard, type HostResolver } from '@media/callback-guard';
import { ConfigError, createRedis, FaultInjector, type AppConfig, type CallbackMetrics, type Logger } from '@media/common';
import { JobQueue } from '@media/queues';
import { JobPresenter, LinkSigner } from '@media/domain';
import {
  CallbackRepository,
  CallbackService,
  DestinationGate,
  destinationLimits,
  EndpointRepository,
  RelayDirectory,
  RelaySender,
  TestCallbackRepository,
  TestCallbackService,
} from '@media/callbacks';
import { JobRepository } from '@media/jobs';
import { loadLinkSigningKey, StoreKeys, SecretBox } from '@media/storage';
import { AuditLog, WorkspaceRepository } from '@media/accounts';
import { egressProxyOf } from './egress-proxy';
import { WebhookSender } from './webhook-sender';

/** A wired {@link CallbackService} and the resources it holds. */
export interface CallbackServiceHandle {
  service: CallbackService;
  /** The dashboard's test callbacks, sent with the same guard, signing and sender. */
  tests: TestCallbackService;
  callbacks: CallbackRepository;
  destinations: DestinationGate;
  /** Releases the queue producer and the HTTP agents; the Redis connection stays the caller's. */
  close(): Promise<void>;
}

export interface WiringOverrides {
  /** Replaces the system resolver of the URL guard (tests: DNS rebinding). */
  resolver?: HostResolver;
  now?: () => number;
  faults?: FaultInjector;
  metrics?: CallbackMetrics;
}

/**
 * Builds the callback service from the validated config, in one place for the dispatcher's main and
 * its tests. Other processes never build it: they queue attempts through `@media/callbacks`.
 */
export async function createCallbackService(config: AppConfig, redis: Redis, logger: Logger, overrides: WiringOverrides = {}): Promise<CallbackServiceHandle> {
  const keys = new StoreKeys(config.keyPrefix);
  const box = SecretBox.of(config.secretsEncryptionKeys);
  const links = new LinkSigner(await loadLinkSigningKey(redis, keys, config.linkSigningSecret, box), config.publicBaseUrl, config.linkTtlSeconds);
  const extraCaPem = config.callbackCaFile
    ? await readFile(config.callbackCaFile, 'utf8').catch((err: Error) => {
        throw new ConfigError([`CALLBACK_CA_FILE cannot be read: ${err.message}`]);
      })
    : undefined;
  const sender = await WebhookSender.create(
    {
      timeoutMs: config.webhookTimeoutMs,
      extraCaPem,
      // As many idle sockets per receiver as this process can have attempts in flight to it (its
      // concurrency, and never more than the destination's cap): with fewer, a burst to one receiver
      // closes sockets its next jobs reopen at once (bench, concurrency 50: a cap of 16 opened 533
      // TLS connections per 2000 callbacks, 602/s; a cap of 50 none, 1157/s). Beyond a burst, LIFO
      // reuse and the idle timeout shrink the pool again within seconds.
      pool: { maxIdleSocketsPerKey: Math.min(config.dispatcherConcurrency, config.destinationMaxInFlight) },
      proxy: egressProxyOf(config.callbackEgressProxy, config.webhookTimeoutMs),
    },
    overrides.now,
  );
  const deliveries = new JobQueue('callback-deliveries', redis, config.keyPrefix, logger);
  const events = new JobQueue('job-events', redis, config.keyPrefix, logger);
  const callbacks = new CallbackRepository(redis, keys);
  const destinations = new DestinationGate(redis, keys, destinationLimits(config));
  const relayDirectory = new RelayDirectory(redis, keys, config.publicBaseUrl);
  const relay = new RelaySender({
    redis,
    subscriber: () => createRedis(config.redis, 'worker', logger),
    keys,
    directory: relayDirectory,
    logger,
    now: overrides.now,
  });
  const service = new CallbackService({
    callbacks,
    jobs: new JobRepository(redis, keys),
    workspaces: new WorkspaceRepository(redis, keys, box),
    presenter: new JobPresenter(links),
    guard: new CallbackUrlGuard(
      { allowHttp: config.callbackAllowHttp, allowedCidrs: config.callbackAllowedCidrs, allowedEndpoints: config.callbackAllowedEndpoints },
      overrides.resolver,
    ),
    sender,
    destinations,
    deliveries,
    events,
    endpoints: new EndpointRepository(redis, keys),
    endpointDisableAfterMs: config.endpointDisableAfterMs,
    relay,
    relayDirectory,
    audit: new AuditLog(redis, keys, config.auditRetentionSeconds),
    logger,
    retryScheduleMs: config.webhookRetryScheduleMs,
    attemptTimeoutMs: config.webhookTimeoutMs,
    docsUrl: config.docsUrl,
    now: overrides.now,
    faults: overrides.faults,
    metrics: overrides.metrics,
  });
  const tests = new TestCallbackService({
    store: new TestCallbackRepository(redis, keys),
    workspaces: new WorkspaceRepository(redis, keys, box),
    guard: new CallbackUrlGuard(
      { allowHttp: config.callbackAllowHttp, allowedCidrs: config.callbackAllowedCidrs, allowedEndpoints: config.callbackAllowedEndpoints },
      overrides.resolver,
    ),
    sender,
    relay,
    timeoutMs: config.webhookTimeoutMs,
    logger,
    docsUrl: config.docsUrl,
    now: overrides.now,
  });
  return {
    service,
    tests,
    callbacks,
    destinations,
    close: async () => {
      sender.close();
      await Promise.all([deliveries.close(), events.close(), relay.close()]);
    },
  };
}
