import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { destinationOf, leaseMsFor, SLOW_LANE_MS, type DestinationSignal } from '@media/domain';
import { DestinationGate } from './destinations';
import { StoreKeys } from './keys';

const redis = new Redis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379');
const keys = new StoreKeys(`test-${randomBytes(6).toString('hex')}`);
const limits = { maxInFlight: 4, slowMaxInFlight: 2, attemptTimeoutMs: 1_000 };
const gate = new DestinationGate(redis, keys, limits);
const LEASE_MS = leaseMsFor(limits);
const QUIET: DestinationSignal = { slow: false, throttleMs: 0 };

afterAll(async () => {
  const found = (await Promise.all(keys.patterns.map((pattern) => redis.keys(pattern)))).flat();
  if (found.length > 0) await redis.del(...found);
  redis.disconnect();
});

/** A destination of its own per test, so the tests share nothing. */
const fresh = () => destinationOf(`https://r-${randomBytes(4).toString('hex')}.example:8443/hook?token=x`);
const ask = (destination: ReturnType<typeof fresh>, leaseId: string, nowMs: number, dueMs = nowMs) =>
  gate.acquire({ destination, workspaceId: 'ws_gate', leaseId, parkAs: leaseId, dueMs, nowMs });

describe('destinationOf', () => {
  it('is the origin: scheme, host and port, never the path or query', () => {
    const a = destinationOf('https://Hooks.Example.com/a?token=1');
    expect(a.origin).toBe('https://hooks.example.com:443');
    expect(destinationOf('https://hooks.example.com:443/b').id).toBe(a.id);
    expect(destinationOf('https://hooks.example.com:8443/a').id).not.toBe(a.id);
    expect(a.id).toMatch(/^[0-9a-f]{16}$/);
  });
});

