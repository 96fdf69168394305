import sharp from 'sharp';
import type { VideoJob } from '@media/domain';
import { bullQueue } from '../generator/helpers';
import { expectApiError, multipartBody } from '../support/http';
import { api, TestStack, type TestWorkspace } from '../support/stack';

/**
 * What the gateway accepts and stores for the openai SDK's image parameters and for video remixes.
 * No generator runs, so accepted jobs stay as the gateway stored them; a completed source video is
 * made by finishing its record as the generator would.
 */
let stack: TestStack;
let ws: TestWorkspace;
let call: ReturnType<typeof api>;

beforeAll(async () => {
  stack = await TestStack.start(['api-gateway'], {}, { inProcess: true });
  ws = await stack.createWorkspace('compat');
  call = api(stack, ws.apiKey);
});

afterAll(async () => {
  await stack?.stop();
});

const HOOK = 'https://93.184.215.14/hook';
const PNG = () =>
  sharp({ create: { width: 16, height: 16, channels: 3, background: '#336699' } })
    .png()
    .toBuffer();

/** An image request with a callback: answered at once with 202, so no generator is needed. */
const postImage = (path: string, fields: Record<string, unknown>, headers: Record<string, string> = {}) =>
  call(path, { method: 'POST', json: { prompt: 'a red kite', size: '256x256', callback_url: HOOK, ...fields }, headers });

/** A multipart edit with form fields only as strings, as the SDK sends them. */
async function postEditForm(fields: Record<string, string>) {
  const { body, contentType } = multipartBody([
    { name: 'prompt', value: 'warmer' },
    { name: 'callback_url', value: HOOK },
    ...Object.entries(fields).map(([name, value]) => ({ name, value })),
    { name: 'image', value: await PNG(), filename: 'a.png', type: 'image/png' },
  ]);
  return call('/v1/images/edits', { method: 'POST', body, headers: { 'content-type': contentType } });
}

