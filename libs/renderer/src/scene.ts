import { mix, mul, rgb, type Rgb } from './colour';
import { buildLook, n, Painter, svgDocument, type Look } from './paint';
import type { Placed, ScenePlan } from './plan';
import { SeededRandom } from './random';
import { ANCHORS, drawSubject, windmillBlades } from './subjects';

/**
 * Turns a {@link ScenePlan} into layered SVG. A still image draws every layer
 * into one document; a video rasterises the layers separately and moves some
 * of them with ffmpeg (see video.ts), which is why moving things are kept apart.
 *
 * Deliberately text-free: librsvg would need system fonts, and their presence
 * (and therefore the output) varies between hosts.
 */

/** One SVG fragment with the definitions it references. */
export interface Fragment {
  defs: string[];
  body: string;
}

/** How a separately rendered piece moves in a video. All speeds are in pixels per second. */
export type Motion =
  | { kind: 'drift'; vx: number; bobAmplitude: number; bobPeriod: number }
  | { kind: 'wrap'; vx: number; bobAmplitude: number; bobPeriod: number }
  | { kind: 'rise'; vx: number; vy: number };

/** A piece drawn on its own canvas at (x, y) of the scene. */
export interface Sprite extends Fragment {
  x: number;
  y: number;
  width: number;
  height: number;
  motion: Motion;
}

/** Everything a still or a video needs, in drawing order. */
export interface SceneLayers {
  width: number;
  height: number;
  look: Look;
  sky: Fragment;
  /** Sun disc; in a video it sinks (dusk) or rises (dawn). */
  sun?: Sprite;
  /**
   * Clouds; `tile` repeats them every `width` pixels so a video can scroll them forever. Without `blur` the
   * edges are hard, for a caller that softens them more cheaply by rendering at a lower resolution.
   */
  clouds: (tile: boolean, blur?: boolean) => Fragment;
  far: Fragment;
  ground: Fragment;
  /** Water texture in bands: [yTop, yBottom, speed]; `tile` as for clouds. */
  waves: Array<{ top: number; bottom: number; speed: number; draw: (tile: boolean) => Fragment }>;
  subjects: Fragment;
  movers: Sprite[];
  /** Rotating lighthouse beam centred on the lamp; `draw(angle)` gives the static version. */
  beam?: { x: number; y: number; length: number; squash: number; draw: (angleDeg: number, square: boolean) => Fragment };
  /** Windmill sails turning about the hub. */
  blades: Array<{ x: number; y: number; radius: number; draw: (angleDeg: number, square: boolean) => Fragment }>;
  lightning?: Fragment;
  /** Falling rain or snow (or rising bubbles); `tile` repeats it every `height` pixels vertically. */
  precipitation: Array<{ speed: number; sway: number; draw: (tile: boolean) => Fragment }>;
  /** Fog, vignette and tint over everything. */
  atmosphere: Fragment;
  /** Fog alone (videos leave out the vignette). */
  fog?: Fragment;
}

const UNIT_REF = 1024;

function clip(v: number, lo: number, hi: number): number {
  return Math.max(lo, Math.min(hi, v));
}

function layerRng(plan: ScenePlan, layer: string, ...extra: unknown[]): SeededRandom {
  return new SeededRandom('scene', layer, ...plan.seedParts, ...extra);
}

function skyGradient(p: Painter, look: Look, height: number): string {
  return p.linear(
    look.sky.map(([o, c]) => [o, p.col(c)] as [number, string]),
    0,
    0,
    0,
    height,
    true,
  );
}

function drawSky(plan: ScenePlan, look: Look): Fragment {
  const { width, height, horizon } = plan;
  const p = new Painter(look, 'sk');
  const rng = layerRng(plan, 'sky', plan.setting, plan.time);
  const unit = Math.min(width, height) / UNIT_REF;
  const skyBottom = plan.setting === 'underwater' ? height : horizon + 4;
  const parts = [`<rect x="0" y="0" width="${width}" height="${height}" fill="${skyGradient(p, look, skyBottom)}"/>`];
  if (plan.setting === 'underwater') {
    return { defs: p.defs, body: parts.join('') };
  }
  if (plan.setting === 'space') {
    for (const [hue, op] of [
      [rgb('#6a2a9a'), 0.35],
      [rgb('#1a6a9a'), 0.3],
      [rgb('#9a2a5a'), 0.22],
    ] as Array<[Rgb, number]>) {
      const cx = width * rng.range(0.1, 0.9);
      const cy = height * rng.range(0.1, 0.6);
      parts.push(
        `<ellipse cx="${n(cx)}" cy="${n(cy)}" rx="${n(width * rng.range(0.25, 0.45))}" ry="${n(height * rng.range(0.12, 0.25))}" fill="${p.glow(p.col(hue), op)}" transform="rotate(${n(rng.range(-30, 30))} ${n(cx)} ${n(cy)})"/>`,
      );
    }
  }
  const starry = look.night || plan.setting === 'space';
  const stormy = plan.weather.includes('storm') || plan.weather.includes('fog');
  if ((starry || plan.time === 'dusk') && !stormy) {
    const count = Math.round((plan.setting === 'space' ? 0.00045 : starry ? 0.00028 : 0.00006) * width * horizon);
    const limit = starry ? horizon * 0.95 : horizon * 0.3;
    for (let i = 0; i < count; i += 1) {
      const x = rng.range(0, width);
      const y = rng.range(0, limit) * (starry ? 1 : rng.next());
      const bright = rng.next();
      const r = (0.5 + bright * bright * 1.6) * Math.max(0.6, unit * 1.2);
      const op = clip((0.35 + 0.65 * bright) * (1 - (y / horizon) * 0.6), 0.1, 1);
      const tint = rng.pick([rgb('#ffffff'), rgb('#dfe8ff'), rgb('#fff2d8')]);
      parts.push(`<circle cx="${n(x)}" cy="${n(y)}" r="${n(r)}" fill="${p.col(tint)}" fill-opacity="${n(op)}"/>`);
      if (bright > 0.93) {
        const l = r * 4;
        parts.push(
          `<path d="M${n(x - l)},${n(y)} H${n(x + l)} M${n(x)},${n(y - l)} V${n(y + l)}" stroke="${p.col(tint)}" stroke-width="${n(r * 0.35)}" stroke-opacity="${n(op * 0.7)}"/>`,
        );
      }
    }
  }
  // Light near the horizon around a low sun, and the halo of a high one.
  if (plan.sun) {
    const { x, y, r } = plan.sun;
    const haloColour = look.time === 'dusk' ? rgb('#ffb060') : look.time === 'dawn' ? rgb('#ffd0a0') : rgb('#fff8e0');
    parts.push(`<circle cx="${n(x)}" cy="${n(y)}" r="${n(r * 7)}" fill="${p.glow(p.col(haloColour), look.time === 'noon' ? 0.45 : 0.6)}"/>`);
    if (look.time === 'dusk' || look.time === 'dawn') {
      parts.push(`<ellipse cx="${n(x)}" cy="${n(horizon)}" rx="${n(width * 0.6)}" ry="${n(height * 0.12)}" fill="${p.glow(p.col(haloColour), 0.55)}"/>`);
    }
  }
  if (plan.moon) {
    const { x, y, r, crescent } = plan.moon;
    const moonColour = rgb('#f4f0dc');
    parts.push(`<circle cx="${n(x)}" cy="${n(y)}" r="${n(r * 4.5)}" fill="${p.glow(p.col(rgb('#c8d8ff')), 0.4)}"/>`);
    if (crescent) {
      const id = p.id();
      p.defs.push(
        `<mask id="${id}"><rect x="0" y="0" width="${width}" height="${height}" fill="#000"/><circle cx="${n(x)}" cy="${n(y)}" r="${n(r)}" fill="#fff"/><circle cx="${n(x + r * 0.45)}" cy="${n(y - r * 0.2)}" r="${n(r * 0.92)}" fill="#000"/></mask>`,
      );
      parts.push(`<circle cx="${n(x)}" cy="${n(y)}" r="${n(r)}" fill="${p.col(moonColour)}" mask="url(#${id})"/>`);
    } else {
      parts.push(`<circle cx="${n(x)}" cy="${n(y)}" r="${n(r)}" fill="${p.col(moonColour)}"/>`);
      for (let i = 0; i < 6; i += 1) {
        const a = rng.range(0, Math.PI * 2);
        const d = rng.range(0, r * 0.65);
        parts.push(
          `<circle cx="${n(x + Math.cos(a) * d)}" cy="${n(y + Math.sin(a) * d)}" r="${n(r * rng.range(0.08, 0.22))}" fill="${p.col(rgb('#c8c4b4'))}" fill-opacity="0.6"/>`,
        );
      }
    }
  }
  return { defs: p.defs, body: parts.join('') };
}

