import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import type { CallbackRecord, ImageJob } from '@media/domain';
import { JobRepository } from '@media/jobs';
import { LATENCY_BOUNDS_MS, latencyBucket, latencyQuantile, OVERVIEW_DESTINATION_CAP, OVERVIEW_TIERS, OverviewRepository } from '@media/storage';
import { CallbackRepository, type NewCallbackAttempt } from './callback-store';
import { allKeys } from '../../../test/support/store-keys';

const redis = new Redis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379');
const keys = allKeys(`test-${randomBytes(6).toString('hex')}`);
const callbacks = new CallbackRepository(redis, keys);
const jobs = new JobRepository(redis, keys);
const overview = new OverviewRepository(redis, keys, (workspaceId) => callbacks.pendingIndex(workspaceId));

afterAll(async () => {
  const found = (await Promise.all(keys.patterns.map((pattern) => redis.keys(pattern)))).flat();
  if (found.length > 0) await redis.del(...found);
  redis.disconnect();
});

const MINUTE = 60_000;
/** The start of the minute 59 minutes ago: the last hour's window runs from T0 to READ_AT, and its minute buckets are still kept. */
const T0 = Math.floor(Date.now() / MINUTE) * MINUTE - 59 * MINUTE;
const READ_AT = T0 + 59 * MINUTE + 1;
const newWorkspace = () => `ws_${randomBytes(6).toString('hex')}`;
let seq = 0;

async function newCallback(ws: string, url: string, createdMs: number): Promise<CallbackRecord> {
  const id = `msg_${randomBytes(6).toString('hex')}${seq++}`;
  const { callback } = await callbacks.create({
    id,
    workspace_id: ws,
    job_id: `req_${id}`,
    type: 'image.completed',
    url,
    event_ms: createdMs - 5,
    created_ms: createdMs,
    state: 'pending',
    attempt_count: 0,
    ladder_attempt: 0,
    next_attempt_ms: createdMs,
    delivered_ms: null,
    last_attempt_ms: null,
  });
  return callback;
}

const attempt = (
  ladder: number | null,
  sentMs: number,
  outcome: { status?: number | null; error?: NewCallbackAttempt['error']; durationMs?: number } = {},
): NewCallbackAttempt => ({
  ladder_attempt: ladder,
  trigger: ladder === null ? 'manual' : 'scheduled',
  sent_ms: sentMs,
  duration_ms: outcome.durationMs ?? 10,
  status: outcome.status === undefined ? 200 : outcome.status,
  error: outcome.error === undefined ? null : outcome.error,
  error_detail: null,
  address: '203.0.113.9',
  excerpt: '',
});
const fail503 = { status: 503, error: 'http_error' as const };

/** Records an attempt as the dispatcher does: with the callback as it read it just before. */
async function record(cb: CallbackRecord, field: string, a: NewCallbackAttempt, next: number | null, nowMs: number): Promise<CallbackRecord> {
  return (await callbacks.recordAttempt(cb, field, a, next, nowMs)).callback;
}

const slotAt = (reading: Awaited<ReturnType<OverviewRepository['read']>>, ms: number) =>
  reading.slots.find((s) => s.startMs <= ms && ms < s.startMs + reading.slotMs)!;

