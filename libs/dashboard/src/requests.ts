import { STATUS_CODES } from 'node:http';
import {
  type CallbackAdmin,
  CallbackNotFoundError,
  conditionOf,
  type DestinationGate,
  destinationOf,
  healthOf,
  MAX_ENDPOINTS_PER_WORKSPACE,
  presentCallback,
  presentCallbackDetail,
  type RelayDirectory,
  type WebhookEndpoints,
  type WorkspaceDestinationStatus,
} from '@media/callbacks';
import {
  type CallbackAttempt,
  callbackIdFor,
  callbackIdsFor,
  type CallbackRecord,
  type CallbackState,
  eventTypeFor,
  isFinished,
  type JobPresenter,
  type JobRecord,
} from '@media/domain';
import type { JobRepository } from '@media/jobs';
import { ApiError } from '@media/common';
import {
  ATTEMPT_ERROR_WORDS,
  type CallbackFilter,
  type DestinationList,
  type DestinationRow,
  type FilteredRecoveryPreview,
  type FilteredRecoveryStarted,
  type JobKind,
  type LastAttempt,
  type RecoveryFilters,
  type RequestCallback,
  type RequestDetail,
  type RequestList,
  type RequestRow,
  type Usage,
} from './contract';

export interface RequestQuery {
  kind?: JobKind;
  callbackStatus?: CallbackFilter;
  /** An origin (`https://host:port`): only requests whose callback went there. */
  destination?: string;
  /** Bounds on when the request's callback was created (Unix ms; after inclusive, before exclusive). */
  createdAfterMs?: number;
  createdBeforeMs?: number;
  /** An exact id (`req_…`, `video_…` or `msg_…`), or text to find in prompts and callback URLs. */
  q?: string;
  limit: number;
  /** The id of the last row the client saw. */
  after?: string;
}

/** Callback records read per step while a callback filter looks for its rows. */
const FILTER_CHUNK = 100;
/**
 * Callbacks one page of a callback filter looks through at most (a callback's destination is in its
 * record, not in an index, and the indexes hold the endpoints' callbacks beside the requests' own):
 * past it the page ends early, with `next_after` to go on from.
 */
const FILTER_SCAN = 2_000;
/**
 * Requests a text search looks through at most, newest first. Prompts and URLs have no index: a
 * search reads records, so it reads a bounded number of them however large the workspace (and
 * fewer when it fills its page sooner), and the page says so. An exact id is found however old.
 */
export const SEARCH_WINDOW = 1_000;
/** Records read per round trip while a search goes through its window. */
const SEARCH_CHUNK = 100;
/** Text matches whose callbacks are read together when the search also filters on callbacks. */
const SEARCH_CHECK_BATCH = 50;
const DAY_MS = 86_400_000;
/**
 * A job's callbacks at most: its own `callback_url`'s, one per endpoint (a workspace has at most 10),
 * and the relay's when a connected listener subscribed to its event.
 */
const MAX_CALLBACKS_PER_JOB = 2 + MAX_ENDPOINTS_PER_WORKSPACE;

const seconds = (ms: number) => Math.floor(ms / 1000);
/** The order of the Requests page: newest first, ties broken by id as the sorted sets break them. */
const newestFirst = (a: Pick<JobRecord, 'created_ms' | 'id'>, b: Pick<JobRecord, 'created_ms' | 'id'>) =>
  b.created_ms - a.created_ms || (a.id < b.id ? 1 : a.id > b.id ? -1 : 0);
const kindOfType = (type: string): JobKind => (type.startsWith('video.') ? 'video' : 'image');

/**
 * The Requests and Usage pages' reads: image and video requests of one workspace merged newest
 * first, each with its callback. Everything is scoped by the workspace: an id of another workspace
 * is not found.
 */
export class RequestsView {
  constructor(
    private readonly deps: {
      jobs: Pick<JobRepository, 'list' | 'getMany' | 'getForWorkspace' | 'placeOf' | 'ledger'>;
      presenter: Pick<JobPresenter, 'render'>;
      callbackAdmin: Pick<CallbackAdmin, 'list' | 'findMany' | 'describe' | 'lastAttempts' | 'previewRecovery' | 'recover'>;
      destinations: Pick<DestinationGate, 'ofWorkspace'>;
      /** Names the endpoint each of a request's callbacks went to. */
      endpoints: Pick<WebhookEndpoints, 'list'>;
      /** Tells the callbacks that went down a `media-callbacks listen` connection from those sent over the network. */
      relays: Pick<RelayDirectory, 'isRelayUrl'>;
      now?: () => number;
    },
  ) {}

