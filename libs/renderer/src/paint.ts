import { fromHsl, hex, luma, mix, mul, rgb, toHsl, type Rgb } from './colour';
import type { ScenePlan } from './plan';
import type { Style, TimeOfDay } from './vocabulary';

/** Formats a coordinate compactly; fixed precision keeps the SVG text, and so the raster, stable. */
export function n(value: number): string {
  return Number(value.toFixed(2)).toString();
}

/** How the scene is lit and graded; derived from time of day, weather and style. */
export interface Look {
  time: TimeOfDay;
  style: Style;
  /** Sky gradient, top (0) to horizon (1). */
  sky: Array<[number, Rgb]>;
  /** Sky colour just above the horizon; distant scenery fades towards it. */
  haze: Rgb;
  /** Multiplier applied to every surface colour. */
  ambient: Rgb;
  /** Colour of direct light, added on lit faces. */
  light: Rgb;
  /** 0..1: how much brighter lit faces are than shadowed ones. */
  contrast: number;
  /** Windows, lamps and lanterns glow. */
  lightsOn: boolean;
  night: boolean;
  neon: boolean;
  /** Neon outline colours. */
  neonColours: [Rgb, Rgb];
}

const SKIES: Record<TimeOfDay, Array<[number, string]>> = {
  dawn: [
    [0, '#2b3a6e'],
    [0.35, '#7b68a6'],
    [0.7, '#e49ab0'],
    [1, '#ffd3a0'],
  ],
  morning: [
    [0, '#3f86d6'],
    [0.45, '#7fb3ea'],
    [0.8, '#c7e0f6'],
    [1, '#eef0e6'],
  ],
  noon: [
    [0, '#1f62c4'],
    [0.45, '#4b8fe0'],
    [0.8, '#92c3f0'],
    [1, '#d3e9fa'],
  ],
  dusk: [
    [0, '#2d1e52'],
    [0.28, '#6e2f6f'],
    [0.52, '#c64e63'],
    [0.76, '#ee8548'],
    [1, '#ffc46a'],
  ],
  night: [
    [0, '#02050d'],
    [0.45, '#091530'],
    [0.85, '#142852'],
    [1, '#1d3466'],
  ],
};
const AMBIENT: Record<TimeOfDay, string> = { dawn: '#eed8dc', morning: '#fffaf2', noon: '#ffffff', dusk: '#e0a896', night: '#5f6fa4' };
const LIGHT: Record<TimeOfDay, string> = { dawn: '#ffc8a8', morning: '#fff1d2', noon: '#fffdf5', dusk: '#ffa560', night: '#b9c9ff' };

