import type { JobErrorCode } from '@media/domain';

/** A failure that retrying cannot fix: the job ends `failed` with this code and is not charged. */
export class PermanentGenerationError extends Error {
  constructor(
    readonly code: JobErrorCode,
    message: string,
  ) {
    super(message);
    this.name = 'PermanentGenerationError';
  }
}

export class GenerationTimeoutError extends Error {
  constructor(timeoutMs: number) {
    super(`generation took longer than ${timeoutMs} ms`);
    this.name = 'GenerationTimeoutError';
  }
}
