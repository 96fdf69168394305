import { CallbackUrlRejectedError, type CheckedTarget } from '@media/callback-guard';
import { FaultInjector, NO_CALLBACK_METRICS, PermanentJobError, type CallbackMetrics, type Logger } from '@media/common';
import { jobIds, type GaveUpJob, type JobQueue } from '@media/queues';
import {
  type AttemptTrigger,
  type CallbackAttempt,
  callbackIdFor,
  type CallbackRecord,
  eventTypeFor,
  type EventType,
  isFinished,
  type JobPresenter,
  type JobRecord,
} from '@media/domain';
import { destinationOf, leaseMsFor, QUIET_SIGNAL, signalOf, type Destination, type DestinationSignal } from './destination-policy';
import { LADDER_ATTEMPTS, nextAttemptAt, RECOVERY_ATTEMPTS_PER_SECOND, type RetrySchedule } from './retry-ladder';
import { attemptKey, type CallbackRepository, type NewCallbackAttempt } from './callback-store';
import type { DestinationGate, SlotAnswer } from './destination-slots';
import type { ActiveSigners, AuditLog, WorkspaceRepository } from '@media/accounts';
import type { EndpointRepository } from './endpoint-store';
import type { RelayDirectory, RelayListenerRecord, RelaySender } from './relay';
import { endpointWants, type WebhookEndpointRecord } from './endpoints';
import { CorruptRecordError, type JobRepository } from '@media/jobs';
import { jobContext, linkTo, recordSpan, ROOT_CONTEXT, SpanKind, tracingEnabled, withContext, type Attributes, type Context } from '@media/tracing';
import { classifyRejection, errorOf } from './classify';
import { buildBody, buildHeaders } from './envelope';
import { UndeliverableCallbackError } from './errors';
import type { Exchange } from './exchange';

/**
 * A callback attempt as OpenTelemetry's HTTP client conventions describe one: the method, the
 * receiver's host and port, the address dialled, the status or the error class. Never the path or
 * query (they often carry a token), a signature or a header.
 */
function attemptAttributes(callback: CallbackRecord, request: DeliveryRequest, exchange: Exchange, error: string | null): Attributes {
  const url = new URL(callback.url);
  return {
    'http.request.method': 'POST',
    'url.scheme': url.protocol.replace(':', ''),
    'server.address': url.hostname,
    'server.port': Number(url.port) || (url.protocol === 'https:' ? 443 : 80),
    ...(exchange.address ? { 'network.peer.address': exchange.address } : {}),
    ...(exchange.status !== null ? { 'http.response.status_code': exchange.status } : {}),
    ...(error ? { 'error.type': error } : {}),
    'media.callback.id': callback.id,
    'media.callback.attempt': request.attempt,
    'media.callback.trigger': request.trigger,
  };
}

/** The `deliver` payload of the `callback-deliveries` queue: ids only. */
export interface DeliveryRequest {
  messageId: string;
  attempt: number;
  trigger: AttemptTrigger;
  requeue?: number;
  deferrals?: number;
  holdChecks?: number;
}

/** The dependencies, narrowed to what the service calls so tests can hand in fakes. */
export interface CallbackServiceDeps {
  callbacks: CallbackRepository;
  jobs: Pick<JobRepository, 'get'>;
  workspaces: Pick<WorkspaceRepository, 'activeSigners'>;
  presenter: Pick<JobPresenter, 'render'>;
  guard: { check(url: string): Promise<CheckedTarget> };
  sender: { send(target: CheckedTarget, body: Buffer, headers: Record<string, string>): Promise<Exchange> };
  /** Per-destination slots shared by every dispatcher: what keeps one receiver from holding everyone's workers. */
  destinations: Pick<DestinationGate, 'acquire' | 'release' | 'holds'>;
  deliveries: Pick<JobQueue<'callback-deliveries'>, 'add' | 'remove' | 'promote'>;
  /** The workspace's webhook endpoints: every job's end goes to those subscribed to its event. */
  endpoints?: Pick<EndpointRepository, 'list' | 'noteOutcome'>;
  /** Callbacks to relay URLs go down a `media-callbacks listen` connection instead of over the network. */
  relay?: Pick<RelaySender, 'handles' | 'send'>;
  /** The workspace's relay listeners that subscribed to events: each job end of their types goes to the relay too. */
  relayDirectory?: Pick<RelayDirectory, 'listeners' | 'existingRelayUrl'>;
  /** WEBHOOK_ENDPOINT_DISABLE_AFTER: how long an endpoint may fail every attempt before it is disabled. */
  endpointDisableAfterMs?: number;
  /** Where an endpoint disabled for failing is recorded. */
  audit?: Pick<AuditLog, 'record'>;
  /** Where a given-up job-finished event is queued again. */
  events?: Pick<JobQueue<'job-events'>, 'add'>;
  logger: Logger;
  /** The retry ladder's gaps (WEBHOOK_RETRY_SCHEDULE). */
  retryScheduleMs: RetrySchedule;
  /** WEBHOOK_TIMEOUT_MS: what an attempt's duration is measured against to call its destination slow. */
  attemptTimeoutMs: number;
  /** The pace of a workspace's recovery attempts (the one the API queues them at); RECOVERY_ATTEMPTS_PER_SECOND by default. */
  recoveryRatePerSecond?: number;
  docsUrl: string;
  now?: () => number;
  faults?: FaultInjector;
  metrics?: CallbackMetrics;
}

