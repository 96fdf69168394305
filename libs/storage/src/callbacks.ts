import type { Redis } from 'ioredis';
import { LuaScript, type AttemptTrigger } from '@media/common';
import { callbackIdFor, destinationOf, EVENT_TYPES, type EventType } from '@media/domain';
import type { StoreKeys } from './keys';
import { readIndexPage } from './index-page';
import { OverviewCounters } from './overview';
import { CorruptRecordError } from './jobs';
import { encodeRecord } from './record-json';
import { storeScript } from './lua';

/** Where a callback stands: still on its ladder, answered with a 2xx, or out of automatic attempts. */
export type CallbackState = 'pending' | 'delivered' | 'failed';

/**
 * Why an attempt did not end in a 2xx. Stable strings: the dashboard shows and filters on them.
 * `http_error` is a non-2xx, non-3xx answer; `blocked_address` is a URL that failed the
 * delivery-time check (no connection was made); `dispatcher_error` is an attempt the dispatcher could
 * not make at all, after its own retries of it ran out (nothing was sent, or no answer was recorded).
 */
export type AttemptErrorClass = 'timeout' | 'dns' | 'refused' | 'reset' | 'tls' | 'redirect' | 'blocked_address' | 'http_error' | 'dispatcher_error';

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
  /** The job's `traceparent` (when tracing is on): each attempt is a span of the job's trace. */
  traceparent?: string;
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

// ARGV: 1 now ms, 2 how long the reserved slots last (ms). The key expires when the pace is idle again.
const RESERVE_PACE = `
local start = math.max(tonumber(ARGV[1]), tonumber(redis.call('GET', KEYS[1]) or '0'))
local finish = start + tonumber(ARGV[2])
redis.call('SET', KEYS[1], finish, 'PX', math.max(1, finish - tonumber(ARGV[1])))
return start
`;

/** Key of an attempt in the callback's attempt log: one per automatic attempt, one per manual request. */
export const attemptKey = (trigger: AttemptTrigger, attempt: number, queueJobId: string): string =>
  trigger === 'scheduled' ? `auto.${attempt}` : `manual.${queueJobId}`;

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

/** Filters of a callback list; times are Unix ms, `createdAfterMs` inclusive, `createdBeforeMs` exclusive. */
export interface CallbackListQuery {
  limit: number;
  after?: string;
  state?: CallbackState;
  type?: EventType;
  jobId?: string;
  createdAfterMs?: number;
  createdBeforeMs?: number;
}

const DEFER = storeScript('callback-defer');

/** Ids read per step while a combined state + type filter scans the state index. */
const FILTER_SCAN_CHUNK = 100;

// The state indexes move in the same scripts that move the state, so a list filtered by status
// never disagrees with the records. KEYS[3..5]: the workspace's pending, delivered and failed indexes.
const MOVE_STATE_INDEX = `
local function move_state_index(before, cb)
  if before == cb.state then return end
  local index = {pending = KEYS[3], delivered = KEYS[4], failed = KEYS[5]}
  if index[before] then redis.call('ZREM', index[before], cb.id) end
  if index[cb.state] then redis.call('ZADD', index[cb.state], cb.created_ms, cb.id) end
end
`;

// Keeps the callback's one future automatic attempt in the deliveries queue's schedule (see
// QUEUE_SCHEDULES): entered with the failed attempt that makes it due, removed when the callback
// ends, in the same step as the state, so no crash can leave a pending callback without its next
// attempt or an ended one with an attempt still to come. The entry is the attempt's delivery job
// id, `jobIds.delivery(id, n, 'scheduled')` (`<msg id>.<n>`), which the schedule turns back into the job.
// KEYS[6]: the schedule; `next_ms` is a string, passed through as the score.
// An ended callback enters the ended index (KEYS[7]) in the same step, at its latest activity (GT:
// a manual attempt on an ended callback keeps it longer, never shorter), so the retention sweep
// finds every ended callback and never a pending one.
const SCHEDULE_NEXT = `
local function schedule_next(cb, next_ms, now_ms)
  local entry = cb.id .. '.' .. (cb.ladder_attempt + 1)
  if cb.state == 'pending' then
    if next_ms ~= '' then redis.call('ZADD', KEYS[6], next_ms, entry) end
  else
    redis.call('ZREM', KEYS[6], entry)
    redis.call('ZADD', KEYS[7], 'GT', now_ms, cb.id)
  end
end
`;

