import sharp from 'sharp';
import { applyGrades, blurBackground, clearAlpha, composite, findBackdrop, gradesFor, paintSubjects, weatherOverlay, type EditCanvas } from './edit';
import { planScene } from './plan';
import { SeededRandom } from './random';
import { buildSceneSvg } from './scene';
import { interpretEdit, interpretPrompt } from './vocabulary';

/** The still scene a prompt describes, as SVG of exactly width x height; without its backdrop the sky is left empty. */
export function promptSceneSvg(prompt: string, seed: number, index: number, width: number, height: number, backdrop = true): string {
  return buildSceneSvg(planScene(interpretPrompt(prompt), seed, index, width, height), backdrop);
}

/** Output encodings the renderer can produce. */
export type ImageFormat = 'png' | 'jpeg' | 'webp';

/** Encoder effort: `low` smaller files sooner, `high` the best the encoders do. */
export type EncodeQuality = 'low' | 'medium' | 'high';

/** `transparent`: an alpha channel and no backdrop; `opaque`: never an alpha channel; `auto`: as the picture comes out. */
export type Background = 'transparent' | 'opaque' | 'auto';

/** How a picture is encoded; shared by renders and edits. */
export interface EncodingOptions {
  /** Output encoding. */
  format: ImageFormat;
  /** Default `medium`. */
  quality?: EncodeQuality;
  /**
   * jpeg/webp encoder quality 0-100, in place of the one `quality` picks (0 is read as 1, the
   * encoders' floor). PNG is lossless, so it has no such number and ignores this.
   */
  compression?: number;
  /** Default `auto`. `transparent` needs png or webp; a jpeg is flattened on white whatever this says. */
  background?: Background;
}

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
export interface RenderImageRequest extends EncodingOptions {
  /** Scene description; matched against a fixed vocabulary (see vocabulary.ts), never rendered as text. */
  prompt: string;
  /** Caller-chosen variation seed; different seeds give different pictures for one prompt. */
  seed: number;
  /** Position of this image within a multi-image (`n` > 1) request. */
  index: number;
  /** Output width in pixels (positive integer). */
  width: number;
  /** Output height in pixels (positive integer). */
  height: number;
}

/** Parameters of an image edit. */
export interface EditImageRequest extends EncodingOptions {
  /** Edit instruction ("make it sunset", "add a cat"); matched against the vocabulary like a render prompt. */
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
}

/** Largest edge accepted; far above any supported size, it only guards against absurd allocations. */
const MAX_DIMENSION = 8192;

function assertSize(width: number, height: number): void {
  for (const [name, value] of [
    ['width', width],
    ['height', height],
  ] as const) {
    if (!Number.isInteger(value) || value < 1 || value > MAX_DIMENSION) {
      throw new Error(`${name} must be an integer between 1 and ${MAX_DIMENSION}, got ${String(value)}`);
    }
  }
}

/**
 * Encoder settings per quality. `low`: a PNG of at most 256 colours without dithering (about a
 * quarter of the bytes, banding in gradients, a little more CPU to quantise), jpeg and webp at
 * quality 60 with little webp effort. `medium`: what every image got before `quality` existed.
 * `high`: the same PNG pixels packed harder (zlib 9, adaptive filters: about a third smaller,
 * several times slower), jpeg at 95 without chroma subsampling, webp at 95 with the most effort.
 * Options are pinned rather than left to library defaults so that output bytes stay stable for a
 * given sharp/libvips version.
 */
const ENCODERS: Record<EncodeQuality, { png: sharp.PngOptions; jpeg: sharp.JpegOptions; webp: sharp.WebpOptions }> = {
  low: {
    png: { palette: true, effort: 1, dither: 0, compressionLevel: 6 },
    jpeg: { quality: 60, chromaSubsampling: '4:2:0' },
    webp: { quality: 60, effort: 2 },
  },
  medium: {
    png: { compressionLevel: 6, adaptiveFiltering: false },
    jpeg: { quality: 90, chromaSubsampling: '4:2:0' },
    webp: { quality: 90, effort: 4 },
  },
  high: {
    png: { compressionLevel: 9, adaptiveFiltering: true },
    jpeg: { quality: 95, chromaSubsampling: '4:4:4' },
    webp: { quality: 95, effort: 6 },
  },
};

function assertEncoding(options: EncodingOptions): void {
  const { format, quality = 'medium', compression, background = 'auto' } = options;
  if (format !== 'png' && format !== 'jpeg' && format !== 'webp') throw new Error(`unsupported image format: ${String(format)}`);
  if (!Object.hasOwn(ENCODERS, quality)) throw new Error(`unsupported quality: ${String(quality)}`);
  if (compression !== undefined && !(Number.isInteger(compression) && compression >= 0 && compression <= 100)) {
    throw new Error(`compression must be an integer between 0 and 100, got ${String(compression)}`);
  }
  if (background !== 'transparent' && background !== 'opaque' && background !== 'auto') throw new Error(`unsupported background: ${String(background)}`);
}

