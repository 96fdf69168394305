/**
 * The dashboard's JSON API: what the browser app (web/) and the server routes (src/) agree on.
 * Served under `/dashboard/api` on the gateway's public address, authenticated by the session
 * cookie (never an API key). Every state-changing request (POST, PATCH, DELETE) carries the
 * session's CSRF token in the `x-csrf-token` header, except `POST /session` (sign-in), which has
 * no session yet. Errors use the API's shape: `{ error: { message, type, param, code } }`.
 * Every `*_at` field is integer Unix seconds or null, as in the public API.
 *
 * One workspace never sees another's data: any id of another workspace answers 404.
 */
import type { AuditAction, AuditEventObject } from '@media/accounts';
import type { CallbackDetailObject, CallbackObject, EndpointInput, TestCallbackOutcome, WebhookEndpointObject } from '@media/callbacks';
import type { EventType } from '@media/domain';

export type Role = 'owner' | 'admin' | 'member';
export type JobKind = 'image' | 'video';
export type JobStatus = 'queued' | 'in_progress' | 'completed' | 'failed';
export type CallbackStatus = 'pending' | 'delivered' | 'failed';
/** The Requests page's callback filter: a state, or `failing` (pending, and failed at least once). */
export type CallbackFilter = CallbackStatus | 'failing';

/** `GET /session` with a session, and the answer to `POST /session`. */
export interface SessionInfo {
  member: { email: string; role: Role };
  workspace: { id: string; name: string };
  /** Send back as `x-csrf-token` on every state-changing request. */
  csrf_token: string;
}

/**
 * `GET /session` without a session (200, so that the app's check on every visit is no console error).
 * Every other call without a session answers 401 `not_signed_in`.
 */
export interface SignedOut {
  signed_in: false;
}

/** `POST /session` body. Wrong credentials: 401 `invalid_credentials`; too many tries: 429 with `Retry-After`. */
export interface SignInRequest {
  email: string;
  password: string;
}
// `DELETE /session`: signs out (204), clears the cookie.

/**
 * An attempt's error class in words, as the pages show it (`AttemptErrorClass` in @media/domain).
 * A value the browser app imports too: one set of words for the list, the detail and the Overview.
 */
export const ATTEMPT_ERROR_WORDS: Record<string, string> = {
  timeout: 'timeout (no answer in time)',
  dns: 'host name did not resolve',
  refused: 'connection refused',
  reset: 'connection reset',
  tls: 'TLS failed',
  redirect: 'redirect (not followed)',
  blocked_address: 'blocked address (not allowed)',
  http_error: 'HTTP error',
  dispatcher_error: 'not sent (dispatcher error)',
  proxy: 'not sent (egress proxy failed)',
  relay_offline: 'relay offline (no media-callbacks listen connected)',
};

/** The latest attempt of a row's callback, and its result in words. */
export interface LastAttempt {
  sent_at: number;
  trigger: 'scheduled' | 'manual';
  status_code: number | null;
  error: string | null;
  /** "500 Internal Server Error", "200 OK", "connection refused", "timeout (no answer in time)", … */
  result: string;
}

/** One row of the Requests page. */
export interface RequestRow {
  id: string;
  kind: JobKind;
  model: string;
  status: JobStatus;
  cost: number | null;
  created_at: number;
  prompt: string;
  /** The job's callback, or null when it asked for none or has not finished yet (see `callback_url`). */
  callback: CallbackObject | null;
  callback_url: string | null;
  /** The callback's latest attempt; null before the first one (or without a callback). */
  last_attempt: LastAttempt | null;
  /**
   * The callback is `pending` and has failed at least once (every attempt so far failed, or it
   * would be delivered): still on its retry ladder, but not healthy.
   */
  failing: boolean;
}

/**
 * `GET /requests?kind=&callback_status=&destination=&created_after=&created_before=&q=&limit=&after=`:
 * newest first. `destination` is an origin (`https://host:port`): the requests whose callback went
 * there. `created_after` (inclusive) and `created_before` (exclusive) are Unix seconds and bound
 * when the request's callback was created (when its job finished), as `GET /v1/callbacks` reads
 * them; requests without a callback are then left out. `callback_status=failing` is the pending
 * callbacks that have failed at least once.
 *
 * `q` is an exact id (job `req_…`/`video_…` or callback `msg_…`, found however old), or else text
 * looked for, ignoring case, in the prompts and callback URLs of the newest {@link SearchInfo.window}
 * requests only (see `search`): a search never reads a workspace's whole history.
 */
