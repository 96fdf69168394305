import type { QueueName } from './queues/catalogue';

/**
 * How keys map to Redis Cluster slots. The same layout is used on a single Redis, where hash tags
 * mean nothing, so one code path serves both shapes and the single-Redis tests exercise it.
 *
 * A cluster refuses a script or a MULTI whose keys live in different slots (CROSSSLOT). So:
 * - the store's keys share one hash tag, `{store}`: its scripts join a job to its workspace's
 *   indexes, its charge and the deployment-wide sets (intake, expiry, the callback schedule);
 * - each BullMQ queue gets a tag of its own, `{queue:<name>}` (BullMQ's scripts touch only one
 *   queue's keys), so the queues and the store land on different slots. The tags are chosen
 *   so that a cluster made by `redis-cli --cluster create` (slots split evenly, in order) puts them
 *   on three different primaries when it has three: {queue:job-events} 1613, {store} 7858 with
 *   {queue:callback-deliveries} 8520, {queue:generation} 15301. (Plain `{generation}`,
 *   `{job-events}` and `{callback-deliveries}` all fall in the middle third, with `{store}`.) The quiet
 *   `{queue:maintenance}` (one sweep a minute) is slot 1632, beside job-events.
 * The store is one slot: splitting it per workspace would mean a schedule and an intake set per
 * slot group; that is the next step if one primary cannot carry the store.
 *
 * A `KEY_PREFIX` that carries its own `{…}` tag overrides all of this: every key then shares that
 * tag (one slot), which an operator may want to keep a deployment on one node of a shared cluster.
 */
export const hasHashTag = (keyPrefix: string): boolean => /\{[^{}]+\}/.test(keyPrefix);

/** Prefix of every key of the store (`StoreKeys`) and of the queues' schedules. */
export const storePrefix = (keyPrefix: string): string => (hasHashTag(keyPrefix) ? keyPrefix : `${keyPrefix}:{store}`);

/** BullMQ's `prefix` option for one queue: BullMQ then names its keys `<prefix>:<queue>:<suffix>`. */
export const bullPrefix = (keyPrefix: string, queue: QueueName): string => (hasHashTag(keyPrefix) ? `${keyPrefix}:bull` : `${keyPrefix}:bull:{queue:${queue}}`);

/** One of BullMQ's own keys of a queue (`wait`, `failed`, `meta`, a job id, …). */
export const bullKey = (keyPrefix: string, queue: QueueName, suffix: string): string => `${bullPrefix(keyPrefix, queue)}:${queue}:${suffix}`;

/**
 * Where a queue's scheduled jobs wait (`SchedulePromoter`): one sorted-set entry each, member = the
 * BullMQ job id the job will get, score = when it is due (Unix ms). Outside BullMQ's own key space,
 * so no BullMQ job id or internal key can ever collide with it.
 */
export const scheduleKey = (keyPrefix: string, queue: QueueName): string => `${storePrefix(keyPrefix)}:schedule:${queue}`;