function drawSun(plan: ScenePlan, look: Look): Sprite | undefined {
  if (!plan.sun) return undefined;
  const { x, y, r } = plan.sun;
  const p = new Painter(look, 'sn');
  const size = Math.ceil(r * 2.6);
  const c = size / 2;
  const core = look.time === 'dusk' ? rgb('#ffdf8a') : look.time === 'dawn' ? rgb('#fff0c0') : rgb('#fffbea');
  const edge = look.time === 'dusk' ? rgb('#ff8a3a') : look.time === 'dawn' ? rgb('#ffc080') : rgb('#fff4c0');
  const parts: string[] = [];
  if (look.neon) {
    // A striped "synthwave" sun: stripes cut from the lower half through a mask.
    const id = p.id();
    const stripes: string[] = [];
    for (let i = 0; i < 6; i += 1) {
      const sy = c + r * (0.1 + i * 0.15);
      stripes.push(`<rect x="0" y="${n(sy)}" width="${size}" height="${n(r * (0.03 + i * 0.018))}" fill="#000"/>`);
    }
    p.defs.push(`<mask id="${id}"><rect x="0" y="0" width="${size}" height="${size}" fill="#fff"/>${stripes.join('')}</mask>`);
    const grad = p.linear(
      [
        [0, p.emit(rgb('#ffe84a'))],
        [0.55, p.emit(rgb('#ff7a3a'))],
        [1, p.emit(rgb('#ff2a9a'))],
      ],
      0,
      0,
      0,
      1,
    );
    parts.push(`<circle cx="${n(c)}" cy="${n(c)}" r="${n(r)}" fill="${grad}" mask="url(#${id})"/>`);
  } else {
    const id = p.id();
    p.defs.push(
      `<radialGradient id="${id}"><stop offset="0" stop-color="${p.col(core)}"/><stop offset="0.7" stop-color="${p.col(core)}"/><stop offset="1" stop-color="${p.col(edge)}"/></radialGradient>`,
    );
    parts.push(`<circle cx="${n(c)}" cy="${n(c)}" r="${n(r * 1.25)}" fill="${p.glow(p.col(edge), 0.6)}"/>`);
    parts.push(`<circle cx="${n(c)}" cy="${n(c)}" r="${n(r)}" fill="url(#${id})"/>`);
  }
  const speed = look.time === 'dusk' ? r * 0.22 : look.time === 'dawn' ? -r * 0.22 : 0;
  return {
    defs: p.defs,
    body: parts.join(''),
    x: x - c,
    y: y - c,
    width: size,
    height: size,
    motion: { kind: 'rise', vx: 0, vy: speed },
  };
}

function cloudColours(look: Look, storm: boolean): { top: Rgb; under: Rgb; opacity: number } {
  if (storm) return { top: rgb('#56606c'), under: rgb('#383f4a'), opacity: 0.95 };
  switch (look.time) {
    case 'dusk':
      return { top: rgb('#ffb48a'), under: rgb('#6a3a6a'), opacity: 0.92 };
    case 'dawn':
      return { top: rgb('#ffd6dc'), under: rgb('#8a76a6'), opacity: 0.9 };
    case 'night':
      return { top: rgb('#4a5a7a'), under: rgb('#141c30'), opacity: 0.7 };
    default:
      return { top: rgb('#ffffff'), under: rgb('#b8c4d6'), opacity: 0.95 };
  }
}

function makeClouds(plan: ScenePlan, look: Look): (tile: boolean, blur?: boolean) => Fragment {
  const { width, horizon } = plan;
  const rng = layerRng(plan, 'clouds', plan.setting, plan.time);
  const storm = plan.weather.includes('storm');
  const cloudy = plan.weather.includes('cloudy') || plan.weather.includes('rain');
  if (plan.setting === 'underwater' || plan.setting === 'space') return () => ({ defs: [], body: '' });
  const across = Math.max(1, width / (plan.height * 1.4));
  const count = Math.round(
    (storm ? rng.int(9, 13) : cloudy ? rng.int(7, 10) : plan.weather.includes('fog') ? 0 : look.night ? rng.int(1, 3) : rng.int(2, 5)) * across,
  );
  const { top, under, opacity } = cloudColours(look, storm);
  const unit = Math.min(width, plan.height);
  const clouds: Array<{ x: number; y: number; w: number; puffs: Array<[number, number, number]> }> = [];
  for (let i = 0; i < count; i += 1) {
    // Sized from the shorter side too, so a wide frame gets more clouds across rather than taller ones.
    const w = Math.min(width, plan.height * 1.4) * (storm ? rng.range(0.25, 0.5) : rng.range(0.12, 0.3));
    const y = Math.max(w * 0.3, storm ? horizon * rng.range(0.02, 0.55) : horizon * rng.range(0.08, 0.6));
    const x = rng.range(0, width);
    const puffs: Array<[number, number, number]> = [];
    const k = rng.int(5, 8);
    for (let j = 0; j < k; j += 1) {
      const t = (j + 0.5) / k;
      const r = w * 0.22 * (0.6 + Math.sin(Math.PI * t) * 0.7) * rng.range(0.8, 1.15);
      puffs.push([(t - 0.5) * w * 0.85 + rng.range(-0.04, 0.04) * w, -r * rng.range(0.35, 0.7), r]);
    }
    clouds.push({ x, y, w, puffs });
  }
  const sunSide = plan.lightFromLeft ? -1 : 1;
  return (tile, blur = true) => {
    const p = new Painter(look, tile ? 'ct' : 'cl');
    const parts: string[] = [];
    const offsets = tile ? [-width, 0, width, 2 * width] : [0];
    for (const off of offsets) {
      for (const c of clouds) {
        const group: string[] = [];
        for (const [dx, dy, r] of c.puffs) group.push(`<circle cx="${n(dx)}" cy="${n(dy)}" r="${n(r)}" fill="${p.col(under)}"/>`);
        group.push(
          `<rect x="${n(-c.w * 0.5)}" y="${n(-c.w * 0.06)}" width="${n(c.w)}" height="${n(c.w * 0.08)}" rx="${n(c.w * 0.04)}" fill="${p.col(under)}"/>`,
        );
        for (const [dx, dy, r] of c.puffs) {
          group.push(`<circle cx="${n(dx + sunSide * r * 0.12)}" cy="${n(dy - r * 0.18)}" r="${n(r * 0.82)}" fill="${p.col(top)}"/>`);
        }
        parts.push(`<g transform="translate(${n(c.x + off)} ${n(c.y)})" opacity="${n(opacity)}">${group.join('')}</g>`);
      }
    }
    if (parts.length === 0) return { defs: p.defs, body: '' };
    // One blur for all clouds: per-cloud filters multiply librsvg's work.
    return { defs: p.defs, body: blur ? `<g filter="${p.blur(unit * 0.004)}">${parts.join('')}</g>` : parts.join('') };
  };
}

/** A jagged ridge from x=0 to width: [x, y] points. */
function ridge(rng: SeededRandom, width: number, base: number, minH: number, maxH: number, peaks: number): Array<[number, number]> {
  const points: Array<[number, number]> = [[-width * 0.05, base - rng.range(minH, maxH) * 0.4]];
  for (let i = 0; i < peaks; i += 1) {
    const x0 = (i / peaks) * width * 1.1 - width * 0.05;
    const step = (width * 1.1) / peaks;
    points.push([x0 + step * rng.range(0.3, 0.6), base - rng.range(minH, maxH)]);
    points.push([x0 + step * rng.range(0.75, 1), base - rng.range(minH, maxH) * rng.range(0.25, 0.55)]);
  }
  points.push([width * 1.05, base - rng.range(minH, maxH) * 0.4]);
  return points;
}

