/**
 * Which rule a refused `callback_url` broke. Stable strings: the API maps them to a 400 body and the
 * dispatcher records them as the attempt's error class, so renaming one is a breaking change.
 */
export type RejectionReason = 'malformed' | 'scheme' | 'credentials' | 'port' | 'private_address' | 'unresolvable';

/**
 * Thrown by {@link CallbackUrlGuard.check} when a callback URL must not be called. The message is
 * written for the API client (it is safe to echo back); `reason` is for code.
 */
export class CallbackUrlRejectedError extends Error {
  override readonly name = 'CallbackUrlRejectedError';
  /** The rule that failed. */
  readonly reason: RejectionReason;
  /**
   * The refused addresses a host name resolved to: for server-side logs only. They stay out of the
   * message, which the API echoes, so that callers cannot map internal names to internal addresses.
   */
  readonly refusedAddresses: readonly string[];

  /**
   * @param reason - the rule that failed
   * @param message - human-readable, names the rule (and the offending address where there is one)
   * @param options - `cause` carries the resolver error for `unresolvable`, so callers can still tell a
   *   transient DNS failure from a name that does not exist
   */
  constructor(reason: RejectionReason, message: string, options?: ErrorOptions & { refusedAddresses?: readonly string[] }) {
    super(message, options);
    this.reason = reason;
    this.refusedAddresses = options?.refusedAddresses ?? [];
  }
}
