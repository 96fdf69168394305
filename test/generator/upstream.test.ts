import sharp from 'sharp';
import { MODEL_CATALOG, type ImageModel } from '@media/domain';
import { apiError, OpenAiTestServer } from '../../services/generator/src/backends/test-support/openai-server';
import { eventually } from '../support/stack';
import { chargesFor, decodesCleanly, expectedVideoCost, finishedEvent, getBytes, probe, startGeneratorStack, watchVideo, type GeneratorStack } from './helpers';

// GENERATOR_BACKEND=openai-compatible end to end: the real gateway and generator processes, real
// Redis and blob store, and a model server on loopback that speaks OpenAI's Images and Videos APIs
// (services/generator/src/backends/test-support/openai-server.ts) and answers with real media.

const MODEL_MAP = 'pixel-1=gpt-image-1,motion-1=sora-2';
const price = (size: string) => (MODEL_CATALOG.find((m) => m.id === 'pixel-1') as ImageModel).pricePerImage[size]!;
let prompts = 0;
/** A prompt no other test sends, to find this test's requests on the model server. */
const uniquePrompt = (text: string) => `${text} #${++prompts}`;

async function expectFailedUncharged(t: GeneratorStack, id: string, code: string): Promise<void> {
  const record = await t.stack.jobs.get(id);
  expect(record).toMatchObject({ status: 'failed', cost: null, error: { code } });
  expect(await chargesFor(t.stack, t.ws.workspaceId, id)).toEqual([]);
  expect((await finishedEvent(t.events, id)).data).toEqual({ jobId: id, workspaceId: t.ws.workspaceId });
}

