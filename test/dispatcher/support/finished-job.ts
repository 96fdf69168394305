import { jobIds, type JobQueue } from '@media/queues';
import { callbackIdFor, type ImageJob, newIdBeside } from '@media/domain';
import type { TestStack } from '../../support/stack';

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

/**
 * A finished image job with a callback to `url`, stored and announced on the job-events queue as
 * the generator does; its callback's id, and when the job ended.
 */
export async function announceFinishedImage(
  stack: Pick<TestStack, 'jobs'>,
  events: Pick<JobQueue<'job-events'>, 'add'>,
  workspaceId: string,
  url: string,
): Promise<{ messageId: string; finishedMs: number }> {
  const job = finishedImageJob(workspaceId, url);
  await stack.jobs.create(job);
  await events.add('job-finished', { jobId: job.id, workspaceId }, { jobId: jobIds.jobFinished(job.id) });
  return { messageId: callbackIdFor(job.id, 'image.completed'), finishedMs: job.finished_ms! };
}
