import { join } from 'node:path';
import sharp from 'sharp';
import { n, svgDocument } from './paint';
import { planScene, type ScenePlan } from './plan';
import { SeededRandom } from './random';
import { buildSceneLayers, type Fragment, type Motion, type SceneLayers } from './scene';
import { interpretPrompt } from './vocabulary';

/**
 * Animates a prompt's scene for ffmpeg. The scene's layers are rasterised once
 * with sharp; ffmpeg loops each still and moves it with overlay/rotate time
 * expressions (clouds and waves scroll, boats drift and bob, the sun sets, a
 * lighthouse beam turns, rain falls, the camera pans). That costs a handful of
 * overlays per frame instead of rasterising an SVG per frame.
 *
 * Every number placed in the filter graph comes from the plan as a formatted
 * number; prompt text never reaches ffmpeg.
 */

export const FPS = 24;

/** What a composition needs of a video request (`VideoRequest` in ./video): everything but where the file goes. */
export interface MotionRequest {
  /** Scene description; it is only matched against the vocabulary, so the text itself never reaches ffmpeg. */
  prompt: string;
  /** Caller-chosen variation seed. */
  seed: number;
  /** Exact clip duration in seconds (positive). */
  seconds: number;
  /** Frame width in pixels; must be even for yuv420p. */
  width: number;
  /** Frame height in pixels; must be even for yuv420p. */
  height: number;
  /** Whether to add an AAC audio track. */
  withAudio: boolean;
}

/** ffmpeg arguments that produce `[v]` (and `[a]` when audio is asked for). */
export interface Composition {
  inputArgs: string[];
  filterGraph: string;
  hasAudio: boolean;
}

interface Layer {
  file: string;
  /** The SVG is drawn at a lower resolution than this size and scaled up: soft shapes at a fraction of the cost. */
  upscaleTo?: [number, number];
  /** Filters applied to the looped still before it is overlaid (rotation). */
  prepare?: string;
  x: string;
  y: string;
  enable?: string;
}

function even(value: number): number {
  return Math.max(2, 2 * Math.round(value / 2));
}

/** An ffmpeg expression literal; only ever built from numbers. */
function num(value: number): string {
  return Number(value.toFixed(3)).toString();
}

/**
 * Rasterises a layer and crops it to its visible pixels: overlay cost grows with the overlaid area, and most
 * layers (a subject, a band of waves) cover a small part of the frame. Returns the crop's offset.
 */
async function rasterise(svg: string, file: string, opaque: boolean, trim: boolean, upscaleTo?: [number, number]): Promise<{ left: number; top: number }> {
  let image = sharp(Buffer.from(svg), { density: 72 });
  if (upscaleTo) image = image.resize(upscaleTo[0], upscaleTo[1], { fit: 'fill', kernel: 'cubic' });
  const { data, info } = await image.ensureAlpha().raw().toBuffer({ resolveWithObject: true });
  const { width, height } = info;
  let left = 0;
  let top = 0;
  let right = width - 1;
  let bottom = height - 1;
  if (!opaque && trim) {
    left = width;
    top = height;
    right = -1;
    bottom = -1;
    for (let y = 0; y < height; y += 1) {
      const row = y * width * 4;
      for (let x = 0; x < width; x += 1) {
        if (data[row + x * 4 + 3] === 0) continue;
        if (x < left) left = x;
        if (x > right) right = x;
        if (y < top) top = y;
        if (y > bottom) bottom = y;
      }
    }
    if (right < 0) {
      // Nothing visible: keep one transparent pixel so the graph stays uniform.
      left = 0;
      top = 0;
      right = 0;
      bottom = 0;
    }
  }
  // Even offsets and sizes keep yuva420p chroma aligned with the frame's.
  left -= left % 2;
  top -= top % 2;
  const spanX = right - left + 1;
  const spanY = bottom - top + 1;
  const w = Math.min(width - left, spanX + (spanX % 2));
  const h = Math.min(height - top, spanY + (spanY % 2));
  // Fast zlib: these files live for one encode.
  await sharp(data, { raw: { width, height, channels: 4 } })
    .extract({ left, top, width: w, height: h })
    .png({ compressionLevel: 1, adaptiveFiltering: false })
    .toFile(file);
  return { left, top };
}

