import { createHash, randomInt } from 'node:crypto';
import { FaultInjector, jobIds, newId, type JobQueue } from '@media/common';
import { CallbackUrlGuard, CallbackUrlRejectedError } from '@media/callback-guard';
import { generationJobName, isFinished, type ImageJob, type JobRecord, type VideoJob } from '@media/domain';
import type { BlobStore, IdempotencyRepository, JobRepository, LimitRepository } from '@media/storage';
import { ApiError } from './http/api-error';
import type { ImageParams, VideoParams } from './validation';

export interface Upload {
  bytes: Buffer;
  ext: 'png' | 'jpg' | 'webp';
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
 */
export class JobIntakeService {
  constructor(
    private readonly jobs: JobRepository,
    private readonly blobs: BlobStore,
    private readonly idempotency: IdempotencyRepository,
    private readonly generation: JobQueue<'generation'>,
    private readonly callbackGuard: CallbackUrlGuard,
    private readonly waiting: Pick<LimitRepository, 'onJobAccepted' | 'onJobFinished'>,
    private readonly faults: FaultInjector = FaultInjector.none(),
  ) {}

  async createImageJob(workspaceId: string, requestId: string, params: ImageParams, edit: EditInputs | null, idempotencyKey?: string): Promise<Intake> {
    await this.checkCallbackUrl(params.callback_url);
    const fingerprint = this.fingerprint(edit ? 'images.edit' : 'images.generate', { ...params, model: params.model.id }, edit);
    return this.admit(workspaceId, requestId, fingerprint, idempotencyKey, async (id) => {
      const inputs: string[] = [];
      let mask: string | null = null;
      if (edit) {
        for (const [i, upload] of edit.images.entries()) {
          const key = `${workspaceId}/${id}/input-${i}.${upload.ext}`;
          await this.blobs.put(key, upload.bytes);
          inputs.push(key);
        }
        if (edit.mask) {
          mask = `${workspaceId}/${id}/mask.${edit.mask.ext}`;
          await this.blobs.put(mask, edit.mask.bytes);
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
        inputs,
        mask,
        outputs: [],
      };
      return job;
    });
  }

  async createVideoJob(workspaceId: string, requestId: string, params: VideoParams, idempotencyKey?: string): Promise<Intake> {
    await this.checkCallbackUrl(params.callback_url);
    const fingerprint = this.fingerprint('videos.create', { ...params, model: params.model.id }, null);
    return this.admit(workspaceId, newId('video'), fingerprint, idempotencyKey, async (id) => {
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
      };
      return job;
    });
  }

  private async admit(
    workspaceId: string,
    proposedId: string,
    fingerprint: string,
    idempotencyKey: string | undefined,
    build: (id: string) => Promise<JobRecord>,
  ): Promise<Intake> {
    if (idempotencyKey !== undefined) {
      const claim = await this.idempotency.claim(workspaceId, idempotencyKey, fingerprint, proposedId);
      if (claim.outcome === 'mismatch') {
        throw new ApiError(409, 'conflict_error', 'This Idempotency-Key was already used with different parameters.', null, 'idempotency_key_reused');
      }
      if (claim.outcome === 'replay') {
        const existing = await this.jobs.getForWorkspace(workspaceId, claim.jobId);
        // A crash between claiming the key and storing the job: finish creating it under the claimed id.
        if (!existing) return { job: await this.accept(workspaceId, claim.jobId, build), replayed: true };
        if (!isFinished(existing.status)) await this.enqueue(existing);
        return { job: existing, replayed: true };
      }
    }
    return { job: await this.accept(workspaceId, proposedId, build), replayed: false };
  }

  /**
   * Takes a place under the workspace's waiting-jobs cap before anything is written (uploads
   * included), then stores and queues the job. If that fails before the record exists, the place
   * is given back; a stored job keeps it until it finishes (the intake repair queues it).
   */
  private async accept(workspaceId: string, id: string, build: (id: string) => Promise<JobRecord>): Promise<JobRecord> {
    const verdict = await this.waiting.onJobAccepted(workspaceId, id);
    if (!verdict.accepted) {
      throw ApiError.rateLimited(
        `This workspace already has ${verdict.waiting} jobs waiting to finish, its limit is ${verdict.max}. Wait for some of them to finish, then try again.`,
        'too_many_pending_jobs',
      );
    }
    try {
      return await this.store(await build(id));
    } catch (err) {
      const stored = await this.jobs.get(id).then((job) => job !== undefined, () => true);
      if (!stored) await this.waiting.onJobFinished(workspaceId, id).catch(() => undefined);
      throw err;
    }
  }

  private async store(job: JobRecord): Promise<JobRecord> {
    if (!(await this.jobs.create(job))) {
      const existing = await this.jobs.get(job.id);
      if (existing) job = existing;
    }
    this.faults.at('intake.stored');
    try {
      await this.enqueue(job);
    } catch {
      // The job is stored and in the intake set, so the generator's intake repair queues it within
      // seconds (and logs that it did): it will run and be charged, so the client must learn its
      // id. Answering 503 here would make a client without an Idempotency-Key create it twice.
    }
    return job;
  }

  /** Queues the job, then clears its intake mark (until then the generator's intake repair would queue it). */
  private async enqueue(job: JobRecord): Promise<void> {
    await this.generation.add(generationJobName(job), { jobId: job.id }, { jobId: jobIds.generation(job.id) });
    this.faults.at('intake.queued');
    await this.jobs.markQueued(job.id);
  }

  private async checkCallbackUrl(url: string | null): Promise<void> {
    if (url === null) return;
    try {
      await this.callbackGuard.check(url);
    } catch (err) {
      if (err instanceof CallbackUrlRejectedError) throw ApiError.invalid(err.message, 'callback_url', 'invalid_callback_url');
      throw err;
    }
  }

  private fingerprint(operation: string, params: object, edit: EditInputs | null): string {
    const hash = createHash('sha256').update(operation).update(JSON.stringify(params));
    for (const upload of edit?.images ?? []) hash.update(upload.bytes);
    if (edit?.mask) hash.update('mask').update(edit.mask.bytes);
    return hash.digest('hex');
  }
}
