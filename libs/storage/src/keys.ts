import { storePrefix, storeShardPrefix, storeShards } from '@media/common';
import { shardOfId } from '@media/domain';

/**
 * The store's keyspace: the deployment's prefix and each shard's hash tag (keyspace.ts), and the few
 * keys several capabilities share (listing indexes' removed items, the Overview's buckets, the
 * workspaces' set, the hand-over of finished jobs to their callbacks, the link key). Each capability
 * package names its own keys on top of it (CallbackKeys in @media/callbacks, JobKeys in @media/jobs,
 * AccountKeys in @media/accounts). A workspace's traffic (its jobs, callbacks, indexes, charge, limits, aggregates)
 * lives on the workspace's shard, named by its id, and a job's or callback's records on the shard
 * its id names, which is its workspace's: so every script that moves a job or a callback keeps
 * its keys in one cluster slot. Accounts, API keys, sessions, secrets and the link key are read
 * far less often and live on `{store}` (`prefix`). A destination, shared by every workspace that
 * calls it, lives on the shard its id hashes to; its scripts touch only its own keys.
 */
export class StoreKeys {
  /** Prefix of the keys that belong to no workspace's shard. */
  readonly prefix: string;
  /** Every shard, for the sweepers that walk the per-shard sets. */
  readonly shards: readonly number[];
  private readonly shardPrefixes = new Map<number, string>();

  constructor(readonly keyPrefix: string) {
    this.prefix = storePrefix(keyPrefix);
    this.shards = storeShards(keyPrefix);
    for (const shard of this.shards) this.shardPrefixes.set(shard, storeShardPrefix(keyPrefix, shard));
  }

  /** Key patterns that together match every key of the store (tests and tools that scan it). */
  get patterns(): string[] {
    return [...new Set([this.prefix, ...this.shardPrefixes.values()])].map((prefix) => `${prefix}:*`);
  }

  /** Prefix of a shard's keys. */
  onShard(shard: number): string {
    return this.shardPrefixes.get(shard) ?? storeShardPrefix(this.keyPrefix, shard);
  }

  /** Prefix of the keys stored beside `id` (a workspace's, a job's, a callback's: its shard). */
  beside(id: string): string {
    return this.onShard(shardOfId(id));
  }

  /** What a listing index (of jobs or of callbacks) remembers of the items removed from it lately (lua/includes/list-removed). */
  removedFrom = (index: string) => `${index}:removed`;
  /** When each item of {@link removedFrom} was removed (Unix ms): which ones its cap drops first. */
  removedAt = (index: string) => `${index}:removed-at`;
  workspaces = () => `${this.prefix}:workspaces`;
  /** A shard's finished jobs with a `callback_url` whose callback the dispatcher has not created yet: retention holds them. */
  awaitingCallback = (shard: number) => `${this.onShard(shard)}:expiry:awaiting-callback`;
  /**
   * One bucket of the workspace's Overview aggregates (overview.ts): a hash of counts for one time
   * slot of a tier (`m` minute, `q` quarter hour, `h` hour, `d` day), `slot` being the slot's start
   * divided by the tier's length. Each expires when its tier's longest window no longer reaches it.
   */
  overviewBucket = (id: string, tier: string, slot: number) => `${this.beside(id)}:ws:${id}:ov:${tier}:${slot}`;
  linkKey = () => `${this.prefix}:system:link-signing-key`;
}