// Records one attempt and moves the callback's state, in one step, so that a re-run of the same
// attempt (a worker killed after recording) neither counts twice nor moves the ladder again.
// KEYS: 1 record, 2 attempt log, 3-5 state indexes, 6 schedule, 7 ended index.
// ARGV: 1 attempt field, 2 attempt (stored form, without its number), 3 ladder attempt
// (0 = manual), 4 '1' if delivered, 5 next automatic attempt ms ('' = none left), 6 now ms,
// 7 when the attempt was sent (ms).
const RECORD_ATTEMPT = new LuaScript(`${MOVE_STATE_INDEX}${SCHEDULE_NEXT}
local raw = redis.call('GET', KEYS[1])
if not raw then return {-1, ''} end
if redis.call('HEXISTS', KEYS[2], ARGV[1]) == 1 then return {0, raw} end
local cb = cjson.decode(raw)
local before = cb.state
cb.attempt_count = cb.attempt_count + 1
-- The stored form is a JSON array whose first element is the attempt's number (see encodeAttempt).
redis.call('HSET', KEYS[2], ARGV[1], '[' .. cb.attempt_count .. ',' .. string.sub(ARGV[2], 2))
cb.last_attempt_ms = tonumber(ARGV[7])
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
move_state_index(before, cb)
-- A manual attempt that failed leaves the ladder, and its schedule, as they were.
if ladder > 0 or cb.state ~= 'pending' then schedule_next(cb, ARGV[5], ARGV[6]) end
return {1, out}
`);

// A new callback and its index entries in one step. The workspace and type indexes are also
// (re)written for an existing record, harmlessly; the state index only for a new one, since the
// record may have moved on to another state (the scripts below keep that index in step). Its job
// no longer awaits it (KEYS[5], ARGV[4] the job id): retention now reads the callback's own state.
const CREATE = new LuaScript(`
local created = redis.call('SET', KEYS[1], ARGV[1], 'NX')
redis.call('ZADD', KEYS[2], 'NX', ARGV[2], ARGV[3])
redis.call('ZADD', KEYS[3], 'NX', ARGV[2], ARGV[3])
redis.call('SREM', KEYS[5], ARGV[4])
if created then
  redis.call('ZADD', KEYS[4], 'NX', ARGV[2], ARGV[3])
  return 1
end
return 0
`);

// A callback whose delivery job BullMQ gave up on must still end; a delivered one stays delivered.
// KEYS as RECORD_ATTEMPT's (the attempt log is not touched). ARGV: 1 now ms.
const GIVE_UP = new LuaScript(`${MOVE_STATE_INDEX}${SCHEDULE_NEXT}
local raw = redis.call('GET', KEYS[1])
if not raw then return '' end
local cb = cjson.decode(raw)
if cb.state ~= 'pending' then return raw end
cb.state = 'failed'
cb.next_attempt_ms = cjson.null
local out = cjson.encode(cb)
redis.call('SET', KEYS[1], out)
move_state_index('pending', cb)
schedule_next(cb, '', ARGV[1])
return out
`);