/**
 * How often one automatic attempt is queued again after BullMQ gave up on it (its retries or stall
 * recoveries ran out: a Redis outage, a dispatcher that keeps dying mid-attempt). Past this the
 * attempt is recorded as failed (`dispatcher_error`) and the ladder moves on, so a callback that
 * kills its dispatcher cannot loop for ever.
 */
export const MAX_REQUEUES = 5;

/**
 * How soon a run of a manual request that found another run sending it looks again: about when a
 * typical attempt has been recorded, rather than when the other run's hold (two leases) lapses.
 */
const MANUAL_HOLD_RECHECK_MS = 1_000;

/**
 * How long a run of a manual request holds it, in destination leases (an attempt's deadline and
 * the time to record it). Two: the address check before the POST has a deadline of its own, and a
 * hold that lapsed while its run was still sending would let a second run send too. A long hold
 * costs nothing while its run lives (the others look again every second and find the attempt in
 * the log); it only delays the request when that run died.
 */
const MANUAL_HOLD_LEASES = 2;

/** How many times a recovery's attempt that finds its destination full waits for a pace turn before it waits in the destination's line. */
const PACED_DEFERRALS = 3;

/**
 * Callback delivery: turns finished jobs into callbacks, makes each attempt (fresh check, fresh
 * links, fresh signature), records it, and walks the retry ladder: each failed automatic attempt
 * puts the next one on the deliveries queue's schedule, in the same Redis step that records it.
 *
 * Every method may run again after a crash at any line. A callback is created once (SET NX on a
 * derived id), an automatic attempt is recorded once (keyed by its number), and each follow-up has
 * a deterministic queue id, so a re-run repeats at most the HTTP request itself, with the same
 * `webhook-id` for the receiver to de-duplicate.
 */
export class CallbackService {
  private readonly now: () => number;
  private readonly faults: FaultInjector;
  private readonly metrics: CallbackMetrics;
  private readonly recoveryRatePerSecond: number;

  constructor(private readonly deps: CallbackServiceDeps) {
    this.now = deps.now ?? Date.now;
    this.faults = deps.faults ?? FaultInjector.none();
    this.metrics = deps.metrics ?? NO_CALLBACK_METRICS;
    this.recoveryRatePerSecond = deps.recoveryRatePerSecond ?? RECOVERY_ATTEMPTS_PER_SECOND;
  }

  /**
   * Handles a `job-finished` event: creates the job's callbacks and makes attempt 1 of each (whose
   * record schedules attempt 2 if it failed). A job has one callback per destination: its request's
   * own `callback_url`, if it gave one, each of its workspace's enabled webhook endpoints subscribed
   * to the event, and its relay URL when a connected `media-callbacks listen` subscribed to it.
   * Returns the callbacks as created, in that order (endpoints in the order they were made); none
   * when nothing asked for the event.
   *
   * With `firstAttempt: 'now'` (the dispatcher's normal path) attempt 1 is made right here, for every
   * destination at once, so a callback crosses one queue between the job's end and its first POST,
   * not two. A crash at any line leaves the event to BullMQ's retry or stall recovery, which runs
   * this again: each callback's id is derived from the job, the event and the destination, and its
   * record says whether attempt 1 was recorded, so each is made once. With `'queued'` attempt 1 goes
   * through the `callback-deliveries` queue instead: for an event BullMQ has given up on before, so
   * an attempt that keeps failing the dispatcher ends up recorded as failed by that queue's give-up
   * path rather than holding the callback at attempt 0.
   */
  async onJobFinished(jobId: string, firstAttempt: 'now' | 'queued' = 'queued', enqueuedMs?: number, workspaceId?: string): Promise<CallbackRecord[]> {
    // An event that names its job's workspace has the workspace's subscribers read in the same round
    // trip as the job; one that does not (queued before events named it) reads them after the job.
    const early = workspaceId === undefined ? undefined : this.subscribers(workspaceId);
    early?.catch(() => undefined); // awaited (and its error thrown) only once the job is known to be this workspace's
    const job = await this.readJob(jobId, () => new PermanentJobError('corrupt_record', `job ${jobId} cannot be read; no callback can be made`));
    if (!job) {
      // Events carry ids only; a job that is gone (deleted, or another deployment's) has nothing to send.
      this.deps.logger.warn('finished job has no record; no callback', { job_id: jobId });
      return [];
    }
    if (!isFinished(job.status) || job.finished_ms === null) {
      // The generator announces only after the finish is stored, so this is a bug, not a race: let
      // BullMQ retry and then keep the event in its failed set for someone to look at.
      throw new Error(`job ${jobId} was announced finished but is ${job.status}`);
    }
    const type = eventTypeFor(job);
    const subscribers = await (workspaceId === job.workspace_id && early ? early : this.subscribers(job.workspace_id));
    const endpoints = subscribers.endpoints.filter((e) => endpointWants(e, type));
    const relayUrl = subscribers.listeners.some((l) => l.events.includes(type))
      ? await this.deps.relayDirectory?.existingRelayUrl(job.workspace_id)
      : undefined;
    const destinations: CallbackDestination[] = [
      ...(job.callback_url ? [{ url: job.callback_url }] : []),
      ...endpoints.map((e) => ({ url: e.url, endpointId: e.id })),
      // The job's own callback_url may be the relay already: one callback there is enough.
      ...(relayUrl && relayUrl !== job.callback_url ? [{ url: relayUrl, relay: true }] : []),
    ];
    if (destinations.length === 0) return [];
    const trace = jobContext(job.traceparent);
    if (enqueuedMs !== undefined && tracingEnabled()) {
      const attributes = { 'messaging.system': 'bullmq', 'messaging.destination.name': 'job-events', 'media.job.id': job.id };
      recordSpan('job-events wait', { kind: SpanKind.INTERNAL, attributes, startMs: enqueuedMs, endMs: Date.now() }, trace);
    }
    // Read beside the creates (one round trip for all): attempt 1 signs with them right after.
    const secrets = this.deps.workspaces.activeSigners(job.workspace_id, this.now());
    secrets.catch(() => undefined); // awaited (and its error thrown) only if an attempt 1 is made here
    // Every destination at once: one that hangs holds none of the others' first attempts. Each
    // settles before an error is thrown, so that a retry of the event finds the others' records.
    const settled = await withContext(trace, () =>
      Promise.allSettled(destinations.map((destination) => this.createCallback(job, type, destination, firstAttempt, secrets))),
    );
    const failed = settled.find((s): s is PromiseRejectedResult => s.status === 'rejected');
    if (failed) throw failed.reason;
    return settled.map((s) => (s as PromiseFulfilledResult<CallbackRecord>).value);
  }