describe('image parameters over HTTP', () => {
  it('stores what the renderer applies, for generations, JSON edits and multipart edits', async () => {
    const generation = await postImage('/v1/images/generations', {
      quality: 'low',
      background: 'transparent',
      output_format: 'webp',
      output_compression: 30,
      moderation: 'low',
      style: 'vivid',
    });
    expect(generation.status).toBe(202);
    expect(await stack.jobs.get(generation.json.id)).toMatchObject({
      quality: 'low',
      background: 'transparent',
      output_format: 'webp',
      output_compression: 30,
    });

    const json = await postImage('/v1/images/edits', {
      image: `data:image/png;base64,${(await PNG()).toString('base64')}`,
      quality: 'high',
      input_fidelity: 'high',
    });
    expect(json.status).toBe(202);
    expect(await stack.jobs.get(json.json.id)).toMatchObject({ operation: 'edit', quality: 'high', background: 'auto', output_compression: null });

    const form = await postEditForm({
      quality: 'medium',
      background: 'opaque',
      output_format: 'jpeg',
      output_compression: '45',
      partial_images: '1',
      stream: 'false',
    });
    expect(form.status).toBe(202);
    expect(await stack.jobs.get(form.json.id)).toMatchObject({
      operation: 'edit',
      quality: 'medium',
      background: 'opaque',
      output_format: 'jpeg',
      output_compression: 45,
    });

    const plain = await postImage('/v1/images/generations', {});
    expect(await stack.jobs.get(plain.json.id)).toMatchObject({ quality: 'auto', background: 'auto', output_compression: null });
  });

  it('answers a bad value, in JSON or in a form, with a 400 naming it in the error shape', async () => {
    const cases: [Record<string, unknown>, string, string][] = [
      [{ quality: 'best' }, 'quality', 'invalid_value'],
      [{ background: 'none' }, 'background', 'invalid_value'],
      [{ background: 'transparent', output_format: 'jpeg' }, 'background', 'invalid_value'],
      [{ output_compression: 150 }, 'output_compression', 'invalid_value'],
      [{ partial_images: 9 }, 'partial_images', 'invalid_value'],
      [{ stream: true }, 'stream', 'unsupported_value'],
      [{ style: 'cartoon' }, 'style', 'invalid_value'],
      [{ input_fidelity: 'high' }, 'input_fidelity', 'unknown_parameter'],
    ];
    for (const [fields, param, code] of cases) {
      expectApiError(await postImage('/v1/images/generations', fields), 400, { type: 'invalid_request_error', param, code });
    }
    const formCases: [Record<string, string>, string, string][] = [
      [{ quality: 'hd' }, 'quality', 'invalid_value'],
      [{ output_compression: 'max' }, 'output_compression', 'invalid_value'],
      [{ stream: 'true' }, 'stream', 'unsupported_value'],
      [{ background: 'transparent', output_format: 'jpeg' }, 'background', 'invalid_value'],
      [{ moderation: 'low' }, 'moderation', 'unknown_parameter'],
    ];
    for (const [fields, param, code] of formCases) {
      expectApiError(await postEditForm(fields), 400, { type: 'invalid_request_error', param, code });
    }
  });

  it('fingerprints every parameter for Idempotency-Key: another value is another request, a default is no change', async () => {
    const key = (name: string) => ({ 'idempotency-key': `${name}-${Date.now()}` });
    const low = key('quality');
    const first = await postImage('/v1/images/generations', { quality: 'low' }, low);
    expect(first.status).toBe(202);
    expect((await postImage('/v1/images/generations', { quality: 'low' }, low)).json.id).toBe(first.json.id);
    for (const other of [
      { quality: 'high' },
      { quality: 'low', output_compression: 50, output_format: 'webp' },
      { quality: 'low', user: 'someone' },
      { quality: 'low', style: 'natural' },
    ]) {
      expectApiError(await postImage('/v1/images/generations', other, low), 409, { code: 'idempotency_key_reused' });
    }

    // A documented default, spelled out or sent as null, is the same request as leaving it out.
    const plain = key('plain');
    const original = await postImage('/v1/images/generations', {}, plain);
    for (const same of [
      { quality: 'auto', background: 'auto', moderation: 'auto' },
      { quality: null, stream: false, output_compression: null },
    ]) {
      const replay = await postImage('/v1/images/generations', same, plain);
      expect([replay.status, replay.json.id, replay.headers.get('idempotent-replayed')]).toEqual([202, original.json.id, 'true']);
    }
  });
});

