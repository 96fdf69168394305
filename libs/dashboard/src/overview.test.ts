import { LATENCY_BOUNDS_MS, latencyBucket, type OverviewReading, type OverviewSlot } from '@media/storage';
import { OverviewView } from './overview';

const NOW = Date.UTC(2026, 10, 26, 14, 30, 20);
const MINUTE = 60_000;

function slot(startMs: number, counts: Partial<OverviewSlot> = {}, latencies: number[] = []): OverviewSlot {
  const latency = Array.from({ length: LATENCY_BOUNDS_MS.length + 1 }, () => 0);
  for (const ms of latencies) latency[latencyBucket(ms)]!++;
  return {
    startMs,
    created: 0,
    delivered: 0,
    recovered: 0,
    failed: 0,
    withdrawn: 0,
    attempts: 0,
    failedAttempts: 0,
    firstAttempts: 0,
    firstAttemptsDelivered: 0,
    latency,
    pendingAtEnd: 0,
    ...counts,
  };
}

function view(reading: OverviewReading) {
  return new OverviewView({
    overview: { read: async () => reading },
    retryScheduleMs: [60_000, 300_000],
    callbackAdmin: {
      previewRecovery: async (_ws, window) => ({ sinceMs: window.sinceMs, untilMs: NOW, origin: window.origin ?? null, count: 4, ratePerSecond: 5 }),
      recover: async (_ws, window) => ({ id: 'rcv_1', sinceMs: window.sinceMs, untilMs: NOW, origin: window.origin ?? null, count: 4, ratePerSecond: 5 }),
    },
    now: () => NOW,
  });
}

describe('OverviewView', () => {
  const start = Math.floor(NOW / MINUTE) * MINUTE - MINUTE;
  const reading: OverviewReading = {
    window: '1h',
    slotMs: MINUTE,
    slots: [
      slot(
        start,
        { created: 10, delivered: 8, attempts: 12, failedAttempts: 4, firstAttempts: 10, firstAttemptsDelivered: 8, pendingAtEnd: 2 },
        [3, 3, 3, 4, 4, 4, 4, 4],
      ),
      slot(
        start + MINUTE,
        { created: 2, delivered: 1, recovered: 1, failed: 1, attempts: 3, failedAttempts: 1, firstAttempts: 2, firstAttemptsDelivered: 1, pendingAtEnd: 2 },
        [1_800, 40_000],
      ),
    ],
    pendingNow: 2,
    destinations: Array.from({ length: 12 }, (_, i) => ({
      origin: `https://r${i}.example.test:443`,
      failedAttempts: 12 - i,
      lastFailureMs: NOW - i * 1_000,
      lastError: i === 0 ? 'http_error' : 'timeout',
      lastStatus: i === 0 ? 503 : null,
    })),
    otherDestinationFailures: 5,
    days: [{ startMs: Date.UTC(2026, 10, 26), jobsCompleted: 3, jobsFailed: 1, chargedMicros: 55_000 }],
  };

  it('adds the window up, histograms included, and keeps pending as the count now', async () => {
    const overview = await view(reading).overview('ws_1', '1h');
    expect(overview.totals).toEqual({
      created: 12,
      delivered: 9,
      recovered: 1,
      failed: 1,
      pending: 2,
      attempts: 15,
      failed_attempts: 5,
      first_attempts: 12,
      first_attempts_delivered: 9,
      first_attempt_success_rate: 0.75,
      latency_p50_ms: 3,
      // 10 deliveries: the 95th percentile is the slowest, in the 30 s-1 min bucket.
      latency_p95_ms: 45_000,
    });
    expect(overview.series.map((p) => [p.at, p.first_attempt_success_rate, p.latency_p95_ms])).toEqual([
      [start / 1000, 0.8, 5],
      [start / 1000 + 60, 0.5, 57_000],
    ]);
    expect(overview.step_seconds).toBe(60);
    expect(overview.latency_cap_ms).toBe(43_200_000);
    // What the page says a failing callback's ladder takes: the schedule's gaps.
    expect(overview.ladder_seconds).toBe(360);
  });

  it('lists the ten destinations failing most and counts the rest as other', async () => {
    const overview = await view(reading).overview('ws_1', '1h');
    expect(overview.destinations).toHaveLength(10);
    expect(overview.destinations[0]).toEqual({
      origin: 'https://r0.example.test:443',
      failed_attempts: 12,
      last_failure_at: Math.floor(NOW / 1000),
      last_error: 'http_error',
      last_status: 503,
    });
    // Two unnamed past the tenth (2 + 1 attempts), and 5 the buckets could not name.
    expect(overview.other_destination_failures).toBe(8);
    expect(overview.days).toEqual([{ date: '2026-11-26', jobs_completed: 3, jobs_failed: 1, charged: 0.055 }]);
  });

  it('says how many failed callbacks a retry to one destination would send, then sends them', async () => {
    expect(await view(reading).previewRecovery('ws_1', 'https://r0.example.test:443')).toEqual({
      destination: 'https://r0.example.test:443',
      count: 4,
      rate_per_second: 5,
    });
    expect(await view(reading).recover('ws_1', 'https://r0.example.test:443')).toEqual({
      id: 'rcv_1',
      destination: 'https://r0.example.test:443',
      count: 4,
      rate_per_second: 5,
    });
  });
});