/** Positions a moving sprite: x(t), y(t) expressions in scene pixels. */
function spriteExpressions(motion: Motion, x: number, y: number, w: number, canvasWidth: number): [string, string] {
  switch (motion.kind) {
    case 'drift': {
      const bob = motion.bobAmplitude > 0 ? `+${num(motion.bobAmplitude)}*sin(2*PI*t/${num(motion.bobPeriod)})` : '';
      return [`${num(x)}+${num(motion.vx)}*t`, `${num(y)}${bob}`];
    }
    case 'wrap': {
      // Leaves one side and comes back on the other, so long clips keep their subject.
      const span = canvasWidth + w;
      const start = x + w;
      const bob = motion.bobAmplitude > 0 ? `+${num(motion.bobAmplitude)}*sin(2*PI*t/${num(motion.bobPeriod)})` : '';
      return [`mod(${num(start)}+${num(motion.vx)}*t+${num(span * 1000)},${num(span)})-${num(w)}`, `${num(y)}${bob}`];
    }
    case 'rise':
      return [`${num(x)}+${num(motion.vx)}*t`, `${num(y)}+${num(motion.vy)}*t`];
  }
}

/** Renders the layers into `dir` and describes how ffmpeg should stack and move them. */
async function buildVideoLayers(layers: SceneLayers, plan: ScenePlan, dir: string, seconds: number): Promise<Layer[]> {
  const { width, height } = layers;
  const renders: Array<Promise<void>> = [];
  const out: Layer[] = [];
  let pending: Fragment[] = [];
  let counter = 0;
  const file = (): string => join(dir, `layer-${String((counter += 1)).padStart(2, '0')}.png`);

  const place = (svg: string, opaque: boolean, layer: Omit<Layer, 'file'>): void => {
    const f = file();
    const entry: Layer = { file: f, ...layer };
    out.push(entry);
    // Rotating layers turn about their centre, so they keep their full canvas.
    renders.push(
      rasterise(svg, f, opaque, layer.prepare === undefined, layer.upscaleTo).then(({ left, top }) => {
        if (left !== 0) entry.x = `(${entry.x})+${left}`;
        if (top !== 0) entry.y = `(${entry.y})+${top}`;
      }),
    );
  };
  const flush = (): void => {
    if (pending.length === 0) return;
    const frags = pending;
    pending = [];
    place(
      svgDocument(
        width,
        height,
        frags.flatMap((g) => g.defs),
        frags.map((g) => g.body).join(''),
      ),
      out.length === 0,
      { x: '0', y: '0' },
    );
  };
  const still = (fragment: Fragment): void => {
    if (fragment.body.length > 0) pending.push(fragment);
  };
  const moving = (svg: string, layer: Omit<Layer, 'file'>): void => {
    flush();
    place(svg, false, layer);
  };

  still(layers.sky);
  if (layers.sun) {
    const s = layers.sun;
    const doc = svgDocument(s.width, s.height, s.defs, s.body);
    if (s.motion.kind === 'rise' && s.motion.vy !== 0) {
      const [x, y] = spriteExpressions(s.motion, s.x, s.y, s.width, width);
      moving(doc, { x, y });
    } else {
      still({ defs: s.defs, body: `<g transform="translate(${n(s.x)} ${n(s.y)})">${s.body}</g>` });
    }
  }
  const clouds = layers.clouds(true, false);
  if (clouds.body.length > 0) {
    const dir = new SeededRandom('cloud-drift', ...plan.seedParts).next() < 0.5 ? -1 : 1;
    const speed = width * (plan.weather.includes('storm') ? 0.035 : 0.012);
    // The tiled layer is two scenes wide with a period of one scene: scroll within [-width, 0]. Drawn at a
    // quarter of the resolution and scaled up, which softens the edges as the stills' blur filter does.
    const doc = `<svg xmlns="http://www.w3.org/2000/svg" width="${Math.max(1, Math.round(width / 2))}" height="${Math.max(1, Math.round(height / 4))}" viewBox="0 0 ${2 * width} ${height}"><defs>${clouds.defs.join('')}</defs>${clouds.body}</svg>`;
    const shift = dir > 0 ? `mod(t*${num(speed)},${width})-${width}` : `-mod(t*${num(speed)},${width})`;
    moving(doc, { x: shift, y: '0', upscaleTo: [2 * width, height] });
  }
  if (layers.lightning) {
    moving(svgDocument(width, height, layers.lightning.defs, layers.lightning.body), {
      x: '0',
      y: '0',
      enable: 'lt(mod(t+1.1,2.9),0.09)+between(mod(t+1.1,2.9),0.16,0.22)',
    });
  }
  still(layers.far);
  still(layers.ground);
  for (const band of layers.waves) {
    const frag = band.draw(true);
    const h = band.bottom - band.top;
    const doc = `<svg xmlns="http://www.w3.org/2000/svg" width="${2 * width}" height="${h}" viewBox="0 ${band.top} ${2 * width} ${h}"><defs>${frag.defs.join('')}</defs>${frag.body}</svg>`;
    const shift = band.speed > 0 ? `mod(t*${num(band.speed)},${width})-${width}` : `-mod(t*${num(-band.speed)},${width})`;
    moving(doc, { x: shift, y: String(band.top) });
  }
  still(layers.subjects);
  // Fog belongs over the scenery; the vignette of stills is left out, as a full-frame overlay would cost
  // as much as the rest of the picture for an effect nobody notices in motion.
  if (layers.fog) still(layers.fog);
  for (const m of layers.movers) {
    const [x, y] = spriteExpressions(m.motion, m.x, m.y, m.width, width);
    moving(svgDocument(m.width, m.height, m.defs, m.body), { x, y });
  }
  if (layers.beam) {
    const b = layers.beam;
    const size = 2 * b.length;
    const beam = b.draw(0, true);
    const squashed = even(size * b.squash);
    // Seen from the side, a beam turning in the horizontal plane is a rotation squashed vertically. The beam is
    // soft, so it is rotated at a quarter of its size and scaled up afterwards: rotating the full-size square
    // every frame would cost more than the rest of the video.
    const small = even(size / 4);
    moving(
      `<svg xmlns="http://www.w3.org/2000/svg" width="${small}" height="${small}" viewBox="0 0 ${size} ${size}"><defs>${beam.defs.join('')}</defs>${beam.body}</svg>`,
      { prepare: `rotate=a='2*PI*t/6':c=none:ow=iw:oh=ih,scale=${size}:${squashed}`, x: num(b.x - b.length), y: num(b.y - squashed / 2) },
    );
  }
  for (const bl of layers.blades) {
    const size = 2 * bl.radius;
    const frag = bl.draw(0, true);
    moving(svgDocument(size, size, frag.defs, frag.body), {
      prepare: `rotate=a='-2*PI*t/5':c=none:ow=iw:oh=ih`,
      x: num(bl.x - bl.radius),
      y: num(bl.y - bl.radius),
    });
  }
  for (const pr of layers.precipitation) {
    const frag = pr.draw(true);
    const doc = `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${2 * height}" viewBox="0 ${-height} ${width} ${2 * height}"><defs>${frag.defs.join('')}</defs>${frag.body}</svg>`;
    // Period of one scene height; the offset keeps mod's argument positive for any duration.
    const offset = Math.ceil((Math.abs(pr.speed) * seconds) / height + 1) * height;
    const sway = pr.sway > 0 ? `${num(pr.sway)}*sin(1.3*t)` : '0';
    moving(doc, { x: sway, y: `mod(t*${num(pr.speed)}+${num(offset)},${height})-${height}` });
  }
  flush();
  await Promise.all(renders);
  return out;
}