// Removes a callback with its attempt log and every index entry, in one step. With a cutoff (its
// own retention), only an ended one whose last activity is at or before it (a manual attempt
// meanwhile keeps it); without ('', its job is going), whatever its state, and with it the ladder's
// next attempt. A record that cannot be decoded is left alone with its entries.
// KEYS: 1 record, 2 attempt log, 3-5 state indexes, 6 the workspace index, 7 its type index,
// 8 ended index, 9 the ladder's schedule. ARGV: 1 id, 2 cutoff ms or ''. Answers 1 removed, 0 kept, -1 unreadable.
const PURGE = new LuaScript(`
local raw = redis.call('GET', KEYS[1])
if raw then
  local ok, cb = pcall(cjson.decode, raw)
  if not ok or type(cb) ~= 'table' then return -1 end
  if ARGV[2] ~= '' then
    if cb.state == 'pending' then
      redis.call('ZREM', KEYS[8], ARGV[1])
      return 0
    end
    local last = redis.call('ZSCORE', KEYS[8], ARGV[1])
    if last and tonumber(last) > tonumber(ARGV[2]) then return 0 end
  elseif cb.state == 'pending' then
    redis.call('ZREM', KEYS[9], ARGV[1] .. '.' .. (cb.ladder_attempt + 1))
  end
else
  -- Gone already (a repeat after this step): only the ended entry can be left.
  redis.call('ZREM', KEYS[8], ARGV[1])
  return 0
end
redis.call('DEL', KEYS[1], KEYS[2])
redis.call('ZREM', KEYS[3], ARGV[1])
redis.call('ZREM', KEYS[4], ARGV[1])
redis.call('ZREM', KEYS[5], ARGV[1])
redis.call('ZREM', KEYS[6], ARGV[1])
redis.call('ZREM', KEYS[7], ARGV[1])
redis.call('ZREM', KEYS[8], ARGV[1])
return 1
`);

/**
 * An attempt as stored: a JSON array in this order, its number first (written by RECORD_ATTEMPT),
 * and the timing as `[dns, connect, tls, first_byte]` or null. Names would be half of every entry,
 * and the attempt log is much of what each pending callback keeps in Redis; the order is fixed
 * here, the one place that writes and reads it. Entries written as objects (before this form)
 * are still read.
 */
type StoredAttempt = [
  number: number,
  ladder: number | null,
  trigger: 's' | 'm',
  sentMs: number,
  durationMs: number,
  status: number | null,
  error: AttemptErrorClass | null,
  errorDetail: string | null,
  address: string | null,
  excerpt: string,
  timing: [number | null, number | null, number | null, number | null] | null,
];

/** The stored form without its number: `[` plus everything after the number's place. */
function encodeAttempt(a: NewCallbackAttempt): string {
  const t = a.timing;
  const stored: StoredAttempt = [
    0,
    a.ladder_attempt,
    a.trigger === 'manual' ? 'm' : 's',
    a.sent_ms,
    a.duration_ms,
    a.status,
    a.error,
    a.error_detail,
    a.address,
    a.excerpt,
    t ? [t.dns_ms, t.connect_ms, t.tls_ms, t.first_byte_ms] : null,
  ];
  return `[${encodeRecord(stored).slice('[0,'.length)}`;
}

function decodeAttempt(raw: string): CallbackAttempt {
  const parsed = JSON.parse(raw) as StoredAttempt | CallbackAttempt;
  if (!Array.isArray(parsed)) return parsed;
  const [number, ladder, trigger, sentMs, durationMs, status, error, errorDetail, address, excerpt, timing] = parsed;
  const attempt: CallbackAttempt = {
    number,
    ladder_attempt: ladder,
    trigger: trigger === 'm' ? 'manual' : 'scheduled',
    sent_ms: sentMs,
    duration_ms: durationMs,
    status,
    error,
    error_detail: errorDetail,
    address,
    excerpt,
  };
  if (timing) attempt.timing = { dns_ms: timing[0], connect_ms: timing[1], tls_ms: timing[2], first_byte_ms: timing[3] };
  return attempt;
}

/** Callbacks, their attempt logs and the per-workspace index the dashboard lists from. */
export class CallbackRepository {
  /** Each change of a callback is counted into the Overview in the same round trip as the change. */
  private readonly overview: OverviewCounters;

  constructor(
    private readonly redis: Redis,
    private readonly keys: StoreKeys,
  ) {
    this.overview = new OverviewCounters(keys);
  }

