import sharp from 'sharp';
import { MODEL_CATALOG, type ImageModel } from '@media/domain';
import { BLOB_STORES, eventually } from '../support/stack';
import { chargesFor, finishedEvent, watchVideo, startGeneratorStack, type GeneratorStack } from './helpers';

// Real failure causes: each ends the job `failed` with its error code, is never charged, and is still
// announced on job-events (a `*.failed` callback follows from it). Undecodable uploads go through the
// blob store, so the file runs on both.
describe.each(BLOB_STORES)('generator: failed jobs (%s blob store)', (blobStore) => {
  let t: GeneratorStack;
  // A loopback callback URL is accepted here only so that the asynchronous (202) path can be exercised;
  // no dispatcher runs, so nothing is ever sent to it.
  const CALLBACK = 'http://127.0.0.1:9/hook';

  beforeAll(async () => {
    t = await startGeneratorStack(
      'failures',
      { MODERATION_BLOCKLIST: 'forbidden', CALLBACK_ALLOW_HTTP: '1', CALLBACK_ALLOWED_CIDRS: '127.0.0.1/32' },
      { blobStore },
    );
  });

  afterAll(async () => {
    await t?.close();
  });

  const imageRequest = (id: string) =>
    eventually(
      async () => {
        const res = await t.call(`/v1/images/${id}`);
        return res.json?.status === 'failed' || res.json?.status === 'completed' ? res.json : undefined;
      },
      20_000,
      `image request ${id} to finish`,
    );

  /** The common end state of every failure: failed, coded, uncharged, announced. */
  async function expectFailedUncharged(id: string, code: string) {
    const record = await t.stack.jobs.get(id);
    expect(record).toMatchObject({ status: 'failed', cost: null, error: { code } });
    expect(typeof record?.error?.message).toBe('string');
    expect(await chargesFor(t.stack, t.ws.workspaceId, id)).toEqual([]);
    expect((await finishedEvent(t.events, id)).data).toEqual({ jobId: id, workspaceId: t.ws.workspaceId });
  }

  const png = (width: number, height: number) =>
    sharp({ create: { width, height, channels: 3, background: { r: 200, g: 60, b: 30 } } })
      .png()
      .toBuffer();

  /** PNG signature (so the gateway's sniffing accepts it as a PNG), then bytes no decoder can read. */
  const brokenPng = () =>
    Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), Buffer.from('this is not image data, just garbage '.repeat(20))]);

  function editForm(image: Buffer, extra: Record<string, string> = {}): FormData {
    const form = new FormData();
    form.append('prompt', 'make it look like autumn');
    form.append('size', '256x256');
    for (const [k, v] of Object.entries(extra)) form.append(k, v);
    form.append('image', new Blob([image], { type: 'image/png' }), 'input.png');
    return form;
  }

  describe('moderation_blocked', () => {
    it('fails a blocked image prompt: the sync t.call answers 400 moderation_blocked and the request shows failed', async () => {
      const res = await t.call('/v1/images/generations', { method: 'POST', json: { model: 'pixel-1', prompt: 'A FORBIDDEN castle', size: '256x256' } });
      expect(res.status).toBe(400);
      expect(res.json.error).toMatchObject({ type: 'invalid_request_error', code: 'moderation_blocked' });
      const id = res.headers.get('x-request-id')!;
      expect(id).toMatch(/^req_/);

      const shown = await t.call(`/v1/images/${id}`);
      expect(shown.status).toBe(200);
      expect(shown.json).toMatchObject({ id, status: 'failed', cost: null, data: [], error: { code: 'moderation_blocked' } });
      await expectFailedUncharged(id, 'moderation_blocked');
    });

    it('fails a blocked image prompt accepted with a callback (202) in the background', async () => {
      const res = await t.call('/v1/images/generations', {
        method: 'POST',
        json: { model: 'pixel-1', prompt: 'something forbidden', size: '256x256', callback_url: CALLBACK },
      });
      expect(res.status).toBe(202);
      expect(res.json).toMatchObject({ status: 'in_progress', cost: null, error: null });
      const shown = await imageRequest(res.json.id);
      expect(shown).toMatchObject({ status: 'failed', cost: null, data: [], error: { code: 'moderation_blocked' } });
      await expectFailedUncharged(res.json.id, 'moderation_blocked');
    });

    it('fails a blocked video prompt: failed, no content, no charge', async () => {
      const created = await t.call('/v1/videos', {
        method: 'POST',
        json: { model: 'motion-1', prompt: 'a Forbidden dance', seconds: 2, size: '640x360', generate_audio: true },
      });
      expect(created.status).toBe(200);
      const { video } = await watchVideo(t.call, created.json.id);
      expect(video).toMatchObject({ status: 'failed', cost: null, url: null, completed_at: null, error: { code: 'moderation_blocked' } });
      const content = await t.call(`/v1/videos/${video.id}/content`);
      expect(content.status).toBe(409);
      expect(content.json.error.code).toBe('video_not_ready');
      await expectFailedUncharged(video.id, 'moderation_blocked');
    });
  });

  describe('invalid_image', () => {
    it('answers a sync edit of an undecodable PNG with 400 invalid_image and leaves the request failed', async () => {
      const res = await t.call('/v1/images/edits', { method: 'POST', body: editForm(brokenPng()) });
      expect(res.status).toBe(400);
      expect(res.json.error).toMatchObject({ type: 'invalid_request_error', code: 'invalid_image' });
      const id = res.headers.get('x-request-id')!;
      const shown = await t.call(`/v1/images/${id}`);
      expect(shown.json).toMatchObject({ id, status: 'failed', cost: null, data: [], error: { code: 'invalid_image' } });
      await expectFailedUncharged(id, 'invalid_image');
    });

    it('fails the background job of an undecodable edit accepted with a callback (202)', async () => {
      const res = await t.call('/v1/images/edits', { method: 'POST', body: editForm(brokenPng(), { callback_url: CALLBACK }) });
      expect(res.status).toBe(202);
      const shown = await imageRequest(res.json.id);
      expect(shown).toMatchObject({ status: 'failed', cost: null, error: { code: 'invalid_image' } });
      await expectFailedUncharged(res.json.id, 'invalid_image');
    });

    it('still edits a decodable PNG sent the same way, and charges it once (control)', async () => {
      const res = await t.call('/v1/images/edits', { method: 'POST', body: editForm(await png(64, 48)) });
      expect(res.status).toBe(200);
      expect(res.json.status).toBe('completed');
      const image = await fetch(res.json.data[0].url);
      expect(image.status).toBe(200);
      const meta = await sharp(Buffer.from(await image.arrayBuffer())).metadata();
      expect([meta.format, meta.width, meta.height]).toEqual(['png', 256, 256]);
      const price = (MODEL_CATALOG.find((m) => m.id === 'pixel-1') as ImageModel).pricePerImage['256x256'];
      expect(res.json.cost).toBeCloseTo(price, 9);
      const charges = await chargesFor(t.stack, t.ws.workspaceId, res.json.id);
      expect(charges.map((c) => c.amount)).toEqual([res.json.cost]);
    });
  });

  it('has charged only completed jobs in this workspace, each once', async () => {
    const ledger = await t.stack.jobs.ledger(t.ws.workspaceId);
    const ids = ledger.map((e) => e.job_id);
    expect(new Set(ids).size).toBe(ids.length);
    const jobs = await t.stack.jobs.getMany(ids);
    expect(jobs.map((j) => j.status)).toEqual(ids.map(() => 'completed'));
  });
});