  /** {@link onJobFinished} for one destination of a finished job, in the job's trace. */
  private async createCallback(
    job: JobRecord,
    type: EventType,
    destination: CallbackDestination,
    firstAttempt: 'now' | 'queued',
    secrets: Promise<ActiveSigners>,
  ): Promise<CallbackRecord> {
    const now = this.now();
    const id = callbackIdFor(job.id, type, destination.relay ? RELAY_SUBSCRIPTION : destination.endpointId);
    const queueJobId = jobIds.delivery(id, 1, 'scheduled');
    // Attempt 1 asks for its slot in the same round trip as its callback's create, so it takes one
    // only if one is free now and is not parked: whether the attempt is due at all (a replayed event
    // finds it made) is known once the record is. Without a free slot it asks again as every attempt
    // does, parked in its workspace's line.
    const slot = firstAttempt === 'now' ? this.freeSlot(destinationOf(destination.url), job.workspace_id, queueJobId, now) : undefined;
    slot?.catch(() => undefined); // awaited (and its error thrown) by the attempt
    let stored: { created: boolean; callback: CallbackRecord };
    try {
      stored = await this.deps.callbacks.create(
        {
          id,
          workspace_id: job.workspace_id,
          job_id: job.id,
          type,
          url: destination.url,
          ...(destination.endpointId ? { endpoint_id: destination.endpointId } : {}),
          event_ms: job.finished_ms!,
          created_ms: now,
          state: 'pending',
          attempt_count: 0,
          ladder_attempt: 0,
          next_attempt_ms: now,
          delivered_ms: null,
          last_attempt_ms: null,
          ...(job.traceparent ? { traceparent: job.traceparent } : {}),
        },
        destination.endpointId !== undefined || destination.relay === true,
      );
    } catch (err) {
      await this.returnFreeSlot(slot, destination.url, job.workspace_id, queueJobId);
      throw err;
    }
    const { created, callback } = stored;
    this.faults.at('callback.created');
    // Debug only: the attempt's own line follows at once and names the job and the event too.
    if (created) this.deps.logger.debug('callback created', { message_id: callback.id, job_id: job.id, type, endpoint_id: destination.endpointId });
    // Also for an existing record: a crash between create and attempt 1 is repaired by the event's
    // retry. Once attempt 1 is recorded its follow-up is in the schedule (written with the record),
    // so a replayed event has nothing left to do.
    if (callback.state !== 'pending' || callback.ladder_attempt > 0) {
      await this.returnFreeSlot(slot, destination.url, job.workspace_id, queueJobId);
      return callback;
    }
    const first: DeliveryRequest = { messageId: callback.id, attempt: 1, trigger: 'scheduled' };
    if (firstAttempt === 'queued') {
      await this.deps.deliveries.add('deliver', first, { jobId: queueJobId });
      return callback;
    }
    // A replayed event's record may have the URL an endpoint had then: its slot is that URL's to take.
    const taken = callback.url === destination.url ? slot : undefined;
    if (!taken) await this.returnFreeSlot(slot, destination.url, job.workspace_id, queueJobId);
    try {
      // The job was read a moment ago; the attempt renders it afresh anyway (fresh links).
      await this.deliverCallback(callback, first, queueJobId, { job, secrets, slot: taken });
    } catch (err) {
      if (!(err instanceof UndeliverableCallbackError)) throw err;
      // What the deliveries queue's give-up path does for a permanent failure: the callback ends.
      const ended = await this.deps.callbacks.giveUp(callback, this.now());
      this.deps.logger.error('callback cannot be delivered; ended as failed', { message_id: callback.id, reason: err.message, state: ended?.state });
    }
    return callback;
  }