  async list(workspaceId: string, q: RequestQuery): Promise<RequestList> {
    const text = q.q?.trim();
    if (text) return isId(text) ? { data: await this.findById(workspaceId, text, q), has_more: false } : this.search(workspaceId, text, q);
    if (q.callbackStatus || q.destination || q.createdAfterMs !== undefined || q.createdBeforeMs !== undefined) return this.listByCallbacks(workspaceId, q);
    const kinds: JobKind[] = q.kind ? [q.kind] : ['image', 'video'];
    // A request deleted while its page was shown still has a place to go on from (its listing remembers it).
    const cursor = q.after ? await this.deps.jobs.placeOf(workspaceId, q.after) : undefined;
    if (q.after && !cursor) throw pagedFromGone();
    let hasMore = false;
    const candidates: JobRecord[] = [];
    for (const kind of kinds) {
      // The cursor's own index pages by rank; the other starts at the cursor's time (ties filtered below).
      const own = cursor?.kind === kind;
      const page = await this.deps.jobs.list(workspaceId, kind, {
        limit: q.limit,
        order: 'desc',
        after: own ? cursor.id : undefined,
        createdBeforeMs: cursor && !own ? cursor.created_ms + 1 : undefined,
      });
      hasMore ||= page.hasMore;
      candidates.push(...(await this.deps.jobs.getMany(page.ids)));
    }
    const merged = candidates.filter((job) => !cursor || newestFirst(cursor, job) < 0).sort(newestFirst);
    return { data: await this.rows(workspaceId, merged.slice(0, q.limit)), has_more: hasMore || merged.length > q.limit };
  }

  /** How many failed callbacks a recovery with these filters would retry now. */
  async previewRecovery(workspaceId: string, filters: RecoveryFilters): Promise<FilteredRecoveryPreview> {
    const preview = await this.deps.callbackAdmin.previewRecovery(workspaceId, recoveryWindow(filters));
    return { filters, count: preview.count, rate_per_second: preview.ratePerSecond };
  }

  /** One manual attempt for each failed callback these filters list, through the one recovery (its pace and limits). */
  async recover(workspaceId: string, filters: RecoveryFilters): Promise<FilteredRecoveryStarted> {
    const recovery = await this.deps.callbackAdmin.recover(workspaceId, recoveryWindow(filters));
    return { id: recovery.id, filters, count: recovery.count, rate_per_second: recovery.ratePerSecond };
  }

