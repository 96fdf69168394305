import type { ImageJob, VideoJob } from '../jobs';

/** An image job and a video job as the store holds them while they run, for tests of what reads them. */
const base = {
  id: 'img_1',
  workspace_id: 'ws_1',
  model: 'pixel-1',
  prompt: 'p',
  seed: 1,
  status: 'in_progress' as const,
  created_ms: 1,
  finished_ms: null,
  cost: null,
  error: null,
  callback_url: null,
  request_id: 'req_1',
  n: 1,
  size: '256x256',
  output_format: 'png' as const,
  response_format: 'url' as const,
  inputs: [],
  mask: null,
  outputs: [],
};

/** No callback URL: a synchronous call. */
export const syncImage: ImageJob = { ...base, kind: 'image', operation: 'generation' };
/** The same request with a callback URL: answered 202, done in the background. */
export const asyncImage: ImageJob = { ...syncImage, callback_url: 'https://example.com/hook' };
export const video: VideoJob = {
  ...base,
  id: 'video_1',
  model: 'motion-1',
  kind: 'video',
  status: 'queued',
  seconds: 1,
  size: '640x360',
  generate_audio: false,
  progress: 0,
  output: null,
};