/** Ambient sound matched to the setting: surf, rain, wind, traffic rumble, night insects or a space drone. */
function audioGraph(plan: ScenePlan, seed: number, firstInput: number): { inputs: string[]; filter: string } {
  const noiseSeed = new SeededRandom('audio', ...plan.seedParts, plan.setting).int(1, 2 ** 30);
  const wet = plan.weather.includes('rain') || plan.weather.includes('storm');
  const water = ['sea', 'beach', 'lake', 'underwater'].includes(plan.setting);
  let noise: string;
  let texture: string;
  if (plan.setting === 'space') {
    noise = `anoisesrc=color=brown:seed=${noiseSeed}:amplitude=0.15:sample_rate=48000`;
    texture = `aevalsrc='0.25*sin(2*PI*55*t)+0.15*sin(2*PI*82.5*t+2*sin(0.3*t))':s=48000`;
  } else {
    noise = `anoisesrc=color=${wet ? 'pink' : 'brown'}:seed=${noiseSeed}:amplitude=${wet ? 0.35 : 0.6}:sample_rate=48000`;
    texture =
      plan.time === 'night'
        ? `aevalsrc='0.05*sin(2*PI*4400*t)*lt(mod(28*t,1),0.5)*lt(mod(t,1.3),0.5)':s=48000`
        : plan.setting === 'city'
          ? `aevalsrc='0.06*sin(2*PI*98*t)+0.03*sin(2*PI*147*t)':s=48000`
          : `aevalsrc='0.08*sin(2*PI*(2900+700*sin(2*PI*11*t))*t)*lt(mod(t+${num(seed % 7)},2.7),0.22)':s=48000`;
  }
  const shape = wet
    ? 'highpass=f=400,lowpass=f=7000'
    : water
      ? `lowpass=f=600,volume='0.55+0.45*sin(2*PI*t/5.5)':eval=frame`
      : plan.setting === 'city'
        ? 'lowpass=f=300'
        : `bandpass=f=500:width_type=q:w=0.7,volume='0.6+0.4*sin(2*PI*t/7)':eval=frame`;
  const a = firstInput;
  const b = firstInput + 1;
  return {
    inputs: ['-f', 'lavfi', '-i', noise, '-f', 'lavfi', '-i', texture],
    // amix halves each input; the volume after it restores the level.
    filter: `[${a}:a]${shape}[an];[${b}:a]anull[at];[an][at]amix=inputs=2:duration=first,volume=1.8,aformat=sample_rates=48000:channel_layouts=stereo[a]`,
  };
}