  async detail(workspaceId: string, id: string): Promise<RequestDetail | undefined> {
    const job = await this.deps.jobs.getForWorkspace(workspaceId, id);
    if (!job) return undefined;
    const finished = isFinished(job.status);
    const [[row], found, endpoints] = await Promise.all([
      this.rows(workspaceId, [job]),
      // Every callback of the job: its own callback_url's and each endpoint's (the store keeps their ids beside the job).
      finished ? this.deps.callbackAdmin.list(workspaceId, { jobId: job.id, limit: MAX_CALLBACKS_PER_JOB }) : undefined,
      finished ? this.deps.endpoints.list(workspaceId) : [],
    ]);
    // The request's own first, then the endpoints' in the endpoints' order (oldest first), those of
    // deleted endpoints, then the relay's for a listener's subscription to the event.
    const place = new Map(endpoints.map((e, i) => [e.id, i]));
    const rank = (cb: CallbackRecord) =>
      cb.endpoint_id !== undefined ? (place.get(cb.endpoint_id) ?? endpoints.length) : cb.url === job.callback_url ? -1 : endpoints.length + 1;
    const records = (found?.callbacks ?? []).sort((a, b) => rank(a) - rank(b) || a.created_ms - b.created_ms || (a.id < b.id ? -1 : 1));
    const pending = records.some((cb) => cb.state === 'pending');
    const [described, destinations] = await Promise.all([
      // A callback removed between the list and its read (its job deleted) is left out, not shown as none.
      Promise.all(
        records.map((cb) =>
          this.deps.callbackAdmin.describe(workspaceId, cb.id).catch((err: unknown) => {
            if (err instanceof CallbackNotFoundError) return undefined;
            throw err;
          }),
        ),
      ),
      pending ? this.deps.destinations.ofWorkspace(workspaceId, this.now()) : [],
    ]);
    const byEndpoint = new Map(endpoints.map((e) => [e.id, e]));
    const callbacks = described
      .filter((d): d is NonNullable<typeof d> => d !== undefined)
      .map(({ callback, attempts }): RequestCallback => {
        const endpoint = callback.endpoint_id === undefined ? undefined : byEndpoint.get(callback.endpoint_id);
        let destination: DestinationRow | null = null;
        if (callback.state === 'pending') {
          const { id: destinationId } = destinationOf(callback.url);
          const status = destinations.find((d) => d.id === destinationId);
          destination = status ? destinationRow(status) : null;
        }
        return {
          callback: presentCallbackDetail(callback, attempts),
          endpoint: endpoint ? { id: endpoint.id, url: endpoint.url, description: endpoint.description, enabled: endpoint.enabled } : null,
          destination,
          relay: this.deps.relays.isRelayUrl(callback.url),
        };
      });
    return {
      row: row!,
      job: this.deps.presenter.render(job) as unknown as Record<string, unknown>,
      callbacks,
      // A W3C traceparent is `version-traceid-spanid-flags`.
      trace_id: job.traceparent?.split('-')[1] ?? null,
    };
  }

  /** The receivers the workspace's callbacks went to lately, most recent first, and how each is doing. */
  async destinations(workspaceId: string): Promise<DestinationList> {
    return { data: (await this.deps.destinations.ofWorkspace(workspaceId, this.now())).map(destinationRow) };
  }

  private now(): number {
    return (this.deps.now ?? Date.now)();
  }

  /** Charges of the last `days` UTC days (today included), per day and entry by entry. */
  async usage(workspaceId: string, days: number): Promise<Usage> {
    const now = this.now();
    const firstDay = Math.floor(now / DAY_MS) * DAY_MS - (days - 1) * DAY_MS;
    const entries = (await this.deps.jobs.ledger(workspaceId)).filter((e) => e.created_ms >= firstDay).sort((a, b) => b.created_ms - a.created_ms);
    // Sums in micro-dollars: adding binary fractions day after day drifts.
    const micros = (n: number) => Math.round(n * 1e6);
    const perDay = new Map<string, { micros: number; count: number }>();
    for (let t = firstDay; t <= now; t += DAY_MS) perDay.set(new Date(t).toISOString().slice(0, 10), { micros: 0, count: 0 });
    for (const e of entries) {
      const day = perDay.get(new Date(e.created_ms).toISOString().slice(0, 10));
      if (day) {
        day.micros += micros(e.amount);
        day.count++;
      }
    }
    const total = entries.reduce((sum, e) => sum + micros(e.amount), 0);
    return {
      currency: 'usd',
      total: total / 1e6,
      days: [...perDay].map(([date, d]) => ({ date, amount: d.micros / 1e6, count: d.count })),
      entries: entries.map((e) => ({ job_id: e.job_id, model: e.model, amount: e.amount, created_at: seconds(e.created_ms) })),
    };
  }

  private async findById(workspaceId: string, id: string, q: RequestQuery): Promise<RequestRow[]> {
    let job: JobRecord | undefined;
    if (id.startsWith('msg_')) {
      const [callback] = await this.deps.callbackAdmin.findMany(workspaceId, [id]);
      if (callback) job = await this.deps.jobs.getForWorkspace(workspaceId, callback.job_id);
    } else {
      job = await this.deps.jobs.getForWorkspace(workspaceId, id);
    }
    if (!job || (q.kind && job.kind !== q.kind)) return [];
    const callbacks = await this.callbacksOf(workspaceId, [job]);
    return matchesCallbackFilters(callbacks.get(job.id), q) ? this.rows(workspaceId, [job], callbacks) : [];
  }

