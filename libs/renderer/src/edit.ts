import sharp from 'sharp';
import { hex, mix, rgb, type Rgb } from './colour';
import { n, Painter, svgDocument, type Look } from './paint';
import { SeededRandom } from './random';
import { drawSubject } from './subjects';
import type { EditMeaning, Grade, SubjectKind } from './vocabulary';

/**
 * Applies an interpreted edit instruction to raw RGBA pixels: colour grades,
 * weather overlays, background blur and painted-in subjects. The caller keeps
 * pixels outside the mask; everything here may touch the whole canvas.
 */

export interface EditCanvas {
  width: number;
  height: number;
  /** Raw RGBA, modified in place by grades; overlays return new buffers. */
  rgba: Buffer;
  /** 1 where the edit applies; undefined means everywhere. */
  editable?: Uint8Array;
}

/** Grades used when the instruction names nothing the vocabulary knows, so an edit is never a silent no-op. */
const FALLBACK_GRADES: Grade[] = ['warmer', 'cooler', 'vivid', 'sepia', 'sunset', 'pastel'];

type PixelGrade = (r: number, g: number, b: number, fy: number, out: number[]) => void;

function clamp8(v: number): number {
  return v < 0 ? 0 : v > 255 ? 255 : v;
}

function lumaOf(r: number, g: number, b: number): number {
  return 0.2126 * r + 0.7152 * g + 0.0722 * b;
}

function saturate(r: number, g: number, b: number, k: number, out: number[]): void {
  const y = lumaOf(r, g, b);
  out[0] = y + (r - y) * k;
  out[1] = y + (g - y) * k;
  out[2] = y + (b - y) * k;
}

const SEPIA_DARK = rgb('#2e1d10');
const SEPIA_MID = rgb('#a8794a');
const SEPIA_LIGHT = rgb('#f6e7c8');

const SUNSET_SKY: Array<[number, Rgb]> = [
  [0, rgb('#4a2a6a')],
  [0.25, rgb('#c04a6a')],
  [0.45, rgb('#f08a48')],
  [0.6, rgb('#ffc070')],
];
const DAWN_SKY: Array<[number, Rgb]> = [
  [0, rgb('#4a5a9a')],
  [0.25, rgb('#b88ab8')],
  [0.45, rgb('#f0a8b0')],
  [0.6, rgb('#ffd8b0')],
];

function gradientAt(stops: Array<[number, Rgb]>, t: number): Rgb {
  for (let i = 1; i < stops.length; i += 1) {
    const [o1, c1] = stops[i] as [number, Rgb];
    const [o0, c0] = stops[i - 1] as [number, Rgb];
    if (t <= o1) return mix(c0, c1, (t - o0) / (o1 - o0));
  }
  return (stops[stops.length - 1] as [number, Rgb])[1];
}

/**
 * Low-sun look: the upper part of the frame (where a sky usually is) takes the colours of a sunset sky,
 * modulated by the picture's own brightness so clouds and shapes stay; everything is warmed and the
 * foreground darkened, as the light is low.
 */
function sunsetLike(r: number, g: number, b: number, fy: number, out: number[], sky: Array<[number, Rgb]>, warm: [number, number, number]): void {
  const weight = Math.pow(Math.max(0, 1 - fy / 0.7), 0.45) * 0.9;
  const y = lumaOf(r, g, b) / 255;
  const c = gradientAt(sky, fy);
  const k = 0.55 + 0.7 * y;
  const shade = 1 - 0.3 * fy;
  out[0] = (r * warm[0] * (1 - weight) + c.r * k * weight) * shade;
  out[1] = (g * warm[1] * (1 - weight) + c.g * k * weight) * shade;
  out[2] = (b * warm[2] * (1 - weight) + c.b * k * weight) * shade;
}

