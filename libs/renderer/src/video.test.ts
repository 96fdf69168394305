// The module object itself (not a namespace copy), so that jest.spyOn reaches the encoder's spawn.
import childProcess, { type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { chmod, mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { VideoEncoder, defaultFfmpegPath, defaultFfprobePath, type VideoRequest } from './index';
import { composeVideo } from './motion';

const execFile = promisify(childProcess.execFile);

interface ProbeStream {
  codec_type: string;
  codec_name: string;
  width?: number;
  height?: number;
  pix_fmt?: string;
  avg_frame_rate?: string;
  duration?: string;
}
interface Probe {
  streams: ProbeStream[];
  format: { duration: string; format_name: string };
}

async function probe(file: string): Promise<Probe> {
  const { stdout } = await execFile(defaultFfprobePath(), ['-v', 'error', '-print_format', 'json', '-show_streams', '-show_format', file]);
  return JSON.parse(stdout) as Probe;
}

function expectStrictlyIncreasingToHundred(values: number[]): void {
  expect(values.length).toBeGreaterThan(0);
  expect(values[values.length - 1]).toBe(100);
  for (let i = 0; i < values.length; i += 1) {
    expect(Number.isInteger(values[i])).toBe(true);
    expect(values[i]).toBeGreaterThanOrEqual(0);
    if (i > 0) expect(values[i]).toBeGreaterThan(values[i - 1] as number);
  }
}

let dir: string;
const encoder = new VideoEncoder({ ffmpegPath: defaultFfmpegPath(), timeoutMs: 60_000 });

function request(overrides: Partial<VideoRequest> = {}): VideoRequest {
  return {
    prompt: 'a fox running through snow',
    seed: 9,
    seconds: 1,
    width: 320,
    height: 240,
    withAudio: false,
    outputPath: join(dir, 'out.mp4'),
    ...overrides,
  };
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'media-video-test-'));
});

afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

afterEach(() => {
  jest.restoreAllMocks();
});

