import { Backoff } from './backoff';

describe('Backoff', () => {
  it('doubles from the first delay up to the cap, each drawn from the upper half of its step', () => {
    const top = new Backoff({ initialMs: 500, maxMs: 30_000, random: () => 0.999_999 });
    expect(Array.from({ length: 9 }, () => top.next())).toEqual([500, 1000, 2000, 4000, 8000, 16_000, 30_000, 30_000, 30_000]);
    const bottom = new Backoff({ initialMs: 500, maxMs: 30_000, random: () => 0 });
    expect(Array.from({ length: 8 }, () => bottom.next())).toEqual([250, 500, 1000, 2000, 4000, 8000, 15_000, 15_000]);
  });

  it('starts over after reset', () => {
    const backoff = new Backoff({ initialMs: 500, maxMs: 30_000, random: () => 0.5 });
    expect([backoff.next(), backoff.next(), backoff.next()]).toEqual([375, 750, 1500]);
    backoff.reset();
    expect(backoff.next()).toBe(375);
  });

  it('stays at the cap however many failures', () => {
    const backoff = new Backoff({ initialMs: 500, maxMs: 30_000, random: () => 0.999_999 });
    for (let i = 0; i < 2000; i++) backoff.next();
    expect(backoff.next()).toBe(30_000);
  });
});
