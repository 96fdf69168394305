/**
 * The automatic retry ladder of a callback (spec section 8), in one place: how many automatic
 * attempts a callback gets, the gaps between them (`WEBHOOK_RETRY_SCHEDULE`), how a future attempt
 * is named in the deliveries queue's schedule, and what comes after the last one (nothing: the
 * callback is `failed`; only a manual retry sends it again).
 *
 * Its readers: the configuration (parses and validates the schedule), the queue catalogue (writes
 * and reads the schedule's entries), the dispatcher (when the next attempt is due, whether one is
 * left), and the store's Lua scripts, which get from here, as ARGV, what they need to name an entry.
 */

/**
 * Automatic attempts per callback: the first as soon as its job ends, then one after each gap of
 * the schedule. When the last one fails the callback is `failed`.
 */
export const LADDER_ATTEMPTS = 6;

/**
 * The gaps before attempts 2..{@link LADDER_ATTEMPTS}, in ms, in order: gap `i` (0-based) runs from
 * the end of attempt `i + 1` to the start of attempt `i + 2`.
 */
export type RetrySchedule = readonly number[];

/** `WEBHOOK_RETRY_SCHEDULE`'s default: about 10.6 hours from the first attempt to the last. */
export const DEFAULT_RETRY_SCHEDULE = '1m,5m,30m,2h,8h';

/** {@link DEFAULT_RETRY_SCHEDULE} in ms. */
export const DEFAULT_RETRY_GAPS_MS: RetrySchedule = [60_000, 300_000, 1_800_000, 7_200_000, 28_800_000];

/** A retry schedule that cannot be read: the message says what is wrong with it. */
export class RetryScheduleError extends Error {
  override readonly name = 'RetryScheduleError';
}

const GAP = /^(\d+)(ms|s|m|h)$/;
const UNIT_MS: Record<string, number> = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000 };
/**
 * The longest gap a schedule may hold: a day, which keeps a whole ladder within a week (a callback's
 * retention) and every gap a valid Node timer.
 */
const MAX_GAP_MS = 86_400_000;

/**
 * A schedule from its text: exactly one gap per attempt after the first, comma-separated, each a
 * whole number with a unit (`ms`, `s`, `m`, `h`), e.g. `1m,5m,30m,2h,8h` or `1s,1s,1s,1s,1s`.
 *
 * @throws RetryScheduleError when a gap cannot be read or there are not exactly five of them
 */
export function parseRetrySchedule(text: string): RetrySchedule {
  const parts = text.split(',').map((part) => part.trim());
  const gaps = LADDER_ATTEMPTS - 1;
  const expected = `must list ${gaps} gaps (attempts 2-${LADDER_ATTEMPTS}) like ${DEFAULT_RETRY_SCHEDULE}`;
  const unreadable = parts.find((part) => !GAP.test(part));
  if (unreadable !== undefined) throw new RetryScheduleError(`${expected}; "${unreadable}" is not a whole number with a unit ms, s, m or h`);
  if (parts.length !== gaps) throw new RetryScheduleError(`${expected}; it has ${parts.length}`);
  const schedule = parts.map((part) => {
    const [, amount, unit] = GAP.exec(part)!;
    return Number(amount) * UNIT_MS[unit];
  });
  const tooLong = schedule.findIndex((gap) => gap > MAX_GAP_MS);
  if (tooLong !== -1) throw new RetryScheduleError(`${expected}; "${parts[tooLong]}" is longer than a gap may be (24h)`);
  return schedule;
}

/**
 * What separates the callback's id from the attempt's number in {@link scheduledAttemptId}. The
 * store's scripts name the next attempt's entry themselves (in the step that records an attempt,
 * from the record's own count) and get this as ARGV rather than spelling it.
 */
export const SCHEDULED_ATTEMPT_SEPARATOR = '.';

/**
 * The name of automatic attempt `attempt` of callback `messageId` while it waits: its member in the
 * deliveries queue's schedule (a sorted set scored by when it is due) and the id of the delivery
 * job it becomes, `<msg id>.<attempt>`. Deterministic, so an attempt is scheduled and queued once
 * however often it is written; free of ':', which BullMQ 6 refuses in job ids.
 */
export function scheduledAttemptId(messageId: string, attempt: number): string {
  return `${messageId}${SCHEDULED_ATTEMPT_SEPARATOR}${attempt}`;
}

const SCHEDULED_ATTEMPT = new RegExp(`^(msg_[A-Za-z0-9]+)${SCHEDULED_ATTEMPT_SEPARATOR.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}([1-9][0-9]?)$`);

/** The callback and attempt a schedule member names ({@link scheduledAttemptId}), or undefined for anything else. */
export function parseScheduledAttempt(member: string): { messageId: string; attempt: number } | undefined {
  const match = SCHEDULED_ATTEMPT.exec(member);
  return match ? { messageId: match[1]!, attempt: Number(match[2]) } : undefined;
}

function checkAttempt(attempt: number): void {
  if (!Number.isInteger(attempt) || attempt < 1) throw new RangeError(`attempt must be a positive integer, got ${attempt}`);
}

/** Whether automatic attempt `attempt` is the ladder's last (or past it): none follows, and its failure ends the callback `failed`. */
export function isLastAttempt(attempt: number): boolean {
  checkAttempt(attempt);
  return attempt >= LADDER_ATTEMPTS;
}

/**
 * How long after automatic attempt `attempt` ended the next one is due; null when `attempt` was the
 * last.
 *
 * @throws RangeError for an attempt that is not a positive integer, or a schedule without its gap
 */
export function nextAttemptDelay(attempt: number, schedule: RetrySchedule): number | null {
  if (isLastAttempt(attempt)) return null;
  const gap = schedule[attempt - 1];
  if (gap === undefined) throw new RangeError(`the schedule has ${schedule.length} gaps; attempt ${attempt} needs one after it`);
  return gap;
}

/**
 * When automatic attempt `attempt + 1` is due, given that attempt `attempt` ended at `endedMs`; null
 * when `attempt` was the last.
 *
 * The gap runs from the end of the previous attempt, not its start, so a receiver that times out
 * still gets the full gap before it is called again.
 */
export function nextAttemptAt(attempt: number, endedMs: number, schedule: RetrySchedule): number | null {
  const delay = nextAttemptDelay(attempt, schedule);
  return delay === null ? null : endedMs + delay;
}

/**
 * Manual attempts of bulk recoveries (`POST /v1/callbacks/recover`, after the ladder ran out) that a
 * workspace makes per second at most, so a receiver back from an outage is not flooded: queued at
 * this pace, and an attempt whose destination has no free slot waits for the pace's next turn.
 */
export const RECOVERY_ATTEMPTS_PER_SECOND = 5;
