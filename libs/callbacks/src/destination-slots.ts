import type { Redis } from 'ioredis';
import type { AppConfig } from '@media/common';
import {
  HOLD_REASONS,
  holdReasonOf,
  leaseMsFor,
  SLOW_LANE_MS,
  type Destination,
  type DestinationLimits,
  type DestinationSignal,
  type DestinationStatus,
  type HoldReason,
  type WorkspaceDestinationStatus,
} from './destination-policy';
import type { StoreKeys } from '@media/storage';
import { CallbackKeys } from './keys';
import { storeScript } from './lua';

const ACQUIRE = storeScript('destination-acquire');
const RELEASE = storeScript('destination-release');
const STATUS = storeScript('destination-status');
const TOUCH_WORKSPACE = storeScript('workspace-destination-touch');

/** Keys of a destination that sees no traffic go after this long; a day covers the ladder's longest gap. */
const IDLE_KEEP_MS = 86_400_000;
/** What metrics and the dashboard call recent activity. */
const RECENT_MS = 15 * 60_000;
/** How many destinations a workspace's list keeps (the latest used). */
const WORKSPACE_DESTINATIONS_KEPT = 50;
/**
 * How often one process notes a destination's activity (its place among its shard's recent
 * destinations, and the expiry of its state and that list) and a workspace's use of it: they are
 * read by the quarter hour and kept for a day, so a note a minute is plenty, and the attempts in
 * between cost no write for them.
 */
const TOUCH_EVERY_MS = 60_000;
/** Notes remembered per process before the memory is cleared (a busy dispatcher sees many pairs). */
const TOUCHES_REMEMBERED = 10_000;

/** Which keys this process noted lately, so that a note repeated within `everyMs` costs no write. */
class RecentNotes {
  private readonly lastMs = new Map<string, number>();

  constructor(
    private readonly everyMs: number,
    private readonly remembered: number,
  ) {}

  /** Whether `key` is due a note at `nowMs`; counts it as noted if so. */
  due(key: string, nowMs: number): boolean {
    if (nowMs - (this.lastMs.get(key) ?? -Infinity) < this.everyMs) return false;
    if (this.lastMs.size >= this.remembered) this.lastMs.clear();
    this.lastMs.set(key, nowMs);
    return true;
  }

  /** A note that could not be written: the next call is due again. */
  forget(key: string): void {
    this.lastMs.delete(key);
  }
}

/** The isolation settings of a deployment, as every process that builds a {@link DestinationGate} reads them. */
export const destinationLimits = (
  config: Pick<AppConfig, 'destinationMaxInFlight' | 'destinationSlowMaxInFlight' | 'webhookTimeoutMs'>,
): DestinationLimits => ({
  maxInFlight: config.destinationMaxInFlight,
  slowMaxInFlight: config.destinationSlowMaxInFlight,
  attemptTimeoutMs: config.webhookTimeoutMs,
});

/** One attempt asking for a slot. */
export interface SlotRequest {
  destination: Destination;
  workspaceId: string;
  /** The id of the job making the attempt: the slot is held in its name (and one reserved for it is found under it). */
  leaseId: string;
  /**
   * The id of the job the attempt goes on as if it is parked: its slot will be reserved under this
   * id. Undefined: an attempt that waits elsewhere when no slot is free (a recovery's, on its
   * workspace's pace) is not parked.
   */
  parkAs?: string;
  /** When the attempt became due: parked attempts are served in this order. */
  dueMs: number;
  nowMs: number;
}

export type SlotAnswer =
  /** `woken`: parked attempts that were handed a slot on the way, whose delayed jobs the caller promotes. */
  | { granted: true; woken: string[] }
  /**
   * No slot free: the attempt is parked (unless it asked not to be; then `wakeAtMs` is now and
   * `position` -1); `wakeAtMs` is when its turn comes at the latest (see the script).
   */
  | { granted: false; wakeAtMs: number; limit: number; position: number; woken: string[] };

