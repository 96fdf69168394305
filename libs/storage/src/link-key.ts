import { randomBytes } from 'node:crypto';
import type { Redis } from 'ioredis';
import { duplicateRedis } from '@media/common';
import type { StoreKeys } from './keys';
import { SecretBox } from './secret-box';

/** What the link-signing key is bound to when sealed. */
const LINK_KEY_OWNER = 'link-signing-key';

/**
 * The key that signs download links. Every service must use the same one; unless configured, the
 * first service to start creates it in Redis and the others read it, so no default secret exists.
 * In Redis it is sealed like the signing secrets (see {@link SecretBox}); one stored before sealing
 * is sealed by the first service that reads it with a key-encryption key configured.
 */
export async function loadLinkSigningKey(redis: Redis, keys: StoreKeys, configured: string | undefined, box: SecretBox = SecretBox.none()): Promise<string> {
  if (configured) return configured;
  await redis.set(keys.linkKey(), box.seal(randomBytes(32).toString('base64url'), LINK_KEY_OWNER), 'NX');
  const stored = await redis.get(keys.linkKey());
  if (!stored) throw new Error('link signing key missing after creation');
  const key = box.open(stored, LINK_KEY_OWNER);
  await resealLinkKey(redis, keys, box, stored, key);
  return key;
}

/** Seals the stored link key under the newest key-encryption key, if it is not already (only if it is still `stored`). */
export async function resealLinkKey(redis: Redis, keys: StoreKeys, box: SecretBox, stored?: string, plain?: string): Promise<boolean> {
  const current = stored ?? (await redis.get(keys.linkKey()));
  if (!current || box.isCurrent(current)) return false;
  const key = plain ?? box.open(current, LINK_KEY_OWNER);
  // Only over the value read: a concurrent re-seal by another service wins, and is equivalent.
  const watching = duplicateRedis(redis, {});
  try {
    await watching.watch(keys.linkKey());
    if ((await watching.get(keys.linkKey())) !== current) return false;
    return (await watching.multi().set(keys.linkKey(), box.seal(key, LINK_KEY_OWNER)).exec()) !== null;
  } finally {
    watching.disconnect();
  }
}
