/**
 * `@media/renderer`: a deterministic procedural renderer that stands in for a
 * generative model; the generator's procedural backend is built on it. Prompts
 * are read against a fixed vocabulary (vocabulary.ts), planned into a scene
 * (plan.ts), drawn as layered SVG (scene.ts, subjects.ts) and rasterised by
 * sharp; edits grade and paint into uploads (edit.ts); videos animate the
 * scene's layers with ffmpeg (motion.ts, video.ts).
 */
export { ImageRenderer, InvalidImageError } from './image';
export type { Background, EditImageRequest, EncodeQuality, EncodingOptions, ImageFormat, RenderImageRequest } from './image';
export { VideoEncoder } from './video';
export type { VideoEncoderOptions, VideoRequest } from './video';
export { defaultFfmpegPath, defaultFfprobePath } from './binaries';
export { limitImageThreads, threadsPerJob } from './threads';
