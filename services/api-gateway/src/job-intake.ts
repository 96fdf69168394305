import { createHash, randomInt } from 'node:crypto';
import { FaultInjector } from '@media/common';
import { generationQueueEntry, type JobQueue } from '@media/queues';
import { CallbackUrlGuard, CallbackUrlRejectedError } from '@media/callback-guard';
import type { RelayDirectory } from '@media/callbacks';
import { blobFolderOf, findModel, isFinished, newIdBeside, type ImageJob, type JobRecord, type VideoJob } from '@media/domain';
import type { BlobStore, ImageExtension } from '@media/blob-store';
import { idempotencyKeyHash, type HeldClaim, type IdempotencyEntry, type IdempotencyRepository, type JobRepository, type LimitRepository } from '@media/jobs';
import { activeTraceparent } from '@media/tracing';
import { ApiError } from './http/api-error';
import { IntakeMarks } from './intake-marks';
import type { ImageParams, RemixParams, VideoParams } from './validation';

/**
 * How long a claimed Idempotency-Key whose job is not stored yet is taken to be in use by the
 * request that claimed it: it claims the key once the body is in, then stores the uploads and the
 * job, which takes seconds (a blob store that slow is down). A repeat sooner is told to retry; one
 * later finishes what a request that died had begun.
 */
const UPLOAD_INTAKE_MS = 300_000;
const IN_USE_RETRY_AFTER_SECONDS = 1;

export interface Upload {
  ext: ImageExtension;
  /** SHA-256 of the bytes (hex): what an Idempotency-Key's fingerprint covers. */
  sha256: string;
  /**
   * The bytes in memory (a JSON body's data URL, already held whole), or the temp file a multipart
   * part was streamed to, which storing moves into the blob store.
   */
  source: { bytes: Buffer } | { path: string };
}

export interface EditInputs {
  images: Upload[];
  mask: Upload | null;
}

export interface Intake {
  job: JobRecord;
  /** True when an `Idempotency-Key` matched an earlier request and its job is returned. */
  replayed: boolean;
}

/**
 * Accepts creation calls: checks the callback URL, applies `Idempotency-Key`, stores the job and
 * uploads, and queues the work. The queue payload carries the job id only.
 *
 * A call without uploads is accepted in two round trips: one script that claims the key, takes a
 * place under the waiting-jobs cap and stores the job (`JobRepository.admit`), then BullMQ's add.
 * The job's intake mark is cleared later, in a batch with others ({@link IntakeMarks}).
 */
export class JobIntakeService {
  private readonly marks: IntakeMarks;

  constructor(
    private readonly jobs: JobRepository,
    private readonly blobs: BlobStore,
    private readonly idempotency: IdempotencyRepository,
    private readonly generation: JobQueue<'generation'>,
    private readonly callbackGuard: CallbackUrlGuard,
    private readonly waiting: Pick<LimitRepository, 'onJobAccepted' | 'onJobFinished' | 'reclaimUnstored' | 'defaults'>,
    private readonly faults: FaultInjector = FaultInjector.none(),
    /** Relay URLs: taken only from the workspace they belong to. */
    private readonly relays?: Pick<RelayDirectory, 'isRelayUrl' | 'ownsRelayUrl'>,
  ) {
    this.marks = new IntakeMarks(jobs);
  }

  /** Sends the intake marks still pending; call at shutdown, after the last request. */
  async close(): Promise<void> {
    await this.marks.close();
  }

  async createImageJob(workspaceId: string, requestId: string, params: ImageParams, edit: EditInputs | null, idempotencyKey?: string): Promise<Intake> {
    await this.checkCallbackUrl(workspaceId, params.callback_url);
    const fingerprint = () => this.fingerprint(edit ? 'images.edit' : 'images.generate', { ...params, model: params.model.id }, edit);
    const admit = edit ? this.admitWithUploads.bind(this) : this.admit.bind(this);
    return admit(workspaceId, requestId, fingerprint, idempotencyKey, async (id) => {
      const inputs: string[] = [];
      let mask: string | null = null;
      if (edit) {
        for (const [i, upload] of edit.images.entries()) {
          const key = `${blobFolderOf({ workspace_id: workspaceId, id })}/input-${i}.${upload.ext}`;
          await this.putUpload(key, upload);
          inputs.push(key);
        }
        if (edit.mask) {
          mask = `${blobFolderOf({ workspace_id: workspaceId, id })}/mask.${edit.mask.ext}`;
          await this.putUpload(mask, edit.mask);
        }
      }
      const job: ImageJob = {
        id,
        kind: 'image',
        operation: edit ? 'edit' : 'generation',
        workspace_id: workspaceId,
        model: params.model.id,
        prompt: params.prompt,
        seed: params.seed ?? randomInt(2 ** 31 - 1),
        // Spec 2.2: image requests have no queued state; they are in progress from acceptance.
        status: 'in_progress',
        created_ms: Date.now(),
        finished_ms: null,
        cost: null,
        error: null,
        callback_url: params.callback_url,
        request_id: requestId,
        n: params.n,
        size: params.size,
        output_format: params.output_format,
        response_format: params.response_format,
        quality: params.quality ?? 'auto',
        background: params.background ?? 'auto',
        output_compression: params.output_compression ?? null,
        inputs,
        mask,
        outputs: [],
      };
      return job;
    });
  }

