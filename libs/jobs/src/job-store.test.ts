import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { LEGACY_SHARD, shardOfId, type JobRecord, type VideoJob } from '@media/domain';
import { REMOVED_KEPT_MAX, REMOVED_KEPT_MS } from '@media/storage';
import { IdempotencyRepository, idempotencyKeyHash } from './idempotency';
import { CorruptRecordError, JobRepository } from './job-store';
import { LimitRepository } from './limits';
import { allKeys } from '../../../test/support/store-keys';

const redis = new Redis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379');
const keys = allKeys(`test-${randomBytes(6).toString('hex')}`);
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
    // Made all at once (their times are set, so the order they are stored in does not matter); the
    // removals below go one at a time, since their order is what the test is about.
    await Promise.all(made.map((job) => jobs.create(job)));
    const newestFirst = [...made].reverse();
    let after: string | undefined;
    let seen = 0;
    // Every removal in the same millisecond, as a fast client's can be: their order, not their ids,
    // must decide which the cap drops.
    const clock = jest.spyOn(Date, 'now').mockReturnValue(Date.now());
    try {
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
    } finally {
      clock.mockRestore();
    }
    expect(seen).toBe(made.length);
    const removed = keys.removedFrom(keys.workspaceVideos(ws));
    expect([await redis.zcard(removed), await redis.zcard(keys.removedAt(keys.workspaceVideos(ws)))]).toEqual([REMOVED_KEPT_MAX, REMOVED_KEPT_MAX]);
    // The earliest removed went: the newest-made, which no client paging on needs any more.
    expect((await jobs.list(ws, 'video', { limit: 1, order: 'desc', after: newestFirst[0]!.id })).cursorFound).toBe(false);
    expect((await jobs.list(ws, 'video', { limit: 1, order: 'desc', after: newestFirst[49]!.id })).cursorFound).toBe(false);
    expect((await jobs.list(ws, 'video', { limit: 1, order: 'desc', after: newestFirst[50]!.id })).cursorFound).toBe(true);
    const ttl = await redis.pttl(removed);
    expect(ttl).toBeGreaterThan(REMOVED_KEPT_MS - 60_000);
    expect(ttl).toBeLessThanOrEqual(REMOVED_KEPT_MS);
  }, 120_000);

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
