import { jobIds, type JobQueue } from '@media/queues';
import { destinationOf } from './destination-policy';
import { RECOVERY_ATTEMPTS_PER_SECOND } from './retry-ladder';
import { type CallbackAttempt, type CallbackRecord, newId } from '@media/domain';
import { attemptKey, type CallbackListQuery, type CallbackPage, type CallbackRepository } from './callback-store';
import type { IdempotencyRepository } from '@media/jobs';
import { CallbackNotFoundError, IdempotencyKeyReusedError, RecoveryTooLargeError } from './errors';

export { RECOVERY_ATTEMPTS_PER_SECOND };
/** Ids read from the failed index per step while a recovery collects its callbacks. */
const RECOVERY_READ_CHUNK = 500;
/** Jobs queued per round trip. */
const QUEUE_CHUNK = 500;
/** Callbacks one recovery may retry (at 5/s, over half an hour); a larger window is refused: narrow it. */
export const MAX_RECOVERY = 10_000;
/**
 * Failed callbacks a recovery to one destination looks through to find that destination's (their
 * records are read to learn where each went); a window holding more is refused: narrow it.
 */
export const MAX_RECOVERY_SCAN = 100_000;

/** A manual retry that was queued for the dispatcher. */
export interface ManualRetryRequest {
  message_id: string;
  /** Identifies this request's attempt; pass it to {@link CallbackAdmin.findManualAttempt}. */
  request_id: string;
  requested_at: string;
}

/** Which failed callbacks a recovery retries: created in [sinceMs, untilMs) (Unix ms; `untilMs` defaults to now). */
export interface RecoveryWindow {
  sinceMs: number;
  untilMs?: number;
  /** Only those to this destination: an origin, `https://host:port` (as `destinationOf` names it). */
  origin?: string;
  /** Only callbacks of image jobs, or of video jobs (their event type's prefix). */
  kind?: 'image' | 'video';
}

/** What a recovery would retry, counted before anyone commits to it. */
export interface RecoveryPreview {
  sinceMs: number;
  untilMs: number;
  origin: string | null;
  /** Failed callbacks in the window (to the destination, with one). */
  count: number;
  ratePerSecond: number;
}

/** A bulk recovery: what was queued, and how fast the attempts go out. */
export interface Recovery extends RecoveryPreview {
  id: string;
}

/**
 * How long a keyed retry's claim may stay without its attempt queued before a repeat queues it: the
 * call that claimed it died between the two steps (they take milliseconds).
 */
const ORPHANED_RETRY_CLAIM_MS = 30_000;

export interface CallbackAdminDeps {
  callbacks: CallbackRepository;
  /** The dispatcher's queue: manual attempts are only queued here, never made (the dispatcher alone calls receivers). */
  deliveries: Pick<JobQueue<'callback-deliveries'>, 'add' | 'addBulk'>;
  /** `Idempotency-Key` claims (the same store as the jobs'): a retry repeated with its key makes no second attempt. */
  idempotency?: Pick<IdempotencyRepository, 'claim' | 'orphan' | 'markDone' | 'takeOver'>;
  now?: () => number;
  recoveryRatePerSecond?: number;
}

/**
 * Callback administration, shared by the gateway's Callbacks API, the dashboard and the admin CLI.
 *
 * Every method takes the caller's workspace; `null` is an operator (admin CLI) who may act on any.
 * Another workspace's callback is reported exactly like a missing one.
 */
export class CallbackAdmin {
  private readonly now: () => number;
  private readonly ratePerSecond: number;

  constructor(private readonly deps: CallbackAdminDeps) {
    this.now = deps.now ?? Date.now;
    this.ratePerSecond = deps.recoveryRatePerSecond ?? RECOVERY_ATTEMPTS_PER_SECOND;
  }

  /** A workspace's callbacks, newest first, filtered and paged. */
  list(workspaceId: string, query: CallbackListQuery): Promise<CallbackPage> {
    return this.deps.callbacks.list(workspaceId, query);
  }

  /** The workspace's callbacks among `messageIds` (missing and foreign ones left out), in no particular order. */
  async findMany(workspaceId: string, messageIds: string[]): Promise<CallbackRecord[]> {
    return (await this.deps.callbacks.getMany(messageIds)).filter((cb) => cb.workspace_id === workspaceId);
  }

