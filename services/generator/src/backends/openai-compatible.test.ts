import { execFile } from 'node:child_process';
import { mkdtemp, rm, stat } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import sharp from 'sharp';
import { defaultFfmpegPath, defaultFfprobePath } from '@media/renderer';
import { PermanentGenerationError } from '../errors';
import type { ImageRequest } from './backend';
import { OpenAiCompatibleBackend, UpstreamUnavailableError } from './openai-compatible';
import { apiError, OpenAiTestServer } from './test-support/openai-server';

// The backend against a model server on loopback that speaks OpenAI's Images and Videos APIs (see
// test-support/openai-server.ts): real HTTP through the official SDK, real media both ways.

const run = promisify(execFile);
let upstream: OpenAiTestServer;
let dir: string;

beforeAll(async () => {
  upstream = await OpenAiTestServer.start();
  dir = await mkdtemp(join(tmpdir(), 'backend-test-'));
});

afterAll(async () => {
  await upstream?.stop();
  await rm(dir, { recursive: true, force: true });
});

afterEach(() => upstream.reset());

function backend(options: { apiKey?: string; map?: Record<string, string>; baseUrl?: string } = {}) {
  return new OpenAiCompatibleBackend({
    baseUrl: options.baseUrl ?? upstream.baseUrl,
    apiKey: options.apiKey ?? upstream.apiKey,
    modelMap: new Map(Object.entries(options.map ?? { 'pixel-1': 'gpt-image-1', 'motion-1': 'sora-2' })),
    timeoutMs: 20_000,
    ffmpegPath: defaultFfmpegPath(),
    pollMs: { first: 20, max: 100 },
  });
}

const signal = () => new AbortController().signal;
let prompts = 0;
/** A prompt no other test sends, to find this test's requests in the server's log. */
const uniquePrompt = (text: string) => `${text} #${++prompts}`;
const imageRequest = (prompt: string, extra: Partial<ImageRequest> = {}): ImageRequest => ({
  model: 'pixel-1',
  prompt,
  seed: 7,
  n: 1,
  size: '1024x1024',
  format: 'png',
  quality: 'auto',
  background: 'auto',
  compression: null,
  ...extra,
});

async function failure(promise: Promise<unknown>): Promise<Error> {
  try {
    await promise;
  } catch (err) {
    return err as Error;
  }
  throw new Error('expected a failure');
}

