import type { Redis } from 'ioredis';
import type { AttemptTrigger } from '@media/common';
import type { EventType } from '@media/domain';
import type { StoreKeys } from './keys';
import { encodeRecord } from './record-json';

/** Where a callback stands: still on its ladder, answered with a 2xx, or out of automatic attempts. */
export type CallbackState = 'pending' | 'delivered' | 'failed';

/**
 * Why an attempt did not end in a 2xx. Stable strings: the dashboard shows and filters on them.
 * `http_error` is a non-2xx, non-3xx answer; `blocked_address` is a URL that failed the
 * delivery-time check (no connection was made); `dispatcher_error` is an attempt the dispatcher could
 * not make at all, after its own retries of it ran out (nothing was sent, or no answer was recorded).
 */
export type AttemptErrorClass =
  | 'timeout'
  | 'dns'
  | 'refused'
  | 'reset'
  | 'tls'
  | 'redirect'
  | 'blocked_address'
  | 'http_error'
  | 'dispatcher_error';

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
  /** Highest automatic attempt recorded (1-6); 0 before the first one. */
  ladder_attempt: number;
  /** When the next automatic attempt is due (Unix ms); null when none is scheduled. */
  next_attempt_ms: number | null;
  delivered_ms: number | null;
  last_attempt_ms: number | null;
}

/** One POST to the receiver, as the dashboard shows it. */
export interface CallbackAttempt {
  /** 1-based position among all attempts of the callback, automatic and manual. */
  number: number;
  /** The automatic attempt (1-6) this was, or null for a manual one. */
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
}

/** An attempt before it is recorded; the store assigns `number`. */
export type NewCallbackAttempt = Omit<CallbackAttempt, 'number'>;

export interface RecordedAttempt {
  /** False when this attempt had already been recorded (a re-run after a crash); nothing changed. */
  recorded: boolean;
  callback: CallbackRecord;
}

export interface CallbackPage {
  callbacks: CallbackRecord[];
  hasMore: boolean;
}

// Records one attempt and moves the callback's state, in one step, so that a re-run of the same
// attempt (a worker killed after recording) neither counts twice nor moves the ladder again.
// ARGV: 1 attempt field, 2 attempt JSON, 3 ladder attempt (0 = manual), 4 '1' if delivered,
// 5 next automatic attempt ms ('' = none left), 6 now ms.
const RECORD_ATTEMPT = `
local raw = redis.call('GET', KEYS[1])
if not raw then return {-1, ''} end
if redis.call('HEXISTS', KEYS[2], ARGV[1]) == 1 then return {0, raw} end
local cb = cjson.decode(raw)
local attempt = cjson.decode(ARGV[2])
cb.attempt_count = cb.attempt_count + 1
attempt.number = cb.attempt_count
redis.call('HSET', KEYS[2], ARGV[1], cjson.encode(attempt))
cb.last_attempt_ms = attempt.sent_ms
local ladder = tonumber(ARGV[3])
if ladder > cb.ladder_attempt then cb.ladder_attempt = ladder end
if ARGV[4] == '1' then
  if cb.state ~= 'delivered' then cb.delivered_ms = tonumber(ARGV[6]) end
  cb.state = 'delivered'
  cb.next_attempt_ms = cjson.null
elseif ladder > 0 and cb.state == 'pending' then
  if ARGV[5] == '' then
    cb.state = 'failed'
    cb.next_attempt_ms = cjson.null
  else
    cb.next_attempt_ms = tonumber(ARGV[5])
  end
end
local out = cjson.encode(cb)
redis.call('SET', KEYS[1], out)
return {1, out}
`;

// A callback whose delivery job BullMQ gave up on must still end; a delivered one stays delivered.
const GIVE_UP = `
local raw = redis.call('GET', KEYS[1])
if not raw then return '' end
local cb = cjson.decode(raw)
if cb.state ~= 'pending' then return raw end
cb.state = 'failed'
cb.next_attempt_ms = cjson.null
local out = cjson.encode(cb)
redis.call('SET', KEYS[1], out)
return out
`;

/** Callbacks, their attempt logs and the per-workspace index the dashboard lists from. */
export class CallbackRepository {
  constructor(
    private readonly redis: Redis,
    private readonly keys: StoreKeys,
  ) {}