  /**
   * Text in prompts and callback URLs, ignoring case, among the newest {@link SEARCH_WINDOW}
   * requests (of the chosen kind), then the other filters. Reads newest first in chunks, merging
   * images and videos by time, and stops as soon as it has a page (and one more, for `has_more`):
   * a search that matches often reads little. `after` pages on within the same window.
   */
  private async search(workspaceId: string, text: string, q: RequestQuery): Promise<RequestList> {
    const needle = text.toLowerCase();
    const streams = (q.kind ? [q.kind] : (['image', 'video'] as JobKind[])).map((kind) => ({
      kind,
      buffer: [] as JobRecord[],
      after: undefined as string | undefined,
      more: true,
    }));
    const callbackFiltered = q.callbackStatus !== undefined || q.destination !== undefined || q.createdAfterMs !== undefined || q.createdBeforeMs !== undefined;
    const callbacks = new Map<string, CallbackRecord>();
    const matched: JobRecord[] = [];
    const unchecked: JobRecord[] = [];
    // Callback filters need the callbacks: read for a batch of text matches at a time.
    const check = async () => {
      const found = await this.callbacksOf(workspaceId, unchecked);
      for (const job of unchecked) if (matchesCallbackFilters(found.get(job.id), q)) matched.push(job);
      for (const [jobId, cb] of found) callbacks.set(jobId, cb);
      unchecked.length = 0;
    };
    let lookedThrough = 0;
    let everything = false;
    // Where the page before ended: a request deleted while that page was shown keeps its place.
    const cursor = q.after ? await this.deps.jobs.placeOf(workspaceId, q.after) : undefined;
    if (q.after && !cursor) throw pagedFromGone();
    let passedCursor = cursor === undefined;
    while (lookedThrough < SEARCH_WINDOW && matched.length <= q.limit) {
      for (const stream of streams) {
        while (stream.buffer.length === 0 && stream.more) {
          const page = await this.deps.jobs.list(workspaceId, stream.kind, { limit: SEARCH_CHUNK, order: 'desc', after: stream.after });
          stream.more = page.hasMore && page.ids.length > 0;
          stream.after = page.ids.at(-1) ?? stream.after;
          stream.buffer = await this.deps.jobs.getMany(page.ids);
        }
      }
      const live = streams.filter((stream) => stream.buffer.length > 0);
      if (live.length === 0) {
        everything = true;
        break;
      }
      const next = live.reduce((a, b) => (newestFirst(a.buffer[0]!, b.buffer[0]!) <= 0 ? a : b));
      const job = next.buffer.shift()!;
      lookedThrough++;
      if (!passedCursor) {
        if (newestFirst(cursor!, job) >= 0) continue;
        passedCursor = true;
      }
      if (!job.prompt.toLowerCase().includes(needle) && !(job.callback_url ?? '').toLowerCase().includes(needle)) continue;
      if (!callbackFiltered) matched.push(job);
      else if (unchecked.push(job) >= SEARCH_CHECK_BATCH) await check();
    }
    if (unchecked.length > 0) await check();
    if (!everything && lookedThrough === SEARCH_WINDOW && streams.every((stream) => stream.buffer.length === 0 && !stream.more)) everything = true;
    const search = { window: SEARCH_WINDOW, looked_through: lookedThrough, complete: everything };
    // Not passed within the window: further back than a search looks.
    if (!passedCursor) return { data: [], has_more: false, search };
    const page = matched.slice(0, q.limit);
    return { data: await this.rows(workspaceId, page, callbackFiltered ? callbacks : undefined), has_more: matched.length > q.limit, search };
  }