/**
 * The slots of callback destinations, shared by every dispatcher through Redis: at most the cap in
 * force of one destination's attempts are in flight at once, every workspace together; inside it
 * each workspace has a share (lua/includes/destination-slots: a slow lane of its own, headroom it
 * cannot fill, its turn round robin). An attempt that may take no slot is parked in its
 * workspace's line (it holds no worker) and woken, one waiting workspace after another, as slots
 * come back. A slot is a lease with a deadline, so one whose dispatcher died comes free by itself.
 */
export class DestinationGate {
  private readonly leaseMs: number;
  /** Destinations whose activity this process noted lately, by id. */
  private readonly active = new RecentNotes(TOUCH_EVERY_MS, TOUCHES_REMEMBERED);
  /** Workspaces' uses of destinations this process noted lately, by `workspace destination`. */
  private readonly used = new RecentNotes(TOUCH_EVERY_MS, TOUCHES_REMEMBERED);

  private readonly callbackKeys: CallbackKeys;

  constructor(
    private readonly redis: Redis,
    private readonly keys: StoreKeys,
    private readonly limits: DestinationLimits,
  ) {
    this.callbackKeys = new CallbackKeys(keys);
    this.leaseMs = leaseMsFor(limits);
  }

  /** The keys of a destination's slots, in the order its scripts name them (lua/includes/destination-slots). */
  private slotKeys(id: string): string[] {
    const k = this.callbackKeys;
    return [
      k.destinationLeases(id),
      k.destinationParked(id),
      k.destinationState(id),
      k.destinationHolders(id),
      k.destinationShares(id),
      k.destinationLines(id),
      k.destinationTurns(id),
    ];
  }

  async acquire(request: SlotRequest): Promise<SlotAnswer> {
    const { destination: d } = request;
    const noteActivity = this.active.due(d.id, request.nowMs);
    const [reply] = (await Promise.all([
      ACQUIRE.run(
        this.redis,
        [...this.slotKeys(d.id), this.callbackKeys.destinations(this.callbackKeys.destinationShard(d.id))],
        [
          d.id,
          request.leaseId,
          request.nowMs,
          this.leaseMs,
          request.dueMs,
          this.limits.maxInFlight,
          this.limits.slowMaxInFlight,
          d.origin,
          IDLE_KEEP_MS,
          request.parkAs ?? '',
          noteActivity ? '1' : '',
          request.workspaceId,
        ],
      ).catch((err: unknown) => {
        if (noteActivity) this.active.forget(d.id);
        throw err;
      }),
      this.noteWorkspaceUse(request.workspaceId, d.id, request.nowMs),
    ])) as [(number | string)[], void];
    if (reply[0] === 1) return { granted: true, woken: reply.slice(2).map(String) };
    return { granted: false, wakeAtMs: Number(reply[1]), limit: Number(reply[2]), position: Number(reply[3]), woken: reply.slice(4).map(String) };
  }

  /**
   * Lists the destination among the workspace's, at most once a minute per pair and process. A
   * separate write because the two live on different shards (keys.ts); it runs beside the slot's.
   */
  private async noteWorkspaceUse(workspaceId: string, destinationId: string, nowMs: number): Promise<void> {
    const pair = `${workspaceId} ${destinationId}`;
    if (!this.used.due(pair, nowMs)) return;
    // Only a list for people: a note that could not be written must not fail the attempt (whose
    // slot may have been granted beside it); the next attempt writes it again.
    await TOUCH_WORKSPACE.run(
      this.redis,
      [this.callbackKeys.workspaceDestinations(workspaceId)],
      [destinationId, nowMs, IDLE_KEEP_MS, WORKSPACE_DESTINATIONS_KEPT],
    ).catch(() => this.used.forget(pair));
  }