export interface RequestList {
  data: RequestRow[];
  has_more: boolean;
  /**
   * Where the next page starts (pass as `after`) when it is not the last row's id: a destination,
   * kind or `failing` filter looks through a bounded number of callbacks per page, and may stop
   * before it fills one.
   */
  next_after?: string;
  /** With a text search: how far it looked. */
  search?: SearchInfo;
}

export interface SearchInfo {
  /** Requests a text search looks through at most, newest first. */
  window: number;
  /** Requests it looked through: fewer than `window` when the workspace has fewer, or when it filled the page sooner. */
  looked_through: number;
  /** Whether that was every request of the workspace (of the chosen kind): a miss is then a real one. */
  complete: boolean;
}

/**
 * `GET /requests/{id}`: the job as the public API shows it, and every callback its end made, each
 * with every attempt.
 */
export interface RequestDetail {
  row: RequestRow;
  /** The image request or video object exactly as `GET /v1/images/{id}` or `/v1/videos/{id}` returns it (fresh links). */
  job: Record<string, unknown>;
  /**
   * One per destination: the request's own `callback_url`'s first (when it gave one), then one per
   * webhook endpoint subscribed to the event when the job ended, in the order they were made. Empty
   * until the job ends, and when nothing asked for its event.
   */
  callbacks: RequestCallback[];
  /** The job's OpenTelemetry trace id, to find its trace (and its log lines); null when tracing was off. */
  trace_id: string | null;
}

/** One callback of a request, and where it went. */
export interface RequestCallback {
  callback: CallbackDetailObject;
  /**
   * The webhook endpoint it went to, as the endpoint is now; null for the request's own
   * `callback_url`, and for an endpoint deleted since (`callback.endpoint_id` still names it).
   */
  endpoint: EndpointSummary | null;
  /** How the pending callback's destination is doing (why its next attempt may wait); null otherwise. */
  destination: DestinationRow | null;
  /**
   * Whether it went to the workspace's relay URL: down a `media-callbacks listen` connection to a
   * developer's machine, not over the network. With `endpoint` null, it is the request's own
   * `callback_url` when `callback.url` is `row.callback_url`, else a listener's subscription to the
   * event (`--events`).
   */
  relay: boolean;
}

/** What names an endpoint where its callbacks are shown. */
export interface EndpointSummary {
  id: string;
  url: string;
  description: string;
  enabled: boolean;
}

/** `conditionOf` in @media/domain, spelled out here for the browser app. */
export type DestinationState = 'ok' | 'slow' | 'throttled' | 'saturated';

/** `HoldReason` in @media/domain, spelled out here for the browser app. */
export type DestinationHoldReason = 'own_slowness' | 'host_back_pressure' | 'host_slow' | 'host_busy';

/** `healthOf` in @media/domain: whether the receiver accepts this workspace's callbacks. */
export type DestinationHealth = 'ok' | 'failing' | 'unknown';

/**
 * A receiver origin this workspace's callbacks went to lately, and how this workspace's callbacks
 * there are doing (see docs/callbacks.md, "Isolation"). Two things apart:
 * - whether they are held back (`state`): `saturated` (some wait for a slot; `held_back_because`
 *   says why), `throttled` (the host answered 429, 502, 504 or Retry-After: fewer attempts at once
 *   for everyone until `throttled_until`), `slow` (this workspace's attempts there timed out or
 *   answered late, so fewer of them run at once until `slow_until`; or the whole host is slow until
 *   `host_slow_until`), or `ok`;
 * - whether the receiver accepts them (`health`): `failing` when the latest attempt failed.
 * Every count is this workspace's own: a receiver may be shared with other workspaces, whose
 * traffic is theirs.
 */
export interface DestinationRow {
  origin: string;
  state: DestinationState;
  /** Why some of this workspace's callbacks wait there; null when none does. */
  held_back_because: DestinationHoldReason | null;
  /** This workspace's attempts allowed there at once now. */
  limit: number;
  /** This workspace's attempts in flight there now. */
  in_flight: number;
  /** This workspace's attempts waiting there for a slot. */
  waiting: number;
  /** The end of this workspace's own slow lane there. */
  slow_until: number | null;
  /** The end of the whole host's slow lane (its attempts were slow for every workspace). */
  host_slow_until: number | null;
  throttled_until: number | null;
  health: DestinationHealth;
  /** This workspace's attempts there that failed since the last one accepted. */
  failures_in_row: number;
  last_failure_at: number | null;
  last_delivered_at: number | null;
}

