import sharp from 'sharp';
import { ImageRenderer, InvalidImageError, type ImageFormat, type RenderImageRequest } from './index';

const renderer = new ImageRenderer();

function request(overrides: Partial<RenderImageRequest> = {}): RenderImageRequest {
  return { prompt: 'a lighthouse at dusk', seed: 42, index: 0, width: 256, height: 256, format: 'png', ...overrides };
}

async function rgba(image: Buffer): Promise<{ data: Buffer; width: number; height: number }> {
  const { data, info } = await sharp(image).ensureAlpha().raw().toBuffer({ resolveWithObject: true });
  return { data, width: info.width, height: info.height };
}

function pixel(img: { data: Buffer; width: number }, x: number, y: number): number[] {
  const o = (y * img.width + x) * 4;
  return [...img.data.subarray(o, o + 4)];
}

/** Mask whose left half (x < width/2) is fully transparent, i.e. editable; the right half is opaque. */
async function leftHalfMask(width: number, height: number): Promise<Buffer> {
  const raw = Buffer.alloc(width * height * 4, 255);
  for (let y = 0; y < height; y += 1) {
    for (let x = 0; x < width / 2; x += 1) raw[(y * width + x) * 4 + 3] = 0;
  }
  return sharp(raw, { raw: { width, height, channels: 4 } }).png().toBuffer();
}

describe('ImageRenderer.render', () => {
  it('is deterministic for identical requests', async () => {
    const a = await renderer.render(request());
    const b = await renderer.render(request());
    expect(a.equals(b)).toBe(true);
  });

  it('varies with prompt, seed and index', async () => {
    const base = await renderer.render(request());
    const variants = await Promise.all([
      renderer.render(request({ prompt: 'a lighthouse at dawn' })),
      renderer.render(request({ seed: 43 })),
      renderer.render(request({ index: 1 })),
    ]);
    for (const variant of variants) expect(variant.equals(base)).toBe(false);
    // Different bytes could in principle be encoder noise; check the decoded pixels differ too.
    const [p0, p1] = await Promise.all([rgba(base), rgba(variants[0] as Buffer)]);
    expect(p0.data.equals(p1.data)).toBe(false);
  });

  it.each<[ImageFormat, number, number]>([
    ['png', 1024, 1024],
    ['jpeg', 1536, 1024],
    ['webp', 1024, 1536],
    ['png', 1536, 1024],
    ['jpeg', 333, 77],
  ])('produces a decodable %s at %ix%i', async (format, width, height) => {
    const image = await renderer.render(request({ format, width, height }));
    const meta = await sharp(image).metadata();
    expect(meta.format).toBe(format);
    expect(meta.width).toBe(width);
    expect(meta.height).toBe(height);
  });

  it('draws a picture rather than a flat fill', async () => {
    const { data } = await rgba(await renderer.render(request()));
    const colours = new Set<number>();
    for (let i = 0; i < data.length; i += 4) colours.add(data.readUInt32BE(i));
    expect(colours.size).toBeGreaterThan(100);
  });

  it('rejects invalid sizes and formats with a plain Error', async () => {
    for (const bad of [request({ width: 0 }), request({ height: 12.5 }), request({ format: 'gif' as ImageFormat })]) {
      const err = await renderer.render(bad).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(Error);
      expect(err).not.toBeInstanceOf(InvalidImageError);
    }
  });

  it('renders a 1024x1024 png quickly', async () => {
    const started = performance.now();
    await renderer.render(request({ width: 1024, height: 1024, prompt: 'timing' }));
    const elapsed = performance.now() - started;
    // Logged so the figure can be read from test output; the bound only catches pathological regressions.
    console.log(`render 1024x1024 png: ${elapsed.toFixed(0)} ms`);
    expect(elapsed).toBeLessThan(5000);
  });
});

