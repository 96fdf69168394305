import type { ImageFormat } from '@media/blob-store';
import type { ImageBackground, ImageQuality } from '@media/domain';

/** What an image job asks for, in our own terms (catalog model id, `WxH` size, `output_format`). */
export interface ImageRequest {
  /** Our catalog id (`pixel-1`); a backend that talks to a model server translates it. */
  model: string;
  prompt: string;
  /** Variation seed; only the procedural renderer can honour it. */
  seed: number;
  /** How many images (1–10); a backend returns exactly this many. */
  n: number;
  /** `1024x1024`. */
  size: string;
  format: ImageFormat;
  /** OpenAI's `quality`, as the client sent it (`auto` when it did not). */
  quality: ImageQuality;
  /** OpenAI's `background`: `transparent` asks for an alpha channel (png or webp). */
  background: ImageBackground;
  /** OpenAI's `output_compression` (jpeg/webp, 0-100); null: the backend's own choice. */
  compression: number | null;
}

export interface ImageEditRequest extends ImageRequest {
  /** The uploads, first one edited; bytes as the client sent them (PNG, JPEG or WebP). */
  images: Buffer[];
  /** PNG whose fully transparent pixels mark where to edit. */
  mask: Buffer | undefined;
}

export interface VideoRequest {
  model: string;
  prompt: string;
  seed: number;
  seconds: number;
  /** `1280x720`. */
  size: string;
  withAudio: boolean;
  /** Where the finished MP4 must be when {@link GeneratorBackend.makeVideo} resolves. */
  outputPath: string;
}

/**
 * Whatever makes the media: the procedural renderer, or a model server (GENERATOR_BACKEND). The
 * generation service stores, finishes and charges the same way whichever one it is given.
 *
 * How a backend fails is the service's one way to fail: a {@link PermanentGenerationError} for what
 * no retry can fix (its code and message become the job's error), any other error for what another
 * attempt may fix (BullMQ retries it). Aborting `signal` (the generation timeout, a shutdown) must
 * stop the work, child processes and HTTP requests included.
 */
export interface GeneratorBackend {
  /** `n` images in `format`, made from the prompt. */
  generateImages(request: ImageRequest, signal: AbortSignal): Promise<Buffer[]>;
  /** `n` edits of the uploads in `format`. */
  editImages(request: ImageEditRequest, signal: AbortSignal): Promise<Buffer[]>;
  /**
   * Writes the MP4 to `request.outputPath`, streamed: a video is never held in memory whole.
   * `onProgress` takes percentages as the video is made; advisory, it may never be called.
   */
  makeVideo(request: VideoRequest, onProgress: (percent: number) => void, signal: AbortSignal): Promise<void>;
}
