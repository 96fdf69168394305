import { hslToRgb, rgbHex, type SeededRandom } from './random';

/** Formats a coordinate compactly; fixed precision keeps the SVG text, and so the raster, stable. */
function n(value: number): string {
  return Number(value.toFixed(2)).toString();
}

function colour(hue: number, saturation: number, lightness: number): string {
  return `#${rgbHex(hslToRgb(hue, saturation, lightness))}`;
}

function regularPolygon(cx: number, cy: number, radius: number, sides: number, rotation: number, innerRatio?: number): string {
  const points: string[] = [];
  const count = innerRatio === undefined ? sides : sides * 2;
  for (let i = 0; i < count; i += 1) {
    const r = innerRatio !== undefined && i % 2 === 1 ? radius * innerRatio : radius;
    const angle = rotation + (i * 2 * Math.PI) / count;
    points.push(`${n(cx + r * Math.cos(angle))},${n(cy + r * Math.sin(angle))}`);
  }
  return points.join(' ');
}

/**
 * Builds a procedural SVG "painting" of exactly `width` x `height`: a rotated
 * multi-stop gradient, a soft radial glow, and a handful of translucent shapes.
 *
 * Every choice comes from `rng`, so the same random stream always yields the
 * same document. Deliberately text-free: librsvg would need system fonts, and
 * their presence (and therefore the output) varies between hosts.
 */
export function buildSceneSvg(rng: SeededRandom, width: number, height: number): string {
  const baseHue = rng.range(0, 360);
  // Analogous/complementary offsets keep palettes coherent rather than noisy.
  const scheme = rng.pick([[0, 30, 60], [0, 150, 210], [0, 120, 240], [0, 180, 200], [0, -40, 40]]);
  const palette = scheme.map((offset) => baseHue + offset);
  const unit = Math.min(width, height);
  const defs: string[] = [];
  const body: string[] = [];

  const angle = rng.range(0, 360);
  const bgStops = [0, 0.5, 1]
    .map((offset, i) => {
      const lightness = rng.range(0.18, 0.62);
      return `<stop offset="${offset}" stop-color="${colour(palette[i % palette.length] ?? baseHue, rng.range(0.45, 0.9), lightness)}"/>`;
    })
    .join('');
  defs.push(`<linearGradient id="bg" gradientUnits="objectBoundingBox" gradientTransform="rotate(${n(angle)} 0.5 0.5)">${bgStops}</linearGradient>`);
  body.push(`<rect x="0" y="0" width="${width}" height="${height}" fill="url(#bg)"/>`);

  defs.push(
    `<radialGradient id="glow"><stop offset="0" stop-color="${colour(baseHue + 180, 0.9, 0.8)}" stop-opacity="0.75"/>` +
      `<stop offset="1" stop-color="${colour(baseHue + 180, 0.9, 0.8)}" stop-opacity="0"/></radialGradient>`,
  );
  body.push(
    `<circle cx="${n(rng.range(0.2, 0.8) * width)}" cy="${n(rng.range(0.2, 0.8) * height)}" r="${n(rng.range(0.35, 0.7) * unit)}" fill="url(#glow)"/>`,
  );

  const shapeCount = rng.int(6, 11);
  for (let i = 0; i < shapeCount; i += 1) {
    const hue = (rng.pick(palette) + rng.range(-12, 12));
    const fill = colour(hue, rng.range(0.55, 1), rng.range(0.35, 0.78));
    const opacity = n(rng.range(0.45, 0.92));
    const cx = rng.range(-0.05, 1.05) * width;
    const cy = rng.range(-0.05, 1.05) * height;
    const size = rng.range(0.06, 0.32) * unit;
    const stroke = rng.next() < 0.35
      ? ` stroke="${colour(hue + 180, 0.6, rng.next() < 0.5 ? 0.15 : 0.92)}" stroke-width="${n(Math.max(1, size * 0.06))}" stroke-opacity="0.8"`
      : '';
    const common = `fill="${fill}" fill-opacity="${opacity}"${stroke}`;
    const kind = rng.int(0, 4);
    switch (kind) {
      case 0:
        body.push(`<circle cx="${n(cx)}" cy="${n(cy)}" r="${n(size)}" ${common}/>`);
        break;
      case 1:
        body.push(
          `<ellipse cx="${n(cx)}" cy="${n(cy)}" rx="${n(size * rng.range(1, 1.8))}" ry="${n(size * rng.range(0.4, 0.9))}" ` +
            `transform="rotate(${n(rng.range(0, 180))} ${n(cx)} ${n(cy)})" ${common}/>`,
        );
        break;
      case 2: {
        const w = size * rng.range(1, 2.2);
        const h = size * rng.range(0.6, 1.6);
        body.push(
          `<rect x="${n(cx - w / 2)}" y="${n(cy - h / 2)}" width="${n(w)}" height="${n(h)}" rx="${n(Math.min(w, h) * rng.range(0, 0.3))}" ` +
            `transform="rotate(${n(rng.range(0, 90))} ${n(cx)} ${n(cy)})" ${common}/>`,
        );
        break;
      }
      case 3:
        body.push(`<polygon points="${regularPolygon(cx, cy, size, rng.int(3, 7), rng.range(0, Math.PI))}" ${common}/>`);
        break;
      default:
        body.push(`<polygon points="${regularPolygon(cx, cy, size, rng.int(4, 8), rng.range(0, Math.PI), rng.range(0.35, 0.6))}" ${common}/>`);
        break;
    }
  }

  // A couple of sweeping curves break up the otherwise blob-like composition.
  const curves = rng.int(1, 3);
  for (let i = 0; i < curves; i += 1) {
    const y0 = rng.range(0, height);
    const y1 = rng.range(0, height);
    const c0 = rng.range(-0.3, 1.3) * height;
    const c1 = rng.range(-0.3, 1.3) * height;
    body.push(
      `<path d="M ${n(-0.05 * width)} ${n(y0)} C ${n(0.33 * width)} ${n(c0)}, ${n(0.66 * width)} ${n(c1)}, ${n(1.05 * width)} ${n(y1)}" ` +
        `fill="none" stroke="${colour(rng.pick(palette), 0.85, rng.range(0.55, 0.85))}" stroke-width="${n(rng.range(0.006, 0.03) * unit)}" ` +
        `stroke-opacity="${n(rng.range(0.5, 0.9))}" stroke-linecap="round"/>`,
    );
  }

  return (
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}">` +
    `<defs>${defs.join('')}</defs>${body.join('')}</svg>`
  );
}
