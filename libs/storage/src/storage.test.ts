import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import {
  DEFAULT_RETRY_GAPS_MS,
  isLastAttempt,
  LADDER_ATTEMPTS,
  LEGACY_SHARD,
  nextAttemptAt,
  scheduledAttemptId,
  shardOfId,
  type JobRecord,
  type VideoJob,
} from '@media/domain';
import { IdempotencyRepository, idempotencyKeyHash } from './idempotency';
import { attemptKey, CallbackRepository } from './callbacks';
import { CorruptRecordError, JobRepository } from './jobs';
import { StoreKeys } from './keys';
import { LimitRepository } from './limits';
import { REMOVED_KEPT_MAX, REMOVED_KEPT_MS } from './index-page';

const redis = new Redis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379');
const keys = new StoreKeys(`test-${randomBytes(6).toString('hex')}`);
const jobs = new JobRepository(redis, keys);

afterAll(async () => {
  const found = (await Promise.all(keys.patterns.map((pattern) => redis.keys(pattern)))).flat();
  if (found.length > 0) await redis.del(...found);
  redis.disconnect();
});

const video = (id: string, created_ms: number): VideoJob => ({
  id,
  kind: 'video',
  workspace_id: 'ws_jobs',
  model: 'motion-1',
  prompt: 'p',
  seed: 1,
  status: 'queued',
  created_ms,
  finished_ms: null,
  cost: null,
  error: null,
  callback_url: null,
  request_id: 'req_x',
  seconds: 1,
  size: '640x360',
  generate_audio: false,
  progress: 0,
  output: null,
});