/** Distant scenery. `cheap` (for reflections) skips blur filters, which would double the rendering time. */
function drawFar(plan: ScenePlan, look: Look, prefix = 'fa', cheap = false): Fragment {
  const { width, height, horizon } = plan;
  const p = new Painter(look, prefix);
  const rng = layerRng(plan, 'far', plan.setting, plan.backdrops);
  const parts: string[] = [];
  const haze = look.haze;
  const snowColour = rgb('#f2f5fb');
  const fromLeft = plan.lightFromLeft;
  const neonStroke = look.neon ? ` stroke="${p.emit(look.neonColours[0])}" stroke-width="${n(Math.max(1, width / 700))}" stroke-opacity="0.8"` : '';

  const mountainRange = (pts: Array<[number, number]>, rock: Rgb, hazeAmount: number, snowLine: number, base: number): void => {
    const colour = mix(rock, haze, hazeAmount);
    const poly = [...pts, [width * 1.05, base + 2], [-width * 0.05, base + 2]] as Array<[number, number]>;
    parts.push(`<polygon points="${poly.map(([x, y]) => `${n(x)},${n(y)}`).join(' ')}" fill="${p.surf(colour)}"${neonStroke}/>`);
    for (let i = 1; i < pts.length - 1; i += 1) {
      const [px, py] = pts[i] as [number, number];
      const [lx, ly] = pts[i - 1] as [number, number];
      const [rx, ry] = pts[i + 1] as [number, number];
      if (py > ly || py > ry) continue;
      // Shadow on the face turned away from the light.
      const [sx, sy] = fromLeft ? [rx, ry] : [lx, ly];
      const mid = px + (sx - px) * 0.35;
      parts.push(
        `<polygon points="${n(px)},${n(py)} ${n(sx)},${n(sy)} ${n(sx)},${n(base)} ${n(mid)},${n(base)}" fill="${p.surf(mul(colour, 0.62))}" fill-opacity="${n(0.35 + look.contrast * 0.6)}"/>`,
      );
      if (base - py > snowLine) {
        const depth = (base - py - snowLine) * 0.55 + (base - py) * 0.08;
        const t = depth / Math.max(1, base - py);
        const ax = px + (lx - px) * t * 1.2;
        const ay = py + (ly - py) * t * 1.2;
        const bx = px + (rx - px) * t * 1.2;
        const by = py + (ry - py) * t * 1.2;
        const snow = mix(snowColour, haze, hazeAmount * 0.6);
        parts.push(
          `<polygon points="${n(px)},${n(py)} ${n(bx)},${n(by)} ${n(px + (bx - px) * 0.55)},${n(py + (by - py) * 0.7)} ${n(px + (bx - px) * 0.2)},${n(by)} ${n(px - (px - ax) * 0.25)},${n(py + (ay - py) * 0.75)} ${n(ax)},${n(ay)}" fill="${p.surf(snow)}"/>`,
        );
        const [shx, shy] = fromLeft ? [bx, by] : [ax, ay];
        parts.push(
          `<polygon points="${n(px)},${n(py)} ${n(shx)},${n(shy)} ${n(px + (shx - px) * 0.3)},${n(shy)}" fill="${p.surf(mix(snow, rgb('#7a8ab8'), 0.45))}" fill-opacity="0.8"/>`,
        );
      }
    }
  };

  const backdrops = new Set(plan.backdrops);
  if (backdrops.has('mountains')) {
    const rock = plan.snowy ? rgb('#7a86a0') : rgb('#5e6a80');
    const maxH = plan.setting === 'mountains' || plan.setting === 'snowfield' ? 0.34 : 0.22;
    mountainRange(ridge(rng, width, horizon, height * maxH * 0.45, height * maxH, rng.int(3, 5)), rock, 0.55, height * maxH * 0.55, horizon);
    mountainRange(
      ridge(rng, width, horizon, height * maxH * 0.2, height * maxH * 0.65, rng.int(4, 6)),
      mix(rock, rgb('#3a4458'), 0.5),
      0.3,
      height * maxH * 0.45,
      horizon,
    );
  }
  if (plan.peak) {
    const { x, top, halfWidth } = plan.peak;
    const flat = halfWidth * 0.22;
    const rock = plan.snowy ? rgb('#6a7088') : rgb('#5a5e6a');
    const left: Array<[number, number]> = [
      [x - halfWidth * 1.4, horizon + 2],
      [x - halfWidth * 0.8, horizon - (horizon - top) * 0.35],
      [x - halfWidth * 0.45, horizon - (horizon - top) * 0.7],
      [x - flat, top + (horizon - top) * 0.02],
      [x - flat * 0.8, top],
    ];
    const right: Array<[number, number]> = [
      [x + flat * 0.8, top],
      [x + flat, top + (horizon - top) * 0.03],
      [x + halfWidth * 0.5, horizon - (horizon - top) * 0.6],
      [x + halfWidth * 0.9, horizon - (horizon - top) * 0.25],
      [x + halfWidth * 1.4, horizon + 2],
    ];
    const all = [...left, ...right];
    parts.push(`<polygon points="${all.map(([a, b]) => `${n(a)},${n(b)}`).join(' ')}" fill="${p.surf(mix(rock, haze, 0.12))}"${neonStroke}/>`);
    const shadowSide = fromLeft ? right : [...left].reverse();
    parts.push(
      `<polygon points="${[[x, top], ...shadowSide].map(([a, b]) => `${n(a)},${n(b)}`).join(' ')} ${n(x)},${n(horizon)}" fill="${p.surf(mul(rock, 0.6))}" fill-opacity="0.55"/>`,
    );
    for (let i = 0; i < 7; i += 1) {
      const t = rng.range(0.15, 0.85);
      const yy = top + (horizon - top) * t;
      const half = flat + (halfWidth - flat) * t * 0.8;
      const xx = x + rng.range(-half, half);
      parts.push(
        `<path d="M${n(xx)},${n(yy)} l${n(halfWidth * 0.06)},${n((horizon - top) * 0.04)}" stroke="${p.surf(mul(rock, 0.5))}" stroke-width="${n(width / 500)}" stroke-opacity="0.5"/>`,
      );
    }
    if (plan.snowy) {
      parts.push(
        `<polygon points="${n(x - flat * 0.8)},${n(top)} ${n(x + flat * 0.8)},${n(top)} ${n(x + flat * 1.6)},${n(top + (horizon - top) * 0.12)} ${n(x)},${n(top + (horizon - top) * 0.07)} ${n(x - flat * 1.7)},${n(top + (horizon - top) * 0.13)}" fill="${p.surf(snowColour)}"/>`,
      );
    }
  }
  if (backdrops.has('hills') || backdrops.has('farshore')) {
    const green = plan.snowy ? rgb('#e6ecf6') : plan.setting === 'lake' ? rgb('#3f6a48') : rgb('#6a9a4a');
    const layers = backdrops.has('farshore') ? 1 : 2;
    for (let layer = 0; layer < layers; layer += 1) {
      const amp = height * (backdrops.has('farshore') ? 0.035 : 0.06 - layer * 0.02);
      const colour = mix(green, haze, layer === 0 ? 0.45 : 0.15);
      let d = `M${n(-width * 0.05)},${n(horizon + 2)}`;
      const segs = 4;
      let prevY = horizon - amp * rng.range(0.2, 1);
      d += ` L${n(-width * 0.05)},${n(prevY)}`;
      for (let i = 0; i < segs; i += 1) {
        const x1 = ((i + 1) / segs) * width * 1.1 - width * 0.05;
        const y1 = horizon - amp * rng.range(0.2, 1.3);
        const cx = x1 - (width * 1.1) / segs / 2;
        d += ` Q${n(cx)},${n(Math.min(prevY, y1) - amp * rng.range(0.3, 0.9))} ${n(x1)},${n(y1)}`;
        prevY = y1;
      }
      d += ` L${n(width * 1.05)},${n(horizon + 2)} Z`;
      parts.push(`<path d="${d}" fill="${p.surf(colour)}"${neonStroke}/>`);
    }
  }
  if (backdrops.has('treeline') || backdrops.has('farshore')) {
    const treeColour = mix(plan.snowy ? rgb('#4a6a5a') : rgb('#2a5034'), haze, plan.setting === 'forest' ? 0.25 : 0.4);
    const fill = p.surf(treeColour);
    const h0 = height * (plan.setting === 'forest' ? 0.09 : 0.045);
    const shapes: string[] = [];
    for (let x = -width * 0.02; x < width * 1.02;) {
      const h = h0 * rng.range(0.55, 1.2);
      const w = h * rng.range(0.35, 0.55);
      const base = horizon + 3;
      if (rng.next() < 0.6) shapes.push(`M${n(x - w / 2)},${n(base)} L${n(x)},${n(base - h)} L${n(x + w / 2)},${n(base)} Z`);
      else
        shapes.push(
          `M${n(x - w / 2)},${n(base)} L${n(x - w / 2)},${n(base - h * 0.6)} A${n(w / 2)},${n(h * 0.45)} 0 0 1 ${n(x + w / 2)},${n(base - h * 0.6)} L${n(x + w / 2)},${n(base)} Z`,
        );
      x += w * rng.range(0.4, 0.8);
    }
    parts.push(`<path d="${shapes.join(' ')}" fill="${fill}"/>`);
    if (plan.snowy) {
      parts.push(`<rect x="0" y="${n(horizon - h0 * 0.4)}" width="${width}" height="${n(h0 * 0.4)}" fill="${p.surf(rgb('#e8eef8'))}" fill-opacity="0.25"/>`);
    }
  }
  if (backdrops.has('dunes')) {
    const sand = rgb('#d8a860');
    for (let layer = 0; layer < 2; layer += 1) {
      const amp = height * (0.07 - layer * 0.025);
      const colour = mix(sand, haze, layer === 0 ? 0.4 : 0.1);
      let d = `M${n(-width * 0.05)},${n(horizon + 2)}`;
      let x = -width * 0.05;
      d += ` L${n(x)},${n(horizon - amp * 0.3)}`;
      while (x < width * 1.05) {
        const w = width * rng.range(0.25, 0.45);
        const peakY = horizon - amp * rng.range(0.5, 1.2);
        d += ` Q${n(x + w * 0.55)},${n(peakY - amp * 0.6)} ${n(x + w * 0.7)},${n(peakY)} Q${n(x + w * 0.85)},${n(horizon - amp * 0.1)} ${n(x + w)},${n(horizon - amp * 0.3)}`;
        x += w;
      }
      d += ` L${n(width * 1.05)},${n(horizon + 2)} Z`;
      parts.push(`<path d="${d}" fill="${p.surf(colour)}"${neonStroke}/>`);
    }
  }
  if (backdrops.has('islands')) {
    const k = rng.int(1, 2);
    for (let i = 0; i < k; i += 1) {
      const x = width * rng.range(0.05, 0.95);
      const w = width * rng.range(0.08, 0.2);
      const h = height * rng.range(0.015, 0.04);
      parts.push(
        `<path d="M${n(x - w / 2)},${n(horizon + 1)} Q${n(x - w / 4)},${n(horizon - h)} ${n(x)},${n(horizon - h)} Q${n(x + w / 3)},${n(horizon - h * 1.1)} ${n(x + w / 2)},${n(horizon + 1)} Z" fill="${p.surf(mix(rgb('#3a5a44'), haze, 0.55))}"/>`,
      );
    }
  }
  if (backdrops.has('skyline') || plan.skylineSubject) {
    parts.push(drawSkyline(p, plan, look, rng, plan.skylineSubject, cheap));
  }
  if (plan.bridge) parts.push(drawBridge(p, plan, look, rng));
  return { defs: p.defs, body: parts.join('') };
}

