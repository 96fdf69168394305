import sharp from 'sharp';
import { ImageRenderer, InvalidImageError, promptSceneSvg, type ImageFormat, type RenderImageRequest } from './image';

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
  return sharp(raw, { raw: { width, height, channels: 4 } })
    .png()
    .toBuffer();
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

/** Pixel statistics over a region of a decoded image (rows y0..y1, columns x0..x1, as fractions). */
function regionStats(img: { data: Buffer; width: number; height: number }, x0: number, y0: number, x1: number, y1: number) {
  let r = 0;
  let g = 0;
  let b = 0;
  let count = 0;
  for (let y = Math.floor(y0 * img.height); y < Math.floor(y1 * img.height); y += 1) {
    for (let x = Math.floor(x0 * img.width); x < Math.floor(x1 * img.width); x += 1) {
      const o = (y * img.width + x) * 4;
      r += img.data[o] as number;
      g += img.data[o + 1] as number;
      b += img.data[o + 2] as number;
      count += 1;
    }
  }
  return { r: r / count, g: g / count, b: b / count, luma: (0.2126 * r + 0.7152 * g + 0.0722 * b) / count };
}

const picture = async (prompt: string, seed = 5, size = 256) =>
  rgba(await renderer.render({ prompt, seed, index: 0, width: size, height: size, format: 'png' }));

describe('ImageRenderer.render follows the prompt', () => {
  it('draws a lighthouse as a tall, narrow structure over the sea', async () => {
    // Scenery streams do not depend on the subject, so with the same seed the two pictures differ only
    // where the lighthouse (with its rocks, reflection and beam) is.
    const [lighthouse, seaOnly] = await Promise.all([picture('a lighthouse at dusk'), picture('the sea at dusk')]);
    const { width, height } = lighthouse;
    const tallColumns: number[] = [];
    for (let x = 0; x < width; x += 1) {
      let changed = 0;
      for (let y = 0; y < height; y += 1) {
        const o = (y * width + x) * 4;
        const d =
          Math.abs((lighthouse.data[o] as number) - (seaOnly.data[o] as number)) +
          Math.abs((lighthouse.data[o + 1] as number) - (seaOnly.data[o + 1] as number)) +
          Math.abs((lighthouse.data[o + 2] as number) - (seaOnly.data[o + 2] as number));
        if (d > 60) changed += 1;
      }
      if (changed > height * 0.35) tallColumns.push(x);
    }
    expect(tallColumns.length).toBeGreaterThan(width * 0.03);
    expect(tallColumns.length).toBeLessThan(width * 0.2);
    // One structure: the tall columns are (nearly) contiguous.
    expect((tallColumns.at(-1) as number) - (tallColumns[0] as number)).toBeLessThan(width * 0.2);
  });

  it('paints a dusk sky warm and a noon sky blue', async () => {
    const [dusk, noon] = await Promise.all([picture('the sea at dusk'), picture('the sea at noon')]);
    const duskSky = regionStats(dusk, 0, 0, 1, 0.4);
    const noonSky = regionStats(noon, 0, 0, 1, 0.4);
    expect(duskSky.r).toBeGreaterThan(duskSky.b);
    expect(noonSky.b).toBeGreaterThan(noonSky.r + 40);
  });

  it('puts blue water in the lower half of sea pictures', async () => {
    for (const prompt of ['a boat on the sea at noon', 'a lighthouse at dusk', 'a whale in the ocean']) {
      const sea = regionStats(await picture(prompt), 0, 0.75, 1, 1);
      expect(sea.b).toBeGreaterThan(sea.r);
    }
  });

  it('makes night dark, snow bright and deserts sandy', async () => {
    const [night, noon, snow, desert] = await Promise.all([
      picture('a house in a meadow at night'),
      picture('a house in a meadow at noon'),
      picture('a snowman in winter at noon'),
      picture('the desert at noon'),
    ]);
    expect(regionStats(night, 0, 0, 1, 1).luma).toBeLessThan(regionStats(noon, 0, 0, 1, 1).luma * 0.5);
    expect(regionStats(snow, 0, 0.8, 1, 1).luma).toBeGreaterThan(200);
    const sand = regionStats(desert, 0, 0.8, 1, 1);
    expect(sand.r).toBeGreaterThan(sand.b + 50);
  });

  it('applies palette words: monochrome is grey, neon is saturated', async () => {
    const mono = await picture('a castle on a hill, black and white');
    let maxSpread = 0;
    for (let o = 0; o < mono.data.length; o += 4) {
      const c = [mono.data[o], mono.data[o + 1], mono.data[o + 2]] as number[];
      maxSpread = Math.max(maxSpread, Math.max(...c) - Math.min(...c));
    }
    expect(maxSpread).toBeLessThanOrEqual(2);
    const saturatedShare = (img: { data: Buffer }): number => {
      let n = 0;
      for (let o = 0; o < img.data.length; o += 4) {
        const c = [img.data[o], img.data[o + 1], img.data[o + 2]] as number[];
        if (Math.max(...c) - Math.min(...c) > 120) n += 1;
      }
      return n / (img.data.length / 4);
    };
    const [neon, plain] = await Promise.all([picture('a city skyline at night, neon'), picture('a city skyline at night')]);
    expect(saturatedShare(neon)).toBeGreaterThan(saturatedShare(plain) * 2);
  });

  it('changes the layout, not the subject, with the seed', async () => {
    const [a, b] = await Promise.all([picture('a lighthouse at dusk', 1), picture('a lighthouse at dusk', 2)]);
    expect(a.data.equals(b.data)).toBe(false);
    expect(regionStats(b, 0, 0, 1, 0.4).r).toBeGreaterThan(regionStats(b, 0, 0, 1, 0.4).b);
  });

  it('never copies prompt text into the SVG', () => {
    const svg = promptSceneSvg('<script>alert("x")</script> a boat ]]> &amp; \' onload=', 1, 0, 64, 64);
    for (const fragment of ['script', 'alert', 'onload', ']]>', '&amp;']) expect(svg).not.toContain(fragment);
  });
});