/** Per-pixel colour transforms; `fy` is the row as a fraction of the height (0 = top), for sky-weighted looks. */
const GRADES: Record<Grade, PixelGrade> = {
  sunset: (r, g, b, fy, out) => sunsetLike(r, g, b, fy, out, SUNSET_SKY, [1.15, 0.84, 0.6]),
  dawn: (r, g, b, fy, out) => sunsetLike(r, g, b, fy, out, DAWN_SKY, [1.04, 0.92, 0.9]),
  night: (r, g, b, fy, out) => {
    saturate(r, g, b, 0.35, out);
    const lift = 6 * (1 - fy);
    out[0] = (out[0] as number) * 0.3 + lift;
    out[1] = (out[1] as number) * 0.38 + lift * 1.4;
    out[2] = (out[2] as number) * 0.62 + lift * 3;
  },
  day: (r, g, b, _fy, out) => {
    saturate(r, g, b, 1.15, out);
    out[0] = (out[0] as number) * 1.1 + 6;
    out[1] = (out[1] as number) * 1.1 + 6;
    out[2] = (out[2] as number) * 1.06 + 4;
  },
  bw: (r, g, b, _fy, out) => {
    const y = (lumaOf(r, g, b) - 128) * 1.1 + 128;
    out[0] = y;
    out[1] = y;
    out[2] = y;
  },
  sepia: (r, g, b, _fy, out) => {
    const y = clamp8(lumaOf(r, g, b)) / 255;
    const c: Rgb = y < 0.5 ? mix(SEPIA_DARK, SEPIA_MID, y * 2) : mix(SEPIA_MID, SEPIA_LIGHT, (y - 0.5) * 2);
    out[0] = c.r;
    out[1] = c.g;
    out[2] = c.b;
  },
  warmer: (r, g, b, _fy, out) => {
    out[0] = r * 1.1 + 8;
    out[1] = g * 1.01;
    out[2] = b * 0.85;
  },
  cooler: (r, g, b, _fy, out) => {
    out[0] = r * 0.86;
    out[1] = g * 0.99;
    out[2] = b * 1.1 + 8;
  },
  brighter: (r, g, b, _fy, out) => {
    out[0] = r * 1.2 + 14;
    out[1] = g * 1.2 + 14;
    out[2] = b * 1.2 + 14;
  },
  darker: (r, g, b, _fy, out) => {
    out[0] = r * 0.68;
    out[1] = g * 0.68;
    out[2] = b * 0.7;
  },
  neon: (r, g, b, _fy, out) => {
    // Crushed shadows tinted violet, saturated mid-tones, magenta/cyan split in the highlights.
    saturate(r, g, b, 1.9, out);
    const y = lumaOf(r, g, b) / 255;
    const k = 0.35 + y * 0.9;
    out[0] = (out[0] as number) * k + 40 * (1 - y) + (y > 0.5 ? 40 * (y - 0.5) : 0);
    out[1] = (out[1] as number) * k * 0.9;
    out[2] = (out[2] as number) * k + 70 * (1 - y) + (y > 0.5 ? 50 * (y - 0.5) : 0);
  },
  pastel: (r, g, b, _fy, out) => {
    saturate(r, g, b, 0.5, out);
    out[0] = (out[0] as number) * 0.6 + 100;
    out[1] = (out[1] as number) * 0.6 + 100;
    out[2] = (out[2] as number) * 0.6 + 104;
  },
  vivid: (r, g, b, _fy, out) => {
    saturate(r, g, b, 1.6, out);
    out[0] = ((out[0] as number) - 128) * 1.1 + 128;
    out[1] = ((out[1] as number) - 128) * 1.1 + 128;
    out[2] = ((out[2] as number) - 128) * 1.1 + 128;
  },
  fog: (r, g, b, fy, out) => {
    const k = 0.35 + 0.25 * Math.sin(Math.PI * Math.min(1, fy * 1.2));
    out[0] = r + (214 - r) * k;
    out[1] = g + (220 - g) * k;
    out[2] = b + (226 - b) * k;
  },
  storm: (r, g, b, _fy, out) => {
    saturate(r, g, b, 0.45, out);
    out[0] = (out[0] as number) * 0.58;
    out[1] = (out[1] as number) * 0.62;
    out[2] = (out[2] as number) * 0.7;
  },
};

/** The grades an edit applies, with a seeded fallback when the prompt asks for nothing recognisable. */
export function gradesFor(meaning: EditMeaning, rng: SeededRandom): Grade[] {
  const anything = meaning.grades.length > 0 || meaning.add.length > 0 || meaning.blurBackground || meaning.snow || meaning.rain;
  return anything ? meaning.grades : [rng.pick(FALLBACK_GRADES)];
}