  /** A slot of the destination if one is free now; the attempt is not parked when none is. */
  private freeSlot(destination: Destination, workspaceId: string, leaseId: string, nowMs: number): Promise<SlotAnswer> {
    return this.deps.destinations.acquire({ destination, workspaceId, leaseId, dueMs: nowMs, nowMs });
  }

  /** Gives back a slot taken by {@link freeSlot} for an attempt that is not made after all (and wakes whom taking it woke). */
  private async returnFreeSlot(slot: Promise<SlotAnswer> | undefined, url: string, workspaceId: string, leaseId: string): Promise<void> {
    const answer = await slot?.catch(() => undefined);
    if (!answer) return;
    await this.wake(answer.woken);
    if (answer.granted) await this.giveBack(destinationOf(url), workspaceId, leaseId, QUIET_SIGNAL);
  }

  /**
   * Makes one attempt (a `deliver` job) and records it. An automatic attempt that fails schedules
   * the next one or, after the last, ends the callback `failed`; a manual one that succeeds cancels
   * the scheduled automatic attempt. A failed attempt is a normal outcome, not an error: this throws
   * only for transient trouble (Redis), which BullMQ retries.
   *
   * @param queueJobId - the BullMQ job id, which keys a manual attempt in the log
   * @returns the recorded attempt, or undefined when there was nothing (more) to do or this
   *   attempt had been recorded already (a re-run after a crash)
   */
  async deliver(request: DeliveryRequest, queueJobId: string): Promise<CallbackAttempt | undefined> {
    const callback = await this.deps.callbacks.get(request.messageId);
    if (!callback) {
      this.deps.logger.warn('delivery for an unknown callback; dropping', { message_id: request.messageId });
      return undefined;
    }
    return this.deliverCallback(callback, request, queueJobId);
  }

  /** {@link deliver} for a callback record in hand (and, when the caller has just read them, its job and secrets). */
  private async deliverCallback(
    callback: CallbackRecord,
    request: DeliveryRequest,
    queueJobId: string,
    known?: KnownInputs,
  ): Promise<CallbackAttempt | undefined> {
    // A scheduled attempt is a step of the job's trace; a manual one is asked for later, by someone
    // else, so it starts a trace of its own that links to the job's.
    const manual = request.trigger === 'manual';
    const trace = manual ? ROOT_CONTEXT : jobContext(callback.traceparent);
    return withContext(trace, () => this.deliverInTrace(callback, request, queueJobId, trace, manual ? linkTo(callback.traceparent) : [], known));
  }

  private async deliverInTrace(
    callback: CallbackRecord,
    request: DeliveryRequest,
    queueJobId: string,
    trace: Context,
    links: ReturnType<typeof linkTo>,
    known?: KnownInputs,
  ): Promise<CallbackAttempt | undefined> {
    // Delivered by a manual retry meanwhile, or already ended: the ladder stops here. Or recorded
    // before a crash (or a repeated promotion): its follow-up was scheduled with it. Either way a
    // slot handed to this attempt while it was deferred goes to the next in line.
    if (request.trigger === 'scheduled' && (callback.state !== 'pending' || callback.ladder_attempt >= request.attempt)) {
      await this.giveBack(destinationOf(callback.url), callback.workspace_id, queueJobId, QUIET_SIGNAL);
      return undefined;
    }
    // A manual attempt made before: its request queued again (a repeat of its Idempotency-Key that
    // took over a claim whose first call had queued it after all), or run again after a crash that
    // came after its record. One request, one POST.
    if (request.trigger === 'manual' && (await this.deps.callbacks.attempt(callback.id, attemptKey('manual', 0, jobIds.beforeDeferral(queueJobId))))) {
      await this.giveBack(destinationOf(callback.url), callback.workspace_id, queueJobId, QUIET_SIGNAL);
      return undefined;
    }

    const made = await this.attemptWithinSlot(callback, request, queueJobId, known);
    // Set aside: it goes on as a delayed job of its own when a slot is free. Or made meanwhile by
    // another run of the same manual request.
    if (made === 'deferred' || made === 'made') return undefined;
    const { exchange } = made;
    this.faults.at('delivery.sent');
    const error = errorOf(exchange);
    // Checked here so that an attempt without tracing does not even parse the URL for attributes.
    if (tracingEnabled()) {
      const span = { kind: SpanKind.CLIENT, links, startMs: exchange.sentMs, endMs: exchange.sentMs + exchange.durationMs, failed: error ?? undefined };
      recordSpan('POST', { ...span, attributes: attemptAttributes(callback, request, exchange, error) }, trace);
    }
    const ladder = request.trigger === 'scheduled' ? request.attempt : null;
    const endedMs = exchange.sentMs + exchange.durationMs;
    const attempt: NewCallbackAttempt = {
      ladder_attempt: ladder,
      trigger: request.trigger,
      sent_ms: exchange.sentMs,
      duration_ms: exchange.durationMs,
      status: exchange.status,
      error,
      error_detail: exchange.transportDetail,
      address: exchange.address,
      excerpt: exchange.excerpt,
      timing: exchange.timing,
    };
    const next = ladder !== null && error !== null ? nextAttemptAt(ladder, endedMs, this.deps.retryScheduleMs) : null;
    // The slot goes back in the same round trip as the attempt's record, sent just before it (the
    // give-back never throws: a slot it could not give back lapses at its lease's deadline).
    const [, { recorded, callback: after }] = await Promise.all([
      this.giveBack(made.destination, callback.workspace_id, queueJobId, made.signal),
      this.deps.callbacks.recordAttempt(
        callback,
        // A manual attempt is recorded under the id it was requested with, however often it was deferred.
        attemptKey(request.trigger, request.attempt, jobIds.beforeDeferral(queueJobId)),
        attempt,
        next,
        this.now(),
      ),
    ]);

    this.faults.at('delivery.recorded');
    if (recorded && callback.endpoint_id) await this.noteEndpointOutcome(callback, callback.endpoint_id, attempt);
    if (recorded) {
      // Latencies from the job's end, which is what a customer waiting on the callback experiences.
      const sinceJobEnd = (ms: number) => (ms - callback.event_ms) / 1000;
      this.metrics.attempt(error === null ? 'delivered' : 'failed', error ?? 'none', {
        firstAttemptSeconds: after.attempt_count === 1 ? sinceJobEnd(exchange.sentMs) : undefined,
        deliveredSeconds: error === null && callback.state !== 'delivered' && after.state === 'delivered' ? sinceJobEnd(endedMs) : undefined,
      });
    }
    // A failed automatic attempt's successor was scheduled by recordAttempt, in the same step.
    if (request.trigger === 'manual' && error === null && after.ladder_attempt < LADDER_ATTEMPTS) {
      // Delivered by hand: the record took the next automatic attempt off the schedule; one that
      // was already promoted into the queue is removed here. If it is running right now it cannot
      // be removed, and finds the callback delivered when it records.
      await this.deps.deliveries.remove(jobIds.delivery(callback.id, after.ladder_attempt + 1, 'scheduled'));
    }

    this.deps.logger.info('callback attempt', {
      message_id: callback.id,
      job_id: callback.job_id,
      type: callback.type,
      // The host only: callback URLs often carry a token in their path or query.
      host: safeHost(callback.url),
      attempt: ladder,
      trigger: request.trigger,
      status: exchange.status,
      error,
      duration_ms: exchange.durationMs,
      state: after.state,
      duplicate: !recorded,
    });
    return recorded ? { ...attempt, number: after.attempt_count } : undefined;
  }

