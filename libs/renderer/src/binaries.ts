/**
 * Default binary paths from the npm installer packages.
 *
 * The installer modules are required lazily: they throw at load time on
 * platforms without a prebuilt binary, and a deployment that passes its own
 * ffmpeg path should not crash merely by importing this module.
 */

/** Path of the ffmpeg binary shipped by `@ffmpeg-installer/ffmpeg`. */
export function defaultFfmpegPath(): string {
  return (require('@ffmpeg-installer/ffmpeg') as { path: string }).path;
}

/** Path of the ffprobe binary shipped by `@ffprobe-installer/ffprobe`. */
export function defaultFfprobePath(): string {
  return (require('@ffprobe-installer/ffprobe') as { path: string }).path;
}
