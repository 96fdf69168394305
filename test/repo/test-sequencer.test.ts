import { longestDeclaredTimeoutMs } from '../support/test-sequencer';

describe('the order test files start in, where Jest has no time for them', () => {
  it('estimates a file by the longest timeout its tests and hooks declare', () => {
    const source = `
      jest.setTimeout(90_000);
      beforeAll(async () => {
        await start();
      }, 120_000);
      it('waits', async () => {
        await eventually(() => ready(), 600_000, 'ready');
        expect(ends).toBeLessThan(now + 3_600_000);
      }, 300_000);
    `;
    expect(longestDeclaredTimeoutMs(source)).toBe(300_000);
    expect(longestDeclaredTimeoutMs('jest.setTimeout(180_000);')).toBe(180_000);
    // A wait's own bound and other durations say nothing of how long the file runs.
    expect(longestDeclaredTimeoutMs("await eventually(() => ready(), 600_000, 'ready');")).toBe(0);
    expect(longestDeclaredTimeoutMs('it("is quick", () => expect(1).toBe(1));')).toBe(0);
  });
});