/** `GET /destinations`: most recently used first. */
export interface DestinationList {
  data: DestinationRow[];
}

// `POST /callbacks/{id}/retry` → 202 `CallbackObject` (the attempt appears in `GET /requests/{job_id}` when made).

/** `GET /keys`. */
export interface KeysPage {
  api_keys: ApiKeyRow[];
  signing: SigningState;
  asymmetric: AsymmetricSigningState;
}

export interface ApiKeyRow {
  id: string;
  /** The first characters of the key, e.g. `sk_AbC1…`, enough to recognise it; never the key. */
  prefix: string;
  created_at: number;
  last_used_at: number | null;
}

/** `POST /keys` → 201: the only time the key itself is shown. `DELETE /keys/{id}` → 204 (owners and admins). */
export interface CreatedApiKey extends ApiKeyRow {
  key: string;
}

/** What the page shows of the signing secrets without revealing them. */
export interface SigningState {
  current_created_at: number;
  /** During a rotation overlap: when the previous secret stops signing; null otherwise. */
  previous_expires_at: number | null;
  /** Whether this member may rotate (owner, admin) and end the overlap (owner). */
  can_rotate: boolean;
  can_end_overlap: boolean;
}

/**
 * The workspace's `v1a` (ed25519) signing: its public keys (public by nature, so shown without a
 * reveal step), current first; empty while asymmetric signing is off. The same keys are served
 * to receivers at `GET /v1/webhook-keys/{workspace_id}`.
 *
 * `POST /signing-keys/enable` (owner, admin) → the same, turned on (a second call keeps the key).
 * `POST /signing-keys/rotate` (owner, admin) → the same, a new key current and the previous one in
 * its overlap; 409 `asymmetric_signing_off` while it is off.
 */
export interface AsymmetricSigningState {
  public_keys: PublicKeyRow[];
  /** Whether this member may turn it on and rotate the key pair (owner, admin). */
  can_manage: boolean;
}

export interface PublicKeyRow {
  /** `whpk_…`: what receivers verify `v1a` entries with. */
  public_key: string;
  created_at: number;
  /** During a rotation overlap, when the previous key stops signing; null for the current key. */
  expires_at: number | null;
}

/**
 * `POST /secrets/reveal` → the secrets themselves (a POST, so it needs the CSRF token and is never cached).
 * `POST /secrets/rotate` (owner, admin; a member gets 403 `permission_denied`) → the same, after rotating.
 * `POST /secrets/end-overlap` (owner) → the same, the previous secret gone.
 */
export interface RevealedSecrets {
  current: string;
  previous: string | null;
  previous_expires_at: number | null;
}

/** `POST /test-callback` body: a signed sample event sent by the dispatcher, same URL rules and signing as real callbacks. */
export interface TestCallbackRequest {
  url: string;
}

/**
 * The answer to a test callback (400 `invalid_callback_url` for a URL the rules refuse): what the
 * dispatcher stored, passed through as is.
 */
export type TestCallbackResult = TestCallbackOutcome;

/**
 * `GET /endpoints`: the workspace's webhook endpoints, as `GET /v1/webhook-endpoints` shows them
 * (oldest first). Every job end of a subscribed event type goes to each enabled endpoint as its
 * own callback, besides a request's own `callback_url`. Every role reads them.
 *
 * Owners and admins (others get 403 `permission_denied`), with the CSRF token:
 * - `POST /endpoints` {@link EndpointRequest} (`url` required; `events` defaults to all) → 201 `WebhookEndpointObject`;
 * - `PATCH /endpoints/{id}` {@link EndpointRequest} (any of its fields) → `WebhookEndpointObject`; `enabled: true`
 *   turns it on again and clears why it was off, `enabled: false` turns it off (`disabled_reason: 'manual'`);
 * - `DELETE /endpoints/{id}` → 204;
 * - `POST /endpoints/{id}/test` `{type?}` → {@link EndpointTestResult}.
 *
 * Refusals as the API answers them: 400 `invalid_callback_url` (with `param: 'url'`), `invalid_value`,
 * `unknown_parameter`, `endpoint_limit_reached`; 404 for an id of another workspace as for a missing one.
 * Each change is in the workspace's audit, with the member as its actor.
 */