  /**
   * Records the outcome of a delivery job BullMQ gave up on; called from the worker's `failed` event
   * and again by the sweep of the failed set, so it is idempotent.
   *
   * A callback is marked `failed` only after its last automatic attempt failed (spec 8), so a
   * transient give-up never ends the ladder: the same attempt is queued again after the first gap
   * of the ladder. Only a permanent failure (the job record or every signing secret is gone) ends
   * the callback at once. A manual attempt leaves the callback as it was.
   */
  async onDeliveryGaveUp({ payload: given, reason, permanent }: Pick<GaveUpJob<'callback-deliveries'>, 'payload' | 'reason' | 'permanent'>): Promise<void> {
    // A test callback has no record to repair; the dashboard waiting on it reports the time-out.
    if (!isDelivery(given)) return;
    const payload = given;
    const log = { message_id: payload.messageId, attempt: payload.attempt, trigger: payload.trigger, reason };
    if (payload.trigger !== 'scheduled') {
      this.deps.logger.error('manual delivery given up', log);
      return;
    }
    const callback = await this.deps.callbacks.get(payload.messageId);
    // Ended meanwhile, or this attempt was recorded after all: nothing is left to repair.
    if (!callback || callback.state !== 'pending' || callback.ladder_attempt >= payload.attempt) return;
    if (permanent) {
      const ended = await this.deps.callbacks.giveUp(callback, this.now());
      this.deps.logger.error('callback cannot be delivered; ended as failed', { ...log, state: ended?.state });
      return;
    }
    const requeue = (payload.requeue ?? 0) + 1;
    if (requeue <= MAX_REQUEUES) {
      this.deps.logger.warn('delivery attempt given up by the queue; queued again', { ...log, requeue });
      await this.deps.deliveries.add(
        'deliver',
        { ...payload, requeue },
        { jobId: jobIds.delivery(payload.messageId, payload.attempt, 'scheduled', requeue), delay: this.deps.retryScheduleMs[0] ?? 0 },
      );
      return;
    }
    // The attempt could not be made MAX_REQUEUES times over: count it as failed and go on up the ladder.
    const now = this.now();
    const { callback: after } = await this.deps.callbacks.recordAttempt(
      callback,
      attemptKey('scheduled', payload.attempt, ''),
      {
        ladder_attempt: payload.attempt,
        trigger: 'scheduled',
        sent_ms: now,
        duration_ms: 0,
        status: null,
        error: 'dispatcher_error',
        error_detail: reason.slice(0, 200),
        address: null,
        excerpt: '',
      },
      nextAttemptAt(payload.attempt, now, this.deps.retryScheduleMs),
      now,
    );
    this.deps.logger.error('delivery attempt recorded as failed after repeated give-ups', { ...log, state: after.state });
  }