describe('VideoEncoder.encode', () => {
  it('writes a silent H.264 MP4 with the requested geometry and duration', async () => {
    const outputPath = join(dir, 'nested', 'silent.mp4');
    const progress: number[] = [];
    await encoder.encode(request({ outputPath }), (p) => progress.push(p));

    const info = await probe(outputPath);
    const video = info.streams.filter((s) => s.codec_type === 'video');
    expect(video).toHaveLength(1);
    expect(video[0]).toMatchObject({ codec_name: 'h264', width: 320, height: 240, pix_fmt: 'yuv420p', avg_frame_rate: '24/1' });
    expect(info.streams.some((s) => s.codec_type === 'audio')).toBe(false);
    expect(Math.abs(Number(info.format.duration) - 1)).toBeLessThanOrEqual(0.15);
    expectStrictlyIncreasingToHundred(progress);

    // +faststart: the index must precede the media data so players can start before the download ends.
    const bytes = await readFile(outputPath);
    expect(bytes.indexOf('moov')).toBeGreaterThan(0);
    expect(bytes.indexOf('moov')).toBeLessThan(bytes.indexOf('mdat'));
    expect(await readdir(join(dir, 'nested'))).toEqual(['silent.mp4']);
  });

  it('adds an AAC track only when withAudio is set', async () => {
    const outputPath = join(dir, 'audio.mp4');
    await encoder.encode(request({ outputPath, seconds: 2, withAudio: true }));
    const info = await probe(outputPath);
    const audio = info.streams.filter((s) => s.codec_type === 'audio');
    expect(audio).toHaveLength(1);
    expect(audio[0]?.codec_name).toBe('aac');
    expect(info.streams.find((s) => s.codec_type === 'video')?.codec_name).toBe('h264');
    expect(Math.abs(Number(info.format.duration) - 2)).toBeLessThanOrEqual(0.15);
    for (const stream of info.streams) expect(Math.abs(Number(stream.duration) - 2)).toBeLessThanOrEqual(0.15);
  });

  it('encodes 4 s of 1280x720 with audio, reporting progress before the file appears', async () => {
    const outputPath = join(dir, 'hd.mp4');
    const progress: number[] = [];
    const visibleEarly: number[] = [];
    const started = performance.now();
    await encoder.encode(request({ outputPath, seconds: 4, width: 1280, height: 720, withAudio: true }), (p) => {
      progress.push(p);
      if (p < 100 && existsSync(outputPath)) visibleEarly.push(p);
    });
    const elapsed = performance.now() - started;
    console.log(`encode 4 s 1280x720 with audio: ${elapsed.toFixed(0)} ms, progress ${progress.join(',')}`);

    expectStrictlyIncreasingToHundred(progress);
    expect(visibleEarly).toEqual([]);
    const info = await probe(outputPath);
    expect(info.streams.find((s) => s.codec_type === 'video')).toMatchObject({ codec_name: 'h264', width: 1280, height: 720 });
    expect(info.streams.find((s) => s.codec_type === 'audio')?.codec_name).toBe('aac');
    expect(Math.abs(Number(info.format.duration) - 4)).toBeLessThanOrEqual(0.15);
    // What a real encoder gives for 4 s of animated 720p at CRF 23: hundreds of kilobytes, not megabytes of noise.
    const { size } = await stat(outputPath);
    console.log(`4 s 1280x720 with audio: ${size} bytes`);
    expect(size).toBeGreaterThan(60_000);
    expect(size).toBeLessThan(2_500_000);
  });

  it('is deterministic per prompt and seed', async () => {
    const small = { width: 160, height: 120 };
    const paths = ['a.mp4', 'b.mp4', 'c.mp4', 'd.mp4'].map((name) => join(dir, name));
    await encoder.encode(request({ ...small, outputPath: paths[0] as string }));
    await encoder.encode(request({ ...small, outputPath: paths[1] as string }));
    await encoder.encode(request({ ...small, outputPath: paths[2] as string, prompt: 'a cat asleep on a rug' }));
    await encoder.encode(request({ ...small, outputPath: paths[3] as string, seed: 10 }));
    const [a, b, c, d] = await Promise.all(paths.map((p) => readFile(p)));
    expect(a?.equals(b as Buffer)).toBe(true);
    expect(a?.equals(c as Buffer)).toBe(false);
    expect(a?.equals(d as Buffer)).toBe(false);
  });

  it.each<[string, Partial<VideoRequest>]>([
    ['odd width', { width: 321 }],
    ['odd height', { height: 239 }],
    ['zero width', { width: 0 }],
    ['fractional height', { height: 240.5 }],
    ['zero seconds', { seconds: 0 }],
    ['NaN seconds', { seconds: Number.NaN }],
  ])('rejects %s without starting ffmpeg', async (_label, overrides) => {
    const spawn = jest.spyOn(childProcess, 'spawn');
    const outputPath = join(dir, 'invalid.mp4');
    await expect(encoder.encode(request({ ...overrides, outputPath }))).rejects.toThrow(Error);
    expect(spawn).not.toHaveBeenCalled();
    expect(existsSync(outputPath)).toBe(false);
  });

  it('kills ffmpeg and rejects on timeout, leaving no file behind', async () => {
    const spawn = jest.spyOn(childProcess, 'spawn');
    // The limit covers layer rendering too; 8 s leaves room for that on a busy machine and is far too
    // short for 60 s of 720p (about 15 s of encoding on two idle cores).
    const impatient = new VideoEncoder({ ffmpegPath: defaultFfmpegPath(), timeoutMs: 8000 });
    const outputPath = join(dir, 'timeout', 'slow.mp4');
    await expect(impatient.encode(request({ outputPath, seconds: 60, width: 1280, height: 720 }))).rejects.toThrow(/timed out after 8000 ms/);
    const child = spawn.mock.results[0]?.value as ChildProcess;
    expect(child.signalCode).toBe('SIGKILL');
    expect(existsSync(outputPath)).toBe(false);
    expect(await readdir(join(dir, 'timeout'))).toEqual([]);
  });

  it('kills ffmpeg and rejects when the signal aborts mid-encode', async () => {
    const spawn = jest.spyOn(childProcess, 'spawn');
    const controller = new AbortController();
    const outputPath = join(dir, 'abort', 'aborted.mp4');
    const progress: number[] = [];
    const encoding = encoder.encode(
      request({ outputPath, seconds: 60, width: 1280, height: 720 }),
      (p) => {
        progress.push(p);
        controller.abort();
      },
      controller.signal,
    );
    // Also abort once ffmpeg runs, in case it has not reported progress yet (it reports every half
    // second). Not on a timer: on a busy machine the layers can still be drawing when it fires, and
    // then there is no ffmpeg to kill.
    let settled = false;
    const abortOnceRunning = (async () => {
      while (!settled && spawn.mock.results.length === 0) await new Promise((r) => setTimeout(r, 20));
      controller.abort();
    })();
    await expect(encoding.finally(() => (settled = true))).rejects.toThrow(/aborted/);
    await abortOnceRunning;
    const child = spawn.mock.results[0]?.value as ChildProcess;
    expect(child.signalCode).toBe('SIGKILL');
    expect(progress).not.toContain(100);
    expect(existsSync(outputPath)).toBe(false);
    expect(await readdir(join(dir, 'abort'))).toEqual([]);
  });

  it('counts layer rendering against the time limit, leaving no file behind', async () => {
    const spawn = jest.spyOn(childProcess, 'spawn');
    const hasty = new VideoEncoder({ ffmpegPath: defaultFfmpegPath(), timeoutMs: 1 });
    const outputPath = join(dir, 'hasty', 'never.mp4');
    await expect(hasty.encode(request({ outputPath }))).rejects.toThrow(/timed out after 1 ms/);
    expect(spawn).not.toHaveBeenCalled();
    expect(await readdir(join(dir, 'hasty'))).toEqual([]);
  });

  it('rejects an already-aborted signal without starting ffmpeg', async () => {
    const spawn = jest.spyOn(childProcess, 'spawn');
    await expect(encoder.encode(request({ outputPath: join(dir, 'never.mp4') }), undefined, AbortSignal.abort())).rejects.toThrow(/aborted/);
    expect(spawn).not.toHaveBeenCalled();
  });

  it('includes the stderr tail when ffmpeg exits non-zero', async () => {
    const fake = join(dir, 'fake-ffmpeg.sh');
    await writeFile(fake, '#!/bin/sh\necho "noise line" >&2\necho "Unknown encoder libx264-bogus" >&2\nexit 3\n');
    await chmod(fake, 0o755);
    const broken = new VideoEncoder({ ffmpegPath: fake, timeoutMs: 5_000 });
    const outputPath = join(dir, 'broken', 'out.mp4');
    await expect(broken.encode(request({ outputPath }))).rejects.toThrow(/code 3: .*Unknown encoder libx264-bogus/s);
    expect(await readdir(join(dir, 'broken'))).toEqual([]);
  });

  it('gives the encoder the threads it was given (its share of the CPUs), and the clip plays', async () => {
    const spawn = jest.spyOn(childProcess, 'spawn');
    const single = new VideoEncoder({ ffmpegPath: defaultFfmpegPath(), timeoutMs: 60_000, threads: 1 });
    const outputPath = join(dir, 'one-thread.mp4');
    await single.encode(request({ outputPath }));
    const args = spawn.mock.calls.find(([command]) => command === defaultFfmpegPath())![1] as string[];
    const at = args.indexOf('-threads');
    expect(args.slice(at, at + 2)).toEqual(['-threads', '1']);
    // An output option: it must come before the encoder it applies to.
    expect(at).toBeGreaterThan(args.indexOf('-filter_complex'));
    expect(at).toBeLessThan(args.indexOf('-c:v'));
    expect((await probe(outputPath)).streams.find((s) => s.codec_type === 'video')).toMatchObject({ codec_name: 'h264', width: 320, height: 240 });
  });

  it('rejects when the ffmpeg binary is missing', async () => {
    const missing = new VideoEncoder({ ffmpegPath: join(dir, 'no-such-ffmpeg'), timeoutMs: 5_000 });
    await expect(missing.encode(request({ outputPath: join(dir, 'missing.mp4') }))).rejects.toThrow(/failed to run ffmpeg/);
  });

  it('finishes the encode even if the progress callback throws', async () => {
    const outputPath = join(dir, 'throwing-progress.mp4');
    await encoder.encode(request({ outputPath }), () => {
      throw new Error('progress sink down');
    });
    expect(existsSync(outputPath)).toBe(true);
  });
});

