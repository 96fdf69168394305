import type { Redis } from 'ioredis';
import {
  type AttemptErrorClass,
  type AttemptTrigger,
  type CallbackAttempt,
  callbackIdsFor,
  type CallbackRecord,
  type CallbackState,
  type EventType,
  shardOfId,
} from '@media/domain';
import { destinationOf } from './destination-policy';
import { SCHEDULED_ATTEMPT_SEPARATOR } from './retry-ladder';
import { encodeRecord, groupByShard, mgetByShard, OverviewCounters, readIndexPage, REMOVED_KEPT_MAX, REMOVED_KEPT_MS, type StoreKeys } from '@media/storage';
import { CallbackKeys } from './keys';
import { CorruptRecordError } from '@media/jobs';
import { storeScript } from './lua';

// The records are domain types; re-exported so that a caller of the repository imports from one place.
export type { AttemptErrorClass, AttemptTiming, CallbackAttempt, CallbackRecord, CallbackState } from '@media/domain';

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
  /** False when the query's `after` names no callback of the list (see `IndexPage.cursorFound`). */
  cursorFound: boolean;
}

/** Filters of a callback list; times are Unix ms, `createdAfterMs` inclusive, `createdBeforeMs` exclusive. */
export interface CallbackListQuery {
  limit: number;
  after?: string;
  state?: CallbackState;
  type?: EventType;
  jobId?: string;
  /** Only the callbacks to this webhook endpoint. */
  endpointId?: string;
  createdAfterMs?: number;
  createdBeforeMs?: number;
}

/**
 * What stands for the endpoint of a callback to a request's own `callback_url` where a script names
 * an endpoint's keys anyway (a script's keys are fixed): a name no endpoint id can be, never written.
 */
const NO_ENDPOINT = '-';

/** Ids read per step while a combined state + type filter scans the state index. */
const FILTER_SCAN_CHUNK = 100;

