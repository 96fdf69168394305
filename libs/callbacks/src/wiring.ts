import type { Redis } from 'ioredis';
import { JobQueue, type AppConfig, type Logger } from '@media/common';
import { CallbackRepository, StoreKeys } from '@media/storage';
import { CallbackAdmin } from './callback-admin';

/** A wired {@link CallbackAdmin}; `close` releases its queue producer, the Redis connection stays the caller's. */
export interface CallbackAdminHandle {
  admin: CallbackAdmin;
  close(): Promise<void>;
}

/** Builds callback administration from the validated config, the same way for the gateway and the admin CLI. */
export function createCallbackAdmin(config: AppConfig, redis: Redis, logger: Logger): CallbackAdminHandle {
  const deliveries = new JobQueue('callback-deliveries', redis, config.keyPrefix, logger);
  const admin = new CallbackAdmin({ callbacks: new CallbackRepository(redis, new StoreKeys(config.keyPrefix)), deliveries });
  return { admin, close: () => deliveries.close() };
}