describe('openai-compatible backend: images', () => {
  it('generates through the model map with the key, sends what the job has, and returns decodable images of the asked format', async () => {
    const prompt = uniquePrompt('a lighthouse');
    const images = await backend().generateImages(imageRequest(prompt, { n: 2, size: '1536x1024', format: 'webp' }), signal());

    const [request] = upstream.requestsTo('images.generations', prompt);
    expect(request!.headers.authorization).toBe(`Bearer ${upstream.apiKey}`);
    expect(request!.headers['content-type']).toMatch(/^application\/json/);
    // GPT image models refuse response_format (and always answer b64_json): it is not sent to them.
    expect(request!.fields).toEqual({ model: 'gpt-image-1', prompt, n: 2, size: '1536x1024', output_format: 'webp' });
    expect(images).toHaveLength(2);
    for (const bytes of images) {
      const meta = await sharp(bytes).metadata();
      expect([meta.format, meta.width, meta.height]).toEqual(['webp', 1536, 1024]);
    }
    expect(images[0]!.equals(images[1]!)).toBe(false);
  });

  it('sends an unmapped model under its own id and asks other models for b64_json', async () => {
    const prompt = uniquePrompt('a fox');
    const [image] = await backend({ map: {} }).generateImages(imageRequest(prompt, { size: '256x256' }), signal());
    expect(upstream.requestsTo('images.generations', prompt)[0]!.fields).toMatchObject({ model: 'pixel-1', response_format: 'b64_json' });
    expect((await sharp(image!).metadata()).width).toBe(256);
  });

  it('asks once more without response_format when a server refuses it, and never sends it to that model again', async () => {
    upstream.script('images.generations', (_n, request) =>
      request.fields.response_format === undefined
        ? undefined
        : apiError(400, "Unknown parameter: 'response_format'.", { param: 'response_format', code: 'unknown_parameter' }),
    );
    const client = backend({ map: { 'pixel-1': 'flux-dev' } });
    const first = uniquePrompt('a castle');
    const second = uniquePrompt('a boat');
    await client.generateImages(imageRequest(first, { size: '256x256' }), signal());
    await client.generateImages(imageRequest(second, { size: '256x256' }), signal());
    expect(upstream.requestsTo('images.generations', first).map((r) => r.fields.response_format)).toEqual(['b64_json', undefined]);
    expect(upstream.requestsTo('images.generations', second).map((r) => r.fields.response_format)).toEqual([undefined]);
  });

  it('downloads images a server answers with links, without sending the key to the link', async () => {
    upstream.imageAnswer = 'url';
    const prompt = uniquePrompt('a kite');
    const before = upstream.requestsTo('files').length;
    const images = await backend().generateImages(imageRequest(prompt, { n: 2, size: '512x512', format: 'jpeg' }), signal());
    const downloads = upstream.requestsTo('files').slice(before);
    expect(downloads).toHaveLength(2);
    for (const download of downloads) expect(download.headers.authorization).toBeUndefined();
    for (const bytes of images) expect((await sharp(bytes).metadata()).format).toBe('jpeg');
  });

  it('edits: one upload as image, several as image[] with the mask, each with its own content type', async () => {
    const photo = await sharp({ create: { width: 64, height: 48, channels: 3, background: '#c83c1e' } })
      .jpeg()
      .toBuffer();
    const other = await sharp({ create: { width: 32, height: 32, channels: 3, background: '#1e3cc8' } })
      .webp()
      .toBuffer();
    const mask = await sharp({ create: { width: 64, height: 48, channels: 4, background: { r: 0, g: 0, b: 0, alpha: 0 } } })
      .png()
      .toBuffer();
    const single = uniquePrompt('make it autumn');
    const several = uniquePrompt('blend them');
    const client = backend();

    const [edited] = await client.editImages({ ...imageRequest(single, { size: '256x256' }), images: [photo], mask: undefined }, signal());
    const blended = await client.editImages({ ...imageRequest(several, { n: 2, size: '256x256' }), images: [photo, other], mask }, signal());

    const one = upstream.requestsTo('images.edits', single)[0]!;
    expect(one.headers['content-type']).toMatch(/^multipart\/form-data; boundary=/);
    expect(one.fields).toEqual({ model: 'gpt-image-1', prompt: single, n: '1', size: '256x256', output_format: 'png' });
    expect(one.files.map((f) => [f.field, f.contentType])).toEqual([['image', 'image/jpeg']]);
    expect(one.files[0]!.bytes.equals(photo)).toBe(true);
    const two = upstream.requestsTo('images.edits', several)[0]!;
    expect(two.files.map((f) => [f.field, f.contentType]).sort()).toEqual([
      ['image[]', 'image/jpeg'],
      ['image[]', 'image/webp'],
      ['mask', 'image/png'],
    ]);
    expect((await sharp(edited!).metadata()).width).toBe(256);
    expect(blended).toHaveLength(2);
  });

  it('keeps only the images asked for when a server sends more', async () => {
    upstream.script('images.generations', () => ({ status: 200, json: { created: 1, data: [] } }));
    const none = await failure(backend().generateImages(imageRequest(uniquePrompt('nothing')), signal()));
    expect(none).toBeInstanceOf(PermanentGenerationError);
    expect(none.message).toMatch(/without images/);

    const png = await sharp({ create: { width: 8, height: 8, channels: 3, background: '#000' } })
      .png()
      .toBuffer();
    upstream.script('images.generations', () => ({
      status: 200,
      json: { created: 1, data: [png, png, png].map((b) => ({ b64_json: b.toString('base64') })) },
    }));
    expect(await backend().generateImages(imageRequest(uniquePrompt('three'), { n: 2 }), signal())).toHaveLength(2);
  });
});