describe('JobRepository', () => {
  it('finishes and charges a job exactly once, and never overwrites a finished job', async () => {
    const job = video('video_once', Date.now());
    expect(await jobs.create(job)).toBe(true);
    expect(await jobs.create(job)).toBe(false);
    const done = { ...job, status: 'completed' as const, finished_ms: Date.now(), cost: 0.1 };
    const charge = { job_id: job.id, workspace_id: job.workspace_id, model: job.model, amount: 0.1, created_ms: Date.now() };
    const results = await Promise.all([jobs.finish(done, charge), jobs.finish(done, charge), jobs.finish({ ...done, status: 'failed' }, null)]);
    expect(results.filter(Boolean)).toHaveLength(1);
    const final = (await jobs.get(job.id))!;
    const charges = (await jobs.ledger('ws_jobs')).filter((e) => e.job_id === job.id);
    expect(charges).toHaveLength(final.status === 'completed' ? 1 : 0);
    expect(await jobs.updateActive({ ...job, status: 'in_progress', progress: 50 })).toBe(false);
    expect((await jobs.get(job.id))!.status).not.toBe('in_progress');
    await expect(jobs.finish({ ...done, id: 'video_missing' }, null)).rejects.toThrow(/does not exist/);
  });

  it('writes every record so that the Lua scripts can decode it, whatever invalid Unicode its strings hold', async () => {
    // Lone surrogates of each kind; JSON.stringify would write them as escapes that cjson refuses.
    for (const [i, bad] of ['\ud800', '\udfff', '\udc00\ud800', 'a\ud83d', '\ude00b'].entries()) {
      const job = { ...video(`video_unicode_${i}`, Date.now()), prompt: `x${bad}y`, callback_url: `https://h.test/${bad}` };
      expect(await jobs.create(job)).toBe(true);
      expect(await jobs.updateActive({ ...job, status: 'in_progress', progress: 10 })).toBe(true);
      expect(await jobs.finish({ ...job, status: 'completed', finished_ms: Date.now(), cost: 0.1 }, null)).toBe(true);
      const stored = (await jobs.get(job.id))!;
      expect(stored.status).toBe('completed');
      expect(stored.prompt.isWellFormed()).toBe(true);
      expect(stored.prompt).toBe(`x${bad.toWellFormed()}y`);
    }
  });

  it('reports a record that cannot be decoded as corrupt, and lists the readable rest', async () => {
    const job = video('video_corrupt', Date.now());
    await jobs.create(job);
    await redis.set(keys.job(job.id), '{"status":"queued","prompt":"\\ud800"}');
    await expect(jobs.updateActive({ ...job, status: 'in_progress' })).rejects.toBeInstanceOf(CorruptRecordError);
    await expect(jobs.finish({ ...job, status: 'failed', finished_ms: 1 }, null)).rejects.toBeInstanceOf(CorruptRecordError);
    await redis.set(keys.job(job.id), 'not json');
    await expect(jobs.get(job.id)).rejects.toBeInstanceOf(CorruptRecordError);
    await jobs.create(video('video_readable', Date.now()));
    expect((await jobs.getMany([job.id, 'video_readable'])).map((j) => j.id)).toEqual(['video_readable']);
  });

  it('admits a job in one step: claims the Idempotency-Key, respects the waiting cap, stores it once, and tells its rank', async () => {
    const idempotency = new IdempotencyRepository(redis, keys, 60);
    const ws = `ws_admit_${randomBytes(4).toString('hex')}`;
    const job = (id: string) => ({ ...video(id, Date.now()), workspace_id: ws });
    const claim = (key: string, fingerprint: string, id: string) => idempotency.entry(ws, key, fingerprint, id);

    // The rank is the workspace's unfinished count, this job included (its generation priority).
    expect(await jobs.admit(job('video_a1'), { maxWaitingDefault: 2 })).toEqual({ outcome: 'stored', rank: 1 });
    expect(await jobs.get('video_a1')).toMatchObject({ id: 'video_a1', workspace_id: ws });
    expect(await redis.zscore(keys.intake(shardOfId('video_a1')), 'video_a1')).not.toBeNull();
    expect(await redis.smembers(keys.workspaceUnfinished(ws))).toEqual(['video_a1']);
    expect(await jobs.admit(job('video_a1'), { maxWaitingDefault: 2 })).toEqual({ outcome: 'exists', rank: 1 });

    // With a key: the first call stores, the same request again names the first job, another request is refused.
    expect(await jobs.admit(job('video_a2'), { maxWaitingDefault: 2, idempotency: claim('k1', 'f1', 'video_a2') })).toEqual({ outcome: 'stored', rank: 2 });
    expect(await jobs.admit(job('video_a3'), { maxWaitingDefault: 2, idempotency: claim('k1', 'f1', 'video_a3') })).toEqual({
      outcome: 'replay',
      jobId: 'video_a2',
    });
    expect(await jobs.admit(job('video_a3'), { maxWaitingDefault: 2, idempotency: claim('k1', 'f2', 'video_a3') })).toEqual({ outcome: 'mismatch' });
    expect(await jobs.get('video_a3')).toBeUndefined();

    // At the cap nothing is stored, but the key stays claimed for the job id it names, so a retry
    // with the same key and request proceeds under that id once a place is free.
    expect(await jobs.admit(job('video_a4'), { maxWaitingDefault: 2, idempotency: claim('k2', 'f1', 'video_a4') })).toEqual({
      outcome: 'over_cap',
      waiting: 2,
      max: 2,
    });
    expect(await jobs.get('video_a4')).toBeUndefined();
    expect(await jobs.admit(job('video_a5'), { maxWaitingDefault: 2, idempotency: claim('k2', 'f1', 'video_a5') })).toEqual({
      outcome: 'replay',
      jobId: 'video_a4',
    });
    await redis.srem(keys.workspaceUnfinished(ws), 'video_a1');
    expect(await jobs.admit(job('video_a4'), { maxWaitingDefault: 2, idempotency: claim('k2', 'f1', 'video_a4') })).toEqual({ outcome: 'stored', rank: 2 });
    // A workspace override of the cap wins over the default.
    await redis.hset(keys.workspaceLimits(ws), 'max_waiting_jobs', '3');
    expect(await jobs.admit(job('video_a6'), { maxWaitingDefault: 2 })).toEqual({ outcome: 'stored', rank: 3 });
    expect(await jobs.admit(job('video_a7'), { maxWaitingDefault: 2 })).toEqual({ outcome: 'over_cap', waiting: 3, max: 3 });
    await redis.zrem(keys.intake(LEGACY_SHARD), 'video_a1', 'video_a2', 'video_a4', 'video_a6');
  });

  it('answers whether a removal removed the job, so that of two at once one removed it', async () => {
    const ws = `ws_remove_${randomBytes(4).toString('hex')}`;
    const removable = { ...video('video_rm1', Date.now()), workspace_id: ws };
    expect(await jobs.admit(removable, { maxWaitingDefault: 5 })).toEqual({ outcome: 'stored', rank: 1 });
    expect(await Promise.all([jobs.remove(removable), jobs.remove(removable)])).toEqual([true, false]);
    await redis.zrem(keys.intake(shardOfId('video_rm1')), 'video_rm1');
  });

  it('stores a replayed job under its claimed id only while the claim lasts (the job may have been removed meanwhile)', async () => {
    const idempotency = new IdempotencyRepository(redis, keys, 60);
    const ws = `ws_rebuild_${randomBytes(4).toString('hex')}`;
    const job = (id: string) => ({ ...video(id, Date.now()), workspace_id: ws });
    const claim = idempotency.entry(ws, 'k', 'f', 'video_r1');
    // A crash left the claim without its job: the rebuild stores it.
    await redis.set(claim.redisKey, claim.value, 'EX', 60);
    expect(await jobs.admit(job('video_r1'), { maxWaitingDefault: 5, idempotency: claim, claimMustExist: true })).toEqual({ outcome: 'stored', rank: 1 });
    // The job is removed (DELETE or retention), its claim with it; a rebuild that raced the removal stores nothing.
    expect(await jobs.remove({ ...job('video_r1'), idempotency_key_hash: idempotencyKeyHash('k') })).toBe(true);
    expect(await redis.exists(claim.redisKey)).toBe(0);
    expect(await jobs.admit(job('video_r1'), { maxWaitingDefault: 5, idempotency: claim, claimMustExist: true })).toEqual({ outcome: 'claim_gone' });
    expect(await jobs.get('video_r1')).toBeUndefined();
    expect(await redis.exists(claim.redisKey)).toBe(0);
    await redis.zrem(keys.intake(shardOfId('video_r1')), 'video_r1');
    await redis.srem(keys.workspaceUnfinished(ws), 'video_r1');
  });

  it('announces a finished job only when a synchronous call may be waiting for it', async () => {
    const subscriber = redis.duplicate();
    const heard: string[] = [];
    subscriber.on('message', (_channel: string, id: string) => heard.push(id));
    await subscriber.subscribe(keys.jobFinishedChannel());
    try {
      const image = (id: string, callback_url: string | null) => ({ ...video(id, Date.now()), kind: 'image' as const, callback_url }) as unknown as JobRecord;
      const sync = image('req_announced', null);
      const async = image('req_unannounced', 'https://receiver.test/hook');
      for (const job of [async, sync, video('video_unannounced', Date.now())]) {
        await jobs.create(job);
        expect(await jobs.finish({ ...job, status: 'failed', finished_ms: Date.now() } as JobRecord, null)).toBe(true);
      }
      // A last message: every one published before it has arrived when it has.
      const ended = new Promise<void>((resolve) => subscriber.on('message', (_c: string, id: string) => id === 'end' && resolve()));
      await redis.publish(keys.jobFinishedChannel(), 'end');
      await ended;
      expect(heard).toEqual(['req_announced', 'end']);
    } finally {
      subscriber.disconnect();
    }
  });

  it('scopes reads to the owning workspace', async () => {
    await jobs.create(video('video_scoped', Date.now()));
    expect(await jobs.getForWorkspace('ws_jobs', 'video_scoped')).toBeDefined();
    expect(await jobs.getForWorkspace('ws_other', 'video_scoped')).toBeUndefined();
  });

  it('pages videos newest first after a cursor', async () => {
    const ws = 'ws_pages';
    for (let i = 0; i < 5; i++) await jobs.create({ ...video(`video_p${i}`, 1_000 + i), workspace_id: ws });
    const first = await jobs.list(ws, 'video', { limit: 2, order: 'desc' });
    expect(first).toEqual({ ids: ['video_p4', 'video_p3'], hasMore: true, cursorFound: true });
    const last = await jobs.list(ws, 'video', { limit: 3, order: 'desc', after: 'video_p3' });
    expect(last).toEqual({ ids: ['video_p2', 'video_p1', 'video_p0'], hasMore: false, cursorFound: true });
    expect((await jobs.list(ws, 'video', { limit: 2, order: 'asc' })).ids).toEqual(['video_p0', 'video_p1']);
    expect(await jobs.list(ws, 'video', { limit: 2, order: 'desc', createdBeforeMs: 1_003 })).toEqual({
      ids: ['video_p2', 'video_p1'],
      hasMore: true,
      cursorFound: true,
    });

    // A cursor whose item was removed keeps its place, both ways, so a client that deletes what it
    // pages through goes on; a cursor that never named an item of the list is said to name nothing.
    await jobs.remove((await jobs.get('video_p3'))!);
    expect(await jobs.list(ws, 'video', { limit: 2, order: 'desc', after: 'video_p3' })).toEqual({
      ids: ['video_p2', 'video_p1'],
      hasMore: true,
      cursorFound: true,
    });
    expect((await jobs.list(ws, 'video', { limit: 2, order: 'asc', after: 'video_p3' })).ids).toEqual(['video_p4']);
    expect((await jobs.list(ws, 'video', { limit: 2, order: 'desc', after: 'video_p2' })).ids).toEqual(['video_p1', 'video_p0']);
    expect(await jobs.list(ws, 'video', { limit: 2, order: 'desc', after: 'video_never' })).toEqual({ ids: [], hasMore: false, cursorFound: false });
    expect((await jobs.list(ws, 'image', { limit: 2, order: 'desc', after: 'video_p3' })).cursorFound).toBe(false);
    expect((await jobs.list('ws_stranger', 'video', { limit: 2, order: 'desc', after: 'video_p3' })).cursorFound).toBe(false);
  });

  it('remembers the latest removed items of a list, at most so many, for an hour after the latest removal', async () => {
    // A client paging newest first that deletes each item it sees: its cursor is always the
    // oldest-made item removed so far, and must outlive the cap.
    const ws = 'ws_removed_cap';
    const made = Array.from({ length: REMOVED_KEPT_MAX + 50 }, (_, i) => ({ ...video(`video_r${String(i).padStart(4, '0')}`, 1_000 + i), workspace_id: ws }));
    for (const job of made) await jobs.create(job);
    const newestFirst = [...made].reverse();
    let after: string | undefined;
    let seen = 0;
    for (;;) {
      const page = await jobs.list(ws, 'video', { limit: 100, order: 'desc', after });
      expect([seen, page.cursorFound]).toEqual([seen, true]);
      for (const id of page.ids) {
        expect(id).toBe(newestFirst[seen]!.id);
        await jobs.remove(newestFirst[seen++]!);
      }
      if (!page.hasMore) break;
      after = page.ids.at(-1);
    }
    expect(seen).toBe(made.length);
    const removed = keys.removedFrom(keys.workspaceVideos(ws));
    expect([await redis.zcard(removed), await redis.zcard(keys.removedAt(keys.workspaceVideos(ws)))]).toEqual([REMOVED_KEPT_MAX, REMOVED_KEPT_MAX]);
    // The earliest removed went: the newest-made, which no client paging on needs any more.
    expect((await jobs.list(ws, 'video', { limit: 1, order: 'desc', after: newestFirst[0]!.id })).cursorFound).toBe(false);
    expect((await jobs.list(ws, 'video', { limit: 1, order: 'desc', after: newestFirst[60]!.id })).cursorFound).toBe(true);
    const ttl = await redis.pttl(removed);
    expect(ttl).toBeGreaterThan(REMOVED_KEPT_MS - 60_000);
    expect(ttl).toBeLessThanOrEqual(REMOVED_KEPT_MS);
  });

  it('pages without repeating or skipping an item while new ones are added between pages and within them', async () => {
    const ws = 'ws_pages_busy';
    const before = Array.from({ length: 150 }, (_, i) => ({ ...video(`video_b${String(i).padStart(3, '0')}`, 10_000 + i), workspace_id: ws }));
    for (const job of before) await jobs.create(job);
    // Another connection adds newer videos as fast as Redis takes them while the pages are read:
    // each lands ahead of every cursor, which a page read in several steps would see as a shift.
    const writer = redis.duplicate();
    let adding = true;
    let added = 0;
    const adder = (async () => {
      while (adding) await jobs.create({ ...video(`video_n${added++}`, 20_000 + added), workspace_id: ws }).catch(() => undefined);
    })();
    const seen: string[] = [];
    let after: string | undefined;
    try {
      for (;;) {
        const page = await jobs.list(ws, 'video', { limit: 3, order: 'desc', after });
        seen.push(...page.ids);
        if (!page.hasMore) break;
        after = page.ids.at(-1);
      }
    } finally {
      adding = false;
      await adder;
      writer.disconnect();
    }
    expect(added).toBeGreaterThan(20);
    const older = seen.filter((id) => id.startsWith('video_b'));
    expect(older).toEqual(before.map((j) => j.id).reverse());
  });
});