describe('Overview aggregates', () => {
  it("counts a callback's creation, attempts, failure to its destination and delivery, each once, in the minute it happened", async () => {
    const ws = newWorkspace();
    // At the start of a quarter hour, so that both attempts fall in one quarter (and one hour) below
    // whatever the time the test runs at.
    const created = Math.ceil((T0 + MINUTE) / (15 * MINUTE)) * 15 * MINUTE + 1_000;
    let cb = await newCallback(ws, 'https://hooks.example.test/a?token=secret', created);
    cb = await record(cb, 'auto.1', attempt(1, created + 2, { ...fail503, durationMs: 20 }), created + MINUTE, created + 30);
    // A re-run of attempt 1 after a crash: the log keeps the first one, and nothing is counted again.
    await record(cb, 'auto.1', attempt(1, created + 500, fail503), created + MINUTE, created + 520);
    cb = await record(cb, 'auto.2', attempt(2, created + MINUTE, { durationMs: 900 }), null, created + MINUTE + 950);
    expect(cb.state).toBe('delivered');
    // A replayed creation is not a new callback either.
    await callbacks.create({ ...cb, created_ms: created + 2 * MINUTE, state: 'pending' });

    const reading = await overview.read(ws, '1h', READ_AT);
    const first = slotAt(reading, created);
    const second = slotAt(reading, created + MINUTE);
    expect(first).toMatchObject({ created: 1, attempts: 1, failedAttempts: 1, firstAttempts: 1, firstAttemptsDelivered: 0, delivered: 0 });
    expect(second).toMatchObject({ created: 0, attempts: 1, failedAttempts: 0, firstAttempts: 0, delivered: 1, failed: 0 });
    // From the job's end (5 ms before creation) to the 2xx: about a minute.
    expect(second.latency[latencyBucket(MINUTE + 905)]).toBe(1);
    expect(reading.slots.reduce((sum, s) => sum + s.attempts, 0)).toBe(2);
    expect(reading.destinations).toEqual([
      { origin: 'https://hooks.example.test:443', failedAttempts: 1, lastFailureMs: created + 2, lastError: 'http_error', lastStatus: 503 },
    ]);
    // The quarter-hour and hour tiers hold the same events.
    const day = await overview.read(ws, '24h', READ_AT);
    expect(slotAt(day, created)).toMatchObject({ created: 1, attempts: 2, delivered: 1, firstAttempts: 1 });
    const week = await overview.read(ws, '7d', READ_AT);
    expect(slotAt(week, created)).toMatchObject({ created: 1, attempts: 2, delivered: 1, failedAttempts: 1 });
    expect(week.destinations[0]?.failedAttempts).toBe(1);
  });

  it('counts a callback that ends failed after its last attempt, one given up, and a failed one recovered later', async () => {
    const ws = newWorkspace();
    const at = T0 + 20 * MINUTE;
    let ladder = await newCallback(ws, 'https://down.example.test/', at);
    for (let n = 1; n <= 6; n++)
      ladder = await record(ladder, `auto.${n}`, attempt(n, at + n, { status: null, error: 'refused' }), n < 6 ? at + n + 1 : null, at + n);
    expect(ladder.state).toBe('failed');
    const gone = await newCallback(ws, 'https://down.example.test/', at);
    expect((await callbacks.giveUp(gone, at + 10))?.state).toBe('failed');
    await callbacks.giveUp(gone, at + 11); // already failed: counts nothing
    // A recovery's manual attempt delivers the failed one a minute later.
    await record(ladder, 'manual.rcv1', attempt(null, at + MINUTE), null, at + MINUTE + 10);

    const reading = await overview.read(ws, '1h', READ_AT);
    expect(slotAt(reading, at)).toMatchObject({ created: 2, failed: 2, attempts: 6, failedAttempts: 6, firstAttempts: 1, delivered: 0 });
    expect(slotAt(reading, at + MINUTE)).toMatchObject({ recovered: 1, delivered: 0, attempts: 1 });
    expect(reading.destinations).toEqual([
      { origin: 'https://down.example.test:443', failedAttempts: 6, lastFailureMs: at + 6, lastError: 'refused', lastStatus: null },
    ]);
  });

  it('reads pending over time from the pending count now and what each slot created and ended', async () => {
    const ws = newWorkspace();
    const now = READ_AT;
    const a = await newCallback(ws, 'https://r.example.test/', T0 + 30 * MINUTE);
    await newCallback(ws, 'https://r.example.test/', T0 + 31 * MINUTE);
    await newCallback(ws, 'https://r.example.test/', T0 + 31 * MINUTE + 1);
    await record(a, 'auto.1', attempt(1, T0 + 40 * MINUTE), null, T0 + 40 * MINUTE);
    const reading = await overview.read(ws, '1h', now);
    expect(reading.pendingNow).toBe(2);
    const pendingAt = (minute: number) => slotAt(reading, T0 + minute * MINUTE).pendingAtEnd;
    expect([pendingAt(29), pendingAt(30), pendingAt(31), pendingAt(39), pendingAt(40), pendingAt(58)]).toEqual([0, 1, 3, 3, 2, 2]);
  });

  it('keeps earlier pending figures when a pending callback goes with its job, counting its removal once', async () => {
    const ws = newWorkspace();
    const a = await newCallback(ws, 'https://r.example.test/', T0 + 30 * MINUTE);
    const b = await newCallback(ws, 'https://r.example.test/', T0 + 31 * MINUTE);
    // Its job deleted (DELETE /v1/videos/{id}) while it was on its ladder, now.
    expect(await callbacks.remove(b.id, 'with-its-job')).toBe(true);
    expect(await callbacks.remove(b.id, 'with-its-job')).toBe(false);
    expect(await callbacks.remove(a.id, Date.now())).toBe(false); // retention keeps a pending one, and counts nothing
    const reading = await overview.read(ws, '1h', Date.now());
    expect(reading.pendingNow).toBe(1);
    const pendingAt = (minute: number) => slotAt(reading, T0 + minute * MINUTE).pendingAtEnd;
    expect([pendingAt(29), pendingAt(30), pendingAt(31), pendingAt(58)]).toEqual([0, 1, 2, 2]);
    expect(reading.slots.at(-1)!.pendingAtEnd).toBe(1);
    expect(reading.slots.reduce((sum, slot) => sum + slot.withdrawn, 0)).toBe(1);
  });

  it('names at most the cap of destinations in a bucket and counts the rest as other', async () => {
    const ws = newWorkspace();
    const at = T0 + 45 * MINUTE;
    for (let i = 0; i < OVERVIEW_DESTINATION_CAP + 4; i++) {
      const cb = await newCallback(ws, `https://r${i}.example.test/`, at);
      await record(cb, 'auto.1', attempt(1, at + i, { status: null, error: 'timeout' }), at + MINUTE, at + i);
    }
    const reading = await overview.read(ws, '1h', READ_AT);
    expect(reading.destinations).toHaveLength(OVERVIEW_DESTINATION_CAP);
    expect(reading.otherDestinationFailures).toBe(4);
    expect(await redis.hlen(keys.overviewBucket(ws, 'm', Math.floor(at / MINUTE)))).toBeLessThanOrEqual(2 * OVERVIEW_DESTINATION_CAP + 12);
  });

  it('keeps no failure of a dispatcher that could not make the attempt against the destination', async () => {
    const ws = newWorkspace();
    const at = T0 + 50 * MINUTE;
    const cb = await newCallback(ws, 'https://fine.example.test/', at);
    await record(cb, 'auto.1', { ...attempt(1, at, { status: null, error: 'dispatcher_error' }), error_detail: 'Connection is closed.' }, at + MINUTE, at);
    const reading = await overview.read(ws, '1h', READ_AT);
    expect(slotAt(reading, at)).toMatchObject({ attempts: 1, failedAttempts: 1 });
    expect(reading.destinations).toEqual([]);
  });

  it('counts finished jobs and their charges per UTC day, each finish once', async () => {
    const ws = newWorkspace();
    const now = Date.now();
    const job = (id: string): ImageJob => ({
      id,
      kind: 'image',
      operation: 'generation',
      workspace_id: ws,
      model: 'pixel-1',
      prompt: 'p',
      seed: 1,
      status: 'queued',
      created_ms: now,
      finished_ms: null,
      cost: null,
      error: null,
      callback_url: null,
      request_id: id,
      n: 1,
      size: '256x256',
      output_format: 'png',
      response_format: 'url',
      inputs: [],
      mask: null,
      outputs: [],
    });
    const [a, b, c] = ['req_ova', 'req_ovb', 'req_ovc'].map((i) => `${i}${seq++}`) as [string, string, string];
    for (const id of [a, b, c]) await jobs.create(job(id));
    const done = (id: string, finishedMs: number): ImageJob => ({ ...job(id), status: 'completed', finished_ms: finishedMs, cost: 0.02 });
    const charge = (id: string, amount: number, at: number) => ({ job_id: id, workspace_id: ws, model: 'pixel-1', amount, created_ms: at });
    expect(await jobs.finish(done(a, now), charge(a, 0.02, now))).toBe(true);
    // A repeated finish (a worker's retry) is neither charged nor counted again.
    expect(await jobs.finish(done(a, now + 5), charge(a, 0.02, now + 5))).toBe(false);
    await jobs.finish(done(b, now + 1), charge(b, 0.035, now + 1));
    await jobs.finish({ ...job(c), status: 'failed', finished_ms: now + 2, error: { code: 'generation_failed', message: 'x' } }, null);

    const reading = await overview.read(ws, '1h', now + 10);
    expect(reading.days).toHaveLength(7);
    expect(reading.days.at(-1)).toEqual({ startMs: Math.floor(now / 86_400_000) * 86_400_000, jobsCompleted: 2, jobsFailed: 1, chargedMicros: 55_000 });
    expect(reading.days.slice(0, 6).every((d) => d.jobsCompleted === 0 && d.chargedMicros === 0)).toBe(true);
  });

  it('lets every bucket expire a fixed time after its slot ends', async () => {
    const ws = newWorkspace();
    const at = Date.now();
    await newCallback(ws, 'https://r.example.test/', at);
    for (const tier of [OVERVIEW_TIERS.minute, OVERVIEW_TIERS.quarter, OVERVIEW_TIERS.hour]) {
      const slot = Math.floor(at / tier.slotMs);
      const expected = (slot + 1) * tier.slotMs + tier.keepMs - Date.now();
      const ttl = await redis.pttl(keys.overviewBucket(ws, tier.name, slot));
      expect(Math.abs(ttl - expected)).toBeLessThan(5_000);
    }
  });

  it('never fails the change it counts: with its buckets unwritable, the callback is made, attempted and ended all the same', async () => {
    const ws = newWorkspace();
    const at = Date.now();
    // Every bucket of that moment holds a string: each HINCRBY into it fails with WRONGTYPE.
    for (const tier of [OVERVIEW_TIERS.minute, OVERVIEW_TIERS.quarter, OVERVIEW_TIERS.hour]) {
      await redis.set(keys.overviewBucket(ws, tier.name, Math.floor(at / tier.slotMs)), 'not a hash');
    }
    const cb = await newCallback(ws, 'https://r.example.test/', at);
    const after = await record(cb, 'auto.1', attempt(1, at + 10, fail503), at + 60_000, at + 20);
    expect(after).toMatchObject({ state: 'pending', attempt_count: 1, next_attempt_ms: at + 60_000 });
    expect(await callbacks.attempts(cb.id)).toHaveLength(1);
    expect((await callbacks.giveUp(after, at + 30))?.state).toBe('failed');
    // Nothing was counted, and the buckets were left as they were.
    expect(await redis.get(keys.overviewBucket(ws, OVERVIEW_TIERS.minute.name, Math.floor(at / MINUTE)))).toBe('not a hash');
  });

  it('reads a window of its tier only: 60 minutes, 96 quarter hours, 168 hours', async () => {
    const ws = newWorkspace();
    const now = Date.now();
    for (const [window, n, slotMs] of [
      ['1h', 60, OVERVIEW_TIERS.minute.slotMs],
      ['24h', 96, OVERVIEW_TIERS.quarter.slotMs],
      ['7d', 168, OVERVIEW_TIERS.hour.slotMs],
    ] as const) {
      const reading = await overview.read(ws, window, now);
      expect(reading.slots).toHaveLength(n);
      expect(reading.slotMs).toBe(slotMs);
      expect(reading.slots.at(-1)!.startMs).toBe(Math.floor(now / slotMs) * slotMs);
    }
  });
});