export function buildLook(plan: ScenePlan): Look {
  const storm = plan.weather.includes('storm');
  const fog = plan.weather.includes('fog');
  const cloudy = plan.weather.includes('cloudy') || plan.weather.includes('rain');
  let sky = SKIES[plan.time].map(([o, c]) => [o, rgb(c)] as [number, Rgb]);
  let ambient = rgb(AMBIENT[plan.time]);
  let contrast = plan.time === 'night' ? 0.35 : 0.55;
  if (plan.setting === 'space')
    sky = [
      [0, rgb('#010208')],
      [0.6, rgb('#050a1c')],
      [1, rgb('#0d1430')],
    ];
  if (plan.setting === 'underwater') {
    const deep = plan.time === 'night' ? 0.25 : 1;
    sky = [
      [0, mul(rgb('#5fc4d8'), deep)],
      [0.45, mul(rgb('#1f7fa6'), deep)],
      [1, mul(rgb('#0a2d5a'), deep)],
    ];
    ambient = mul(rgb('#b4e0f0'), deep);
  }
  if (storm) {
    const dark = plan.time === 'night' ? 0.45 : 1;
    sky = [
      [0, mul(rgb('#1b2029'), dark)],
      [0.5, mul(rgb('#353c49'), dark)],
      [1, mul(rgb('#5d6675'), dark)],
    ];
    ambient = mul(ambient, mul(rgb('#8a93a3'), 1 / 255));
    contrast = 0.2;
  } else if (cloudy) {
    const grey = mul(rgb('#a9b0ba'), luma(sky[sky.length - 1]?.[1] ?? rgb('#888888')) / 200);
    sky = sky.map(([o, c]) => [o, mix(c, grey, 0.45)]);
    ambient = mul(ambient, 0.85);
    contrast *= 0.6;
  }
  if (fog) {
    const mist = plan.time === 'night' ? rgb('#2a3342') : rgb('#c9cfd4');
    sky = sky.map(([o, c]) => [o, mix(c, mist, 0.6)]);
    contrast *= 0.5;
  }
  if (plan.dark) ambient = mul(ambient, 0.75);
  if (plan.bright) ambient = mul(ambient, 1.12);
  const neon = plan.style === 'neon';
  if (neon) {
    sky =
      plan.time === 'night' || plan.time === 'dusk'
        ? [
            [0, rgb('#07021a')],
            [0.5, rgb('#1d0838')],
            [0.85, rgb('#4a0f5c')],
            [1, rgb('#8a1a6e')],
          ]
        : sky.map(([o, c]) => [o, mix(c, rgb('#3a0f5a'), 0.5)]);
    ambient = mul(ambient, 0.45);
  }
  const last = sky[sky.length - 1] as [number, Rgb];
  return {
    time: plan.time,
    style: plan.style,
    sky,
    haze: last[1],
    ambient: mul(ambient, 1 / 255),
    light: rgb(LIGHT[plan.time]),
    contrast,
    lightsOn: plan.time === 'night' || plan.time === 'dusk' || storm || neon,
    night: plan.time === 'night',
    neon,
    neonColours: [rgb('#ff3cf0'), rgb('#2ef2ff')],
  };
}

/** Applies the prompt's style (palette) to one colour. Everything drawn passes through here. */
export function styled(style: Style, c: Rgb): Rgb {
  switch (style) {
    case 'natural':
      return c;
    case 'vivid': {
      const { h, s, l } = toHsl(c);
      return fromHsl(h, Math.min(1, s * 1.4 + 0.05), 0.5 + (l - 0.5) * 1.08);
    }
    case 'neon': {
      const { h, s, l } = toHsl(c);
      return fromHsl(h, Math.min(1, s * 1.3), l);
    }
    case 'pastel': {
      const { h, s, l } = toHsl(c);
      return fromHsl(h, s * 0.5, 0.42 + l * 0.55);
    }
    case 'monochrome': {
      const y = Math.max(0, Math.min(255, (luma(c) - 128) * 1.12 + 128));
      return { r: y, g: y, b: y };
    }
    case 'sepia': {
      const y = luma(c) / 255;
      const dark = rgb('#2e1d10');
      const mid = rgb('#a8794a');
      const light = rgb('#f6e7c8');
      return y < 0.5 ? mix(dark, mid, y * 2) : mix(mid, light, (y - 0.5) * 2);
    }
  }
}

/**
 * Collects SVG definitions (gradients, filters) for one document and turns
 * material colours into lit, styled fills. Ids carry a prefix so that several
 * painters' output can share one document.
 */
export class Painter {
  readonly defs: string[] = [];
  private readonly cache = new Map<string, string>();
  private counter = 0;

  constructor(
    readonly look: Look,
    private readonly prefix: string,
  ) {}

  id(): string {
    this.counter += 1;
    return `${this.prefix}${this.counter}`;
  }

  /** Styled colour, unlit (sky, glows drawn at their own brightness). */
  col(c: Rgb): string {
    return hex(styled(this.look.style, c));
  }

  /** Surface colour under the scene's ambient light; `shade` darkens (<1) or lightens (>1). */
  surf(c: Rgb, shade = 1): string {
    return hex(styled(this.look.style, mul(mul(c, this.look.ambient), shade)));
  }

  /** Light-emitting colour: windows at night, lamps, flames. */
  emit(c: Rgb): string {
    return hex(styled(this.look.style, c));
  }

