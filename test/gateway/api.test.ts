import sharp from 'sharp';
import { LinkSigner } from '@media/domain';
import { loadLinkSigningKey } from '@media/storage';
import { api, BLOB_STORES, eventually, TestStack, type TestWorkspace } from '../support/stack';

// Everything runs once per blob store: the media tests (images, edits, content, links) must pass on
// either, and the rest costs little.
describe.each(BLOB_STORES)('gateway API (%s blob store)', (blobStore) => {
  let stack: TestStack;
  let ws: TestWorkspace;
  let other: TestWorkspace;
  let call: ReturnType<typeof api>;

  beforeAll(async () => {
    stack = await TestStack.start(['api-gateway', 'generator'], { MAX_JSON_BYTES: '200000', MAX_UPLOAD_BYTES: '100000' }, { blobStore, inProcess: true });
    ws = await stack.createWorkspace('main');
    other = await stack.createWorkspace('other');
    call = api(stack, ws.apiKey);
  });

  afterAll(async () => {
    await stack?.stop();
  });

  const png = (width = 64, height = 64, color = '#3366ff') =>
    sharp({ create: { width, height, channels: 4, background: color } })
      .png()
      .toBuffer();

  describe('authentication and isolation', () => {
    it('answers 401 in the error shape without a key or with a wrong one', async () => {
      const missing = await fetch(`${stack.baseUrl}/v1/models`);
      expect(missing.status).toBe(401);
      expect(((await missing.json()) as { error: unknown }).error).toMatchObject({ type: 'authentication_error', code: 'missing_api_key' });
      const wrong = await api(stack, 'sk_wrong')('/v1/models');
      expect(wrong.status).toBe(401);
      expect(wrong.json.error).toMatchObject({ type: 'authentication_error', code: 'invalid_api_key', param: null });
      expect(wrong.headers.get('x-request-id')).toMatch(/^req_/);
    });

    it('hides another workspace’s jobs behind 404, never 403', async () => {
      const created = await call('/v1/videos', { method: 'POST', json: { prompt: 'private', seconds: 1, size: '640x360' } });
      expect(created.status).toBe(200);
      const peek = api(stack, other.apiKey);
      for (const path of [`/v1/videos/${created.json.id}`, `/v1/videos/${created.json.id}/content`]) {
        const res = await peek(path);
        expect(res.status).toBe(404);
        expect(res.json.error.type).toBe('not_found_error');
      }
      expect((await peek('/v1/videos')).json.data).toEqual([]);
    });
  });

  describe('health', () => {
    it('reports liveness and Redis readiness', async () => {
      expect((await fetch(`${stack.baseUrl}/healthz`)).status).toBe(200);
      const ready = await fetch(`${stack.baseUrl}/readyz`);
      expect(ready.status).toBe(200);
      expect(await ready.json()).toEqual({ status: 'ready' });
    });
  });

  describe('models', () => {
    it('lists the catalog in the OpenAI list shape', async () => {
      const res = await call('/v1/models');
      expect(res.status).toBe(200);
      expect(res.json.object).toBe('list');
      expect(res.json.data.map((m: { id: string }) => m.id)).toEqual(expect.arrayContaining(['pixel-1', 'motion-1']));
      expect((await call('/v1/models/nope')).status).toBe(404);
    });
  });

  describe('synchronous image generation', () => {
    it('waits and answers with URLs that download real images', async () => {
      const res = await call('/v1/images/generations', { method: 'POST', json: { prompt: 'a lighthouse', size: '512x512', n: 2 } });
      expect(res.status).toBe(200);
      expect(res.headers.get('x-request-id')).toBe(res.json.id);
      expect(res.json).toMatchObject({ object: 'image.generation', status: 'completed', cost: 0.02, error: null, callback_url: null });
      expect(typeof res.json.created).toBe('number');
      expect(res.json.data).toHaveLength(2);
      for (const item of res.json.data) {
        const file = await fetch(item.url);
        expect(file.status).toBe(200);
        expect(file.headers.get('content-type')).toBe('image/png');
        const meta = await sharp(Buffer.from(await file.arrayBuffer())).metadata();
        expect([meta.format, meta.width, meta.height]).toEqual(['png', 512, 512]);
      }
    });

    it('returns b64_json when asked, in the requested output format', async () => {
      const res = await call('/v1/images/generations', {
        method: 'POST',
        json: { prompt: 'a cat', size: '1536x1024', response_format: 'b64_json', output_format: 'webp' },
      });
      expect(res.status).toBe(200);
      const meta = await sharp(Buffer.from(res.json.data[0].b64_json, 'base64')).metadata();
      expect([meta.format, meta.width, meta.height]).toEqual(['webp', 1536, 1024]);
      expect(res.json.data[0].url).toBeUndefined();
    });

    it('stores a jpeg as .jpg and serves it as image/jpeg', async () => {
      const res = await call('/v1/images/generations', { method: 'POST', json: { prompt: 'a pier', size: '256x256', output_format: 'jpeg' } });
      expect(res.status).toBe(200);
      expect(new URL(res.json.data[0].url).pathname).toMatch(/\/0\.jpg$/);
      const file = await fetch(res.json.data[0].url);
      expect([file.status, file.headers.get('content-type')]).toEqual([200, 'image/jpeg']);
      expect((await sharp(Buffer.from(await file.arrayBuffer())).metadata()).format).toBe('jpeg');
    });

    it('is deterministic for the same prompt and seed', async () => {
      const body = { prompt: 'same', size: '256x256', seed: 42, response_format: 'b64_json' };
      const a = await call('/v1/images/generations', { method: 'POST', json: body });
      const b = await call('/v1/images/generations', { method: 'POST', json: body });
      const c = await call('/v1/images/generations', { method: 'POST', json: { ...body, seed: 43 } });
      expect(a.json.data[0].b64_json).toBe(b.json.data[0].b64_json);
      expect(a.json.data[0].b64_json).not.toBe(c.json.data[0].b64_json);
    });
  });

  describe('image generation with callback_url', () => {
    it('answers 202 at once with the in-progress object of spec 4.2', async () => {
      const res = await call('/v1/images/generations', {
        method: 'POST',
        json: { prompt: 'async', size: '256x256', callback_url: 'https://93.184.215.14/hook', response_format: 'b64_json' },
      });
      expect(res.status).toBe(202);
      expect(res.json.id).toMatch(/^req_/);
      expect(res.headers.get('x-request-id')).toBe(res.json.id);
      expect(res.json).toEqual({
        id: res.json.id,
        object: 'image.generation',
        // OpenAI's created, an integer on every image object (the SDKs type it so): acceptance until the images exist.
        created: res.json.created_at,
        model: 'pixel-1',
        status: 'in_progress',
        created_at: expect.any(Number),
        completed_at: null,
        data: [],
        url_expires_at: null,
        cost: null,
        error: null,
        callback_url: 'https://93.184.215.14/hook',
      });
      const done = await eventually(async () => {
        const got = await call(`/v1/images/${res.json.id}`);
        return got.json.status === 'completed' ? got.json : undefined;
      });
      // GET always gives links, never base64, whatever response_format said.
      expect(done.data[0]).toEqual({ url: expect.stringMatching(/^http:\/\/127\.0\.0\.1:\d+\/v1\/files\//) });
      expect(done.url_expires_at - Math.floor(Date.now() / 1000)).toBeGreaterThan(86_400 - 60);
      expect(done.cost).toBe(0.005);
      expect(done.created).toBe(done.completed_at);
    });
  });

  describe('callback_url checks at acceptance', () => {
    const refused: [string, RegExp][] = [
      ['http://93.184.215.14/hook', /https/],
      ['https://user:pw@93.184.215.14/hook', /username or password/i],
      ['https://93.184.215.14:0/hook', /^callback_url port must be between 1 and 65535 \(got 0\)$/],
      ['https://127.0.0.1/hook', /non-public|private/i],
      ['https://10.1.2.3/hook', /non-public|private/i],
      ['https://169.254.169.254/latest/meta-data', /non-public|private/i],
      ['https://2130706433/hook', /non-public|private/i],
      ['https://0x7f.1/hook', /non-public|private/i],
      ['https://[::1]/hook', /non-public|private/i],
      ['https://[::ffff:127.0.0.1]/hook', /non-public|private/i],
      ['https://localhost/hook', /non-public|private|localhost/i],
      ['ftp://93.184.215.14/x', /https/],
      ['not a url', /./],
    ];
    it.each(refused)('refuses %s with invalid_callback_url', async (url, message) => {
      for (const path of ['/v1/images/generations', '/v1/videos']) {
        const res = await call(path, { method: 'POST', json: { prompt: 'x', callback_url: url } });
        expect(res.status).toBe(400);
        expect(res.json.error).toMatchObject({ type: 'invalid_request_error', param: 'callback_url', code: 'invalid_callback_url' });
        expect(res.json.error.message).toMatch(message);
      }
    });
  });

  describe('request validation', () => {
    const cases: [string, string, unknown, number, string][] = [
      ['missing prompt', '/v1/images/generations', { size: '256x256' }, 400, 'missing_required_parameter'],
      ['empty prompt', '/v1/images/generations', { prompt: '  ' }, 400, 'invalid_value'],
      ['prompt of wrong type', '/v1/images/generations', { prompt: 5 }, 400, 'invalid_value'],
      ['unknown model', '/v1/images/generations', { prompt: 'x', model: 'nope' }, 404, 'model_not_found'],
      ['video model for images', '/v1/images/generations', { prompt: 'x', model: 'motion-1' }, 400, 'invalid_model'],
      ['bad size', '/v1/images/generations', { prompt: 'x', size: '999x999' }, 400, 'invalid_size'],
      ['too many images', '/v1/images/generations', { prompt: 'x', n: 11 }, 400, 'invalid_value'],
      ['bad response_format', '/v1/images/generations', { prompt: 'x', response_format: 'gif' }, 400, 'invalid_value'],
      ['unknown parameter', '/v1/images/generations', { prompt: 'x', colour: 'red' }, 400, 'unknown_parameter'],
      ['seconds out of range', '/v1/videos', { prompt: 'x', seconds: 99 }, 400, 'invalid_duration'],
      ['seconds not a number', '/v1/videos', { prompt: 'x', seconds: 'four' }, 400, 'invalid_value'],
      ['bad video size', '/v1/videos', { prompt: 'x', size: '1000x1000' }, 400, 'invalid_size'],
      ['size disagreeing with resolution', '/v1/videos', { prompt: 'x', size: '1280x720', resolution: '1080p' }, 400, 'invalid_size'],
      ['generate_audio not boolean', '/v1/videos', { prompt: 'x', generate_audio: 'loud' }, 400, 'invalid_value'],
    ];
    it.each(cases)('%s', async (_name, path, body, status, code) => {
      const res = await call(path, { method: 'POST', json: body });
      expect(res.status).toBe(status);
      expect(res.json.error.code).toBe(code);
      expect(res.json.error.message.length).toBeGreaterThan(5);
    });

    it('answers malformed JSON, oversized bodies and wrong content types in the error shape', async () => {
      const bad = await call('/v1/videos', { method: 'POST', body: '{"prompt":', headers: { 'content-type': 'application/json' } });
      expect([bad.status, bad.json.error.code]).toEqual([400, 'invalid_json']);
      const big = await call('/v1/videos', { method: 'POST', json: { prompt: 'x'.repeat(1_100_000) } });
      expect([big.status, big.json.error.code]).toEqual([413, 'request_too_large']);
      const bigEdit = await call('/v1/images/edits', { method: 'POST', json: { prompt: 'x', image: `data:image/png;base64,${'A'.repeat(300_000)}` } });
      expect([bigEdit.status, bigEdit.json.error.code]).toEqual([413, 'request_too_large']);
      const text = await call('/v1/videos', { method: 'POST', body: 'prompt=x', headers: { 'content-type': 'text/plain' } });
      expect([text.status, text.json.error.code]).toEqual([415, 'unsupported_media_type']);
    });

    it('keeps resolution, aspect_ratio and size consistent', async () => {
      const res = await call('/v1/videos', { method: 'POST', json: { prompt: 'x', resolution: '720p', aspect_ratio: '9:16', seconds: '1' } });
      expect(res.status).toBe(200);
      expect(res.json).toMatchObject({ size: '720x1280', resolution: '720p', aspect_ratio: '9:16', seconds: 1 });
    });
  });

  describe('image edits', () => {
    it('edits a multipart upload with a mask', async () => {
      const form = new FormData();
      form.append('prompt', 'make it warmer');
      form.append('size', '256x256');
      form.append('response_format', 'b64_json');
      form.append('image', new Blob([await png(300, 200)], { type: 'image/png' }), 'in.png');
      const mask = await sharp({ create: { width: 300, height: 200, channels: 4, background: { r: 0, g: 0, b: 0, alpha: 0 } } })
        .png()
        .toBuffer();
      form.append('mask', new Blob([mask], { type: 'image/png' }), 'mask.png');
      const res = await call('/v1/images/edits', { method: 'POST', body: form });
      expect(res.status).toBe(200);
      const meta = await sharp(Buffer.from(res.json.data[0].b64_json, 'base64')).metadata();
      expect([meta.format, meta.width, meta.height]).toEqual(['png', 256, 256]);
    });

    it('accepts JSON with base64 data URLs', async () => {
      const dataUrl = `data:image/png;base64,${(await png()).toString('base64')}`;
      const res = await call('/v1/images/edits', { method: 'POST', json: { prompt: 'bluer', size: '256x256', images: [{ image_url: dataUrl }] } });
      expect(res.status).toBe(200);
      expect(res.json.status).toBe('completed');
    });

    it('refuses non-images, missing images, remote URLs and oversized uploads', async () => {
      const form = new FormData();
      form.append('prompt', 'x');
      form.append('image', new Blob([Buffer.from('hello, not an image')], { type: 'image/png' }), 'fake.png');
      const notImage = await call('/v1/images/edits', { method: 'POST', body: form });
      expect([notImage.status, notImage.json.error.code]).toEqual([400, 'invalid_image_format']);

      const none = await call('/v1/images/edits', { method: 'POST', json: { prompt: 'x' } });
      expect([none.status, none.json.error.code]).toEqual([400, 'missing_required_parameter']);

      const remote = await call('/v1/images/edits', { method: 'POST', json: { prompt: 'x', image: 'https://93.184.215.14/a.png' } });
      expect([remote.status, remote.json.error.code]).toEqual([400, 'invalid_image_format']);

      const big = new FormData();
      big.append('prompt', 'x');
      big.append('image', new Blob([Buffer.concat([await png(), Buffer.alloc(200_000)])], { type: 'image/png' }), 'big.png');
      const tooBig = await call('/v1/images/edits', { method: 'POST', body: big });
      expect([tooBig.status, tooBig.json.error.code]).toEqual([413, 'file_too_large']);

      const inlineTooBig = `data:image/png;base64,${Buffer.concat([await png(), Buffer.alloc(120_000)]).toString('base64')}`;
      const inline = await call('/v1/images/edits', { method: 'POST', json: { prompt: 'x', image: inlineTooBig } });
      expect([inline.status, inline.json.error.code, inline.json.error.param]).toEqual([413, 'file_too_large', 'image[0]']);
    });
  });

  describe('videos', () => {
    it('creates, lists newest first with a cursor, and refuses content before completion', async () => {
      const fresh = await stack.createWorkspace('lister');
      const mine = api(stack, fresh.apiKey);
      const ids: string[] = [];
      for (let i = 0; i < 3; i++) {
        const res = await mine('/v1/videos', { method: 'POST', json: { prompt: `v${i}`, seconds: 1, size: '640x360' } });
        expect(res.status).toBe(200);
        expect(res.json).toMatchObject({ object: 'video', status: 'queued', progress: 0, cost: null, url: null, completed_at: null });
        ids.push(res.json.id);
      }
      const early = await mine(`/v1/videos/${ids[0]}/content`);
      if (early.status !== 200) expect([early.status, early.json.error.code]).toEqual([409, 'video_not_ready']);

      const page1 = await mine('/v1/videos?limit=2');
      expect(page1.json.data.map((v: { id: string }) => v.id)).toEqual([ids[2], ids[1]]);
      expect(page1.json.has_more).toBe(true);
      const page2 = await mine(`/v1/videos?limit=2&after=${page1.json.last_id}`);
      expect(page2.json.data.map((v: { id: string }) => v.id)).toEqual([ids[0]]);
      expect(page2.json.has_more).toBe(false);
      expect((await mine('/v1/videos?limit=500')).status).toBe(400);

      // A cursor that names no video of this workspace (deleted, expired, made up, an image's) is
      // refused, not answered as the list's end.
      for (const cursor of ['video_nosuchvideo', ids[1]!.replace('video_', 'req_')]) {
        const gone = await mine(`/v1/videos?limit=2&after=${cursor}`);
        expect([gone.status, gone.json.error]).toEqual([
          400,
          expect.objectContaining({ type: 'invalid_request_error', param: 'after', code: 'invalid_value' }),
        ]);
      }
    });
  });

  describe('download links', () => {
    it('refuse tampered and expired links with 403', async () => {
      const res = await call('/v1/images/generations', { method: 'POST', json: { prompt: 'link', size: '256x256' } });
      const url = new URL(res.json.data[0].url);
      const tampered = new URL(url);
      tampered.searchParams.set('expires', String(Number(url.searchParams.get('expires')) + 1));
      const t = await fetch(tampered);
      expect(t.status).toBe(403);
      expect(((await t.json()) as { error: { code: string } }).error.code).toBe('invalid_link');

      const key = decodeURIComponent(url.pathname.replace('/v1/files/', ''));
      const signer = new LinkSigner(await loadLinkSigningKey(stack.redis, stack.keys, undefined), stack.baseUrl, 86_400);
      const old = signer.mint(key, Math.floor(Date.now() / 1000) - 2 * 86_400);
      const e = await fetch(old.url);
      expect(e.status).toBe(403);
      expect(((await e.json()) as { error: { code: string } }).error.code).toBe('link_expired');

      // A blob gone from the store answers 404 in the error shape; the gateway carries on.
      await stack.blobs.remove(key);
      const gone = await fetch(url);
      expect(gone.status).toBe(404);
      expect(((await gone.json()) as { error: { type: string } }).error.type).toBe('not_found_error');
      expect((await fetch(`${stack.baseUrl}/healthz`)).status).toBe(200);

      const escape = await fetch(`${stack.baseUrl}/v1/files/..%2F..%2Fetc%2Fpasswd?expires=9999999999&signature=${'a'.repeat(43)}`);
      expect(escape.status).toBe(403);
    });
  });

  describe('Idempotency-Key', () => {
    it('returns the first image request for a repeated key and refuses reuse with other parameters', async () => {
      const headers = { 'idempotency-key': `k-${Date.now()}` };
      const body = { prompt: 'once', size: '256x256', callback_url: 'https://93.184.215.14/hook' };
      const first = await call('/v1/images/generations', { method: 'POST', json: body, headers });
      const second = await call('/v1/images/generations', { method: 'POST', json: body, headers });
      expect(first.status).toBe(202);
      expect(second.json.id).toBe(first.json.id);
      expect(second.headers.get('x-request-id')).toBe(first.json.id);
      expect(second.headers.get('idempotent-replayed')).toBe('true');
      const other = await call('/v1/images/generations', { method: 'POST', json: { ...body, prompt: 'twice' }, headers });
      expect([other.status, other.json.error.code]).toEqual([409, 'idempotency_key_reused']);
      await eventually(async () => ((await stack.jobs.get(first.json.id))?.status === 'completed' ? true : undefined));
      const charges = (await stack.jobs.ledger(ws.workspaceId)).filter((e) => e.job_id === first.json.id);
      expect(charges).toHaveLength(1);
    });
  });
});
