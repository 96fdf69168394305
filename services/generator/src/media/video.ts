import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdir, rename, rm } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { hslToRgb, rgbHex, SeededRandom } from './random';

/** Parameters of a text-to-video encode. */
export interface VideoRequest {
  /** Text the clip is derived from; only its hash reaches ffmpeg, never the text itself. */
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
  /** Final location of the MP4; the file only appears there once it is complete. */
  outputPath: string;
}

/** Options for {@link VideoEncoder}. */
export interface VideoEncoderOptions {
  /** Absolute path of an ffmpeg binary built with libx264 and the native aac encoder. */
  ffmpegPath: string;
  /** Wall-clock limit for one encode; ffmpeg is killed when it is exceeded. */
  timeoutMs: number;
}

const FPS = 24;
const MAX_DIMENSION = 8192;
/** Enough of stderr to show ffmpeg's actual complaint without flooding logs or error payloads. */
const STDERR_TAIL_CHARS = 4000;

/** Game-of-life rules that stay lively for many seconds instead of dying out or saturating. */
const LIFE_RULES = ['B3/S23', 'B36/S23', 'B3678/S34678', 'B35678/S5678', 'B368/S245'] as const;

interface VideoPlan {
  gridWidth: number;
  gridHeight: number;
  lifeSeed: number;
  fillRatio: number;
  rule: string;
  mold: number;
  lifeColour: string;
  deathColour: string;
  moldColour: string;
  boxColour: string;
  boxWidth: number;
  boxHeight: number;
  speedX: number;
  speedY: number;
  phaseX: number;
  phaseY: number;
  toneHz: number;
  beepFactor: number;
}

function even(value: number): number {
  return Math.max(2, 2 * Math.round(value / 2));
}

function hex(hue: number, saturation: number, lightness: number): string {
  return `0x${rgbHex(hslToRgb(hue, saturation, lightness))}`;
}

/** Derives every creative parameter from the (prompt, seed) hash so the clip is reproducible. */
function planVideo(req: VideoRequest): VideoPlan {
  const rng = new SeededRandom('video', req.prompt, req.seed);
  const hue = rng.range(0, 360);
  // Coarse cells read as "pixel art" after upscaling and keep the simulation cheap at HD sizes.
  const cell = rng.pick([4, 5, 6, 8]);
  return {
    gridWidth: Math.max(2, Math.round(req.width / cell)),
    gridHeight: Math.max(2, Math.round(req.height / cell)),
    lifeSeed: rng.nextUint32(),
    fillRatio: Number(rng.range(0.2, 0.55).toFixed(3)),
    rule: rng.pick(LIFE_RULES),
    mold: rng.int(4, 24),
    lifeColour: hex(hue, 0.9, 0.6),
    deathColour: hex(hue + 200, 0.5, 0.12),
    moldColour: hex(hue + 30, 0.6, 0.3),
    boxColour: hex(hue + rng.pick([120, 150, 180, 210, 240]), 0.75, 0.55),
    boxWidth: even(req.width * rng.range(0.1, 0.22)),
    boxHeight: even(req.height * rng.range(0.1, 0.22)),
    speedX: Number(rng.range(0.6, 2.2).toFixed(3)),
    speedY: Number(rng.range(0.6, 2.2).toFixed(3)),
    phaseX: Number(rng.range(0, 2 * Math.PI).toFixed(3)),
    phaseY: Number(rng.range(0, 2 * Math.PI).toFixed(3)),
    toneHz: rng.int(220, 880),
    beepFactor: rng.int(0, 4),
  };
}

function validate(req: VideoRequest): void {
  if (!Number.isFinite(req.seconds) || req.seconds <= 0) {
    throw new Error(`seconds must be a positive number, got ${String(req.seconds)}`);
  }
  for (const [name, value] of [['width', req.width], ['height', req.height]] as const) {
    if (!Number.isInteger(value) || value < 2 || value > MAX_DIMENSION || value % 2 !== 0) {
      throw new Error(`${name} must be an even integer between 2 and ${MAX_DIMENSION}, got ${String(value)}`);
    }
  }
  if (typeof req.outputPath !== 'string' || req.outputPath.length === 0) {
    throw new Error('outputPath is required');
  }
}

