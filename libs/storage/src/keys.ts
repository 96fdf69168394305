import { scheduleKey, storePrefix } from '@media/common';

/**
 * Every Redis key of the store, in one place, under the deployment's prefix and the store's hash
 * tag (`storePrefix`, keyspace.ts): all of them share one cluster slot, so any script or MULTI may
 * join any of them.
 */
export class StoreKeys {
  readonly prefix: string;
  constructor(private readonly keyPrefix: string) {
    this.prefix = storePrefix(keyPrefix);
  }
  workspace = (id: string) => `${this.prefix}:ws:${id}`;
  workspaceSecrets = (id: string) => `${this.prefix}:ws:${id}:secrets`;
  /** The workspace's ed25519 key pairs for `v1a` signatures (JSON list like the secrets'); absent until turned on. */
  workspaceSigningKeys = (id: string) => `${this.prefix}:ws:${id}:signing-keys`;
  workspaceMembers = (id: string) => `${this.prefix}:ws:${id}:members`;
  workspaceVideos = (id: string) => `${this.prefix}:ws:${id}:videos`;
  workspaceImages = (id: string) => `${this.prefix}:ws:${id}:images`;
  /** The workspace's listing index of a job's kind (`/v1/videos` or `/v1/images`). */
  workspaceJobs = (id: string, kind: 'video' | 'image') => (kind === 'video' ? this.workspaceVideos(id) : this.workspaceImages(id));
  workspaceLedger = (id: string) => `${this.prefix}:ws:${id}:ledger`;
  workspaceCallbacks = (id: string) => `${this.prefix}:ws:${id}:callbacks`;
  /** The workspace's callbacks in one delivery state, scored by creation time (the status filter reads it). */
  workspaceCallbacksInState = (id: string, state: string) => `${this.prefix}:ws:${id}:callbacks:state:${state}`;
  /** When the workspace's bulk recoveries may next send an attempt (Unix ms), so concurrent recoveries share one pace. */
  workspaceRecoveryPace = (id: string) => `${this.prefix}:ws:${id}:recovery-pace`;
  /** The workspace's callbacks of one event type, scored by creation time. */
  workspaceCallbacksOfType = (id: string, type: string) => `${this.prefix}:ws:${id}:callbacks:type:${type}`;
  /** Ids of the workspace's accepted, unfinished jobs (the waiting-jobs cap counts them). */
  workspaceUnfinished = (id: string) => `${this.prefix}:ws:${id}:unfinished`;
  /** Per-workspace overrides of the configured limits (hash: create_per_minute, read_per_minute, max_waiting_jobs). */
  workspaceLimits = (id: string) => `${this.prefix}:ws:${id}:limits`;
  /** Request counter of one rate-limit bucket (`create`, `read`) for the current window; expires with it. */
  workspaceRate = (id: string, bucket: string) => `${this.prefix}:ws:${id}:rate:${bucket}`;
  /** The workspace's API keys: hash of key id → SHA-256 of the key (listing and revoking by id). */
  workspaceApiKeys = (id: string) => `${this.prefix}:ws:${id}:apikeys`;
  /** Workspaces a dashboard e-mail (hashed, lower case) is a member of: sign-in takes no workspace. */
  memberWorkspaces = (emailHash: string) => `${this.prefix}:member:${emailHash}`;
  /** A dashboard session, by the SHA-256 of its cookie token; expires when idle. */
  session = (tokenHash: string) => `${this.prefix}:session:${tokenHash}`;
  /** Failed sign-ins counted per client address, or per e-mail and address together (hashed), in the current window. */
  signInFailures = (scope: 'address' | 'pair', hash: string) => `${this.prefix}:signin:${scope}:${hash}`;
  /** A test callback the dashboard asked for (its URL and workspace), and its outcome; both short-lived. */
  testCallback = (id: string) => `${this.prefix}:testcb:${id}`;
  testCallbackResult = (id: string) => `${this.prefix}:testcb:${id}:result`;
  workspaces = () => `${this.prefix}:workspaces`;
  apiKey = (hash: string) => `${this.prefix}:apikey:${hash}`;
  job = (id: string) => `${this.prefix}:job:${id}`;
  /** Jobs stored but not yet known to be queued, scored by creation time (the intake repair reads it). */
  intake = () => `${this.prefix}:intake`;
  /** Finished jobs by when their record and media expire (Unix ms): what the retention sweep removes. */
  jobExpiry = () => `${this.prefix}:expiry:jobs`;
  /** Finished jobs with a `callback_url` whose callback the dispatcher has not created yet: retention holds them. */
  awaitingCallback = () => `${this.prefix}:expiry:awaiting-callback`;
  /** Ended callbacks (delivered or failed) by their last activity (Unix ms): the sweep removes them after their retention. */
  endedCallbacks = () => `${this.prefix}:callbacks:ended`;
  idempotency = (workspaceId: string, keyHash: string) => `${this.prefix}:idem:${workspaceId}:${keyHash}`;
  callback = (messageId: string) => `${this.prefix}:cb:${messageId}`;
  callbackAttempts = (messageId: string) => `${this.prefix}:cb:${messageId}:attempts`;
  /** The ladder's future automatic attempts, due time per delivery job id (the deliveries queue's schedule). */
  callbackSchedule = () => scheduleKey(this.keyPrefix, 'callback-deliveries');
  /** Attempts holding a slot of one callback destination (delivery job id → lease deadline ms). */
  destinationLeases = (id: string) => `${this.prefix}:dest:${id}:leases`;
  /** Attempts waiting for a slot of one destination (delivery job id → due ms, the order they are served in). */
  destinationParked = (id: string) => `${this.prefix}:dest:${id}:parked`;
  /** One destination's origin and its slow-lane and throttle state (hash). */
  destinationState = (id: string) => `${this.prefix}:dest:${id}`;
  /** Destinations with recent activity, by last activity (Unix ms): what metrics read. */
  destinations = () => `${this.prefix}:destinations`;
  /** The destinations a workspace's callbacks went to lately, by last use: what its dashboard shows. */
  workspaceDestinations = (id: string) => `${this.prefix}:ws:${id}:destinations`;
  /**
   * One bucket of the workspace's Overview aggregates (overview.ts): a hash of counts for one time
   * slot of a tier (`m` minute, `q` quarter hour, `h` hour, `d` day), `slot` being the slot's start
   * divided by the tier's length. Each expires when its tier's longest window no longer reaches it.
   */
  overviewBucket = (id: string, tier: string, slot: number) => `${this.prefix}:ws:${id}:ov:${tier}:${slot}`;
  linkKey = () => `${this.prefix}:system:link-signing-key`;
  /** Pub/sub channel on which finished job ids are announced (synchronous image calls wait on it). */
  jobFinishedChannel = () => `${this.prefix}:job-finished`;
}
