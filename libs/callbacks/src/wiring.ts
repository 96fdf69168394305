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

/** A wired {@link CallbackAdmin}; `close` releases its queue producer, the Redis connection stays the caller's. */
export interface CallbackAdminHandle {
  admin: CallbackAdmin;
  /** Test callbacks, queued on the same producer. */
  tests: TestCallbacks;
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
  const tests = new TestCallbacks({
    store: new TestCallbackRepository(redis, keys),
    deliveries,
    guard: new CallbackUrlGuard({
      allowHttp: config.callbackAllowHttp,
      allowedCidrs: config.callbackAllowedCidrs,
      allowedEndpoints: config.callbackAllowedEndpoints,
    }),
    webhookTimeoutMs: config.webhookTimeoutMs,
  });
  return { admin, tests, close: () => deliveries.close() };
}
