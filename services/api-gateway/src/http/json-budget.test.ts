import { BodyBudget } from './json-budget';

describe('BodyBudget', () => {
  let now: number;
  let cut: string[];
  let budget: BodyBudget;
  const take = (bytes: number, workspaceId: string, name = workspaceId) => budget.take(bytes, workspaceId, () => cut.push(name));

  beforeEach(() => {
    now = 0;
    cut = [];
    budget = new BodyBudget(100, 10_000, () => now);
  });

  it('holds what each request declares until it is given back, and refuses what does not fit', () => {
    const a = take(60, 'ws_a')!;
    expect(take(50, 'ws_b')).toBeUndefined();
    a.release();
    a.release();
    expect(take(100, 'ws_b')).toBeDefined();
    expect(cut).toEqual([]);
  });

  it('gives the place of bodies of other workspaces arriving for too long to a request that waits, oldest first, and only as many as it needs', () => {
    take(60, 'ws_a');
    now = 1_000;
    take(40, 'ws_b');
    now = 9_999;
    expect(take(50, 'ws_c')).toBeUndefined();
    now = 11_000;
    expect(take(50, 'ws_c')).toBeDefined();
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
