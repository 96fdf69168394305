export interface BackoffOptions {
  /** The first delay before jitter. */
  initialMs: number;
  /** No delay is longer. */
  maxMs: number;
  /** [0, 1): where in its window each delay falls. */
  random: () => number;
}

/**
 * Exponential backoff with jitter: the n-th delay in a row is drawn from the upper half of
 * `min(max, initial * 2^n)`, so that listeners cut off together (a gateway restart) do not all
 * come back at the same instant, and none waits less than half its step.
 */
export class Backoff {
  private failures = 0;

  constructor(private readonly options: BackoffOptions) {}

  /** The delay before the next attempt; each call counts one more failure. */
  next(): number {
    const step = Math.min(this.options.maxMs, this.options.initialMs * 2 ** Math.min(this.failures, 30));
    this.failures++;
    return Math.round(step / 2 + (step / 2) * this.options.random());
  }

  /** After a connection that held: the next delay is the first one again. */
  reset(): void {
    this.failures = 0;
  }
}