export function applyGrades(canvas: EditCanvas, grades: Grade[]): void {
  if (grades.length === 0) return;
  const { width, height, rgba, editable } = canvas;
  const fns = grades.map((g) => GRADES[g]);
  const out = [0, 0, 0];
  for (let y = 0; y < height; y += 1) {
    const fy = y / Math.max(1, height - 1);
    for (let x = 0; x < width; x += 1) {
      const p = y * width + x;
      if (editable !== undefined && editable[p] === 0) continue;
      const o = p * 4;
      let r = rgba[o] as number;
      let g = rgba[o + 1] as number;
      let b = rgba[o + 2] as number;
      for (const fn of fns) {
        fn(r, g, b, fy, out);
        r = clamp8(out[0] as number);
        g = clamp8(out[1] as number);
        b = clamp8(out[2] as number);
      }
      rgba[o] = Math.round(r);
      rgba[o + 1] = Math.round(g);
      rgba[o + 2] = Math.round(b);
    }
  }
}

/** Blends a blurred copy over the parts away from the centre (or over the whole editable area when masked). */
export async function blurBackground(canvas: EditCanvas): Promise<void> {
  const { width, height, rgba, editable } = canvas;
  const sigma = Math.max(1.5, Math.min(width, height) * 0.012);
  const blurred = await sharp(rgba, { raw: { width, height, channels: 4 } })
    .blur(sigma)
    .raw()
    .toBuffer();
  for (let y = 0; y < height; y += 1) {
    const dy = (y / height - 0.55) / 0.42;
    for (let x = 0; x < width; x += 1) {
      const p = y * width + x;
      let w: number;
      if (editable !== undefined) {
        w = editable[p] === 1 ? 1 : 0;
      } else {
        // Subjects are usually near the centre: keep an ellipse there sharp and fade to full blur outside it.
        const dx = (x / width - 0.5) / 0.32;
        const d = Math.sqrt(dx * dx + dy * dy);
        w = d < 0.7 ? 0 : d > 1.1 ? 1 : (d - 0.7) / 0.4;
      }
      if (w === 0) continue;
      const o = p * 4;
      for (let c = 0; c < 3; c += 1) rgba[o + c] = Math.round((rgba[o + c] as number) * (1 - w) + (blurred[o + c] as number) * w);
    }
  }
}

/** Light estimated from the picture, so painted subjects sit in its light rather than in a fixed noon. */
function lookFromImage(canvas: EditCanvas): { look: Look; fromLeft: boolean } {
  const { width, height, rgba } = canvas;
  let sr = 0;
  let sg = 0;
  let sb = 0;
  let left = 0;
  let right = 0;
  let count = 0;
  const step = Math.max(1, Math.floor(Math.sqrt((width * height) / 4096)));
  for (let y = 0; y < height; y += step) {
    for (let x = 0; x < width; x += step) {
      const o = (y * width + x) * 4;
      const r = rgba[o] as number;
      const g = rgba[o + 1] as number;
      const b = rgba[o + 2] as number;
      sr += r;
      sg += g;
      sb += b;
      const l = lumaOf(r, g, b);
      if (x < width / 2) left += l;
      else right += l;
      count += 1;
    }
  }
  const mean = { r: sr / count, g: sg / count, b: sb / count };
  const level = Math.max(0.35, Math.min(1.05, lumaOf(mean.r, mean.g, mean.b) / 140));
  const m = Math.max(mean.r, mean.g, mean.b, 1);
  // Ambient: overall brightness, tinted a little towards the picture's cast.
  const tint = { r: 0.8 + (0.2 * mean.r) / m, g: 0.8 + (0.2 * mean.g) / m, b: 0.8 + (0.2 * mean.b) / m };
  const look: Look = {
    time: level < 0.5 ? 'night' : 'noon',
    style: 'natural',
    sky: [[0, mean]],
    haze: mean,
    ambient: { r: level * tint.r, g: level * tint.g, b: level * tint.b },
    light: rgb('#fff4dc'),
    contrast: 0.5,
    lightsOn: level < 0.5,
    night: level < 0.5,
    neon: false,
    neonColours: [rgb('#ff3cf0'), rgb('#2ef2ff')],
  };
  return { look, fromLeft: left >= right };
}