  /**
   * Stores a new callback unless one with its id exists (SET NX), and indexes it under its
   * workspace. Returns the stored record: the new one, or the one created earlier for a replayed event.
   */
  async create(callback: CallbackRecord): Promise<{ created: boolean; callback: CallbackRecord }> {
    const [reply] = await LuaScript.runTogether(this.redis, [
      {
        script: CREATE,
        keys: [
          this.keys.callback(callback.id),
          this.keys.workspaceCallbacks(callback.workspace_id),
          this.keys.workspaceCallbacksOfType(callback.workspace_id, callback.type),
          this.keys.workspaceCallbacksInState(callback.workspace_id, callback.state),
          this.keys.awaitingCallback(),
        ],
        args: [encodeRecord(callback), callback.created_ms, callback.id, callback.job_id],
      },
      // Its answer is not waited on: a count that could not be written must not stop a callback.
      this.overview.created(callback.workspace_id, callback.id, callback.state, callback.created_ms),
    ]);
    if (reply!.error) throw reply!.error;
    if (reply!.value === 1) return { created: true, callback };
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
    return raw.map(decodeAttempt).sort((a, b) => a.number - b.number);
  }

  /** One attempt by the key it was recorded under, once it has been. */
  async attempt(messageId: string, attemptKey: string): Promise<CallbackAttempt | undefined> {
    const raw = await this.redis.hget(this.keys.callbackAttempts(messageId), attemptKey);
    return raw ? decodeAttempt(raw) : undefined;
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
    callback: Pick<CallbackRecord, 'id' | 'workspace_id' | 'url' | 'event_ms' | 'state'>,
    attemptKey: string,
    attempt: NewCallbackAttempt,
    nextAttemptMs: number | null,
    now = Date.now(),
  ): Promise<RecordedAttempt> {
    const stored = encodeAttempt(attempt);
    const [reply] = await LuaScript.runTogether(this.redis, [
      {
        script: RECORD_ATTEMPT,
        keys: this.scriptKeys(callback),
        args: [
          attemptKey,
          stored,
          attempt.ladder_attempt ?? 0,
          attempt.error === null ? '1' : '0',
          nextAttemptMs === null ? '' : nextAttemptMs,
          now,
          attempt.sent_ms,
        ],
      },
      this.overview.attempt({
        workspaceId: callback.workspace_id,
        messageId: callback.id,
        origin: destinationOf(callback.url).origin,
        eventMs: callback.event_ms,
        stateBefore: callback.state,
        field: attemptKey,
        stored,
        ladderAttempt: attempt.ladder_attempt,
        sentMs: attempt.sent_ms,
        durationMs: attempt.duration_ms,
        status: attempt.status,
        error: attempt.error,
        last: attempt.ladder_attempt !== null && nextAttemptMs === null,
        nowMs: now,
      }),
    ]);
    if (reply!.error) throw reply!.error;
    const [code, raw] = reply!.value as [number, string];
    if (code === -1) throw new Error(`callback ${callback.id} does not exist`);
    return { recorded: code === 1, callback: JSON.parse(raw) as CallbackRecord };
  }

  /**
   * Shows a deferred automatic attempt's new time as the callback's `next_attempt_ms`, unless the
   * callback ended or recorded that attempt meanwhile.
   */
  async deferNext(messageId: string, ladderAttempt: number, atMs: number): Promise<void> {
    await DEFER.run(this.redis, [this.keys.callback(messageId)], [ladderAttempt, atMs]);
  }

  /** Ends a still-pending callback as `failed`; returns the record as it now stands. */
  async giveUp(callback: Pick<CallbackRecord, 'id' | 'workspace_id'>, now = Date.now()): Promise<CallbackRecord | undefined> {
    const [reply] = await LuaScript.runTogether(this.redis, [
      { script: GIVE_UP, keys: this.scriptKeys(callback), args: [now] },
      this.overview.givenUp(callback.workspace_id, callback.id, now),
    ]);
    if (reply!.error) throw reply!.error;
    const raw = reply!.value as string;
    return raw ? (JSON.parse(raw) as CallbackRecord) : undefined;
  }

