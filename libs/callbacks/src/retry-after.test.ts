import { MAX_RETRY_AFTER_MS, parseRetryAfter } from './retry-after';

describe('parseRetryAfter', () => {
  const now = Date.parse('2026-11-24T12:00:00Z');

  it('reads delay-seconds', () => {
    expect(parseRetryAfter('120', now)).toBe(120_000);
    expect(parseRetryAfter(' 0 ', now)).toBe(0);
  });

  it('reads each form of HTTP-date as GMT, relative to now', () => {
    expect(parseRetryAfter('Tue, 24 Nov 2026 12:00:30 GMT', now)).toBe(30_000);
    expect(parseRetryAfter('Tuesday, 24-Nov-26 12:01:00 GMT', now)).toBe(60_000);
    // asctime has no zone; it is GMT all the same, whatever the process's time zone.
    expect(parseRetryAfter('Tue Nov 24 12:00:05 2026', now)).toBe(5_000);
    expect(parseRetryAfter('Tue Nov  1 12:00:05 2026', Date.parse('2026-11-01T12:00:00Z'))).toBe(5_000);
  });

  it('makes a negative delay or a date already past 0', () => {
    expect(parseRetryAfter('-5', now)).toBe(0);
    expect(parseRetryAfter('Tue, 24 Nov 2026 11:00:00 GMT', now)).toBe(0);
    // Two-digit years more than 50 years ahead are in the past century.
    expect(parseRetryAfter('Sunday, 06-Nov-94 08:49:37 GMT', now)).toBe(0);
  });

  it(`clamps to ${MAX_RETRY_AFTER_MS / 60_000} minutes`, () => {
    expect(parseRetryAfter('999999', now)).toBe(MAX_RETRY_AFTER_MS);
    expect(parseRetryAfter('9'.repeat(400), now)).toBe(MAX_RETRY_AFTER_MS);
    expect(parseRetryAfter('Fri, 24 Nov 2028 12:00:00 GMT', now)).toBe(MAX_RETRY_AFTER_MS);
  });

  it('is null when absent or unreadable, rather than guessing a date', () => {
    for (const value of [
      undefined,
      '',
      'soon',
      '1.5',
      '5 min',
      'Nov 6',
      '2026-11-24T12:00:30Z',
      'Tue, 31 Feb 2026 12:00:00 GMT',
      'Tue, 24 Nov 2026 12:00:30 PST',
    ]) {
      expect(parseRetryAfter(value, now)).toBeNull();
    }
  });
});
