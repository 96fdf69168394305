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
