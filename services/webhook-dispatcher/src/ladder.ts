/**
 * The automatic retry ladder (spec section 8): attempt 1 as soon as the job ends, then one attempt
 * after each configured gap, so six attempts with the default five gaps.
 */
export const maxAttempts = (scheduleMs: readonly number[]): number => scheduleMs.length + 1;

/**
 * When automatic attempt `attempt + 1` is due, given that attempt `attempt` ended at `endedMs`;
 * null when `attempt` was the last one.
 *
 * The gap runs from the end of the previous attempt, not its start, so a receiver that times out
 * still gets the full gap before it is called again.
 */
export function nextAttemptAt(scheduleMs: readonly number[], attempt: number, endedMs: number): number | null {
  if (!Number.isInteger(attempt) || attempt < 1) throw new RangeError(`attempt must be a positive integer, got ${attempt}`);
  if (attempt >= maxAttempts(scheduleMs)) return null;
  return endedMs + scheduleMs[attempt - 1];
}

// The attempt log's keys belong to the store, which the callback administration library also reads.
export { attemptKey } from '@media/storage';
