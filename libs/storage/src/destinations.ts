import type { Redis } from 'ioredis';
import type { AppConfig } from '@media/common';
import { leaseMsFor, SLOW_LANE_MS, type Destination, type DestinationLimits, type DestinationSignal, type DestinationStatus } from '@media/domain';
import type { StoreKeys } from './keys';
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
 * force of one destination's attempts are in flight at once, and an attempt that finds none free
 * is parked (it holds no worker) and woken, oldest due first, as slots come back. A slot is a
 * lease with a deadline, so one whose dispatcher died comes free by itself.
 */
export class DestinationGate {
  private readonly leaseMs: number;
  /** Destinations whose activity this process noted lately, by id. */
  private readonly active = new RecentNotes(TOUCH_EVERY_MS, TOUCHES_REMEMBERED);
  /** Workspaces' uses of destinations this process noted lately, by `workspace destination`. */
  private readonly used = new RecentNotes(TOUCH_EVERY_MS, TOUCHES_REMEMBERED);

  constructor(
    private readonly redis: Redis,
    private readonly keys: StoreKeys,
    private readonly limits: DestinationLimits,
  ) {
    this.leaseMs = leaseMsFor(limits);
  }

  async acquire(request: SlotRequest): Promise<SlotAnswer> {
    const { destination: d } = request;
    const noteActivity = this.active.due(d.id, request.nowMs);
    const [reply] = (await Promise.all([
      ACQUIRE.run(
        this.redis,
        [
          this.keys.destinationLeases(d.id),
          this.keys.destinationParked(d.id),
          this.keys.destinationState(d.id),
          this.keys.destinations(this.keys.destinationShard(d.id)),
        ],
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
      [this.keys.workspaceDestinations(workspaceId)],
      [destinationId, nowMs, IDLE_KEEP_MS, WORKSPACE_DESTINATIONS_KEPT],
    ).catch(() => this.used.forget(pair));
  }

  /** Gives the slot back with what the attempt said about the destination; returns the parked attempts woken. */
  async release(destination: Destination, leaseId: string, signal: DestinationSignal, nowMs: number): Promise<string[]> {
    const reply = (await RELEASE.run(
      this.redis,
      [this.keys.destinationLeases(destination.id), this.keys.destinationParked(destination.id), this.keys.destinationState(destination.id)],
      [leaseId, nowMs, this.leaseMs, this.limits.maxInFlight, this.limits.slowMaxInFlight, signal.slow ? SLOW_LANE_MS : 0, signal.throttleMs, IDLE_KEEP_MS],
    )) as (number | string)[];
    return reply.slice(1).map(String);
  }

  /** Whether a slot is held in this job's name: a parked attempt can be woken before its delayed job exists. */
  async holds(destination: Destination, leaseId: string): Promise<boolean> {
    return (await this.redis.zscore(this.keys.destinationLeases(destination.id), leaseId)) !== null;
  }

  /** Destinations with activity in the last quarter hour, over every workspace and shard (metrics). */
  async recent(nowMs: number): Promise<DestinationStatus[]> {
    const perShard = await Promise.all(this.keys.shards.map((shard) => this.redis.zrangebyscore(this.keys.destinations(shard), nowMs - RECENT_MS, '+inf')));
    return this.statuses(perShard.flat(), nowMs);
  }

  /** The destinations a workspace's callbacks went to lately, most recent first (its dashboard). */
  async ofWorkspace(workspaceId: string, nowMs: number): Promise<DestinationStatus[]> {
    const ids = await this.redis.zrevrangebyscore(this.keys.workspaceDestinations(workspaceId), '+inf', nowMs - IDLE_KEEP_MS);
    return this.statuses(ids, nowMs);
  }

  private async statuses(ids: string[], nowMs: number): Promise<DestinationStatus[]> {
    return Promise.all(
      ids.map(async (id) => {
        const [inFlight, deferred, limit, origin, slowUntil, throttledUntil] = (await STATUS.run(
          this.redis,
          [this.keys.destinationLeases(id), this.keys.destinationParked(id), this.keys.destinationState(id)],
          [nowMs, this.limits.maxInFlight, this.limits.slowMaxInFlight],
        )) as [number, number, number, string, number, number];
        return {
          id,
          origin: origin || '(unknown)',
          inFlight,
          deferred,
          limit,
          slowUntilMs: slowUntil || null,
          throttledUntilMs: throttledUntil || null,
        };
      }),
    );
  }
}
