import type { AttemptErrorClass, AttemptTiming, AttemptTrigger, CallbackAttempt, CallbackRecord, CallbackState, EventType } from '@media/domain';

/** A callback as the API shows it (design section 2, "Callback objects"). */
export interface CallbackObject {
  id: string;
  object: 'callback';
  type: EventType;
  job_id: string;
  /** The workspace webhook endpoint it goes to; null for the request's own `callback_url`. */
  endpoint_id: string | null;
  url: string;
  status: CallbackState;
  attempt_count: number;
  next_attempt_at: number | null;
  delivered_at: number | null;
  created_at: number;
}

/** One attempt of `GET /v1/callbacks/{id}`. */
export interface CallbackAttemptObject {
  number: number;
  trigger: AttemptTrigger;
  sent_at: number;
  duration_ms: number;
  status_code: number | null;
  error: AttemptErrorClass | null;
  address: string | null;
  response_excerpt: string;
  /** Null when nothing was measured (no request was made, or the attempt predates timings). */
  timing: AttemptTiming | null;
}

export interface CallbackDetailObject extends CallbackObject {
  attempts: CallbackAttemptObject[];
}

const seconds = (ms: number) => Math.floor(ms / 1000);
const secondsOrNull = (ms: number | null) => (ms === null ? null : seconds(ms));

export function presentCallback(cb: CallbackRecord): CallbackObject {
  return {
    id: cb.id,
    object: 'callback',
    type: cb.type,
    job_id: cb.job_id,
    endpoint_id: cb.endpoint_id ?? null,
    url: cb.url,
    status: cb.state,
    attempt_count: cb.attempt_count,
    next_attempt_at: secondsOrNull(cb.next_attempt_ms),
    delivered_at: secondsOrNull(cb.delivered_ms),
    created_at: seconds(cb.created_ms),
  };
}

export function presentAttempt(a: CallbackAttempt): CallbackAttemptObject {
  return {
    number: a.number,
    trigger: a.trigger,
    sent_at: seconds(a.sent_ms),
    duration_ms: a.duration_ms,
    status_code: a.status,
    error: a.error,
    address: a.address,
    response_excerpt: a.excerpt,
    // Rebuilt so the fields come in one order whatever order the store's JSON kept them in.
    timing: a.timing ? { dns_ms: a.timing.dns_ms, connect_ms: a.timing.connect_ms, tls_ms: a.timing.tls_ms, first_byte_ms: a.timing.first_byte_ms } : null,
  };
}

export function presentCallbackDetail(cb: CallbackRecord, attempts: CallbackAttempt[]): CallbackDetailObject {
  return { ...presentCallback(cb), attempts: attempts.map(presentAttempt) };
}