export interface EndpointList {
  data: WebhookEndpointObject[];
  /** Every event type an endpoint may subscribe to, in the catalogue's order. */
  event_types: readonly EventType[];
  /** Most endpoints a workspace may have. */
  max_endpoints: number;
  /** Whether this member may create, change, test and delete them (owner, admin). */
  can_manage: boolean;
}

/** The body of `POST /endpoints` and `PATCH /endpoints/{id}`: the fields of `POST /v1/webhook-endpoints`. */
export type EndpointRequest = EndpointInput;

/**
 * `POST /endpoints/{id}/test` `{type?}`: a signed sample of one event (`type`, or the first the
 * endpoint is subscribed to) sent to the endpoint, enabled or not, by the dispatcher, and the
 * receiver's answer. 504 `test_callback_timeout` when no dispatcher sent it in time. It goes into no
 * callback's attempt log, and does not count towards the endpoint's failing.
 */
export interface EndpointTestResult extends TestCallbackOutcome {
  type: EventType;
}

/** One of an endpoint's recent callbacks, with its latest attempt. */
export interface EndpointDelivery extends CallbackObject {
  last_attempt: LastAttempt | null;
  /** Pending, and failed at least once. */
  failing: boolean;
}

/**
 * `GET /endpoints/{id}/deliveries`: the endpoint's latest callbacks (at most `limit`, newest first),
 * and how those of them that have ended went: a failure rate over a recent window, not all time.
 */
export interface EndpointDeliveries {
  endpoint_id: string;
  /** How many of the latest callbacks are looked at. */
  limit: number;
  data: EndpointDelivery[];
  /** Whether the endpoint has older callbacks than these. */
  has_more: boolean;
  /** Of `data`: callbacks that ended (delivered or failed), and those of them that failed. */
  ended: number;
  failed: number;
  /** `failed / ended` (0-1); null when none of them has ended. */
  failure_rate: number | null;
  /** Of `data`: callbacks still on their ladder, and those of them that have failed at least once. */
  pending: number;
  failing: number;
}

/**
 * `GET /relay-listeners`: the workspace's `media-callbacks listen` connections (every role reads
 * them). Callbacks reach them through the workspace's relay URL, given as a job's `callback_url` or
 * a webhook endpoint's `url`, and at every job end of the events a listener subscribed to. Their
 * deliveries are callbacks like any other (their `url` is the relay URL).
 */
export interface RelayListeners {
  /** The workspace's relay URL, the same across connections; null until its first listener connects. */
  relay_url: string | null;
  /** The listeners connected now, oldest first. */
  data: RelayListenerRow[];
  /** Most listeners a workspace may have connected at once. */
  max_listeners: number;
}

/** One connected `media-callbacks listen`. */
export interface RelayListenerRow {
  /** `rls_…`: this connection. */
  session_id: string;
  connected_at: number;
  /** When its gateway last said it was still connected (every few seconds). */
  last_seen_at: number;
  /**
   * The API key it connected with (never the key): its id, and its prefix as the API keys page shows
   * it. A revoked key has no prefix any more (`revoked: true`): its listener is cut within seconds.
   */
  api_key: { id: string; prefix: string | null; revoked: boolean };
  /** The event types it receives at every job end without a `callback_url`; empty for none. */
  events: EventType[];
}

/** `GET /usage?days=30`: only completed jobs are ever charged. */
export interface Usage {
  currency: 'usd';
  total: number;
  days: { date: string; amount: number; count: number }[];
  entries: { job_id: string; model: string; amount: number; created_at: number }[];
}

/**
 * `GET /members` → `Member[]`. Owners only: `POST /members` `{email, role}` → 201 `CreatedMember`
 * (the password shown once), `PATCH /members/{email}` `{role}` → `Member`, `DELETE /members/{email}` → 204.
 * The last owner cannot be removed or demoted (409).
 */
export interface Member {
  email: string;
  role: Role;
}

export interface CreatedMember extends Member {
  password: string;
}

/** The Overview's windows: each point is a minute, a quarter hour or an hour. */
export type OverviewWindow = '1h' | '24h' | '7d';

