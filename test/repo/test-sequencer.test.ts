import { longestDeclaredTimeoutMs } from '../support/test-sequencer';

describe('the order test files start in, where Jest has no time for them', () => {
  it('estimates a file by the longest timeout it declares', () => {
    const source = `
      await eventually(() => ready(), 30_000, 'ready');
      it('waits', async () => { await sleep(1_500); }, 300_000);
      const size = 2000;
    `;
    expect(longestDeclaredTimeoutMs(source)).toBe(300_000);
    expect(longestDeclaredTimeoutMs('it("is quick", () => expect(1).toBe(1));')).toBe(0);
  });
});