  /**
   * A callback-state, destination or time filter reads the workspace's callbacks newest first (a
   * state's own index with a state filter, so a rare state is found fast) and keeps the requests
   * whose own callback matches.
   */
  private async listByCallbacks(workspaceId: string, q: RequestQuery): Promise<RequestList> {
    // The page goes on from the cursor request's callback. A request deleted while its page was
    // shown has no record left to say which of its events its callback was; the callbacks' list
    // remembers the place of the one it had, so each id its kind's events give is tried in turn.
    let cursors: string[] = [];
    if (q.after) {
      const cursor = await this.deps.jobs.getForWorkspace(workspaceId, q.after);
      const own = cursor ? callbackIdOf(cursor) : undefined;
      const place = cursor ? undefined : await this.deps.jobs.placeOf(workspaceId, q.after);
      cursors = own ? [own] : place ? callbackIdsFor(place.id, place.kind) : [];
      if (cursors.length === 0) throw pagedFromGone();
    }
    let after = cursors.shift();
    let cursorPlaced = after === undefined;
    const failing = q.callbackStatus === 'failing';
    const found: CallbackRecord[] = [];
    let scanned = 0;
    for (;;) {
      const page = await this.deps.callbackAdmin.list(workspaceId, {
        state: failing ? 'pending' : (q.callbackStatus as CallbackState | undefined),
        createdAfterMs: q.createdAfterMs,
        createdBeforeMs: q.createdBeforeMs,
        // In chunks, filtered here: even a state alone skips the endpoints' callbacks, which its index holds too.
        limit: FILTER_CHUNK,
        after,
      });
      if (!page.cursorFound) {
        if (!cursorPlaced) {
          if (cursors.length === 0) throw pagedFromGone();
          after = cursors.shift();
          continue;
        }
        // The last callback of the chunk before was removed before this one was read, and is past
        // what the removed set keeps (thousands removed at once): the page ends where it got to,
        // and the next one starts after its last row.
        return { data: await this.rowsOfCallbacks(workspaceId, found), has_more: found.length > 0 };
      }
      cursorPlaced = true;
      for (const callback of page.callbacks) {
        scanned++;
        if (q.kind && kindOfType(callback.type) !== q.kind) continue;
        if (q.destination && !sameOrigin(callback.url, q.destination)) continue;
        if (failing && callback.attempt_count === 0) continue;
        // A row is a request and its own callback_url's callback (one per job, which is what pages
        // on from a row); its endpoints' callbacks are on its page and on each endpoint's.
        if (callback.endpoint_id !== undefined) continue;
        if (found.length === q.limit) return { data: await this.rowsOfCallbacks(workspaceId, found), has_more: true };
        found.push(callback);
      }
      if (!page.hasMore) return { data: await this.rowsOfCallbacks(workspaceId, found), has_more: false };
      const last = page.callbacks.at(-1);
      after = last?.id;
      if (scanned >= FILTER_SCAN && last) {
        return { data: await this.rowsOfCallbacks(workspaceId, found), has_more: true, next_after: last.job_id };
      }
    }
  }

  private async rowsOfCallbacks(workspaceId: string, callbacks: CallbackRecord[]): Promise<RequestRow[]> {
    const jobs = new Map((await this.deps.jobs.getMany(callbacks.map((cb) => cb.job_id))).map((j) => [j.id, j]));
    const ordered = callbacks.map((cb) => jobs.get(cb.job_id)).filter((j): j is JobRecord => j !== undefined && j.workspace_id === workspaceId);
    return this.rows(workspaceId, ordered, new Map(callbacks.map((cb) => [cb.job_id, cb])));
  }

  /** The callbacks of `jobs` that have one, by job id. */
  private async callbacksOf(workspaceId: string, jobs: JobRecord[]): Promise<Map<string, CallbackRecord>> {
    const ids = jobs.map(callbackIdOf).filter((id): id is string => id !== undefined);
    return new Map((await this.deps.callbackAdmin.findMany(workspaceId, ids)).map((cb) => [cb.job_id, cb]));
  }

  private async rows(workspaceId: string, jobs: JobRecord[], known?: Map<string, CallbackRecord>): Promise<RequestRow[]> {
    const callbacks = known ?? (await this.callbacksOf(workspaceId, jobs));
    const present = jobs.map((job) => callbacks.get(job.id)).filter((cb): cb is CallbackRecord => cb !== undefined);
    const last = await this.deps.callbackAdmin.lastAttempts(present);
    return jobs.map((job) => {
      const callback = callbacks.get(job.id);
      const attempt = callback ? last.get(callback.id) : undefined;
      return {
        id: job.id,
        kind: job.kind,
        model: job.model,
        status: job.status,
        cost: job.cost,
        created_at: seconds(job.created_ms),
        prompt: job.prompt,
        callback: callback ? presentCallback(callback) : null,
        callback_url: job.callback_url,
        last_attempt: attempt ? lastAttempt(attempt) : null,
        failing: callback !== undefined && isFailing(callback),
      };
    });
  }
}

