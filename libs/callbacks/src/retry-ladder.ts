/**
 * The automatic retry ladder of a callback (spec section 8), as the dispatcher runs it: whether an
 * attempt was the last, when the next one is due, and the pace of bulk recoveries once the ladder
 * ran out. What happens after each attempt is in callback-service.ts (it records the attempt and
 * schedules the next in one Redis step: lua/callback-record-attempt.lua with
 * lua/includes/callback-schedule-next.lua); after the last, the callback is `failed` and only a
 * manual retry sends it again.
 *
 * The ladder's shape (six attempts, the gaps of `WEBHOOK_RETRY_SCHEDULE` and how a scheduled
 * attempt is named in the deliveries queue) is vocabulary that the configuration and the queue
 * catalogue read too, so it is declared in `@media/domain` (callbacks.ts) and re-exported here.
 */
import { LADDER_ATTEMPTS, type RetrySchedule } from '@media/domain';

export {
  DEFAULT_RETRY_GAPS_MS,
  DEFAULT_RETRY_SCHEDULE,
  LADDER_ATTEMPTS,
  parseRetrySchedule,
  parseScheduledAttempt,
  RetryScheduleError,
  SCHEDULED_ATTEMPT_SEPARATOR,
  scheduledAttemptId,
  type RetrySchedule,
} from '@media/domain';

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
