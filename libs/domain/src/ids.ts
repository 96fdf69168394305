import { createHash, randomFillSync } from 'node:crypto';

const ALPHABET = '0123456789abcdefghijklmnopqrstuvwxyz';

function encode(bytes: Buffer, length: number): string {
  let out = '';
  for (let i = 0; i < length; i++) out += ALPHABET[bytes[i] % ALPHABET.length];
  return out;
}

/**
 * Random bytes are drawn from the CSPRNG this many at a time: each call into it costs far more than
 * the bytes (the gateway makes an id per request), as Node's own randomUUID() finds. Ids are not
 * secrets; at most this many bytes of ids not yet made are held, and every byte is used once.
 */
const POOL_BYTES = 1_536;
const pool = Buffer.alloc(POOL_BYTES);
let used = POOL_BYTES;

function randomChunk(length: number): Buffer {
  if (length > POOL_BYTES) return randomFillSync(Buffer.alloc(length));
  if (used + length > POOL_BYTES) {
    randomFillSync(pool);
    used = 0;
  }
  const chunk = pool.subarray(used, used + length);
  used += length;
  return chunk;
}

/** Random identifier with a type prefix, e.g. `video_3kq…`. */
export function newId(prefix: string, length = 24): string {
  return `${prefix}_${encode(randomChunk(length), length)}`;
}

/** Identifier derived from its inputs, so that replaying the same work yields the same id. */
export function derivedId(prefix: string, ...parts: string[]): string {
  const digest = createHash('sha256').update(parts.join('\u0000')).digest();
  return `${prefix}_${encode(digest, 24)}`;
}
