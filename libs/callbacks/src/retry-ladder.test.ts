import { callbackIdFor } from '@media/domain';
import {
  DEFAULT_RETRY_GAPS_MS,
  DEFAULT_RETRY_SCHEDULE,
  isLastAttempt,
  LADDER_ATTEMPTS,
  nextAttemptAt,
  nextAttemptDelay,
  parseRetrySchedule,
  parseScheduledAttempt,
  RetryScheduleError,
  scheduledAttemptId,
} from './retry-ladder';

describe('the retry schedule', () => {
  it('has six automatic attempts, so five gaps, by default those of the spec', () => {
    expect(LADDER_ATTEMPTS).toBe(6);
    expect(parseRetrySchedule(DEFAULT_RETRY_SCHEDULE)).toEqual(DEFAULT_RETRY_GAPS_MS);
    expect(DEFAULT_RETRY_GAPS_MS).toHaveLength(LADDER_ATTEMPTS - 1);
  });

  it('reads every unit, with spaces around the gaps', () => {
    expect(parseRetrySchedule('300ms, 1s,2m ,1h,8h')).toEqual([300, 1_000, 120_000, 3_600_000, 28_800_000]);
    expect(parseRetrySchedule('0ms,0ms,0ms,0ms,0ms')).toEqual([0, 0, 0, 0, 0]);
  });

  it.each([
    ['too few gaps', '1m,5m', /must list 5 gaps \(attempts 2-6\) like 1m,5m,30m,2h,8h; it has 2/],
    ['too many gaps', '1s,1s,1s,1s,1s,1s', /it has 6/],
    ['an empty gap', '1m,5m,,2h,8h', /"" is not a whole number with a unit/],
    ['nothing', '', /"" is not a whole number/],
    ['a unit it does not know', '1m,5m,30m,2h,1d', /"1d" is not/],
    ['a gap without a unit', '1m,5m,30m,2h,8', /"8" is not/],
    ['a fraction', '1m,5m,30m,2h,1.5h', /"1.5h" is not/],
    ['a negative gap', '1m,5m,30m,2h,-8h', /"-8h" is not/],
  ])('refuses %s', (_what, text, message) => {
    expect(() => parseRetrySchedule(text)).toThrow(RetryScheduleError);
    expect(() => parseRetrySchedule(text)).toThrow(message);
  });
});

describe('the ladder', () => {
  const ended = 1_700_000_000_000;

  it('puts each attempt its gap after the previous one ended', () => {
    expect([1, 2, 3, 4, 5].map((attempt) => nextAttemptDelay(attempt, DEFAULT_RETRY_GAPS_MS))).toEqual(DEFAULT_RETRY_GAPS_MS);
    expect(nextAttemptAt(1, ended, DEFAULT_RETRY_GAPS_MS)).toBe(ended + 60_000);
    expect(nextAttemptAt(5, ended, DEFAULT_RETRY_GAPS_MS)).toBe(ended + 28_800_000);
  });

  it('ends with attempt 6: nothing follows it (its failure ends the callback)', () => {
    expect([1, 2, 3, 4, 5, 6, 7].map(isLastAttempt)).toEqual([false, false, false, false, false, true, true]);
    expect(nextAttemptDelay(6, DEFAULT_RETRY_GAPS_MS)).toBeNull();
    expect(nextAttemptAt(6, ended, DEFAULT_RETRY_GAPS_MS)).toBeNull();
    expect(nextAttemptAt(7, ended, DEFAULT_RETRY_GAPS_MS)).toBeNull();
  });

  it('adds up to about 10.6 hours from the first attempt to the last (design section 1)', () => {
    let at = 0;
    for (let attempt = 1; !isLastAttempt(attempt); attempt++) at = nextAttemptAt(attempt, at, DEFAULT_RETRY_GAPS_MS)!;
    expect(at / 3_600_000).toBeCloseTo(10.6, 1);
  });

  it.each([0, -1, 1.5, Number.NaN])('refuses attempt number %p', (attempt) => {
    expect(() => isLastAttempt(attempt)).toThrow(RangeError);
    expect(() => nextAttemptDelay(attempt, DEFAULT_RETRY_GAPS_MS)).toThrow(RangeError);
  });

  it('refuses a schedule without the gap an attempt needs rather than schedule it at NaN', () => {
    expect(() => nextAttemptDelay(3, [1_000, 1_000])).toThrow(RangeError);
  });
});

describe('scheduled attempts', () => {
  const messageId = callbackIdFor('img_abc', 'image.completed');

  it('are named <msg id>.<attempt>, and read back to the same callback and attempt', () => {
    expect(scheduledAttemptId('msg_abc', 3)).toBe('msg_abc.3');
    for (let attempt = 1; attempt <= LADDER_ATTEMPTS; attempt++) {
      const member = scheduledAttemptId(messageId, attempt);
      expect(member).not.toContain(':'); // BullMQ 6 refuses most job ids with one
      expect(parseScheduledAttempt(member)).toEqual({ messageId, attempt });
    }
  });

  it.each([
    ['not a callback', 'not-a-delivery'],
    ['another kind of id', 'img_abc.2'],
    ['no attempt', 'msg_abc.'],
    ['attempt 0', 'msg_abc.0'],
    ['a requeued delivery job', 'msg_abc.2.r1'],
    ['a manual delivery job', 'msg_abc.manual.17'],
    ['a deferred delivery job', 'msg_abc.2.d1'],
  ])('read nothing from %s', (_what, member) => {
    expect(parseScheduledAttempt(member)).toBeUndefined();
  });
});
