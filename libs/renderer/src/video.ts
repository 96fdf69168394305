import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdir, mkdtemp, rename, rm } from 'node:fs/promises';
import { availableParallelism } from 'node:os';
import { scratchDir } from '@media/common';
import { basename, dirname, join } from 'node:path';
import { composeVideo, FPS, type Composition, type MotionRequest } from './motion';

/** Parameters of a text-to-video encode: the clip's (see {@link MotionRequest}) and where it goes. */
export interface VideoRequest extends MotionRequest {
  /** Final location of the MP4; the file only appears there once it is complete. */
  outputPath: string;
}

/** Options for {@link VideoEncoder}. */
export interface VideoEncoderOptions {
  /** Absolute path of an ffmpeg binary built with libx264 and the native aac encoder. */
  ffmpegPath: string;
  /** Wall-clock limit for one encode; ffmpeg is killed when it is exceeded. */
  timeoutMs: number;
  /** The encoder's threads ({@link threadsPerJob}); ffmpeg's own choice, by the machine's cores, when absent. */
  threads?: number;
}

const MAX_DIMENSION = 8192;
/** Enough of stderr to show ffmpeg's actual complaint without flooding logs or error payloads. */
const STDERR_TAIL_CHARS = 4000;
/**
 * x264 settings: CRF 23 is x264's own default quality and veryfast keeps a 4 s 720p clip to about a second of
 * encoding on two cores; the scene's flat areas compress well, so sizes land where a real encoder's would.
 */
const X264 = ['-c:v', 'libx264', '-preset', 'veryfast', '-crf', '23', '-pix_fmt', 'yuv420p'];

function validate(req: VideoRequest): void {
  if (!Number.isFinite(req.seconds) || req.seconds <= 0) {
    throw new Error(`seconds must be a positive number, got ${String(req.seconds)}`);
  }
  for (const [name, value] of [
    ['width', req.width],
    ['height', req.height],
  ] as const) {
    if (!Number.isInteger(value) || value < 2 || value > MAX_DIMENSION || value % 2 !== 0) {
      throw new Error(`${name} must be an even integer between 2 and ${MAX_DIMENSION}, got ${String(value)}`);
    }
  }
  if (typeof req.outputPath !== 'string' || req.outputPath.length === 0) {
    throw new Error('outputPath is required');
  }
}

function buildArgs(req: VideoRequest, composition: Composition, target: string, timeLimitSeconds: number, threads: number | undefined): string[] {
  const args = [
    '-hide_banner',
    '-nostdin',
    '-nostats',
    '-loglevel',
    'error',
    '-y',
    // A process killed with SIGKILL cannot take ffmpeg down with it; this caps the orphan's life.
    '-timelimit',
    String(timeLimitSeconds),
    ...composition.inputArgs,
    '-filter_complex',
    composition.filterGraph,
    '-map',
    '[v]',
  ];
  if (composition.hasAudio) args.push('-map', '[a]', '-c:a', 'aac', '-b:a', '96k', '-ac', '2');
  if (threads !== undefined) args.push('-threads', String(threads));
  args.push(
    ...X264,
    '-r',
    String(FPS),
    '-t',
    String(req.seconds),
    '-map_metadata',
    '-1',
    '-movflags',
    '+faststart',
    '-progress',
    'pipe:1',
    // The temp name has no .mp4 extension, so the muxer must be named explicitly.
    '-f',
    'mp4',
    target,
  );
  return args;
}

function abortReason(signal: AbortSignal): Error {
  return new Error('video encoding was aborted', { cause: signal.reason });
}

/**
 * Produces real H.264 MP4 clips of the prompt's scene in motion (see motion.ts):
 * layers rendered once with sharp, animated and encoded by ffmpeg, with an
 * optional ambient sound track.
 */
export class VideoEncoder {
  private readonly ffmpegPath: string;
  private readonly timeoutMs: number;
  private readonly threads: number | undefined;

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
    this.threads = opts.threads;
  }

  /**
   * Encodes an H.264 (CRF 23, yuv420p, +faststart) MP4 of exactly `seconds` duration at width x height, 24 fps,
   * showing the scene the prompt describes with moving parts and a slow camera pan; the same (prompt, seed)
   * gives the same bytes. With withAudio an AAC track of ambient sound suited to the setting, else no audio stream.
   * The time limit covers the whole encode, layer rendering included.
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

    const deadline = performance.now() + this.timeoutMs;
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

    // Layer images go to a private temp directory, so only the finished MP4 ever appears beside the output.
    const layerDir = await mkdtemp(join(scratchDir(), 'layers-'));
    let layersRemoved: Promise<void> | undefined;
    const removeLayers = (): Promise<void> => (layersRemoved ??= rm(layerDir, { recursive: true, force: true }).catch(() => undefined));
    try {
      const composition = await composeVideo(req, layerDir);
      if (signal?.aborted) throw abortReason(signal);
      const remaining = Math.floor(deadline - performance.now());
      if (remaining <= 0) throw new Error(`video encoding timed out after ${this.timeoutMs} ms`);
      // -timelimit counts CPU time, which runs up to one second per core per wall second; scaled so that our own
      // wall-clock timer always fires first and -timelimit only catches an orphaned ffmpeg.
      const cpuLimit = Math.ceil((remaining / 1000) * (availableParallelism() + 1));
      // Once ffmpeg reports progress it has decoded every layer (the loop filter keeps them in memory), so the
      // files can go: a process killed mid-encode then leaves nothing behind in the temp directory.
      const onProgressLine = (percent: number): void => {
        void removeLayers();
        report(percent);
      };
      await this.run(buildArgs(req, composition, tempPath, cpuLimit, this.threads), req.seconds, onProgressLine, remaining, signal);
      await rename(tempPath, req.outputPath);
    } catch (err) {
      await rm(tempPath, { force: true });
      throw err;
    } finally {
      await removeLayers();
    }
    report(100);
  }

  private run(args: string[], seconds: number, report: (percent: number) => void, limitMs: number, signal?: AbortSignal): Promise<void> {
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
      const timer = setTimeout(() => stop(new Error(`ffmpeg timed out after ${this.timeoutMs} ms`)), limitMs);
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
