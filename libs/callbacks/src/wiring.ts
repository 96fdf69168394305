import type { Redis } from 'ioredis';
import { JobQueue } from '@media/queues';
import type { AppConfig, Logger } from '@media/common';
import { CallbackUrlGuard } from '@media/callback-guard';
import { CallbackRepository } from './callback-store';
import { TestCallbackRepository } from './sample-callback-store';
import { IdempotencyRepository } from '@media/jobs';
import { StoreKeys } from '@media/storage';
import { CallbackAdmin } from './callback-admin';
import { TestCallbacks } from './sample-callbacks';
import { AuditLog } from '@media/accounts';
import { EndpointRepository } from './endpoint-store';
import { MAX_ENDPOINTS_PER_WORKSPACE } from './endpoints';
import { WebhookEndpoints } from './webhook-endpoints';
import { RelayDirectory } from './relay';

/** A wired {@link CallbackAdmin}; `close` releases its queue producer, the Redis connection stays the caller's. */
export interface CallbackAdminHandle {
  admin: CallbackAdmin;
  /** Test callbacks, queued on the same producer. */
  tests: TestCallbacks;
  /** The workspace's webhook endpoints; their test events go through the same producer. */
  endpoints: WebhookEndpoints;
  close(): Promise<void>;
}

/** Builds callback administration from the validated config, the same way for the gateway and the admin CLI. */
export function createCallbackAdmin(config: AppConfig, redis: Redis, logger: Logger): CallbackAdminHandle {
  const deliveries = new JobQueue('callback-deliveries', redis, config.keyPrefix, logger);
  const keys = new StoreKeys(config.keyPrefix);
  const admin = new CallbackAdmin({
    callbacks: new CallbackRepository(redis, keys),
    deliveries,
    idempotency: new IdempotencyRepository(redis, keys, config.idempotencyTtlSeconds),
  });
  const guard = new CallbackUrlGuard({
    allowHttp: config.callbackAllowHttp,
    allowedCidrs: config.callbackAllowedCidrs,
    allowedEndpoints: config.callbackAllowedEndpoints,
  });
  const relays = new RelayDirectory(redis, keys, config.publicBaseUrl);
  const tests = new TestCallbacks({ store: new TestCallbackRepository(redis, keys), deliveries, guard, relays, webhookTimeoutMs: config.webhookTimeoutMs });
  const endpoints = new WebhookEndpoints({
    store: new EndpointRepository(redis, keys),
    audit: new AuditLog(redis, keys, config.auditRetentionSeconds),
    guard,
    relays,
    tests,
    maxPerWorkspace: MAX_ENDPOINTS_PER_WORKSPACE,
  });
  return { admin, tests, endpoints, close: () => deliveries.close() };
}
