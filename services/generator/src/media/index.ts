/**
 * Media-making for the generator service: deterministic procedural images
 * (sharp) and videos (ffmpeg) that stand in for a real generative model.
 */
export { ImageRenderer, InvalidImageError } from './image';
export type { EditImageRequest, ImageFormat, RenderImageRequest } from './image';
export { VideoEncoder } from './video';
export type { VideoEncoderOptions, VideoRequest } from './video';
export { defaultFfmpegPath, defaultFfprobePath } from './binaries';
