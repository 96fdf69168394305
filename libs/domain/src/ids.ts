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

/**
 * How many shards the store is split into (see `storeShardPrefix` in `@media/common`). A workspace
 * lives on one shard with all its jobs and callbacks, so every step of a job stays in one cluster
 * slot; workspaces are spread over the shards, and the shards over a cluster's primaries.
 */
export const STORE_SHARDS = 16;

/**
 * The shard of what was stored before the store was split: the one slot everything shared then.
 * Workspaces made before the split stay there with all their jobs (their ids name no shard).
 */
export const LEGACY_SHARD = -1;

/** Length of the random part of an id that names its shard: the usual 24 characters and the shard's. */
const SHARDED_LENGTH = 25;

/**
 * The store shard an id names. The records of a job or a callback must be found from its id
 * alone (a queue payload, a schedule entry and a client's URL carry nothing else), so the ids of a
 * sharded workspace, of its jobs and of their callbacks end in one more character, the shard's
 * (`0`–`f`). Any other id (made before the split, or not made here) names the legacy shard.
 */
export function shardOfId(id: string): number {
  const random = id.length - id.lastIndexOf('_') - 1;
  if (random !== SHARDED_LENGTH) return LEGACY_SHARD;
  const shard = ALPHABET.indexOf(id[id.length - 1]!);
  return shard >= 0 && shard < STORE_SHARDS ? shard : LEGACY_SHARD;
}

/** `id` as it names `shard`: unchanged for the legacy shard, one character longer otherwise. */
function onShard(id: string, shard: number): string {
  return shard === LEGACY_SHARD ? id : `${id}${ALPHABET[shard]}`;
}

/** A new id on the shard of `ownerId` (a workspace's, or a job's): what it names is stored beside its owner. */
export function newIdBeside(ownerId: string, prefix: string): string {
  return onShard(newId(prefix), shardOfId(ownerId));
}

/** A derived id (see {@link derivedId}) on the shard of `ownerId`. */
export function derivedIdBeside(ownerId: string, prefix: string, ...parts: string[]): string {
  return onShard(derivedId(prefix, ...parts), shardOfId(ownerId));
}

/** A new workspace's id, on a shard drawn at random (uniform, so workspaces spread evenly over the shards). */
export function newWorkspaceId(): string {
  return onShard(newId('ws'), randomChunk(1)[0]! % STORE_SHARDS);
}

/**
 * `id` moved onto the shard of `ownerId`: an id made before its owner was known (a request's id,
 * which an image request keeps as its own) takes its owner's shard once the owner is known.
 */
export function rehomeId(id: string, ownerId: string): string {
  const base = shardOfId(id) === LEGACY_SHARD ? id : id.slice(0, -1);
  return onShard(base, shardOfId(ownerId));
}

/**
 * The shard of something named by a string that is not an id made here (a callback destination's
 * id, shared by every workspace that calls it): FNV-1a of the name, so the shards take such names evenly.
 */
export function shardOfName(name: string): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < name.length; i++) {
    hash ^= name.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193);
  }
  return (hash >>> 0) % STORE_SHARDS;
}