  /**
   * A job-finished event BullMQ gave up on must still make its callback: a permanent failure is
   * logged for someone to look at, anything else is queued again after the ladder's first gap (with
   * the next requeue count, so the sweep's repeat of this call is a no-op), {@link MAX_REQUEUES}
   * times at most.
   */
  async onEventGaveUp({ payload, reason, permanent }: Pick<GaveUpJob<'job-events'>, 'payload' | 'reason' | 'permanent'>): Promise<void> {
    if (permanent || !this.deps.events) {
      this.deps.logger.error('job-finished event given up; no callback will be made', { job_id: payload.jobId, reason });
      return;
    }
    const requeue = (payload.requeue ?? 0) + 1;
    if (requeue > MAX_REQUEUES) {
      // An event that keeps killing dispatchers or failing: left in BullMQ's failed set for a person.
      this.deps.logger.error('job-finished event given up too often; left in the failed set, no callback yet', { job_id: payload.jobId, reason, requeue });
      return;
    }
    this.deps.logger.warn('job-finished event given up by the queue; queued again', { job_id: payload.jobId, reason, requeue });
    await this.deps.events.add(
      'job-finished',
      { jobId: payload.jobId, ...(payload.workspaceId ? { workspaceId: payload.workspaceId } : {}), requeue },
      { jobId: jobIds.jobFinished(payload.jobId, requeue), delay: this.deps.retryScheduleMs[0] ?? 0 },
    );
  }

  /** The workspace's webhook endpoints and connected relay listeners, whatever they subscribed to; read together. */
  private async subscribers(workspaceId: string): Promise<{ endpoints: WebhookEndpointRecord[]; listeners: RelayListenerRecord[] }> {
    const [endpoints, listeners] = await Promise.all([
      this.deps.endpoints?.list(workspaceId) ?? [],
      this.deps.relayDirectory?.listeners(workspaceId, this.now()) ?? [],
    ]);
    return { endpoints, listeners };
  }

  /**
   * Tells the callback's endpoint how its attempt went: a delivered attempt ends the endpoint's
   * failing stretch, a failed one may end with the endpoint disabled (every attempt failed for
   * WEBHOOK_ENDPOINT_DISABLE_AFTER), which the workspace's audit records. Best effort: the attempt
   * is recorded already, and a missed note only delays the disabling until the next failure.
   */
  private async noteEndpointOutcome(callback: CallbackRecord, endpointId: string, attempt: NewCallbackAttempt): Promise<void> {
    const endpoints = this.deps.endpoints;
    if (!endpoints) return;
    try {
      const detail =
        attempt.error === null
          ? ''
          : attempt.status !== null
            ? `${attempt.error}: HTTP ${attempt.status}`
            : `${attempt.error}${attempt.error_detail ? `: ${attempt.error_detail}` : ''}`;
      const disabled = await endpoints.noteOutcome(
        callback.workspace_id,
        endpointId,
        { delivered: attempt.error === null, atMs: attempt.sent_ms, error: detail.slice(0, 300) },
        // Without the setting (a service built for a test) an endpoint is never disabled.
        this.deps.endpointDisableAfterMs ?? Number.MAX_SAFE_INTEGER,
      );
      if (!disabled) return;
      this.deps.logger.warn('webhook endpoint disabled: every attempt failed', {
        workspace_id: callback.workspace_id,
        endpoint_id: endpointId,
        host: safeHost(disabled.url),
        failing_since: disabled.failing_since_ms === null ? null : new Date(disabled.failing_since_ms).toISOString(),
        last_error: disabled.last_error,
      });
      await this.deps.audit?.record(
        callback.workspace_id,
        'webhook_endpoint.disabled',
        { type: 'system' },
        {
          type: 'webhook_endpoint',
          id: endpointId,
          reason: 'failing',
          failing_since: disabled.failing_since_ms === null ? null : Math.floor(disabled.failing_since_ms / 1000),
          last_error: disabled.last_error,
        },
      );
    } catch (err) {
      this.deps.logger.warn('webhook endpoint not told of an attempt', { endpoint_id: endpointId, message_id: callback.id, error: String(err) });
    }
  }

  /** The job record; one that cannot be decoded is a permanent failure (retrying reads the same bytes). */
  private async readJob(jobId: string, permanent: () => PermanentJobError) {
    try {
      return await this.deps.jobs.get(jobId);
    } catch (err) {
      throw err instanceof CorruptRecordError ? permanent() : err;
    }
  }

