import { UnrecoverableError } from 'bullmq';

const REASON = /^\[([a-z_]+)\] ([\s\S]*)$/;

/**
 * A failure that no retry can fix: BullMQ fails the job at once instead of retrying it.
 *
 * The one way to fail in every consumer: permanent failures are (subclasses of) this, transient
 * ones are any other thrown error. The message starts with `[code]`, because after a crash the
 * give-up is recovered from BullMQ's failed set, where only the message (`failedReason`) is kept.
 */
export class PermanentJobError extends UnrecoverableError {
  constructor(
    readonly code: string,
    readonly detail: string,
  ) {
    super(`[${code}] ${detail}`);
  }

  /** The code and detail of a permanent failure from its `failedReason`; undefined for any other reason. */
  static parse(reason: string): { code: string; detail: string } | undefined {
    const match = REASON.exec(reason);
    return match ? { code: match[1], detail: match[2] } : undefined;
  }
}
