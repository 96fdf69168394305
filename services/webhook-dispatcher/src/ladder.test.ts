import { jobIds } from '@media/common';
import { attemptKey, maxAttempts, nextAttemptAt } from './ladder';

const DEFAULT = [60_000, 300_000, 1_800_000, 7_200_000, 28_800_000];

describe('retry ladder', () => {
  it('has six automatic attempts with the default five gaps', () => {
    expect(maxAttempts(DEFAULT)).toBe(6);
  });

  it('puts each attempt its configured gap after the previous one ended', () => {
    const ended = 1_700_000_000_000;
    expect(nextAttemptAt(DEFAULT, 1, ended)).toBe(ended + 60_000);
    expect(nextAttemptAt(DEFAULT, 2, ended)).toBe(ended + 300_000);
    expect(nextAttemptAt(DEFAULT, 3, ended)).toBe(ended + 1_800_000);
    expect(nextAttemptAt(DEFAULT, 4, ended)).toBe(ended + 7_200_000);
    expect(nextAttemptAt(DEFAULT, 5, ended)).toBe(ended + 28_800_000);
  });

  it('schedules nothing after the last attempt', () => {
    expect(nextAttemptAt(DEFAULT, 6, 0)).toBeNull();
    expect(nextAttemptAt(DEFAULT, 7, 0)).toBeNull();
    expect(nextAttemptAt([], 1, 0)).toBeNull();
  });

  it('adds up to about 10.6 hours from the first attempt to the last (design section 1)', () => {
    let at = 0;
    for (let attempt = 1; attempt < 6; attempt++) at = nextAttemptAt(DEFAULT, attempt, at)!;
    expect(at / 3_600_000).toBeCloseTo(10.6, 1);
  });

  it.each([0, -1, 1.5, Number.NaN])('refuses attempt number %p', (attempt) => {
    expect(() => nextAttemptAt(DEFAULT, attempt, 0)).toThrow(RangeError);
  });
});

describe('delivery ids', () => {
  it('are deterministic per message and automatic attempt, and free of ":" (BullMQ 6 rejects most ids with it)', () => {
    expect(jobIds.delivery('msg_abc', 3, 'scheduled')).toBe('msg_abc.3');
    expect(jobIds.delivery('msg_abc', 3, 'scheduled')).toBe(jobIds.delivery('msg_abc', 3, 'scheduled'));
    expect(jobIds.delivery('msg_abc', 3, 'scheduled')).not.toBe(jobIds.delivery('msg_abc', 4, 'scheduled'));
    expect(jobIds.delivery('msg_abc', 1, 'manual')).toMatch(/^msg_abc\.manual\.\d+$/);
  });

  it('key automatic attempts by number and manual ones by request', () => {
    expect(attemptKey('scheduled', 2, 'ignored')).toBe('auto.2');
    expect(attemptKey('manual', 2, 'msg_abc.manual.17')).toBe('manual.msg_abc.manual.17');
  });
});