/** Encodes a sharp pipeline as the options say. */
function encode(pipeline: sharp.Sharp, options: EncodingOptions): Promise<Buffer> {
  const settings = ENCODERS[options.quality ?? 'medium'];
  const lossy = options.compression === undefined ? {} : { quality: Math.max(1, options.compression) };
  // JPEG has no alpha; flattening on white matches what viewers show for transparent PNGs.
  const flat = options.format === 'jpeg' || options.background === 'opaque' ? pipeline.flatten({ background: '#ffffff' }) : pipeline;
  switch (options.format) {
    case 'png':
      return flat.png(settings.png).toBuffer();
    case 'jpeg':
      return flat.jpeg({ ...settings.jpeg, ...lossy }).toBuffer();
    case 'webp':
      return flat.webp({ ...settings.webp, ...lossy }).toBuffer();
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
    return await toRgba(sharp(input, { failOn: 'error', autoOrient: true }).resize(width, height, { fit: 'cover', position: 'centre' }));
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
    raw = await source.resize(width, height, { fit: 'cover', position: 'centre', kernel: 'nearest' }).raw().toBuffer({ resolveWithObject: true });
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
 * There is no model behind it: the prompt is matched against a small
 * vocabulary (subjects, settings, time of day, weather, palette, composition)
 * and the scene it describes is drawn as layered vector art, rasterised by
 * sharp. Needs no network and no GPU; the same request gives the same bytes.
 */
export class ImageRenderer {
  /**
   * The scene the prompt describes (e.g. "a lighthouse at dusk": a striped lighthouse on rocks, a sunset sky,
   * the sea), drawn as SVG and rasterised by sharp at exactly width x height. The seed and index vary layout
   * details; words outside the vocabulary only seed free choices. Same inputs -> identical bytes. No text is
   * drawn (fonts vary between hosts).
   */
  async render(req: RenderImageRequest): Promise<Buffer> {
    assertSize(req.width, req.height);
    assertEncoding(req);
    const transparent = req.background === 'transparent';
    const svg = promptSceneSvg(req.prompt, req.seed, req.index, req.width, req.height, !transparent);
    // density 72 maps one SVG user unit to one pixel, so the raster is exactly width x height.
    const raster = sharp(Buffer.from(svg), { density: 72 }).resize(req.width, req.height, { fit: 'fill' });
    return encode(transparent ? raster.ensureAlpha() : raster.removeAlpha(), req);
  }

  /**
   * Applies the instruction to the uploads: decode (sharp; failure -> InvalidImageError, including zero-byte or
   * non-image data), resize/cover to width x height, blend additional images into the first, then do what the
   * prompt asks: colour grades (sunset, night, dawn, black and white, sepia, warmer, cooler, brighter, darker,
   * neon, pastel, vivid, fog, storm), "blur the background", snow or rain, and painting in named subjects
   * ("add a cat"); an instruction with none of these gets a seeded grade. Transparent upload pixels are filled
   * with the scene the prompt describes, unless `background` is `transparent`: then they stay transparent, and
   * so does a plain backdrop (see {@link findBackdrop}), except where a subject or weather is painted over it.
   * With a mask (resized to the same size; undecodable mask -> InvalidImageError) the edit applies only where
   * mask alpha is 0, subjects are painted inside that area, and every other pixel is the first upload's,
   * unchanged. Output as `format`, `quality` and `compression` say, at exactly width x height.
   */
  async edit(req: EditImageRequest): Promise<Buffer> {
    assertSize(req.width, req.height);
    assertEncoding(req);
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

    const meaning = interpretEdit(req.prompt);
    const rng = new SeededRandom('edit', req.prompt, req.seed, req.index);
    const rawOptions = { raw: { width, height, channels: 4 as const } };
    const work = blended;
    const transparent = req.background === 'transparent';
    const backdrop = transparent ? findBackdrop(work, width, height) : undefined;
    if (!transparent && !isOpaque(work)) {
      // Transparent upload pixels are painted in with the scene the prompt describes, as an inpainting model would fill holes.
      const svg = buildSceneSvg(planScene(meaning.scene, req.seed, req.index, width, height));
      const scene = await toRgba(sharp(Buffer.from(svg), { density: 72 }).resize(width, height, { fit: 'fill' }));
      for (let o = 0; o < work.length; o += 4) {
        const a = (work[o + 3] as number) / 255;
        for (let c = 0; c < 3; c += 1) {
          const sc = scene[o + c] as number;
          work[o + c] = Math.round(sc + ((work[o + c] as number) - sc) * a);
        }
        work[o + 3] = 255;
      }
    }

    const canvas: EditCanvas = { width, height, rgba: work, ...(editable ? { editable } : {}) };
    const grades = gradesFor(meaning, rng);
    if (meaning.rain && !grades.includes('storm') && !grades.includes('night')) grades.push('cooler');
    applyGrades(canvas, grades);
    if (meaning.blurBackground) await blurBackground(canvas);
    // Cleared before painting, so that what is painted over the backdrop stays.
    if (backdrop) clearAlpha(canvas, backdrop);
    const subjects = await paintSubjects(canvas, meaning, rng);
    if (subjects) composite(canvas, subjects);
    if (meaning.snow) composite(canvas, await weatherOverlay(width, height, 'snow', rng));
    if (meaning.rain) composite(canvas, await weatherOverlay(width, height, 'rain', rng));

    // Outside the mask the first upload shows through untouched, byte for byte.
    const out = work;
    if (editable !== undefined) {
      for (let p = 0; p < editable.length; p += 1) {
        if (editable[p] === 1) continue;
        const o = p * 4;
        for (let c = 0; c < 4; c += 1) out[o + c] = original[o + c] as number;
      }
    }

    let pipeline = sharp(out, rawOptions);
    // Dropping a uniformly opaque alpha channel keeps PNGs smaller and matches what the upload looked
    // like; a transparent background keeps it whatever, so that the client always gets one.
    if (!transparent && isOpaque(out)) pipeline = pipeline.removeAlpha();
    return encode(pipeline, req);
  }
}