describe('ImageRenderer.edit follows the instruction', () => {
  let photo: Buffer;
  beforeAll(async () => {
    photo = await renderer.render({ prompt: 'a cottage in a meadow at noon', seed: 3, index: 0, width: 256, height: 256, format: 'png' });
  });

  const apply = (prompt: string, extra: Partial<Parameters<ImageRenderer['edit']>[0]> = {}) =>
    renderer.edit({ prompt, seed: 1, index: 0, images: [photo], width: 256, height: 256, format: 'png', ...extra }).then(rgba);

  it('grades: night is darker and bluer, sunset warmer, black and white grey', async () => {
    const [source, night, sunset, bw, warmer, cooler] = await Promise.all([
      rgba(photo),
      apply('make it night'),
      apply('make it sunset'),
      apply('make it black and white'),
      apply('warmer'),
      apply('cooler'),
    ]);
    const s = regionStats(source, 0, 0, 1, 1);
    const n = regionStats(night, 0, 0, 1, 1);
    expect(n.luma).toBeLessThan(s.luma * 0.5);
    expect(n.b / n.r).toBeGreaterThan(s.b / s.r);
    const sky = (img: typeof source) => regionStats(img, 0, 0, 1, 0.3);
    expect(sky(sunset).r - sky(sunset).b).toBeGreaterThan(sky(source).r - sky(source).b + 40);
    for (let o = 0; o < bw.data.length; o += 4) {
      expect(Math.abs((bw.data[o] as number) - (bw.data[o + 2] as number))).toBeLessThanOrEqual(1);
    }
    const w = regionStats(warmer, 0, 0, 1, 1);
    const c = regionStats(cooler, 0, 0, 1, 1);
    expect(w.r - w.b).toBeGreaterThan(s.r - s.b);
    expect(c.r - c.b).toBeLessThan(s.r - s.b);
  });

  it('adds a subject inside the mask and leaves the rest pixel-identical', async () => {
    const mask = await leftHalfMask(256, 256);
    const [edited, source] = await Promise.all([apply('add a cat', { mask }), rgba(photo)]);
    let inside = 0;
    for (let y = 0; y < 256; y += 1) {
      for (let x = 0; x < 256; x += 1) {
        const o = (y * 256 + x) * 4;
        const same = edited.data.subarray(o, o + 4).equals(source.data.subarray(o, o + 4));
        if (x >= 128) expect(same).toBe(true);
        else if (!same) inside += 1;
      }
    }
    // A cat, not a wash over the whole masked half.
    expect(inside).toBeGreaterThan(128 * 256 * 0.04);
    expect(inside).toBeLessThan(128 * 256 * 0.8);
  });

  it('paints a moon in the sky when there is no mask', async () => {
    const [edited, source] = await Promise.all([apply('add a moon'), rgba(photo)]);
    let top = 0;
    let bottom = 0;
    for (let o = 0; o < edited.data.length; o += 4) {
      if (edited.data.subarray(o, o + 3).equals(source.data.subarray(o, o + 3))) continue;
      if (o / 4 / 256 < 128) top += 1;
      else bottom += 1;
    }
    expect(top).toBeGreaterThan(500);
    expect(bottom).toBeLessThan(top * 0.1);
  });

  it('blurs the background but keeps the centre sharp', async () => {
    const [edited, source] = await Promise.all([apply('blur the background'), rgba(photo)]);
    const detail = (img: typeof source, x0: number, x1: number, y0: number, y1: number): number => {
      let sum = 0;
      for (let y = y0; y < y1; y += 1) {
        for (let x = x0 + 1; x < x1; x += 1) {
          const o = (y * 256 + x) * 4;
          sum += Math.abs((img.data[o + 1] as number) - (img.data[o - 3] as number));
        }
      }
      return sum;
    };
    expect(detail(edited, 0, 40, 180, 256)).toBeLessThan(detail(source, 0, 40, 180, 256) * 0.7);
    expect(detail(edited, 118, 138, 130, 150)).toBe(detail(source, 118, 138, 130, 150));
  });

  it('lets snow fall and still changes something for instructions it does not know', async () => {
    const [snow, unknown, source] = await Promise.all([apply('make it snow'), apply('zorblax the quux'), rgba(photo)]);
    const bright = (img: typeof source): number => {
      let count = 0;
      for (let o = 0; o < img.data.length; o += 4) if ((img.data[o + 2] as number) > 240 && (img.data[o] as number) > 240) count += 1;
      return count;
    };
    expect(bright(snow)).toBeGreaterThan(bright(source) + 300);
    expect(unknown.data.equals(source.data)).toBe(false);
  });
});

