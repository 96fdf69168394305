import { describeSize } from './models';
import type { ImageJob, JobError, JobRecord, JobStatus, VideoJob } from './jobs';
import type { LinkSigner } from './links';

export interface VideoObject {
  id: string;
  object: 'video';
  model: string;
  status: JobStatus;
  progress: number;
  created_at: number;
  completed_at: number | null;
  expires_at: number | null;
  seconds: number;
  resolution: string;
  aspect_ratio: string;
  size: string;
  generate_audio: boolean;
  prompt: string;
  remixed_from_video_id: string | null;
  url: string | null;
  url_expires_at: number | null;
  cost: number | null;
  error: JobError | null;
  callback_url: string | null;
}

export interface ImageItem {
  url?: string;
  b64_json?: string;
}

export interface ImageRequestObject {
  id: string;
  object: 'image.generation';
  /** OpenAI's `created` (its SDKs type it as an integer): when the images were made, or until then when the request was accepted. */
  created: number;
  model: string;
  status: JobStatus;
  created_at: number;
  completed_at: number | null;
  data: ImageItem[];
  url_expires_at: number | null;
  cost: number | null;
  error: JobError | null;
  callback_url: string | null;
}

const seconds = (ms: number) => Math.floor(ms / 1000);

/** When the job's media are removed, in Unix seconds; null while unfinished (or for a record from before retention). */
const expiresAt = (job: JobRecord): number | null => (job.expires_ms ? seconds(job.expires_ms) : null);

/**
 * Renders stored jobs as the API shows them. Links are minted at render time, so every GET and
 * every callback attempt carries links valid for the full TTL, cut at the media's removal.
 */
export class JobPresenter {
  constructor(private readonly links: LinkSigner) {}

  render(job: JobRecord, nowSeconds?: number): VideoObject | ImageRequestObject {
    return job.kind === 'video' ? this.video(job, nowSeconds) : this.imageRequest(job, nowSeconds);
  }

  video(job: VideoJob, nowSeconds?: number): VideoObject {
    const link = job.status === 'completed' && job.output ? this.links.mint(job.output, nowSeconds, expiresAt(job) ?? Infinity) : null;
    const completedAt = job.status === 'completed' && job.finished_ms ? seconds(job.finished_ms) : null;
    return {
      id: job.id,
      object: 'video',
      model: job.model,
      status: job.status,
      progress: job.status === 'completed' ? 100 : job.progress,
      created_at: seconds(job.created_ms),
      completed_at: completedAt,
      expires_at: expiresAt(job),
      seconds: job.seconds,
      ...describeSize(job.size),
      size: job.size,
      generate_audio: job.generate_audio,
      prompt: job.prompt,
      remixed_from_video_id: job.remixed_from_video_id ?? null,
      url: link?.url ?? null,
      url_expires_at: link?.expires_at ?? null,
      cost: job.cost,
      error: job.error,
      callback_url: job.callback_url,
    };
  }

  /** Always links, never base64: the form used by GET and by callbacks. */
  imageRequest(job: ImageJob, nowSeconds?: number): ImageRequestObject {
    const completed = job.status === 'completed';
    const links = completed ? job.outputs.map((key) => this.links.mint(key, nowSeconds, expiresAt(job) ?? Infinity)) : [];
    const completedAt = completed && job.finished_ms ? seconds(job.finished_ms) : null;
    return {
      id: job.id,
      object: 'image.generation',
      created: completedAt ?? seconds(job.created_ms),
      model: job.model,
      status: job.status,
      created_at: seconds(job.created_ms),
      completed_at: completedAt,
      data: links.map((link) => ({ url: link.url })),
      url_expires_at: links.length > 0 ? links[0].expires_at : null,
      cost: job.cost,
      error: job.error,
      callback_url: job.callback_url,
    };
  }
}
