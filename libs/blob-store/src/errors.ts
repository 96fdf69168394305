/** The blob does not exist (never written, or removed): the caller's "not found" path, whatever the store. */
export class BlobNotFoundError extends Error {
  override readonly name = 'BlobNotFoundError';

  constructor(
    readonly key: string,
    options?: ErrorOptions,
  ) {
    super(`blob ${key} does not exist`, options);
  }
}

/**
 * The store could not be reached or answered that it cannot serve now (a refused or reset connection,
 * a timeout, a 5xx, throttling). Transient: the gateway answers `503 service_unavailable` with
 * `Retry-After`, and a generator job throws it so that BullMQ tries again.
 */
export class BlobStoreUnavailableError extends Error {
  override readonly name = 'BlobStoreUnavailableError';

  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
  }
}

/** A key that could escape the store's namespace; keys in links are user-supplied text. */
export class InvalidBlobKeyError extends Error {
  override readonly name = 'InvalidBlobKeyError';

  constructor() {
    super('invalid blob key');
  }
}
