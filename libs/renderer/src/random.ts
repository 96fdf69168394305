import { createHash } from 'node:crypto';

/**
 * Deterministic pseudo-random source seeded from a SHA-256 of its inputs.
 *
 * Math.random cannot be seeded, and the renderer has to give the same picture
 * or video for the same (prompt, seed) on every machine, so all "creative"
 * choices are drawn from this instead.
 */
export class SeededRandom {
  private a: number;
  private b: number;
  private c: number;
  private d: number;

  /**
   * @param parts - values that identify the artefact; they are JSON-encoded
   *   before hashing so that ("ab", "c") and ("a", "bc") give different streams.
   */
  constructor(...parts: unknown[]) {
    const digest = createHash('sha256').update(JSON.stringify(parts)).digest();
    this.a = digest.readUInt32LE(0);
    this.b = digest.readUInt32LE(4);
    this.c = digest.readUInt32LE(8);
    this.d = digest.readUInt32LE(12);
    // An all-zero sfc32 state would emit a short degenerate run; warming up
    // also mixes the four words so nearby hashes diverge immediately.
    for (let i = 0; i < 12; i += 1) this.nextUint32();
  }

  /** Next value of the sfc32 generator, uniformly distributed in [0, 2^32). */
  nextUint32(): number {
    const t = (((this.a + this.b) >>> 0) + this.d) >>> 0;
    this.d = (this.d + 1) >>> 0;
    this.a = this.b ^ (this.b >>> 9);
    this.b = (this.c + (this.c << 3)) >>> 0;
    this.c = ((this.c << 21) | (this.c >>> 11)) >>> 0;
    this.c = (this.c + t) >>> 0;
    return t;
  }

  /** Uniform float in [0, 1). */
  next(): number {
    return this.nextUint32() / 4294967296;
  }

  /** Uniform float in [min, max). */
  range(min: number, max: number): number {
    return min + (max - min) * this.next();
  }

  /** Uniform integer in [min, max] (both inclusive). */
  int(min: number, max: number): number {
    return min + Math.floor(this.next() * (max - min + 1));
  }

  /** One element of a non-empty list. */
  pick<T>(items: readonly T[]): T {
    return items[this.int(0, items.length - 1)] as T;
  }
}

/** An sRGB colour with 8-bit channels. */
export interface Rgb {
  r: number;
  g: number;
  b: number;
}

/**
 * Converts HSL (hue in degrees, saturation and lightness in 0..1) to 8-bit RGB.
 * Colours are picked in HSL because it keeps random palettes vivid and lets
 * the generators choose light/dark pairs that contrast.
 */
export function hslToRgb(hue: number, saturation: number, lightness: number): Rgb {
  const h = (((hue % 360) + 360) % 360) / 360;
  const s = Math.min(1, Math.max(0, saturation));
  const l = Math.min(1, Math.max(0, lightness));
  if (s === 0) {
    const v = Math.round(l * 255);
    return { r: v, g: v, b: v };
  }
  const q = l < 0.5 ? l * (1 + s) : l + s - l * s;
  const p = 2 * l - q;
  const channel = (offset: number): number => {
    let t = h + offset;
    if (t < 0) t += 1;
    if (t > 1) t -= 1;
    let v: number;
    if (t < 1 / 6) v = p + (q - p) * 6 * t;
    else if (t < 1 / 2) v = q;
    else if (t < 2 / 3) v = p + (q - p) * (2 / 3 - t) * 6;
    else v = p;
    return Math.round(v * 255);
  };
  return { r: channel(1 / 3), g: channel(0), b: channel(-1 / 3) };
}

/** Six-digit lowercase hex without a prefix, e.g. `ff8800`. */
export function rgbHex(colour: Rgb): string {
  return [colour.r, colour.g, colour.b].map((v) => v.toString(16).padStart(2, '0')).join('');
}