  async createVideoJob(workspaceId: string, requestId: string, params: VideoParams, idempotencyKey?: string): Promise<Intake> {
    return this.admitVideo(workspaceId, requestId, 'videos.create', params, null, idempotencyKey);
  }

  /**
   * A remix: a new video with the source's model, duration, size, audio setting and seed (so what
   * the two prompts share is laid out alike), and a prompt and callback URL of its own. The caller
   * has checked that the source belongs to the workspace and is completed.
   */
  async createRemixJob(workspaceId: string, requestId: string, source: VideoJob, remix: RemixParams, idempotencyKey?: string): Promise<Intake> {
    const model = findModel(source.model);
    if (model?.kind !== 'video') {
      throw ApiError.invalid(
        `Video '${source.id}' was made by the model '${source.model}', which is no longer offered; it cannot be remixed.`,
        null,
        'invalid_model',
      );
    }
    const params: VideoParams = {
      model,
      prompt: remix.prompt,
      seconds: source.seconds,
      size: source.size,
      generate_audio: source.generate_audio,
      callback_url: remix.callback_url,
      seed: source.seed,
    };
    return this.admitVideo(workspaceId, requestId, 'videos.remix', params, source.id, idempotencyKey);
  }

  private async admitVideo(
    workspaceId: string,
    requestId: string,
    operation: 'videos.create' | 'videos.remix',
    params: VideoParams,
    remixedFrom: string | null,
    idempotencyKey: string | undefined,
  ): Promise<Intake> {
    await this.checkCallbackUrl(workspaceId, params.callback_url);
    const fingerprint = () => this.fingerprint(operation, { ...params, model: params.model.id, remixed_from_video_id: remixedFrom ?? undefined }, null);
    return this.admit(workspaceId, newIdBeside(workspaceId, 'video'), fingerprint, idempotencyKey, async (id) => {
      const job: VideoJob = {
        id,
        kind: 'video',
        workspace_id: workspaceId,
        model: params.model.id,
        prompt: params.prompt,
        seed: params.seed ?? randomInt(2 ** 31 - 1),
        status: 'queued',
        created_ms: Date.now(),
        finished_ms: null,
        cost: null,
        error: null,
        callback_url: params.callback_url,
        request_id: requestId,
        seconds: params.seconds,
        size: params.size,
        generate_audio: params.generate_audio,
        progress: 0,
        output: null,
        remixed_from_video_id: remixedFrom,
      };
      return job;
    });
  }

  /**
   * Accepts a job that has no uploads: everything the request changes in the store happens in
   * one step, after which the job is queued.
   */
  private async admit(
    workspaceId: string,
    proposedId: string,
    fingerprint: () => string,
    idempotencyKey: string | undefined,
    build: (id: string) => Promise<JobRecord>,
  ): Promise<Intake> {
    build = withTrace(withKeyHash(build, idempotencyKey));
    const entry = (id: string): IdempotencyEntry | undefined =>
      idempotencyKey === undefined ? undefined : this.idempotency.entry(workspaceId, idempotencyKey, fingerprint(), id);
    let job = await build(proposedId);
    let idempotency = entry(job.id);
    let reclaimed = false;
    let claimMustExist = false;
    for (;;) {
      const admission = await this.jobs.admit(job, { maxWaitingDefault: this.waiting.defaults.max_waiting_jobs, idempotency, claimMustExist });
      switch (admission.outcome) {
        case 'stored':
          this.faults.at('intake.stored');
          await this.enqueueStored(job, admission.rank);
          return { job, replayed: job.id !== proposedId };
        case 'exists': {
          // Stored by an earlier call under this id (a replay racing another): answer with that job.
          const existing = await this.jobs.get(job.id);
          if (existing && !isFinished(existing.status)) await this.enqueueStored(existing, admission.rank);
          return { job: existing ?? job, replayed: job.id !== proposedId };
        }
        case 'over_cap':
          // Places held by jobs that were never stored (an edit's gateway died during its uploads) go back first.
          if (!reclaimed && (await this.waiting.reclaimUnstored(workspaceId)) > 0) {
            reclaimed = true;
            continue;
          }
          throw this.tooManyWaiting(admission.waiting, admission.max);
        case 'mismatch':
          throw this.keyReused();
        case 'replay': {
          const existing = await this.jobs.getForWorkspace(workspaceId, admission.jobId);
          if (existing) {
            if (!isFinished(existing.status)) await this.enqueue(existing);
            return { job: existing, replayed: true };
          }
          // A crash between claiming the key and storing the job: finish creating it under the claimed
          // id, as long as the claim lasts (a job removed meanwhile takes its claim along).
          job = await build(admission.jobId);
          idempotency = entry(job.id);
          claimMustExist = true;
          continue;
        }
        case 'claim_gone':
          // The replayed job was removed (deleted, or retention) between the two steps: the call
          // is a new request now, as it would have been a moment later.
          job = await build(proposedId);
          idempotency = entry(job.id);
          claimMustExist = false;
          continue;
      }
    }
  }