function buildArgs(req: VideoRequest, plan: VideoPlan, target: string, timeLimitSeconds: number): string[] {
  const life =
    `life=s=${plan.gridWidth}x${plan.gridHeight}:r=${FPS}:seed=${plan.lifeSeed}:ratio=${plan.fillRatio}` +
    `:rule=${plan.rule}:mold=${plan.mold}:life_color=${plan.lifeColour}:death_color=${plan.deathColour}` +
    `:mold_color=${plan.moldColour}`;
  const box = `color=c=${plan.boxColour}:s=${plan.boxWidth}x${plan.boxHeight}:r=${FPS}`;
  // overlay (unlike drawbox in ffmpeg 4.1) re-evaluates x/y per frame, which is what makes the box move.
  const graph =
    `[0:v]scale=${req.width}:${req.height}:flags=neighbor,setsar=1[bg];` +
    `[bg][1:v]overlay=x='(W-w)*(0.5+0.5*sin(t*${plan.speedX}+${plan.phaseX}))'` +
    `:y='(H-h)*(0.5+0.5*cos(t*${plan.speedY}+${plan.phaseY}))':shortest=1,format=yuv420p[v]`;
  const seconds = String(req.seconds);
  const args = [
    '-hide_banner', '-nostdin', '-nostats', '-loglevel', 'error', '-y',
    // A generator killed with SIGKILL cannot take ffmpeg down with it; this caps the orphan's life.
    '-timelimit', String(timeLimitSeconds),
    '-f', 'lavfi', '-i', life,
    '-f', 'lavfi', '-i', box,
  ];
  if (req.withAudio) {
    args.push('-f', 'lavfi', '-i', `sine=frequency=${plan.toneHz}:beep_factor=${plan.beepFactor}:sample_rate=48000`);
  }
  args.push('-filter_complex', graph, '-map', '[v]');
  if (req.withAudio) args.push('-map', '2:a', '-c:a', 'aac', '-b:a', '128k', '-ac', '2');
  args.push(
    '-c:v', 'libx264', '-preset', 'veryfast', '-pix_fmt', 'yuv420p', '-r', String(FPS),
    '-t', seconds,
    '-map_metadata', '-1',
    '-movflags', '+faststart',
    '-progress', 'pipe:1',
    // The temp name has no .mp4 extension, so the muxer must be named explicitly.
    '-f', 'mp4',
    target,
  );
  return args;
}

function abortReason(signal: AbortSignal): Error {
  return new Error('video encoding was aborted', { cause: signal.reason });
}

/**
 * Produces real H.264 MP4 clips from ffmpeg's synthetic lavfi sources: a
 * seeded Game of Life upscaled to the frame, with a prompt-coloured box moving
 * over it and, optionally, a prompt-pitched tone.
 */
export class VideoEncoder {
  private readonly ffmpegPath: string;
  private readonly timeoutMs: number;

  /**
   * @param opts - ffmpeg binary location and the per-encode time limit.
   */
  constructor(opts: VideoEncoderOptions) {
    if (!opts.ffmpegPath) throw new Error('ffmpegPath is required');
    if (!Number.isFinite(opts.timeoutMs) || opts.timeoutMs <= 0) {
      throw new Error(`timeoutMs must be a positive number, got ${String(opts.timeoutMs)}`);
    }
    this.ffmpegPath = opts.ffmpegPath;
    this.timeoutMs = opts.timeoutMs;
  }

