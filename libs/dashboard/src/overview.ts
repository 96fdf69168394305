import type { CallbackAdmin } from '@media/callbacks';
import { LATENCY_BOUNDS_MS, latencyQuantile, type OverviewRepository, type OverviewSlot, type OverviewWindow } from '@media/storage';
import type { Overview, OverviewPoint, RecoveryPreview, RecoveryStarted } from './contract';

/** Destinations the Overview lists. */
const TOP_DESTINATIONS = 10;

const seconds = (ms: number) => Math.floor(ms / 1000);
const rate = (part: number, whole: number) => (whole === 0 ? null : part / whole);
const round = (ms: number | null) => (ms === null ? null : Math.round(ms));

/**
 * The Overview page's reads, and its one action: retrying a destination's failed callbacks. The
 * numbers come from the aggregates (libs/storage overview.ts), never from the callbacks themselves.
 */
export class OverviewView {
  constructor(
    private readonly deps: {
      overview: Pick<OverviewRepository, 'read'>;
      callbackAdmin: Pick<CallbackAdmin, 'previewRecovery' | 'recover'>;
      retryScheduleMs: readonly number[];
      now?: () => number;
    },
  ) {}

  async overview(workspaceId: string, window: OverviewWindow): Promise<Overview> {
    const now = this.now();
    const reading = await this.deps.overview.read(workspaceId, window, now);
    const whole: OverviewSlot = reading.slots.reduce(
      (sum, s) => ({
        ...sum,
        created: sum.created + s.created,
        delivered: sum.delivered + s.delivered,
        recovered: sum.recovered + s.recovered,
        failed: sum.failed + s.failed,
        withdrawn: sum.withdrawn + s.withdrawn,
        attempts: sum.attempts + s.attempts,
        failedAttempts: sum.failedAttempts + s.failedAttempts,
        firstAttempts: sum.firstAttempts + s.firstAttempts,
        firstAttemptsDelivered: sum.firstAttemptsDelivered + s.firstAttemptsDelivered,
        latency: sum.latency.map((n, i) => n + (s.latency[i] ?? 0)),
      }),
      { ...emptySlot(reading.slots[0]?.latency.length ?? 0), pendingAtEnd: reading.pendingNow },
    );
    return {
      window,
      step_seconds: seconds(reading.slotMs),
      generated_at: seconds(now),
      totals: point(whole),
      series: reading.slots.map((slot) => ({ at: seconds(slot.startMs), ...point(slot) })),
      latency_cap_ms: LATENCY_BOUNDS_MS.at(-1)!,
      ladder_seconds: seconds(this.deps.retryScheduleMs.reduce((sum, gap) => sum + gap, 0)),
      destinations: reading.destinations.slice(0, TOP_DESTINATIONS).map((d) => ({
        origin: d.origin,
        failed_attempts: d.failedAttempts,
        last_failure_at: seconds(d.lastFailureMs),
        last_error: d.lastError,
        last_status: d.lastStatus,
      })),
      other_destination_failures: reading.otherDestinationFailures + reading.destinations.slice(TOP_DESTINATIONS).reduce((sum, d) => sum + d.failedAttempts, 0),
      currency: 'usd',
      days: reading.days.map((day) => ({
        date: new Date(day.startMs).toISOString().slice(0, 10),
        jobs_completed: day.jobsCompleted,
        jobs_failed: day.jobsFailed,
        charged: day.chargedMicros / 1e6,
      })),
    };
  }

  /** How many failed callbacks to `origin` a recovery would retry now: every one the workspace still keeps. */
  async previewRecovery(workspaceId: string, origin: string): Promise<RecoveryPreview> {
    const preview = await this.deps.callbackAdmin.previewRecovery(workspaceId, { sinceMs: 0, origin });
    return { destination: origin, count: preview.count, rate_per_second: preview.ratePerSecond };
  }

  async recover(workspaceId: string, origin: string): Promise<RecoveryStarted> {
    const recovery = await this.deps.callbackAdmin.recover(workspaceId, { sinceMs: 0, origin });
    return { id: recovery.id, destination: origin, count: recovery.count, rate_per_second: recovery.ratePerSecond };
  }

  private now(): number {
    return (this.deps.now ?? Date.now)();
  }
}

function emptySlot(buckets: number): OverviewSlot {
  return {
    startMs: 0,
    created: 0,
    delivered: 0,
    recovered: 0,
    failed: 0,
    withdrawn: 0,
    attempts: 0,
    failedAttempts: 0,
    firstAttempts: 0,
    firstAttemptsDelivered: 0,
    latency: Array.from({ length: buckets }, () => 0),
    pendingAtEnd: 0,
  };
}

function point(slot: OverviewSlot): Omit<OverviewPoint, 'at'> {
  return {
    created: slot.created,
    delivered: slot.delivered,
    failed: slot.failed,
    recovered: slot.recovered,
    pending: slot.pendingAtEnd,
    attempts: slot.attempts,
    failed_attempts: slot.failedAttempts,
    first_attempts: slot.firstAttempts,
    first_attempts_delivered: slot.firstAttemptsDelivered,
    first_attempt_success_rate: rate(slot.firstAttemptsDelivered, slot.firstAttempts),
    latency_p50_ms: round(latencyQuantile(slot.latency, 0.5)),
    latency_p95_ms: round(latencyQuantile(slot.latency, 0.95)),
  };
}