const SKY_KINDS = new Set<SubjectKind>(['bird', 'balloon', 'rocket', 'sun', 'moon', 'planet']);
const ASPECT: Partial<Record<SubjectKind, number>> = {
  house: 1.1,
  castle: 1.3,
  boat: 0.95,
  ship: 1.9,
  car: 2.2,
  dog: 1.5,
  fox: 1.7,
  whale: 2.4,
  bird: 3,
  tent: 1.6,
  fish: 2.4,
  campfire: 1.2,
  planet: 1.3,
};

/** Bounding box of the editable area, or undefined when there is none. */
function editableBox(canvas: EditCanvas): { x0: number; y0: number; x1: number; y1: number } | undefined {
  const { width, height, editable } = canvas;
  if (editable === undefined) return { x0: 0, y0: 0, x1: width, y1: height };
  let x0 = width;
  let y0 = height;
  let x1 = -1;
  let y1 = -1;
  for (let y = 0; y < height; y += 1) {
    for (let x = 0; x < width; x += 1) {
      if (editable[y * width + x] === 0) continue;
      if (x < x0) x0 = x;
      if (x > x1) x1 = x;
      if (y < y0) y0 = y;
      if (y > y1) y1 = y;
    }
  }
  return x1 < 0 ? undefined : { x0, y0, x1: x1 + 1, y1: y1 + 1 };
}

/**
 * Paints the requested subjects as an RGBA overlay. With a mask they fill the
 * editable box; without one, ground subjects stand in the lower third and sky
 * subjects float in the upper part, on a seeded side.
 */
export async function paintSubjects(canvas: EditCanvas, meaning: EditMeaning, rng: SeededRandom): Promise<Buffer | undefined> {
  const kinds: SubjectKind[] = [];
  for (const m of meaning.add) for (let i = 0; i < Math.min(m.count, 4); i += 1) kinds.push(m.kind);
  const drawable = kinds.filter((k) => k !== 'city' && k !== 'bridge' && k !== 'mountain');
  if (drawable.length === 0) return undefined;
  const box = editableBox(canvas);
  if (box === undefined) return undefined;
  const { width, height } = canvas;
  const { look, fromLeft } = lookFromImage(canvas);
  const p = new Painter(look, 'ed');
  const parts: string[] = [];
  const masked = canvas.editable !== undefined;
  const boxW = box.x1 - box.x0;
  const boxH = box.y1 - box.y0;
  const slots = drawable.length;
  const side = rng.next() < 0.5 ? -1 : 1;
  drawable.forEach((kind, i) => {
    const colour = meaning.add.find((m) => m.kind === kind)?.colour;
    const sky = SKY_KINDS.has(kind);
    let cx: number;
    let base: number;
    let size: number;
    const aspect = ASPECT[kind] ?? 0.8;
    if (masked) {
      const slotW = boxW / slots;
      cx = box.x0 + slotW * (i + 0.5);
      size = Math.min(boxH * 0.8, (slotW * 0.85) / aspect);
      base = sky ? box.y0 + boxH / 2 + size / 2 : box.y1 - boxH * 0.06;
    } else {
      const spread = slots > 1 ? (i - (slots - 1) / 2) * (0.6 / slots) : 0;
      cx = width * (0.5 + side * 0.18 + spread);
      size = Math.min(height * (sky ? 0.22 : 0.36), (width * 0.4) / aspect / Math.max(1, slots * 0.7));
      base = sky ? height * 0.12 + size : height * 0.9;
    }
    if (kind === 'sun' || kind === 'moon') {
      const r = size * 0.45;
      const cy = base - size / 2;
      const c = kind === 'moon' ? rgb('#f4f0dc') : rgb('#ffe48a');
      parts.push(`<circle cx="${n(cx)}" cy="${n(cy)}" r="${n(r * 3.5)}" fill="${p.glow(hex(c), 0.5)}"/>`);
      parts.push(`<circle cx="${n(cx)}" cy="${n(cy)}" r="${n(r)}" fill="${hex(c)}"/>`);
      if (kind === 'moon') {
        for (let k = 0; k < 5; k += 1) {
          const a = rng.range(0, Math.PI * 2);
          const d = rng.range(0, r * 0.6);
          parts.push(
            `<circle cx="${n(cx + Math.cos(a) * d)}" cy="${n(cy + Math.sin(a) * d)}" r="${n(r * rng.range(0.08, 0.2))}" fill="#c8c4b4" fill-opacity="0.6"/>`,
          );
        }
      }
      return;
    }
    const flip = cx < width / 2;
    const drawing = drawSubject(kind, p, {
      fromLeft: fromLeft !== flip,
      rng: new SeededRandom('edit-subject', kind, i, rng.nextUint32()),
      lightsOn: look.lightsOn,
      night: look.night,
      snowy: meaning.snow,
      bladeAngle: rng.range(0, 90),
      ...(colour ? { colour } : {}),
    });
    if (drawing === undefined) return;
    const k = size / drawing.height;
    if (!sky) {
      parts.push(
        `<ellipse cx="${n(cx + (fromLeft ? 1 : -1) * size * 0.15)}" cy="${n(base)}" rx="${n(size * 0.42)}" ry="${n(size * 0.05)}" fill="#000" fill-opacity="0.25"/>`,
      );
    }
    parts.push(`<g transform="translate(${n(cx)} ${n(base)}) scale(${n(flip ? -k : k)} ${n(k)})">${drawing.body}</g>`);
  });
  const svg = svgDocument(width, height, p.defs, parts.join(''));
  return sharp(Buffer.from(svg), { density: 72 }).resize(width, height, { fit: 'fill' }).ensureAlpha().raw().toBuffer();
}

