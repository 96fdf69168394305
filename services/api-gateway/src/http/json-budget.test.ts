import { gzipSync } from 'node:zlib';
import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import express from 'express';
import { BodyBudget, budgetedJson, MIN_BODY_RATE_BYTES_PER_S, PREEMPT_GRACE_MS } from './json-budget';
import { errorHandler } from './middleware';

describe('BodyBudget', () => {
  let now: number;
  let cut: string[];
  let arrived: Map<string, number>;
  let budget: BodyBudget;
  const take = (bytes: number, workspaceId: string, name = workspaceId) =>
    budget.take(bytes, { workspaceId, arrived: () => arrived.get(name) ?? 0, cutShort: () => cut.push(name) });

  beforeEach(() => {
    now = 0;
    cut = [];
    arrived = new Map();
    budget = new BodyBudget(100, () => now);
  });

  it('holds what each request declares until it is given back, and refuses what does not fit', () => {
    const a = take(60, 'ws_a')!;
    expect(take(50, 'ws_b')).toBeUndefined();
    a.release();
    a.release();
    expect(take(100, 'ws_b')).toBeDefined();
    expect(cut).toEqual([]);
  });

  it('gives the place of a body that stopped arriving to another workspace once the grace has passed, slowest first, only as many as needed', () => {
    take(60, 'ws_a');
    take(40, 'ws_b');
    now = PREEMPT_GRACE_MS - 1;
    expect(take(50, 'ws_c')).toBeUndefined();
    now = PREEMPT_GRACE_MS;
    // ws_b has sent a little: ws_a, which sent nothing, goes first, and that is enough.
    arrived.set('ws_b', 10);
    expect(take(50, 'ws_c')).toBeDefined();
    expect(cut).toEqual(['ws_a']);
  });

  it('keeps a body arriving fast enough, and takes one that began fast and then stopped', () => {
    take(100, 'ws_a');
    const fast = (MIN_BODY_RATE_BYTES_PER_S * 2 * PREEMPT_GRACE_MS) / 1000;
    now = PREEMPT_GRACE_MS;
    arrived.set('ws_a', fast);
    expect(take(50, 'ws_b')).toBeUndefined();
    // Nothing more arrives for the grace: stopped, whatever it averaged.
    now = 2 * PREEMPT_GRACE_MS;
    expect(take(50, 'ws_b')).toBeDefined();
    expect(cut).toEqual(['ws_a']);
  });

  it('cuts a body averaging under the rate once the grace has passed, even while bytes still come', () => {
    take(100, 'ws_a');
    now = PREEMPT_GRACE_MS;
    arrived.set('ws_a', (MIN_BODY_RATE_BYTES_PER_S * PREEMPT_GRACE_MS) / 1000 / 2);
    expect(take(50, 'ws_b')).toBeDefined();
    expect(cut).toEqual(['ws_a']);
  });

  it('cuts nobody short when that would not make room, nor a body that has arrived, nor one of the same workspace', () => {
    const a = take(60, 'ws_a')!;
    take(40, 'ws_b');
    now = 20_000;
    // Only ws_b's 40 could go, and 50 would still not fit.
    expect(take(50, 'ws_a')).toBeUndefined();
    a.received();
    expect(take(50, 'ws_c')).toBeUndefined();
    expect(cut).toEqual([]);
    expect(take(40, 'ws_b', 'ws_b again')).toBeUndefined();
    expect(take(40, 'ws_c')).toBeDefined();
    expect(cut).toEqual(['ws_b']);
  });
});

describe('budgetedJson', () => {
  it('counts a compressed body as the cap, whatever it declares: it may inflate to that much', async () => {
    let letGo!: () => void;
    const held = new Promise<void>((resolve) => (letGo = resolve));
    let arrived!: () => void;
    const first = new Promise<void>((resolve) => (arrived = resolve));
    const app = express();
    app.post('/', budgetedJson(100_000), async (req, res) => {
      arrived();
      await held;
      res.json({ size: JSON.stringify(req.body).length });
    });
    app.use(errorHandler());
    const server = app.listen(0, '127.0.0.1');
    await once(server, 'listening');
    try {
      const small = gzipSync(JSON.stringify({ a: 'x'.repeat(50_000) }));
      const post = () =>
        fetch(`http://127.0.0.1:${(server.address() as AddressInfo).port}/`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'content-encoding': 'gzip' },
          body: small,
        });
      const holding = post();
      await first;
      const second = await post();
      expect([second.status, ((await second.json()) as { error: { code: string } }).error.code]).toEqual([503, 'server_busy']);
      letGo();
      expect((await holding).status).toBe(200);
    } finally {
      server.close();
    }
  });
});