  /**
   * Accepts a job with uploads (an edit): the key is claimed and a place under the cap taken
   * before anything is written, uploads included; then the job is stored and queued.
   */
  private async admitWithUploads(
    workspaceId: string,
    proposedId: string,
    fingerprint: () => string,
    idempotencyKey: string | undefined,
    build: (id: string) => Promise<JobRecord>,
  ): Promise<Intake> {
    build = withTrace(withKeyHash(build, idempotencyKey));
    if (idempotencyKey === undefined) return { job: await this.accept(workspaceId, proposedId, build), replayed: false };
    const claim = await this.idempotency.claim(workspaceId, idempotencyKey, fingerprint(), proposedId);
    if (claim.outcome === 'mismatch') throw this.keyReused();
    if (claim.outcome === 'new') {
      this.faults.at('intake.claimed');
      return { job: await this.accept(workspaceId, proposedId, build, claim.claim), replayed: false };
    }
    const existing = await this.jobs.getForWorkspace(workspaceId, claim.jobId);
    if (existing) {
      if (!isFinished(existing.status)) await this.enqueue(existing);
      return { job: existing, replayed: true };
    }
    // Claimed, not stored: the request that claimed the key is still storing its uploads, or it
    // died doing so (one that failed gives its claim back). Two requests storing the same job
    // would write the same files and undo each other's work when one fails, so a repeat finishes
    // creating the job only once the claim is older than any intake takes, and only one repeat:
    // the one that takes the claim over.
    const now = Date.now();
    const taken = now - claim.claimedMs < UPLOAD_INTAKE_MS ? undefined : await this.idempotency.takeOver(claim, now);
    if (!taken) throw this.keyInUse();
    return { job: await this.accept(workspaceId, claim.jobId, build, taken), replayed: true };
  }

  /**
   * Takes a place under the workspace's waiting-jobs cap before anything is written (uploads
   * included), then stores and queues the job. If that fails before the record exists, the place
   * is given back, the uploads removed and the key's `claim` (if any) released, so that a retry
   * makes the job; a stored job keeps its place until it finishes (the intake repair queues it).
   * A request whose claim a repeat has taken over meanwhile (it took longer than any intake
   * should) leaves the job to that repeat: it stores nothing and removes nothing.
   */
  private async accept(workspaceId: string, id: string, build: (id: string) => Promise<JobRecord>, claim?: HeldClaim): Promise<JobRecord> {
    const giveBackClaim = () => (claim ? this.idempotency.release(claim).catch(() => undefined) : undefined);
    const verdict = await this.waiting.onJobAccepted(workspaceId, id).catch(async (err: unknown) => {
      await giveBackClaim();
      throw err;
    });
    if (!verdict.accepted) {
      await giveBackClaim();
      throw this.tooManyWaiting(verdict.waiting, verdict.max);
    }
    const stillOurs = async () => !claim || (await this.idempotency.holds(claim));
    try {
      // Noted before the first upload is stored, so that uploads this gateway dies storing are found.
      await this.jobs.uploadsStarting({ id, workspace_id: workspaceId }, Date.now());
      const job = await build(id);
      if (!(await stillOurs())) throw this.keyInUse();
      return await this.store(job, verdict.waiting);
    } catch (err) {
      const stored = await this.jobs.get(id).then(
        (job) => job !== undefined,
        () => true,
      );
      if (!stored && (await stillOurs().catch(() => false))) {
        await this.waiting.onJobFinished(workspaceId, id).catch(() => undefined);
        // Uploads of a job that was never stored: no record, so retention would never find them.
        await this.blobs
          .removeAll(blobFolderOf({ workspace_id: workspaceId, id }))
          .then(() => this.jobs.forgetUploads({ workspaceId, jobId: id }))
          .catch(() => undefined);
        await giveBackClaim();
      }
      throw err;
    }
  }

