import sharp from 'sharp';
import { SeededRandom } from './random';
import { buildSceneSvg } from './scene';

/** Output encodings the renderer can produce. */
export type ImageFormat = 'png' | 'jpeg' | 'webp';

/** Thrown for inputs that cannot be decoded as images (becomes error code invalid_image). */
export class InvalidImageError extends Error {
  /**
   * @param message - human-readable reason, safe to show to API clients.
   * @param options - standard error options; `cause` keeps the decoder's own error for logs.
   */
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = 'InvalidImageError';
  }
}

/** Parameters of a text-to-image render. */
export interface RenderImageRequest {
  /** Text the picture is derived from; only its hash is used. */
  prompt: string;
  /** Caller-chosen variation seed; different seeds give different pictures for one prompt. */
  seed: number;
  /** Position of this image within a multi-image (`n` > 1) request. */
  index: number;
  /** Output width in pixels (positive integer). */
  width: number;
  /** Output height in pixels (positive integer). */
  height: number;
  /** Output encoding. */
  format: ImageFormat;
}

/** Parameters of an image edit. */
export interface EditImageRequest {
  /** Text the edit is derived from; only its hash is used. */
  prompt: string;
  /** Caller-chosen variation seed. */
  seed: number;
  /** Position of this image within a multi-image request. */
  index: number;
  /** At least one uploaded image, in any format sharp can decode; the first is the one being edited. */
  images: Buffer[];
  /** PNG with alpha: fully transparent pixels mark where to edit (OpenAI semantics). */
  mask?: Buffer;
  /** Output width in pixels (positive integer). */
  width: number;
  /** Output height in pixels (positive integer). */
  height: number;
  /** Output encoding. */
  format: ImageFormat;
}

/** Largest edge accepted; far above any supported size, it only guards against absurd allocations. */
const MAX_DIMENSION = 8192;

/** Weight of the generated scene in edited pixels: enough to be clearly visible, low enough to keep the upload recognisable. */
const SCENE_WEIGHT = 0.35;

function assertSize(width: number, height: number): void {
  for (const [name, value] of [['width', width], ['height', height]] as const) {
    if (!Number.isInteger(value) || value < 1 || value > MAX_DIMENSION) {
      throw new Error(`${name} must be an integer between 1 and ${MAX_DIMENSION}, got ${String(value)}`);
    }
  }
}

function assertFormat(format: ImageFormat): void {
  if (format !== 'png' && format !== 'jpeg' && format !== 'webp') {
    throw new Error(`unsupported image format: ${String(format)}`);
  }
}

/**
 * Encodes a sharp pipeline in the requested format. Options are pinned rather
 * than left to library defaults so that output bytes stay stable for a given
 * sharp/libvips version.
 */
function encode(pipeline: sharp.Sharp, format: ImageFormat): Promise<Buffer> {
  switch (format) {
    case 'png':
      return pipeline.png({ compressionLevel: 6, adaptiveFiltering: false }).toBuffer();
    case 'jpeg':
      // JPEG has no alpha; flattening on white matches what viewers show for transparent PNGs.
      return pipeline.flatten({ background: '#ffffff' }).jpeg({ quality: 90, chromaSubsampling: '4:2:0' }).toBuffer();
    case 'webp':
      return pipeline.webp({ quality: 90, effort: 4 }).toBuffer();
  }
}

/**
 * Decodes one upload and fits it to the output canvas. Only this step maps
 * failures to {@link InvalidImageError}: later failures are our own bugs and
 * must not be blamed on the client.
 */
async function decodeToCanvas(input: Buffer, width: number, height: number, label: string): Promise<Buffer> {
  if (!Buffer.isBuffer(input) || input.length === 0) {
    throw new InvalidImageError(`${label} is empty`);
  }
  try {
    // failOn 'error' rejects truncated files yet tolerates the benign warnings many camera JPEGs trigger.
    return await toRgba(
      sharp(input, { failOn: 'error', autoOrient: true }).resize(width, height, { fit: 'cover', position: 'centre' }),
    );
  } catch (err) {
    throw new InvalidImageError(`${label} could not be decoded as an image`, { cause: err });
  }
}

/**
 * Decodes the mask into one byte per pixel: 1 where the edit applies (alpha 0), else 0.
 *
 * The mask is fitted with the same cover/centre crop as the first image so the
 * two stay aligned when the output aspect differs, and with nearest-neighbour
 * sampling so that resizing cannot invent partially transparent edge pixels.
 */
async function decodeMask(mask: Buffer, width: number, height: number): Promise<Uint8Array> {
  if (!Buffer.isBuffer(mask) || mask.length === 0) {
    throw new InvalidImageError('mask is empty');
  }
  let raw: { data: Buffer; info: sharp.OutputInfo };
  try {
    const source = sharp(mask, { failOn: 'error', autoOrient: true });
    const meta = await source.metadata();
    if (!meta.hasAlpha) {
      // Without alpha nothing would be editable; silently returning the original would hide the client's mistake.
      throw new InvalidImageError('mask must have an alpha channel (transparent pixels mark the area to edit)');
    }
    raw = await source
      .resize(width, height, { fit: 'cover', position: 'centre', kernel: 'nearest' })
      .raw()
      .toBuffer({ resolveWithObject: true });
  } catch (err) {
    if (err instanceof InvalidImageError) throw err;
    throw new InvalidImageError('mask could not be decoded as an image', { cause: err });
  }
  const { data, info } = raw;
  const alphaOffset = info.channels - 1;
  const editable = new Uint8Array(width * height);
  for (let p = 0; p < editable.length; p += 1) {
    editable[p] = data[p * info.channels + alphaOffset] === 0 ? 1 : 0;
  }
  return editable;
}

