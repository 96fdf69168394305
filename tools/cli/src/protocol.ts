/**
 * The relay's wire contract between this CLI and the gateway: JSON text frames over one WebSocket,
 * `GET {base}/v1/webhook-relay/listen` with `Authorization: Bearer <API key>`. The gateway keeps its
 * own copy of these types (libs/callbacks/src/relay-protocol.ts): this package is installed on its
 * own and imports nothing of the service; test/cli holds the two to each other.
 *
 * Query of the upgrade request:
 * - `events`: a comma list of event types this listener also receives as they happen, as a
 *   temporary endpoint of the workspace would (none: only callbacks sent to the relay URL);
 * - `reveal_secret=1`: the `ready` frame carries the workspace's current signing secret.
 *
 * Refusals come before the upgrade, as ordinary HTTP answers in the API's error shape: 401
 * (`invalid_api_key`), 400 (`invalid_value`, an unknown event type), 429 (`too_many_listeners`: the
 * workspace has its most listeners connected already; `Retry-After`).
 */

/** The first frame from the gateway, once the listener is registered. */
export interface ReadyFrame {
  type: 'ready';
  /** `rls_…`: this connection. */
  session_id: string;
  workspace_id: string;
  /** The workspace's relay destination: give it as a job's `callback_url`. Stable across connections. */
  relay_url: string;
  /** The event types this listener receives without a `callback_url` (the `events` asked for). */
  events: string[];
  /** How long the local handler has to answer a delivery (WEBHOOK_TIMEOUT_MS). */
  timeout_ms: number;
  /** Only with `reveal_secret=1`: the secret the deliveries are signed with (`whsec_…`). */
  signing_secret?: string;
}

/** A delivery to forward: POST `body` with `headers` to the local handler, then answer with a {@link ResultFrame}. */
export interface DeliveryFrame {
  type: 'delivery';
  /** Names this delivery in the result. */
  id: string;
  /** The callback's `msg_` id (also in `headers['webhook-id']`). */
  webhook_id: string;
  event_type: string;
  /** The request's headers as the dispatcher signed them (lower-case names). */
  headers: Record<string, string>;
  /** The request body, exactly as signed. */
  body: string;
  /** How long the local handler has; past it the attempt is a timeout whatever the CLI reports. */
  timeout_ms: number;
}

/** Why a forward did not get an answer, in the attempt log's words. */
export type ForwardError = 'timeout' | 'refused' | 'reset' | 'dns' | 'tls' | 'redirect';

/** What the local handler answered (or why it did not). */
export interface ResultFrame {
  type: 'result';
  /** The delivery's `id`. */
  id: string;
  /** The handler's HTTP status, or null when no answer came. */
  status: number | null;
  /** Null when an answer came (whatever its status). */
  error: ForwardError | null;
  /** A short technical reason for the error (the system's error code), or null. */
  error_detail: string | null;
  /** The start of the answer's body, at most 1 KiB, as text. */
  excerpt: string;
  /** Bytes of the answer's status line and headers. */
  headers_bytes: number;
  duration_ms: number;
  /** How the time split up where it was measured; null fields were not (a reused connection has no connect). */
  timing: { dns_ms: number | null; connect_ms: number | null; tls_ms: number | null; first_byte_ms: number | null };
}

/** Close codes the gateway uses; any other close is retried with backoff. */
export const CLOSE_KEY_REVOKED = 4401;
/** The workspace has its most listeners (a race the upgrade's check could not see); retried with backoff. */
export const CLOSE_TOO_MANY_LISTENERS = 4429;

export type ServerFrame = ReadyFrame | DeliveryFrame;
