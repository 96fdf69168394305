import { formatResetDuration } from './rate-limit';

describe('formatResetDuration', () => {
  it.each([
    [0, '0ms'],
    [250, '250ms'],
    [999.2, '1000ms'],
    [1_000, '1s'],
    [1_001, '2s'],
    [59_000, '59s'],
    [60_000, '1m0s'],
    [360_000, '6m0s'],
    [3_723_000, '1h2m3s'],
  ])('%d ms is %s, as OpenAI writes it', (ms, text) => {
    expect(formatResetDuration(ms)).toBe(text);
  });
});
