import { execFileSync } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import OpenAI, { toFile } from 'openai';
import sharp from 'sharp';
import { defaultFfprobePath } from '@media/renderer';
import { baseEnv } from '../dispatcher/support/harness';
import { makeTestPki, type TestPki } from '../dispatcher/support/pki';
import { TestReceiver } from '../dispatcher/support/receiver';
import { chargesFor, probe } from '../generator/helpers';
import { BLOB_STORES, eventually, TestStack, type TestWorkspace } from '../support/stack';

// The official client, pointed at the gateway with baseURL, must work unchanged, on either blob store.
describe.each(BLOB_STORES)('the openai SDK against the gateway (%s blob store)', (blobStore) => {
  let stack: TestStack;
  let ws: TestWorkspace;
  let client: OpenAI;
  // Callbacks go to a real HTTPS receiver on loopback, as in the dispatcher tests.
  let pki: TestPki;
  let receiver: TestReceiver;

  beforeAll(async () => {
    pki = makeTestPki();
    receiver = await TestReceiver.start(pki);
    stack = await TestStack.start(['api-gateway', 'generator', 'webhook-dispatcher'], baseEnv(pki), { blobStore, inProcess: true });
    ws = await stack.createWorkspace('sdk');
    client = new OpenAI({ apiKey: ws.apiKey, baseURL: `${stack.baseUrl}/v1`, maxRetries: 0, webhookSecret: ws.signingSecret });
  });

  afterAll(async () => {
    await stack?.stop();
    await receiver?.stop();
    pki?.cleanup();
  });

  /** The request object's `id` (also its x-request-id), which the SDK's ImagesResponse type does not name. */
  const idOf = (res: OpenAI.ImagesResponse) => (res as OpenAI.ImagesResponse & { id: string }).id;
  const decoded = (res: OpenAI.ImagesResponse) => Buffer.from(res.data![0].b64_json!, 'base64');

  /** Waits for a video to complete through the SDK; a failure ends the wait at once. */
  const completed = (id: string) =>
    eventually(
      async () => {
        const video = await client.videos.retrieve(id);
        if (video.status === 'failed') throw new Error(JSON.stringify(video.error));
        return video.status === 'completed' ? video : undefined;
      },
      30_000,
      `video ${id} to complete`,
    );

  it('images.generate returns decodable images', async () => {
    const res = await client.images.generate({ model: 'pixel-1', prompt: 'a red kite', size: '1024x1024', response_format: 'b64_json' });
    const meta = await sharp(Buffer.from(res.data![0].b64_json!, 'base64')).metadata();
    expect([meta.format, meta.width, meta.height]).toEqual(['png', 1024, 1024]);
    expect(typeof res.created).toBe('number');
  });

  it('images.edit accepts uploads, including several images', async () => {
    const input = await sharp({ create: { width: 128, height: 96, channels: 3, background: '#884422' } })
      .png()
      .toBuffer();
    const single = await client.images.edit({
      model: 'pixel-1',
      image: await toFile(input, 'in.png', { type: 'image/png' }),
      prompt: 'cooler tones',
      size: '256x256',
    });
    expect(single.data![0].url).toMatch(/\/v1\/files\//);
    const several = await client.images.edit({
      model: 'pixel-1',
      image: [await toFile(input, 'a.png', { type: 'image/png' }), await toFile(input, 'b.png', { type: 'image/png' })],
      prompt: 'merge',
      size: '256x256',
      response_format: 'b64_json',
    });
    const meta = await sharp(Buffer.from(several.data![0].b64_json!, 'base64')).metadata();
    expect([meta.width, meta.height]).toEqual([256, 256]);
  });

  it('videos.create, videos.retrieve and videos.downloadContent', async () => {
    const created = await client.videos.create({ model: 'motion-1' as never, prompt: 'surf', seconds: '2' as never, size: '1280x720' });
    expect(created).toMatchObject({ object: 'video', status: 'queued', size: '1280x720', remixed_from_video_id: null });
    const done = await completed(created.id);
    expect(done.progress).toBe(100);
    const content = await client.videos.downloadContent(created.id);
    const bytes = Buffer.from(await content.arrayBuffer());
    const dir = await mkdtemp(join(tmpdir(), 'sdk-video-'));
    try {
      await writeFile(join(dir, 'v.mp4'), bytes);
      const probe = JSON.parse(
        execFileSync(defaultFfprobePath(), ['-v', 'error', '-print_format', 'json', '-show_streams', '-show_format', join(dir, 'v.mp4')]).toString(),
      );
      const video = probe.streams.find((s: { codec_type: string }) => s.codec_type === 'video');
      expect([video.codec_name, video.width, video.height]).toEqual(['h264', 1280, 720]);
      expect(Number(probe.format.duration)).toBeCloseTo(2, 0);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('surfaces API errors as the SDK’s typed errors', async () => {
    await expect(client.images.generate({ model: 'pixel-1', prompt: 'x', size: '999x999' as never })).rejects.toMatchObject({
      status: 400,
      code: 'invalid_size',
      param: 'size',
    });
    await expect(client.videos.retrieve('video_missing')).rejects.toBeInstanceOf(OpenAI.NotFoundError);
  });

  describe('image parameters of the SDK', () => {
    it('images.generate: a lower output_compression gives a smaller jpeg and webp', async () => {
      for (const output_format of ['jpeg', 'webp'] as const) {
        const ask = (output_compression: number) =>
          client.images.generate({
            model: 'pixel-1',
            prompt: 'a lighthouse at dusk',
            size: '512x512',
            response_format: 'b64_json',
            output_format,
            output_compression,
            seed: 4,
          } as OpenAI.ImageGenerateParamsNonStreaming);
        const [fine, coarse] = [decoded(await ask(95)), decoded(await ask(15))];
        for (const bytes of [fine, coarse]) {
          const meta = await sharp(bytes).metadata();
          expect([meta.format, meta.width, meta.height]).toEqual([output_format, 512, 512]);
        }
        expect(coarse.length).toBeLessThan(fine.length / 2);
      }
    });

    it('images.generate: a transparent background is a real alpha channel, the sky empty and the land opaque', async () => {
      for (const output_format of ['png', 'webp'] as const) {
        const res = await client.images.generate({
          model: 'pixel-1',
          prompt: 'a castle on a mountain at noon',
          size: '256x256',
          response_format: 'b64_json',
          output_format,
          background: 'transparent',
        });
        const image = sharp(decoded(res));
        const meta = await image.metadata();
        expect([meta.format, meta.channels, meta.hasAlpha]).toEqual([output_format, 4, true]);
        const stats = await image.stats();
        expect(stats.isOpaque).toBe(false);
        const alpha = stats.channels[3]!;
        expect([alpha.min, alpha.max]).toEqual([0, 255]);
        const { data } = await image.raw().toBuffer({ resolveWithObject: true });
        expect(data[3]).toBe(0);
        expect(data[(255 * 256 + 128) * 4 + 3]).toBe(255);
        expect(await stack.jobs.get(idOf(res))).toMatchObject({ background: 'transparent', output_format, quality: 'auto' });
      }
    });

    it('images.generate: low quality is a smaller file than high, and both are stored with the job', async () => {
      const ask = (quality: 'low' | 'high') =>
        client.images.generate({
          model: 'pixel-1',
          prompt: 'a sailboat on a lake at dawn',
          size: '512x512',
          response_format: 'b64_json',
          quality,
          seed: 9,
        } as OpenAI.ImageGenerateParamsNonStreaming);
      const [low, high] = [await ask('low'), await ask('high')];
      expect(decoded(low).length).toBeLessThan(decoded(high).length);
      expect(await stack.jobs.get(idOf(low))).toMatchObject({ quality: 'low', output_compression: null });
      expect(await stack.jobs.get(idOf(high))).toMatchObject({ quality: 'high' });
    });

    it('images.generate accepts and ignores moderation, style, user, partial_images and stream: false', async () => {
      const res = await client.images.generate({
        model: 'pixel-1',
        prompt: 'a red kite',
        size: '256x256',
        moderation: 'low',
        style: 'natural',
        user: 'end-user-1',
        partial_images: 2,
        stream: false,
        quality: 'hd',
        output_format: 'webp',
        output_compression: 70,
      });
      expect(res.data![0].url).toMatch(/\/v1\/files\/.*\.webp\?/);
      expect(await stack.jobs.get(idOf(res))).toMatchObject({ quality: 'hd', output_compression: 70, output_format: 'webp' });
    });

    it('images.edit (multipart) removes a plain backdrop and applies output_compression', async () => {
      const red = await sharp({ create: { width: 60, height: 60, channels: 3, background: '#c81e1e' } })
        .png()
        .toBuffer();
      const studio = await sharp({ create: { width: 160, height: 160, channels: 3, background: '#eceff1' } })
        .composite([{ input: red, left: 50, top: 50 }])
        .png()
        .toBuffer();
      const upload = () => toFile(studio, 'studio.png', { type: 'image/png' });
      const cut = await client.images.edit({
        model: 'pixel-1',
        image: await upload(),
        prompt: 'cooler tones',
        size: '256x256',
        response_format: 'b64_json',
        background: 'transparent',
        output_format: 'webp',
        quality: 'high',
        input_fidelity: 'high',
        partial_images: 0,
        stream: false,
      });
      const image = sharp(decoded(cut));
      expect(await image.metadata()).toMatchObject({ format: 'webp', width: 256, height: 256, hasAlpha: true });
      const { data } = await image.raw().toBuffer({ resolveWithObject: true });
      expect(data[3]).toBe(0);
      expect(data[(128 * 256 + 128) * 4 + 3]).toBe(255);
      expect(await stack.jobs.get(idOf(cut))).toMatchObject({ operation: 'edit', background: 'transparent', quality: 'high' });

      const sizes = [];
      for (const output_compression of [90, 10]) {
        const res = await client.images.edit({
          model: 'pixel-1',
          image: await upload(),
          prompt: 'warmer',
          size: '256x256',
          response_format: 'b64_json',
          output_format: 'jpeg',
          output_compression,
        });
        expect((await sharp(decoded(res)).metadata()).format).toBe('jpeg');
        sizes.push(decoded(res).length);
      }
      expect(sizes[1]).toBeLessThan(sizes[0]! / 2);
    });

    it('refuses a bad value as a BadRequestError naming the parameter', async () => {
      const generate = (extra: Record<string, unknown>) => client.images.generate({ model: 'pixel-1', prompt: 'x', size: '256x256', ...extra } as never);
      const cases: [Record<string, unknown>, string, string][] = [
        [{ quality: 'ultra' }, 'quality', 'invalid_value'],
        [{ output_compression: 101 }, 'output_compression', 'invalid_value'],
        [{ background: 'transparent', output_format: 'jpeg' }, 'background', 'invalid_value'],
        [{ moderation: 'none' }, 'moderation', 'invalid_value'],
        [{ stream: true }, 'stream', 'unsupported_value'],
      ];
      for (const [extra, param, code] of cases) {
        const err = await generate(extra).catch((e: unknown) => e);
        expect(err).toBeInstanceOf(OpenAI.BadRequestError);
        expect(err).toMatchObject({ status: 400, param, code, type: 'invalid_request_error' });
      }
      const png = await sharp({ create: { width: 8, height: 8, channels: 3, background: '#123456' } })
        .png()
        .toBuffer();
      const edit = client.images.edit({
        model: 'pixel-1',
        image: await toFile(png, 'a.png', { type: 'image/png' }),
        prompt: 'x',
        input_fidelity: 'exact' as never,
      });
      await expect(edit).rejects.toMatchObject({ status: 400, param: 'input_fidelity', code: 'invalid_value' });
    });
  });

  describe('videos.remix', () => {
    it('makes a new video from a completed one, with its own callback, charge and MP4', async () => {
      const source = await client.videos.create({
        model: 'motion-1' as never,
        prompt: 'a lighthouse at dusk',
        seconds: '1' as never,
        size: '640x360' as never,
      });
      await completed(source.id);

      const path = `/remix-${blobStore}`;
      const remix = await client.videos.remix(source.id, {
        prompt: 'a lighthouse at night in a storm',
        callback_url: receiver.url(path),
      } as OpenAI.VideoRemixParams);
      expect(remix).toMatchObject({
        object: 'video',
        status: 'queued',
        progress: 0,
        model: 'motion-1',
        seconds: 1,
        size: '640x360',
        remixed_from_video_id: source.id,
        callback_url: receiver.url(path),
      });
      expect(remix.id).not.toBe(source.id);
      const done = await completed(remix.id);
      expect(done).toMatchObject({ remixed_from_video_id: source.id, prompt: 'a lighthouse at night in a storm', cost: 0.1 });

      // Its own callback, signed for this workspace (checked by the SDK's own verifier).
      const delivery = await eventually(() => receiver.requestsTo(path)[0], 30_000, 'the remix callback');
      const event = (await client.webhooks.unwrap(delivery.body, delivery.headers)) as unknown as {
        type: string;
        data: { id: string; remixed_from_video_id: string };
      };
      expect(event.type).toBe('video.completed');
      expect(event.data).toMatchObject({ id: remix.id, remixed_from_video_id: source.id });

      expect(await chargesFor(stack, ws.workspaceId, remix.id)).toEqual([expect.objectContaining({ amount: 0.1 })]);
      expect(await chargesFor(stack, ws.workspaceId, source.id)).toHaveLength(1);

      const [remixBytes, sourceBytes] = await Promise.all(
        [remix.id, source.id].map(async (id) => Buffer.from(await (await client.videos.downloadContent(id)).arrayBuffer())),
      );
      const probed = await probe(remixBytes);
      const video = probed.streams.find((s) => s.codec_type === 'video')!;
      expect([video.codec_name, video.width, video.height]).toEqual(['h264', 640, 360]);
      expect(Number(probed.format.duration)).toBeCloseTo(1, 0);
      expect(remixBytes.equals(sourceBytes)).toBe(false);
    });

    it('answers an unknown video with NotFoundError', async () => {
      await expect(client.videos.remix('video_missing', { prompt: 'x' })).rejects.toBeInstanceOf(OpenAI.NotFoundError);
    });
  });
});
