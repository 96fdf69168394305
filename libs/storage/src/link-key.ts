import { randomBytes } from 'node:crypto';
import type { Redis } from 'ioredis';
import type { StoreKeys } from './keys';

/**
 * The key that signs download links. Every service must use the same one; unless configured, the
 * first service to start creates it in Redis and the others read it, so no default secret exists.
 */
export async function loadLinkSigningKey(redis: Redis, keys: StoreKeys, configured: string | undefined): Promise<string> {
  if (configured) return configured;
  await redis.set(keys.linkKey(), randomBytes(32).toString('base64url'), 'NX');
  const key = await redis.get(keys.linkKey());
  if (!key) throw new Error('link signing key missing after creation');
  return key;
}
