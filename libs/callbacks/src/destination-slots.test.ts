import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { destinationOf, leaseMsFor, QUIET_SIGNAL, SLOW_LANE_MS, type DestinationSignal } from './destination-policy';
import { DestinationGate } from './destination-slots';
import { allKeys } from '../../../test/support/store-keys';

const redis = new Redis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379');
const keys = allKeys(`test-${randomBytes(6).toString('hex')}`);
/** A cap of 4 keeps one slot of headroom: one workspace alone holds 3 at most. */
const limits = { maxInFlight: 4, slowMaxInFlight: 2, attemptTimeoutMs: 1_000 };
const gate = new DestinationGate(redis, keys, limits);
const LEASE_MS = leaseMsFor(limits);
const SLOW: DestinationSignal = { slow: true, fast: false, throttleMs: 0, delivered: false };
const FAST_OK: DestinationSignal = { slow: false, fast: true, throttleMs: 0, delivered: true };
const pushedBack = (throttleMs: number): DestinationSignal => ({ slow: false, fast: true, throttleMs, delivered: false });

afterAll(async () => {
  const found = (await Promise.all(keys.patterns.map((pattern) => redis.keys(pattern)))).flat();
  if (found.length > 0) await redis.del(...found);
  redis.disconnect();
});

/** A destination of its own per test, so the tests share nothing. */
const fresh = () => destinationOf(`https://r-${randomBytes(4).toString('hex')}.example:8443/hook?token=x`);
type D = ReturnType<typeof fresh>;
const ask = (destination: D, leaseId: string, nowMs: number, dueMs = nowMs, workspaceId = 'ws_gate') =>
  gate.acquire({ destination, workspaceId, leaseId, parkAs: leaseId, dueMs, nowMs });
const release = (destination: D, leaseId: string, signal: DestinationSignal, nowMs: number, workspaceId = 'ws_gate') =>
  gate.release(destination, workspaceId, leaseId, signal, nowMs);
