import type { AttemptErrorClass, AttemptTiming } from '@media/domain';

/** What came of one POST of a callback: the sender (the dispatcher's WebhookSender) makes it, the delivery records it. */
export interface Exchange {
  /** Unix ms when the request started. */
  sentMs: number;
  durationMs: number;
  /** The receiver's status, when an answer arrived. */
  status: number | null;
  /** Set when the exchange failed below HTTP: timeout, refused, reset, TLS... */
  transportError: AttemptErrorClass | null;
  transportDetail: string | null;
  /**
   * The IP the socket went to (or was about to), or null when nothing was dialled. For a reused
   * connection, its peer address.
   */
  address: string | null;
  excerpt: string;
  /** Phase timings as got measured them; absent when no request was made. */
  timing?: AttemptTiming;
  /** How long the receiver asked us to wait (its `Retry-After`, see parseRetryAfter in retry-after.ts), or null when it did not say. */
  retryAfterMs: number | null;
}
