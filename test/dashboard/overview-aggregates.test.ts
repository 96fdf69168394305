import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { CallbackRepository, type NewCallbackAttempt } from '@media/callbacks';
import type { CallbackRecord, ImageJob } from '@media/domain';
import { JobRepository } from '@media/jobs';
import { OverviewRepository, OVERVIEW_TIERS } from '@media/storage';
import { PrivateRedis } from '../support/private-redis';
import { deleteKeysUnder, keysUnder, REDIS_URL } from '../support/stack';
import { allKeys } from '../support/store-keys';

/**
 * The Overview's aggregates as production keeps them: on a Redis with AOF, through a crash and
 * restart; and what they cost in memory, per workspace, when every minute of a day has traffic.
 */
jest.setTimeout(120_000);

const MINUTE = 60_000;

/** The store's writes that the Overview counts, on one Redis under one prefix. */
class Store {
  readonly keys = allKeys(`test-${randomBytes(6).toString('hex')}`);
  readonly callbacks: CallbackRepository;
  readonly jobs: JobRepository;
  readonly overview: OverviewRepository;
  private seq = 0;
  private readonly tag = randomBytes(4).toString('hex');

  constructor(readonly redis: Redis) {
    this.callbacks = new CallbackRepository(redis, this.keys);
    this.jobs = new JobRepository(redis, this.keys);
    this.overview = new OverviewRepository(redis, this.keys, (workspaceId) => this.callbacks.pendingIndex(workspaceId));
  }

  async callback(ws: string, url: string, atMs: number): Promise<CallbackRecord> {
    const id = `msg_${this.tag}${this.seq++}`;
    const { callback } = await this.callbacks.create({
      id,
      workspace_id: ws,
      job_id: `req_${id}`,
      type: 'image.completed',
      url,
      event_ms: atMs - 3,
      created_ms: atMs,
      state: 'pending',
      attempt_count: 0,
      ladder_attempt: 0,
      next_attempt_ms: atMs,
      delivered_ms: null,
      last_attempt_ms: null,
    });
    return callback;
  }

  /** Attempt 1 at `atMs`: delivered after `durationMs`, or failed with `error`. */
  async firstAttempt(cb: CallbackRecord, atMs: number, outcome: { durationMs?: number; error?: 'timeout' | 'http_error' }): Promise<void> {
    const attempt: NewCallbackAttempt = {
      ladder_attempt: 1,
      trigger: 'scheduled',
      sent_ms: atMs,
      duration_ms: outcome.durationMs ?? 4,
      status: outcome.error === 'timeout' ? null : outcome.error ? 503 : 200,
      error: outcome.error ?? null,
      error_detail: null,
      address: '203.0.113.5',
      excerpt: '',
    };
    await this.callbacks.recordAttempt(cb, 'auto.1', attempt, outcome.error ? atMs + MINUTE : null, atMs + attempt.duration_ms);
  }

  async finishedJob(ws: string, atMs: number, amount: number): Promise<void> {
    const id = `req_${this.tag}${this.seq++}`;
    const job: ImageJob = {
      id,
      kind: 'image',
      operation: 'generation',
      workspace_id: ws,
      model: 'pixel-1',
      prompt: 'a harbour',
      seed: 1,
      status: 'queued',
      created_ms: atMs,
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
    };
    await this.jobs.create(job);
    await this.jobs.finish(
      { ...job, status: 'completed', finished_ms: atMs, cost: amount },
      { job_id: id, workspace_id: ws, model: 'pixel-1', amount, created_ms: atMs },
    );
  }
}

describe('Overview aggregates on a Redis with AOF', () => {
  let server: PrivateRedis;
  let redis: Redis;

  beforeAll(async () => {
    server = await PrivateRedis.start();
    redis = new Redis(server.url, { maxRetriesPerRequest: null });
  });

  afterAll(async () => {
    redis?.disconnect();
    await server?.destroy();
  });

  it('reads the same numbers after Redis is killed and restarted, and counts on at once (its scripts reloaded)', async () => {
    const store = new Store(redis);
    const ws = 'ws_aof';
    const now = Date.now();
    for (let i = 0; i < 5; i++) {
      const at = now - (20 - i) * MINUTE;
      await store.firstAttempt(await store.callback(ws, 'https://ok.example.test/h', at), at, { durationMs: 10 + i * 400 });
      await store.firstAttempt(await store.callback(ws, 'https://down.example.test/h', at + 1), at + 1, { error: 'http_error' });
      await store.finishedJob(ws, at, 0.02);
    }
    const before = await Promise.all((['1h', '24h', '7d'] as const).map((w) => store.overview.read(ws, w, now)));
    expect(before[0]!.slots.reduce((n, s) => n + s.attempts, 0)).toBe(10);
    expect(before[0]!.destinations).toEqual([expect.objectContaining({ origin: 'https://down.example.test:443', failedAttempts: 5, lastStatus: 503 })]);
    // Over the days: the jobs finished up to 20 minutes ago, which is yesterday just after midnight (UTC).
    const jobDays = (reading: (typeof before)[number]) =>
      reading.days.reduce((t, d) => ({ jobsCompleted: t.jobsCompleted + d.jobsCompleted, chargedMicros: t.chargedMicros + d.chargedMicros }), {
        jobsCompleted: 0,
        chargedMicros: 0,
      });
    expect(jobDays(before[2]!)).toEqual({ jobsCompleted: 5, chargedMicros: 100_000 });

    // A crash: only what `appendfsync always` wrote survives, which is every acknowledged write.
    await server.kill();
    await server.launch();
    const after = await Promise.all((['1h', '24h', '7d'] as const).map((w) => store.overview.read(ws, w, now)));
    expect(after).toEqual(before);

    // The restarted Redis has no scripts loaded: the next counted write reloads them and counts once.
    const at = now - MINUTE;
    await store.firstAttempt(await store.callback(ws, 'https://ok.example.test/h', at), at, {});
    const next = await store.overview.read(ws, '1h', now);
    expect(next.slots.reduce((n, s) => n + s.attempts, 0)).toBe(11);
    expect(next.slots.reduce((n, s) => n + s.created, 0)).toBe(11);
    expect(next.slots.reduce((n, s) => n + s.delivered, 0)).toBe(6);
  });
});