  /** `rank`: the job's place among its workspace's unfinished jobs, from taking its place under the cap. */
  private async store(job: JobRecord, rank: number): Promise<JobRecord> {
    if (!(await this.jobs.create(job))) {
      const existing = await this.jobs.get(job.id);
      if (existing) job = existing;
    }
    this.faults.at('intake.stored');
    await this.enqueueStored(job, rank);
    return job;
  }

  /** Queues a job that is stored and in the intake set. */
  private async enqueueStored(job: JobRecord, rank: number): Promise<void> {
    try {
      await this.enqueue(job, rank);
    } catch {
      // The job is stored and in the intake set, so the generator's intake repair queues it within
      // seconds (and logs that it did): it will run and be charged, so the client must learn its
      // id. Answering 503 here would make a client without an Idempotency-Key create it twice.
    }
  }

  /**
   * Queues the job, then clears its intake mark (until then the generator's intake repair would queue
   * it). `rank` orders it among other workspaces' jobs (`generationPriority`); a replay that was not
   * told it reads the workspace's unfinished count, one more round trip off the hot path.
   */
  private async enqueue(job: JobRecord, rank?: number): Promise<void> {
    const entry = generationQueueEntry(job, rank ?? (await this.jobs.unfinishedCount(job.workspace_id)));
    await this.generation.add(entry.name, entry.payload, entry.opts);
    this.faults.at('intake.queued');
    this.marks.clear(job.id);
  }

  private putUpload(key: string, upload: Upload): Promise<void> {
    return 'path' in upload.source ? this.blobs.putFile(key, upload.source.path) : this.blobs.put(key, upload.source.bytes);
  }

  private tooManyWaiting(waiting: number, max: number): ApiError {
    return ApiError.rateLimited(
      `This workspace already has ${waiting} jobs waiting to finish, its limit is ${max}. Wait for some of them to finish, then try again.`,
      'too_many_pending_jobs',
    );
  }

  private keyInUse(): ApiError {
    const error = new ApiError(
      409,
      'conflict_error',
      'A request with this Idempotency-Key is still being processed. Retry it once that request has been answered.',
      null,
      'idempotency_key_in_use',
    );
    // The openai SDK retries a 409 by itself, after the Retry-After it is given.
    error.retryAfterSeconds = IN_USE_RETRY_AFTER_SECONDS;
    return error;
  }

  private keyReused(): ApiError {
    return new ApiError(409, 'conflict_error', 'This Idempotency-Key was already used with different parameters.', null, 'idempotency_key_reused');
  }

  /**
   * The URL rules, or, for a relay URL (`media-callbacks listen`), that it is this workspace's own:
   * a relay URL is never dialled, so its address is not what matters, its owner is.
   */
  private async checkCallbackUrl(workspaceId: string, url: string | null): Promise<void> {
    if (url === null) return;
    if (this.relays?.isRelayUrl(url)) {
      if (await this.relays.ownsRelayUrl(workspaceId, url)) return;
      throw ApiError.invalid(
        "The callback_url is a relay URL, but not this workspace's (see `media-callbacks listen`).",
        'callback_url',
        'invalid_callback_url',
      );
    }
    try {
      await this.callbackGuard.check(url);
    } catch (err) {
      if (err instanceof CallbackUrlRejectedError) throw ApiError.invalid(err.message, 'callback_url', 'invalid_callback_url');
      throw err;
    }
  }

  private fingerprint(operation: string, params: object, edit: EditInputs | null): string {
    const hash = createHash('sha256').update(operation).update(JSON.stringify(params));
    for (const upload of edit?.images ?? []) hash.update(upload.sha256);
    if (edit?.mask) hash.update('mask').update(edit.mask.sha256);
    return hash.digest('hex');
  }
}

/** The job keeps the trace of the request that made it: every later step of it continues that trace. */
function withTrace(build: (id: string) => Promise<JobRecord>): (id: string) => Promise<JobRecord> {
  return async (id) => {
    const job = await build(id);
    const traceparent = activeTraceparent();
    return traceparent ? { ...job, traceparent } : job;
  };
}

/** The job remembers the key it was made with, so removing the job (retention, DELETE) removes the key's claim too. */
function withKeyHash(build: (id: string) => Promise<JobRecord>, idempotencyKey: string | undefined): (id: string) => Promise<JobRecord> {
  if (idempotencyKey === undefined) return build;
  const hash = idempotencyKeyHash(idempotencyKey);
  return async (id) => ({ ...(await build(id)), idempotency_key_hash: hash });
}
