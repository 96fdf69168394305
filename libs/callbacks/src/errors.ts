import { PermanentJobError } from '@media/common';

/** No callback with that id in the caller's workspace (another workspace's callback looks the same). */
export class CallbackNotFoundError extends Error {
  override readonly name = 'CallbackNotFoundError';

  constructor(readonly messageId: string) {
    super(`no callback ${messageId}`);
  }
}

/** A recovery window holding more failed callbacks than one recovery retries. */
export class RecoveryTooLargeError extends Error {
  override readonly name = 'RecoveryTooLargeError';

  constructor(
    readonly found: number,
    readonly max: number,
  ) {
    super(`the window holds ${found} failed callbacks; one recovery retries at most ${max}: narrow since/until`);
  }
}

/** An `Idempotency-Key` sent before with other work (another callback's retry, or a job). */
export class IdempotencyKeyReusedError extends Error {
  override readonly name = 'IdempotencyKeyReusedError';

  constructor() {
    super('the Idempotency-Key was used for a different request');
  }
}

/**
 * A delivery that cannot be attempted at all and never will be (its job record or every signing
 * secret is gone). An UnrecoverableError, so BullMQ fails it at once instead of retrying; the
 * dispatcher then ends the callback as `failed`.
 */
export class UndeliverableCallbackError extends PermanentJobError {
  constructor(
    readonly messageId: string,
    reason: string,
  ) {
    super('undeliverable', `callback ${messageId} cannot be delivered: ${reason}`);
  }
}