function drawSkyline(p: Painter, plan: ScenePlan, look: Look, rng: SeededRandom, main: boolean, cheap: boolean): string {
  const { width, height, horizon } = plan;
  const parts: string[] = [];
  const rows = main ? 2 : 1;
  const unit = Math.min(width, height);
  for (let row = 0; row < rows; row += 1) {
    const far = main && row === 0;
    const maxH = main ? (far ? 0.3 : 0.42) : 0.14;
    const minH = main ? (far ? 0.12 : 0.1) : 0.04;
    const hazeAmount = main ? (far ? 0.45 : 0.08) : 0.5;
    const outlines: string[] = [];
    let x = -width * rng.range(0, 0.04);
    while (x < width) {
      const w = width * (main ? rng.range(0.045, 0.1) : rng.range(0.025, 0.06));
      const h = height * rng.range(minH, maxH) * (main && !far ? 0.6 + 0.4 * Math.sin(Math.PI * clip(x / width, 0, 1)) + rng.range(0, 0.3) : 1);
      const top = horizon + 2 - h;
      const base = look.neon ? rgb('#1a1030') : rng.pick([rgb('#5a6478'), rgb('#6a6a74'), rgb('#4a5468'), rgb('#7a7468'), rgb('#3e4a5e')]);
      const colour = mix(base, look.haze, hazeAmount);
      parts.push(`<rect x="${n(x)}" y="${n(top)}" width="${n(w)}" height="${n(h + 4)}" fill="${p.lit(colour, plan.lightFromLeft)}"/>`);
      if (look.neon && main) {
        outlines.push(
          `<rect x="${n(x)}" y="${n(top)}" width="${n(w)}" height="${n(h + 4)}" fill="none" stroke="${p.emit(rng.pick(look.neonColours))}" stroke-width="${n(unit / 400)}"/>`,
        );
      }
      const roof = rng.next();
      if (roof < 0.25)
        parts.push(
          `<polygon points="${n(x + w * 0.2)},${n(top)} ${n(x + w * 0.5)},${n(top - w * 0.6)} ${n(x + w * 0.8)},${n(top)}" fill="${p.surf(colour)}"/>`,
        );
      else if (roof < 0.5)
        parts.push(`<rect x="${n(x + w * 0.2)}" y="${n(top - h * 0.08)}" width="${n(w * 0.6)}" height="${n(h * 0.08 + 1)}" fill="${p.surf(colour)}"/>`);
      if (roof > 0.7) {
        parts.push(`<path d="M${n(x + w / 2)},${n(top)} V${n(top - h * 0.18)}" stroke="${p.surf(colour)}" stroke-width="${n(Math.max(1, w * 0.04))}"/>`);
        if (look.lightsOn)
          parts.push(`<circle cx="${n(x + w / 2)}" cy="${n(top - h * 0.18)}" r="${n(Math.max(1.2, w * 0.04))}" fill="${p.emit(rgb('#ff3a3a'))}"/>`);
      }
      if (!far || look.lightsOn) {
        const cols = Math.max(2, Math.floor(w / (unit * (main ? 0.014 : 0.01))));
        const rowsW = Math.max(2, Math.floor(h / (unit * (main ? 0.02 : 0.014))));
        const cw = w / cols;
        const rh = h / rowsW;
        const windowLit = look.neon ? rng.pick([rgb('#ff5af0'), rgb('#4af2ff'), rgb('#ffd86a')]) : rgb('#ffd37a');
        const cells: string[] = [];
        const dark: string[] = [];
        for (let c = 0; c < cols; c += 1) {
          for (let r = 1; r < rowsW; r += 1) {
            const wx = x + c * cw + cw * 0.25;
            const wy = top + r * rh;
            const cell = `M${n(wx)},${n(wy)} h${n(cw * 0.5)} v${n(rh * 0.55)} h${n(-cw * 0.5)} Z`;
            if (look.lightsOn ? rng.next() < (main ? 0.42 : 0.3) : rng.next() < 0.5) cells.push(cell);
            else if (main && !far) dark.push(cell);
          }
        }
        if (cells.length > 0)
          parts.push(`<path d="${cells.join(' ')}" fill="${look.lightsOn ? p.emit(windowLit) : p.surf(rgb('#a8c4dc'))}" fill-opacity="${far ? 0.6 : 0.95}"/>`);
        if (dark.length > 0) parts.push(`<path d="${dark.join(' ')}" fill="${p.surf(mul(colour, 0.6))}"/>`);
      }
      x += w * rng.range(main ? 0.9 : 0.95, main ? 1.15 : 1.3);
    }
    // One glow filter per row rather than per building: filters dominate librsvg's time.
    if (outlines.length > 0) parts.push(cheap ? outlines.join('') : `<g filter="${p.neonGlow(unit / 250)}">${outlines.join('')}</g>`);
  }
  return parts.join('');
}

function drawBridge(p: Painter, plan: ScenePlan, look: Look, rng: SeededRandom): string {
  const { width, height, horizon } = plan;
  const colour = rng.pick([rgb('#c2432e'), rgb('#8a8e96'), rgb('#3a5a8a')]);
  const deck = horizon - height * 0.05;
  const towerTop = deck - height * 0.26;
  const towers = [width * rng.range(0.2, 0.3), width * rng.range(0.7, 0.8)];
  const sw = Math.max(1, width / 600);
  const parts: string[] = [];
  const stroke = p.surf(colour);
  const cable = (x0: number, y0: number, x1: number, y1: number, sag: number): string =>
    `<path d="M${n(x0)},${n(y0)} Q${n((x0 + x1) / 2)},${n(Math.max(y0, y1) + sag)} ${n(x1)},${n(y1)}" stroke="${stroke}" stroke-width="${n(sw * 1.6)}" fill="none"/>`;
  const [t0, t1] = towers as [number, number];
  parts.push(cable(-width * 0.1, deck - height * 0.01, t0, towerTop, height * 0.02));
  parts.push(cable(t0, towerTop, t1, towerTop, deck - towerTop - height * 0.01));
  parts.push(cable(t1, towerTop, width * 1.1, deck - height * 0.01, height * 0.02));
  // Hangers from the main cable down to the deck.
  const hang: string[] = [];
  for (let x = t0 + (t1 - t0) / 24; x < t1; x += (t1 - t0) / 24) {
    const t = (x - t0) / (t1 - t0);
    const y = towerTop + (deck - towerTop - height * 0.01) * 2 * t * (1 - t) * 2;
    hang.push(`M${n(x)},${n(Math.min(y, deck))} V${n(deck)}`);
  }
  parts.push(`<path d="${hang.join(' ')}" stroke="${stroke}" stroke-width="${n(sw * 0.6)}" stroke-opacity="0.8"/>`);
  for (const tx of towers) {
    const tw = width * 0.018;
    parts.push(
      `<rect x="${n(tx - tw / 2)}" y="${n(towerTop)}" width="${n(tw)}" height="${n(horizon - towerTop + 4)}" fill="${p.lit(colour, plan.lightFromLeft)}"/>`,
    );
    parts.push(
      `<rect x="${n(tx - tw / 2)}" y="${n(towerTop + (deck - towerTop) * 0.3)}" width="${n(tw)}" height="${n(tw * 0.5)}" fill="${p.surf(colour, 0.6)}"/>`,
    );
  }
  parts.push(`<rect x="${n(-width * 0.05)}" y="${n(deck)}" width="${n(width * 1.1)}" height="${n(height * 0.012)}" fill="${p.surf(colour, 0.8)}"/>`);
  if (look.lightsOn) {
    const lamps: string[] = [];
    for (let x = 0; x < width; x += width / 30) lamps.push(`<circle cx="${n(x)}" cy="${n(deck - 1)}" r="${n(sw * 1.3)}" fill="${p.emit(rgb('#ffe08a'))}"/>`);
    parts.push(lamps.join(''));
  }
  return parts.join('');
}

const WATER: Record<ScenePlan['time'], [string, string]> = {
  dawn: ['#b890a8', '#243a6b'],
  morning: ['#8ab8de', '#0f5792'],
  noon: ['#5fa0da', '#0a4a88'],
  dusk: ['#c87a6a', '#1c2452'],
  night: ['#1a2c52', '#020814'],
};

function isWater(plan: ScenePlan): boolean {
  return plan.setting === 'sea' || plan.setting === 'lake' || plan.setting === 'beach' || (plan.setting === 'city' && plan.skylineSubject);
}

function waterColours(plan: ScenePlan, look: Look): [Rgb, Rgb] {
  const [near, deep] = WATER[plan.time].map(rgb) as [Rgb, Rgb];
  let top = mix(near, look.haze, 0.45);
  let bottom = deep;
  if (plan.setting === 'lake') {
    top = mix(top, rgb('#3a6a5a'), 0.15);
    bottom = mix(bottom, rgb('#12332e'), 0.35);
  }
  if (plan.weather.includes('storm') || plan.weather.includes('cloudy')) {
    top = mix(top, rgb('#5a6470'), 0.5);
    bottom = mix(bottom, rgb('#1a2430'), 0.5);
  }
  if (look.neon) {
    top = mix(top, rgb('#4a1060'), 0.6);
    bottom = rgb('#06020f');
  }
  return [top, bottom];
}

function groundColours(plan: ScenePlan): [Rgb, Rgb] {
  if (plan.snowy) return [rgb('#dfe6f2'), rgb('#f4f7fc')];
  switch (plan.setting) {
    case 'desert':
      return [rgb('#d8a45a'), rgb('#e8bc74')];
    case 'forest':
      return [rgb('#3a5a2a'), rgb('#4a6a30')];
    case 'city':
      return [rgb('#54585e'), rgb('#3a3d42')];
    case 'space':
      return [rgb('#6a6a70'), rgb('#9a9aa0')];
    case 'mountains':
      return [rgb('#6a8a44'), rgb('#7a9a4a')];
    default:
      return [rgb('#6a9e44'), rgb('#88b84c')];
  }
}