describe('generator: openai-compatible backend', () => {
  let upstream: OpenAiTestServer;
  let t: GeneratorStack;

  beforeAll(async () => {
    upstream = await OpenAiTestServer.start();
    t = await startGeneratorStack('upstream', { ...upstream.env, UPSTREAM_MODEL_MAP: MODEL_MAP, GENERATION_ATTEMPTS: '2' });
  });

  afterEach(() => upstream?.reset());

  afterAll(async () => {
    await t?.close();
    await upstream?.stop();
  });

  const generate = (prompt: string, extra: Record<string, unknown> = {}) =>
    t.call('/v1/images/generations', { method: 'POST', json: { model: 'pixel-1', prompt, size: '1024x1024', ...extra } });

  it('generates images through the model server: upstream ids and key, stored bytes are what it made, charged once', async () => {
    const prompt = uniquePrompt('a lighthouse at dusk');
    const res = await generate(prompt, { n: 2, output_format: 'webp' });
    expect(res.status).toBe(200);
    expect(res.json).toMatchObject({ status: 'completed', model: 'pixel-1', error: null });
    expect(res.json.cost).toBeCloseTo(2 * price('1024x1024'), 9);

    const [request, ...more] = upstream.requestsTo('images.generations', prompt);
    expect(more).toEqual([]);
    expect(request!.headers.authorization).toBe(`Bearer ${upstream.apiKey}`);
    expect(request!.fields).toEqual({ model: 'gpt-image-1', prompt, n: 2, size: '1024x1024', output_format: 'webp' });
    const made = (request!.answer!.json as { data: { b64_json: string }[] }).data.map((d) => Buffer.from(d.b64_json, 'base64'));

    expect(res.json.data).toHaveLength(2);
    for (const [index, item] of (res.json.data as { url: string }[]).entries()) {
      const download = await fetch(item.url);
      expect(download.headers.get('content-type')).toBe('image/webp');
      const bytes = Buffer.from(await download.arrayBuffer());
      expect(bytes.equals(made[index]!)).toBe(true);
      const meta = await sharp(bytes).metadata();
      expect([meta.format, meta.width, meta.height]).toEqual(['webp', 1024, 1024]);
    }
    const charges = await chargesFor(t.stack, t.ws.workspaceId, res.json.id);
    expect(charges.map((c) => c.amount)).toEqual([res.json.cost]);
  });

  it('edits an upload with a mask through the model server, charged once', async () => {
    const photo = await sharp({ create: { width: 96, height: 64, channels: 3, background: '#2a7f62' } })
      .png()
      .toBuffer();
    const mask = await sharp({ create: { width: 96, height: 64, channels: 4, background: { r: 0, g: 0, b: 0, alpha: 0 } } })
      .png()
      .toBuffer();
    const prompt = uniquePrompt('make it autumn');
    const form = new FormData();
    form.append('model', 'pixel-1');
    form.append('prompt', prompt);
    form.append('size', '512x512');
    form.append('image', new Blob([photo], { type: 'image/png' }), 'photo.png');
    form.append('mask', new Blob([mask], { type: 'image/png' }), 'mask.png');
    const res = await t.call('/v1/images/edits', { method: 'POST', body: form });
    expect(res.status).toBe(200);
    expect(res.json.status).toBe('completed');

    const [request] = upstream.requestsTo('images.edits', prompt);
    expect(request!.headers.authorization).toBe(`Bearer ${upstream.apiKey}`);
    expect(request!.fields).toMatchObject({ model: 'gpt-image-1', prompt, n: '1', size: '512x512', output_format: 'png' });
    expect(request!.files.map((f) => [f.field, f.contentType, f.bytes.length])).toEqual([
      ['image', 'image/png', photo.length],
      ['mask', 'image/png', mask.length],
    ]);
    const meta = await sharp(Buffer.from(await (await fetch(res.json.data[0].url)).arrayBuffer())).metadata();
    expect([meta.format, meta.width, meta.height]).toEqual(['png', 512, 512]);
    expect((await chargesFor(t.stack, t.ws.workspaceId, res.json.id)).map((c) => c.amount)).toEqual([price('512x512')]);
  });

  it('makes a video through create, poll and content: playable, charged once', async () => {
    const prompt = uniquePrompt('waves on a beach');
    const created = await t.call('/v1/videos', { method: 'POST', json: { model: 'motion-1', prompt, seconds: 2, size: '640x360' } });
    expect(created.status).toBe(200);
    const { video } = await watchVideo(t.call, created.json.id);
    expect(video).toMatchObject({ status: 'completed', progress: 100, error: null });
    expect(video.cost).toBeCloseTo(expectedVideoCost(2, false), 9);

    const [create] = upstream.requestsTo('videos.create', prompt);
    expect(create!.headers.authorization).toBe(`Bearer ${upstream.apiKey}`);
    expect(create!.fields).toEqual({ model: 'sora-2', prompt, seconds: '2', size: '640x360' });
    const upstreamId = (create!.answer!.json as { id: string }).id;
    expect(upstream.requests.filter((r) => r.path === `/v1/videos/${upstreamId}`).length).toBeGreaterThanOrEqual(1);
    expect(upstream.requests.filter((r) => r.path === `/v1/videos/${upstreamId}/content`)).toHaveLength(1);

    const content = await getBytes(t.stack, t.ws.apiKey, `/v1/videos/${video.id}/content`);
    expect(content.status).toBe(200);
    const info = await probe(content.bytes);
    expect(info.streams.find((s) => s.codec_type === 'video')).toMatchObject({ codec_name: 'h264', width: 640, height: 360 });
    expect(await decodesCleanly(content.bytes)).toBe('');
    expect(await chargesFor(t.stack, t.ws.workspaceId, video.id)).toHaveLength(1);
  });

  it('retries an upstream 500 and completes on the next attempt, charged once', async () => {
    const prompt = uniquePrompt('a red kite');
    upstream.script('images.generations', (n) =>
      n === 1 ? apiError(500, 'The server had an error while processing your request.', { type: 'server_error' }) : undefined,
    );
    const res = await generate(prompt, { size: '256x256' });
    expect(res.status).toBe(200);
    expect(res.json.status).toBe('completed');
    expect(upstream.requestsTo('images.generations', prompt).map((r) => r.answer?.status)).toEqual([500, 200]);
    expect((await chargesFor(t.stack, t.ws.workspaceId, res.json.id)).map((c) => c.amount)).toEqual([price('256x256')]);
  });

  it('fails generation_failed, uncharged, when the model server answers 500 on every attempt', async () => {
    const prompt = uniquePrompt('a castle in a storm');
    upstream.script('images.generations', () => apiError(500, 'The server had an error while processing your request.', { type: 'server_error' }));
    const res = await generate(prompt, { size: '256x256' });
    expect(res.status).toBe(500);
    expect(res.json.error).toMatchObject({ type: 'api_error', code: 'generation_failed' });
    // GENERATION_ATTEMPTS=2: both attempts reached the server, and then BullMQ gave up.
    expect(upstream.requestsTo('images.generations', prompt)).toHaveLength(2);
    await expectFailedUncharged(t, res.headers.get('x-request-id')!, 'generation_failed');
  });

  it('fails a content-policy refusal moderation_blocked at once: not retried, uncharged, with what the server said', async () => {
    const prompt = uniquePrompt('something the model refuses');
    upstream.script('images.generations', () =>
      apiError(400, 'Your request was rejected by the safety system.', { type: 'image_generation_user_error', code: 'moderation_blocked' }),
    );
    const res = await generate(prompt, { size: '256x256' });
    expect(res.status).toBe(400);
    expect(res.json.error).toMatchObject({ type: 'invalid_request_error', code: 'moderation_blocked' });
    expect(res.json.error.message).toBe('The model server refused the request: Your request was rejected by the safety system.');
    expect(upstream.requestsTo('images.generations', prompt)).toHaveLength(1);
    await expectFailedUncharged(t, res.headers.get('x-request-id')!, 'moderation_blocked');
  });

  it('fails an edit whose upload the model server cannot read invalid_image', async () => {
    // A PNG signature (the gateway sniffs uploads by it) in front of bytes no decoder reads.
    const broken = Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), Buffer.from('not image data '.repeat(20))]);
    const prompt = uniquePrompt('fix the colours');
    const form = new FormData();
    form.append('prompt', prompt);
    form.append('size', '256x256');
    form.append('image', new Blob([broken], { type: 'image/png' }), 'broken.png');
    const res = await t.call('/v1/images/edits', { method: 'POST', body: form });
    expect(res.status).toBe(400);
    expect(res.json.error).toMatchObject({ code: 'invalid_image' });
    expect(res.json.error.message).toMatch(/^The model server could not use an input image: /);
    expect(upstream.requestsTo('images.edits', prompt).map((r) => r.answer?.status)).toEqual([400]);
    await expectFailedUncharged(t, res.headers.get('x-request-id')!, 'invalid_image');
  });

  it('fails a job the model server answers with non-image bytes, and stores nothing', async () => {
    const prompt = uniquePrompt('a quiet harbour');
    upstream.script('images.generations', () => ({
      status: 200,
      json: { created: 1, data: [{ b64_json: Buffer.from('<html><body>Service temporarily overloaded</body></html>').toString('base64') }] },
    }));
    const res = await generate(prompt, { size: '256x256' });
    expect(res.status).toBe(500);
    expect(res.json.error).toMatchObject({ code: 'generation_failed', message: 'The model server returned data that is not a png image.' });
    const id = res.headers.get('x-request-id')!;
    expect(await t.stack.blobs.size(`${t.ws.workspaceId}/${id}/0.png`)).toBeUndefined();
    expect(await t.stack.jobs.get(id)).toMatchObject({ outputs: [] });
    await expectFailedUncharged(t, id, 'generation_failed');
  });

  it('fails a video the model server reports failed, uncharged', async () => {
    upstream.videoPlan = { fail: { code: 'internal_error', message: 'Video generation failed.' } };
    const created = await t.call('/v1/videos', {
      method: 'POST',
      json: { model: 'motion-1', prompt: uniquePrompt('a doomed voyage'), seconds: 2, size: '640x360' },
    });
    const { video } = await watchVideo(t.call, created.json.id);
    expect(video).toMatchObject({
      status: 'failed',
      url: null,
      cost: null,
      error: { code: 'generation_failed', message: 'The model server failed the video: Video generation failed.' },
    });
    const content = await t.call(`/v1/videos/${video.id}/content`);
    expect(content.status).toBe(409);
    await expectFailedUncharged(t, video.id, 'generation_failed');
  });

  it('never wrote the upstream key in a log line', () => {
    const generator = t.stack.service('generator');
    expect(generator.lines.length).toBeGreaterThan(0);
    expect(generator.hasLog((l) => l.message === 'generator started' && l.backend === 'openai-compatible')).toBe(true);
    expect(JSON.stringify(generator.lines)).not.toContain(upstream.apiKey);
    expect(generator.stderr).not.toContain(upstream.apiKey);
  });
});