/** Falling snow or rain as an RGBA overlay, plus the grade that goes with it. */
export async function weatherOverlay(width: number, height: number, kind: 'snow' | 'rain', rng: SeededRandom): Promise<Buffer> {
  const unit = Math.min(width, height);
  const parts: string[] = [];
  if (kind === 'snow') {
    // A fixed number of flakes per picture: snow should look the same at any resolution.
    const count = 500;
    const flakes: string[] = [];
    for (let i = 0; i < count; i += 1) {
      // At least a pixel and a bit across, or small pictures would get sub-pixel grey smudges instead of flakes.
      flakes.push(`<circle cx="${n(rng.range(0, width))}" cy="${n(rng.range(0, height))}" r="${n(Math.max(1.3, unit * rng.range(0.002, 0.007)))}"/>`);
    }
    parts.push(`<g fill="#ffffff" fill-opacity="0.92">${flakes.join('')}</g>`);
    // Settled snow brightens the lower part of the frame.
    parts.push(`<rect x="0" y="${n(height * 0.7)}" width="${width}" height="${n(height * 0.3)}" fill="url(#g)"/>`);
    const defs = [
      `<linearGradient id="g" x1="0" y1="0" x2="0" y2="1"><stop offset="0" stop-color="#f4f8ff" stop-opacity="0"/><stop offset="1" stop-color="#f4f8ff" stop-opacity="0.45"/></linearGradient>`,
    ];
    return rasterise(svgDocument(width, height, defs, parts.join('')), width, height);
  }
  const count = 700;
  const len = height * 0.05;
  const d: string[] = [];
  for (let i = 0; i < count; i += 1) {
    const s = rng.range(0.6, 1.2);
    d.push(`M${n(rng.range(0, width))},${n(rng.range(-len, height))} l${n(-len * 0.25 * s)},${n(len * s)}`);
  }
  parts.push(`<path d="${d.join(' ')}" stroke="#dfe8f4" stroke-width="${n(Math.max(0.8, unit / 700))}" stroke-opacity="0.45" stroke-linecap="round"/>`);
  return rasterise(svgDocument(width, height, [], parts.join('')), width, height);
}

function rasterise(svg: string, width: number, height: number): Promise<Buffer> {
  return sharp(Buffer.from(svg), { density: 72 }).resize(width, height, { fit: 'fill' }).ensureAlpha().raw().toBuffer();
}

/**
 * Source-over of an RGBA overlay onto the canvas (only where editable). An opaque pixel takes the
 * plain blend (bytes as they always were); a transparent one gains the overlay's coverage.
 */
export function composite(canvas: EditCanvas, overlay: Buffer): void {
  const { rgba, editable } = canvas;
  for (let p = 0, o = 0; o < rgba.length; p += 1, o += 4) {
    if (editable !== undefined && editable[p] === 0) continue;
    const a = (overlay[o + 3] as number) / 255;
    if (a === 0) continue;
    if (rgba[o + 3] === 255) {
      for (let c = 0; c < 3; c += 1) rgba[o + c] = Math.round((rgba[o + c] as number) * (1 - a) + (overlay[o + c] as number) * a);
      continue;
    }
    const below = ((rgba[o + 3] as number) / 255) * (1 - a);
    const cover = a + below;
    for (let c = 0; c < 3; c += 1) rgba[o + c] = Math.round(((overlay[o + c] as number) * a + (rgba[o + c] as number) * below) / cover);
    rgba[o + 3] = Math.round(cover * 255);
  }
}