function drawGround(plan: ScenePlan, look: Look): Fragment {
  const { width, height, horizon } = plan;
  const p = new Painter(look, 'gr');
  const rng = layerRng(plan, 'ground', plan.setting);
  const parts: string[] = [];
  const unit = Math.min(width, height);
  if (plan.setting === 'underwater') {
    const rays: string[] = [];
    for (let i = 0; i < 6; i += 1) {
      const x = width * rng.range(0, 1);
      const w = width * rng.range(0.03, 0.08);
      const slant = width * rng.range(0.1, 0.3);
      rays.push(
        `<polygon points="${n(x)},0 ${n(x + w)},0 ${n(x + w + slant + w * 2)},${height} ${n(x + slant)},${height}" fill="${p.linear(
          [
            [0, p.col(rgb('#d8f6ff')), 0.35],
            [1, p.col(rgb('#d8f6ff')), 0],
          ],
          0,
          0,
          0,
          1,
        )}"/>`,
      );
    }
    parts.push(rays.join(''));
    const bed = height * 0.84;
    let d = `M0,${height} L0,${n(bed)}`;
    for (let x = 0; x <= width; x += width / 6)
      d += ` Q${n(x + width / 12)},${n(bed - height * rng.range(0.01, 0.05))} ${n(x + width / 6)},${n(bed + height * rng.range(-0.01, 0.02))}`;
    d += ` L${width},${height} Z`;
    parts.push(
      `<path d="${d}" fill="${p.linear(
        [
          [0, p.surf(rgb('#d8c08a'))],
          [1, p.surf(rgb('#a08050'))],
        ],
        0,
        0,
        0,
        1,
      )}"/>`,
    );
    for (let i = 0; i < 7; i += 1) {
      const x = width * rng.range(0, 1);
      const h = height * rng.range(0.12, 0.3);
      const sway = width * 0.02;
      parts.push(
        `<path d="M${n(x)},${n(bed + 6)} C${n(x + sway)},${n(bed - h * 0.3)} ${n(x - sway)},${n(bed - h * 0.6)} ${n(x + sway * 0.5)},${n(bed - h)}" stroke="${p.surf(rgb(rng.pick(['#2a8a4a', '#3a9a3a', '#1a6a4a'])))}" stroke-width="${n(unit * 0.012)}" stroke-linecap="round" fill="none"/>`,
      );
    }
    for (let i = 0; i < 4; i += 1) {
      const x = width * rng.range(0, 1);
      const r = unit * rng.range(0.025, 0.05);
      const c = rgb(rng.pick(['#e8607a', '#f08a5a', '#c85ad8', '#f0c04a']));
      for (let j = 0; j < 5; j += 1) {
        parts.push(
          `<path d="M${n(x)},${n(bed + 4)} Q${n(x + (j - 2) * r * 0.6)},${n(bed - r)} ${n(x + (j - 2) * r * 0.9)},${n(bed - r * 2 * rng.range(0.6, 1))}" stroke="${p.surf(c)}" stroke-width="${n(r * 0.3)}" stroke-linecap="round" fill="none"/>`,
        );
      }
    }
    return { defs: p.defs, body: parts.join('') };
  }
  if (plan.setting === 'space') {
    const [far, near] = groundColours(plan);
    parts.push(
      `<path d="M${-width * 0.1},${height} L${-width * 0.1},${n(horizon + height * 0.04)} Q${width / 2},${n(horizon - height * 0.06)} ${width * 1.1},${n(horizon + height * 0.04)} L${width * 1.1},${height} Z" fill="${p.linear(
        [
          [0, p.surf(near)],
          [1, p.surf(far, 0.6)],
        ],
        0,
        0,
        0,
        1,
      )}"/>`,
    );
    for (let i = 0; i < 9; i += 1) {
      const x = width * rng.range(0, 1);
      const y = horizon + (height - horizon) * rng.range(0.15, 0.95);
      const r = unit * rng.range(0.01, 0.04) * (0.5 + (y - horizon) / (height - horizon));
      parts.push(
        `<ellipse cx="${n(x)}" cy="${n(y)}" rx="${n(r)}" ry="${n(r * 0.35)}" fill="${p.surf(far, 0.55)}"/><ellipse cx="${n(x)}" cy="${n(y - r * 0.08)}" rx="${n(r * 0.8)}" ry="${n(r * 0.25)}" fill="${p.surf(near, 0.75)}"/>`,
      );
    }
    return { defs: p.defs, body: parts.join('') };
  }
  if (isWater(plan)) {
    const [top, bottom] = waterColours(plan, look);
    const middle = mix(mix(bottom, top, 0.35), rgb('#2a4a8a'), look.neon ? 0 : 0.3);
    parts.push(
      `<rect x="0" y="${horizon}" width="${width}" height="${height - horizon}" fill="${p.linear(
        [
          [0, p.col(top)],
          [0.3, p.col(middle)],
          [1, p.col(bottom)],
        ],
        0,
        horizon,
        0,
        height,
        true,
      )}"/>`,
    );
    // The far shore, mountains or skyline mirrored in the water (drawn again from the same seed).
    const far = drawFar(plan, look, 'fr', true);
    if (far.body.length > 0) {
      const clipId = p.id();
      p.defs.push(...far.defs, `<clipPath id="${clipId}"><rect x="0" y="${horizon}" width="${width}" height="${height - horizon}"/></clipPath>`);
      parts.push(
        `<g clip-path="url(#${clipId})"><g transform="translate(0 ${2 * horizon + 2}) scale(1 -1)" opacity="${plan.calm ? 0.45 : 0.3}">${far.body}</g></g>`,
      );
    }
    // A lighter band right at the horizon where the water mirrors the low sky.
    parts.push(
      `<rect x="0" y="${horizon}" width="${width}" height="${n((height - horizon) * 0.08)}" fill="${p.linear(
        [
          [0, p.col(look.haze), 0.55],
          [1, p.col(look.haze), 0],
        ],
        0,
        0,
        0,
        1,
      )}"/>`,
    );
    const src = plan.sun ?? plan.moon;
    if (src !== undefined && (plan.sun === undefined || plan.sun.y < horizon)) {
      const colour = plan.sun ? (look.time === 'dusk' ? rgb('#ffb060') : look.time === 'dawn' ? rgb('#ffd8a8') : rgb('#fff8e0')) : rgb('#e8ecff');
      parts.push(
        `<ellipse cx="${n(src.x)}" cy="${n(horizon + (height - horizon) * 0.35)}" rx="${n(src.r * 2.5)}" ry="${n((height - horizon) * 0.4)}" fill="${p.glow(p.col(colour), 0.4)}"/>`,
      );
      const dashes: string[] = [];
      const rows = 46;
      for (let i = 0; i < rows; i += 1) {
        const t = (i + rng.next()) / rows;
        const y = horizon + 2 + (height - horizon) * t * t;
        const spread = src.r * (0.8 + t * 3.2);
        const len = src.r * (0.4 + t * 1.6) * rng.range(0.4, 1.2);
        const x = src.x + rng.range(-spread, spread);
        dashes.push(`M${n(x - len / 2)},${n(y)} h${n(len)}`);
      }
      parts.push(
        `<path d="${dashes.join(' ')}" stroke="${p.col(colour)}" stroke-width="${n(Math.max(1, unit * 0.004))}" stroke-linecap="round" stroke-opacity="0.75"/>`,
      );
    }
    if (plan.setting === 'beach') {
      const shore = horizon + (height - horizon) * 0.45;
      let d = `M0,${height} L0,${n(shore)}`;
      for (let x = 0; x < width; x += width / 4)
        d += ` Q${n(x + width / 8)},${n(shore - height * rng.range(0.005, 0.03))} ${n(x + width / 4)},${n(shore + height * rng.range(-0.01, 0.02))}`;
      d += ` L${width},${height} Z`;
      const sand = plan.snowy ? rgb('#e8eef6') : rgb('#e8cf98');
      parts.push(
        `<path d="${d}" fill="${p.linear(
          [
            [0, p.surf(sand)],
            [1, p.surf(mix(sand, rgb('#c8a060'), 0.5))],
          ],
          0,
          0,
          0,
          1,
        )}"/>`,
      );
      parts.push(
        `<path d="${d.replace(/ L\d+,\d+ Z$/, '')}" transform="translate(0 ${n(-height * 0.006)})" stroke="${p.surf(rgb('#ffffff'))}" stroke-width="${n(unit * 0.006)}" fill="none" stroke-opacity="0.8"/>`,
      );
    }
    if (plan.setting === 'city') {
      parts.push(`<rect x="0" y="${n(horizon - 2)}" width="${width}" height="${n(height * 0.012)}" fill="${p.surf(rgb('#3a3d44'))}"/>`);
    }
    return { defs: p.defs, body: parts.join('') };
  }

  const [farC, nearC] = groundColours(plan);
  const neonGround = look.neon && plan.setting !== 'forest';
  const fill = neonGround
    ? p.linear(
        [
          [0, p.col(rgb('#2a0a3a'))],
          [1, p.col(rgb('#08020f'))],
        ],
        0,
        0,
        0,
        1,
      )
    : p.linear(
        [
          [0, p.surf(mix(farC, look.haze, 0.25))],
          [1, p.surf(nearC, 0.95)],
        ],
        0,
        0,
        0,
        1,
      );
  let d = `M${-width * 0.05},${height} L${-width * 0.05},${n(horizon)}`;
  const bumps = plan.setting === 'city' ? 0 : rng.int(2, 4);
  for (let i = 0; i < bumps; i += 1) {
    const x1 = ((i + 1) / bumps) * width * 1.1 - width * 0.05;
    d += ` Q${n(x1 - width / bumps / 2)},${n(horizon - height * rng.range(0, 0.025))} ${n(x1)},${n(horizon + height * rng.range(-0.005, 0.01))}`;
  }
  d += ` L${width * 1.05},${n(horizon)} L${width * 1.05},${height} Z`;
  parts.push(`<path d="${d}" fill="${fill}"/>`);

  if (neonGround) {
    // Synthwave grid: lines converge on a vanishing point at the horizon.
    const c = p.emit(look.neonColours[0]);
    const lines: string[] = [];
    for (let i = 1; i <= 12; i += 1) {
      const y = horizon + (height - horizon) * Math.pow(i / 12, 2);
      lines.push(`M0,${n(y)} H${width}`);
    }
    for (let i = -12; i <= 12; i += 1) {
      lines.push(`M${n(width / 2 + i * width * 0.012)},${n(horizon)} L${n(width / 2 + i * width * 0.16)},${height}`);
    }
    parts.push(
      `<path d="${lines.join(' ')}" stroke="${c}" stroke-width="${n(Math.max(1, unit * 0.0025))}" stroke-opacity="0.85" fill="none" filter="${p.neonGlow(unit * 0.004)}"/>`,
    );
    return { defs: p.defs, body: parts.join('') };
  }

  if (plan.setting === 'city') {
    const curb = horizon + (height - horizon) * 0.12;
    parts.push(`<rect x="0" y="${n(horizon)}" width="${width}" height="${n(curb - horizon)}" fill="${p.surf(rgb('#8a8a88'))}"/>`);
    parts.push(`<rect x="0" y="${n(curb)}" width="${width}" height="${n(height * 0.008)}" fill="${p.surf(rgb('#b8b8b4'))}"/>`);
    const lane = curb + (height - curb) * 0.45;
    const dashes: string[] = [];
    for (let x = width * 0.02; x < width; x += width * 0.12) dashes.push(`M${n(x)},${n(lane)} h${n(width * 0.06)}`);
    parts.push(`<path d="${dashes.join(' ')}" stroke="${p.surf(rgb('#e8e0b0'))}" stroke-width="${n(unit * 0.008)}"/>`);
    for (let x = width * rng.range(0.05, 0.15); x < width; x += width * 0.3) {
      const h = height * 0.2;
      parts.push(
        `<path d="M${n(x)},${n(curb)} V${n(curb - h)} h${n(unit * 0.02)}" stroke="${p.surf(rgb('#2a2c30'))}" stroke-width="${n(unit * 0.005)}" fill="none"/>`,
      );
      if (look.lightsOn) {
        parts.push(
          `<circle cx="${n(x + unit * 0.02)}" cy="${n(curb - h + unit * 0.006)}" r="${n(unit * 0.05)}" fill="${p.glow(p.emit(rgb('#ffd88a')), 0.7)}"/>`,
        );
        parts.push(
          `<ellipse cx="${n(x + unit * 0.02)}" cy="${n(curb + (height - curb) * 0.2)}" rx="${n(unit * 0.08)}" ry="${n(unit * 0.02)}" fill="${p.glow(p.emit(rgb('#ffd88a')), 0.35)}"/>`,
        );
      }
    }
    return { defs: p.defs, body: parts.join('') };
  }

  // Grass tufts, ripples in sand, or drifts in snow, larger towards the viewer.
  const marks: string[] = [];
  const count = plan.snowy ? 40 : plan.setting === 'desert' ? 30 : 160;
  for (let i = 0; i < count; i += 1) {
    const t = rng.next();
    const y = horizon + (height - horizon) * (0.04 + 0.96 * t * t);
    const x = rng.range(0, width);
    const s = unit * (0.004 + 0.018 * t);
    if (plan.snowy) {
      marks.push(`<ellipse cx="${n(x)}" cy="${n(y)}" rx="${n(s * 4)}" ry="${n(s * 0.5)}" fill="${p.surf(rgb('#b8c8e8'))}" fill-opacity="0.45"/>`);
    } else if (plan.setting === 'desert') {
      marks.push(
        `<path d="M${n(x - s * 4)},${n(y)} q${n(s * 4)},${n(-s)} ${n(s * 8)},0" stroke="${p.surf(rgb('#b8843a'))}" stroke-width="${n(s * 0.3)}" fill="none" stroke-opacity="0.5"/>`,
      );
    } else {
      const green = mix(nearC, rgb(rng.next() < 0.5 ? '#2a5a1a' : '#a8d060'), 0.5);
      marks.push(
        `<path d="M${n(x)},${n(y)} l${n(-s * 0.5)},${n(-s * 1.6)} M${n(x)},${n(y)} l${n(s * 0.1)},${n(-s * 2)} M${n(x)},${n(y)} l${n(s * 0.6)},${n(-s * 1.5)}" stroke="${p.surf(green)}" stroke-width="${n(Math.max(0.8, s * 0.18))}" stroke-linecap="round"/>`,
      );
    }
  }
  parts.push(marks.join(''));
  return { defs: p.defs, body: parts.join('') };
}