describe('IdempotencyRepository', () => {
  it('answers a replay with the first job and refuses the key for other work', async () => {
    const repo = new IdempotencyRepository(redis, keys, 60);
    expect(await repo.claim('ws_i', 'key-1', 'fp-a', 'job_1')).toMatchObject({ outcome: 'new' });
    expect(await repo.claim('ws_i', 'key-1', 'fp-a', 'job_2')).toMatchObject({ outcome: 'replay', jobId: 'job_1' });
    expect(await repo.claim('ws_i', 'key-1', 'fp-b', 'job_3')).toEqual({ outcome: 'mismatch' });
    expect(await repo.claim('ws_other', 'key-1', 'fp-b', 'job_4')).toMatchObject({ outcome: 'new' });
  });

  it('lets one repeat take over a claim whose job was never stored; a repeat that read it too finds it taken', async () => {
    const idempotency = new IdempotencyRepository(redis, keys, 60);
    const ws = `ws_take_over_${randomBytes(4).toString('hex')}`;
    const first = await idempotency.claim(ws, 'k', 'f', 'image_t1', 1_000);
    if (first.outcome !== 'new') throw new Error('not a new claim');
    const earlier = await idempotency.claim(ws, 'k', 'f', 'image_t2', 5_000);
    expect(earlier).toMatchObject({ outcome: 'replay', jobId: 'image_t1', claimedMs: 1_000 });
    if (earlier.outcome !== 'replay') throw new Error('not a replay');
    const taken = await idempotency.takeOver(earlier, 400_000);
    expect(taken).toBeDefined();
    expect(await idempotency.takeOver(earlier, 400_001)).toBeUndefined();
    expect(await idempotency.claim(ws, 'k', 'f', 'image_t3', 400_002)).toMatchObject({ outcome: 'replay', jobId: 'image_t1', claimedMs: 400_000 });
    // The claim keeps its lifetime, and another request's parameters are still refused.
    expect(await redis.ttl(earlier.redisKey)).toBeGreaterThan(50);
    expect(await idempotency.claim(ws, 'k', 'other', 'image_t4')).toEqual({ outcome: 'mismatch' });
    // The first request, still alive, finds its claim taken and cannot give it back.
    expect([await idempotency.holds(first.claim), await idempotency.holds(taken!)]).toEqual([false, true]);
    await idempotency.release(first.claim);
    expect(await redis.exists(earlier.redisKey)).toBe(1);
    await idempotency.release(taken!);
    expect(await redis.exists(earlier.redisKey)).toBe(0);
    expect(await idempotency.takeOver(earlier, 500_000)).toBeUndefined();
    expect(await idempotency.claim(ws, 'k', 'f', 'image_t5')).toMatchObject({ outcome: 'new' });
  });
});

