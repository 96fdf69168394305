import { PermanentJobError } from '@media/common';
import { QueueConsumer, type ConsumerOptions } from '@media/queues';
import type { GenerationService } from './generation-service';

/**
 * The job id a payload names: a non-empty string `jobId`. The gateway and the intake repair always
 * give one; a job added by hand (Bull Board's "add job", a script) may give anything.
 */
function jobIdOf(payload: unknown): string | undefined {
  const jobId = typeof payload === 'object' && payload !== null ? (payload as { jobId?: unknown }).jobId : undefined;
  return typeof jobId === 'string' && jobId !== '' ? jobId : undefined;
}

/**
 * The `generation` queue's consumer: every job name runs {@link GenerationService.run}, and a job
 * BullMQ gave up on is recorded by {@link GenerationService.giveUp}. main.ts wires it; the tests run
 * the same one in-process.
 *
 * A job whose payload names no job fails once, permanently (no retry can give it an id). Its give-up
 * has no record to end `failed`, so there is nothing to write: it stays in BullMQ's failed set, for
 * a person to look at, and the sweep of that set passes it as handled rather than as a give-up it
 * could not record (which it would read again on every turn).
 */
export function createGenerationConsumer(service: GenerationService, options: Omit<ConsumerOptions<'generation'>, 'onGaveUp'>): QueueConsumer<'generation'> {
  const run = async (payload: unknown, job: { id?: string; updateProgress(p: number): Promise<void>; timestamp: number }) => {
    const jobId = jobIdOf(payload);
    if (jobId === undefined) {
      options.logger.warn('generation job names no job; failing it', { job: job.id, code: 'invalid_payload' });
      throw new PermanentJobError('invalid_payload', 'the payload has no jobId');
    }
    await service.run(jobId, { reportProgress: (percent) => job.updateProgress(percent), enqueuedMs: job.timestamp });
  };
  return new QueueConsumer(
    'generation',
    { 'generate-image': run, 'edit-image': run, 'generate-video': run },
    {
      ...options,
      onGaveUp: async ({ payload, reason, permanent }) => {
        const jobId = jobIdOf(payload);
        if (jobId !== undefined) await service.giveUp(jobId, reason, permanent);
      },
    },
  );
}