describe('latency quantiles', () => {
  const histogram = (entries: Record<number, number>) => Array.from({ length: LATENCY_BOUNDS_MS.length + 1 }, (_, i) => entries[i] ?? 0);

  it('puts a latency in the first bucket whose bound holds it', () => {
    expect(latencyBucket(0)).toBe(0);
    expect(latencyBucket(5)).toBe(0);
    expect(latencyBucket(6)).toBe(1);
    expect(latencyBucket(1_200)).toBe(LATENCY_BOUNDS_MS.indexOf(2_500));
    expect(latencyBucket(10 * 86_400_000)).toBe(LATENCY_BOUNDS_MS.length);
  });

  it('interpolates inside the bucket the quantile falls in', () => {
    // 90 deliveries of at most 5 ms, 10 between 1 s and 2.5 s.
    const h = histogram({ 0: 90, [latencyBucket(1_200)]: 10 });
    expect(latencyQuantile(h, 0.5)).toBeCloseTo(2.78, 1);
    expect(latencyQuantile(h, 0.95)).toBe(1_000 + 1_500 * 0.5);
    expect(latencyQuantile(histogram({}), 0.5)).toBeNull();
    expect(latencyQuantile(histogram({ [LATENCY_BOUNDS_MS.length]: 1 }), 0.5)).toBe(LATENCY_BOUNDS_MS.at(-1));
  });
});
