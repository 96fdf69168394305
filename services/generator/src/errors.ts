import { PermanentJobError } from '@media/common';
import type { JobError, JobErrorCode } from '@media/domain';

const JOB_ERROR_CODES: readonly JobErrorCode[] = ['moderation_blocked', 'invalid_image', 'generation_failed'];

/** A failure that retrying cannot fix: the job ends `failed` with this code and is not charged. */
export class PermanentGenerationError extends PermanentJobError {
  constructor(
    override readonly code: JobErrorCode,
    message: string,
  ) {
    super(code, message);
  }
}

/** Transient: the job is tried again while BullMQ has attempts left. */
export class GenerationTimeoutError extends Error {
  override readonly name = 'GenerationTimeoutError';

  constructor(timeoutMs: number) {
    super(`${TIMEOUT_PREFIX} ${timeoutMs} ms`);
  }
}

const TIMEOUT_PREFIX = 'generation took longer than';

/**
 * The error a client sees for a job BullMQ gave up on, from what BullMQ kept of the last failure.
 * Internal details (stack, Redis messages) stay in the logs and in BullMQ's failed set.
 */
export function jobErrorFor(reason: string, permanent: { code: string; detail: string } | undefined): JobError {
  if (permanent && (JOB_ERROR_CODES as readonly string[]).includes(permanent.code)) {
    return { code: permanent.code as JobErrorCode, message: permanent.detail };
  }
  if (reason.startsWith(TIMEOUT_PREFIX)) return { code: 'generation_failed', message: 'Generation timed out.' };
  return { code: 'generation_failed', message: 'The generator failed to produce output.' };
}