  /**
   * Encodes an H.264 (yuv420p, +faststart) MP4 of exactly `seconds` duration at width x height, 24 fps, using ffmpeg lavfi sources whose parameters derive from a prompt/seed hash; with withAudio an AAC track from a `sine` source at a prompt-derived frequency, else no audio stream.
   *
   * @param req - what to encode and where to put it.
   * @param onProgress - receives integer percentages 0..100, strictly increasing, ending with 100 once
   *   the file is in place. Best effort: exceptions thrown by the callback are ignored so a failing
   *   progress sink cannot break an otherwise good encode.
   * @param signal - aborting kills ffmpeg and rejects.
   * @throws Error on invalid dimensions/duration, timeout, abort, or non-zero ffmpeg exit (message includes the stderr tail).
   */
  async encode(req: VideoRequest, onProgress?: (percent: number) => void, signal?: AbortSignal): Promise<void> {
    validate(req);
    if (signal?.aborted) throw abortReason(signal);

    const plan = planVideo(req);
    const dir = dirname(req.outputPath);
    await mkdir(dir, { recursive: true });
    // Same directory as the target so the final rename is atomic (no cross-device copy); dot-prefixed
    // so directory listings and storage scans skip it.
    const tempPath = join(dir, `.${basename(req.outputPath)}.${randomBytes(6).toString('hex')}.partial`);

    let lastPercent = -1;
    const report = (percent: number): void => {
      if (onProgress === undefined || percent <= lastPercent) return;
      lastPercent = percent;
      try {
        onProgress(percent);
      } catch {
        // Deliberately ignored; see the onProgress contract above.
      }
    };

    try {
      await this.run(buildArgs(req, plan, tempPath, Math.ceil(this.timeoutMs / 1000)), req.seconds, report, signal);
      await rename(tempPath, req.outputPath);
    } catch (err) {
      await rm(tempPath, { force: true });
      throw err;
    }
    report(100);
  }

  private run(args: string[], seconds: number, report: (percent: number) => void, signal?: AbortSignal): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      const child = spawn(this.ffmpegPath, args, { stdio: ['ignore', 'pipe', 'pipe'], windowsHide: true });
      const totalUs = seconds * 1_000_000;
      let stderr = '';
      let pending = '';
      let failure: Error | undefined;
      let settled = false;

      const stop = (reason: Error): void => {
        if (failure !== undefined) return;
        failure = reason;
        // SIGKILL: a stalled encoder may ignore SIGTERM, and the partial output is discarded anyway.
        child.kill('SIGKILL');
      };
      const timer = setTimeout(() => stop(new Error(`ffmpeg timed out after ${this.timeoutMs} ms`)), this.timeoutMs);
      const onAbort = (): void => stop(abortReason(signal as AbortSignal));
      signal?.addEventListener('abort', onAbort, { once: true });

      const finish = (err?: Error): void => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
        if (err) reject(err);
        else resolve();
      };

      child.stdout.setEncoding('utf8');
      child.stdout.on('data', (chunk: string) => {
        pending += chunk;
        const lines = pending.split('\n');
        pending = lines.pop() ?? '';
        for (const line of lines) {
          // Despite its name, out_time_ms is in microseconds (a long-standing ffmpeg quirk), like out_time_us.
          const match = /^out_time_(?:ms|us)=(\d+)\s*$/.exec(line);
          if (match === null) continue;
          const percent = Math.floor((Number(match[1]) / totalUs) * 100);
          // 100 is reserved for "file renamed into place", so the muxer's final flush never reads as done.
          report(Math.max(0, Math.min(99, percent)));
        }
      });
      child.stderr.setEncoding('utf8');
      child.stderr.on('data', (chunk: string) => {
        stderr = (stderr + chunk).slice(-STDERR_TAIL_CHARS);
      });

      child.once('error', (err) => {
        finish(failure ?? new Error(`failed to run ffmpeg at ${this.ffmpegPath}: ${err.message}`, { cause: err }));
      });
      child.once('close', (code, sig) => {
        if (failure !== undefined) {
          finish(failure);
        } else if (code === 0) {
          finish();
        } else {
          const status = code === null ? `signal ${String(sig)}` : `code ${code}`;
          finish(new Error(`ffmpeg exited with ${status}: ${stderr.trim() || '(no stderr output)'}`));
        }
      });
    });
  }
}