/**
 * Plans the scene for a clip, writes its layer images into `dir` and returns
 * the ffmpeg inputs and filter graph. The scene is a little wider than the
 * frame so the camera can pan across it.
 */
export async function composeVideo(req: MotionRequest, dir: string): Promise<Composition> {
  const margin = even(req.width * 0.03);
  const sceneWidth = req.width + 2 * margin;
  const plan = planScene(interpretPrompt(req.prompt), req.seed, 0, sceneWidth, req.height);
  const layers = buildSceneLayers(plan, true);
  const stack = await buildVideoLayers(layers, plan, dir, req.seconds);

  const inputArgs: string[] = [];
  const chains: string[] = [];
  stack.forEach((layer, i) => {
    inputArgs.push('-i', layer.file);
    // loop repeats the one decoded frame: no PNG decode per frame. yuva420p once, before the loop, so overlay
    // does not convert every frame.
    const format = i === 0 ? 'yuv420p' : 'yuva420p';
    const prep = layer.prepare
      ? `format=rgba,loop=loop=-1:size=1:start=0,setpts=N/(${FPS}*TB),${layer.prepare},format=yuva420p`
      : `format=${format},loop=loop=-1:size=1:start=0,setpts=N/(${FPS}*TB)`;
    chains.push(`[${i}:v]${prep}[l${i}]`);
  });
  let current = 'l0';
  for (let i = 1; i < stack.length; i += 1) {
    const layer = stack[i] as Layer;
    const enable = layer.enable ? `:enable='${layer.enable}'` : '';
    chains.push(`[${current}][l${i}]overlay=x='${layer.x}':y='${layer.y}':eval=frame${enable}[o${i}]`);
    current = `o${i}`;
  }
  // Camera: a slow pan across the margin, left to right or right to left.
  const panRight = new SeededRandom('pan', ...plan.seedParts).next() < 0.5;
  const travel = 2 * margin;
  const panX = panRight ? `${travel}*min(t/${num(req.seconds)},1)` : `${travel}*(1-min(t/${num(req.seconds)},1))`;
  chains.push(`[${current}]crop=w=${req.width}:h=${req.height}:x='${panX}':y=0,setsar=1,format=yuv420p[v]`);

  let hasAudio = false;
  if (req.withAudio) {
    const audio = audioGraph(plan, req.seed, stack.length);
    inputArgs.push(...audio.inputs);
    chains.push(audio.filter);
    hasAudio = true;
  }
  return { inputArgs, filterGraph: chains.join(';'), hasAudio };
}