describe('Overview aggregates in memory', () => {
  const redis = new Redis(REDIS_URL);
  const store = new Store(redis);

  afterAll(async () => {
    await deleteKeysUnder(redis, store.keys.prefix);
    redis.disconnect();
  });

  it('hold a bounded amount per workspace: a day of traffic in every minute, and what a week of it keeps', async () => {
    const ws = 'ws_mem';
    const now = Date.now();
    const start = Math.floor(now / MINUTE) * MINUTE - 24 * 60 * MINUTE;
    // Every minute of the last 24 hours: three callbacks, two delivered (latencies in three
    // histogram buckets), one failing at one of three destinations; a finished, charged job.
    for (let m = 0; m < 24 * 60; m++) {
      const at = start + m * MINUTE + 1_000;
      const [a, b, c] = await Promise.all([
        store.callback(ws, 'https://ok.example.test/h', at),
        store.callback(ws, 'https://ok.example.test/h', at),
        store.callback(ws, `https://down${m % 3}.example.test/h`, at),
      ]);
      await Promise.all([
        store.firstAttempt(a!, at, { durationMs: 5 + (m % 3) * 40 }),
        store.firstAttempt(b!, at, { durationMs: 900 }),
        store.firstAttempt(c!, at, { error: m % 2 ? 'timeout' : 'http_error' }),
        m % 10 === 0 ? store.finishedJob(ws, at, 0.02) : undefined,
      ]);
    }
    // Only the Overview's keys: the callbacks themselves are measured by `npm run bench` (memory).
    const prefix = store.keys.overviewBucket(ws, 'x', 0).replace(/:x:0$/, '');
    const found = (await keysUnder(redis, store.keys.prefix)).filter(({ key }) => key.startsWith(`${prefix}:`));
    const bytes: Record<string, { keys: number; bytes: number }> = {};
    for (const { key } of found) {
      const tier = key.slice(prefix.length + 1).split(':')[0]!;
      const size = Number(await redis.memory('USAGE', key, 'SAMPLES', 0));
      bytes[tier] = { keys: (bytes[tier]?.keys ?? 0) + 1, bytes: (bytes[tier]?.bytes ?? 0) + size };
    }
    const per = (tier: string) => bytes[tier]!.bytes / bytes[tier]!.keys;
    // What the tiers keep once traffic has run for longer than the longest of them: each its number of slots.
    const kept = (tier: (typeof OVERVIEW_TIERS)[keyof typeof OVERVIEW_TIERS]) => Math.ceil((tier.slotMs + tier.keepMs) / tier.slotMs);
    const steady =
      per('m') * kept(OVERVIEW_TIERS.minute) +
      per('q') * kept(OVERVIEW_TIERS.quarter) +
      per('h') * kept(OVERVIEW_TIERS.hour) +
      per('d') * kept(OVERVIEW_TIERS.day);
    const day = per('h') * 24 + per('d');
    const summary = {
      per_bucket_bytes: Object.fromEntries(Object.keys(bytes).map((t) => [t, Math.round(per(t))])),
      live_keys: Object.fromEntries(Object.entries(bytes).map(([t, v]) => [t, v.keys])),
      per_day_kept_a_week_bytes: Math.round(day),
      steady_state_bytes: Math.round(steady),
    };
    process.stdout.write(`overview memory per workspace: ${JSON.stringify(summary)}\n`);
    // Expired minute buckets are gone already: only the last hour or so of them is kept.
    expect(bytes.m!.keys).toBeLessThanOrEqual(kept(OVERVIEW_TIERS.minute));
    expect(bytes.q!.keys).toBeLessThanOrEqual(kept(OVERVIEW_TIERS.quarter));
    expect(steady).toBeLessThan(256 * 1024);
  });
});