describe('openai-compatible backend: what comes back is checked', () => {
  const answer = (bytes: Buffer) =>
    upstream.script('images.generations', () => ({ status: 200, json: { created: 1, data: [{ b64_json: bytes.toString('base64') }] } }));

  const noisy = () => sharp({ create: { width: 256, height: 256, channels: 3, background: '#808080', noise: { type: 'gaussian', mean: 128, sigma: 40 } } });
  // Every format the catalog offers, cut short: the header alone would pass, the pixels do not decode.
  it.each([
    ['a truncated JPEG', 'jpeg', async () => (await noisy().jpeg().toBuffer()).subarray(0, 4000)],
    ['a truncated WebP', 'webp', async () => (await noisy().webp().toBuffer()).subarray(0, 4000)],
  ] as const)('fails a job for %s, permanently, with generation_failed', async (_what, format, make) => {
    answer(await make());
    const err = await failure(backend().generateImages(imageRequest(uniquePrompt('cut short'), { format }), signal()));
    expect(err).toBeInstanceOf(PermanentGenerationError);
    expect((err as PermanentGenerationError).code).toBe('generation_failed');
    expect(err.message).toMatch(/does not decode/);
  });

  it.each([
    ['text', () => Promise.resolve(Buffer.from('<html>Service temporarily overloaded</html>')), /not a png image/],
    [
      'a JPEG where PNG was asked',
      () =>
        sharp({ create: { width: 8, height: 8, channels: 3, background: '#fff' } })
          .jpeg()
          .toBuffer(),
      /jpeg image where png was asked/,
    ],
    [
      'a truncated PNG',
      async () =>
        (
          await sharp({ create: { width: 256, height: 256, channels: 3, background: '#808080', noise: { type: 'gaussian', mean: 128, sigma: 40 } } })
            .png()
            .toBuffer()
        ).subarray(0, 2000),
      /does not decode/,
    ],
  ])('fails a job for %s, permanently, with generation_failed', async (_what, make, message) => {
    answer(await make());
    const err = await failure(backend().generateImages(imageRequest(uniquePrompt('garbage')), signal()));
    expect(err).toBeInstanceOf(PermanentGenerationError);
    expect((err as PermanentGenerationError).code).toBe('generation_failed');
    expect(err.message).toMatch(message);
  });
});

