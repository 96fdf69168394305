import type { Redis } from 'ioredis';
import type { StoreKeys } from './keys';

/**
 * The Overview's aggregates: what a workspace's callbacks and jobs did, counted per time slot as
 * the events happen, so that the dashboard's first page answers "what is going on" by reading a
 * fixed number of small hashes, never by scanning callbacks or jobs.
 *
 * Each event adds to one bucket per tier (the hash `StoreKeys.overviewBucket`; its fields and the
 * counting of each kind of event are in `lua/includes/overview-buckets.lua`), inside the script that
 * makes the event (the callback's creation, an attempt's record, a give-up, a job's finish), once that
 * script has written it: only what the write did is counted, so a re-run after a crash counts nothing
 * twice, and nothing is read a second time to find out what it did. A tier keeps its buckets for its
 * longest window and a little more, then Redis expires them: the memory a workspace holds is bounded
 * by the number of slots, whatever its traffic.
 */

/** A tier of buckets: how long one slot is, and how long its buckets are kept after their slot ends. */
export interface OverviewTier {
  name: 'm' | 'q' | 'h' | 'd';
  slotMs: number;
  keepMs: number;
}

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;

/** Minutes for the last hour, quarter hours for the last day, hours for the last week; days for jobs. */
export const OVERVIEW_TIERS = {
  minute: { name: 'm', slotMs: MINUTE, keepMs: HOUR + 5 * MINUTE },
  quarter: { name: 'q', slotMs: 15 * MINUTE, keepMs: DAY + HOUR },
  hour: { name: 'h', slotMs: HOUR, keepMs: 7 * DAY + 2 * HOUR },
  day: { name: 'd', slotMs: DAY, keepMs: 7 * DAY + 2 * HOUR },
} as const satisfies Record<string, OverviewTier>;

/** The tiers callback events are counted in. */
const CALLBACK_TIERS: readonly OverviewTier[] = [OVERVIEW_TIERS.minute, OVERVIEW_TIERS.quarter, OVERVIEW_TIERS.hour];

export type OverviewWindow = '1h' | '24h' | '7d';
export const OVERVIEW_WINDOWS: Record<OverviewWindow, { tier: OverviewTier; slots: number }> = {
  '1h': { tier: OVERVIEW_TIERS.minute, slots: 60 },
  '24h': { tier: OVERVIEW_TIERS.quarter, slots: 96 },
  '7d': { tier: OVERVIEW_TIERS.hour, slots: 168 },
};
/** Days of jobs and charges the Overview shows, today included, whatever its window. */
export const OVERVIEW_DAYS = 7;

/**
 * Upper bounds (ms, inclusive) of the delivery-latency histogram, from the job's end to the
 * receiver's 2xx; one more bucket counts everything above the last. Roughly log-spaced (1-2.5-5),
 * from the few milliseconds a healthy first attempt takes to the ladder's last attempt hours later,
 * so p50 and p95 are read to within a bucket at any scale.
 */
export const LATENCY_BOUNDS_MS: readonly number[] = [
  5, 10, 25, 50, 100, 250, 500, 1_000, 2_500, 5_000, 10_000, 30_000, 60_000, 300_000, 1_800_000, 7_200_000, 43_200_000,
];

/** Destinations one bucket names by origin; failures to any further ones count as "other". */
export const OVERVIEW_DESTINATION_CAP = 16;
/** The bucket field under which failures past the cap are counted. */
const OTHER_DESTINATIONS = '*';

/** The histogram bucket of a latency. */
export function latencyBucket(ms: number): number {
  const i = LATENCY_BOUNDS_MS.findIndex((bound) => ms <= bound);
  return i === -1 ? LATENCY_BOUNDS_MS.length : i;
}

/**
 * The `q` quantile (0-1) of a latency histogram, in ms: interpolated linearly inside the bucket
 * it falls in, as Prometheus's histogram_quantile does; in the bucket above the last bound, that
 * bound (the figure then reads "at least"). Null for an empty histogram.
 */
export function latencyQuantile(histogram: readonly number[], q: number): number | null {
  const total = histogram.reduce((sum, n) => sum + n, 0);
  if (total === 0) return null;
  const rank = q * total;
  let below = 0;
  for (let i = 0; i < histogram.length; i++) {
    const count = histogram[i] ?? 0;
    if (count > 0 && below + count >= rank) {
      if (i >= LATENCY_BOUNDS_MS.length) return LATENCY_BOUNDS_MS.at(-1)!;
      const low = i === 0 ? 0 : LATENCY_BOUNDS_MS[i - 1]!;
      const high = LATENCY_BOUNDS_MS[i]!;
      return low + ((high - low) * Math.max(0, rank - below)) / count;
    }
    below += count;
  }
  return LATENCY_BOUNDS_MS.at(-1)!;
}