/** Share of pixels whose alpha is exactly `alpha`, over a region given as fractions of the picture. */
function alphaShare(img: { data: Buffer; width: number; height: number }, alpha: number, x0 = 0, y0 = 0, x1 = 1, y1 = 1): number {
  let hits = 0;
  let count = 0;
  for (let y = Math.floor(y0 * img.height); y < Math.floor(y1 * img.height); y += 1) {
    for (let x = Math.floor(x0 * img.width); x < Math.floor(x1 * img.width); x += 1) {
      if (img.data[(y * img.width + x) * 4 + 3] === alpha) hits += 1;
      count += 1;
    }
  }
  return hits / count;
}

describe('ImageRenderer encoding: quality, compression, background', () => {
  it.each<ImageFormat>(['png', 'webp'])('a transparent background leaves the sky of a %s empty and the land opaque', async (format) => {
    for (const prompt of ['a lighthouse at dusk', 'a castle on a mountain in a storm', 'a red fox in a snowy forest at night']) {
      const out = await renderer.render(request({ prompt, format, background: 'transparent' }));
      const meta = await sharp(out).metadata();
      expect([meta.format, meta.channels, meta.hasAlpha]).toEqual([format, 4, true]);
      expect((await sharp(out).stats()).isOpaque).toBe(false);
      const img = await rgba(out);
      expect(alphaShare(img, 0, 0, 0, 1, 0.1)).toBeGreaterThan(0.9);
      expect(alphaShare(img, 255, 0, 0.9, 1, 1)).toBeGreaterThan(0.9);
    }
  });

  it('draws the same land and subjects with and without the backdrop', async () => {
    const [plain, cut] = await Promise.all([
      renderer.render(request({ prompt: 'a lighthouse at noon', format: 'png' })).then(rgba),
      renderer.render(request({ prompt: 'a lighthouse at noon', format: 'png', background: 'transparent' })).then(rgba),
    ]);
    // The vignette is part of the backdrop, so colours shift a little; the layout does not.
    const ground = (img: typeof plain) => regionStats(img, 0.3, 0.85, 0.7, 1);
    expect(Math.abs(ground(plain).luma - ground(cut).luma)).toBeLessThan(20);
  });

  it('keeps renders without a transparent background free of an alpha channel', async () => {
    for (const background of ['auto', 'opaque'] as const) {
      for (const format of ['png', 'webp', 'jpeg'] as const) {
        const meta = await sharp(await renderer.render(request({ format, background }))).metadata();
        expect(meta.hasAlpha).toBe(false);
      }
    }
  });

  it.each<ImageFormat>(['jpeg', 'webp'])('a lower compression number gives a smaller %s', async (format) => {
    const sizes = [];
    for (const compression of [100, 75, 40, 10, 0]) {
      const out = await renderer.render(request({ format, compression }));
      const meta = await sharp(out).metadata();
      expect([meta.format, meta.width, meta.height]).toEqual([format, 256, 256]);
      sizes.push(out.length);
    }
    for (let i = 1; i < sizes.length; i += 1) expect(sizes[i]).toBeLessThan(sizes[i - 1] as number);
  });

  it('ignores compression for png, which is lossless', async () => {
    const [plain, compressed] = await Promise.all([renderer.render(request()), renderer.render(request({ compression: 10 }))]);
    expect(compressed.equals(plain)).toBe(true);
  });

  it('compression wins over the quality’s own encoder setting', async () => {
    const [low, lowAt95] = await Promise.all([
      renderer.render(request({ format: 'jpeg', quality: 'low' })),
      renderer.render(request({ format: 'jpeg', quality: 'low', compression: 95 })),
    ]);
    expect(lowAt95.length).toBeGreaterThan(low.length * 1.5);
  });

  it.each<ImageFormat>(['png', 'jpeg', 'webp'])('low quality makes a smaller %s than medium, and stays deterministic', async (format) => {
    const size = { width: 512, height: 512 };
    const [low, again, medium] = await Promise.all([
      renderer.render(request({ format, quality: 'low', ...size })),
      renderer.render(request({ format, quality: 'low', ...size })),
      renderer.render(request({ format, quality: 'medium', ...size })),
    ]);
    expect(low.equals(again)).toBe(true);
    expect(low.length).toBeLessThan(medium.length * 0.75);
    const meta = await sharp(low).metadata();
    expect([meta.format, meta.width, meta.height]).toEqual([format, 512, 512]);
  });

  it('low quality png holds at most 256 colours', async () => {
    const { data } = await rgba(await renderer.render(request({ quality: 'low' })));
    const colours = new Set<number>();
    for (let i = 0; i < data.length; i += 4) colours.add(data.readUInt32BE(i));
    expect(colours.size).toBeLessThanOrEqual(256);
    expect(colours.size).toBeGreaterThan(16);
  });

  it('high quality packs the same png pixels smaller, and spends more bytes on jpeg and webp', async () => {
    const [high, medium] = await Promise.all([renderer.render(request({ quality: 'high' })), renderer.render(request())]);
    expect(high.length).toBeLessThan(medium.length);
    expect((await rgba(high)).data.equals((await rgba(medium)).data)).toBe(true);
    for (const format of ['jpeg', 'webp'] as const) {
      const [h, m] = await Promise.all([renderer.render(request({ format, quality: 'high' })), renderer.render(request({ format }))]);
      expect(h.length).toBeGreaterThan(m.length);
    }
  });

  it('medium is what a request without these options gets', async () => {
    for (const format of ['png', 'jpeg', 'webp'] as const) {
      const [plain, medium] = await Promise.all([
        renderer.render(request({ format })),
        renderer.render(request({ format, quality: 'medium', background: 'auto' })),
      ]);
      expect(medium.equals(plain)).toBe(true);
    }
  });

  it('rejects unknown encoder options with a plain Error', async () => {
    for (const bad of [
      request({ quality: 'ultra' as never }),
      request({ compression: 101 }),
      request({ compression: 2.5 }),
      request({ background: 'clear' as never }),
    ]) {
      const err = await renderer.render(bad).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(Error);
      expect(err).not.toBeInstanceOf(InvalidImageError);
    }
  });
});

