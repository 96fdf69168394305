import { Router, type Response } from 'express';
import { isFinished, type JobPresenter, type VideoJob } from '@media/domain';
import { removeJob } from '@media/retention';
import type { BlobStore } from '@media/blob-store';
import type { CallbackRepository } from '@media/callbacks';
import type { JobRepository } from '@media/jobs';
import { ApiError } from '../http/api-error';
import { requireBodyType } from '../http/middleware';
import type { RateLimits } from '../http/rate-limit';
import type { RequestBodies } from '../http/bodies';
import { sendBlob } from '../http/send-blob';
import type { Intake, JobIntakeService } from '../job-intake';
import { multipartParser } from '../uploads';
import { listObject, refuseUnknownCursor } from './list';
import { parseIdempotencyKey, parseListQuery, parseRemixRequest, parseVideoRequest } from '../validation';

export interface VideoRoutesDeps {
  intake: JobIntakeService;
  jobs: JobRepository;
  callbacks: CallbackRepository;
  blobs: BlobStore;
  presenter: JobPresenter;
  maxUploadBytes: number;
  maxUploadTotalBytes: number;
  rateLimits: RateLimits;
  /** The JSON body parsers, mounted on each route after its rate limit (http/bodies.ts). */
  bodies: RequestBodies;
}

export function videoRoutes(deps: VideoRoutesDeps): Router {
  const router = Router();
  const upload = multipartParser(deps);

  const findVideo = async (workspaceId: string, id: string): Promise<VideoJob> => {
    const job = await deps.jobs.getForWorkspace(workspaceId, id);
    if (!job || job.kind !== 'video') throw ApiError.notFound(`No video found with id '${id}'.`);
    return job;
  };

  /** The answer to a creation call (a new video or a remix): the video object, `200` as at OpenAI. */
  const answerCreated = (res: Response, { job, replayed }: Intake) => {
    if (job.kind !== 'video')
      throw new ApiError(409, 'conflict_error', 'Idempotency-Key belongs to a different kind of request.', null, 'idempotency_key_reused');
    if (replayed) res.setHeader('idempotent-replayed', 'true');
    res.status(200).json(deps.presenter.video(job));
  };

  // The openai SDK sends video creation as multipart form data.
  const { create: limitCreate, read: limitRead } = deps.rateLimits;
  router.post('/', limitCreate, requireBodyType('json', 'multipart/form-data'), deps.bodies.json, deps.bodies.uploadSlot, upload.none(), async (req, res) => {
    const params = parseVideoRequest({ ...(req.body ?? {}) });
    const idempotencyKey = parseIdempotencyKey(req.get('idempotency-key'));
    answerCreated(res, await deps.intake.createVideoJob(res.locals.workspaceId, res.locals.requestId, params, idempotencyKey));
  });

  router.post<'/:id/remix'>(
    '/:id/remix',
    limitCreate,
    requireBodyType('json', 'multipart/form-data'),
    deps.bodies.json,
    deps.bodies.uploadSlot,
    upload.none(),
    async (req, res) => {
      const remix = parseRemixRequest({ ...(req.body ?? {}) });
      const idempotencyKey = parseIdempotencyKey(req.get('idempotency-key'));
      const source = await findVideo(res.locals.workspaceId, req.params.id);
      if (source.status !== 'completed') {
        throw new ApiError(
          409,
          'invalid_request_error',
          `Video '${source.id}' is ${source.status}; only a completed video can be remixed.`,
          null,
          'video_not_ready',
        );
      }
      answerCreated(res, await deps.intake.createRemixJob(res.locals.workspaceId, res.locals.requestId, source, remix, idempotencyKey));
    },
  );

  router.get('/', limitRead, async (req, res) => {
    const page = await deps.jobs.list(res.locals.workspaceId, 'video', parseListQuery(req.query));
    refuseUnknownCursor(page, 'video');
    const videos = (await deps.jobs.getMany(page.ids)).filter((j): j is VideoJob => j.kind === 'video');
    res.json(
      listObject(
        videos.map((v) => deps.presenter.video(v)),
        page.hasMore,
      ),
    );
  });

  router.get('/:id', limitRead, async (req, res) => {
    res.json(deps.presenter.video(await findVideo(res.locals.workspaceId, req.params.id)));
  });

  // OpenAI's `videos.delete`: the video's media, record and callback go now, whatever their
  // retention. A running job cannot be deleted (its generator would write it again); its charge
  // stays billed. A write, so it counts against the creation bucket.
  router.delete('/:id', limitCreate, async (req, res) => {
    const job = await findVideo(res.locals.workspaceId, req.params.id);
    if (!isFinished(job.status)) {
      throw new ApiError(
        409,
        'invalid_request_error',
        `Video '${job.id}' is ${job.status}; it can be deleted once it has completed or failed.`,
        null,
        'video_in_progress',
      );
    }
    // Of deletes racing each other, the one whose step removed the record answers; the others find
    // the video gone, as they would have a moment later.
    const { record } = await removeJob(deps, job);
    if (!record) throw ApiError.notFound(`No video found with id '${job.id}'.`);
    res.json({ id: job.id, object: 'video.deleted', deleted: true });
  });

  router.get('/:id/content', limitRead, async (req, res) => {
    const variant = req.query.variant ?? 'video';
    if (variant !== 'video') throw ApiError.invalid(`Unsupported variant '${String(variant)}'; only 'video' is available.`, 'variant', 'invalid_value');
    const job = await findVideo(res.locals.workspaceId, req.params.id);
    if (job.status !== 'completed' || !job.output) {
      throw new ApiError(
        409,
        'invalid_request_error',
        `Video '${job.id}' is ${job.status}; content is available once it is completed.`,
        null,
        'video_not_ready',
      );
    }
    await sendBlob(res, deps.blobs, job.output, new ApiError(410, 'invalid_request_error', 'The video content has expired.', null, 'content_expired'));
  });

  return router;
}