/** The facts about one attempt that its counting needs; the record knows the rest. */
export interface AttemptToCount {
  workspaceId: string;
  /** The destination's origin; its failures are counted against it. */
  origin: string;
  /** When the job ended: latency is measured from there. */
  eventMs: number;
  sentMs: number;
  durationMs: number;
  status: number | null;
  error: string | null;
  /** The record's now: when the attempt is counted. */
  nowMs: number;
}

/**
 * What the script that makes an event needs to count it: its buckets, to go after the script's own
 * KEYS, and the facts and the buckets' expiries, to go after its own ARGV (each script's header says
 * where they start).
 */
export interface OverviewCount {
  keys: string[];
  args: (string | number)[];
}

/** The Overview's part of each kind of event, for the repository whose script makes the event. */
export class OverviewCounters {
  constructor(private readonly keys: StoreKeys) {}

  /**
   * A callback's creation or its give-up (ended as failed without its last attempt) at `atMs`: the
   * event's buckets alone, as the script that makes it knows which of the two it counts.
   */
  callbackEvent(workspaceId: string, atMs: number): OverviewCount {
    const buckets = this.buckets(workspaceId, CALLBACK_TIERS, atMs);
    return { keys: buckets.keys, args: buckets.expiries };
  }

  /** One attempt, as its record is asked to store it. */
  attempt(a: AttemptToCount): OverviewCount {
    const buckets = this.buckets(a.workspaceId, CALLBACK_TIERS, a.nowMs);
    const delivered = a.error === null;
    // A dispatcher that could not make the attempt says nothing about the receiver.
    const againstDestination = !delivered && a.error !== 'dispatcher_error';
    return {
      keys: buckets.keys,
      args: [
        delivered ? latencyBucket(a.sentMs + a.durationMs - a.eventMs) : '',
        againstDestination ? a.origin : '',
        `${a.sentMs} ${a.error ?? '-'} ${a.status ?? '-'}`,
        OVERVIEW_DESTINATION_CAP,
        ...buckets.expiries,
      ],
    };
  }

  /** A job finished at `finishedMs` as `status`, and what it was charged (USD). */
  jobFinished(workspaceId: string, status: string, finishedMs: number, chargedUsd: number): OverviewCount {
    const buckets = this.buckets(workspaceId, [OVERVIEW_TIERS.day], finishedMs);
    // Micro-dollars: integers add up exactly, where binary fractions would drift.
    return { keys: buckets.keys, args: [status, Math.round(chargedUsd * 1e6), ...buckets.expiries] };
  }

  private buckets(workspaceId: string, tiers: readonly OverviewTier[], atMs: number): { keys: string[]; expiries: number[] } {
    const slots = tiers.map((tier) => ({ tier, slot: Math.floor(atMs / tier.slotMs) }));
    return {
      keys: slots.map(({ tier, slot }) => this.keys.overviewBucket(workspaceId, tier.name, slot)),
      expiries: slots.map(({ tier, slot }) => (slot + 1) * tier.slotMs + tier.keepMs),
    };
  }
}

/** One slot of the window. Counts are of events in the slot; `pendingAtEnd` is a level. */
export interface OverviewSlot {
  startMs: number;
  created: number;
  /** Callbacks that ended delivered (they were pending), and failed callbacks delivered later. */
  delivered: number;
  recovered: number;
  failed: number;
  /** Pending callbacks removed with their job (a DELETE): they left pending without ending. */
  withdrawn: number;
  attempts: number;
  failedAttempts: number;
  firstAttempts: number;
  firstAttemptsDelivered: number;
  /** Deliveries per latency bucket (`LATENCY_BOUNDS_MS`, and one above the last). */
  latency: number[];
  /**
   * Callbacks pending at the slot's end (now, for the last slot): the pending count now, less what
   * later slots created and plus what they ended or removed. Never below 0, as callbacks made before the
   * counting started may end inside the window.
   */
  pendingAtEnd: number;
}

/** A destination's failed attempts in the window, and its latest failure. */
export interface OverviewDestination {
  origin: string;
  failedAttempts: number;
  lastFailureMs: number;
  lastError: string;
  lastStatus: number | null;
}

export interface OverviewDay {
  startMs: number;
  jobsCompleted: number;
  jobsFailed: number;
  chargedMicros: number;
}

export interface OverviewReading {
  window: OverviewWindow;
  slotMs: number;
  slots: OverviewSlot[];
  pendingNow: number;
  /** Most failed attempts first. */
  destinations: OverviewDestination[];
  /** Failed attempts to destinations past a bucket's cap (not named). */
  otherDestinationFailures: number;
  /** The last `OVERVIEW_DAYS` UTC days, oldest first, today last. */
  days: OverviewDay[];
}