describe('ImageRenderer.edit', () => {
  let original: Buffer;
  let second: Buffer;

  beforeAll(async () => {
    original = await renderer.render(request({ prompt: 'original upload' }));
    // A different size and format, to exercise decode + cover-resize of extra images.
    second = await renderer.render(request({ prompt: 'second upload', width: 300, height: 180, format: 'jpeg' }));
  });

  const edit = (overrides: Partial<Parameters<ImageRenderer['edit']>[0]> = {}) =>
    renderer.edit({ prompt: 'paint it neon', seed: 7, index: 0, images: [original], width: 256, height: 256, format: 'png', ...overrides });

  it('transforms the upload deterministically', async () => {
    const a = await edit();
    const b = await edit();
    expect(a.equals(b)).toBe(true);
    const [edited, source] = await Promise.all([rgba(a), rgba(original)]);
    expect(edited.data.equals(source.data)).toBe(false);
    const other = await edit({ prompt: 'paint it pastel' });
    expect(other.equals(a)).toBe(false);
  });

  it.each<[ImageFormat, number, number]>([
    ['png', 256, 256],
    ['jpeg', 1536, 1024],
    ['webp', 200, 320],
  ])('outputs %s at exactly %ix%i', async (format, width, height) => {
    const out = await edit({ format, width, height });
    const meta = await sharp(out).metadata();
    expect(meta.format).toBe(format);
    expect(meta.width).toBe(width);
    expect(meta.height).toBe(height);
  });

  it('with a mask edits only where the mask is transparent', async () => {
    const mask = await leftHalfMask(256, 256);
    const [edited, source] = await Promise.all([edit({ mask }).then(rgba), rgba(original)]);
    let changedInside = 0;
    let changedOutside = 0;
    for (let y = 0; y < 256; y += 1) {
      for (let x = 0; x < 256; x += 1) {
        const o = (y * 256 + x) * 4;
        const same = edited.data.subarray(o, o + 4).equals(source.data.subarray(o, o + 4));
        if (x >= 128 && !same) changedOutside += 1;
        if (x < 128 && !same) changedInside += 1;
      }
    }
    expect(changedOutside).toBe(0);
    expect(changedInside).toBeGreaterThan(0.9 * 128 * 256);
    expect(pixel(edited, 200, 100)).toEqual(pixel(source, 200, 100));
    expect(pixel(edited, 40, 100)).not.toEqual(pixel(source, 40, 100));
  });

  it('aligns a mask of a different size with the upload', async () => {
    const mask = await leftHalfMask(512, 512);
    const [edited, source] = await Promise.all([edit({ mask }).then(rgba), rgba(original)]);
    expect(pixel(edited, 250, 10)).toEqual(pixel(source, 250, 10));
    expect(pixel(edited, 5, 10)).not.toEqual(pixel(source, 5, 10));
  });

  it('blends additional images into the first', async () => {
    const [single, double] = await Promise.all([edit().then(rgba), edit({ images: [original, second] }).then(rgba)]);
    expect([double.width, double.height]).toEqual([256, 256]);
    expect(double.data.equals(single.data)).toBe(false);
    // Outside the mask the *first* upload shows through, so upload order matters there.
    const mask = await leftHalfMask(256, 256);
    const [a, b, source] = await Promise.all([
      edit({ images: [original, second], mask }).then(rgba),
      edit({ images: [second, original], mask }).then(rgba),
      rgba(original),
    ]);
    expect(pixel(a, 200, 50)).toEqual(pixel(source, 200, 50));
    expect(pixel(b, 200, 50)).not.toEqual(pixel(source, 200, 50));
  });

  it('accepts greyscale and transparent uploads', async () => {
    const grey = await sharp(original).greyscale().png().toBuffer();
    const holey = await sharp({ create: { width: 64, height: 64, channels: 4, background: { r: 10, g: 20, b: 30, alpha: 0 } } })
      .png()
      .toBuffer();
    const out = await edit({ images: [grey, holey], format: 'webp' });
    const meta = await sharp(out).metadata();
    expect(meta.format).toBe('webp');
    expect([meta.width, meta.height]).toEqual([256, 256]);
  });

  it.each<[string, Buffer]>([
    ['zero bytes', Buffer.alloc(0)],
    ['plain text', Buffer.from('definitely not an image')],
    ['random bytes', Buffer.from(Array.from({ length: 4096 }, (_, i) => (i * 7919) % 251))],
    ['a PNG signature only', Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])],
  ])('rejects an undecodable upload (%s) with InvalidImageError', async (_label, bad) => {
    await expect(edit({ images: [bad] })).rejects.toBeInstanceOf(InvalidImageError);
    await expect(edit({ images: [original, bad] })).rejects.toBeInstanceOf(InvalidImageError);
  });

  it('rejects a truncated upload with InvalidImageError', async () => {
    const truncated = original.subarray(0, Math.floor(original.length / 2));
    await expect(edit({ images: [truncated] })).rejects.toBeInstanceOf(InvalidImageError);
  });

  it('rejects a missing image list with InvalidImageError', async () => {
    await expect(edit({ images: [] })).rejects.toBeInstanceOf(InvalidImageError);
  });

  it('rejects an undecodable mask with InvalidImageError', async () => {
    await expect(edit({ mask: Buffer.from('not a png') })).rejects.toBeInstanceOf(InvalidImageError);
    await expect(edit({ mask: Buffer.alloc(0) })).rejects.toBeInstanceOf(InvalidImageError);
  });

  it('rejects a mask without alpha with InvalidImageError', async () => {
    const opaque = await sharp(original).removeAlpha().jpeg().toBuffer();
    const err = await edit({ mask: opaque }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(InvalidImageError);
    expect((err as Error).message).toMatch(/alpha/);
  });
});