describe('POST /v1/videos/{id}/remix', () => {
  const source = { prompt: 'a lighthouse at dusk', seconds: 3, size: '360x640', generate_audio: true, seed: 1234 };

  /** A video accepted through the API and finished in the store, as the generator finishes one. */
  async function completedVideo(who = call): Promise<VideoJob> {
    const created = await who('/v1/videos', { method: 'POST', json: source });
    const job = (await stack.jobs.get(created.json.id)) as VideoJob;
    const done: VideoJob = {
      ...job,
      status: 'completed',
      progress: 100,
      finished_ms: Date.now(),
      cost: 0.36,
      output: `${job.workspace_id}/${job.id}/video.mp4`,
    };
    await stack.jobs.finish(done, null);
    return done;
  }

  const remix = (id: string, body: unknown, headers: Record<string, string> = {}, who = call) =>
    who(`/v1/videos/${id}/remix`, { method: 'POST', json: body, headers });

  it('queues a new video with the source’s model, seconds, size, audio and seed, and its own prompt and callback', async () => {
    const src = await completedVideo();
    const res = await remix(src.id, { prompt: 'a lighthouse at night in a storm', callback_url: HOOK });
    expect(res.status).toBe(200);
    expect(res.json).toMatchObject({
      object: 'video',
      status: 'queued',
      progress: 0,
      model: 'motion-1',
      seconds: 3,
      size: '360x640',
      resolution: '360p',
      aspect_ratio: '9:16',
      generate_audio: true,
      prompt: 'a lighthouse at night in a storm',
      remixed_from_video_id: src.id,
      callback_url: HOOK,
      cost: null,
      url: null,
    });
    expect(res.json.id).toMatch(/^video_/);
    expect(res.json.id).not.toBe(src.id);
    expect(await stack.jobs.get(res.json.id)).toMatchObject({ seed: 1234, remixed_from_video_id: src.id, workspace_id: ws.workspaceId });
    expect((await call(`/v1/videos/${res.json.id}`)).json.remixed_from_video_id).toBe(src.id);
    expect((await call(`/v1/videos/${src.id}`)).json.remixed_from_video_id).toBeNull();

    // On the generation queue like any new video.
    const generation = bullQueue(stack, 'generation');
    try {
      expect((await generation.getJob(res.json.id))?.name).toBe('generate-video');
    } finally {
      await generation.close();
    }
    const listed = await call('/v1/videos?limit=1');
    expect(listed.json.data[0].id).toBe(res.json.id);
  });

  it('answers 404 for an unknown video, an image request and another workspace’s video', async () => {
    const image = await postImage('/v1/images/generations', {});
    const otherCall = api(stack, (await stack.createWorkspace('compat-other')).apiKey);
    const theirs = await completedVideo(otherCall);
    for (const id of ['video_missing', image.json.id, theirs.id]) {
      expectApiError(await remix(id, { prompt: 'x' }), 404, { type: 'not_found_error', code: 'not_found' });
    }
  });

  it('answers 409 video_not_ready unless the source is completed', async () => {
    const queued = await call('/v1/videos', { method: 'POST', json: source });
    expectApiError(await remix(queued.json.id, { prompt: 'x' }), 409, { code: 'video_not_ready', param: null });

    const job = (await stack.jobs.get(queued.json.id)) as VideoJob;
    await stack.jobs.updateActive({ ...job, status: 'in_progress', progress: 40 });
    const running = await remix(job.id, { prompt: 'x' });
    expectApiError(running, 409, { code: 'video_not_ready' });
    expect(running.json.error.message).toMatch(/in_progress/);

    await stack.jobs.finish({ ...job, status: 'failed', finished_ms: Date.now(), error: { code: 'generation_failed', message: 'no' } }, null);
    expectApiError(await remix(job.id, { prompt: 'x' }), 409, { code: 'video_not_ready' });
  });

  it('checks the body and the callback URL as video creation does', async () => {
    const src = await completedVideo();
    expectApiError(await remix(src.id, {}), 400, { param: 'prompt', code: 'missing_required_parameter' });
    expectApiError(await remix(src.id, { prompt: 'x', seconds: 8 }), 400, { param: 'seconds', code: 'unknown_parameter' });
    for (const url of ['https://127.0.0.1/hook', 'http://93.184.215.14/hook', 'https://user:pw@93.184.215.14/hook']) {
      expectApiError(await remix(src.id, { prompt: 'x', callback_url: url }), 400, { param: 'callback_url', code: 'invalid_callback_url' });
    }
    const form = multipartBody([{ name: 'prompt', value: 'as a form' }]);
    const viaForm = await call(`/v1/videos/${src.id}/remix`, { method: 'POST', body: form.body, headers: { 'content-type': form.contentType } });
    expect([viaForm.status, viaForm.json.prompt, viaForm.json.callback_url]).toEqual([200, 'as a form', null]);
  });

  it('honours Idempotency-Key: the same remix once, another body or operation a conflict', async () => {
    const src = await completedVideo();
    const headers = { 'idempotency-key': `remix-${Date.now()}` };
    const first = await remix(src.id, { prompt: 'once' }, headers);
    const again = await remix(src.id, { prompt: 'once' }, headers);
    expect([again.status, again.json.id, again.headers.get('idempotent-replayed')]).toEqual([200, first.json.id, 'true']);
    expect(first.headers.get('idempotent-replayed')).toBeNull();
    expectApiError(await remix(src.id, { prompt: 'twice' }, headers), 409, { code: 'idempotency_key_reused' });
    const otherSource = await completedVideo();
    expectApiError(await remix(otherSource.id, { prompt: 'once' }, headers), 409, { code: 'idempotency_key_reused' });
    expectApiError(await call('/v1/videos', { method: 'POST', json: { prompt: 'once' }, headers }), 409, { code: 'idempotency_key_reused' });
  });
});