/** Makes the marked pixels fully transparent (only where editable). */
export function clearAlpha(canvas: EditCanvas, marked: Uint8Array): void {
  const { rgba, editable } = canvas;
  for (let p = 0; p < marked.length; p += 1) {
    if (marked[p] === 1 && (editable === undefined || editable[p] === 1)) rgba[p * 4 + 3] = 0;
  }
}

/** How far (RGB distance) a pixel may be from the backdrop colour and still be backdrop: flat studio backdrops and soft gradients, not scenery. */
const BACKDROP_TOLERANCE = 48;
/** The share of a picture's edge that one colour must hold to be a backdrop rather than scenery that reaches the edge. */
const BACKDROP_MIN_EDGE_SHARE = 0.3;

/**
 * The backdrop of an upload, for `background: "transparent"`: 1 for each pixel that is
 * transparent already, or that is joined to the picture's edge through pixels close to the edge's
 * dominant colour (a studio wall, a flat or softly graded backdrop). An edge with no dominant
 * colour has no backdrop beyond its transparent pixels: there is no model here to tell a subject
 * from the scenery around it.
 */
export function findBackdrop(rgba: Buffer, width: number, height: number): Uint8Array {
  const backdrop = new Uint8Array(width * height);
  for (let p = 0; p < backdrop.length; p += 1) if (rgba[p * 4 + 3] === 0) backdrop[p] = 1;

  const edge: number[] = [];
  for (let x = 0; x < width; x += 1) edge.push(x, (height - 1) * width + x);
  for (let y = 1; y < height - 1; y += 1) edge.push(y * width, y * width + width - 1);
  const visible = edge.filter((p) => rgba[p * 4 + 3] !== 0);
  if (visible.length === 0) return backdrop;

  // The dominant colour: the fullest 4-bit-per-channel bucket, then the mean of its pixels.
  const bucketOf = (p: number) => ((rgba[p * 4] as number) >> 4) * 256 + ((rgba[p * 4 + 1] as number) >> 4) * 16 + ((rgba[p * 4 + 2] as number) >> 4);
  const counts = new Map<number, number>();
  for (const p of visible) counts.set(bucketOf(p), (counts.get(bucketOf(p)) ?? 0) + 1);
  const top = [...counts].reduce((best, entry) => (entry[1] > best[1] ? entry : best))[0];
  const inTop = visible.filter((p) => bucketOf(p) === top);
  const ref = [0, 1, 2].map((c) => inTop.reduce((sum, p) => sum + (rgba[p * 4 + c] as number), 0) / inTop.length);
  const near = (p: number) => {
    const o = p * 4;
    const dr = (rgba[o] as number) - (ref[0] as number);
    const dg = (rgba[o + 1] as number) - (ref[1] as number);
    const db = (rgba[o + 2] as number) - (ref[2] as number);
    return dr * dr + dg * dg + db * db <= BACKDROP_TOLERANCE * BACKDROP_TOLERANCE;
  };
  if (visible.filter(near).length < visible.length * BACKDROP_MIN_EDGE_SHARE) return backdrop;

  // Flood fill from the edge through backdrop-coloured (or transparent) pixels.
  const passable = (p: number) => rgba[p * 4 + 3] === 0 || near(p);
  const seen = new Uint8Array(width * height);
  const queue = new Int32Array(width * height);
  let head = 0;
  let tail = 0;
  for (const p of edge) {
    if (seen[p] === 0 && passable(p)) {
      seen[p] = 1;
      queue[tail++] = p;
    }
  }
  while (head < tail) {
    const p = queue[head++] as number;
    backdrop[p] = 1;
    const x = p % width;
    const neighbours = [x > 0 ? p - 1 : -1, x < width - 1 ? p + 1 : -1, p - width, p + width];
    for (const q of neighbours) {
      if (q < 0 || q >= seen.length || seen[q] === 1 || !passable(q)) continue;
      seen[q] = 1;
      queue[tail++] = q;
    }
  }
  return backdrop;
}
