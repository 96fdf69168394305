import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { DEFAULT_RETRY_GAPS_MS, LADDER_ATTEMPTS, LEGACY_SHARD, scheduledAttemptId } from '@media/domain';
import { attemptKey, CallbackRepository } from './callback-store';
import { isLastAttempt, nextAttemptAt } from './retry-ladder';
import { allKeys } from '../../../test/support/store-keys';

const redis = new Redis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379');
const keys = allKeys(`test-${randomBytes(6).toString('hex')}`);

afterAll(async () => {
  const found = (await Promise.all(keys.patterns.map((pattern) => redis.keys(pattern)))).flat();
  if (found.length > 0) await redis.del(...found);
  redis.disconnect();
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