  /** Horizontal gradient across the shape's box: lit side brighter and tinted by the light, far side in shadow. */
  lit(c: Rgb, fromLeft: boolean): string {
    const key = `lit:${hex(c)}:${fromLeft ? 'l' : 'r'}`;
    const cached = this.cache.get(key);
    if (cached !== undefined) return cached;
    const base = mul(c, this.look.ambient);
    const k = this.look.contrast;
    const bright = mix(mul(base, 1 + 0.3 * k), mul(this.look.light, luma(base) / 255), 0.18 * k);
    const dark = mul(base, 1 - 0.55 * k);
    const id = this.id();
    const [x1, x2] = fromLeft ? [0, 1] : [1, 0];
    this.defs.push(
      `<linearGradient id="${id}" x1="${x1}" y1="0" x2="${x2}" y2="0">` +
        `<stop offset="0" stop-color="${hex(styled(this.look.style, bright))}"/>` +
        `<stop offset="0.55" stop-color="${hex(styled(this.look.style, base))}"/>` +
        `<stop offset="1" stop-color="${hex(styled(this.look.style, dark))}"/></linearGradient>`,
    );
    const url = `url(#${id})`;
    this.cache.set(key, url);
    return url;
  }

  /** A linear gradient; `stops` are [offset, colour, opacity]. Coordinates are in the shape's box unless `user` is set. */
  linear(stops: Array<[number, string, number?]>, x1: number, y1: number, x2: number, y2: number, user = false): string {
    const id = this.id();
    const units = user ? ' gradientUnits="userSpaceOnUse"' : '';
    this.defs.push(
      `<linearGradient id="${id}"${units} x1="${n(x1)}" y1="${n(y1)}" x2="${n(x2)}" y2="${n(y2)}">` +
        stops.map(([o, c, a]) => `<stop offset="${n(o)}" stop-color="${c}"${a === undefined ? '' : ` stop-opacity="${n(a)}"`}/>`).join('') +
        '</linearGradient>',
    );
    return `url(#${id})`;
  }

  /** A radial gradient from `inner` at the centre to transparent. */
  glow(inner: string, opacity = 1, falloff = 1): string {
    const key = `glow:${inner}:${n(opacity)}:${n(falloff)}`;
    const cached = this.cache.get(key);
    if (cached !== undefined) return cached;
    const id = this.id();
    this.defs.push(
      `<radialGradient id="${id}"><stop offset="0" stop-color="${inner}" stop-opacity="${n(opacity)}"/>` +
        `<stop offset="${n(0.35 * falloff)}" stop-color="${inner}" stop-opacity="${n(opacity * 0.45)}"/>` +
        `<stop offset="1" stop-color="${inner}" stop-opacity="0"/></radialGradient>`,
    );
    const url = `url(#${id})`;
    this.cache.set(key, url);
    return url;
  }

  /** Gaussian blur filter id for soft shapes (clouds, fog, glows). */
  blur(deviation: number): string {
    const key = `blur:${n(deviation)}`;
    const cached = this.cache.get(key);
    if (cached !== undefined) return cached;
    const id = this.id();
    this.defs.push(`<filter id="${id}" x="-50%" y="-50%" width="200%" height="200%"><feGaussianBlur stdDeviation="${n(deviation)}"/></filter>`);
    const url = `url(#${id})`;
    this.cache.set(key, url);
    return url;
  }

  /** Glow filter for neon outlines: the blurred stroke under the sharp one. */
  neonGlow(deviation: number): string {
    const key = `neon:${n(deviation)}`;
    const cached = this.cache.get(key);
    if (cached !== undefined) return cached;
    const id = this.id();
    this.defs.push(
      `<filter id="${id}" x="-30%" y="-30%" width="160%" height="160%"><feGaussianBlur in="SourceGraphic" stdDeviation="${n(deviation)}" result="b"/>` +
        '<feMerge><feMergeNode in="b"/><feMergeNode in="b"/><feMergeNode in="SourceGraphic"/></feMerge></filter>',
    );
    const url = `url(#${id})`;
    this.cache.set(key, url);
    return url;
  }
}

/** Wraps body elements into a standalone SVG document of the given size. */
export function svgDocument(width: number, height: number, defs: string[], body: string): string {
  return (
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}">` +
    `<defs>${defs.join('')}</defs>${body}</svg>`
  );
}
