/** Callback records as stored, beside the job records; `@media/callbacks` renders the API objects from them. */
import { derivedIdBeside } from './ids';
import { EVENT_TYPES, type EventType, type JobRecord } from './jobs';

/**
 * The `msg_` id of a job's callback: derived, so a replayed job-finished event finds the same
 * callback, and on the job's shard, so the callback is stored beside its job and workspace.
 */
export const callbackIdFor = (jobId: string, type: EventType): string => derivedIdBeside(jobId, 'msg', jobId, type);

/**
 * Every id a job's callback can have, one per event its kind can end with (of any kind when the
 * kind is not known): for finding a callback without the job's record, or when the record read may
 * be older than the job's end.
 */
export const callbackIdsFor = (jobId: string, kind?: JobRecord['kind']): string[] =>
  EVENT_TYPES.filter((type) => kind === undefined || type.startsWith(`${kind}.`)).map((type) => callbackIdFor(jobId, type));

/** How an attempt came about: a step of the automatic retry ladder, or a person's request. */
export type AttemptTrigger = 'scheduled' | 'manual';

/** Where a callback stands: still on its ladder, answered with a 2xx, or out of automatic attempts. */
export type CallbackState = 'pending' | 'delivered' | 'failed';

/**
 * Why an attempt did not end in a 2xx. Stable strings: the dashboard shows and filters on them.
 * `http_error` is a non-2xx, non-3xx answer; `blocked_address` is a URL that failed the
 * delivery-time check (no connection was made); `dispatcher_error` is an attempt the dispatcher could
 * not make at all, after its own retries of it ran out (nothing was sent, or no answer was recorded);
 * `proxy` is an egress proxy (CALLBACK_EGRESS_PROXY) that could not be reached or refused the tunnel.
 */
export type AttemptErrorClass = 'timeout' | 'dns' | 'refused' | 'reset' | 'tls' | 'redirect' | 'blocked_address' | 'http_error' | 'dispatcher_error' | 'proxy';

/** One callback: one finished job, one event, one `msg_` id for its whole life. */
export interface CallbackRecord {
  /** `msg_…`, the `webhook-id` of every attempt. */
  id: string;
  workspace_id: string;
  job_id: string;
  type: EventType;
  /** The destination, as the client gave it. */
  url: string;
  /** When the job ended (Unix ms): the envelope's `timestamp`. */
  event_ms: number;
  created_ms: number;
  state: CallbackState;
  /** Attempts recorded so far, automatic and manual. */
  attempt_count: number;
  /** Highest automatic attempt recorded (1 to `LADDER_ATTEMPTS`, see retry-ladder.ts); 0 before the first one. */
  ladder_attempt: number;
  /** When the next automatic attempt is due (Unix ms); null when none is scheduled. */
  next_attempt_ms: number | null;
  delivered_ms: number | null;
  last_attempt_ms: number | null;
  /** The job's `traceparent` (when tracing is on): each attempt is a span of the job's trace. */
  traceparent?: string;
}

/** One POST to the receiver, as the dashboard shows it. */
export interface CallbackAttempt {
  /** 1-based position among all attempts of the callback, automatic and manual. */
  number: number;
  /** The automatic attempt (1 to `LADDER_ATTEMPTS`) this was, or null for a manual one. */
  ladder_attempt: number | null;
  trigger: AttemptTrigger;
  /** Unix ms when the request started (after the address check). */
  sent_ms: number;
  duration_ms: number;
  /** The receiver's HTTP status, or null when no answer came. */
  status: number | null;
  /** Null exactly when the attempt delivered (2xx). */
  error: AttemptErrorClass | null;
  /** Short technical reason for an error (never a secret), or null. */
  error_detail: string | null;
  /** The IP address the connection went to (or was about to), or null when none was dialled. */
  address: string | null;
  /** The start of the response body, capped. */
  excerpt: string;
  /**
   * How the time split up, where it was measured; absent on attempts recorded before timings
   * were, and on attempts that never reached the network (a refused address).
   */
  timing?: AttemptTiming;
}

/** Phases of one exchange in ms (got's `timings.phases`); null where the phase did not happen or was not measured. */
export interface AttemptTiming {
  dns_ms: number | null;
  connect_ms: number | null;
  tls_ms: number | null;
  first_byte_ms: number | null;
}