/** One decoded frame as packed RGB. */
async function frameAt(file: string, seconds: number): Promise<Buffer> {
  const { stdout } = await execFile(
    defaultFfmpegPath(),
    ['-v', 'error', '-ss', String(seconds), '-i', file, '-frames:v', '1', '-f', 'rawvideo', '-pix_fmt', 'rgb24', 'pipe:1'],
    { encoding: 'buffer', maxBuffer: 64 * 1024 * 1024 },
  );
  return stdout;
}

/** Mean R, G, B over rows [y0, y1) of a packed RGB frame. */
function meanRgb(rgb: Buffer, width: number, y0: number, y1: number): [number, number, number] {
  const sum = [0, 0, 0];
  for (let o = y0 * width * 3; o < y1 * width * 3; o += 3) {
    for (let c = 0; c < 3; c += 1) sum[c] = (sum[c] as number) + (rgb[o + c] as number);
  }
  const count = (y1 - y0) * width;
  return sum.map((v) => v / count) as [number, number, number];
}

describe('VideoEncoder scenes', () => {
  it('animates the scene: frames half a second and three seconds in differ', async () => {
    const outputPath = join(dir, 'motion.mp4');
    await encoder.encode(request({ outputPath, prompt: 'a sailboat on a calm lake at dawn', seconds: 4, width: 320, height: 180 }));
    const [early, late] = await Promise.all([frameAt(outputPath, 0.5), frameAt(outputPath, 3)]);
    expect(early.length).toBe(320 * 180 * 3);
    let changed = 0;
    let total = 0;
    for (let i = 0; i < early.length; i += 1) {
      const d = Math.abs((early[i] as number) - (late[i] as number));
      total += d;
      if (d > 12) changed += 1;
    }
    expect(changed / early.length).toBeGreaterThan(0.05);
    expect(total / early.length).toBeGreaterThan(2);
  });

  it('shows the prompt: a lighthouse at dusk has a warm sky over a blue sea', async () => {
    const outputPath = join(dir, 'lighthouse.mp4');
    await encoder.encode(request({ outputPath, prompt: 'a lighthouse at dusk', seconds: 1, width: 320, height: 180 }));
    const frame = await frameAt(outputPath, 0.5);
    const [skyR, , skyB] = meanRgb(frame, 320, 0, 72);
    const [seaR, , seaB] = meanRgb(frame, 320, 140, 180);
    expect(skyR).toBeGreaterThan(skyB);
    expect(seaB).toBeGreaterThan(seaR);
  });
});