/** Equal-weight average of all layers, so every upload contributes to the edit. */
function averageLayers(layers: Buffer[]): Buffer {
  const first = layers[0] as Buffer;
  if (layers.length === 1) return Buffer.from(first);
  const out = Buffer.alloc(first.length);
  const count = layers.length;
  for (let i = 0; i < out.length; i += 1) {
    let sum = 0;
    for (const layer of layers) sum += layer[i] as number;
    out[i] = Math.round(sum / count);
  }
  return out;
}

/** Raw 8-bit RGBA; every pixel loop below relies on exactly four interleaved channels. */
async function toRgba(pipeline: sharp.Sharp): Promise<Buffer> {
  const { data, info } = await pipeline.ensureAlpha().toColourspace('srgb').raw().toBuffer({ resolveWithObject: true });
  if (info.channels !== 4) throw new Error(`expected RGBA pixels, got ${info.channels} channels`);
  return data;
}

function isOpaque(rgba: Buffer): boolean {
  for (let i = 3; i < rgba.length; i += 4) {
    if (rgba[i] !== 255) return false;
  }
  return true;
}

/**
 * Produces deterministic "generated" pictures and edits.
 *
 * There is no model behind it: pictures are procedural SVG scenes seeded from a
 * hash of the request, which is enough to exercise the whole pipeline with real,
 * decodable files while keeping results reproducible for tests.
 */
export class ImageRenderer {
  /** Procedural picture derived from a hash of (prompt, seed, index): background gradient + several shapes, drawn as SVG and rasterised by sharp at exactly width x height. Same inputs -> identical bytes; different prompt -> different picture. No text rendering (fonts may be missing). */
  async render(req: RenderImageRequest): Promise<Buffer> {
    assertSize(req.width, req.height);
    assertFormat(req.format);
    const svg = buildSceneSvg(new SeededRandom('render', req.prompt, req.seed, req.index), req.width, req.height);
    // density 72 maps one SVG user unit to one pixel, so the raster is exactly width x height.
    const pipeline = sharp(Buffer.from(svg), { density: 72 }).resize(req.width, req.height, { fit: 'fill' }).removeAlpha();
    return encode(pipeline, req.format);
  }

  /** Really transforms the uploads: decode (sharp; failure -> InvalidImageError, including zero-byte or non-image data), resize/cover to width x height, blend additional images into the first, apply a prompt-derived tint/modulate; with a mask (resized to the same size; undecodable mask -> InvalidImageError) the edit applies only where mask alpha is 0 and the original shows elsewhere. Output in `format` at exactly width x height. */
  async edit(req: EditImageRequest): Promise<Buffer> {
    assertSize(req.width, req.height);
    assertFormat(req.format);
    const { width, height } = req;
    if (!Array.isArray(req.images) || req.images.length === 0) {
      throw new InvalidImageError('at least one image is required');
    }

    const [layers, editable] = await Promise.all([
      Promise.all(req.images.map((img, i) => decodeToCanvas(img, width, height, `image ${i + 1}`))),
      req.mask === undefined ? Promise.resolve(undefined) : decodeMask(req.mask, width, height),
    ]);
    const original = layers[0] as Buffer;
    const blended = averageLayers(layers);

    const rng = new SeededRandom('edit', req.prompt, req.seed, req.index);
    // Hue shift kept away from 0/360, where a rotation would be nearly invisible on colourful uploads.
    const hue = rng.int(40, 320);
    const saturation = rng.range(0.9, 1.4);
    const brightness = rng.range(0.9, 1.1);
    const rawOptions = { raw: { width, height, channels: 4 as const } };
    const [tinted, scene] = await Promise.all([
      toRgba(sharp(blended, rawOptions).modulate({ hue, saturation, brightness })),
      toRgba(sharp(Buffer.from(buildSceneSvg(rng, width, height)), { density: 72 }).resize(width, height, { fit: 'fill' })),
    ]);

    const out = Buffer.alloc(width * height * 4);
    for (let p = 0; p < width * height; p += 1) {
      const o = p * 4;
      if (editable !== undefined && editable[p] === 0) {
        for (let c = 0; c < 4; c += 1) out[o + c] = original[o + c] as number;
        continue;
      }
      // Transparent upload pixels are "painted in" with the scene, as an inpainting model would fill holes.
      const coverage = ((tinted[o + 3] as number) / 255) * (1 - SCENE_WEIGHT);
      for (let c = 0; c < 3; c += 1) {
        const s = scene[o + c] as number;
        out[o + c] = Math.round(s + ((tinted[o + c] as number) - s) * coverage);
      }
      out[o + 3] = 255;
    }

    let pipeline = sharp(out, rawOptions);
    // Dropping a uniformly opaque alpha channel keeps PNGs smaller and matches what the upload looked like.
    if (isOpaque(out)) pipeline = pipeline.removeAlpha();
    return encode(pipeline, req.format);
  }
}
