import { scheduleKey, storePrefix, storeShardPrefix, storeShards } from '@media/common';
import { shardOfId, shardOfName } from '@media/domain';

/**
 * Every Redis key of the store, in one place, under the deployment's prefix and a shard's hash tag
 * (keyspace.ts). A workspace's traffic (its jobs, callbacks, indexes, charge, limits, aggregates)
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

  constructor(private readonly keyPrefix: string) {
    this.prefix = storePrefix(keyPrefix);
    this.shards = storeShards(keyPrefix);
    for (const shard of this.shards) this.shardPrefixes.set(shard, storeShardPrefix(keyPrefix, shard));
  }

  /** Key patterns that together match every key of the store (tests and tools that scan it). */
  get patterns(): string[] {
    return [...new Set([this.prefix, ...this.shardPrefixes.values()])].map((prefix) => `${prefix}:*`);
  }

  /** Prefix of a shard's keys. */
  private at(shard: number): string {
    return this.shardPrefixes.get(shard) ?? storeShardPrefix(this.keyPrefix, shard);
  }

  /** Prefix of the keys stored beside `id` (a workspace's, a job's, a callback's: its shard). */
  private by(id: string): string {
    return this.at(shardOfId(id));
  }
  workspace = (id: string) => `${this.prefix}:ws:${id}`;
  workspaceSecrets = (id: string) => `${this.prefix}:ws:${id}:secrets`;
  /** The workspace's ed25519 key pairs for `v1a` signatures (JSON list like the secrets'); absent until turned on. */
  workspaceSigningKeys = (id: string) => `${this.prefix}:ws:${id}:signing-keys`;
  workspaceMembers = (id: string) => `${this.prefix}:ws:${id}:members`;
  workspaceVideos = (id: string) => `${this.by(id)}:ws:${id}:videos`;
  workspaceImages = (id: string) => `${this.by(id)}:ws:${id}:images`;
  /** The workspace's listing index of a job's kind (`/v1/videos` or `/v1/images`). */
  workspaceJobs = (id: string, kind: 'video' | 'image') => (kind === 'video' ? this.workspaceVideos(id) : this.workspaceImages(id));
  /** What a listing index (of jobs or of callbacks) remembers of the items removed from it lately (lua/includes/list-removed). */
  removedFrom = (index: string) => `${index}:removed`;
  /** When each item of {@link removedFrom} was removed (Unix ms): which ones its cap drops first. */
  removedAt = (index: string) => `${index}:removed-at`;
  workspaceLedger = (id: string) => `${this.by(id)}:ws:${id}:ledger`;
  workspaceCallbacks = (id: string) => `${this.by(id)}:ws:${id}:callbacks`;
  /** The workspace's callbacks in one delivery state, scored by creation time (the status filter reads it). */
  workspaceCallbacksInState = (id: string, state: string) => `${this.by(id)}:ws:${id}:callbacks:state:${state}`;
  /** When the workspace's bulk recoveries may next send an attempt (Unix ms), so concurrent recoveries share one pace. */
  workspaceRecoveryPace = (id: string) => `${this.by(id)}:ws:${id}:recovery-pace`;
  /** The workspace's callbacks of one event type, scored by creation time. */
  workspaceCallbacksOfType = (id: string, type: string) => `${this.by(id)}:ws:${id}:callbacks:type:${type}`;
  /** Ids of the workspace's accepted, unfinished jobs (the waiting-jobs cap counts them). */
  workspaceUnfinished = (id: string) => `${this.by(id)}:ws:${id}:unfinished`;
  /** Per-workspace overrides of the configured limits (hash: create_per_minute, read_per_minute, max_waiting_jobs). */
  workspaceLimits = (id: string) => `${this.by(id)}:ws:${id}:limits`;
  /** Request counter of one rate-limit bucket (`create`, `read`) for the current window; expires with it. */
  workspaceRate = (id: string, bucket: string) => `${this.by(id)}:ws:${id}:rate:${bucket}`;
  /** The workspace's API keys: hash of key id → SHA-256 of the key (listing and revoking by id). */
  workspaceApiKeys = (id: string) => `${this.prefix}:ws:${id}:apikeys`;
  /** Workspaces a dashboard e-mail (hashed, lower case) is a member of: sign-in takes no workspace. */
  memberWorkspaces = (emailHash: string) => `${this.prefix}:member:${emailHash}`;
  /** Failed API-key authentications from one client address (hashed) in the current minute; expires with it. */
  authFailures = (addressHash: string) => `${this.prefix}:authfail:${addressHash}`;
  /** A dashboard session, by the SHA-256 of its cookie token; expires when idle. */
  session = (tokenHash: string) => `${this.prefix}:session:${tokenHash}`;
  /** Failed sign-ins counted per client address, or per e-mail and address together (hashed), in the current window. */
  signInFailures = (scope: 'address' | 'pair', hash: string) => `${this.prefix}:signin:${scope}:${hash}`;
  /** A test callback the dashboard asked for (its URL and workspace), and its outcome; both short-lived. */
  testCallback = (id: string) => `${this.prefix}:testcb:${id}`;
  testCallbackResult = (id: string) => `${this.prefix}:testcb:${id}:result`;
  workspaces = () => `${this.prefix}:workspaces`;
  apiKey = (hash: string) => `${this.prefix}:apikey:${hash}`;
  job = (id: string) => `${this.by(id)}:job:${id}`;
  /** A shard's jobs stored but not yet known to be queued, scored by creation time (the intake repair reads it). */
  intake = (shard: number) => `${this.at(shard)}:intake`;
  /**
   * A shard's edits whose uploads are being stored before their job exists: member the blob folder
   * (`<workspace>/<job>`), score when the storing began (Unix ms). Storing the job takes it out; one
   * left long after names uploads whose gateway died first, which retention removes.
   */
  uploading = (shard: number) => `${this.at(shard)}:uploading`;
  /** A shard's finished jobs by when their record and media expire (Unix ms): what the retention sweep removes. */
  jobExpiry = (shard: number) => `${this.at(shard)}:expiry:jobs`;
  /** A shard's finished jobs with a `callback_url` whose callback the dispatcher has not created yet: retention holds them. */
  awaitingCallback = (shard: number) => `${this.at(shard)}:expiry:awaiting-callback`;
  /** A shard's ended callbacks (delivered or failed) by their last activity (Unix ms): the sweep removes them after their retention. */
  endedCallbacks = (shard: number) => `${this.at(shard)}:callbacks:ended`;
  idempotency = (workspaceId: string, keyHash: string) => `${this.by(workspaceId)}:idem:${workspaceId}:${keyHash}`;
  callback = (messageId: string) => `${this.by(messageId)}:cb:${messageId}`;
  callbackAttempts = (messageId: string) => `${this.by(messageId)}:cb:${messageId}:attempts`;
  /** Which run of a manual attempt's request is sending it (see callback-manual-send.lua); it lapses by itself. */
  manualSendHold = (messageId: string, requestId: string) => `${this.by(messageId)}:cb:${messageId}:sending:${requestId}`;
  /** A shard's future automatic attempts of the ladder, due time per delivery job id (the deliveries queue's schedule). */
  callbackSchedule = (shard: number) => scheduleKey(this.keyPrefix, 'callback-deliveries', shard);
  /** Attempts holding a slot of one callback destination (delivery job id → lease deadline ms). */
  destinationLeases = (id: string) => `${this.at(shardOfName(id))}:dest:${id}:leases`;
  /** Attempts waiting for a slot of one destination (delivery job id → due ms, their place in their workspace's line). */
  destinationParked = (id: string) => `${this.at(shardOfName(id))}:dest:${id}:parked`;
  /** Which workspace holds each lease and parked attempt of one destination (hash: id → workspace id). */
  destinationHolders = (id: string) => `${this.at(shardOfName(id))}:dest:${id}:holders`;
  /** Each workspace's share of one destination: its attempts in flight and parked, its slow lane, its latest outcomes (hash; lua/includes/destination-slots). */
  destinationShares = (id: string) => `${this.at(shardOfName(id))}:dest:${id}:shares`;
  /** The parked attempts of one destination, one lexicographic range per workspace, oldest due first. */
  destinationLines = (id: string) => `${this.at(shardOfName(id))}:dest:${id}:lines`;
  /** The workspaces with attempts parked at one destination, by turn (round robin: the lowest is served first). */
  destinationTurns = (id: string) => `${this.at(shardOfName(id))}:dest:${id}:turns`;
  /** One destination's origin and its slow-lane and throttle state (hash). */
  destinationState = (id: string) => `${this.at(shardOfName(id))}:dest:${id}`;
  /** A shard's destinations with recent activity, by last activity (Unix ms): what metrics read. */
  destinations = (shard: number) => `${this.at(shard)}:destinations`;
  /** The shard of a destination's keys. */
  destinationShard = (id: string) => shardOfName(id);
  /** The destinations a workspace's callbacks went to lately, by last use: what its dashboard shows. */
  workspaceDestinations = (id: string) => `${this.by(id)}:ws:${id}:destinations`;
  /**
   * One bucket of the workspace's Overview aggregates (overview.ts): a hash of counts for one time
   * slot of a tier (`m` minute, `q` quarter hour, `h` hour, `d` day), `slot` being the slot's start
   * divided by the tier's length. Each expires when its tier's longest window no longer reaches it.
   */
  overviewBucket = (id: string, tier: string, slot: number) => `${this.by(id)}:ws:${id}:ov:${tier}:${slot}`;
  linkKey = () => `${this.prefix}:system:link-signing-key`;
  /** Pub/sub channel on which finished job ids are announced (synchronous image calls wait on it). */
  jobFinishedChannel = () => `${this.prefix}:job-finished`;
}