describe('ImageRenderer.edit with a transparent background', () => {
  /** A red square on a light grey studio backdrop, 200x150, opaque. */
  let studio: Buffer;
  beforeAll(async () => {
    const red = await sharp({ create: { width: 80, height: 70, channels: 3, background: '#c81e1e' } })
      .png()
      .toBuffer();
    studio = await sharp({ create: { width: 200, height: 150, channels: 3, background: '#e6e8eb' } })
      .composite([{ input: red, left: 60, top: 40 }])
      .png()
      .toBuffer();
  });

  const cut = (extra: Partial<Parameters<ImageRenderer['edit']>[0]> = {}) =>
    renderer.edit({ prompt: 'cooler tones', seed: 1, index: 0, images: [studio], width: 200, height: 150, format: 'png', background: 'transparent', ...extra });

  it.each<ImageFormat>(['png', 'webp'])('removes a plain backdrop and keeps the subject (%s)', async (format) => {
    const out = await cut({ format });
    const meta = await sharp(out).metadata();
    expect([meta.format, meta.channels, meta.hasAlpha]).toEqual([format, 4, true]);
    const img = await rgba(out);
    for (const [x, y] of [
      [0, 0],
      [199, 0],
      [0, 149],
      [199, 149],
      [30, 75],
    ])
      expect(pixel(img, x, y)[3]).toBe(0);
    const centre = pixel(img, 100, 75);
    expect(centre[3]).toBe(255);
    expect(centre[0] as number).toBeGreaterThan((centre[2] as number) + 60);
    // The square is 80x70 of 200x150: close to that share stays opaque.
    expect(alphaShare(img, 255)).toBeGreaterThan(0.15);
    expect(alphaShare(img, 255)).toBeLessThan(0.25);
  });

  it('keeps what it paints over the backdrop', async () => {
    const [plain, withCat] = await Promise.all([cut().then(rgba), cut({ prompt: 'add a cat' }).then(rgba)]);
    expect(alphaShare(withCat, 0)).toBeLessThan(alphaShare(plain, 0) - 0.02);
  });

  it('changes nothing outside the mask', async () => {
    const mask = await leftHalfMask(200, 150);
    const [edited, source] = await Promise.all([cut({ mask }).then(rgba), rgba(studio)]);
    expect(pixel(edited, 5, 5)[3]).toBe(0);
    expect(pixel(edited, 195, 5)).toEqual(pixel(source, 195, 5));
  });

  it('keeps an upload’s own transparent pixels instead of filling them with a scene', async () => {
    const holey = await sharp({ create: { width: 64, height: 64, channels: 4, background: { r: 0, g: 0, b: 0, alpha: 0 } } })
      .composite([
        {
          input: await sharp({ create: { width: 32, height: 32, channels: 4, background: '#2040c0' } })
            .png()
            .toBuffer(),
          left: 16,
          top: 16,
        },
      ])
      .png()
      .toBuffer();
    const [kept, filled] = await Promise.all([
      renderer.edit({ prompt: 'warmer', seed: 1, index: 0, images: [holey], width: 64, height: 64, format: 'png', background: 'transparent' }).then(rgba),
      renderer.edit({ prompt: 'warmer', seed: 1, index: 0, images: [holey], width: 64, height: 64, format: 'png' }).then(rgba),
    ]);
    expect(pixel(kept, 2, 2)[3]).toBe(0);
    expect(pixel(kept, 32, 32)[3]).toBe(255);
    expect(alphaShare(filled, 255)).toBe(1);
  });

  it('leaves a busy picture opaque: with no plain backdrop there is nothing to remove', async () => {
    const noise = Buffer.from(Array.from({ length: 128 * 128 * 3 }, (_, i) => (i * 7919) % 251));
    const busy = await sharp(noise, { raw: { width: 128, height: 128, channels: 3 } })
      .png()
      .toBuffer();
    const out = await renderer.edit({
      prompt: 'cooler tones',
      seed: 1,
      index: 0,
      images: [busy],
      width: 128,
      height: 128,
      format: 'png',
      background: 'transparent',
    });
    expect((await sharp(out).metadata()).hasAlpha).toBe(true);
    expect(alphaShare(await rgba(out), 255)).toBe(1);
  });

  it('with an opaque background flattens what the upload left transparent', async () => {
    const holey = await sharp({ create: { width: 64, height: 64, channels: 4, background: { r: 0, g: 0, b: 0, alpha: 0 } } })
      .png()
      .toBuffer();
    const mask = await leftHalfMask(64, 64);
    const auto = await renderer.edit({ prompt: 'warmer', seed: 1, index: 0, images: [holey], mask, width: 64, height: 64, format: 'png' });
    const opaque = await renderer.edit({
      prompt: 'warmer',
      seed: 1,
      index: 0,
      images: [holey],
      mask,
      width: 64,
      height: 64,
      format: 'png',
      background: 'opaque',
    });
    expect((await sharp(auto).metadata()).hasAlpha).toBe(true);
    expect((await sharp(opaque).metadata()).hasAlpha).toBe(false);
  });
});