/** What callbacks did in one point's time (counts), and where things stood at its end (`pending`). */
export interface OverviewPoint {
  /** Start of the point's time, Unix seconds; it lasts `step_seconds`. */
  at: number;
  /** Callbacks created (a job with a `callback_url` finished). */
  created: number;
  /** Callbacks delivered while on their ladder (ended delivered). */
  delivered: number;
  /** Callbacks that ended failed (attempt 6 failed, or nothing could be sent). */
  failed: number;
  /** Failed callbacks delivered later (a manual retry or a recovery). */
  recovered: number;
  /** Callbacks pending at the point's end (now, for the last point). */
  pending: number;
  attempts: number;
  failed_attempts: number;
  /** Attempt 1 of each callback's ladder, and those of them that delivered. */
  first_attempts: number;
  first_attempts_delivered: number;
  /** `first_attempts_delivered / first_attempts` (0-1); null without a first attempt. */
  first_attempt_success_rate: number | null;
  /**
   * Time from the job's end to the receiver's 2xx, over the deliveries of the point (ms), estimated
   * from a fixed histogram (to within its bucket); null without a delivery. A value of
   * `latency_cap_ms` means at least that.
   */
  latency_p50_ms: number | null;
  latency_p95_ms: number | null;
}

/** A destination (receiver origin) that failed attempts in the window. */
export interface OverviewDestination {
  origin: string;
  failed_attempts: number;
  last_failure_at: number;
  /** The last failure's error class (`timeout`, `refused`, `http_error`, …, as in a callback's attempts). */
  last_error: string;
  /** The HTTP status of the last failure, when the receiver answered one. */
  last_status: number | null;
}

/** Jobs that finished on one UTC day, and what they were charged. */
export interface OverviewDay {
  date: string;
  jobs_completed: number;
  jobs_failed: number;
  charged: number;
}

/**
 * `GET /overview?window=1h|24h|7d` (default 1h): the workspace's callbacks over the window, one
 * point per minute (1h), quarter hour (24h) or hour (7d), oldest first, the last point being the
 * current one (partly over); the destinations with the most failed attempts; and jobs and charges
 * for the last 7 UTC days whatever the window. Read from aggregates kept as things happen, so
 * its cost does not grow with traffic.
 */
export interface Overview {
  window: OverviewWindow;
  step_seconds: number;
  generated_at: number;
  /** The window as a whole; `pending` is the count now. */
  totals: Omit<OverviewPoint, 'at'>;
  series: OverviewPoint[];
  /** The latency histogram's last bound: a percentile there reads "at least". */
  latency_cap_ms: number;
  /** How long a failing callback's automatic attempts take, from the first to the last (WEBHOOK_RETRY_SCHEDULE's gaps). */
  ladder_seconds: number;
  /** Most failed attempts first, at most 10. */
  destinations: OverviewDestination[];
  /** Failed attempts to destinations the aggregates did not name (more than 16 in one point). */
  other_destination_failures: number;
  currency: 'usd';
  days: OverviewDay[];
}

/**
 * `GET /callbacks/recover?destination=<origin>`: how many failed callbacks to that destination a
 * recovery would retry now (all the workspace still keeps), before anyone confirms.
 * `POST /callbacks/recover` `{destination}` → 202 the same with the recovery's `id`: one manual
 * attempt for each, spread at `rate_per_second`. 400 `recovery_too_large` past the recovery limits.
 */
export interface RecoveryPreview {
  destination: string;
  count: number;
  rate_per_second: number;
}

export interface RecoveryStarted extends RecoveryPreview {
  id: string;
}

/**
 * The Requests page's filters that a recovery honours: the failed callbacks among the requests those
 * filters list. Times are Unix seconds, as in {@link RequestList}; every field is optional, and
 * none at all means every failed callback the workspace keeps.
 */
export interface RecoveryFilters {
  destination?: string;
  kind?: JobKind;
  created_after?: number;
  created_before?: number;
}

/**
 * `GET /requests/recovery?destination=&kind=&created_after=&created_before=`: how many failed
 * callbacks a recovery with these filters would retry now, before anyone confirms.
 * `POST /requests/recovery` (the same filters as a JSON body) → 202 the same with the recovery's
 * `id`. The recovery of `POST /v1/callbacks/recover`: one manual attempt each, at
 * `rate_per_second` on the workspace's one recovery pace; 400 `recovery_too_large` past its
 * limits. Open to every role, as a callback's Retry is.
 */
export interface FilteredRecoveryPreview {
  filters: RecoveryFilters;
  count: number;
  rate_per_second: number;
}

export interface FilteredRecoveryStarted extends FilteredRecoveryPreview {
  id: string;
}

/** `GET /audit`: a page of the workspace's audit events, newest first (owners and admins). */
export interface AuditList {
  data: AuditEventObject[];
  has_more: boolean;
  /** Every action the audit records, for the filter. */
  actions: readonly AuditAction[];
}

export type { AuditAction, AuditEventObject } from '@media/accounts';