  /**
   * Stores a new callback unless one with its id exists (SET NX), and indexes it under its
   * workspace. Returns the stored record: the new one, or the one created earlier for a replayed event.
   */
  async create(callback: CallbackRecord): Promise<{ created: boolean; callback: CallbackRecord }> {
    const [[setError, set], [indexError]] = (await this.redis
      .multi()
      .set(this.keys.callback(callback.id), encodeRecord(callback), 'NX')
      .zadd(this.keys.workspaceCallbacks(callback.workspace_id), 'NX', callback.created_ms, callback.id)
      .exec()) as [[Error | null, unknown], [Error | null, unknown]];
    if (setError || indexError) throw setError ?? indexError;
    if (set === 'OK') return { created: true, callback };
    const existing = await this.get(callback.id);
    if (!existing) throw new Error(`callback ${callback.id} vanished right after SET NX refused it`);
    return { created: false, callback: existing };
  }

  async get(messageId: string): Promise<CallbackRecord | undefined> {
    const raw = await this.redis.get(this.keys.callback(messageId));
    return raw ? (JSON.parse(raw) as CallbackRecord) : undefined;
  }

  /** A callback of this workspace; another workspace's callback is indistinguishable from a missing one. */
  async getForWorkspace(workspaceId: string, messageId: string): Promise<CallbackRecord | undefined> {
    const callback = await this.get(messageId);
    return callback && callback.workspace_id === workspaceId ? callback : undefined;
  }

  /** The attempt log, oldest first. */
  async attempts(messageId: string): Promise<CallbackAttempt[]> {
    const raw = await this.redis.hvals(this.keys.callbackAttempts(messageId));
    return raw.map((r) => JSON.parse(r) as CallbackAttempt).sort((a, b) => a.number - b.number);
  }

  /** One attempt by the key it was recorded under, once it has been. */
  async attempt(messageId: string, attemptKey: string): Promise<CallbackAttempt | undefined> {
    const raw = await this.redis.hget(this.keys.callbackAttempts(messageId), attemptKey);
    return raw ? (JSON.parse(raw) as CallbackAttempt) : undefined;
  }

  /**
   * Records an attempt under `attemptKey` (one key per automatic attempt number or per manual
   * request) and applies its outcome to the callback in the same Redis step:
   * - delivered: state `delivered`, nothing further scheduled;
   * - an automatic attempt that failed: `next_attempt_ms` moves on, or the state becomes `failed`
   *   when `nextAttemptMs` is null (the ladder is used up);
   * - a manual attempt that failed changes no state and leaves the ladder as it was.
   *
   * Recording the same `attemptKey` again changes nothing and returns `recorded: false`.
   *
   * @throws Error when the callback does not exist
   */
  async recordAttempt(
    messageId: string,
    attemptKey: string,
    attempt: NewCallbackAttempt,
    nextAttemptMs: number | null,
    now = Date.now(),
  ): Promise<RecordedAttempt> {
    const [code, raw] = (await this.redis.eval(
      RECORD_ATTEMPT,
      2,
      this.keys.callback(messageId),
      this.keys.callbackAttempts(messageId),
      attemptKey,
      encodeRecord({ ...attempt, number: 0 }),
      String(attempt.ladder_attempt ?? 0),
      attempt.error === null ? '1' : '0',
      nextAttemptMs === null ? '' : String(nextAttemptMs),
      String(now),
    )) as [number, string];
    if (code === -1) throw new Error(`callback ${messageId} does not exist`);
    return { recorded: code === 1, callback: JSON.parse(raw) as CallbackRecord };
  }

  /** Ends a still-pending callback as `failed`; returns the record as it now stands. */
  async giveUp(messageId: string): Promise<CallbackRecord | undefined> {
    const raw = (await this.redis.eval(GIVE_UP, 1, this.keys.callback(messageId))) as string;
    return raw ? (JSON.parse(raw) as CallbackRecord) : undefined;
  }

  /** A workspace's callbacks, newest first, for the dashboard's Requests page. */
  async listForWorkspace(workspaceId: string, opts: { limit: number; offset?: number }): Promise<CallbackPage> {
    const start = opts.offset ?? 0;
    const ids = await this.redis.zrevrange(this.keys.workspaceCallbacks(workspaceId), start, start + opts.limit);
    const page = ids.slice(0, opts.limit);
    const raws = page.length > 0 ? await this.redis.mget(page.map((id) => this.keys.callback(id))) : [];
    return {
      callbacks: raws.filter((r): r is string => r !== null).map((r) => JSON.parse(r) as CallbackRecord),
      hasMore: ids.length > opts.limit,
    };
  }
}
