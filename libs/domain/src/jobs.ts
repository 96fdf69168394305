/** Job records as stored. The API objects are rendered from them by the presenter. */

export type JobStatus = 'queued' | 'in_progress' | 'completed' | 'failed';
export type ImageOutputFormat = 'png' | 'jpeg' | 'webp';
export type ResponseFormat = 'url' | 'b64_json';
/** OpenAI's values: `hd` only on generations, where `standard` and `hd` are DALL-E 3's names for medium and high. */
export type ImageQuality = 'low' | 'medium' | 'high' | 'auto' | 'standard' | 'hd';
export type ImageBackground = 'transparent' | 'opaque' | 'auto';

export type JobErrorCode = 'moderation_blocked' | 'invalid_image' | 'generation_failed';
export interface JobError {
  code: JobErrorCode;
  message: string;
}

export type EventType = 'video.completed' | 'video.failed' | 'image.completed' | 'image.failed';
export const EVENT_TYPES: readonly EventType[] = ['video.completed', 'video.failed', 'image.completed', 'image.failed'];

interface JobBase {
  id: string;
  workspace_id: string;
  model: string;
  prompt: string;
  seed: number;
  status: JobStatus;
  /** Unix milliseconds; API fields are derived in seconds. */
  created_ms: number;
  finished_ms: number | null;
  /**
   * When the record and its media are removed (Unix ms), set when the job finishes; the API's
   * `expires_at`. Absent on records written before retention existed (those are kept).
   */
  expires_ms?: number | null;
  cost: number | null;
  error: JobError | null;
  callback_url: string | null;
  /** The `x-request-id` of the creation call. */
  request_id: string;
  /**
   * SHA-256 (hex) of the `Idempotency-Key` the job was created with, if any: removing the job
   * removes the key's claim too, so a repeat of the call after that makes a new job rather than
   * re-creating the removed one under its old id.
   */
  idempotency_key_hash?: string;
  /**
   * The W3C `traceparent` of the request that created the job, when tracing is on: the generation,
   * the finish and every callback attempt continue that trace, in whichever process and retry.
   */
  traceparent?: string;
}

export interface ImageJob extends JobBase {
  kind: 'image';
  operation: 'generation' | 'edit';
  n: number;
  size: string;
  output_format: ImageOutputFormat;
  response_format: ResponseFormat;
  // How the images are drawn and encoded, as asked, so that a retry or another worker renders the
  // same. Records stored before these existed lack them: absent reads as `auto`, and as no
  // `output_compression` (the quality's own encoder setting).
  quality?: ImageQuality;
  background?: ImageBackground;
  /** 0-100, the jpeg/webp encoder quality; null: the one `quality` picks. */
  output_compression?: number | null;
  /** Blob keys of uploaded edit inputs. */
  inputs: string[];
  mask: string | null;
  /** Blob keys of the made images, once completed. */
  outputs: string[];
}

export interface VideoJob extends JobBase {
  kind: 'video';
  seconds: number;
  size: string;
  generate_audio: boolean;
  progress: number;
  output: string | null;
  /** The completed video this one remixes; absent (as on records stored before remixes existed) or null on an ordinary video. */
  remixed_from_video_id?: string | null;
}

export type JobRecord = ImageJob | VideoJob;

/**
 * The blob folder of a job: every blob it has (uploads, outputs, and whatever a failed attempt
 * left) is named `<folder>/<file>`, so removing the job's media is removing one folder.
 */
export const blobFolderOf = (job: Pick<JobBase, 'workspace_id' | 'id'>): string => `${job.workspace_id}/${job.id}`;

export const isFinished = (status: JobStatus): boolean => status === 'completed' || status === 'failed';

/** The callback event a finished job produces. */
export function eventTypeFor(job: JobRecord): EventType {
  const outcome = job.status === 'completed' ? 'completed' : 'failed';
  return `${job.kind}.${outcome}`;
}

/** A charge in the ledger: at most one per job, written with the completion. */
export interface LedgerEntry {
  job_id: string;
  workspace_id: string;
  model: string;
  amount: number;
  created_ms: number;
}

/**
 * A synchronous call: an image request without a callback URL, whose client holds its connection
 * open until the image is made. Videos and images with a callback are answered at once and run in
 * the background.
 */
export const isSynchronous = (job: JobRecord): boolean => job.kind === 'image' && !job.callback_url;

/** The `generation` queue's job name for a job record. */
export function generationJobName(job: JobRecord): 'generate-image' | 'edit-image' | 'generate-video' {
  if (job.kind === 'video') return 'generate-video';
  return job.operation === 'edit' ? 'edit-image' : 'generate-image';
}
