import { PermanentJobError } from '@media/common';

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
