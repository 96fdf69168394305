import { spawn } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { createReadStream } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import type { Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import express, { type NextFunction, type Request, type Response } from 'express';
import multer from 'multer';
import sharp from 'sharp';
import { defaultFfmpegPath } from '@media/renderer';

/**
 * A model server on loopback speaking the part of OpenAI's HTTP API that the openai-compatible
 * backend uses, as OpenAI documents and answers it: `POST /v1/images/generations` (JSON),
 * `POST /v1/images/edits` (multipart, `image` or `image[]` and `mask`), `POST /v1/videos` (multipart
 * as the SDK sends it, or JSON), `GET /v1/videos/{id}`, `GET /v1/videos/{id}/content`; Bearer keys,
 * and errors as `{"error":{"message","type","param","code"}}`. A real model cannot run here, so it
 * answers with real media made on the spot: images by sharp, MP4s (H.264/AAC) by ffmpeg.
 *
 * OpenAI's own behaviour is the default: GPT image models (`gpt-image-*`) answer `b64_json` and
 * refuse `response_format`; others (DALL·E) answer `url` unless asked for `b64_json`. Tests change
 * one route's answers with {@link script}, or what its videos end as with {@link videoPlan}.
 */

export type Route = 'images.generations' | 'images.edits' | 'videos.create' | 'videos.retrieve' | 'videos.content' | 'files';

export interface UpstreamRequest {
  route: Route;
  method: string;
  path: string;
  /** Lower-case names. */
  headers: Record<string, string | undefined>;
  /** JSON body, or the text fields of a multipart body. */
  fields: Record<string, unknown>;
  files: { field: string; filename: string; contentType: string; bytes: Buffer }[];
  /** The client went away before an answer was written (a cancelled or timed-out request). */
  abandoned: boolean;
  /** The status and JSON answered, once answered. */
  answer?: { status: number; json?: unknown };
}

/** A scripted answer; `undefined` from a script means "answer as OpenAI would". */
export type Reply =
  | { status: number; json: unknown }
  | { status: number; bytes: Buffer; contentType: string }
  /** A file streamed as the body, as a real server sends large content. */
  | { status: number; file: string; contentType: string }
  /** Never answer, until the client gives up or the server stops. */
  | 'hang';

type Answer = Exclude<Reply, 'hang'>;

/** Decides the answer to the `n`th request (1-based) of a route. */
export type Script = (n: number, request: UpstreamRequest) => Reply | undefined;

/** How the next videos end: made (default), failed with an error, or "completed" with other bytes as content. */
export interface VideoPlan {
  fail?: { code: string; message: string };
  content?: Buffer;
}

interface StoredVideo {
  object: Record<string, unknown> & { id: string; status: string; progress: number };
  file?: string;
  content?: Buffer;
  plan: VideoPlan;
  done: Promise<void>;
}

/** OpenAI's error shape, with its status. */
export function apiError(status: number, message: string, extra: { type?: string; param?: string | null; code?: string | null } = {}): Answer {
  return { status, json: { error: { message, type: extra.type ?? 'invalid_request_error', param: extra.param ?? null, code: extra.code ?? null } } };
}

const IMAGE_TYPES: Record<string, string> = { png: 'image/png', jpeg: 'image/jpeg', webp: 'image/webp' };

export class OpenAiTestServer {
  readonly requests: UpstreamRequest[] = [];
  /** `openai`: as OpenAI answers (above). `url`: as many self-hosted servers do, always a link, whatever was asked. */
  imageAnswer: 'openai' | 'url' = 'openai';
  videoPlan: VideoPlan = {};
  private readonly scripts = new Map<Route, Script>();
  private readonly counts = new Map<Route, number>();
  private readonly videos = new Map<string, StoredVideo>();
  private readonly files = new Map<string, { bytes: Buffer; contentType: string }>();
  private readonly hanging = new Set<Response>();

  private constructor(
    private readonly server: Server,
    private readonly dir: string,
    readonly apiKey: string,
    private readonly ffmpegPath: string,
  ) {}

  static async start(apiKey = `sk-test-${randomBytes(12).toString('hex')}`): Promise<OpenAiTestServer> {
    const dir = await mkdtemp(join(tmpdir(), 'openai-test-'));
    const app = express();
    const server = app.listen(0, '127.0.0.1');
    await once(server, 'listening');
    const upstream = new OpenAiTestServer(server, dir, apiKey, defaultFfmpegPath());
    upstream.mount(app);
    return upstream;
  }

  get origin(): string {
    return `http://127.0.0.1:${(this.server.address() as { port: number }).port}`;
  }

  /** What UPSTREAM_BASE_URL points at. */
  get baseUrl(): string {
    return `${this.origin}/v1`;
  }

  /** The generator settings that point the openai-compatible backend here. */
  get env(): Record<string, string> {
    return { GENERATOR_BACKEND: 'openai-compatible', UPSTREAM_BASE_URL: this.baseUrl, UPSTREAM_API_KEY: this.apiKey };
  }

  script(route: Route, script: Script): void {
    this.scripts.set(route, script);
    this.counts.set(route, 0);
  }

  /** The requests of one route, optionally only those whose `prompt` field is this one. */
  requestsTo(route: Route, prompt?: string): UpstreamRequest[] {
    return this.requests.filter((r) => r.route === route && (prompt === undefined || r.fields.prompt === prompt));
  }

  /** Back to OpenAI's behaviour; the request log stays. */
  reset(): void {
    this.scripts.clear();
    this.counts.clear();
    this.imageAnswer = 'openai';
    this.videoPlan = {};
  }

  async stop(): Promise<void> {
    for (const res of this.hanging) res.destroy();
    this.server.closeAllConnections();
    await new Promise<void>((done) => this.server.close(() => done()));
    await Promise.all([...this.videos.values()].map((v) => v.done.catch(() => undefined)));
    await rm(this.dir, { recursive: true, force: true });
  }

  private mount(app: express.Express): void {
    const upload = multer({ storage: multer.memoryStorage(), limits: { fileSize: 50 * 1024 * 1024 } });
    const v1 = express.Router();
    v1.use((req, res, next) => {
      if (req.headers.authorization === `Bearer ${this.apiKey}`) return next();
      // OpenAI's answer to a wrong key quotes it, masked; the backend must never pass even that on.
      const given = /^Bearer (.*)$/.exec(req.headers.authorization ?? '')?.[1] ?? '';
      const masked = given.length > 8 ? `${given.slice(0, 6)}${'*'.repeat(given.length - 10)}${given.slice(-4)}` : given;
      return send(
        res,
        apiError(401, `Incorrect API key provided: ${masked}. You can find your API key at https://platform.openai.com/account/api-keys.`, {
          code: 'invalid_api_key',
        }),
      );
    });
    v1.post(
      '/images/generations',
      express.json({ limit: '1mb' }),
      this.handle('images.generations', (r) => this.generate(r)),
    );
    v1.post(
      '/images/edits',
      upload.any(),
      this.handle('images.edits', (r) => this.edit(r)),
    );
    v1.post(
      '/videos',
      upload.any(),
      express.json(),
      this.handle('videos.create', (r) => this.createVideo(r)),
    );
    v1.get(
      '/videos/:id',
      this.handle('videos.retrieve', (_r, req) => this.retrieveVideo(String(req.params.id))),
    );
    v1.get(
      '/videos/:id/content',
      this.handle('videos.content', (_r, req) => this.videoContent(String(req.params.id))),
    );
    app.use('/v1', v1);
    // Links of `url` answers: outside the API and without authentication, like a CDN's.
    app.get(
      '/files/:name',
      this.handle('files', (_r, req) => {
        const file = this.files.get(String(req.params.name));
        return file ? { status: 200, bytes: file.bytes, contentType: file.contentType } : { status: 404, json: { error: 'not found' } };
      }),
    );
    app.use((err: Error, _req: Request, res: Response, _next: NextFunction) => send(res, apiError(400, `Could not parse the request: ${err.message}`)));
  }

  /** Records the request, then answers with the route's script or, by default, `answer`. */
  private handle(route: Route, answer: (request: UpstreamRequest, req: Request) => Promise<Reply> | Reply) {
    return async (req: Request, res: Response) => {
      const body: unknown = req.body;
      const request: UpstreamRequest = {
        route,
        method: req.method,
        path: req.originalUrl,
        headers: Object.fromEntries(Object.entries(req.headers).map(([k, v]) => [k, Array.isArray(v) ? v.join(', ') : v])),
        fields: body && typeof body === 'object' ? { ...(body as Record<string, unknown>) } : {},
        files: ((req.files as Express.Multer.File[] | undefined) ?? []).map((f) => ({
          field: f.fieldname,
          filename: f.originalname,
          contentType: f.mimetype,
          bytes: f.buffer,
        })),
        abandoned: false,
      };
      this.requests.push(request);
      res.on('close', () => {
        if (!res.writableFinished) request.abandoned = true;
        this.hanging.delete(res);
      });
      const n = (this.counts.get(route) ?? 0) + 1;
      this.counts.set(route, n);
      const reply = this.scripts.get(route)?.(n, request) ?? (await answer(request, req));
      if (reply === 'hang') {
        this.hanging.add(res);
        return;
      }
      request.answer = { status: reply.status, ...('json' in reply ? { json: reply.json } : {}) };
      send(res, reply);
    };
  }

  private async generate(request: UpstreamRequest): Promise<Reply> {
    const { prompt, model = 'dall-e-2', n = 1, size = 'auto', output_format = 'png', response_format } = request.fields as Record<string, any>;
    if (typeof prompt !== 'string' || prompt === '')
      return apiError(400, "Missing required parameter: 'prompt'.", { param: 'prompt', code: 'missing_required_parameter' });
    const problem = this.checkImageParams(model, n, size, output_format, response_format);
    if (problem) return problem;
    const images = await Promise.all(Array.from({ length: Number(n) }, (_, i) => picture(`${model}/${prompt}/${i}`, size, output_format)));
    return this.imagesAnswer(model, images, output_format, size, response_format);
  }

  private async edit(request: UpstreamRequest): Promise<Reply> {
    const { prompt, model = 'dall-e-2', n = '1', size = 'auto', output_format = 'png', response_format } = request.fields as Record<string, any>;
    if (typeof prompt !== 'string' || prompt === '')
      return apiError(400, "Missing required parameter: 'prompt'.", { param: 'prompt', code: 'missing_required_parameter' });
    const inputs = request.files.filter((f) => f.field === 'image' || f.field === 'image[]');
    if (inputs.length === 0) return apiError(400, "Missing required parameter: 'image'.", { param: 'image', code: 'missing_required_parameter' });
    const problem = this.checkImageParams(model, Number(n), size, output_format, response_format);
    if (problem) return problem;
    for (const file of [...inputs, ...request.files.filter((f) => f.field === 'mask')]) {
      try {
        await sharp(file.bytes, { failOn: 'error' }).stats();
      } catch {
        return apiError(400, 'The image data you provided does not represent a valid image.', {
          param: file.field === 'mask' ? 'mask' : 'image',
          code: 'invalid_value',
        });
      }
    }
    const { width, height } = dimensions(size);
    const images = await Promise.all(
      Array.from({ length: Number(n) }, (_, i) =>
        sharp(inputs[0]!.bytes)
          .resize(width, height, { fit: 'cover' })
          .modulate({ hue: 40 * (i + 1) })
          .toFormat(output_format as keyof sharp.FormatEnum)
          .toBuffer(),
      ),
    );
    return this.imagesAnswer(model, images, output_format, size, response_format);
  }

  private checkImageParams(model: string, n: number, size: string, format: string, responseFormat: unknown): Reply | undefined {
    if (responseFormat !== undefined && /^gpt-image/.test(model)) {
      return apiError(400, "Unknown parameter: 'response_format'.", { param: 'response_format', code: 'unknown_parameter' });
    }
    if (!Number.isInteger(Number(n)) || Number(n) < 1 || Number(n) > 10)
      return apiError(400, `Invalid 'n': integer between 1 and 10 expected.`, { param: 'n', code: 'invalid_value' });
    if (size !== 'auto' && !/^\d{2,4}x\d{2,4}$/.test(size)) return apiError(400, `Invalid value: '${size}'.`, { param: 'size', code: 'invalid_value' });
    if (!(format in IMAGE_TYPES)) return apiError(400, `Invalid value: '${format}'.`, { param: 'output_format', code: 'invalid_value' });
    if (responseFormat !== undefined && responseFormat !== 'url' && responseFormat !== 'b64_json') {
      return apiError(400, `Invalid value: '${String(responseFormat)}'.`, { param: 'response_format', code: 'invalid_value' });
    }
    return undefined;
  }

  private imagesAnswer(model: string, images: Buffer[], format: string, size: string, responseFormat: unknown): Reply {
    const asUrl = this.imageAnswer === 'url' || (!/^gpt-image/.test(model) && responseFormat !== 'b64_json');
    const data = images.map((bytes) => {
      if (!asUrl) return { b64_json: bytes.toString('base64') };
      const name = `${randomBytes(8).toString('hex')}.${format}`;
      this.files.set(name, { bytes, contentType: IMAGE_TYPES[format]! });
      return { url: `${this.origin}/files/${name}` };
    });
    return { status: 200, json: { created: Math.floor(Date.now() / 1000), data, output_format: format, size, usage: { total_tokens: 0 } } };
  }

  private createVideo(request: UpstreamRequest): Reply {
    const { prompt, model = 'sora-2', seconds = '4', size = '720x1280' } = request.fields as Record<string, string>;
    if (typeof prompt !== 'string' || prompt === '')
      return apiError(400, "Missing required parameter: 'prompt'.", { param: 'prompt', code: 'missing_required_parameter' });
    if (!/^\d{1,2}$/.test(String(seconds)) || Number(seconds) < 1)
      return apiError(400, `Invalid value: '${seconds}'.`, { param: 'seconds', code: 'invalid_value' });
    if (!/^\d{2,4}x\d{2,4}$/.test(size)) return apiError(400, `Invalid value: '${size}'.`, { param: 'size', code: 'invalid_value' });
    const id = `video_${randomBytes(12).toString('hex')}`;
    const object = {
      id,
      object: 'video',
      model,
      status: 'queued',
      progress: 0,
      created_at: Math.floor(Date.now() / 1000),
      completed_at: null as number | null,
      expires_at: null as number | null,
      error: null as unknown,
      prompt,
      remixed_from_video_id: null,
      seconds: String(seconds),
      size,
    };
    const plan = this.videoPlan;
    const stored: StoredVideo = { object, plan, done: Promise.resolve() };
    stored.done = this.makeVideo(stored, Number(seconds), size).catch((err: Error) => {
      Object.assign(object, { status: 'failed', error: { code: 'internal_error', message: err.message.slice(0, 200) } });
    });
    this.videos.set(id, stored);
    return { status: 200, json: object };
  }

  /** Made in the background, as a model would: the client sees queued, then in_progress, then the end. */
  private async makeVideo(video: StoredVideo, seconds: number, size: string): Promise<void> {
    await new Promise((r) => setImmediate(r));
    video.object.status = 'in_progress';
    video.object.progress = 30;
    if (video.plan.fail) {
      Object.assign(video.object, { status: 'failed', error: video.plan.fail });
      return;
    }
    if (video.plan.content) {
      video.content = video.plan.content;
    } else {
      const file = join(this.dir, `${video.object.id}.mp4`);
      const [w, h] = size.split('x');
      await run(this.ffmpegPath, [
        '-hide_banner',
        '-loglevel',
        'error',
        '-nostdin',
        '-y',
        '-f',
        'lavfi',
        '-i',
        `testsrc2=size=${w}x${h}:rate=24:duration=${seconds}`,
        '-f',
        'lavfi',
        '-i',
        `sine=frequency=440:duration=${seconds}`,
        '-c:v',
        'libx264',
        '-preset',
        'ultrafast',
        '-pix_fmt',
        'yuv420p',
        '-c:a',
        'aac',
        '-shortest',
        '-movflags',
        '+faststart',
        '-f',
        'mp4',
        file,
      ]);
      video.file = file;
    }
    Object.assign(video.object, { status: 'completed', progress: 100, completed_at: Math.floor(Date.now() / 1000) });
  }

  private retrieveVideo(id: string): Reply {
    const video = this.videos.get(id);
    return video ? { status: 200, json: video.object } : apiError(404, `Video with id '${id}' not found.`, { code: 'not_found' });
  }

  private videoContent(id: string): Reply {
    const video = this.videos.get(id);
    if (!video) return apiError(404, `Video with id '${id}' not found.`, { code: 'not_found' });
    if (video.object.status !== 'completed') return apiError(404, 'Video is not ready yet, check the status before downloading.', { code: 'not_found' });
    if (video.content) return { status: 200, bytes: video.content, contentType: 'video/mp4' };
    return { status: 200, file: video.file!, contentType: 'video/mp4' };
  }
}

function send(res: Response, reply: Answer): void {
  if ('json' in reply) {
    res.status(reply.status).json(reply.json);
  } else if ('file' in reply) {
    res.status(reply.status).type(reply.contentType);
    createReadStream(reply.file).pipe(res);
  } else {
    res.status(reply.status).type(reply.contentType).send(reply.bytes);
  }
}

function dimensions(size: string): { width: number; height: number } {
  const [width, height] = size === 'auto' ? [1024, 1024] : size.split('x').map(Number);
  return { width: width!, height: height! };
}

/** A picture whose colours follow the prompt, so different requests give different bytes. */
function picture(seed: string, size: string, format: string): Promise<Buffer> {
  const { width, height } = dimensions(size);
  const [r, g, b] = createHash('sha256').update(seed).digest();
  const svg = `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}">
    <rect width="100%" height="100%" fill="rgb(${r},${g},${b})"/>
    <circle cx="${width / 2}" cy="${height / 2}" r="${Math.min(width, height) / 3}" fill="rgb(${b},${r},${g})"/></svg>`;
  return sharp(Buffer.from(svg))
    .toFormat(format as keyof sharp.FormatEnum)
    .toBuffer();
}

function run(command: string, args: string[]): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    child.once('error', reject);
    child.once('close', (code) => (code === 0 ? resolve() : reject(new Error(`ffmpeg exited with ${code}: ${stderr}`))));
  });
}