  /**
   * {@link attempt} inside one of its destination's slots. With none free the attempt is parked in
   * its destination's line and goes on as a new delayed job (`jobIds.deferral`): the job in hand
   * ends, so the attempt holds no worker while it waits. The delayed job is made runnable when a
   * slot is handed to it, or at the latest when its turn comes even if every attempt ahead of it
   * takes its whole lease. A manual attempt also needs its request's hold: `'made'` when it turns
   * out to be in the log already, `'deferred'` too when another run of the request is sending it.
   * An attempt that was made returns with its slot still held: the caller gives it back beside the
   * attempt's record, in one round trip.
   */
  private async attemptWithinSlot(
    callback: CallbackRecord,
    request: DeliveryRequest,
    queueJobId: string,
    known?: KnownInputs,
  ): Promise<MadeAttempt | 'deferred' | 'made'> {
    const destination = destinationOf(callback.url);
    const now = this.now();
    const deferrals = (request.deferrals ?? 0) + 1;
    const parkAs = jobIds.deferral(queueJobId, deferrals);
    // A recovery's attempt waits for its workspace's next turn on the recovery pace, not in the
    // destination's line: parked, a recovery's attempts were all handed slots together when the
    // destination's attempts in flight ended together, the flood the pace is there to prevent. Only
    // a few times, though: the line is served first, so a destination that stays busy would
    // otherwise never leave one a slot; after that it takes its place in the line like any other.
    const paced = jobIds.isRecoveryDelivery(queueJobId) && (request.deferrals ?? 0) < PACED_DEFERRALS;
    const free = await known?.slot;
    if (free) await this.wake(free.woken);
    const slot = free?.granted
      ? free
      : await this.deps.destinations.acquire({
          destination,
          workspaceId: callback.workspace_id,
          leaseId: queueJobId,
          parkAs: paced ? undefined : parkAs,
          // Automatic attempts queue in the order the ladder made them due; manual ones from when asked.
          dueMs: request.trigger === 'scheduled' ? Math.min(now, callback.next_attempt_ms ?? now) : now,
          nowMs: now,
        });
    if (slot !== free) await this.wake(slot.woken);
    if (!slot.granted) {
      this.metrics.deferred();
      const wakeAtMs = paced ? await this.nextRecoveryTurn(callback.workspace_id, now) : slot.wakeAtMs;
      if (request.trigger === 'scheduled') await this.deps.callbacks.deferNext(callback.id, request.attempt, wakeAtMs);
      await this.deps.deliveries.add('deliver', { ...request, deferrals }, { jobId: parkAs, delay: Math.max(0, wakeAtMs - this.now()) });
      // Its turn may have come between parking it and adding its job, when there was no job to wake.
      if (!paced && (await this.deps.destinations.holds(destination, parkAs))) await this.deps.deliveries.promote(parkAs);
      this.deps.logger.debug('callback attempt deferred; destination saturated', {
        message_id: callback.id,
        destination: destination.origin,
        limit: slot.limit,
        position: slot.position,
        until: new Date(wakeAtMs).toISOString(),
      });
      return 'deferred';
    }
    if (request.trigger === 'manual') {
      // Two runs of one manual request can hold slots at once (a repeated Idempotency-Key queued it
      // again while the first run waited, deferred): one POST per request, so one of them sends.
      const requestId = jobIds.beforeDeferral(queueJobId);
      const hold = await this.deps.callbacks
        .holdManualSend(callback.id, requestId, queueJobId, MANUAL_HOLD_LEASES * leaseMsFor({ attemptTimeoutMs: this.deps.attemptTimeoutMs }))
        .catch(async (err: unknown) => {
          await this.giveBack(destination, callback.workspace_id, queueJobId, QUIET_SIGNAL);
          throw err;
        });
      if (hold !== 'send') {
        await this.giveBack(destination, callback.workspace_id, queueJobId, QUIET_SIGNAL);
        if (hold === 'made') return 'made';
        // The other run has sent it or is sending it: this one looks again until that run has
        // recorded its attempt or, had it died, its hold has lapsed. Not a deferral: the recovery
        // pace counts those.
        const delay = Math.min(hold.heldForMs, MANUAL_HOLD_RECHECK_MS);
        const holdChecks = (request.holdChecks ?? 0) + 1;
        await this.deps.deliveries.add('deliver', { ...request, holdChecks }, { jobId: jobIds.holdCheck(queueJobId, holdChecks), delay });
        this.deps.logger.debug('manual attempt being made by another run of its request; looking again later', {
          message_id: callback.id,
          request_id: requestId,
          in_ms: delay,
        });
        return 'deferred';
      }
    }
    try {
      const exchange = await this.attempt(callback, known);
      return { exchange, destination, signal: signalOf({ ...exchange, error: errorOf(exchange) }, { attemptTimeoutMs: this.deps.attemptTimeoutMs }) };
    } catch (err) {
      // Nothing was sent (a failed exchange is a result, not a throw): the request's hold goes, so
      // that the next run to make the attempt (this job's retry, or one deferred under another id)
      // need not wait for it to lapse.
      if (request.trigger === 'manual') {
        await this.deps.callbacks.releaseManualSend(callback.id, jobIds.beforeDeferral(queueJobId), queueJobId).catch(() => undefined);
      }
      await this.giveBack(destination, callback.workspace_id, queueJobId, QUIET_SIGNAL);
      throw err;
    }
  }

  /** The workspace's next turn on the recovery pace, for a recovery's attempt that found no slot. */
  private async nextRecoveryTurn(workspaceId: string, now: number): Promise<number> {
    const turn = () => this.deps.callbacks.reserveRecoverySlots(workspaceId, 1, this.recoveryRatePerSecond, now);
    const turnMs = await turn();
    // A turn that is now (the pace was idle) was just spent on finding no slot: the next one.
    return turnMs > now ? turnMs : turn();
  }

