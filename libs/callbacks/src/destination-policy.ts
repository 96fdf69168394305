import { createHash } from 'node:crypto';

/**
 * Where callbacks go, as isolation sees it: one receiver origin (scheme, host and port, the way a
 * browser scopes a site), whatever the path, and whichever workspace's callbacks go there. The cap
 * and back-pressure apply per destination across every dispatcher replica, because a receiver's
 * capacity is shared by everyone who sends to it; inside it, each workspace has a share of its own
 * (a slow lane of its own, headroom it cannot fill, its turn round robin), because many customers
 * share one host (integration platforms, tunnels, company gateways).
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
 * How long a workspace stays in its slow lane at a destination after its last slow attempt there
 * (and the whole host, when none of its attempts answered fast meanwhile). A minute covers the next
 * step of the ladder (attempt 2 comes a minute after attempt 1), so a receiver that hangs on
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

/**
 * The slots of a destination kept free of any one workspace: a tenth of the cap in force (at least
 * one once the cap is two or more). One workspace alone never holds more than the cap less these,
 * and a workspace in its own slow lane never takes them, so a workspace whose callbacks answer
 * finds a slot at once however many another workspace has hanging at the same host.
 */
export const headroomOf = (limit: number): number => (limit >= 2 ? Math.ceil(limit / 10) : 0);

/** What one attempt's outcome tells isolation about its destination and the workspace that made it. */
export interface DestinationSignal {
  /** Timed out, or answered only after more than half the timeout: the workspace enters its own slow lane there. */
  slow: boolean;
  /** Answered (any status) or failed within half the timeout: the host is up, whatever other workspaces' attempts do. */
  fast: boolean;
  /** The destination asked us to slow down for this long (its cap is halved meanwhile); 0 when it did not. */
  throttleMs: number;
  /** Whether the receiver accepted the attempt (2xx); null when no attempt was made (a slot given back unused). */
  delivered: boolean | null;
}

/** A slot given back without an attempt: it says nothing about the destination. */
export const QUIET_SIGNAL: DestinationSignal = Object.freeze({ slow: false, fast: false, throttleMs: 0, delivered: null });

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
  return { slow, fast: !slow, throttleMs, delivered: outcome.error === null };
}

/** A destination as on-call sees it: every workspace's attempts together (metrics). */
export interface DestinationStatus extends Destination {
  /** Attempts in flight now, over every dispatcher and workspace. */
  inFlight: number;
  /** Attempts due (or overdue) that wait for a free slot. */
  deferred: number;
  /** The cap in force now: the base cap, or lower while the whole host is slow or throttled. */
  limit: number;
  /** Unix ms until which the whole host is in the slow lane (its attempts were slow and none answered fast); null when it is not. */
  slowUntilMs: number | null;
  /** Unix ms until which the destination is throttled (it pushed back); null when it is not. */
  throttledUntilMs: number | null;
  /** Workspaces in a slow lane of their own at this destination. */
  slowWorkspaces: number;
  /** Workspaces with attempts waiting for a slot here, by the reason of each one's wait. */
  heldBack: Record<HoldReason, number>;
}

/**
 * Why a workspace's attempts wait at a destination: `own_slowness` (its own callbacks there timed
 * out or answered late: its own slow lane), `host_back_pressure` (the host answered 429, 502, 504
 * or Retry-After: fewer attempts at once for everyone), `host_slow` (every workspace's attempts
 * there were slow: the whole host's cap is the slow lane's), `host_busy` (every slot the workspace
 * may use is taken: its turn comes round robin with the other workspaces waiting there).
 */
export type HoldReason = 'own_slowness' | 'host_back_pressure' | 'host_slow' | 'host_busy';
export const HOLD_REASONS: readonly HoldReason[] = ['own_slowness', 'host_back_pressure', 'host_slow', 'host_busy'];

/** One workspace's share of a destination, as its dashboard shows it: its own attempts only, never another workspace's. */
export interface WorkspaceDestinationStatus extends Destination {
  /** The workspace's attempts in flight there now. */
  inFlight: number;
  /** The workspace's attempts waiting there for a slot. */
  deferred: number;
  /** How many of the workspace's attempts may be in flight there at once now. */
  limit: number;
  /** Unix ms until which the workspace is in its own slow lane there; null when it is not. */
  slowUntilMs: number | null;
  /** Unix ms until which the whole host is in the slow lane; null when it is not. */
  hostSlowUntilMs: number | null;
  /** Unix ms until which the host is throttled (it pushed back); null when it is not. */
  throttledUntilMs: number | null;
  /** Why the workspace's attempts wait, when some do (or when every slot it may use is taken); null when none is held back. */
  heldBack: HoldReason | null;
  /** When the host last accepted one of the workspace's callbacks (2xx); null when not lately. */
  lastDeliveredMs: number | null;
  /** When one of the workspace's attempts there last failed; null when none did lately. */
  lastFailedMs: number | null;
  /** The workspace's attempts there that failed since its last delivered one. */
  failuresInRow: number;
}

/** Why a workspace's attempts wait, from its share's numbers; null when they do not. */
export function holdReasonOf(status: Omit<WorkspaceDestinationStatus, 'heldBack'>, nowMs: number): HoldReason | null {
  if (status.deferred === 0 && status.inFlight < status.limit) return null;
  if (status.slowUntilMs !== null && status.slowUntilMs > nowMs) return 'own_slowness';
  if (status.throttledUntilMs !== null && status.throttledUntilMs > nowMs) return 'host_back_pressure';
  if (status.hostSlowUntilMs !== null && status.hostSlowUntilMs > nowMs) return 'host_slow';
  return 'host_busy';
}

/**
 * What a workspace's share of a destination comes to, for people: `saturated` (its attempts wait
 * for a slot; `heldBack` says why), else `throttled` (the host pushed back), else `slow` (its own
 * slow lane, or the whole host's), else `ok`. Whether its callbacks are accepted is apart: see
 * {@link healthOf}.
 */
export type DestinationCondition = 'ok' | 'slow' | 'throttled' | 'saturated';

export function conditionOf(status: WorkspaceDestinationStatus): DestinationCondition {
  if (status.heldBack !== null) return 'saturated';
  if (status.throttledUntilMs !== null) return 'throttled';
  if (status.slowUntilMs !== null || status.hostSlowUntilMs !== null) return 'slow';
  return 'ok';
}

/** Whether the receiver accepts a workspace's callbacks: `failing` when its latest attempt there failed, `ok` when it was accepted, `unknown` before either. */
export type DestinationHealth = 'ok' | 'failing' | 'unknown';

export function healthOf(status: Pick<WorkspaceDestinationStatus, 'lastDeliveredMs' | 'lastFailedMs'>): DestinationHealth {
  if (status.lastFailedMs !== null && (status.lastDeliveredMs === null || status.lastFailedMs > status.lastDeliveredMs)) return 'failing';
  return status.lastDeliveredMs !== null ? 'ok' : 'unknown';
}
