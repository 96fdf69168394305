/** Callback records as stored, beside the job records; `@media/callbacks` renders the API objects from them. */
import { derivedIdBeside } from './ids';
import { EVENT_TYPES, type EventType, type JobRecord } from './jobs';

/**
 * The `msg_` id of a job's callback: derived, so a replayed job-finished event finds the same
 * callback, and on the job's shard, so the callback is stored beside its job and workspace. One per
 * destination: the request's own `callback_url` (no endpoint), and each of the workspace's webhook
 * endpoints subscribed to the event.
 */
export const callbackIdFor = (jobId: string, type: EventType, endpointId?: string): string =>
  endpointId === undefined ? derivedIdBeside(jobId, 'msg', jobId, type) : derivedIdBeside(jobId, 'msg', jobId, type, endpointId);

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
 * `proxy` is an egress proxy (CALLBACK_EGRESS_PROXY) that could not be reached or refused the tunnel;
 * `relay_offline` is a callback to a workspace's relay URL with no `media-callbacks listen` connected
 * to take it (or whose listener went away before its handler answered).
 */
export type AttemptErrorClass =
  'timeout' | 'dns' | 'refused' | 'reset' | 'tls' | 'redirect' | 'blocked_address' | 'http_error' | 'dispatcher_error' | 'proxy' | 'relay_offline';

/** One callback: one finished job, one event, one `msg_` id for its whole life. */
export interface CallbackRecord {
  /** `msg_…`, the `webhook-id` of every attempt. */
  id: string;
  workspace_id: string;
  job_id: string;
  type: EventType;
  /** The destination, as the client gave it (a request's `callback_url`, or the endpoint's URL when the callback was made). */
  url: string;
  /** The workspace webhook endpoint (`we_…`) this callback goes to; absent for a request's own `callback_url`. */
  endpoint_id?: string;
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

// The retry ladder's shape, read by the configuration (WEBHOOK_RETRY_SCHEDULE), the queue catalogue
// (the names of scheduled attempts) and @media/callbacks' retry-ladder.ts, which runs the ladder.

/**
 * Automatic attempts per callback: the first as soon as its job ends, then one after each gap of
 * the schedule. When the last one fails the callback is `failed`.
 */
export const LADDER_ATTEMPTS = 6;

/**
 * The gaps before attempts 2..{@link LADDER_ATTEMPTS}, in ms, in order: gap `i` (0-based) runs from
 * the end of attempt `i + 1` to the start of attempt `i + 2`.
 */
export type RetrySchedule = readonly number[];

/** `WEBHOOK_RETRY_SCHEDULE`'s default: about 10.6 hours from the first attempt to the last. */
export const DEFAULT_RETRY_SCHEDULE = '1m,5m,30m,2h,8h';

/** {@link DEFAULT_RETRY_SCHEDULE} in ms. */
export const DEFAULT_RETRY_GAPS_MS: RetrySchedule = [60_000, 300_000, 1_800_000, 7_200_000, 28_800_000];

/** A retry schedule that cannot be read: the message says what is wrong with it. */
export class RetryScheduleError extends Error {
  override readonly name = 'RetryScheduleError';
}

const GAP = /^(\d+)(ms|s|m|h)$/;
const UNIT_MS: Record<string, number> = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000 };
/**
 * The longest gap a schedule may hold: a day, which keeps a whole ladder within a week (a callback's
 * retention) and every gap a valid Node timer.
 */
const MAX_GAP_MS = 86_400_000;

/**
 * A schedule from its text: exactly one gap per attempt after the first, comma-separated, each a
 * whole number with a unit (`ms`, `s`, `m`, `h`), e.g. `1m,5m,30m,2h,8h` or `1s,1s,1s,1s,1s`.
 *
 * @throws RetryScheduleError when a gap cannot be read or there are not exactly five of them
 */
export function parseRetrySchedule(text: string): RetrySchedule {
  const parts = text.split(',').map((part) => part.trim());
  const gaps = LADDER_ATTEMPTS - 1;
  const expected = `must list ${gaps} gaps (attempts 2-${LADDER_ATTEMPTS}) like ${DEFAULT_RETRY_SCHEDULE}`;
  const unreadable = parts.find((part) => !GAP.test(part));
  if (unreadable !== undefined) throw new RetryScheduleError(`${expected}; "${unreadable}" is not a whole number with a unit ms, s, m or h`);
  if (parts.length !== gaps) throw new RetryScheduleError(`${expected}; it has ${parts.length}`);
  const schedule = parts.map((part) => {
    const [, amount, unit] = GAP.exec(part)!;
    return Number(amount) * UNIT_MS[unit];
  });
  const tooLong = schedule.findIndex((gap) => gap > MAX_GAP_MS);
  if (tooLong !== -1) throw new RetryScheduleError(`${expected}; "${parts[tooLong]}" is longer than a gap may be (24h)`);
  return schedule;
}

/**
 * What separates the callback's id from the attempt's number in {@link scheduledAttemptId}. The
 * store's scripts name the next attempt's entry themselves (in the step that records an attempt,
 * from the record's own count) and get this as ARGV rather than spelling it.
 */
export const SCHEDULED_ATTEMPT_SEPARATOR = '.';

/**
 * The name of automatic attempt `attempt` of callback `messageId` while it waits: its member in the
 * deliveries queue's schedule (a sorted set scored by when it is due) and the id of the delivery
 * job it becomes, `<msg id>.<attempt>`. Deterministic, so an attempt is scheduled and queued once
 * however often it is written; free of ':', which BullMQ 6 refuses in job ids.
 */
export function scheduledAttemptId(messageId: string, attempt: number): string {
  return `${messageId}${SCHEDULED_ATTEMPT_SEPARATOR}${attempt}`;
}

const SCHEDULED_ATTEMPT = new RegExp(`^(msg_[A-Za-z0-9]+)${SCHEDULED_ATTEMPT_SEPARATOR.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}([1-9][0-9]?)$`);

/** The callback and attempt a schedule member names ({@link scheduledAttemptId}), or undefined for anything else. */
export function parseScheduledAttempt(member: string): { messageId: string; attempt: number } | undefined {
  const match = SCHEDULED_ATTEMPT.exec(member);
  return match ? { messageId: match[1]!, attempt: Number(match[2]) } : undefined;
}
