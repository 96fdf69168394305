import { newIdBeside, type ImageJob } from '@media/domain';

/** A completed image job with a callback, as the generator stores it when it ends (now). */
export function finishedImageJob(workspaceId: string, callbackUrl: string): ImageJob {
  const id = newIdBeside(workspaceId, 'req');
  const now = Date.now();
  return {
    id,
    workspace_id: workspaceId,
    kind: 'image',
    operation: 'generation',
    model: 'pixel-1',
    prompt: 'p',
    seed: 1,
    status: 'completed',
    created_ms: now - 1_000,
    finished_ms: now,
    cost: 0.005,
    error: null,
    callback_url: callbackUrl,
    request_id: id,
    n: 1,
    size: '256x256',
    output_format: 'png',
    response_format: 'url',
    inputs: [],
    mask: null,
    outputs: [`${workspaceId}/${id}/0.png`],
  };
}