  /**
   * Gives the slot back with what the attempt said about the destination and about the workspace
   * that made it (its own slow lane, its latest outcome); returns the parked attempts woken.
   */
  async release(destination: Destination, workspaceId: string, leaseId: string, signal: DestinationSignal, nowMs: number): Promise<string[]> {
    const delivered = signal.delivered === null ? '' : signal.delivered ? '1' : '0';
    const reply = (await RELEASE.run(this.redis, this.slotKeys(destination.id), [
      leaseId,
      nowMs,
      this.leaseMs,
      this.limits.maxInFlight,
      this.limits.slowMaxInFlight,
      SLOW_LANE_MS,
      signal.slow ? '1' : '',
      signal.fast ? '1' : '',
      signal.throttleMs,
      delivered,
      workspaceId,
      IDLE_KEEP_MS,
    ])) as (number | string)[];
    return reply.slice(1).map(String);
  }

  /** Whether a slot is held in this job's name: a parked attempt can be woken before its delayed job exists. */
  async holds(destination: Destination, leaseId: string): Promise<boolean> {
    return (await this.redis.zscore(this.callbackKeys.destinationLeases(destination.id), leaseId)) !== null;
  }

  /** Destinations with activity in the last quarter hour, over every workspace and shard (metrics). */
  async recent(nowMs: number): Promise<DestinationStatus[]> {
    const perShard = await Promise.all(
      this.keys.shards.map((shard) => this.redis.zrangebyscore(this.callbackKeys.destinations(shard), nowMs - RECENT_MS, '+inf')),
    );
    return Promise.all(perShard.flat().map(async (id) => destinationStatus(id, await this.status(id, '', nowMs))));
  }

  /** The destinations a workspace's callbacks went to lately, most recent first, each as the workspace's own share of it (its dashboard). */
  async ofWorkspace(workspaceId: string, nowMs: number): Promise<WorkspaceDestinationStatus[]> {
    const ids = await this.redis.zrevrangebyscore(this.callbackKeys.workspaceDestinations(workspaceId), '+inf', nowMs - IDLE_KEEP_MS);
    return Promise.all(
      ids.map(async (id) => {
        const reply = await this.status(id, workspaceId, nowMs);
        const [inFlight, deferred, limit, slowUntil, lastDelivered, lastFailed, failuresInRow] = reply.slice(11).map(Number) as number[];
        const share = {
          id,
          origin: String(reply[3]) || '(unknown)',
          inFlight: inFlight!,
          deferred: deferred!,
          limit: limit!,
          slowUntilMs: slowUntil || null,
          hostSlowUntilMs: Number(reply[4]) || null,
          throttledUntilMs: Number(reply[5]) || null,
          lastDeliveredMs: lastDelivered || null,
          lastFailedMs: lastFailed || null,
          failuresInRow: failuresInRow!,
        };
        return { ...share, heldBack: holdReasonOf(share, nowMs) };
      }),
    );
  }

  private async status(id: string, workspaceId: string, nowMs: number): Promise<(number | string)[]> {
    return (await STATUS.run(this.redis, this.slotKeys(id), [nowMs, this.limits.maxInFlight, this.limits.slowMaxInFlight, workspaceId])) as (number | string)[];
  }
}

/** The destination-wide part of a status script's answer. */
function destinationStatus(id: string, reply: (number | string)[]): DestinationStatus {
  const [inFlight, deferred, limit, origin, slowUntil, throttledUntil, slowWorkspaces, ...held] = reply;
  return {
    id,
    origin: String(origin) || '(unknown)',
    inFlight: Number(inFlight),
    deferred: Number(deferred),
    limit: Number(limit),
    slowUntilMs: Number(slowUntil) || null,
    throttledUntilMs: Number(throttledUntil) || null,
    slowWorkspaces: Number(slowWorkspaces),
    heldBack: Object.fromEntries(HOLD_REASONS.map((reason, i) => [reason, Number(held[i])])) as Record<HoldReason, number>,
  };
}
