/**
 * The relay's wire contract with the client CLI (`media-callbacks listen`): JSON text frames over
 * one WebSocket at `GET /v1/webhook-relay/listen`. The CLI keeps its own copy (tools/cli/src/
 * protocol.ts: it is installed on its own and imports nothing of the service); test/cli holds the
 * two to each other.
 */
import type { AttemptErrorClass, AttemptTiming, EventType } from '@media/domain';

/** Where the CLI connects. */
export const RELAY_LISTEN_PATH = '/v1/webhook-relay/listen';
/**
 * The path of every relay URL, before its token. Outside `/v1`: a relay URL is a destination that
 * the relay delivers to, not an API anyone calls (nothing is served there).
 */
export const RELAY_PATH_PREFIX = '/webhook-relay/';

/** The first frame, once the listener is registered. */
export interface ReadyFrame {
  type: 'ready';
  session_id: string;
  workspace_id: string;
  relay_url: string;
  events: EventType[];
  timeout_ms: number;
  signing_secret?: string;
}

/** A delivery for the CLI to POST to its local handler. */
export interface DeliveryFrame {
  type: 'delivery';
  id: string;
  webhook_id: string;
  event_type: EventType;
  headers: Record<string, string>;
  body: string;
  timeout_ms: number;
}

/** Why a forward got no answer, in the attempt log's words. */
export type ForwardError = Extract<AttemptErrorClass, 'timeout' | 'refused' | 'reset' | 'dns' | 'tls' | 'redirect'>;

/** What the local handler answered. */
export interface ResultFrame {
  type: 'result';
  id: string;
  status: number | null;
  error: ForwardError | null;
  error_detail: string | null;
  excerpt: string;
  headers_bytes: number;
  duration_ms: number;
  timing: AttemptTiming;
}

/** The key the listener connected with was revoked. */
export const CLOSE_KEY_REVOKED = 4401;
/** The workspace has its most listeners. */
export const CLOSE_TOO_MANY_LISTENERS = 4429;

const FORWARD_ERRORS: readonly string[] = ['timeout', 'refused', 'reset', 'dns', 'tls', 'redirect'];

/** A result frame from a CLI, checked field by field (it is the client's text), or undefined. */
export function parseResultFrame(text: string): ResultFrame | undefined {
  let frame: Record<string, unknown>;
  try {
    frame = JSON.parse(text) as Record<string, unknown>;
  } catch {
    return undefined;
  }
  if (typeof frame !== 'object' || frame === null || frame.type !== 'result' || typeof frame.id !== 'string') return undefined;
  const status = typeof frame.status === 'number' && Number.isInteger(frame.status) && frame.status >= 100 && frame.status <= 599 ? frame.status : null;
  const error = typeof frame.error === 'string' && FORWARD_ERRORS.includes(frame.error) ? (frame.error as ForwardError) : null;
  const ms = (value: unknown) => (typeof value === 'number' && Number.isFinite(value) && value >= 0 ? Math.round(value) : null);
  const timing = (frame.timing ?? {}) as Record<string, unknown>;
  return {
    type: 'result',
    id: frame.id,
    status,
    // An answer with neither a status nor an error says nothing: no answer came.
    error: status === null && error === null ? 'reset' : error,
    error_detail: typeof frame.error_detail === 'string' ? frame.error_detail.slice(0, 200) : null,
    excerpt: typeof frame.excerpt === 'string' ? frame.excerpt.slice(0, 1_024) : '',
    headers_bytes: ms(frame.headers_bytes) ?? 0,
    duration_ms: ms(frame.duration_ms) ?? 0,
    timing: { dns_ms: ms(timing.dns_ms), connect_ms: ms(timing.connect_ms), tls_ms: ms(timing.tls_ms), first_byte_ms: ms(timing.first_byte_ms) },
  };
}