describe('DestinationGate', () => {
  it('grants up to the cap and parks the rest, oldest due first, handing freed slots to them before any newcomer', async () => {
    const d = fresh();
    const now = 1_000_000;
    for (let i = 0; i < 4; i++) expect(await ask(d, `held.${i}`, now)).toEqual({ granted: true, woken: [] });
    // Parked out of order: the one due earliest is served first.
    const late = await ask(d, 'late', now, now + 5);
    const early = await ask(d, 'early', now, now - 100);
    expect(late.granted).toBe(false);
    expect(early).toMatchObject({ granted: false, limit: 4, position: 0 });
    // Its turn comes at the latest when the first slot's lease runs out.
    expect(early.granted === false && early.wakeAtMs).toBe(now + LEASE_MS);

    const woken = await gate.release(d, 'held.0', QUIET, now + 10);
    expect(woken).toEqual(['early']);
    // The freed slot is reserved in the parked attempt's name: a newcomer cannot take it.
    expect(await gate.holds(d, 'early')).toBe(true);
    expect((await ask(d, 'newcomer', now + 11)).granted).toBe(false);
    expect(await ask(d, 'early', now + 12)).toEqual({ granted: true, woken: [] });

    const [status] = await gate.ofWorkspace('ws_gate', now + 12).then((all) => all.filter((s) => s.id === d.id));
    expect(status).toMatchObject({ origin: d.origin, inFlight: 4, deferred: 2, limit: 4, slowUntilMs: null, throttledUntilMs: null });
  });

  it('estimates a parked attempt’s turn from its place in line, a lease per round of slots', async () => {
    const d = fresh();
    const now = 2_000_000;
    for (let i = 0; i < 4; i++) await ask(d, `held.${i}`, now + i);
    const answers = [];
    for (let i = 0; i < 9; i++) answers.push(await ask(d, `parked.${i}`, now + 10, now + 10 + i));
    expect(answers.map((a) => (a.granted ? -1 : a.position))).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8]);
    expect(answers.map((a) => (a.granted ? -1 : a.wakeAtMs - (now + LEASE_MS)))).toEqual([0, 0, 0, 0, LEASE_MS, LEASE_MS, LEASE_MS, LEASE_MS, 2 * LEASE_MS]);
  });

  it('frees the slot of an attempt whose dispatcher died when its lease runs out, and a re-run keeps its own slot', async () => {
    const d = fresh();
    const now = 3_000_000;
    for (let i = 0; i < 4; i++) await ask(d, `held.${i}`, now);
    // The same attempt run again (BullMQ's stall recovery) before its lease ran out: still its slot.
    expect((await ask(d, 'held.2', now + 100)).granted).toBe(true);
    expect((await ask(d, 'other', now + 100)).granted).toBe(false);
    // Every holder died: their leases lapse and the parked attempt is handed a slot by the next call.
    const later = now + 100 + LEASE_MS + 1;
    expect(await ask(d, 'newcomer', later)).toEqual({ granted: true, woken: ['other'] });
  });

  it('parks an attempt under the id of the job it goes on as, and keeps its place in line when that job is parked again', async () => {
    const d = fresh();
    const now = 3_200_000;
    for (let i = 0; i < 4; i++) await ask(d, `held.${i}`, now);
    const first = await gate.acquire({ destination: d, workspaceId: 'ws_gate', leaseId: 'x', parkAs: 'x.d1', dueMs: now - 50, nowMs: now });
    await gate.acquire({ destination: d, workspaceId: 'ws_gate', leaseId: 'y', parkAs: 'y.d1', dueMs: now, nowMs: now });
    expect(first).toMatchObject({ granted: false, position: 0 });
    // x.d1 runs at its fallback time while the slots are still taken: it is first in line as x.d2.
    const again = await gate.acquire({ destination: d, workspaceId: 'ws_gate', leaseId: 'x.d1', parkAs: 'x.d2', dueMs: now + 10, nowMs: now + 10 });
    expect(again).toMatchObject({ granted: false, position: 0 });
    expect(await gate.release(d, 'held.0', QUIET, now + 20)).toEqual(['x.d2']);
    expect(await gate.holds(d, 'x.d2')).toBe(true);
    expect(await gate.holds(d, 'x.d1')).toBe(false);
  });

  it('hands lapsed slots to the parked attempts first, and says so even when the caller itself is parked', async () => {
    const d = fresh();
    const now = 3_500_000;
    for (let i = 0; i < 4; i++) await ask(d, `held.${i}`, now);
    for (let i = 0; i < 5; i++) expect((await ask(d, `parked.${i}`, now, now + i)).granted).toBe(false);
    const answer = await ask(d, 'newcomer', now + LEASE_MS + 1);
    expect(answer).toMatchObject({ granted: false, position: 1, woken: ['parked.0', 'parked.1', 'parked.2', 'parked.3'] });
  });

  it('caps a destination whose attempts were slow at the slow lane’s cap, for the slow lane’s time', async () => {
    const d = fresh();
    const now = 4_000_000;
    await ask(d, 'a', now);
    await gate.release(d, 'a', { slow: true, throttleMs: 0 }, now + 1);
    expect(await ask(d, 'b', now + 2)).toEqual({ granted: true, woken: [] });
    expect(await ask(d, 'c', now + 2)).toEqual({ granted: true, woken: [] });
    expect((await ask(d, 'd', now + 2)).granted).toBe(false);
    const [status] = (await gate.ofWorkspace('ws_gate', now + 2)).filter((s) => s.id === d.id);
    expect(status).toMatchObject({ limit: 2, slowUntilMs: now + 1 + SLOW_LANE_MS });
    // Past the slow lane's time the base cap applies again, and the parked attempt gets a slot.
    const after = now + 1 + SLOW_LANE_MS + 1;
    expect(await ask(d, 'e', after)).toEqual({ granted: true, woken: ['d'] });
  });

  it('halves the cap of a destination that pushes back, once per second however many attempts say so, until its time is up', async () => {
    const d = fresh();
    const now = 5_000_000;
    for (let i = 0; i < 4; i++) await ask(d, `a.${i}`, now);
    // Four attempts come back with 429 at once: one signal, cap 4 → 2.
    for (let i = 0; i < 4; i++) await gate.release(d, `a.${i}`, { slow: false, throttleMs: 30_000 }, now + 10 + i);
    let [status] = (await gate.ofWorkspace('ws_gate', now + 20)).filter((s) => s.id === d.id);
    expect(status).toMatchObject({ limit: 2, throttledUntilMs: now + 13 + 30_000 });
    // Pushed back again a second later: 2 → 1, and never below one.
    await ask(d, 'b', now + 1_100);
    await gate.release(d, 'b', { slow: false, throttleMs: 30_000 }, now + 1_200);
    await ask(d, 'c', now + 2_300);
    await gate.release(d, 'c', { slow: false, throttleMs: 30_000 }, now + 2_400);
    [status] = (await gate.ofWorkspace('ws_gate', now + 2_500)).filter((s) => s.id === d.id);
    expect(status.limit).toBe(1);
    expect((await ask(d, 'x', now + 2_500)).granted).toBe(true);
    expect((await ask(d, 'y', now + 2_500)).granted).toBe(false);
    // Its time up, the base cap is back.
    [status] = (await gate.ofWorkspace('ws_gate', now + 2_400 + 30_001)).filter((s) => s.id === d.id);
    expect(status).toMatchObject({ limit: 4, throttledUntilMs: null });
  });

  it('lists recent destinations over every workspace for metrics', async () => {
    const d = fresh();
    const now = Date.now();
    await gate.acquire({ destination: d, workspaceId: 'ws_other', leaseId: 'm', parkAs: 'm.d1', dueMs: now, nowMs: now });
    const recent = await gate.recent(now);
    expect(recent.find((s) => s.id === d.id)).toMatchObject({ origin: d.origin, inFlight: 1, deferred: 0 });
    expect((await gate.ofWorkspace('ws_gate', now)).some((s) => s.id === d.id)).toBe(false);
  });

  it("notes a destination's activity once a minute per process, not on every attempt", async () => {
    const d = fresh();
    const now = Date.now();
    const index = keys.destinations(keys.destinationShard(d.id));
    await ask(d, 'n1', now);
    await gate.release(d, 'n1', QUIET, now + 1);
    await ask(d, 'n2', now + 30_000);
    expect(Number(await redis.zscore(index, d.id))).toBe(now);
    // Another process (a gate of its own) notes it on its first attempt.
    const other = new DestinationGate(redis, keys, limits);
    await other.acquire({ destination: d, workspaceId: 'ws_gate', leaseId: 'n3', parkAs: 'n3', dueMs: now + 40_000, nowMs: now + 40_000 });
    expect(Number(await redis.zscore(index, d.id))).toBe(now + 40_000);
    await ask(d, 'n4', now + 60_000);
    expect(Number(await redis.zscore(index, d.id))).toBe(now + 60_000);
    // The origin stays, and the state lives on for the day from the latest note.
    expect(await redis.hget(keys.destinationState(d.id), 'origin')).toBe(d.origin);
    expect(await redis.pttl(keys.destinationState(d.id))).toBeGreaterThan(86_400_000 - 60_000);
  });
});
