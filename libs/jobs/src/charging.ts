import { findModel, type ImageModel, type JobRecord, type LedgerEntry, type VideoModel } from '@media/domain';

/** Money is summed in integer micro-dollars so that repeated charges never drift. */
export function roundCost(amount: number): number {
  return Math.round(amount * 1_000_000) / 1_000_000;
}

/**
 * The price of one image of `size`, or undefined when the model does not offer that size. `size`
 * comes from clients: only the table's own entries count, never `constructor`, `__proto__` and the
 * like that every object inherits.
 */
export function imagePrice(model: ImageModel, size: string): number | undefined {
  return Object.hasOwn(model.pricePerImage, size) ? model.pricePerImage[size] : undefined;
}

export function imageCost(model: ImageModel, size: string, count: number): number {
  const price = imagePrice(model, size);
  if (price === undefined) throw new Error(`model ${model.id} has no price for size ${JSON.stringify(size)}`);
  return roundCost(price * count);
}

export function videoCost(model: VideoModel, seconds: number, withAudio: boolean): number {
  return roundCost(seconds * (model.pricePerSecond + (withAudio ? model.audioPricePerSecond : 0)));
}

/** A job whose model is no longer offered, or cannot make the job's kind: it cannot be priced, so it is not completed. */
export class UnpricedJobError extends Error {
  override readonly name = 'UnpricedJobError';
}

/** What a finished job costs: its model's price for what it made (n images of a size, or seconds of video and audio). */
export function costOf(job: JobRecord): number {
  const model = findModel(job.model);
  if (!model) throw new UnpricedJobError(`model ${job.model} is no longer offered`);
  if (job.kind === 'video' && model.kind === 'video') return videoCost(model, job.seconds, job.generate_audio);
  if (job.kind === 'image' && model.kind === 'image') return imageCost(model, job.size, job.n);
  throw new UnpricedJobError(`model ${job.model} cannot make ${job.kind}s`);
}

/**
 * The charge of a job completed at `nowMs`: its cost, and the ledger entry that
 * JobRepository.finish writes with the completed record in one Redis step (lua/job-finish.lua), so
 * that a job is charged once, and only if it completed.
 */
export function chargeFor(job: JobRecord, nowMs: number): LedgerEntry {
  return { job_id: job.id, workspace_id: job.workspace_id, model: job.model, amount: costOf(job), created_ms: nowMs };
}