const shareOf = async (d: D, workspaceId: string, nowMs: number) => (await gate.ofWorkspace(workspaceId, nowMs)).find((s) => s.id === d.id);
const destinationWide = async (d: D, nowMs: number) => (await gate.recent(nowMs)).find((s) => s.id === d.id);

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
  it('grants one workspace the cap less its headroom, parks the rest oldest due first, and hands freed slots to them before any newcomer of theirs', async () => {
    const d = fresh();
    const now = 1_000_000;
    for (let i = 0; i < 3; i++) expect(await ask(d, `held.${i}`, now)).toEqual({ granted: true, woken: [] });
    // Parked out of order: the one due earliest is served first.
    const late = await ask(d, 'late', now, now + 5);
    const early = await ask(d, 'early', now, now - 100);
    expect(late.granted).toBe(false);
    expect(early).toMatchObject({ granted: false, limit: 3, position: 0 });
    // Its turn comes at the latest when the first slot's lease runs out.
    expect(early.granted === false && early.wakeAtMs).toBe(now + LEASE_MS);
    // The headroom is another workspace's at once.
    expect(await ask(d, 'theirs', now + 1, now + 1, 'ws_other')).toEqual({ granted: true, woken: [] });

    const woken = await release(d, 'held.0', QUIET_SIGNAL, now + 10);
    expect(woken).toEqual(['early']);
    // The freed slot is reserved in the parked attempt's name: a newcomer cannot take it.
    expect(await gate.holds(d, 'early')).toBe(true);
    expect((await ask(d, 'newcomer', now + 11)).granted).toBe(false);
    expect(await ask(d, 'early', now + 12)).toEqual({ granted: true, woken: [] });

    expect(await shareOf(d, 'ws_gate', now + 12)).toMatchObject({ origin: d.origin, inFlight: 3, deferred: 2, limit: 3, heldBack: 'host_busy' });
    expect(await shareOf(d, 'ws_other', now + 12)).toMatchObject({ inFlight: 1, deferred: 0, limit: 3, heldBack: null });
    expect(await destinationWide(d, now + 12)).toMatchObject({ inFlight: 4, deferred: 2, limit: 4, slowUntilMs: null, throttledUntilMs: null });
  });

  it('estimates a parked attempt’s turn from its place in its workspace’s line, a lease per round of the workspace’s slots', async () => {
    const d = fresh();
    const now = 2_000_000;
    for (let i = 0; i < 3; i++) await ask(d, `held.${i}`, now + i);
    const answers = [];
    for (let i = 0; i < 7; i++) answers.push(await ask(d, `parked.${i}`, now + 10, now + 10 + i));
    expect(answers.map((a) => (a.granted ? -1 : a.position))).toEqual([0, 1, 2, 3, 4, 5, 6]);
    expect(answers.map((a) => (a.granted ? -1 : a.wakeAtMs - (now + LEASE_MS)))).toEqual([0, 0, 0, LEASE_MS, LEASE_MS, LEASE_MS, 2 * LEASE_MS]);
  });

  it('frees the slot of an attempt whose dispatcher died when its lease runs out, and a re-run keeps its own slot', async () => {
    const d = fresh();
    const now = 3_000_000;
    for (let i = 0; i < 3; i++) await ask(d, `held.${i}`, now);
    // The same attempt run again (BullMQ's stall recovery) before its lease ran out: still its slot.
    expect((await ask(d, 'held.2', now + 100)).granted).toBe(true);
    expect((await ask(d, 'other', now + 100)).granted).toBe(false);
    // Every holder died: their leases lapse and the parked attempt is handed a slot by the next call.
    const later = now + 100 + LEASE_MS + 1;
    expect(await ask(d, 'newcomer', later)).toEqual({ granted: true, woken: ['other'] });
    expect(await shareOf(d, 'ws_gate', later)).toMatchObject({ inFlight: 2, deferred: 0 });
  });

  it('parks an attempt under the id of the job it goes on as, and keeps its place in line when that job is parked again', async () => {
    const d = fresh();
    const now = 3_200_000;
    for (let i = 0; i < 3; i++) await ask(d, `held.${i}`, now);
    const first = await gate.acquire({ destination: d, workspaceId: 'ws_gate', leaseId: 'x', parkAs: 'x.d1', dueMs: now - 50, nowMs: now });
    await gate.acquire({ destination: d, workspaceId: 'ws_gate', leaseId: 'y', parkAs: 'y.d1', dueMs: now, nowMs: now });
    expect(first).toMatchObject({ granted: false, position: 0 });
    // x.d1 runs at its fallback time while the slots are still taken: it is first in line as x.d2.
    const again = await gate.acquire({ destination: d, workspaceId: 'ws_gate', leaseId: 'x.d1', parkAs: 'x.d2', dueMs: now + 10, nowMs: now + 10 });
    expect(again).toMatchObject({ granted: false, position: 0 });
    expect(await release(d, 'held.0', QUIET_SIGNAL, now + 20)).toEqual(['x.d2']);
    expect(await gate.holds(d, 'x.d2')).toBe(true);
    expect(await gate.holds(d, 'x.d1')).toBe(false);
    expect(await shareOf(d, 'ws_gate', now + 20)).toMatchObject({ inFlight: 3, deferred: 1 });
  });

  it('hands lapsed slots to the parked attempts first, and says so even when the caller itself is parked', async () => {
    const d = fresh();
    const now = 3_500_000;
    for (let i = 0; i < 3; i++) await ask(d, `held.${i}`, now);
    for (let i = 0; i < 5; i++) expect((await ask(d, `parked.${i}`, now, now + i)).granted).toBe(false);
    const answer = await ask(d, 'newcomer', now + LEASE_MS + 1);
    expect(answer).toMatchObject({ granted: false, position: 2, woken: ['parked.0', 'parked.1', 'parked.2'] });
  });

  it('serves the workspaces waiting at one destination round robin, each one’s oldest due first', async () => {
    const d = fresh();
    const now = 3_700_000;
    // Every slot taken, none of the workspaces at its own cap.
    for (let i = 0; i < 2; i++) await ask(d, `held.${i}`, now, now, 'ws_a');
    await ask(d, 'head', now, now, 'ws_b');
    await ask(d, 'tail', now, now, 'ws_c');
    // A's long line came first; B's and C's two each after it.
    for (let i = 0; i < 6; i++) await ask(d, `a.${i}`, now + 1, now + 1 + i, 'ws_a');
    for (let i = 0; i < 2; i++) await ask(d, `b.${i}`, now + 2, now + 2 + i, 'ws_b');
    for (let i = 0; i < 2; i++) await ask(d, `c.${i}`, now + 3, now + 3 + i, 'ws_c');
    const served: string[] = [];
    let holder = 'head';
    for (let i = 0; i < 10; i++) {
      const owner = holder.startsWith('a.') || holder.startsWith('held') ? 'ws_a' : holder.startsWith('b.') || holder === 'head' ? 'ws_b' : 'ws_c';
      const woken = await release(d, holder, QUIET_SIGNAL, now + 10 + i, owner);
      expect(woken).toHaveLength(1);
      served.push(woken[0]!);
      holder = woken[0]!;
    }
    // Every waiting workspace in turn, whoever gave the slot back; A's line is drained last.
    expect(served).toEqual(['a.0', 'b.0', 'c.0', 'a.1', 'b.1', 'c.1', 'a.2', 'a.3', 'a.4', 'a.5']);
  });

  it('gives a workspace whose attempts were slow a slow lane of its own, leaving the headroom to a workspace whose attempts answer', async () => {
    const d = fresh();
    const now = 4_000_000;
    // B answers fast there: the host is up.
    await ask(d, 'b.0', now, now, 'ws_b');
    await release(d, 'b.0', FAST_OK, now + 1, 'ws_b');
    await ask(d, 'a.0', now, now, 'ws_a');
    await release(d, 'a.0', SLOW, now + 2, 'ws_a');
    // A is held to the slow lane's cap, 2; the host's cap stays 4.
    expect((await ask(d, 'a.1', now + 3, now + 3, 'ws_a')).granted).toBe(true);
    expect((await ask(d, 'a.2', now + 3, now + 3, 'ws_a')).granted).toBe(true);
    expect(await ask(d, 'a.3', now + 3, now + 3, 'ws_a')).toMatchObject({ granted: false, limit: 2 });
    for (let i = 1; i <= 2; i++) expect((await ask(d, `b.${i}`, now + 4, now + 4, 'ws_b')).granted).toBe(true);
    expect(await shareOf(d, 'ws_a', now + 4)).toMatchObject({ limit: 2, slowUntilMs: now + 2 + SLOW_LANE_MS, heldBack: 'own_slowness', hostSlowUntilMs: null });
    expect(await shareOf(d, 'ws_b', now + 4)).toMatchObject({ limit: 3, slowUntilMs: null, heldBack: null });
    // B gives a slot back while A waits: A may not take the headroom (the host's last free slot)...
    expect(await release(d, 'b.2', FAST_OK, now + 5, 'ws_b')).toEqual([]);
    // ... but B may, even though A has been waiting longer.
    expect((await ask(d, 'b.3', now + 6, now + 6, 'ws_b')).granted).toBe(true);
    // A's slow lane ends a minute after its last slow attempt: its waiting attempt gets the next slot.
    const after = now + 2 + SLOW_LANE_MS + 1;
    expect(await release(d, 'b.1', FAST_OK, after, 'ws_b')).toEqual(['a.3']);
    expect(await destinationWide(d, after)).toMatchObject({ slowWorkspaces: 0, limit: 4 });
  });

  it('caps the whole host at the slow lane’s cap when its attempts were slow and none answered fast, until one does', async () => {
    const d = fresh();
    const now = 4_500_000;
    await ask(d, 'a.0', now, now, 'ws_a');
    await release(d, 'a.0', SLOW, now + 1, 'ws_a');
    expect(await destinationWide(d, now + 2)).toMatchObject({ limit: 2, slowUntilMs: now + 1 + SLOW_LANE_MS, slowWorkspaces: 1 });
    // B, not slow itself, shares the host's cap of 2: one for A, its headroom for B.
    expect((await ask(d, 'a.1', now + 2, now + 2, 'ws_a')).granted).toBe(true);
    expect((await ask(d, 'a.2', now + 2, now + 2, 'ws_a')).granted).toBe(false);
    expect((await ask(d, 'b.0', now + 3, now + 3, 'ws_b')).granted).toBe(true);
    expect(await shareOf(d, 'ws_b', now + 3)).toMatchObject({ limit: 1, hostSlowUntilMs: now + 1 + SLOW_LANE_MS, slowUntilMs: null });
    expect(await destinationWide(d, now + 3)).toMatchObject({ heldBack: { own_slowness: 1, host_back_pressure: 0, host_slow: 0, host_busy: 0 } });
    // B's attempt answers fast: the host is up, the base cap is back, and A's waiting attempt goes.
    expect(await release(d, 'b.0', FAST_OK, now + 4, 'ws_b')).toEqual(['a.2']);
    expect(await destinationWide(d, now + 4)).toMatchObject({ limit: 4, slowUntilMs: null });
  });

  it('halves the cap of a destination that pushes back, for every workspace there, once per second however many attempts say so, until its time is up', async () => {
    const d = fresh();
    const now = 5_000_000;
    for (let i = 0; i < 3; i++) await ask(d, `a.${i}`, now);
    await ask(d, 'theirs', now, now, 'ws_other');
    // Four attempts come back with 429 at once: one signal, cap 4 → 2.
    for (let i = 0; i < 3; i++) await release(d, `a.${i}`, pushedBack(30_000), now + 10 + i);
    await release(d, 'theirs', pushedBack(30_000), now + 13, 'ws_other');
    expect(await destinationWide(d, now + 20)).toMatchObject({ limit: 2, throttledUntilMs: now + 13 + 30_000 });
    // The other workspace is held back by it too: the host asked.
    expect(await shareOf(d, 'ws_other', now + 20)).toMatchObject({ limit: 1, throttledUntilMs: now + 13 + 30_000 });
    // Pushed back again a second later: 2 → 1, and never below one.
    await ask(d, 'b', now + 1_100);
    await release(d, 'b', pushedBack(30_000), now + 1_200);
    await ask(d, 'c', now + 2_300);
    await release(d, 'c', pushedBack(30_000), now + 2_400);
    expect((await destinationWide(d, now + 2_500))!.limit).toBe(1);
    expect((await ask(d, 'x', now + 2_500)).granted).toBe(true);
    expect((await ask(d, 'y', now + 2_500, now + 2_500, 'ws_other')).granted).toBe(false);
    expect(await shareOf(d, 'ws_other', now + 2_500)).toMatchObject({ heldBack: 'host_back_pressure' });
    // Its time up, the base cap is back.
    expect(await destinationWide(d, now + 2_400 + 30_001)).toMatchObject({ limit: 4, throttledUntilMs: null });
  });

  it('keeps each workspace’s latest outcomes apart from whether it is held back, and shows it only its own', async () => {
    const d = fresh();
    const now = Date.now();
    await ask(d, 'a.0', now, now, 'ws_a');
    await release(d, 'a.0', { slow: false, fast: true, throttleMs: 0, delivered: false }, now + 1, 'ws_a');
    await ask(d, 'a.1', now + 2, now + 2, 'ws_a');
    await release(d, 'a.1', { slow: false, fast: true, throttleMs: 0, delivered: false }, now + 3, 'ws_a');
    await ask(d, 'b.0', now, now, 'ws_b');
    await release(d, 'b.0', FAST_OK, now + 4, 'ws_b');
    // A gives back a slot it never used: that says nothing of the receiver.
    await ask(d, 'a.2', now + 5, now + 5, 'ws_a');
    await release(d, 'a.2', QUIET_SIGNAL, now + 6, 'ws_a');
    expect(await shareOf(d, 'ws_a', now + 7)).toMatchObject({ heldBack: null, lastFailedMs: now + 3, lastDeliveredMs: null, failuresInRow: 2, inFlight: 0 });
    expect(await shareOf(d, 'ws_b', now + 7)).toMatchObject({ heldBack: null, lastFailedMs: null, lastDeliveredMs: now + 4, failuresInRow: 0 });
    await ask(d, 'a.3', now + 8, now + 8, 'ws_a');
    await release(d, 'a.3', FAST_OK, now + 9, 'ws_a');
    expect(await shareOf(d, 'ws_a', now + 10)).toMatchObject({ lastFailedMs: now + 3, lastDeliveredMs: now + 9, failuresInRow: 0 });
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
    await release(d, 'n1', QUIET_SIGNAL, now + 1);
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

  it('gives every key of a destination an expiry, renewed by a give-back only once half of it has gone', async () => {
    const d = fresh();
    const now = Date.now();
    const DAY = 86_400_000;
    const leases = keys.destinationLeases(d.id);
    const holders = keys.destinationHolders(d.id);
    const shares = keys.destinationShares(d.id);
    const state = keys.destinationState(d.id);
    const expiries = async () => Promise.all([leases, holders, shares, state].map((k) => redis.pttl(k)));
    await ask(d, 'k1', now);
    await ask(d, 'k2', now);
    await release(d, 'k1', FAST_OK, now + 1);
    // Made by the slots taken after the activity note, the leases and their holders get theirs at the first give-back.
    for (const ms of await expiries()) expect(ms).toBeGreaterThan(DAY - 60_000);

    // More than half left: a give-back leaves the expiries as they are.
    for (const key of [leases, holders, shares]) await redis.pexpire(key, DAY / 2 + 3_600_000);
    await ask(d, 'k3', now + 2);
    await release(d, 'k2', FAST_OK, now + 3);
    for (const ms of (await expiries()).slice(0, 3)) expect(ms).toBeLessThanOrEqual(DAY / 2 + 3_600_000);

    // Less than half left: every key is kept for the whole time again.
    await redis.pexpire(shares, DAY / 2 - 3_600_000);
    await release(d, 'k3', FAST_OK, now + 4);
    expect(await redis.exists(leases, holders)).toBe(0); // its last lease given back
    for (const ms of (await expiries()).slice(2)) expect(ms).toBeGreaterThan(DAY - 60_000);

    // Leases made again after the last keep have no expiry of their own until the next give-back.
    for (const key of [holders, shares]) await redis.pexpire(key, DAY / 2 + 3_600_000);
    await ask(d, 'k4', now + 5);
    await ask(d, 'k5', now + 5);
    expect(await redis.pttl(leases)).toBe(-1);
    await release(d, 'k4', FAST_OK, now + 6);
    expect(await redis.pttl(leases)).toBeGreaterThan(DAY - 60_000);
    expect(await redis.pttl(shares)).toBeGreaterThan(DAY - 60_000);
  });
});