// lua/<name>.lua: each file's header gives the script's KEYS, ARGV, answers, and why it is one step.
const CREATE = storeScript('callback-create');
const RECORD_ATTEMPT = storeScript('callback-record-attempt');
const DEFER = storeScript('callback-defer');
const GIVE_UP = storeScript('callback-give-up');
const PURGE = storeScript('callback-purge');
const RESERVE_PACE = storeScript('callback-recovery-pace');
const MANUAL_SEND = storeScript('callback-manual-send');
const MANUAL_RELEASE = storeScript('callback-manual-release');

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
  /** Each change of a callback is counted into the Overview by the script that makes it. */
  private readonly overview: OverviewCounters;

  private readonly callbackKeys: CallbackKeys;

  constructor(
    private readonly redis: Redis,
    private readonly keys: StoreKeys,
  ) {
    this.callbackKeys = new CallbackKeys(keys);
    this.overview = new OverviewCounters(keys);
  }
  /** The workspace's index of pending callbacks (its size is the Overview's pending count). */
  pendingIndex(workspaceId: string): string {
    return this.callbackKeys.workspaceCallbacksInState(workspaceId, 'pending');
  }

  /**
   * Stores a new callback unless one with its id exists (SET NX), and indexes it under its
   * workspace (and its job, with `fanOut`: a callback beyond its request's own `callback_url`, whose
   * id the job's id does not give). Returns the stored record: the new one, or the one created
   * earlier for a replayed event.
   */
  async create(callback: CallbackRecord, fanOut = callback.endpoint_id !== undefined): Promise<{ created: boolean; callback: CallbackRecord }> {
    const count = this.overview.callbackEvent(callback.workspace_id, callback.created_ms);
    const reply = await CREATE.run(
      this.redis,
      [
        this.callbackKeys.callback(callback.id),
        this.callbackKeys.workspaceCallbacks(callback.workspace_id),
        this.callbackKeys.workspaceCallbacksOfType(callback.workspace_id, callback.type),
        this.callbackKeys.workspaceCallbacksInState(callback.workspace_id, callback.state),
        this.keys.awaitingCallback(shardOfId(callback.id)),
        this.callbackKeys.workspaceCallbacksOfEndpoint(callback.workspace_id, callback.endpoint_id ?? NO_ENDPOINT),
        this.callbackKeys.jobFanOutCallbacks(callback.job_id),
        ...count.keys,
      ],
      [encodeRecord(callback), callback.created_ms, callback.id, callback.job_id, callback.endpoint_id ? '1' : '', fanOut ? '1' : '', ...count.args],
    );
    if (reply === 1) return { created: true, callback };
    const existing = await this.get(callback.id);
    if (!existing) throw new Error(`callback ${callback.id} vanished right after SET NX refused it`);
    return { created: false, callback: existing };
  }

  async get(messageId: string): Promise<CallbackRecord | undefined> {
    const raw = await this.redis.get(this.callbackKeys.callback(messageId));
    return raw ? (JSON.parse(raw) as CallbackRecord) : undefined;
  }

  /** A callback of this workspace; another workspace's callback is indistinguishable from a missing one. */
  async getForWorkspace(workspaceId: string, messageId: string): Promise<CallbackRecord | undefined> {
    const callback = await this.get(messageId);
    return callback && callback.workspace_id === workspaceId ? callback : undefined;
  }

  /** The attempt log, oldest first. */
  async attempts(messageId: string): Promise<CallbackAttempt[]> {
    const raw = await this.redis.hvals(this.callbackKeys.callbackAttempts(messageId));
    return raw.map(decodeAttempt).sort((a, b) => a.number - b.number);
  }

  /**
   * The latest attempt of each callback among `messageIds` (those with none are left out), read in
   * one round trip: a list page shows why each callback stands where it does without a query per row.
   * A log holds a handful of entries (six automatic attempts and the manual ones), so reading it
   * whole costs little more than one entry would.
   */
  async lastAttempts(messageIds: string[]): Promise<Map<string, CallbackAttempt>> {
    const last = new Map<string, CallbackAttempt>();
    if (messageIds.length === 0) return last;
    const pipeline = this.redis.pipeline();
    for (const id of messageIds) pipeline.hvals(this.callbackKeys.callbackAttempts(id));
    const replies = (await pipeline.exec()) ?? [];
    replies.forEach(([err, raws], i) => {
      if (err) throw err;
      for (const attempt of (raws as string[]).map(decodeAttempt)) {
        const seen = last.get(messageIds[i]!);
        if (!seen || attempt.number > seen.number) last.set(messageIds[i]!, attempt);
      }
    });
    return last;
  }

  /** One attempt by the key it was recorded under, once it has been. */
  async attempt(messageId: string, attemptKey: string): Promise<CallbackAttempt | undefined> {
    const raw = await this.redis.hget(this.callbackKeys.callbackAttempts(messageId), attemptKey);
    return raw ? decodeAttempt(raw) : undefined;
  }

  /**
   * Asks, for the delivery job `jobId` about to send the manual attempt `requestId`, whether it may:
   * `'made'` when the attempt is in the log already, `'send'` when this job holds the request (for
   * `holdMs`, or again after a restart of the same job), or how many ms another run of the same
   * request holds it still. See callback-manual-send.lua.
   */
  async holdManualSend(messageId: string, requestId: string, jobId: string, holdMs: number): Promise<'made' | 'send' | { heldForMs: number }> {
    const reply = Number(
      await MANUAL_SEND.run(
        this.redis,
        [this.callbackKeys.manualSendHold(messageId, requestId), this.callbackKeys.callbackAttempts(messageId)],
        [jobId, holdMs, attemptKey('manual', 0, requestId)],
      ),
    );
    return reply < 0 ? 'made' : reply === 0 ? 'send' : { heldForMs: reply };
  }

  /** Lets go of the request's hold if the delivery job `jobId` has it (it gave up before sending); see callback-manual-release.lua. */
  async releaseManualSend(messageId: string, requestId: string, jobId: string): Promise<void> {
    await MANUAL_RELEASE.run(this.redis, [this.callbackKeys.manualSendHold(messageId, requestId)], [jobId]);
  }

  /**
   * Records an attempt under `attemptKey` (one key per automatic attempt number or per manual
   * request) and applies its outcome to the callback in the same Redis step:
   * - delivered: state `delivered`, nothing further scheduled;
   * - an automatic attempt that failed: `next_attempt_ms` moves on, or the state becomes `failed`
   *   when `nextAttemptMs` is null (it was the ladder's last: `nextAttemptAt` in retry-ladder.ts);
   * - a manual attempt that failed changes no state and leaves the ladder as it was.
   *
   * Recording the same `attemptKey` again changes nothing and returns `recorded: false`.
   *
   * @throws Error when the callback does not exist
   */
  async recordAttempt(
    callback: Pick<CallbackRecord, 'id' | 'workspace_id' | 'url' | 'event_ms'>,
    attemptKey: string,
    attempt: NewCallbackAttempt,
    nextAttemptMs: number | null,
    now = Date.now(),
  ): Promise<RecordedAttempt> {
    const count = this.overview.attempt({
      workspaceId: callback.workspace_id,
      origin: destinationOf(callback.url).origin,
      eventMs: callback.event_ms,
      sentMs: attempt.sent_ms,
      durationMs: attempt.duration_ms,
      status: attempt.status,
      error: attempt.error,
      nowMs: now,
    });
    const [code, raw] = (await RECORD_ATTEMPT.run(
      this.redis,
      [...this.scriptKeys(callback), ...count.keys],
      [
        attemptKey,
        encodeAttempt(attempt),
        attempt.ladder_attempt ?? 0,
        attempt.error === null ? '1' : '0',
        nextAttemptMs === null ? '' : nextAttemptMs,
        now,
        attempt.sent_ms,
        SCHEDULED_ATTEMPT_SEPARATOR,
        ...count.args,
      ],
    )) as [number, string];
    if (code === -1) throw new Error(`callback ${callback.id} does not exist`);
    return { recorded: code === 1, callback: JSON.parse(raw) as CallbackRecord };
  }

  /**
   * Shows a deferred automatic attempt's new time as the callback's `next_attempt_ms`, unless the
   * callback ended or recorded that attempt meanwhile.
   */
  async deferNext(messageId: string, ladderAttempt: number, atMs: number): Promise<void> {
    await DEFER.run(this.redis, [this.callbackKeys.callback(messageId)], [ladderAttempt, atMs]);
  }

  /** Ends a still-pending callback as `failed`; returns the record as it now stands. */
  async giveUp(callback: Pick<CallbackRecord, 'id' | 'workspace_id'>, now = Date.now()): Promise<CallbackRecord | undefined> {
    const count = this.overview.callbackEvent(callback.workspace_id, now);
    const raw = (await GIVE_UP.run(this.redis, [...this.scriptKeys(callback), ...count.keys], [now, SCHEDULED_ATTEMPT_SEPARATOR, ...count.args])) as string;
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
      this.callbackKeys.callback(id),
      this.callbackKeys.callbackAttempts(id),
      this.callbackKeys.workspaceCallbacksInState(workspaceId, 'pending'),
      this.callbackKeys.workspaceCallbacksInState(workspaceId, 'delivered'),
      this.callbackKeys.workspaceCallbacksInState(workspaceId, 'failed'),
      this.callbackKeys.callbackSchedule(shardOfId(id)),
      this.callbackKeys.endedCallbacks(shardOfId(id)),
    ];
  }

  /** Moves an ended callback's place in the ended index to `lastActivityMs` (retention could not remove it now); one not there stays out. */
  async postponeRemoval(messageId: string, lastActivityMs: number): Promise<void> {
    await this.redis.zadd(this.callbackKeys.endedCallbacks(shardOfId(messageId)), 'XX', lastActivityMs, messageId);
  }

  /** How many ended callbacks, over every shard, had their last activity at or before `cutoffMs`. */
  async countEndedBefore(cutoffMs: number): Promise<number> {
    const counts = await Promise.all(this.keys.shards.map((shard) => this.redis.zcount(this.callbackKeys.endedCallbacks(shard), '-inf', cutoffMs)));
    return counts.reduce((a, b) => a + b, 0);
  }

  /** Ids of the shard's ended callbacks whose last activity was at or before `cutoffMs`, oldest first. */
  async endedBefore(shard: number, cutoffMs: number, limit: number): Promise<string[]> {
    return this.redis.zrangebyscore(this.callbackKeys.endedCallbacks(shard), '-inf', cutoffMs, 'LIMIT', 0, limit);
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
    // Its own id stands in for the workspace's: index keys that do not exist, on the callback's
    // shard (a script's keys must share one slot).
    const [workspaceId, type] = record ? [record.workspace_id, record.type] : [messageId, '-'];
    const jobId = record?.job_id ?? messageId;
    const shard = shardOfId(messageId);
    const keys = [
      ...this.scriptKeys({ id: messageId, workspace_id: workspaceId }).slice(0, 5),
      this.callbackKeys.workspaceCallbacks(workspaceId),
      this.callbackKeys.workspaceCallbacksOfType(workspaceId, type),
      this.callbackKeys.endedCallbacks(shard),
      this.callbackKeys.callbackSchedule(shard),
      this.keys.removedFrom(this.callbackKeys.workspaceCallbacks(workspaceId)),
      this.keys.removedAt(this.callbackKeys.workspaceCallbacks(workspaceId)),
      this.callbackKeys.workspaceCallbacksOfEndpoint(workspaceId, record?.endpoint_id ?? NO_ENDPOINT),
      this.callbackKeys.jobFanOutCallbacks(jobId),
    ];
    // A pending callback going with its job leaves pending without ending: the Overview counts that
    // (in the bucket of now), or its pending line would read low for every earlier slot.
    const count = record?.state === 'pending' && cutoffMs === 'with-its-job' ? this.overview.callbackEvent(workspaceId, Date.now()) : { keys: [], args: [] };
    const result = await PURGE.run(
      this.redis,
      [...keys, ...count.keys],
      [messageId, cutoffMs === 'with-its-job' ? '' : cutoffMs, SCHEDULED_ATTEMPT_SEPARATOR, REMOVED_KEPT_MS, REMOVED_KEPT_MAX, Date.now(), ...count.args],
    );
    if (result === -1) throw new CorruptRecordError(messageId);
    return result === 1;
  }

  /**
   * A workspace's callbacks, newest first, filtered.
   *
   * Status, type and endpoint have index sets of their own (kept in step by the scripts that move
   * the state), rather than a scan of the workspace index that filters records: a scan's cost grows
   * with the callbacks the filter skips, and a status filter is what on-call looks at ("what
   * failed?"), typically a few among very many delivered. So one filter, or none, reads exactly one
   * page of one index. More than one reads the narrowest index (state, then endpoint, then type)
   * and filters the rest in chunks; `job_id` names a handful of callbacks (its own `callback_url`'s,
   * whose ids the job's id gives, and its endpoints', kept in a set beside the job), and is answered
   * from those records directly.
   */
  async list(workspaceId: string, q: CallbackListQuery): Promise<CallbackPage> {
    const matches = (cb: CallbackRecord) =>
      cb.workspace_id === workspaceId &&
      (q.state === undefined || cb.state === q.state) &&
      (q.type === undefined || cb.type === q.type) &&
      (q.jobId === undefined || cb.job_id === q.jobId) &&
      (q.endpointId === undefined || cb.endpoint_id === q.endpointId) &&
      (q.createdAfterMs === undefined || cb.created_ms >= q.createdAfterMs) &&
      (q.createdBeforeMs === undefined || cb.created_ms < q.createdBeforeMs);
    const key =
      q.state !== undefined
        ? this.callbackKeys.workspaceCallbacksInState(workspaceId, q.state)
        : q.endpointId !== undefined
          ? this.callbackKeys.workspaceCallbacksOfEndpoint(workspaceId, q.endpointId)
          : q.type !== undefined
            ? this.callbackKeys.workspaceCallbacksOfType(workspaceId, q.type)
            : this.callbackKeys.workspaceCallbacks(workspaceId);
    if (q.jobId !== undefined) {
      const ids = [...callbackIdsFor(q.jobId), ...(await this.fanOutCallbackIdsOf(q.jobId))];
      const records = (await this.getMany(ids)).filter(matches).sort((a, b) => b.created_ms - a.created_ms || (a.id < b.id ? 1 : -1));
      const start = q.after === undefined ? 0 : records.findIndex((cb) => cb.id === q.after) + 1;
      if (q.after !== undefined && start === 0) return { callbacks: [], hasMore: false, cursorFound: false };
      return { callbacks: records.slice(start, start + q.limit), hasMore: records.length > start + q.limit, cursorFound: true };
    }
    const filterInMemory = [q.state, q.type, q.endpointId].filter((f) => f !== undefined).length > 1;
    const found: CallbackRecord[] = [];
    let after = q.after;
    for (;;) {
      const page = await readIndexPage(this.redis, key, {
        limit: filterInMemory ? Math.max(FILTER_SCAN_CHUNK, q.limit) : q.limit,
        after,
        order: 'desc',
        minScore: q.createdAfterMs,
        maxScore: q.createdBeforeMs,
        cursorScoreKeys: [this.callbackKeys.workspaceCallbacks(workspaceId), this.keys.removedFrom(this.callbackKeys.workspaceCallbacks(workspaceId))],
      });
      if (!page.cursorFound) {
        // The client's cursor names no callback of the workspace. A chunk's own last one removed
        // before the next chunk was read, and already past the removed set's cap (thousands removed
        // at once), ends this page where it got to: the client's next page starts after its last
        // callback, which was read a moment ago.
        if (after === q.after) return { callbacks: [], hasMore: false, cursorFound: false };
        return { callbacks: found, hasMore: found.length > 0, cursorFound: true };
      }
      const records = await this.getMany(page.ids);
      for (const record of records) {
        if (!matches(record)) continue;
        if (found.length === q.limit) return { callbacks: found, hasMore: true, cursorFound: true };
        found.push(record);
      }
      if (!page.hasMore) return { callbacks: found, hasMore: false, cursorFound: true };
      if (!filterInMemory && found.length === q.limit) return { callbacks: found, hasMore: true, cursorFound: true };
      after = page.ids.at(-1);
    }
  }

  /** Ids of the callbacks a job made beyond its own `callback_url`'s (to endpoints and the relay; its own callback's ids come from `callbackIdsFor`). */
  async fanOutCallbackIdsOf(jobId: string): Promise<string[]> {
    return this.redis.smembers(this.callbackKeys.jobFanOutCallbacks(jobId));
  }

  async getMany(ids: string[]): Promise<CallbackRecord[]> {
    if (ids.length === 0) return [];
    const raws = await mgetByShard(this.redis, ids, this.callbackKeys.callback);
    return raws.filter((r): r is string => r !== null).map((r) => JSON.parse(r) as CallbackRecord);
  }

  /**
   * Reserves `count` send slots at `ratePerSecond` on the workspace's one recovery pace, so that
   * recoveries started together queue behind each other instead of multiplying the rate at the
   * receivers. Returns when the first slot is (Unix ms).
   */
  async reserveRecoverySlots(workspaceId: string, count: number, ratePerSecond: number, nowMs: number): Promise<number> {
    return (await RESERVE_PACE.run(
      this.redis,
      [this.callbackKeys.workspaceRecoveryPace(workspaceId)],
      [nowMs, Math.ceil((count * 1000) / ratePerSecond)],
    )) as number;
  }

  /** Ids of the workspace's callbacks in `state` created in [fromMs, toMs), oldest first, from rank `offset`. */
  async idsInState(workspaceId: string, state: CallbackState, fromMs: number, toMs: number, offset: number, count: number): Promise<string[]> {
    return this.redis.zrangebyscore(this.callbackKeys.workspaceCallbacksInState(workspaceId, state), fromMs, `(${toMs}`, 'LIMIT', offset, count);
  }

  /**
   * Callbacks per state over every workspace (`media_callbacks{status}`): a ZCARD per workspace and
   * state, read at scrape time rather than kept as counters that a crash could skew. One pipeline
   * per store shard, sent together: a cluster client refuses a pipeline whose keys span nodes.
   */
  async countByState(): Promise<Record<CallbackState, number>> {
    const states: CallbackState[] = ['pending', 'delivered', 'failed'];
    const counts: Record<CallbackState, number> = { pending: 0, delivered: 0, failed: 0 };
    const workspaceIds = await this.redis.smembers(this.keys.workspaces());
    await Promise.all(
      [...groupByShard(workspaceIds).values()].map(async (inShard) => {
        const pipeline = this.redis.pipeline();
        for (const id of inShard) for (const state of states) pipeline.zcard(this.callbackKeys.workspaceCallbacksInState(id, state));
        const replies = (await pipeline.exec()) ?? [];
        replies.forEach(([err, value], i) => {
          if (err) throw err;
          counts[states[i % states.length]!] += Number(value);
        });
      }),
    );
    return counts;
  }
}
