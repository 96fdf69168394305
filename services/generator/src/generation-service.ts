import { mkdtemp, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { FaultInjector, NO_GENERATION_METRICS, PermanentJobError, scratchDir, type GenerationMetrics, type Logger } from '@media/common';
import { jobIds, type JobQueue } from '@media/queues';
import { blobFolderOf, isFinished, type ImageJob, type JobError, type JobRecord, type LedgerEntry, type VideoJob } from '@media/domain';
import { extensionOf, type BlobStore } from '@media/blob-store';
import { chargeFor, CorruptRecordError, UnpricedJobError, type JobRepository } from '@media/jobs';
import type { GeneratorBackend } from './backends';
import { GenerationTimeoutError, jobErrorFor, PermanentGenerationError } from './errors';
import { activeContext, inSpan, jobContext, recordSpan, SpanKind } from '@media/tracing';
import type { ModerationPolicy } from './moderation';

export interface GenerationDeps {
  jobs: JobRepository;
  blobs: BlobStore;
  events: JobQueue<'job-events'>;
  /** What makes the media (GENERATOR_BACKEND); everything around it is the same for every backend. */
  backend: GeneratorBackend;
  /** GENERATOR_BACKEND, as the generation span names it. */
  backendName?: string;
  moderation: ModerationPolicy;
  logger: Logger;
  timeoutMs: number;
  /** How long a finished job's record and media are kept (MEDIA_RETENTION_SECONDS), from its end. */
  retentionMs: number;
  faults?: FaultInjector;
  metrics?: GenerationMetrics;
}

/** Hooks into the running BullMQ job. */
export interface AttemptInfo {
  reportProgress?: (percent: number) => Promise<void>;
  /** When the job was put on the generation queue (BullMQ's timestamp): its wait is a span of the job's trace. */
  enqueuedMs?: number;
}

/** Minimum progress step written to the store, so a video does not cause a write per frame. */
const PROGRESS_STEP = 5;

/**
 * Turns a queued job into media, a final state, a charge and a job-finished event. Every step
 * can run again after a crash: finishing and charging happen once in one transaction, and the
 * event has a deterministic queue id.
 *
 * Failing is one path: {@link run} throws a {@link PermanentGenerationError} (BullMQ fails the job
 * at once) or any other error (BullMQ retries), and the `failed` outcome is written only by
 * {@link giveUp}, where BullMQ has given up.
 */
export class GenerationService {
  /** Aborts for the work in progress, so a shutdown past its deadline can stop encoders and upstream requests. */
  private readonly running = new Set<AbortController>();
  private readonly faults: FaultInjector;
  private readonly metrics: GenerationMetrics;

  constructor(private readonly deps: GenerationDeps) {
    this.faults = deps.faults ?? FaultInjector.none();
    this.metrics = deps.metrics ?? NO_GENERATION_METRICS;
  }

  /** Stops every running generation (their jobs are left to BullMQ's stall recovery). */
  abortAll(): void {
    for (const controller of this.running) controller.abort(new Error('generator shutting down'));
  }

  async run(jobId: string, attempt: AttemptInfo = {}): Promise<void> {
    const job = await this.read(jobId);
    if (!job) {
      // The gateway stores a job before it queues it, so this is a job added by hand, or one whose
      // record is gone: no retry can bring the record, and failing (once) leaves it in BullMQ's
      // failed set, where an operator can see it, rather than among the completed.
      this.deps.logger.warn('generation job has no record; failing it', { job_id: jobId, code: 'no_record' });
      throw new PermanentJobError('no_record', `no job ${jobId} is stored`);
    }
    if (isFinished(job.status)) {
      // A crash after finishing but before the event was queued: queue it now (a no-op if it was).
      await this.announce(job);
      return;
    }
    const trace = jobContext(job.traceparent);
    const messaging = { 'messaging.system': 'bullmq', 'messaging.destination.name': 'generation', 'media.job.id': job.id };
    if (attempt.enqueuedMs !== undefined)
      recordSpan('generation wait', { kind: SpanKind.INTERNAL, attributes: messaging, startMs: attempt.enqueuedMs, endMs: Date.now() }, trace);
    const attributes = { ...messaging, 'media.job.kind': job.kind, 'media.model': job.model, 'media.backend': this.deps.backendName ?? 'unknown' };
    await inSpan(`generate ${job.kind}`, { kind: SpanKind.CONSUMER, attributes }, trace, () => this.generate(job, attempt));
  }

  /** {@link run} for a job that has a record and is not finished: makes it, then finishes it. */
  private async generate(job: JobRecord, attempt: AttemptInfo): Promise<void> {
    const jobId = job.id;
    // An image is in progress from its acceptance (and a video re-run after a crash from its first
    // run): only a queued video's record has something to change, so only it is written.
    if (job.status !== 'in_progress') {
      job.status = 'in_progress';
      await this.deps.jobs.updateActive(job);
    }

    const blocked = this.deps.moderation.blockedTerm(job.prompt);
    if (blocked) throw new PermanentGenerationError('moderation_blocked', 'The request was blocked by output moderation.');
    let finished: JobRecord;
    try {
      finished = await this.withTimeout<JobRecord>((signal) => (job.kind === 'video' ? this.makeVideo(job, signal, attempt) : this.makeImages(job, signal)));
    } catch (err) {
      // A permanent failure is logged where BullMQ gives up on it (giveUp), with its code.
      if (!(err instanceof GenerationTimeoutError) && !(err instanceof PermanentGenerationError)) {
        this.deps.logger.warn('generation error', { job_id: jobId, error: String(err) });
      }
      throw err;
    }
    this.faults.at('generation.rendered');
    await this.complete(finished);
  }

  /**
   * Records the outcome of a job BullMQ has given up on (retries or stall recoveries used up, or a
   * permanent failure): `failed` with its error, uncharged, announced. Safe to repeat; for a job
   * that had finished it only makes sure the finish was announced.
   */
  async giveUp(jobId: string, reason: string, permanent?: { code: string; detail: string }): Promise<void> {
    const job = await this.deps.jobs.get(jobId);
    if (!job) return;
    if (isFinished(job.status)) {
      // Finished, then the process died before queueing the event (or the event is queued: no-op).
      await this.announce(job);
      return;
    }
    this.deps.logger.warn('generation given up', { job_id: jobId, reason });
    await this.fail(job, jobErrorFor(reason, permanent));
  }

  private async makeImages(job: ImageJob, signal: AbortSignal): Promise<ImageJob> {
    // A record stored before the encoding parameters existed reads as their defaults.
    const request = {
      model: job.model,
      prompt: job.prompt,
      seed: job.seed,
      n: job.n,
      size: job.size,
      format: job.output_format,
      quality: job.quality ?? 'auto',
      background: job.background ?? 'auto',
      compression: job.output_compression ?? null,
    } as const;
    let images: Buffer[];
    if (job.operation === 'edit') {
      const inputs = await Promise.all(job.inputs.map((key) => this.deps.blobs.get(key)));
      const mask = job.mask ? await this.deps.blobs.get(job.mask) : undefined;
      images = await this.deps.backend.editImages({ ...request, images: inputs, mask }, signal);
    } else {
      images = await this.deps.backend.generateImages(request, signal);
    }
    // The charge is for n images: a backend that made fewer has not made what is charged.
    if (images.length !== job.n) throw new PermanentGenerationError('generation_failed', `${images.length} of ${job.n} images were made.`);
    const outputs = images.map((_, index) => `${blobFolderOf(job)}/${index}.${extensionOf(job.output_format)}`);
    for (const [index, key] of outputs.entries()) {
      signal.throwIfAborted();
      await this.deps.blobs.put(key, images[index]!);
    }
    return { ...job, outputs };
  }

  private async makeVideo(job: VideoJob, signal: AbortSignal, attempt: AttemptInfo): Promise<VideoJob> {
    const dir = await mkdtemp(join(scratchDir(), 'video-'));
    try {
      const outputPath = join(dir, 'video.mp4');
      let written = job.progress;
      await this.deps.backend.makeVideo(
        { model: job.model, prompt: job.prompt, seed: job.seed, seconds: job.seconds, size: job.size, withAudio: job.generate_audio, outputPath },
        (percent) => {
          // Progress is advisory: a lost write is fine, a crash of the encode over it is not.
          if (percent >= 100 || percent - written < PROGRESS_STEP) return;
          written = percent;
          void this.deps.jobs.updateActive({ ...job, status: 'in_progress', progress: percent }).catch(() => undefined);
          void attempt.reportProgress?.(percent).catch(() => undefined);
        },
        signal,
      );
      const key = `${blobFolderOf(job)}/video.${extensionOf('mp4')}`;
      await this.deps.blobs.putFile(key, outputPath);
      return { ...job, output: key, progress: 100 };
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }

  private async complete(job: JobRecord): Promise<void> {
    const now = Date.now();
    const charge = this.chargeOf(job, now);
    const cost = charge.amount;
    const done: JobRecord = { ...job, status: 'completed', finished_ms: now, expires_ms: now + this.deps.retentionMs, cost, error: null };
    if (
      await inSpan('finish', { attributes: { 'media.job.id': job.id, 'media.job.status': 'completed' } }, activeContext(), () =>
        this.deps.jobs.finish(done, charge),
      )
    ) {
      // Counted only where the finish was written, so a re-run after a crash does not count twice.
      this.metrics.jobFinished(job.kind, 'completed', (now - job.created_ms) / 1000);
      this.metrics.charged(cost);
      this.deps.logger.info('job completed', { job_id: job.id, cost });
    }
    this.faults.at('generation.finished');
    await this.announce(job);
  }

  private async fail(job: JobRecord, error: JobError): Promise<void> {
    const now = Date.now();
    const failed: JobRecord = { ...job, status: 'failed', finished_ms: now, expires_ms: now + this.deps.retentionMs, cost: null, error };
    if (
      await inSpan('finish', { attributes: { 'media.job.id': job.id, 'media.job.status': 'failed' } }, activeContext(), () =>
        this.deps.jobs.finish(failed, null),
      )
    ) {
      this.metrics.jobFinished(job.kind, error.code, (now - job.created_ms) / 1000);
      this.deps.logger.warn('job failed', { job_id: job.id, code: error.code });
    }
    await this.announce(job);
  }

  /** The job record; one that cannot be read is a permanent failure, not something to retry. */
  private async read(jobId: string): Promise<JobRecord | undefined> {
    try {
      return await this.deps.jobs.get(jobId);
    } catch (err) {
      if (err instanceof CorruptRecordError) throw new PermanentGenerationError('generation_failed', 'The job record could not be read.');
      throw err;
    }
  }

  private announce(job: Pick<JobRecord, 'id' | 'workspace_id'>): Promise<void> {
    return this.deps.events.add('job-finished', { jobId: job.id, workspaceId: job.workspace_id }, { jobId: jobIds.jobFinished(job.id) });
  }

  /** The job's charge (@media/jobs prices it); a job that cannot be priced fails, uncharged. */
  private chargeOf(job: JobRecord, nowMs: number): LedgerEntry {
    try {
      return chargeFor(job, nowMs);
    } catch (err) {
      if (err instanceof UnpricedJobError) throw new PermanentGenerationError('generation_failed', err.message);
      throw err;
    }
  }

  private async withTimeout<T>(work: (signal: AbortSignal) => Promise<T>): Promise<T> {
    const controller = new AbortController();
    this.running.add(controller);
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        controller.abort();
        reject(new GenerationTimeoutError(this.deps.timeoutMs));
      }, this.deps.timeoutMs);
    });
    try {
      return await Promise.race([work(controller.signal), timeout]);
    } finally {
      clearTimeout(timer);
      this.running.delete(controller);
    }
  }
}