describe('openai-compatible backend: failures', () => {
  const cases: [string, ReturnType<typeof apiError>, 'transient' | string, RegExp][] = [
    [
      'a 500',
      apiError(500, 'The server had an error while processing your request.', { type: 'server_error' }),
      'transient',
      /answered 500: The server had an error/,
    ],
    ['a 503 without a body', { status: 503, json: 'upstream overloaded' }, 'transient', /answered 503/],
    ['a 429', apiError(429, 'Rate limit reached for requests', { type: 'requests', code: 'rate_limit_exceeded' }), 'transient', /answered 429/],
    [
      'a content-policy refusal (GPT image)',
      apiError(400, 'Your request was rejected by the safety system.', { type: 'image_generation_user_error', code: 'moderation_blocked' }),
      'moderation_blocked',
      /^\[moderation_blocked\] The model server refused the request: Your request was rejected by the safety system\.$/,
    ],
    [
      'a content-policy refusal (DALL·E)',
      apiError(400, 'Your request was rejected as a result of our safety system.', { code: 'content_policy_violation' }),
      'moderation_blocked',
      /safety system/,
    ],
    [
      'an unreadable input',
      apiError(400, 'The image data you provided does not represent a valid image.', { param: 'image', code: 'invalid_value' }),
      'invalid_image',
      /could not use an input image/,
    ],
    [
      'an unknown model',
      apiError(404, "The model 'pixel-1' does not exist.", { code: 'model_not_found' }),
      'generation_failed',
      /refused the request \(404\): The model 'pixel-1' does not exist\./,
    ],
    [
      'another 400',
      apiError(400, "Invalid value: '256x256'. Supported values are: '1024x1024', '1024x1536', '1536x1024', and 'auto'.", { param: 'size' }),
      'generation_failed',
      /\(400\): Invalid value/,
    ],
  ];

  it.each(cases)('maps %s', async (_what, reply, expected, message) => {
    upstream.script('images.generations', () => reply);
    const err = await failure(backend().generateImages(imageRequest(uniquePrompt('refused')), signal()));
    if (expected === 'transient') {
      expect(err).toBeInstanceOf(UpstreamUnavailableError);
    } else {
      expect(err).toBeInstanceOf(PermanentGenerationError);
      expect((err as PermanentGenerationError).code).toBe(expected);
    }
    expect(err.message).toMatch(message);
  });

  it('never passes on the key: not ours, not a masked one the server quotes', async () => {
    const wrongKey = 'sk-proj-wrongkey0123456789abcdef';
    const err = await failure(backend({ apiKey: wrongKey }).generateImages(imageRequest(uniquePrompt('with a wrong key')), signal()));
    expect(err).toBeInstanceOf(PermanentGenerationError);
    expect(err.message).toMatch(/^\[generation_failed\] The model server refused the request \(401\): Incorrect API key provided: \[redacted\]/);
    expect(err.message).not.toMatch(/sk-|wrongkey|cdef/);

    upstream.script('images.generations', () => apiError(400, `bad request from ${upstream.apiKey} with Bearer ${upstream.apiKey}`));
    const echoed = await failure(backend().generateImages(imageRequest(uniquePrompt('echo')), signal()));
    expect(echoed.message).not.toContain(upstream.apiKey);
    expect(echoed.message.length).toBeLessThan(300);
  });

  it('is transient when the server cannot be reached', async () => {
    const closed = await new Promise<number>((resolve) => {
      const probe = createServer().listen(0, '127.0.0.1', () => {
        const { port } = probe.address() as { port: number };
        probe.close(() => resolve(port));
      });
    });
    const refused = await failure(backend({ baseUrl: `http://127.0.0.1:${closed}/v1` }).generateImages(imageRequest('x'), signal()));
    expect(refused).toBeInstanceOf(UpstreamUnavailableError);
    expect(refused.message).toMatch(/could not reach the model server \(ECONNREFUSED\)/);
  });

  it('cancels the request in flight when the job is aborted, and fails with the abort reason', async () => {
    upstream.script('images.generations', () => 'hang');
    const prompt = uniquePrompt('aborted');
    const controller = new AbortController();
    const pending = failure(backend().generateImages(imageRequest(prompt), controller.signal));
    const request = await waitFor(() => upstream.requestsTo('images.generations', prompt)[0]);
    const reason = new Error('generator shutting down');
    controller.abort(reason);
    expect(await pending).toBe(reason);
    await waitFor(() => (request.abandoned ? true : undefined));
  });
});