describe('generator: openai-compatible backend, a model server that never answers', () => {
  let upstream: OpenAiTestServer;
  let t: GeneratorStack;

  beforeAll(async () => {
    upstream = await OpenAiTestServer.start();
    t = await startGeneratorStack('upstream-hang', { ...upstream.env, GENERATION_TIMEOUT_MS: '1000', GENERATION_ATTEMPTS: '1' });
  });

  afterAll(async () => {
    await t?.close();
    await upstream?.stop();
  });

  it('ends the job at GENERATION_TIMEOUT_MS with generation_failed, uncharged, and cancels the request', async () => {
    upstream.script('images.generations', () => 'hang');
    const prompt = uniquePrompt('a slow model');
    const res = await t.call('/v1/images/generations', { method: 'POST', json: { model: 'pixel-1', prompt, size: '256x256' } });
    expect(res.status).toBe(500);
    expect(res.json.error).toMatchObject({ code: 'generation_failed', message: 'Generation timed out.' });
    await expectFailedUncharged(t, res.headers.get('x-request-id')!, 'generation_failed');
    // The generator hung up on the request instead of leaving it open.
    const [request] = upstream.requestsTo('images.generations', prompt);
    await eventually(() => (request!.abandoned ? true : undefined), 5_000, 'the request to be cancelled');
    // Unmapped, the model went under our own id.
    expect(request!.fields.model).toBe('pixel-1');
  });
});
