import { createHash } from 'node:crypto';

/**
 * Where callbacks go, as isolation sees it: one receiver origin (scheme, host and port, the way a
 * browser scopes a site), whatever the path, and whichever workspace's callbacks go there. Caps,
 * the slow lane and back-pressure apply per destination across every dispatcher replica, because a
 * receiver's capacity is shared by everyone who sends to it.
 */
export interface Destination {
  /** A fixed-length key for Redis and metrics: the origin's SHA-256, first 16 hex digits. */
  id: string;
  /** `https://host:port`, for people (dashboard, metrics labels, logs); never carries a path or query. */
  origin: string;
}

/**
 * The destinations of the callback URLs seen lately. A dispatcher works this out for every attempt
 * (a URL parse and a SHA-256), and its callbacks go to a handful of receivers: most of the work is
 * the same answer again. Emptied whole when full, which keeps it bounded whatever the traffic.
 */
const recentDestinations = new Map<string, Readonly<Destination>>();
const RECENT_DESTINATIONS_KEPT = 10_000;
/** Longer URLs are worked out afresh each time, so the map stays small whatever it is handed (a dashboard filter is user input). */
const REMEMBERED_URL_MAX_LENGTH = 2_048;

export function destinationOf(callbackUrl: string): Readonly<Destination> {
  const known = recentDestinations.get(callbackUrl);
  if (known) return known;
  const url = new URL(callbackUrl);
  const port = url.port !== '' ? url.port : url.protocol === 'https:' ? '443' : '80';
  const origin = `${url.protocol}//${url.hostname}:${port}`;
  const destination = Object.freeze({ id: createHash('sha256').update(origin).digest('hex').slice(0, 16), origin });
  if (callbackUrl.length > REMEMBERED_URL_MAX_LENGTH) return destination;
  if (recentDestinations.size >= RECENT_DESTINATIONS_KEPT) recentDestinations.clear();
  recentDestinations.set(callbackUrl, destination);
  return destination;
}

/** The isolation settings (see the README's delivery section for what each one means to a sender). */
export interface DestinationLimits {
  /** Attempts in flight to one destination across every dispatcher (CALLBACK_DESTINATION_MAX_IN_FLIGHT). */
  maxInFlight: number;
  /** The cap while the destination is in the slow lane (CALLBACK_DESTINATION_SLOW_MAX_IN_FLIGHT). */
  slowMaxInFlight: number;
  /** WEBHOOK_TIMEOUT_MS: what counts as slow is measured against it. */
  attemptTimeoutMs: number;
}

/**
 * How long a destination stays in the slow lane after its last slow attempt. A minute covers the
 * next step of the ladder (attempt 2 comes a minute after attempt 1), so a receiver that hangs on
 * attempt 1 is still capped low when its retries arrive.
 */
export const SLOW_LANE_MS = 60_000;

/** Without a usable `Retry-After`, a destination that pushed back is throttled this long. */
export const DEFAULT_THROTTLE_MS = 60_000;
/** A `Retry-After` beyond this is taken as this: the ladder, not the receiver, decides when attempts are due. */
export const MAX_THROTTLE_MS = 600_000;

/**
 * How long a slot is held, at most, by an attempt that never says it ended (its dispatcher died):
 * the attempt's own deadline plus time to read its inputs and record it.
 */
export const leaseMsFor = (limits: Pick<DestinationLimits, 'attemptTimeoutMs'>): number => limits.attemptTimeoutMs + 5_000;

/** What one attempt's outcome tells isolation about its destination. */
export interface DestinationSignal {
  /** Timed out, or answered only after more than half the timeout: the destination enters the slow lane. */
  slow: boolean;
  /** The destination asked us to slow down for this long (its cap is halved meanwhile); 0 when it did not. */
  throttleMs: number;
}

/**
 * The rules that read an attempt's outcome (Standard Webhooks asks senders to throttle on 429, 502
 * and 504 and to honour `Retry-After`). 503 alone is not back-pressure: receivers answer it for
 * maintenance and outright failure alike, and the ladder already spaces those out.
 */
export function signalOf(
  outcome: { status: number | null; error: string | null; durationMs: number; retryAfterMs: number | null },
  limits: Pick<DestinationLimits, 'attemptTimeoutMs'>,
): DestinationSignal {
  const slow = outcome.error === 'timeout' || outcome.durationMs > limits.attemptTimeoutMs / 2;
  const pushedBack = outcome.error !== null && (outcome.status === 429 || outcome.status === 502 || outcome.status === 504 || outcome.retryAfterMs !== null);
  const throttleMs = pushedBack ? Math.min(MAX_THROTTLE_MS, Math.max(1_000, outcome.retryAfterMs ?? DEFAULT_THROTTLE_MS)) : 0;
  return { slow, throttleMs };
}

/** A destination's state as on-call and the dashboard see it. */
export interface DestinationStatus extends Destination {
  /** Attempts in flight now, over every dispatcher. */
  inFlight: number;
  /** Attempts due (or overdue) that wait for a free slot. */
  deferred: number;
  /** The cap in force now: the base cap, or lower in the slow lane or while throttled. */
  limit: number;
  /** Unix ms until which the destination is in the slow lane; null when it is not. */
  slowUntilMs: number | null;
  /** Unix ms until which the destination is throttled (it pushed back); null when it is not. */
  throttledUntilMs: number | null;
}

/**
 * What a destination's status comes to, for people: `saturated` (every slot in use or attempts
 * waiting for one), else `throttled` (it pushed back), else `slow` (in the slow lane), else `ok`.
 */
export type DestinationCondition = 'ok' | 'slow' | 'throttled' | 'saturated';

export function conditionOf(status: DestinationStatus): DestinationCondition {
  if (status.deferred > 0 || status.inFlight >= status.limit) return 'saturated';
  if (status.throttledUntilMs !== null) return 'throttled';
  if (status.slowUntilMs !== null) return 'slow';
  return 'ok';
}