function makeWaves(plan: ScenePlan, look: Look): SceneLayers['waves'] {
  if (!isWater(plan)) return [];
  const { width, height, horizon } = plan;
  const unit = Math.min(width, height);
  const bottom = plan.setting === 'beach' ? horizon + (height - horizon) * 0.47 : height;
  const split = horizon + (bottom - horizon) * 0.3;
  const deep = waterColours(plan, look)[1];
  const highlight = mix(look.haze, rgb('#ffffff'), look.night ? 0.1 : 0.4);
  const shadow = mix(deep, rgb('#000000'), 0.3);
  const band = (name: string, y0: number, y1: number, speed: number): SceneLayers['waves'][number] => {
    const rng = layerRng(plan, 'waves', name, plan.setting);
    const density = plan.calm ? 0.5 : plan.rough ? 1.6 : 1;
    const count = Math.round(((y1 - y0) / height) * 420 * density);
    const strokes: Array<{ x: number; y: number; len: number; w: number; light: boolean; cap: boolean }> = [];
    for (let i = 0; i < count; i += 1) {
      const t = rng.next();
      const y = y0 + (y1 - y0) * t;
      const depth = (y - horizon) / Math.max(1, height - horizon);
      const len = unit * (0.01 + 0.09 * depth) * rng.range(0.5, 1.5) * (plan.calm ? 1.8 : 1);
      strokes.push({
        x: rng.range(0, width),
        y,
        len,
        w: Math.max(0.8, unit * (0.0015 + 0.006 * depth) * (plan.rough ? 1.5 : 1)),
        light: rng.next() < 0.55,
        cap: plan.rough && rng.next() < 0.25,
      });
    }
    const draw = (tile: boolean): Fragment => {
      const p = new Painter(look, tile ? `wt${name}` : `wv${name}`);
      const lightPath: string[] = [];
      const darkPath: string[] = [];
      const capPath: string[] = [];
      const offsets = tile ? [-width, 0, width, 2 * width] : [0];
      for (const off of offsets) {
        for (const s of strokes) {
          const d = `M${n(s.x + off - s.len / 2)},${n(s.y)} q${n(s.len / 2)},${n(-s.w * 1.6)} ${n(s.len)},0`;
          (s.cap ? capPath : s.light ? lightPath : darkPath).push(d);
        }
      }
      const parts = [
        `<path d="${darkPath.join(' ')}" stroke="${p.col(shadow)}" stroke-width="${n(unit * 0.003)}" stroke-opacity="0.45" fill="none" stroke-linecap="round"/>`,
        `<path d="${lightPath.join(' ')}" stroke="${p.col(highlight)}" stroke-width="${n(unit * 0.0025)}" stroke-opacity="${plan.calm ? 0.35 : 0.5}" fill="none" stroke-linecap="round"/>`,
      ];
      if (capPath.length > 0)
        parts.push(
          `<path d="${capPath.join(' ')}" stroke="${p.col(rgb('#f4f8ff'))}" stroke-width="${n(unit * 0.005)}" stroke-opacity="0.8" fill="none" stroke-linecap="round"/>`,
        );
      return { defs: p.defs, body: parts.join('') };
    };
    return { top: Math.floor(y0 - unit * 0.02), bottom: Math.ceil(y1 + unit * 0.02), speed, draw };
  };
  const direction = layerRng(plan, 'waves-dir').next() < 0.5 ? -1 : 1;
  return [band('far', horizon + 1, split, direction * width * 0.012), band('near', split, bottom, direction * width * 0.03)];
}

interface SubjectRender {
  /** In scene coordinates. */
  body: string;
  /** Reflection in water, in scene coordinates. */
  reflection: string;
}