  /**
   * The keys of the scripts that move a callback: its record and attempt log, its workspace's state
   * indexes and the ladder's schedule. Callers pass the callback they already read (a script must
   * name its keys up front, and a callback never changes workspace), so recording an attempt stays
   * one round trip.
   */
  private scriptKeys({ id, workspace_id: workspaceId }: Pick<CallbackRecord, 'id' | 'workspace_id'>): string[] {
    return [
      this.keys.callback(id),
      this.keys.callbackAttempts(id),
      this.keys.workspaceCallbacksInState(workspaceId, 'pending'),
      this.keys.workspaceCallbacksInState(workspaceId, 'delivered'),
      this.keys.workspaceCallbacksInState(workspaceId, 'failed'),
      this.keys.callbackSchedule(),
      this.keys.endedCallbacks(),
    ];
  }

  /** Moves an ended callback's place in the ended index to `lastActivityMs` (retention could not remove it now); one not there stays out. */
  async postponeRemoval(messageId: string, lastActivityMs: number): Promise<void> {
    await this.redis.zadd(this.keys.endedCallbacks(), 'XX', lastActivityMs, messageId);
  }

  /** How many ended callbacks had their last activity at or before `cutoffMs`. */
  async countEndedBefore(cutoffMs: number): Promise<number> {
    return this.redis.zcount(this.keys.endedCallbacks(), '-inf', cutoffMs);
  }

  /** Ids of ended callbacks whose last activity was at or before `cutoffMs`, oldest first. */
  async endedBefore(cutoffMs: number, limit: number): Promise<string[]> {
    return this.redis.zrangebyscore(this.keys.endedCallbacks(), '-inf', cutoffMs, 'LIMIT', 0, limit);
  }

  /**
   * Removes a callback, its attempt log and its index entries. With `cutoffMs`, only an ended one
   * whose last activity is still at or before it (false when it was kept: a manual attempt came in
   * meanwhile); with `'with-its-job'`, whatever its state (its job is being removed, so nothing could
   * be delivered any more). False too for a callback whose record is gone (its ended entry is dropped).
   *
   * @throws CorruptRecordError when the record cannot be decoded (it is left as it is)
   */
  async remove(messageId: string, cutoffMs: number | 'with-its-job'): Promise<boolean> {
    let record: CallbackRecord | undefined;
    try {
      record = await this.get(messageId);
    } catch {
      throw new CorruptRecordError(messageId);
    }
    // Without its record the indexes cannot be named; the script then only drops the ended entry.
    const [workspaceId, type] = record ? [record.workspace_id, record.type] : ['-', '-'];
    const keys = [
      ...this.scriptKeys({ id: messageId, workspace_id: workspaceId }).slice(0, 5),
      this.keys.workspaceCallbacks(workspaceId),
      this.keys.workspaceCallbacksOfType(workspaceId, type),
      this.keys.endedCallbacks(),
      this.keys.callbackSchedule(),
    ];
    const result = await PURGE.run(this.redis, keys, [messageId, cutoffMs === 'with-its-job' ? '' : cutoffMs]);
    if (result === -1) throw new CorruptRecordError(messageId);
    return result === 1;
  }