  /** The latest attempt of each of the workspace's `callbacks` that has one, by callback id. */
  lastAttempts(callbacks: Pick<CallbackRecord, 'id' | 'attempt_count'>[]): Promise<Map<string, CallbackAttempt>> {
    return this.deps.callbacks.lastAttempts(callbacks.filter((cb) => cb.attempt_count > 0).map((cb) => cb.id));
  }

  /** A callback and its attempt log, oldest attempt first. */
  async describe(workspaceId: string | null, messageId: string): Promise<{ callback: CallbackRecord; attempts: CallbackAttempt[] }> {
    const callback = await this.find(workspaceId, messageId);
    return { callback, attempts: await this.deps.callbacks.attempts(messageId) };
  }

  /**
   * Queues one attempt right away, in any state (spec 3, "Retry callback"). It does not extend the
   * automatic ladder; if it succeeds, the automatic attempt still scheduled is cancelled and the
   * callback becomes `delivered`. The dispatcher makes it, ahead of waiting work.
   *
   * With an `Idempotency-Key` (a client repeating a call whose answer it lost), a repeat of the same
   * key from the same workspace is answered with the first call's attempt and queues none of its
   * own, for as long as keys are kept.
   *
   * @throws CallbackNotFoundError when there is no such callback in that workspace
   * @throws IdempotencyKeyReusedError when the key was sent before with other work
   */
  async retryNow(
    workspaceId: string | null,
    messageId: string,
    idempotencyKey?: string,
  ): Promise<ManualRetryRequest & { callback: CallbackRecord; replayed: boolean }> {
    const callback = await this.find(workspaceId, messageId);
    const queue = (requestId: string) =>
      this.deps.deliveries.add(
        'deliver',
        { messageId: callback.id, attempt: callback.attempt_count + 1, trigger: 'manual' },
        // lifo puts it ahead of the waiting backlog: the user is looking at the page.
        { jobId: requestId, lifo: true },
      );
    const answer = (requestId: string, replayed = false) => ({
      message_id: callback.id,
      request_id: requestId,
      requested_at: new Date(this.now()).toISOString(),
      callback,
      replayed,
    });
    const requestId = jobIds.delivery(callback.id, callback.attempt_count + 1, 'manual');
    const claims = this.deps.idempotency;
    if (idempotencyKey === undefined || workspaceId === null || !claims) {
      await queue(requestId);
      return answer(requestId);
    }
    const claimed = await claims.claim(workspaceId, idempotencyKey, `retry ${callback.id}`, requestId, this.now());
    if (claimed.outcome === 'mismatch') throw new IdempotencyKeyReusedError();
    if (claimed.outcome === 'new') {
      try {
        await queue(requestId);
      } catch (err) {
        // Queued or not (an answer lost on the way is an error too): the repeat queues it again under
        // the same id, which BullMQ takes once, and the dispatcher makes no attempt twice.
        await claims.orphan(claimed.claim).catch(() => undefined);
        throw err;
      }
      // A queued attempt leaves no record a repeat could find until it is made (a deferred one, much
      // later): the claim says it was queued. Failing to say so fails nothing: the attempt is queued,
      // and a repeat 30 s on queues it again under its id, harmlessly: of the runs of one request,
      // made or waiting, the dispatcher lets one send it while that run lives.
      await claims.markDone(claimed.claim).catch(() => undefined);
      return answer(requestId);
    }
    // A repeat. The first call queued its attempt, or is queueing it now, or died in between, or
    // failed (its claim left to the next repeat at once): only a claim left unqueued for a while is
    // one of the last two, and of repeats racing for it one takes it over.
    if (!claimed.done && this.now() - claimed.claimedMs > ORPHANED_RETRY_CLAIM_MS) {
      const taken = await claims.takeOver(claimed, this.now());
      if (taken) {
        await queue(claimed.jobId);
        await claims.markDone(taken).catch(() => undefined);
      }
    }
    return answer(claimed.jobId, true);
  }

  /** The attempt made for a {@link retryNow} request (or a recovery's), once the dispatcher has recorded it. */
  findManualAttempt(messageId: string, requestId: string): Promise<CallbackAttempt | undefined> {
    return this.deps.callbacks.attempt(messageId, attemptKey('manual', 0, requestId));
  }