function renderSubject(p: Painter, plan: ScenePlan, look: Look, s: Placed, bladeAngle: number | null): SubjectRender {
  const rng = new SeededRandom('subject', ...plan.seedParts, s.kind, s.variant);
  const fromLeft = plan.lightFromLeft !== s.flip;
  const drawing = drawSubject(s.kind, p, {
    fromLeft,
    rng,
    lightsOn: look.lightsOn,
    night: look.night,
    snowy: plan.snowy,
    bladeAngle,
    ...(s.colour ? { colour: s.colour } : {}),
  });
  if (drawing === undefined) return { body: '', reflection: '' };
  const k = s.size / drawing.height;
  const sx = s.flip ? -k : k;
  const unit = Math.min(plan.width, plan.height);
  const parts: string[] = [];
  // Neon turns subjects into dark shapes with glowing outlines.
  const neon = look.neon
    ? ` stroke="${p.emit(look.neonColours[s.variant % 2])}" stroke-width="${n((unit * 0.0022) / k)}" stroke-opacity="0.9" filter="${p.neonGlow(unit * 0.003)}"`
    : '';
  if (s.zone === 'ground' && !s.pedestal && plan.setting !== 'underwater') {
    // Contact shadow cast away from the light.
    const away = plan.lightFromLeft ? 1 : -1;
    const w = s.size * 0.45;
    parts.push(
      `<ellipse cx="${n(s.x + away * w * 0.35)}" cy="${n(s.base)}" rx="${n(w)}" ry="${n(Math.max(1, s.size * 0.05))}" fill="#000" fill-opacity="${n(0.12 + look.contrast * 0.3)}"/>`,
    );
  }
  if (s.pedestal === 'rocks') {
    const w = s.size * 0.75;
    const h = s.size * 0.14;
    const rock = rgb('#4a4640');
    const r = rng;
    const top = s.base;
    const pts: Array<[number, number]> = [
      [s.x - w * 0.7, top + h * 0.9],
      [s.x - w * 0.55, top + h * 0.2],
      [s.x - w * 0.3, top - h * 0.05],
      [s.x - w * 0.05, top - h * 0.12],
      [s.x + w * 0.25, top - h * 0.05],
      [s.x + w * 0.5, top + h * 0.25],
      [s.x + w * 0.7, top + h * 0.9],
    ];
    parts.push(`<polygon points="${pts.map(([a, b]) => `${n(a + r.range(-1, 1) * w * 0.03)},${n(b)}`).join(' ')}" fill="${p.lit(rock, plan.lightFromLeft)}"/>`);
    parts.push(
      `<path d="M${n(s.x - w * 0.72)},${n(top + h * 0.88)} q${n(w * 0.36)},${n(-h * 0.25)} ${n(w * 0.72)},0 t${n(w * 0.72)},0" stroke="${p.col(rgb('#f4f8ff'))}" stroke-width="${n(unit * 0.004)}" fill="none" stroke-opacity="0.75"/>`,
    );
  }
  const transform = `translate(${n(s.x)} ${n(s.base)}) scale(${n(sx)} ${n(k)})`;
  let body = drawing.body;
  if (s.kind === 'fish' && s.zone === 'sky') body = `<g transform="rotate(-25 0 -15)">${body}</g>`;
  parts.push(`<g transform="${transform}"${neon}>${body}</g>`);
  let reflection = '';
  if ((s.zone === 'water' || (s.pedestal === 'rocks' && isWater(plan))) && s.kind !== 'fish') {
    const y = s.pedestal === 'rocks' ? s.base + s.size * 0.12 : s.base;
    reflection = `<g transform="translate(${n(s.x)} ${n(y)}) scale(${n(sx)} ${n(-k * 0.9)})" opacity="${plan.calm ? 0.45 : 0.28}">${drawing.body}</g>`;
  }
  return { body: parts.join(''), reflection };
}

const MOVERS = new Set(['boat', 'ship', 'whale', 'fish', 'bird', 'balloon', 'rocket', 'car']);

function motionFor(plan: ScenePlan, s: Placed): Motion {
  const dir = s.flip ? 1 : -1;
  const { width, height } = plan;
  switch (s.kind) {
    case 'boat':
      return { kind: 'drift', vx: dir * width * 0.018, bobAmplitude: s.size * 0.012, bobPeriod: 2.6 };
    case 'ship':
      return { kind: 'drift', vx: dir * width * 0.012, bobAmplitude: s.size * 0.008, bobPeriod: 3.4 };
    case 'whale':
      return { kind: 'drift', vx: dir * width * 0.015, bobAmplitude: s.size * 0.05, bobPeriod: 3 };
    case 'fish':
      return s.zone === 'under'
        ? { kind: 'wrap', vx: dir * width * 0.06, bobAmplitude: s.size * 0.15, bobPeriod: 2 }
        : { kind: 'rise', vx: dir * width * 0.02, vy: -height * 0.01 };
    case 'bird':
      return { kind: 'wrap', vx: dir * width * 0.07, bobAmplitude: s.size * 0.6, bobPeriod: 1.6 };
    case 'balloon':
      return { kind: 'rise', vx: width * 0.006 * dir, vy: -height * 0.012 };
    case 'rocket':
      return { kind: 'rise', vx: 0, vy: -height * 0.05 };
    case 'car':
      return { kind: 'wrap', vx: dir * width * 0.12, bobAmplitude: 0, bobPeriod: 1 };
    default:
      return { kind: 'drift', vx: 0, bobAmplitude: 0, bobPeriod: 1 };
  }
}

function drawBeam(look: Look, length: number, spread: number): (angleDeg: number, square: boolean) => Fragment {
  return (angleDeg, square) => {
    const p = new Painter(look, square ? 'bs' : 'bm');
    const c = square ? length : 0;
    const grad = p.linear(
      [
        [0, p.emit(rgb('#fff6c8')), 0.95],
        [0.45, p.emit(rgb('#fff0b0')), 0.45],
        [1, p.emit(rgb('#fff0b0')), 0],
      ],
      0,
      0,
      1,
      0,
    );
    const half = Math.tan((spread * Math.PI) / 180) * length;
    const wedge = (k: number, h: number): string =>
      `<polygon points="0,${n(-h * 0.08)} ${n(length * k)},${n(-h * k)} ${n(length * k)},${n(h * k)} 0,${n(h * 0.08)}" fill="${grad}"/>`;
    const beam = `<g opacity="0.35">${wedge(1, half * 2.4)}</g>${wedge(1, half)}<g opacity="0.5">${wedge(-0.35, half)}</g>`;
    return { defs: p.defs, body: `<g transform="translate(${n(c)} ${n(c)}) rotate(${n(angleDeg)})">${beam}</g>` };
  };
}

function drawRain(plan: ScenePlan, look: Look, heavy: boolean): (tile: boolean) => Fragment {
  const { width, height } = plan;
  const rng = layerRng(plan, 'rain');
  const count = Math.round((width * height) / (heavy ? 2600 : 4200));
  const drops: Array<[number, number, number]> = [];
  for (let i = 0; i < count; i += 1) drops.push([rng.range(0, width), rng.range(0, height), rng.range(0.6, 1.2)]);
  const len = height * 0.045;
  const slant = len * 0.25;
  return (tile) => {
    const p = new Painter(look, tile ? 'rt' : 'rn');
    const offsets = tile ? [-height, 0, height] : [0];
    const d: string[] = [];
    for (const off of offsets) for (const [x, y, s] of drops) d.push(`M${n(x)},${n(y + off)} l${n(-slant * s)},${n(len * s)}`);
    return {
      defs: p.defs,
      body: `<path d="${d.join(' ')}" stroke="${p.col(rgb('#dfe8f4'))}" stroke-width="${n(Math.max(0.8, width / 1100))}" stroke-opacity="0.4" stroke-linecap="round"/>`,
    };
  };
}

function drawFlakes(plan: ScenePlan, look: Look, layer: number, colour: Rgb, upward: boolean): (tile: boolean) => Fragment {
  const { width, height } = plan;
  const rng = layerRng(plan, 'flakes', layer);
  const unit = Math.min(width, height);
  const count = Math.round((width * height) / (upward ? 30000 : layer === 0 ? 5200 : 9000));
  const flakes: Array<[number, number, number]> = [];
  for (let i = 0; i < count; i += 1)
    flakes.push([rng.range(0, width), rng.range(0, height), unit * (layer === 0 ? rng.range(0.0015, 0.003) : rng.range(0.003, 0.0065))]);
  return (tile) => {
    const p = new Painter(look, tile ? `ft${layer}` : `fl${layer}`);
    const offsets = tile ? [-height, 0, height] : [0];
    const parts: string[] = [];
    for (const off of offsets) {
      for (const [x, y, r] of flakes) {
        parts.push(
          upward
            ? `<circle cx="${n(x)}" cy="${n(y + off)}" r="${n(r * 1.6)}" fill="none" stroke="${p.col(colour)}" stroke-width="${n(Math.max(0.8, r * 0.35))}" stroke-opacity="0.6"/>`
            : `<circle cx="${n(x)}" cy="${n(y + off)}" r="${n(r)}" fill="${p.col(colour)}" fill-opacity="${layer === 0 ? 0.7 : 0.9}"/>`,
        );
      }
    }
    return { defs: p.defs, body: parts.join('') };
  };
}

function drawLightning(plan: ScenePlan, look: Look): Fragment {
  const { width, horizon } = plan;
  const p = new Painter(look, 'lt');
  const rng = layerRng(plan, 'lightning');
  let x = width * rng.range(0.15, 0.85);
  let y = horizon * 0.1;
  let d = `M${n(x)},${n(y)}`;
  const branches: string[] = [];
  while (y < horizon) {
    x += width * rng.range(-0.04, 0.04);
    y += horizon * rng.range(0.06, 0.12);
    d += ` L${n(x)},${n(Math.min(y, horizon))}`;
    if (rng.next() < 0.3) branches.push(`M${n(x)},${n(y)} l${n(width * rng.range(-0.06, 0.06))},${n(horizon * rng.range(0.05, 0.12))}`);
  }
  const unit = Math.min(width, plan.height);
  const c = p.emit(rgb('#f4f0ff'));
  return {
    defs: p.defs,
    body:
      `<rect x="0" y="0" width="${width}" height="${plan.height}" fill="${c}" fill-opacity="0.08"/>` +
      `<path d="${d} ${branches.join(' ')}" stroke="${c}" stroke-width="${n(unit * 0.004)}" fill="none" stroke-linejoin="round" filter="${p.neonGlow(unit * 0.006)}"/>`,
  };
}