  /** Gives an attempt's slot back (with what it learnt of the destination and of its workspace's share) and wakes whom that frees a slot for. */
  private async giveBack(destination: Destination, workspaceId: string, leaseId: string, signal: DestinationSignal): Promise<void> {
    // A slot that cannot be given back now (Redis away) lapses at its lease's deadline.
    const woken = await this.deps.destinations.release(destination, workspaceId, leaseId, signal, this.now()).catch((err: unknown) => {
      this.deps.logger.warn('destination slot not given back; it lapses by itself', { destination: destination.origin, error: String(err) });
      return [];
    });
    await this.wake(woken);
  }

  /**
   * Makes runnable the parked attempts that were just handed slots. One whose delayed job does not
   * exist (yet) keeps its slot: an attempt is parked a moment before its delayed job is added, and
   * promotes that job once added if a slot is held in its name. A job that is gone for good
   * (removed with its callback) leaves its slot to lapse at the lease's deadline.
   */
  private async wake(woken: string[]): Promise<void> {
    for (const jobId of woken) {
      // Its delayed job still runs at its fallback time if this fails.
      await this.deps.deliveries
        .promote(jobId)
        .catch((err: unknown) => this.deps.logger.warn('could not wake a deferred callback attempt', { job: jobId, error: String(err) }));
    }
  }

  /**
   * One POST: check the URL afresh, render with fresh links, sign with every active secret and key,
   * send. A callback to a relay URL is not sent over the network: it goes down a listener's
   * connection (RelaySender), so no address is checked or dialled for it.
   */
  private async attempt(callback: CallbackRecord, known?: KnownInputs): Promise<Exchange> {
    const checkedAt = this.now();
    // The job, the secrets and the address check need nothing from each other: one wait for all.
    const inputs = Promise.all([
      known?.job ?? this.readJob(callback.job_id, () => new UndeliverableCallbackError(callback.id, `job ${callback.job_id} cannot be read`)),
      known?.secrets ?? this.deps.workspaces.activeSigners(callback.workspace_id, checkedAt),
    ]);
    inputs.catch(() => undefined); // awaited below unless the address is refused first
    const relay = this.deps.relay;
    if (relay?.handles(callback.url)) {
      const { body, headers } = this.signed(callback, ...(await inputs));
      return relay.send(
        callback.workspace_id,
        callback.url,
        { webhook_id: callback.id, event_type: callback.type, headers, body: body.toString('utf8') },
        this.deps.attemptTimeoutMs,
      );
    }
    let target: CheckedTarget;
    try {
      // Checked again on every attempt: DNS may now point somewhere it did not at acceptance.
      target = await this.deps.guard.check(callback.url);
    } catch (err) {
      if (!(err instanceof CallbackUrlRejectedError)) throw err;
      this.deps.logger.warn('callback address refused', {
        message_id: callback.id,
        reason: err.reason,
        refused_addresses: err.refusedAddresses,
      });
      return {
        sentMs: checkedAt,
        durationMs: this.now() - checkedAt,
        status: null,
        transportError: classifyRejection(err),
        transportDetail: `${err.reason}: ${err.message}`,
        address: null,
        excerpt: '',
        retryAfterMs: null,
      };
    }
    const { body, headers } = this.signed(callback, ...(await inputs));
    return this.deps.sender.send(target, body, headers);
  }

  /** The callback's body, rendered now from its job, and its headers signed with every active secret and key. */
  private signed(callback: CallbackRecord, job: JobRecord | undefined, { secrets, keys }: ActiveSigners): { body: Buffer; headers: Record<string, string> } {
    if (!job) throw new UndeliverableCallbackError(callback.id, `job ${callback.job_id} no longer exists`);
    if (secrets.length === 0) throw new UndeliverableCallbackError(callback.id, `workspace ${callback.workspace_id} has no signing secret`);
    const timestampSeconds = Math.floor(this.now() / 1000);
    const body = buildBody(callback.type, callback.event_ms, this.deps.presenter.render(job, timestampSeconds));
    return { body, headers: buildHeaders({ messageId: callback.id, timestampSeconds, body, keys, docsUrl: this.deps.docsUrl }) };
  }
}

/** Where one of a job's callbacks goes: the request's own `callback_url`, one of the workspace's endpoints, or its relay's listeners. */
interface CallbackDestination {
  url: string;
  endpointId?: string;
  /** The workspace's relay, for its listeners subscribed to the event. */
  relay?: boolean;
}

/** What a relay listeners' callback's id is derived from in place of an endpoint's id: one per job and event, however many listeners. */
const RELAY_SUBSCRIPTION = 'relay';

/** An attempt that was made, and what its slot is given back with. */
interface MadeAttempt {
  exchange: Exchange;
  destination: Destination;
  signal: DestinationSignal;
}

/** What a caller of an attempt may have read already; each is read by the attempt otherwise. */
interface KnownInputs {
  job?: JobRecord;
  /** The workspace's active signing secrets and keys, read at most a few ms before the attempt. */
  secrets?: Promise<ActiveSigners>;
  /** A slot asked for beside the callback's create ({@link CallbackService.freeSlot}); the attempt asks again, parked, if it was not granted. */
  slot?: Promise<SlotAnswer>;
}

function isDelivery(payload: object): payload is DeliveryRequest {
  return 'messageId' in payload;
}

function safeHost(url: string): string {
  try {
    return new URL(url).host;
  } catch {
    return '(invalid url)';
  }
}
