import { hslToRgb, rgbHex, type Rgb } from './random';

/** Parses `#rrggbb`; only called on literals written in this module tree, so no validation beyond length. */
export function rgb(hex: string): Rgb {
  const v = Number.parseInt(hex.slice(1), 16);
  return { r: (v >> 16) & 255, g: (v >> 8) & 255, b: v & 255 };
}

function clamp8(v: number): number {
  return Math.max(0, Math.min(255, Math.round(v)));
}

/** `#rrggbb`, clamping channels; the only way colours reach SVG or ffmpeg, so no prompt text can. */
export function hex(c: Rgb): string {
  return `#${rgbHex({ r: clamp8(c.r), g: clamp8(c.g), b: clamp8(c.b) })}`;
}

export function mix(a: Rgb, b: Rgb, t: number): Rgb {
  return { r: a.r + (b.r - a.r) * t, g: a.g + (b.g - a.g) * t, b: a.b + (b.b - a.b) * t };
}

/** Channel-wise multiply by a factor or by a colour expressed in 0..1 (or above 1 to brighten). */
export function mul(a: Rgb, m: number | Rgb): Rgb {
  if (typeof m === 'number') return { r: a.r * m, g: a.g * m, b: a.b * m };
  return { r: a.r * m.r, g: a.g * m.g, b: a.b * m.b };
}

export function luma(c: Rgb): number {
  return 0.2126 * c.r + 0.7152 * c.g + 0.0722 * c.b;
}

/** HSL with hue in degrees and saturation/lightness in 0..1. */
export function toHsl(c: Rgb): { h: number; s: number; l: number } {
  const r = clamp8(c.r) / 255;
  const g = clamp8(c.g) / 255;
  const b = clamp8(c.b) / 255;
  const max = Math.max(r, g, b);
  const min = Math.min(r, g, b);
  const l = (max + min) / 2;
  if (max === min) return { h: 0, s: 0, l };
  const d = max - min;
  const s = l > 0.5 ? d / (2 - max - min) : d / (max + min);
  let h: number;
  if (max === r) h = (g - b) / d + (g < b ? 6 : 0);
  else if (max === g) h = (b - r) / d + 2;
  else h = (r - g) / d + 4;
  return { h: h * 60, s, l };
}

export function fromHsl(h: number, s: number, l: number): Rgb {
  return hslToRgb(h, s, l);
}

export type { Rgb };