function drawFog(plan: ScenePlan, look: Look): Fragment | undefined {
  const { width, height, horizon } = plan;
  const parts: string[] = [];
  const p = new Painter(look, 'fg');
  if (plan.weather.includes('fog')) {
    const mist = look.night ? rgb('#3a4454') : rgb('#dde2e6');
    parts.push(
      `<rect x="0" y="0" width="${width}" height="${height}" fill="${p.linear(
        [
          [0, p.col(mist), 0.25],
          [horizon / height, p.col(mist), 0.75],
          [1, p.col(mist), 0.35],
        ],
        0,
        0,
        0,
        1,
      )}"/>`,
    );
    const rng = layerRng(plan, 'fog');
    for (let i = 0; i < 5; i += 1) {
      const y = horizon + (height - horizon) * rng.range(-0.3, 0.6);
      parts.push(
        `<ellipse cx="${n(width * rng.range(0, 1))}" cy="${n(y)}" rx="${n(width * rng.range(0.3, 0.6))}" ry="${n(height * rng.range(0.03, 0.07))}" fill="${p.glow(p.col(mist), 0.6)}"/>`,
      );
    }
  }
  if (plan.setting === 'underwater') {
    parts.push(`<rect x="0" y="0" width="${width}" height="${height}" fill="${p.col(rgb('#0a4a6a'))}" fill-opacity="0.12"/>`);
  }
  return parts.length > 0 ? { defs: p.defs, body: parts.join('') } : undefined;
}

function drawAtmosphere(plan: ScenePlan, look: Look, fog: Fragment | undefined): Fragment {
  const { width, height } = plan;
  const p = new Painter(look, 'at');
  // A soft vignette keeps the eye on the middle of the frame.
  const id = p.id();
  const edge = look.neon ? '#12001e' : '#000000';
  p.defs.push(
    `<radialGradient id="${id}" cx="0.5" cy="0.5" r="0.75"><stop offset="0.55" stop-color="${edge}" stop-opacity="0"/><stop offset="1" stop-color="${edge}" stop-opacity="${look.night ? 0.5 : 0.3}"/></radialGradient>`,
  );
  return {
    defs: [...(fog?.defs ?? []), ...p.defs],
    body: `${fog?.body ?? ''}<rect x="0" y="0" width="${width}" height="${height}" fill="url(#${id})"/>`,
  };
}

/** Builds all layers of a scene. `animated` keeps moving parts (sun, sails, beam) out of the static layers. */
export function buildSceneLayers(plan: ScenePlan, animated: boolean): SceneLayers {
  const look = buildLook(plan);
  const { width, height } = plan;
  const unit = Math.min(width, height);

  const subjectPainter = new Painter(look, 'sb');
  const staticParts: string[] = [];
  const reflections: string[] = [];
  const movers: Sprite[] = [];
  const blades: SceneLayers['blades'] = [];
  let beam: SceneLayers['beam'];
  let moverIndex = 0;
  for (const s of plan.subjects) {
    const bladeRng = new SeededRandom('blades', ...plan.seedParts, s.variant);
    const startAngle = bladeRng.range(0, 90);
    const move = animated && MOVERS.has(s.kind) && !(s.kind === 'rocket' && s.zone !== 'sky');
    if (move) {
      moverIndex += 1;
      const p = new Painter(look, `mv${moverIndex}_`);
      const { body, reflection } = renderSubject(p, plan, look, s, null);
      const w = Math.ceil(s.size * 3.4 + 16);
      const top = Math.floor(s.base - s.size * 1.25);
      const h = Math.ceil(s.size * (reflection ? 2.3 : 1.9) + 16);
      const x0 = Math.floor(s.x - w / 2);
      const shifted = `<g transform="translate(${-x0} ${-top})">${reflection}${body}</g>`;
      movers.push({ defs: p.defs, body: shifted, x: x0, y: top, width: w, height: h, motion: motionFor(plan, s) });
      continue;
    }
    const { body, reflection } = renderSubject(subjectPainter, plan, look, s, s.kind === 'windmill' && animated ? null : startAngle);
    staticParts.push(body);
    if (reflection) reflections.push(reflection);
    if (s.kind === 'windmill' && animated) {
      const k = s.size / 118;
      const hx = s.x + (s.flip ? -1 : 1) * ANCHORS.windmillHub.x * k;
      const hy = s.base + ANCHORS.windmillHub.y * k;
      const radius = Math.ceil(ANCHORS.windmillBladeLength * k + 4);
      blades.push({
        x: hx,
        y: hy,
        radius,
        draw: (angle, square) => {
          const p = new Painter(look, square ? `bl${s.variant}_` : `bx${s.variant}_`);
          const [tx, ty] = square ? [radius, radius] : [hx, hy];
          return {
            defs: p.defs,
            body: `<g transform="translate(${n(tx)} ${n(ty)}) scale(${n(k)}) translate(${-ANCHORS.windmillHub.x} ${-ANCHORS.windmillHub.y})">${windmillBlades(p, angle)}</g>`,
          };
        },
      });
    }
    if (s.kind === 'lighthouse' && look.lightsOn && beam === undefined) {
      const k = s.size / 102;
      const length = Math.round(width * 0.5);
      beam = {
        x: s.x,
        y: s.base + ANCHORS.lighthouseLamp.y * k,
        length,
        squash: 0.3,
        draw: drawBeam(look, length, 5),
      };
    }
  }
  // Reflections go under every subject so a boat's mirror image never covers a neighbour.
  const subjects: Fragment = {
    defs: subjectPainter.defs,
    body: (reflections.length > 0 ? `<g>${reflections.join('')}</g>` : '') + staticParts.join(''),
  };
  if (reflections.length > 0) {
    const id = subjectPainter.id();
    subjectPainter.defs.push(`<clipPath id="${id}"><rect x="0" y="${plan.horizon}" width="${width}" height="${height - plan.horizon}"/></clipPath>`);
    subjects.body = `<g clip-path="url(#${id})">${reflections.join('')}</g>` + staticParts.join('');
  }

  const precipitation: SceneLayers['precipitation'] = [];
  if (plan.setting === 'underwater') {
    precipitation.push({ speed: -height * 0.12, sway: unit * 0.01, draw: drawFlakes(plan, look, 1, rgb('#e8f8ff'), true) });
  } else {
    if (plan.weather.includes('rain')) precipitation.push({ speed: height * 1.1, sway: 0, draw: drawRain(plan, look, plan.weather.includes('storm')) });
    const snowing = plan.weather.includes('snow') || (plan.snowy && !plan.weather.includes('rain') && layerRng(plan, 'snowing').next() < 0.6);
    if (snowing) {
      precipitation.push({ speed: height * 0.06, sway: unit * 0.008, draw: drawFlakes(plan, look, 0, rgb('#ffffff'), false) });
      precipitation.push({ speed: height * 0.11, sway: unit * 0.015, draw: drawFlakes(plan, look, 1, rgb('#ffffff'), false) });
    }
  }

  const sun = drawSun(plan, look);
  const fog = drawFog(plan, look);
  return {
    width,
    height,
    look,
    sky: drawSky(plan, look),
    ...(sun ? { sun } : {}),
    clouds: makeClouds(plan, look),
    far: drawFar(plan, look),
    ground: drawGround(plan, look),
    waves: makeWaves(plan, look),
    subjects,
    movers,
    ...(beam ? { beam } : {}),
    blades,
    ...(plan.weather.includes('storm') ? { lightning: drawLightning(plan, look) } : {}),
    precipitation,
    atmosphere: drawAtmosphere(plan, look, fog),
    ...(fog ? { fog } : {}),
  };
}

/**
 * One SVG document of the whole still scene. Without its backdrop, the sky and everything that
 * only lives in it (sun, stars, clouds, lightning, the lighthouse's beam) are left out, with the
 * falling weather and the full-frame fog and vignette that would tint the empty sky: what remains
 * (land, water, buildings, creatures, vehicles, a bird or balloon in the air) stands on nothing.
 */
export function sceneToSvg(layers: SceneLayers, beamAngle: number, backdrop = true): string {
  const frags: Fragment[] = [];
  if (backdrop) {
    frags.push(layers.sky);
    if (layers.sun) frags.push({ defs: layers.sun.defs, body: `<g transform="translate(${n(layers.sun.x)} ${n(layers.sun.y)})">${layers.sun.body}</g>` });
    frags.push(layers.clouds(false));
    if (layers.lightning) frags.push(layers.lightning);
  }
  frags.push(layers.far, layers.ground);
  for (const w of layers.waves) frags.push(w.draw(false));
  frags.push(layers.subjects);
  for (const m of layers.movers) frags.push({ defs: m.defs, body: `<g transform="translate(${m.x} ${m.y})">${m.body}</g>` });
  if (layers.beam && backdrop) {
    const b = layers.beam;
    const beamFrag = b.draw(beamAngle, false);
    frags.push({ defs: beamFrag.defs, body: `<g transform="translate(${n(b.x)} ${n(b.y)}) scale(1 ${b.squash})">${beamFrag.body}</g>` });
  }
  for (const bl of layers.blades) frags.push(bl.draw(20, false));
  if (backdrop) {
    for (const pr of layers.precipitation) frags.push(pr.draw(false));
    frags.push(layers.atmosphere);
  }
  return svgDocument(
    layers.width,
    layers.height,
    frags.flatMap((f) => f.defs),
    frags.map((f) => f.body).join(''),
  );
}

/** The still picture's SVG for a plan; `backdrop: false` leaves the sky empty (see {@link sceneToSvg}). */
export function buildSceneSvg(plan: ScenePlan, backdrop = true): string {
  const layers = buildSceneLayers(plan, false);
  const rng = layerRng(plan, 'beam-angle');
  return sceneToSvg(layers, rng.pick([-8, 188, -14, 194]), backdrop);
}
