import { execFileSync } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import OpenAI, { toFile } from 'openai';
import sharp from 'sharp';
import { defaultFfprobePath } from '../../services/generator/src/media';
import { BLOB_STORES, eventually, TestStack } from '../support/stack';

// The official client, pointed at the gateway with baseURL, must work unchanged, on either blob store.
describe.each(BLOB_STORES)('the openai SDK against the gateway (%s blob store)', (blobStore) => {
  let stack: TestStack;
  let client: OpenAI;

  beforeAll(async () => {
    stack = await TestStack.start(['api-gateway', 'generator'], {}, { blobStore });
    const ws = await stack.createWorkspace('sdk');
    client = new OpenAI({ apiKey: ws.apiKey, baseURL: `${stack.baseUrl}/v1`, maxRetries: 0 });
  });

  afterAll(async () => {
    await stack?.stop();
  });

  it('images.generate returns decodable images', async () => {
    const res = await client.images.generate({ model: 'pixel-1', prompt: 'a red kite', size: '1024x1024', response_format: 'b64_json' });
    const meta = await sharp(Buffer.from(res.data![0].b64_json!, 'base64')).metadata();
    expect([meta.format, meta.width, meta.height]).toEqual(['png', 1024, 1024]);
    expect(typeof res.created).toBe('number');
  });

  it('images.edit accepts uploads, including several images', async () => {
    const input = await sharp({ create: { width: 128, height: 96, channels: 3, background: '#884422' } }).png().toBuffer();
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
    expect(created).toMatchObject({ object: 'video', status: 'queued', size: '1280x720' });
    const done = await eventually(async () => {
      const video = await client.videos.retrieve(created.id);
      if (video.status === 'failed') throw new Error(JSON.stringify(video.error));
      return video.status === 'completed' ? video : undefined;
    }, 30_000);
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
});