/**
 * Reads the Overview of one workspace: its window's buckets, its day buckets and the pending count,
 * in one round trip. The pending count is the size of the workspace's index of pending callbacks,
 * a key of @media/callbacks, which names it (`CallbackRepository.pendingIndex`).
 */
export class OverviewRepository {
  constructor(
    private readonly redis: Redis,
    private readonly keys: StoreKeys,
    private readonly pendingIndex: (workspaceId: string) => string,
  ) {}

  async read(workspaceId: string, window: OverviewWindow, nowMs: number): Promise<OverviewReading> {
    const { tier, slots: count } = OVERVIEW_WINDOWS[window];
    const lastSlot = Math.floor(nowMs / tier.slotMs);
    const slotIds = Array.from({ length: count }, (_, i) => lastSlot - count + 1 + i);
    const today = Math.floor(nowMs / DAY);
    const dayIds = Array.from({ length: OVERVIEW_DAYS }, (_, i) => today - OVERVIEW_DAYS + 1 + i);

    const pipeline = this.redis.pipeline();
    for (const slot of slotIds) pipeline.hgetall(this.keys.overviewBucket(workspaceId, tier.name, slot));
    for (const day of dayIds) pipeline.hgetall(this.keys.overviewBucket(workspaceId, OVERVIEW_TIERS.day.name, day));
    pipeline.zcard(this.pendingIndex(workspaceId));
    const replies = (await pipeline.exec()) ?? [];
    const values = replies.map(([err, value]) => {
      if (err) throw err;
      return value;
    });
    const buckets = values.slice(0, count) as Record<string, string>[];
    const dayBuckets = values.slice(count, count + OVERVIEW_DAYS) as Record<string, string>[];
    const pendingNow = Number(values[count + OVERVIEW_DAYS]);

    const n = (bucket: Record<string, string>, field: string) => Number(bucket[field] ?? 0);
    const slots: OverviewSlot[] = buckets.map((bucket, i) => {
      const latency = Array.from({ length: LATENCY_BOUNDS_MS.length + 1 }, (_, b) => n(bucket, `l${b}`));
      // Every delivery that ended a wait is in the histogram: a first attempt's, a later one's (d)
      // or a failed callback's (r); see overview-buckets.lua.
      const firstAttemptsDelivered = Math.max(0, latency.reduce((sum, count) => sum + count, 0) - n(bucket, 'd') - n(bucket, 'r'));
      return {
        startMs: slotIds[i]! * tier.slotMs,
        created: n(bucket, 'c'),
        delivered: firstAttemptsDelivered + n(bucket, 'd'),
        recovered: n(bucket, 'r'),
        failed: n(bucket, 'f'),
        withdrawn: n(bucket, 'w'),
        attempts: n(bucket, '1') + n(bucket, 'a'),
        failedAttempts: n(bucket, 'ae'),
        firstAttempts: n(bucket, '1'),
        firstAttemptsDelivered,
        latency,
        pendingAtEnd: 0,
      };
    });
    let pending = pendingNow;
    for (let i = slots.length - 1; i >= 0; i--) {
      const slot = slots[i]!;
      slot.pendingAtEnd = Math.max(0, pending);
      pending -= slot.created - slot.delivered - slot.failed - slot.withdrawn;
    }

    const destinations = new Map<string, OverviewDestination>();
    for (const bucket of buckets) {
      for (const [field, value] of Object.entries(bucket)) {
        if (!field.startsWith('x:')) continue;
        const origin = field.slice(2);
        const [sentMs, error, status] = (bucket[`e:${origin}`] ?? '0 - -').split(' ');
        const seen = destinations.get(origin) ?? { origin, failedAttempts: 0, lastFailureMs: 0, lastError: '', lastStatus: null };
        seen.failedAttempts += Number(value);
        if (Number(sentMs) >= seen.lastFailureMs) {
          seen.lastFailureMs = Number(sentMs);
          seen.lastError = error ?? '';
          seen.lastStatus = status && status !== '-' ? Number(status) : null;
        }
        destinations.set(origin, seen);
      }
    }
    const other = destinations.get(OTHER_DESTINATIONS);
    destinations.delete(OTHER_DESTINATIONS);

    return {
      window,
      slotMs: tier.slotMs,
      slots,
      pendingNow,
      destinations: [...destinations.values()].sort((a, b) => b.failedAttempts - a.failedAttempts || b.lastFailureMs - a.lastFailureMs),
      otherDestinationFailures: other?.failedAttempts ?? 0,
      days: dayBuckets.map((bucket, i) => ({
        startMs: dayIds[i]! * DAY,
        jobsCompleted: n(bucket, 'jc'),
        jobsFailed: n(bucket, 'jf'),
        chargedMicros: n(bucket, 'usd'),
      })),
    };
  }
}