const limits = new LimitRepository(redis, keys, { create_per_minute: 2, read_per_minute: 5, max_waiting_jobs: 2 });
const workspace = () => `ws_${randomBytes(6).toString('hex')}`;

describe('LimitRepository', () => {
  it('counts calls per bucket in a one-minute window that expires', async () => {
    const ws = workspace();
    const first = await limits.hit(ws, 'create');
    expect(first).toMatchObject({ allowed: true, limit: 2, remaining: 1 });
    expect(first.resetMs).toBeGreaterThan(59_000);
    expect(first.resetMs).toBeLessThanOrEqual(60_000);
    expect(await limits.hit(ws, 'create')).toMatchObject({ allowed: true, remaining: 0 });
    expect(await limits.hit(ws, 'create')).toMatchObject({ allowed: false, remaining: 0 });
    expect(await limits.hit(ws, 'read')).toMatchObject({ allowed: true, limit: 5, remaining: 4 });
    expect(await limits.hit(workspace(), 'create')).toMatchObject({ allowed: true, remaining: 1 });
    expect(await redis.pttl(keys.workspaceRate(ws, 'create'))).toBeGreaterThan(0);
  });

  it('applies overrides at once and drops them again', async () => {
    const ws = workspace();
    expect(await limits.override(ws, { create_per_minute: 10, max_waiting_jobs: 7 })).toEqual({
      create_per_minute: 10,
      read_per_minute: 5,
      max_waiting_jobs: 7,
    });
    expect(await limits.hit(ws, 'create')).toMatchObject({ limit: 10, remaining: 9 });
    expect(await limits.override(ws, { create_per_minute: null })).toEqual({ create_per_minute: 2, read_per_minute: 5, max_waiting_jobs: 7 });
    expect(await limits.hit(ws, 'create')).toMatchObject({ limit: 2, remaining: 0 });
  });

  /** A stored job record: the cap counts places of jobs that exist. */
  const stored = (...ids: string[]) => Promise.all(ids.map((id) => redis.set(keys.job(id), '{}')));

  it('admits jobs up to the cap, once per job, and frees a place when one finishes', async () => {
    const ws = workspace();
    await stored('job_1', 'job_2', 'job_3', 'job_4');
    expect(await limits.onJobAccepted(ws, 'job_1')).toEqual({ accepted: true, waiting: 1, max: 2 });
    expect(await limits.onJobAccepted(ws, 'job_1')).toEqual({ accepted: true, waiting: 1, max: 2 });
    expect(await limits.onJobAccepted(ws, 'job_2')).toEqual({ accepted: true, waiting: 2, max: 2 });
    expect(await limits.onJobAccepted(ws, 'job_3')).toEqual({ accepted: false, waiting: 2, max: 2 });
    // A replay of a job already waiting is still accepted at the cap.
    expect(await limits.onJobAccepted(ws, 'job_2')).toEqual({ accepted: true, waiting: 2, max: 2 });
    await limits.onJobFinished(ws, 'job_1');
    await limits.onJobFinished(ws, 'job_1');
    expect(await limits.onJobAccepted(ws, 'job_3')).toEqual({ accepted: true, waiting: 2, max: 2 });
    await limits.override(ws, { max_waiting_jobs: 3 });
    expect(await limits.onJobAccepted(ws, 'job_4')).toEqual({ accepted: true, waiting: 3, max: 3 });
    expect(await limits.onJobAccepted(workspace(), 'job_5')).toMatchObject({ accepted: true, waiting: 1 });
  });

  it('gives back, at the cap, places held by jobs that were never stored (a gateway died in between)', async () => {
    const ws = workspace();
    await stored('kept_1');
    expect(await limits.onJobAccepted(ws, 'kept_1')).toMatchObject({ accepted: true });
    expect(await limits.onJobAccepted(ws, 'never_stored')).toMatchObject({ accepted: true, waiting: 2 });
    expect(await limits.onJobAccepted(ws, 'next')).toEqual({ accepted: true, waiting: 2, max: 2 });
    expect(new Set(await redis.smembers(keys.workspaceUnfinished(ws)))).toEqual(new Set(['kept_1', 'next']));
  });
});

