import { LEGACY_SHARD, STORE_SHARDS } from '@media/domain';

/**
 * How keys map to Redis Cluster slots. The same layout is used on a single Redis, where hash tags
 * mean nothing, so one code path serves both shapes and the single-Redis tests exercise it.
 *
 * A cluster refuses a script or a MULTI whose keys live in different slots (CROSSSLOT). So:
 * - each BullMQ queue gets a tag of its own, `{queue:<name>}` (BullMQ's scripts touch only one
 *   queue's keys), so the queues and the store land on different slots. The tags are chosen
 *   so that a cluster made by `redis-cli --cluster create` (slots split evenly, in order) puts them
 *   on three different primaries when it has three: {queue:job-events} 1613, {store} 7858 with
 *   {queue:callback-deliveries} 8520, {queue:generation} 15301. (Plain `{generation}`,
 *   `{job-events}` and `{callback-deliveries}` all fall in the middle third, with `{store}`.) The quiet
 *   `{queue:maintenance}` (one sweep a minute) is slot 1632, beside job-events;
 * - the store is split into shards (`STORE_SHARDS`, `@media/domain`), each with a tag of its own
 *   (`SHARD_TAGS`): a workspace, its jobs, callbacks, indexes, charge and aggregates live on one
 *   shard, so the scripts that join a job to its workspace's indexes and charge stay in one slot,
 *   and the sets that used to be deployment-wide (intake, expiry, awaiting callback, ended
 *   callbacks, the ladder's schedule, recent destinations) are kept per shard and walked shard by
 *   shard by their sweepers. Workspaces spread over the shards, so the store spreads over a
 *   cluster's primaries instead of loading the one that holds `{store}`;
 * - `{store}` itself (`LEGACY_SHARD`) keeps what is not a workspace's traffic (accounts, API keys,
 *   sessions, secrets, the link key) and everything written before the split: the ids of a
 *   workspace made then name no shard, so it stays there whole, jobs and callbacks included.
 *
 * A `KEY_PREFIX` that carries its own `{…}` tag overrides all of this: every key then shares that
 * tag (one slot), which an operator may want to keep a deployment on one node of a shared cluster.
 */
export const hasHashTag = (keyPrefix: string): boolean => /\{[^{}]+\}/.test(keyPrefix);

/** Prefix of the store's keys that belong to no shard (`StoreKeys`), and of the legacy shard's. */
export const storePrefix = (keyPrefix: string): string => (hasHashTag(keyPrefix) ? keyPrefix : `${keyPrefix}:{store}`);

/**
 * The shards' hash tags, chosen so that shard k's slot lies in the k-th sixteenth of the 16,384
 * slots: a cluster whose primaries hold even runs of slots (as `redis-cli --cluster create` makes
 * them) gets an even share of shards on each; `s<k>` names shard k, a suffix finds the slot.
 * Renaming one moves its data out of reach.
 */
const SHARD_TAGS = [
  's0.10', // slot 653
  's1.13', // 1114
  's2', // 2843
  's3.20', // 3074
  's4.4', // 5106
  's5.3', // 5157
  's6.40', // 6881
  's7.43', // 7222
  's8.23', // 8830
  's9.20', // 9385
  'sa.63', // 10486
  'sb.1', // 12089
  'sc.42', // 13277
  'sd.61', // 13553
  'se.4', // 14860
  'sf.41', // 16379
] as const satisfies { length: typeof STORE_SHARDS };

/** Prefix of the keys of one store shard (`LEGACY_SHARD` is `storePrefix`'s `{store}`). */
export function storeShardPrefix(keyPrefix: string, shard: number): string {
  if (hasHashTag(keyPrefix) || shard === LEGACY_SHARD) return storePrefix(keyPrefix);
  const tag = SHARD_TAGS[shard];
  if (tag === undefined) throw new Error(`no store shard ${shard}`);
  return `${keyPrefix}:{${tag}}`;
}

/**
 * Every shard whose per-shard sets a sweeper must walk: the legacy one and the sixteen, or only one
 * when `KEY_PREFIX` pins every key to its own tag (all shards then share the same keys).
 */
export const storeShards = (keyPrefix: string): readonly number[] =>
  hasHashTag(keyPrefix) ? [LEGACY_SHARD] : [LEGACY_SHARD, ...Array.from({ length: STORE_SHARDS }, (_, i) => i)];

/** BullMQ's `prefix` option for one queue: BullMQ then names its keys `<prefix>:<queue>:<suffix>`. */
export const bullPrefix = (keyPrefix: string, queue: string): string => (hasHashTag(keyPrefix) ? `${keyPrefix}:bull` : `${keyPrefix}:bull:{queue:${queue}}`);

/** One of BullMQ's own keys of a queue (`wait`, `failed`, `meta`, a job id, …). */
export const bullKey = (keyPrefix: string, queue: string, suffix: string): string => `${bullPrefix(keyPrefix, queue)}:${queue}:${suffix}`;

/**
 * Where a queue's scheduled jobs wait (`SchedulePromoter`): one sorted-set entry each, member = the
 * BullMQ job id the job will get, score = when it is due (Unix ms). One per store shard, beside the
 * records whose scripts write it (a callback's next attempt is scheduled in the script that records
 * its last). Outside BullMQ's own key space,
 * so no BullMQ job id or internal key can ever collide with it.
 */
export const scheduleKey = (keyPrefix: string, queue: string, shard: number): string => `${storeShardPrefix(keyPrefix, shard)}:schedule:${queue}`;