describe('openai-compatible backend: videos', () => {
  const videoRequest = (prompt: string, outputPath: string) => ({
    model: 'motion-1',
    prompt,
    seed: 1,
    seconds: 2,
    size: '640x360',
    withAudio: true,
    outputPath,
  });

  it('creates, polls until completed, and streams the content to the output file', async () => {
    const prompt = uniquePrompt('waves');
    const output = join(dir, 'made.mp4');
    const progress: number[] = [];
    await backend().makeVideo(videoRequest(prompt, output), (p) => progress.push(p), signal());

    const [create] = upstream.requestsTo('videos.create', prompt);
    expect(create!.headers.authorization).toBe(`Bearer ${upstream.apiKey}`);
    expect(create!.fields).toEqual({ model: 'sora-2', prompt, seconds: '2', size: '640x360' });
    const id = (create!.answer!.json as { id: string }).id;
    expect(upstream.requests.filter((r) => r.route === 'videos.retrieve' && r.path === `/v1/videos/${id}`).length).toBeGreaterThanOrEqual(1);
    expect(upstream.requests.filter((r) => r.route === 'videos.content' && r.path === `/v1/videos/${id}/content`)).toHaveLength(1);
    expect(progress.every((p) => p >= 0 && p < 100)).toBe(true);

    const { stdout } = await run(defaultFfprobePath(), ['-v', 'error', '-print_format', 'json', '-show_streams', '-show_format', output]);
    const info = JSON.parse(stdout) as { streams: { codec_type: string; codec_name: string; width?: number }[]; format: { duration: string } };
    expect(info.streams.find((s) => s.codec_type === 'video')).toMatchObject({ codec_name: 'h264', width: 640 });
    expect(Number(info.format.duration)).toBeCloseTo(2, 0);
  });

  it.each([
    [
      'failed',
      { fail: { code: 'internal_error', message: 'Video generation failed.' } },
      'generation_failed',
      /^\[generation_failed\] The model server failed the video: Video generation failed\.$/,
    ],
    [
      'failed by moderation',
      { fail: { code: 'moderation_blocked', message: 'This content may violate our usage policies.' } },
      'moderation_blocked',
      /refused the video: This content may violate/,
    ],
    ['completed, with JSON as its content', { content: Buffer.from('{"error":"not really a video"}') }, 'generation_failed', /not an MP4 video/],
    [
      'completed, with an MP4 header and nothing playable',
      { content: Buffer.concat([Buffer.from([0, 0, 0, 0x18]), Buffer.from('ftypmp42'), Buffer.alloc(64, 7)]) },
      'generation_failed',
      /without a decodable video stream/,
    ],
  ])('fails permanently for a video upstream reports %s', async (_what, plan, code, message) => {
    upstream.videoPlan = plan;
    const output = join(dir, 'doomed.mp4');
    const err = await failure(backend().makeVideo(videoRequest(uniquePrompt('doomed'), output), () => undefined, signal()));
    expect(err).toBeInstanceOf(PermanentGenerationError);
    expect((err as PermanentGenerationError).code).toBe(code);
    expect(err.message).toMatch(message);
    await rm(output, { force: true });
  });

  it('polls on past polls that fail for a passing reason, and creates no second video upstream', async () => {
    upstream.script('videos.retrieve', (n) => (n <= 2 ? apiError(502, 'Bad gateway', { type: 'server_error' }) : undefined));
    const prompt = uniquePrompt('polled');
    const output = join(dir, 'polled.mp4');
    await backend().makeVideo(videoRequest(prompt, output), () => undefined, signal());
    expect(upstream.requestsTo('videos.create', prompt)).toHaveLength(1);
    expect((await stat(output)).size).toBeGreaterThan(0);
    await rm(output, { force: true });
  });

  it("ends on the job's timeout when every poll fails, with its reason", async () => {
    upstream.script('videos.retrieve', () => apiError(503, 'Unavailable', { type: 'server_error' }));
    const controller = new AbortController();
    const timer = setTimeout(() => controller.abort(new Error('Generation timed out.')), 300);
    const err = await failure(backend().makeVideo(videoRequest(uniquePrompt('never'), join(dir, 'never.mp4')), () => undefined, controller.signal));
    clearTimeout(timer);
    expect(err.message).toBe('Generation timed out.');
    await expect(stat(join(dir, 'never.mp4'))).rejects.toThrow(/ENOENT/);
  });

  it('fails at once when a poll is refused for good (the video is unknown upstream)', async () => {
    upstream.script('videos.retrieve', () => apiError(404, 'No such video', { type: 'invalid_request_error' }));
    const err = await failure(backend().makeVideo(videoRequest(uniquePrompt('gone'), join(dir, 'gone.mp4')), () => undefined, signal()));
    expect(err).toBeInstanceOf(PermanentGenerationError);
    expect(err.message).toMatch(/404/);
  });
});

async function waitFor<T>(check: () => T | undefined, timeoutMs = 5_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = check();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 20));
  }
}