describe('CallbackRepository ladder', () => {
  const callbacks = new CallbackRepository(redis, keys);
  const ws = `ws_${randomBytes(6).toString('hex')}`;
  const schedule = keys.callbackSchedule(LEGACY_SHARD);
  const newCallback = async (id: string, workspaceId = ws, createdMs = Date.now()) =>
    (
      await callbacks.create({
        id,
        workspace_id: workspaceId,
        job_id: `req_${id}`,
        type: 'image.completed',
        url: 'https://h.test/x',
        event_ms: 1,
        created_ms: createdMs,
        state: 'pending',
        attempt_count: 0,
        ladder_attempt: 0,
        next_attempt_ms: null,
        delivered_ms: null,
        last_attempt_ms: null,
      })
    ).callback;
  const failed = (ladder: number | null, sent_ms: number) => ({
    ladder_attempt: ladder,
    trigger: ladder === null ? ('manual' as const) : ('scheduled' as const),
    sent_ms,
    duration_ms: 12,
    status: 503,
    error: 'http_error' as const,
    error_detail: null,
    address: '203.0.113.7',
    excerpt: 'busy "<b>"',
    timing: { dns_ms: 0, connect_ms: 1, tls_ms: null, first_byte_ms: 9 },
  });
  const inState = async (state: 'pending' | 'delivered' | 'failed', id: string) => (await redis.zscore(keys.workspaceCallbacksInState(ws, state), id)) !== null;

  it('puts the next automatic attempt on the schedule with the failed one, and takes it off when the callback ends', async () => {
    const cb = await newCallback('msg_ladder1');
    await callbacks.recordAttempt(cb, 'auto.1', failed(1, 1_000), 61_000, 1_100);
    // The entry names attempt 2 as the retry ladder does (scheduledAttemptId), due when the record says.
    expect(await redis.zscore(schedule, scheduledAttemptId(cb.id, 2))).toBe('61000');
    // A failed manual attempt leaves the ladder alone.
    await callbacks.recordAttempt(cb, 'manual.x', failed(null, 2_000), null, 2_100);
    expect(await redis.zscore(schedule, scheduledAttemptId(cb.id, 2))).toBe('61000');
    await callbacks.recordAttempt(cb, 'auto.2', failed(2, 61_000), 361_000, 61_100);
    expect(await redis.zscore(schedule, scheduledAttemptId(cb.id, 2))).toBe('61000'); // the promoter's to remove
    expect(await redis.zscore(schedule, scheduledAttemptId(cb.id, 3))).toBe('361000');
    // Delivered by hand: attempt 3 is no longer wanted.
    const { callback } = await callbacks.recordAttempt(cb, 'manual.y', { ...failed(null, 70_000), status: 200, error: null }, null, 70_100);
    expect(callback).toMatchObject({ state: 'delivered', attempt_count: 4, ladder_attempt: 2, next_attempt_ms: null, last_attempt_ms: 70_000 });
    expect(await redis.zscore(schedule, scheduledAttemptId(cb.id, 3))).toBeNull();
    await redis.zrem(schedule, scheduledAttemptId(cb.id, 2));
  });

  it('ends a given-up callback as failed in the failed index, with nothing left on the schedule', async () => {
    const cb = await newCallback('msg_ladder2');
    await callbacks.recordAttempt(cb, 'auto.1', failed(1, 1_000), 61_000, 1_100);
    expect(await inState('pending', cb.id)).toBe(true);
    expect((await callbacks.giveUp(cb))?.state).toBe('failed');
    expect(await inState('pending', cb.id)).toBe(false);
    expect(await inState('failed', cb.id)).toBe(true);
    expect(await redis.zscore(schedule, scheduledAttemptId(cb.id, 2))).toBeNull();
  });

  it('walks the whole ladder: each failed attempt schedules the next, the last one ends the callback failed', async () => {
    const cb = await newCallback('msg_ladder4');
    let sentMs = 1_000;
    for (let attempt = 1; attempt <= LADDER_ATTEMPTS; attempt++) {
      const next = nextAttemptAt(attempt, sentMs + 12, DEFAULT_RETRY_GAPS_MS);
      const { callback } = await callbacks.recordAttempt(cb, attemptKey('scheduled', attempt, ''), failed(attempt, sentMs), next, sentMs + 12);
      expect(callback).toMatchObject({ state: isLastAttempt(attempt) ? 'failed' : 'pending', ladder_attempt: attempt, next_attempt_ms: next });
      expect(await redis.zscore(schedule, scheduledAttemptId(cb.id, attempt + 1))).toBe(next === null ? null : String(next));
      sentMs = next ?? sentMs;
    }
    expect(await inState('failed', cb.id)).toBe(true);
    // The entries of attempts 2-6 are the promoter's to remove.
    await redis.zrem(schedule, ...[2, 3, 4, 5, 6].map((attempt) => scheduledAttemptId(cb.id, attempt)));
  });

  it('takes the next attempt off the schedule when a pending callback goes with its job', async () => {
    const cb = await newCallback('msg_ladder5');
    await callbacks.recordAttempt(cb, 'auto.1', failed(1, 1_000), 61_000, 1_100);
    expect(await redis.zscore(schedule, scheduledAttemptId(cb.id, 2))).toBe('61000');
    expect(await callbacks.remove(cb.id, 'with-its-job')).toBe(true);
    expect(await redis.zscore(schedule, scheduledAttemptId(cb.id, 2))).toBeNull();
  });

  it('goes on after a callback removed with its job while its list was being paged, with or without a filter', async () => {
    const wsPaged = `ws_${randomBytes(6).toString('hex')}`;
    for (let i = 0; i < 3; i++) await newCallback(`msg_paged${i}`, wsPaged, 5_000 + i);
    const ids = (page: { callbacks: { id: string }[] }) => page.callbacks.map((cb) => cb.id);
    expect(await callbacks.remove('msg_paged1', 'with-its-job')).toBe(true);
    expect(ids(await callbacks.list(wsPaged, { limit: 5, after: 'msg_paged1' }))).toEqual(['msg_paged0']);
    expect(ids(await callbacks.list(wsPaged, { limit: 5, after: 'msg_paged1', state: 'pending' }))).toEqual(['msg_paged0']);
    expect(ids(await callbacks.list(wsPaged, { limit: 5, after: 'msg_paged1', type: 'image.completed' }))).toEqual(['msg_paged0']);
    expect((await callbacks.list(ws, { limit: 5, after: 'msg_paged1' })).cursorFound).toBe(false);
    for (const id of ['msg_paged0', 'msg_paged2']) await callbacks.remove(id, 'with-its-job');
  });

  it('keys automatic attempts by number and manual ones by request in the attempt log', () => {
    expect(attemptKey('scheduled', 2, 'ignored')).toBe('auto.2');
    expect(attemptKey('manual', 2, 'msg_abc.manual.17')).toBe('manual.msg_abc.manual.17');
  });

  it('stores attempts compactly and reads them back whole, as well as entries written as objects', async () => {
    const cb = await newCallback('msg_ladder3');
    await callbacks.recordAttempt(cb, 'auto.1', failed(1, 1_000), 61_000, 1_100);
    const untimed = { ...failed(null, 2_000), address: null, excerpt: '' };
    delete (untimed as { timing?: unknown }).timing;
    await callbacks.recordAttempt(cb, 'manual.z', untimed, null, 2_100);
    const legacy = { number: 3, ...failed(2, 61_000) };
    await redis.hset(keys.callbackAttempts(cb.id), 'auto.2', JSON.stringify(legacy));
    expect(await callbacks.attempts(cb.id)).toEqual([{ number: 1, ...failed(1, 1_000) }, { number: 2, ...untimed }, legacy]);
    expect(await callbacks.attempt(cb.id, 'manual.z')).toEqual({ number: 2, ...untimed });
    const stored = (await redis.hget(keys.callbackAttempts(cb.id), 'auto.1'))!;
    expect(stored.length).toBeLessThan(JSON.stringify(legacy).length / 2);
    await redis.zrem(schedule, scheduledAttemptId(cb.id, 2));
  });

  it('lets one run of a manual request send it: another is told how long to wait, the same run is let through again, none once it is in the log, and the next after the holder lets go', async () => {
    const cb = await newCallback('msg_ladder4');
    const request = 'msg_ladder4.manual.1';
    expect(await callbacks.holdManualSend(cb.id, request, request, 60_000)).toBe('send');
    // A restart of the same job (a crash mid-attempt) holds it still.
    expect(await callbacks.holdManualSend(cb.id, request, request, 60_000)).toBe('send');
    const other = await callbacks.holdManualSend(cb.id, request, `${request}.d2`, 60_000);
    expect(other).toEqual({ heldForMs: expect.any(Number) });
    expect((other as { heldForMs: number }).heldForMs).toBeGreaterThan(50_000);
    expect((other as { heldForMs: number }).heldForMs).toBeLessThanOrEqual(60_000);
    // Another manual request of the same callback is not held by this one.
    expect(await callbacks.holdManualSend(cb.id, 'msg_ladder4.manual.2', 'msg_ladder4.manual.2', 60_000)).toBe('send');
    await callbacks.recordAttempt(cb, attemptKey('manual', 0, request), failed(null, 1_000), null, 1_100);
    expect(await callbacks.holdManualSend(cb.id, request, `${request}.d2`, 60_000)).toBe('made');
    // A run that gave up before sending lets go, but only of its own hold.
    const released = 'msg_ladder4.manual.4';
    expect(await callbacks.holdManualSend(cb.id, released, released, 60_000)).toBe('send');
    await callbacks.releaseManualSend(cb.id, released, `${released}.d1`);
    expect(await callbacks.holdManualSend(cb.id, released, `${released}.d1`, 60_000)).toEqual({ heldForMs: expect.any(Number) });
    await callbacks.releaseManualSend(cb.id, released, released);
    expect(await callbacks.holdManualSend(cb.id, released, `${released}.d1`, 60_000)).toBe('send');
    // A hold lapses by itself: a run that died holding the request does not keep the others out.
    const lapsing = 'msg_ladder4.manual.3';
    expect(await callbacks.holdManualSend(cb.id, lapsing, lapsing, 50)).toBe('send');
    await new Promise((resolve) => setTimeout(resolve, 120));
    expect(await callbacks.holdManualSend(cb.id, lapsing, `${lapsing}.d1`, 60_000)).toBe('send');
  });
});

describe('CallbackRepository recovery pace', () => {
  it('queues recoveries of one workspace behind each other, so together they keep one rate', async () => {
    const callbacks = new CallbackRepository(redis, keys);
    const ws = `ws_${randomBytes(6).toString('hex')}`;
    const now = Date.now();
    expect(await callbacks.reserveRecoverySlots(ws, 10, 5, now)).toBe(now); // 10 at 5/s: 2 s of slots
    expect(await callbacks.reserveRecoverySlots(ws, 5, 5, now + 500)).toBe(now + 2_000);
    expect(await callbacks.reserveRecoverySlots(`${ws}_other`, 5, 5, now + 500)).toBe(now + 500);
    expect(await redis.pttl(keys.workspaceRecoveryPace(ws))).toBeGreaterThan(0);
  });
});
