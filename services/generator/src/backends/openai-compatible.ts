import { execFile } from 'node:child_process';
import { createWriteStream } from 'node:fs';
import { open } from 'node:fs/promises';
import { Readable, Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { ReadableStream as WebReadableStream } from 'node:stream/web';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';
import OpenAI, { toFile } from 'openai';
import type { ImagesResponse } from 'openai/resources/images';
import type { Video, VideoSeconds, VideoSize } from 'openai/resources/videos';
import sharp from 'sharp';
import type { Logger } from '@media/common';
import { MEDIA_TYPES, sniffImageFormat, sniffMediaFormat, type ImageFormat } from '@media/blob-store';
import { PermanentGenerationError } from '../errors';
import type { GeneratorBackend, ImageEditRequest, ImageRequest, VideoRequest } from './backend';

const run = promisify(execFile);

export interface OpenAiCompatibleOptions {
  /** The API's base with its version, `https://api.openai.com/v1`. */
  baseUrl: string;
  apiKey: string;
  /** Our model id → the server's; others go under their own id. */
  modelMap: ReadonlyMap<string, string>;
  /**
   * GENERATION_TIMEOUT_MS. The job's signal cancels a request at that point already; the SDK's own
   * limit (10 minutes by default) is set to it so that it can never cut a job short.
   */
  timeoutMs: number;
  /** Decodes the first frame of a returned video, to tell a video from garbage. */
  ffmpegPath: string;
  /** Gaps between polls of a video: the first, doubling up to the last. */
  pollMs?: { first: number; max: number };
  /** Where a failed poll is noted (it is not an error: polling goes on). */
  logger?: Logger;
}

/** Transient trouble with the model server (5xx, 429, unreachable, slow): thrown so that BullMQ tries again. */
export class UpstreamUnavailableError extends Error {
  override readonly name = 'UpstreamUnavailableError';
}

/** OpenAI's refusal codes for content: `content_policy_violation` (DALL·E), `moderation_blocked` (GPT image, Sora). */
const CONTENT_POLICY = new Set(['content_policy_violation', 'moderation_blocked']);
/** Codes for an input image the server cannot read; the server may instead name the field (`param`). */
const INVALID_IMAGE = new Set(['invalid_image', 'invalid_image_format', 'invalid_image_file', 'invalid_image_mode']);
const IMAGE_PARAM = /^(image|mask)(\[\d*\])?$/;
/**
 * OpenAI's GPT image models always answer `b64_json` and refuse `response_format` itself
 * (400 unknown_parameter), so it is not sent to them; other servers are asked for `b64_json`.
 */
const ALWAYS_BASE64 = /^(gpt-image|chatgpt-image)/;
/** Caps on what is read from a link or a video download: a broken server must not fill the disk. */
const MAX_IMAGE_BYTES = 64 * 1024 * 1024;
const MAX_VIDEO_BYTES = 1024 * 1024 * 1024;
const MESSAGE_CHARS = 200;

/**
 * Forwards jobs to a model server speaking OpenAI's Images and Videos APIs, through the official
 * `openai` SDK: images from `POST /images/generations` and `/images/edits`, videos from `POST /videos`,
 * polled at `GET /videos/{id}` and streamed from `GET /videos/{id}/content` to the output file.
 *
 * BullMQ owns retries (the SDK's own are off) and the job's signal owns cancellation. What comes
 * back is checked to be the asked-for format, and to decode, before the service stores it.
 */
export class OpenAiCompatibleBackend implements GeneratorBackend {
  private readonly client: OpenAI;
  /** Models that refused `response_format` once: never sent it again, answers are b64_json or url anyway. */
  private readonly refusesResponseFormat = new Set<string>();
  private readonly pollMs: { first: number; max: number };

  constructor(private readonly options: OpenAiCompatibleOptions) {
    this.client = new OpenAI({
      apiKey: options.apiKey,
      baseURL: options.baseUrl,
      // Every option the SDK would otherwise take from OPENAI_* variables is given here, so our config
      // module decides (the SDK still reads OPENAI_CUSTOM_HEADERS regardless; the README says so).
      organization: null,
      project: null,
      adminAPIKey: null,
      webhookSecret: null,
      logLevel: 'off',
      maxRetries: 0,
      timeout: options.timeoutMs,
    });
    this.pollMs = options.pollMs ?? { first: 250, max: 5_000 };
  }

  async generateImages(request: ImageRequest, signal: AbortSignal): Promise<Buffer[]> {
    return this.guard(signal, async () => {
      const model = this.upstreamModel(request.model);
      const body = { ...imageParams(model, request), ...(request.quality === 'auto' ? {} : { quality: request.quality }) };
      const answer = await this.askingForBase64(model, (extra) => this.client.images.generate({ ...body, ...extra }, { signal }));
      return this.imagesOf(answer, request, signal);
    });
  }

  async editImages(request: ImageEditRequest, signal: AbortSignal): Promise<Buffer[]> {
    return this.guard(signal, async () => {
      const model = this.upstreamModel(request.model);
      const files = await Promise.all(request.images.map((bytes, index) => asFile(bytes, `image-${index}`)));
      const body = {
        ...imageParams(model, request),
        ...editQuality(request.quality),
        // One upload goes as `image`, several as `image[]`: the two forms OpenAI documents, and the one
        // DALL·E 2 and most self-hosted servers take.
        image: files.length === 1 ? files[0]! : files,
        ...(request.mask ? { mask: await asFile(request.mask, 'mask') } : {}),
      };
      const answer = await this.askingForBase64(model, (extra) => this.client.images.edit({ ...body, ...extra }, { signal }));
      return this.imagesOf(answer, request, signal);
    });
  }

  async makeVideo(request: VideoRequest, onProgress: (percent: number) => void, signal: AbortSignal): Promise<void> {
    return this.guard(signal, async () => {
      const created = await this.client.videos.create(
        {
          model: this.upstreamModel(request.model),
          prompt: request.prompt,
          // The SDK's types list Sora's values; the server decides what it takes.
          seconds: String(request.seconds) as VideoSeconds,
          size: request.size as VideoSize,
        },
        { signal },
      );
      let video: Video = created;
      for (let gap = this.pollMs.first; video.status === 'queued' || video.status === 'in_progress'; gap = Math.min(gap * 2, this.pollMs.max)) {
        if (Number.isFinite(video.progress)) onProgress(Math.max(0, Math.min(99, Math.floor(video.progress))));
        await sleep(gap, undefined, { signal });
        video = (await this.stillPolling(created.id, signal)) ?? video;
      }
      if (video.status !== 'completed') throw this.videoFailed(video);
      const content = await this.client.videos.downloadContent(created.id, {}, { signal });
      if (!content.body) throw new UpstreamUnavailableError('the model server sent no video content');
      const body = Readable.fromWeb(content.body as WebReadableStream<Uint8Array>);
      await pipeline(body, capped(MAX_VIDEO_BYTES, 'video'), createWriteStream(request.outputPath), { signal });
      await this.checkVideo(request.outputPath, signal);
    });
  }

  /**
   * One poll of a video being made. A poll that fails for a passing reason (5xx, 429, no answer) is
   * shrugged off until the next one, the generation timeout bounding them all: failing the attempt
   * instead would make BullMQ's retry create, and pay for, a second video upstream.
   */
  private async stillPolling(id: string, signal: AbortSignal): Promise<Video | undefined> {
    try {
      return await this.client.videos.retrieve(id, { signal });
    } catch (err) {
      if (signal.aborted || !(this.translate(err) instanceof UpstreamUnavailableError)) throw err;
      this.options.logger?.warn('video poll failed; polling on', { upstream_video_id: id, error: String(this.translate(err)) });
      return undefined;
    }
  }

  private upstreamModel(ours: string): string {
    return this.options.modelMap.get(ours) ?? ours;
  }

  /** Asks for `b64_json` where the model takes the parameter; once more without it if the server refuses it. */
  private async askingForBase64<T>(model: string, send: (extra: { response_format?: 'b64_json' }) => Promise<T>): Promise<T> {
    if (ALWAYS_BASE64.test(model) || this.refusesResponseFormat.has(model)) return send({});
    try {
      return await send({ response_format: 'b64_json' });
    } catch (err) {
      if (!(err instanceof OpenAI.BadRequestError) || err.param !== 'response_format') throw err;
      this.refusesResponseFormat.add(model);
      return send({});
    }
  }

  private async imagesOf(answer: ImagesResponse, request: ImageRequest, signal: AbortSignal): Promise<Buffer[]> {
    // A server that is not what it claims may answer 200 with anything: nothing is assumed of the shape.
    const data: unknown = (answer as { data?: unknown } | undefined)?.data;
    if (!Array.isArray(data) || data.length === 0) throw refused('The model server answered without images.');
    // More than asked for is not charged, so not kept; fewer fails the job in the service.
    const images = await Promise.all(data.slice(0, request.n).map((item: unknown) => this.bytesOf(item, signal)));
    await Promise.all(images.map((bytes) => checkImage(bytes, request.format)));
    return images;
  }

  private async bytesOf(item: unknown, signal: AbortSignal): Promise<Buffer> {
    const { b64_json, url } = (item ?? {}) as { b64_json?: unknown; url?: unknown };
    if (typeof b64_json === 'string' && b64_json.length > 0) return Buffer.from(b64_json, 'base64');
    if (typeof url === 'string') return download(url, signal);
    throw refused('The model server answered with an image entry that has neither b64_json nor url.');
  }

  /** The file is an MP4 (its signature) whose first video frame decodes. */
  private async checkVideo(path: string, signal: AbortSignal): Promise<void> {
    const file = await open(path, 'r');
    const head = Buffer.alloc(12);
    try {
      await file.read(head, 0, head.length, 0);
    } finally {
      await file.close();
    }
    if (sniffMediaFormat(head) !== 'mp4') throw refused('The model server returned data that is not an MP4 video.');
    try {
      await run(this.options.ffmpegPath, ['-v', 'error', '-nostdin', '-i', path, '-map', '0:v:0', '-frames:v', '1', '-f', 'null', '-'], { signal });
    } catch (err) {
      // Our own trouble (no ffmpeg, a shutdown) is not the server's.
      if (signal.aborted || (err as NodeJS.ErrnoException).code === 'ENOENT') throw err;
      throw refused('The model server returned an MP4 without a decodable video stream.');
    }
  }

  private videoFailed(video: Video): PermanentGenerationError {
    const said = this.scrub(typeof video.error?.message === 'string' ? video.error.message : '');
    if (CONTENT_POLICY.has(String(video.error?.code))) return new PermanentGenerationError('moderation_blocked', `The model server refused the video: ${said}`);
    const status = video.status === 'failed' ? 'failed' : `ended ${JSON.stringify(String(video.status)).slice(0, 40)}`;
    return refused(`The model server ${status} the video${said ? `: ${said}` : '.'}`);
  }

  /**
   * Runs one operation and turns what the SDK throws into the service's two kinds of failure, with
   * messages that say what the server said, briefly, without anything secret.
   */
  private async guard<T>(signal: AbortSignal, work: () => Promise<T>): Promise<T> {
    try {
      return await work();
    } catch (err) {
      // A timeout or shutdown: the service already knows why; whatever the SDK made of it does not matter.
      if (signal.aborted) throw signal.reason ?? err;
      throw this.translate(err);
    }
  }

  private translate(err: unknown): unknown {
    if (err instanceof OpenAI.APIConnectionTimeoutError) {
      return new UpstreamUnavailableError(`the model server did not answer within ${this.options.timeoutMs} ms`);
    }
    if (err instanceof OpenAI.APIConnectionError) return new UpstreamUnavailableError(`could not reach the model server (${causeOf(err)})`);
    if (!(err instanceof OpenAI.APIError)) return err;
    const status = err.status;
    const body = err.error as { message?: unknown } | undefined;
    const said = this.scrub(typeof body?.message === 'string' ? body.message : '');
    // What OpenAI's own SDK retries: timeouts, lock conflicts, rate limits and server errors.
    if (status === undefined || status === 408 || status === 409 || status === 429 || status >= 500) {
      return new UpstreamUnavailableError(`the model server answered ${status ?? 'without a status'}${said ? `: ${said}` : ''}`);
    }
    if (CONTENT_POLICY.has(String(err.code))) return new PermanentGenerationError('moderation_blocked', `The model server refused the request: ${said}`);
    if (INVALID_IMAGE.has(String(err.code)) || IMAGE_PARAM.test(String(err.param))) {
      return new PermanentGenerationError('invalid_image', `The model server could not use an input image: ${said}`);
    }
    return refused(`The model server refused the request (${status})${said ? `: ${said}` : '.'}`);
  }

  /** Short, one line, and never a key: ours wherever it appears, and anything shaped like one. */
  private scrub(text: string): string {
    let out = text;
    if (this.options.apiKey.length >= 8) out = out.split(this.options.apiKey).join('[redacted]');
    out = out
      .replace(/\b(sk|rk|pk|key)[-_][A-Za-z0-9_*.-]{6,}/gi, '[redacted]')
      .replace(/\bBearer\s+\S+/gi, 'Bearer [redacted]')
      .replace(/\s+/g, ' ')
      .trim();
    return out.length > MESSAGE_CHARS ? `${out.slice(0, MESSAGE_CHARS - 1)}…` : out;
  }
}

function refused(message: string): PermanentGenerationError {
  return new PermanentGenerationError('generation_failed', message);
}

/** An upload as a named, typed file part, its type recognised from its bytes (the gateway stored nothing else). */
async function asFile(bytes: Buffer, name: string) {
  const type = MEDIA_TYPES[sniffImageFormat(bytes) ?? 'png'];
  return toFile(bytes, `${name}.${type.extension}`, { type: type.contentType });
}

/** The bytes behind an image link. Never with our Authorization: the link may lead to a CDN or a bucket. */
async function download(link: string, signal: AbortSignal): Promise<Buffer> {
  const url = URL.canParse(link) ? new URL(link) : undefined;
  if (!url || (url.protocol !== 'https:' && url.protocol !== 'http:')) throw refused('The model server answered with an image link that is not http(s).');
  let response: Response;
  try {
    response = await fetch(url, { signal });
  } catch (err) {
    if (signal.aborted) throw err;
    throw new UpstreamUnavailableError(`could not download an image from ${url.host} (${causeOf(err)})`);
  }
  if (!response.ok || !response.body) {
    await response.body?.cancel();
    throw new UpstreamUnavailableError(`the image link on ${url.host} answered ${response.status}`);
  }
  const chunks: Buffer[] = [];
  await pipeline(
    Readable.fromWeb(response.body as WebReadableStream<Uint8Array>),
    capped(MAX_IMAGE_BYTES, 'image'),
    async (source) => {
      for await (const chunk of source) chunks.push(chunk as Buffer);
    },
    { signal },
  );
  return Buffer.concat(chunks);
}

/** Passes bytes through until `limit`, then fails the stream. */
function capped(limit: number, what: string): Transform {
  let seen = 0;
  return new Transform({
    transform(chunk: Buffer, _encoding, done) {
      seen += chunk.length;
      if (seen > limit) done(refused(`The model server sent an ${what} larger than ${limit / (1024 * 1024)} MiB.`));
      else done(null, chunk);
    },
  });
}

/**
 * What generations and edits send alike. The client's `background` and `output_compression` (and
 * `quality`, beside each call) go only when it chose them: a server that does not know a parameter
 * may refuse it, and the defaults are the server's own.
 */
function imageParams(model: string, request: ImageRequest) {
  return {
    model,
    prompt: request.prompt,
    n: request.n,
    size: request.size,
    output_format: request.format,
    ...(request.background === 'auto' ? {} : { background: request.background }),
    // OpenAI takes it for jpeg and webp only; the gateway accepts (and ignores) it for png.
    ...(request.compression === null || request.format === 'png' ? {} : { output_compression: request.compression }),
  };
}

/** Edits have no `hd` (the gateway refuses it there too); DALL-E 3's `hd` means `high`. */
function editQuality(quality: ImageRequest['quality']) {
  if (quality === 'auto') return {};
  return { quality: quality === 'hd' ? ('high' as const) : quality };
}

/** The bytes are an image of the asked-for format, and decode to the end. */
async function checkImage(bytes: Buffer, format: ImageFormat): Promise<void> {
  const found = sniffImageFormat(bytes);
  if (found !== format) {
    throw refused(
      found ? `The model server returned a ${found} image where ${format} was asked for.` : `The model server returned data that is not a ${format} image.`,
    );
  }
  try {
    // failOn 'error' refuses a truncated file, and writing out the pixels decodes every one of them,
    // not only the header. One channel of them: a decode is a decode, and that is a third of the
    // memory. (stats() decodes them too, and then spends 15-20 times as long on statistics nobody
    // reads: 11 ms for a 256x256 PNG here, enough to cap one generator at about 140 images a second.)
    await sharp(bytes, { failOn: 'error' }).extractChannel(0).raw().toBuffer();
  } catch {
    throw refused(`The model server returned a ${format} image that does not decode.`);
  }
}

/** `ECONNREFUSED`, `ETIMEDOUT`…: the network's reason, never a message that could quote a request. */
function causeOf(err: unknown): string {
  let cause: unknown = err;
  for (let depth = 0; depth < 4 && cause; depth++) {
    const code = (cause as { code?: unknown }).code;
    if (typeof code === 'string' && /^[A-Z_]+$/.test(code)) return code;
    cause = (cause as { cause?: unknown }).cause;
  }
  return 'network error';
}