  /**
   * Gives every `failed` callback of the workspace created in [sinceMs, untilMs) (and, with
   * `origin`, sent to that destination; with `kind`, of that kind of job) one manual attempt, at most
   * {@link RECOVERY_ATTEMPTS_PER_SECOND} per second (BullMQ delays spread them out), on one pace per
   * workspace that concurrent recoveries share.
   *
   * Each attempt's queue id is derived from the recovery and the callback, so a callback is tried
   * at most once per recovery. The callbacks are collected before anything is queued: a recovered
   * callback leaves the failed index as soon as it is delivered, which would shift a paged read.
   *
   * @throws RecoveryTooLargeError when the window holds more than {@link MAX_RECOVERY} such callbacks
   *   (or, with `origin` or `kind`, more than {@link MAX_RECOVERY_SCAN} failed callbacks to look through)
   */
  async recover(workspaceId: string, window: RecoveryWindow): Promise<Recovery> {
    const untilMs = window.untilMs ?? this.now();
    const ids = await this.failedIn(workspaceId, window.sinceMs, untilMs, window);
    const id = newId('rcv');
    const now = this.now();
    const firstSlotMs = await this.deps.callbacks.reserveRecoverySlots(workspaceId, ids.length, this.ratePerSecond, now);
    for (let start = 0; start < ids.length; start += QUEUE_CHUNK) {
      await this.deps.deliveries.addBulk(
        ids.slice(start, start + QUEUE_CHUNK).map((messageId, offset) => ({
          name: 'deliver' as const,
          // `attempt` is informational for manual attempts; the dispatcher numbers them when it records.
          payload: { messageId, attempt: 0, trigger: 'manual' as const },
          opts: {
            jobId: jobIds.recoveryDelivery(messageId, id),
            delay: Math.max(0, firstSlotMs - now) + Math.floor(((start + offset) * 1000) / this.ratePerSecond),
          },
        })),
      );
    }
    return { id, sinceMs: window.sinceMs, untilMs, origin: window.origin ?? null, count: ids.length, ratePerSecond: this.ratePerSecond };
  }

  /**
   * How many callbacks {@link recover} would retry for this window now, queueing nothing: what a
   * person is shown before they confirm.
   *
   * @throws RecoveryTooLargeError as {@link recover} does
   */
  async previewRecovery(workspaceId: string, window: RecoveryWindow): Promise<RecoveryPreview> {
    const untilMs = window.untilMs ?? this.now();
    const ids = await this.failedIn(workspaceId, window.sinceMs, untilMs, window);
    return { sinceMs: window.sinceMs, untilMs, origin: window.origin ?? null, count: ids.length, ratePerSecond: this.ratePerSecond };
  }

  /** Ids of the workspace's failed callbacks created in [sinceMs, untilMs), to `origin` and of `kind` when given, oldest first. */
  private async failedIn(workspaceId: string, sinceMs: number, untilMs: number, filter: Pick<RecoveryWindow, 'origin' | 'kind'>): Promise<string[]> {
    const { origin, kind } = filter;
    const ids: string[] = [];
    for (let offset = 0; ; offset += RECOVERY_READ_CHUNK) {
      const chunk = await this.deps.callbacks.idsInState(workspaceId, 'failed', sinceMs, untilMs, offset, RECOVERY_READ_CHUNK);
      if (origin === undefined && kind === undefined) {
        ids.push(...chunk);
      } else {
        if (offset >= MAX_RECOVERY_SCAN) throw new RecoveryTooLargeError(offset + chunk.length, MAX_RECOVERY_SCAN);
        // The failed index does not say where a callback went or of what job: its record does.
        const records = await this.deps.callbacks.getMany(chunk);
        const going = new Set(
          records
            .filter((cb) => (origin === undefined || sameOrigin(cb.url, origin)) && (kind === undefined || cb.type.startsWith(`${kind}.`)))
            .map((cb) => cb.id),
        );
        ids.push(...chunk.filter((id) => going.has(id)));
      }
      if (chunk.length < RECOVERY_READ_CHUNK || ids.length > MAX_RECOVERY) break;
    }
    if (ids.length > MAX_RECOVERY) throw new RecoveryTooLargeError(ids.length, MAX_RECOVERY);
    return ids;
  }

  private async find(workspaceId: string | null, messageId: string): Promise<CallbackRecord> {
    const callback = workspaceId === null ? await this.deps.callbacks.get(messageId) : await this.deps.callbacks.getForWorkspace(workspaceId, messageId);
    if (!callback) throw new CallbackNotFoundError(messageId);
    return callback;
  }
}

function sameOrigin(url: string, origin: string): boolean {
  try {
    return destinationOf(url).origin === origin;
  } catch {
    return false;
  }
}