  /**
   * A workspace's callbacks, newest first, filtered.
   *
   * Status and type have index sets of their own (kept in step by the scripts that move the state),
   * rather than a scan of the workspace index that filters records: a scan's cost grows with the
   * callbacks the filter skips, and a status filter is what on-call looks at ("what failed?"),
   * typically a few among very many delivered. So one filter, or none, reads exactly one page of
   * one index. Both together read the state index and filter the type in chunks (four types, so
   * roughly one in four matches); `job_id` names at most two callbacks (a job's id and its type
   * give the callback id), and is answered from those records directly.
   */
  async list(workspaceId: string, q: CallbackListQuery): Promise<CallbackPage> {
    const matches = (cb: CallbackRecord) =>
      cb.workspace_id === workspaceId &&
      (q.state === undefined || cb.state === q.state) &&
      (q.type === undefined || cb.type === q.type) &&
      (q.jobId === undefined || cb.job_id === q.jobId) &&
      (q.createdAfterMs === undefined || cb.created_ms >= q.createdAfterMs) &&
      (q.createdBeforeMs === undefined || cb.created_ms < q.createdBeforeMs);
    const key =
      q.state !== undefined
        ? this.keys.workspaceCallbacksInState(workspaceId, q.state)
        : q.type !== undefined
          ? this.keys.workspaceCallbacksOfType(workspaceId, q.type)
          : this.keys.workspaceCallbacks(workspaceId);
    if (q.jobId !== undefined) {
      const ids = EVENT_TYPES.map((type) => callbackIdFor(q.jobId!, type));
      const records = (await this.getMany(ids)).filter(matches).sort((a, b) => b.created_ms - a.created_ms || (a.id < b.id ? 1 : -1));
      const start = q.after === undefined ? 0 : records.findIndex((cb) => cb.id === q.after) + 1;
      if (q.after !== undefined && start === 0) return { callbacks: [], hasMore: false };
      return { callbacks: records.slice(start, start + q.limit), hasMore: records.length > start + q.limit };
    }
    const filterInMemory = q.state !== undefined && q.type !== undefined;
    const found: CallbackRecord[] = [];
    let after = q.after;
    for (;;) {
      const page = await readIndexPage(this.redis, key, {
        limit: filterInMemory ? Math.max(FILTER_SCAN_CHUNK, q.limit) : q.limit,
        after,
        order: 'desc',
        minScore: q.createdAfterMs,
        maxScore: q.createdBeforeMs,
        cursorScoreKey: this.keys.workspaceCallbacks(workspaceId),
      });
      const records = await this.getMany(page.ids);
      for (const record of records) {
        if (!matches(record)) continue;
        if (found.length === q.limit) return { callbacks: found, hasMore: true };
        found.push(record);
      }
      if (!page.hasMore) return { callbacks: found, hasMore: false };
      if (!filterInMemory && found.length === q.limit) return { callbacks: found, hasMore: true };
      after = page.ids.at(-1);
    }
  }

  async getMany(ids: string[]): Promise<CallbackRecord[]> {
    if (ids.length === 0) return [];
    const raws = await this.redis.mget(ids.map((id) => this.keys.callback(id)));
    return raws.filter((r): r is string => r !== null).map((r) => JSON.parse(r) as CallbackRecord);
  }

  /**
   * Reserves `count` send slots at `ratePerSecond` on the workspace's one recovery pace, so that
   * recoveries started together queue behind each other instead of multiplying the rate at the
   * receivers. Returns when the first slot is (Unix ms).
   */
  async reserveRecoverySlots(workspaceId: string, count: number, ratePerSecond: number, nowMs: number): Promise<number> {
    return (await this.redis.eval(
      RESERVE_PACE,
      1,
      this.keys.workspaceRecoveryPace(workspaceId),
      String(nowMs),
      String(Math.ceil((count * 1000) / ratePerSecond)),
    )) as number;
  }

  /** Ids of the workspace's callbacks in `state` created in [fromMs, toMs), oldest first, from rank `offset`. */
  async idsInState(workspaceId: string, state: CallbackState, fromMs: number, toMs: number, offset: number, count: number): Promise<string[]> {
    return this.redis.zrangebyscore(this.keys.workspaceCallbacksInState(workspaceId, state), fromMs, `(${toMs}`, 'LIMIT', offset, count);
  }

  /**
   * Callbacks per state over every workspace (`media_callbacks{status}`): one pipelined ZCARD per
   * workspace and state, read at scrape time rather than kept as counters that a crash could skew.
   */
  async countByState(): Promise<Record<CallbackState, number>> {
    const states: CallbackState[] = ['pending', 'delivered', 'failed'];
    const counts: Record<CallbackState, number> = { pending: 0, delivered: 0, failed: 0 };
    const workspaceIds = await this.redis.smembers(this.keys.workspaces());
    if (workspaceIds.length === 0) return counts;
    const pipeline = this.redis.pipeline();
    for (const id of workspaceIds) for (const state of states) pipeline.zcard(this.keys.workspaceCallbacksInState(id, state));
    const replies = (await pipeline.exec()) ?? [];
    replies.forEach(([err, value], i) => {
      if (err) throw err;
      counts[states[i % states.length]] += Number(value);
    });
    return counts;
  }
}
