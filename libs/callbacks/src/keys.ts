import { scheduleKey } from '@media/common';
import { shardOfName } from '@media/domain';
import type { StoreKeys } from '@media/storage';

/**
 * The Redis keys of callbacks and their destinations (see StoreKeys for the keyspace): a callback's
 * record and attempts on the shard its id names (its workspace's), the workspace's callback indexes
 * and recovery pace there too, and each destination's slots on the shard its id hashes to. Only this
 * package reads or writes them (the dependency rules refuse an import of this file from elsewhere).
 */
export class CallbackKeys {
  readonly #store: StoreKeys;

  constructor(store: StoreKeys) {
    this.#store = store;
  }

  workspaceCallbacks = (id: string) => `${this.#store.beside(id)}:ws:${id}:callbacks`;
  /** The workspace's callbacks in one delivery state, scored by creation time (the status filter reads it). */
  workspaceCallbacksInState = (id: string, state: string) => `${this.#store.beside(id)}:ws:${id}:callbacks:state:${state}`;
  /** When the workspace's bulk recoveries may next send an attempt (Unix ms), so concurrent recoveries share one pace. */
  workspaceRecoveryPace = (id: string) => `${this.#store.beside(id)}:ws:${id}:recovery-pace`;
  /** The workspace's callbacks of one event type, scored by creation time. */
  workspaceCallbacksOfType = (id: string, type: string) => `${this.#store.beside(id)}:ws:${id}:callbacks:type:${type}`;
  /** The workspace's webhook endpoints (hash: `we_…` id → the endpoint's JSON record). */
  workspaceEndpoints = (id: string) => `${this.#store.beside(id)}:ws:${id}:endpoints`;
  /** The workspace's callbacks to one of its webhook endpoints, scored by creation time (the `endpoint_id` filter reads it). */
  workspaceCallbacksOfEndpoint = (id: string, endpointId: string) => `${this.#store.beside(id)}:ws:${id}:callbacks:endpoint:${endpointId}`;
  /**
   * The callbacks a job made beyond its request's own `callback_url` (set of `msg_` ids): to the
   * workspace's endpoints and its relay listeners' subscriptions. Beside the job: a request's own
   * callback has an id its job's id gives, these do not, and their endpoint may since be gone.
   */
  jobFanOutCallbacks = (jobId: string) => `${this.#store.beside(jobId)}:job:${jobId}:fan-out-callbacks`;
  /** The workspace's relay token (the secret part of its relay URL); made at its first listener, then kept. */
  workspaceRelayToken = (id: string) => `${this.#store.beside(id)}:ws:${id}:relay-token`;
  /** The workspace's connected relay listeners (hash: `rls_…` session id → the listener's JSON record). */
  workspaceRelayListeners = (id: string) => `${this.#store.beside(id)}:ws:${id}:relay-listeners`;
  /** The Pub/Sub channel a gateway takes the deliveries for its listeners on. */
  relayGatewayChannel = (gatewayId: string) => `${this.#store.prefix}:relay:gateway:${gatewayId}`;
  /** The Pub/Sub channel a dispatcher takes the outcomes of its relayed attempts on. */
  relayReplyChannel = (dispatcherId: string) => `${this.#store.prefix}:relay:reply:${dispatcherId}`;
  /** A test callback the dashboard asked for (its URL and workspace), and its outcome; both short-lived. */
  testCallback = (id: string) => `${this.#store.prefix}:testcb:${id}`;
  testCallbackResult = (id: string) => `${this.#store.prefix}:testcb:${id}:result`;
  /** A shard's ended callbacks (delivered or failed) by their last activity (Unix ms): the sweep removes them after their retention. */
  endedCallbacks = (shard: number) => `${this.#store.onShard(shard)}:callbacks:ended`;
  callback = (messageId: string) => `${this.#store.beside(messageId)}:cb:${messageId}`;
  callbackAttempts = (messageId: string) => `${this.#store.beside(messageId)}:cb:${messageId}:attempts`;
  /** Which run of a manual attempt's request is sending it (see callback-manual-send.lua); it lapses by itself. */
  manualSendHold = (messageId: string, requestId: string) => `${this.#store.beside(messageId)}:cb:${messageId}:sending:${requestId}`;
  /** A shard's future automatic attempts of the ladder, due time per delivery job id (the deliveries queue's schedule). */
  callbackSchedule = (shard: number) => scheduleKey(this.#store.keyPrefix, 'callback-deliveries', shard);
  /** Attempts holding a slot of one callback destination (delivery job id → lease deadline ms). */
  destinationLeases = (id: string) => `${this.#store.onShard(shardOfName(id))}:dest:${id}:leases`;
  /** Attempts waiting for a slot of one destination (delivery job id → due ms, their place in their workspace's line). */
  destinationParked = (id: string) => `${this.#store.onShard(shardOfName(id))}:dest:${id}:parked`;
  /** Which workspace holds each lease and parked attempt of one destination (hash: id → workspace id). */
  destinationHolders = (id: string) => `${this.#store.onShard(shardOfName(id))}:dest:${id}:holders`;
  /** Each workspace's share of one destination: its attempts in flight and parked, its slow lane, its latest outcomes (hash; lua/includes/destination-slots). */
  destinationShares = (id: string) => `${this.#store.onShard(shardOfName(id))}:dest:${id}:shares`;
  /** The parked attempts of one destination, one lexicographic range per workspace, oldest due first. */
  destinationLines = (id: string) => `${this.#store.onShard(shardOfName(id))}:dest:${id}:lines`;
  /** The workspaces with attempts parked at one destination, by turn (round robin: the lowest is served first). */
  destinationTurns = (id: string) => `${this.#store.onShard(shardOfName(id))}:dest:${id}:turns`;
  /** One destination's origin and its slow-lane and throttle state (hash). */
  destinationState = (id: string) => `${this.#store.onShard(shardOfName(id))}:dest:${id}`;
  /** A shard's destinations with recent activity, by last activity (Unix ms): what metrics read. */
  destinations = (shard: number) => `${this.#store.onShard(shard)}:destinations`;
  /** The shard of a destination's keys. */
  destinationShard = (id: string) => shardOfName(id);
  /** The destinations a workspace's callbacks went to lately, by last use: what its dashboard shows. */
  workspaceDestinations = (id: string) => `${this.#store.beside(id)}:ws:${id}:destinations`;
}