/** Pending and tried at least once: every attempt so far failed, or it would be delivered. */
export function isFailing(callback: CallbackRecord): boolean {
  return callback.state === 'pending' && callback.attempt_count > 0;
}

/** An attempt's result as the list says it: the receiver's status and its reason phrase, or the error class in words. */
export function attemptResultWords(attempt: Pick<CallbackAttempt, 'status' | 'error'>): string {
  if (attempt.status !== null) {
    const words = `${attempt.status} ${STATUS_CODES[attempt.status] ?? ''}`.trim();
    return attempt.error === 'redirect' ? `${words} (redirect, not followed)` : words;
  }
  return attempt.error ? (ATTEMPT_ERROR_WORDS[attempt.error] ?? attempt.error) : 'delivered';
}

export function lastAttempt(attempt: CallbackAttempt): LastAttempt {
  return {
    sent_at: seconds(attempt.sent_ms),
    trigger: attempt.trigger,
    status_code: attempt.status,
    error: attempt.error,
    result: attemptResultWords(attempt),
  };
}

/** Whether a request's callback passes the callback filters of `q` (state, destination, creation time). */
function matchesCallbackFilters(callback: CallbackRecord | undefined, q: RequestQuery): boolean {
  const needsCallback = q.callbackStatus !== undefined || q.destination !== undefined || q.createdAfterMs !== undefined || q.createdBeforeMs !== undefined;
  if (!callback) return !needsCallback;
  if (q.callbackStatus === 'failing' ? !isFailing(callback) : q.callbackStatus !== undefined && callback.state !== q.callbackStatus) return false;
  if (q.destination !== undefined && !sameOrigin(callback.url, q.destination)) return false;
  if (q.createdAfterMs !== undefined && callback.created_ms < q.createdAfterMs) return false;
  return q.createdBeforeMs === undefined || callback.created_ms < q.createdBeforeMs;
}

const isId = (text: string) => /^msg_[A-Za-z0-9]+$/.test(text) || /^(req|video)_[A-Za-z0-9]+$/.test(text);

/** The Requests page's filters as the recovery's window: callbacks created in [after, before), to a destination, of a kind. */
function recoveryWindow(filters: RecoveryFilters): { sinceMs: number; untilMs?: number; origin?: string; kind?: JobKind } {
  return {
    sinceMs: (filters.created_after ?? 0) * 1000,
    untilMs: filters.created_before === undefined ? undefined : filters.created_before * 1000,
    origin: filters.destination,
    kind: filters.kind,
  };
}

function destinationRow(status: WorkspaceDestinationStatus): DestinationRow {
  const secondsOrNull = (ms: number | null) => (ms === null ? null : seconds(ms));
  return {
    origin: status.origin,
    state: conditionOf(status),
    held_back_because: status.heldBack,
    limit: status.limit,
    in_flight: status.inFlight,
    waiting: status.deferred,
    slow_until: secondsOrNull(status.slowUntilMs),
    host_slow_until: secondsOrNull(status.hostSlowUntilMs),
    throttled_until: secondsOrNull(status.throttledUntilMs),
    health: healthOf(status),
    failures_in_row: status.failuresInRow,
    last_failure_at: secondsOrNull(status.lastFailedMs),
    last_delivered_at: secondsOrNull(status.lastDeliveredMs),
  };
}

/** A finished job's callback id (one event per job); undefined when it asked for none or has not ended. */
function callbackIdOf(job: JobRecord): string | undefined {
  return job.callback_url && isFinished(job.status) ? callbackIdFor(job.id, eventTypeFor(job)) : undefined;
}

function sameOrigin(url: string, origin: string): boolean {
  try {
    return destinationOf(url).origin === origin;
  } catch {
    return false;
  }
}

/**
 * The request a page continued from (`after`) is gone (deleted, or removed by retention): said, so
 * that the page offers the first page again, rather than an empty page that reads as the list's end.
 */
function pagedFromGone(): ApiError {
  return ApiError.invalid(
    'The request this page continued from no longer exists (it was deleted, or retention removed it): start again from the first page.',
    'after',
    'invalid_value',
  );
}