describe('composeVideo', () => {
  it('never passes prompt text to ffmpeg', async () => {
    const layerDir = await mkdtemp(join(tmpdir(), 'media-compose-test-'));
    try {
      const prompt = "a boat'; drawtext=text=pwned:fontfile=/etc/passwd [x] ; movie=/etc/shadow";
      const composition = await composeVideo({ prompt, seed: 1, seconds: 1, width: 64, height: 48, withAudio: true }, layerDir);
      const everything = [...composition.inputArgs, composition.filterGraph].join(' ');
      for (const word of ['pwned', 'drawtext', 'passwd', 'shadow', 'movie']) expect(everything).not.toContain(word);
    } finally {
      await rm(layerDir, { recursive: true, force: true });
    }
  });
});

describe('VideoEncoder construction and defaults', () => {
  it('validates its options', () => {
    expect(() => new VideoEncoder({ ffmpegPath: defaultFfmpegPath(), timeoutMs: 0 })).toThrow(/timeoutMs/);
    expect(() => new VideoEncoder({ ffmpegPath: '', timeoutMs: 1000 })).toThrow(/ffmpegPath/);
  });

  it('points at the installed ffmpeg and ffprobe binaries', () => {
    expect(existsSync(defaultFfmpegPath())).toBe(true);
    expect(existsSync(defaultFfprobePath())).toBe(true);
  });
});
