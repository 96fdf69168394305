/**
 * Renders sample pictures, edits and a video for a person to look at:
 *   npx tsx libs/renderer/src/test-support/samples.ts [outDir] [prompt...]
 * With prompts, only those pictures are rendered.
 */
import childProcess from 'node:child_process';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import sharp from 'sharp';
import { defaultFfmpegPath, ImageRenderer, VideoEncoder } from '../index';

const execFile = promisify(childProcess.execFile);

const DEFAULT_PROMPTS = [
  'a lighthouse at dusk',
  'a red fox in a snowy forest at night',
  'a city skyline at night, neon',
  'a sailboat on a calm lake at dawn',
  'a castle on a mountain in a storm',
];

function slug(prompt: string): string {
  return prompt
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-|-$/g, '')
    .slice(0, 60);
}

async function timed<T>(label: string, work: () => Promise<T>): Promise<T> {
  const started = performance.now();
  const result = await work();
  console.log(`${label} ${(performance.now() - started).toFixed(0)} ms`);
  return result;
}

/** Mask (OpenAI semantics: transparent = edit here) covering the lower-right quarter. */
async function quarterMask(size: number): Promise<Buffer> {
  const raw = Buffer.alloc(size * size * 4, 255);
  for (let y = size / 2; y < size; y += 1) {
    for (let x = size / 2; x < size; x += 1) raw[(y * size + x) * 4 + 3] = 0;
  }
  return sharp(raw, { raw: { width: size, height: size, channels: 4 } })
    .png()
    .toBuffer();
}

async function main(): Promise<void> {
  const [outDir = '/tmp/samples', ...prompts] = process.argv.slice(2);
  await mkdir(outDir, { recursive: true });
  const renderer = new ImageRenderer();
  const size = 1024;
  for (const prompt of prompts.length > 0 ? prompts : DEFAULT_PROMPTS) {
    const file = join(outDir, `${slug(prompt)}.png`);
    const png = await timed(file, () => renderer.render({ prompt, seed: 1, index: 0, width: size, height: size, format: 'png' }));
    await writeFile(file, png);
  }
  if (prompts.length > 0) return;

  const base = await renderer.render({ prompt: 'a cottage in a meadow at noon', seed: 2, index: 0, width: size, height: size, format: 'png' });
  await writeFile(join(outDir, 'edit-0-original.png'), base);
  const edits: Array<[string, string, Buffer | undefined]> = [
    ['edit-1-sunset-add-moon.png', 'make it sunset and add a moon', undefined],
    ['edit-2-add-cat-masked.png', 'add a cat', await quarterMask(size)],
    ['edit-3-night-snow.png', 'make it night with snow', undefined],
    ['edit-4-black-and-white-blur.png', 'black and white, blur the background', undefined],
  ];
  for (const [name, prompt, mask] of edits) {
    const out = await timed(name, () =>
      renderer.edit({ prompt, seed: 2, index: 0, images: [base], width: size, height: size, format: 'png', ...(mask ? { mask } : {}) }),
    );
    await writeFile(join(outDir, name), out);
  }

  const encoder = new VideoEncoder({ ffmpegPath: defaultFfmpegPath(), timeoutMs: 60_000 });
  for (const prompt of ['a lighthouse at dusk', 'a sailboat on a calm lake at dawn']) {
    const video = join(outDir, `${slug(prompt)}.mp4`);
    await timed(video, () => encoder.encode({ prompt, seed: 1, seconds: 4, width: 1280, height: 720, withAudio: true, outputPath: video }));
    for (const t of [0.5, 2, 3.5]) {
      await execFile(defaultFfmpegPath(), [
        '-v',
        'error',
        '-y',
        '-ss',
        String(t),
        '-i',
        video,
        '-frames:v',
        '1',
        join(outDir, `${slug(prompt)}-frame-${t}s.png`),
      ]);
    }
  }
}

void main();
