import { Router, type Request, type Response } from 'express';
import { isSynchronous, type ImageJob, type JobPresenter } from '@media/domain';
import type { BlobStore } from '@media/blob-store';
import type { JobRepository } from '@media/jobs';
import { ApiError } from '../http/api-error';
import { isMultipartForm, requireBodyType } from '../http/middleware';
import type { RateLimits } from '../http/rate-limit';
import type { RequestBodies } from '../http/bodies';
import type { JobIntakeService } from '../job-intake';
import type { JobWaiter } from '../job-waiter';
import { jsonEditInputs, multipartEditInputs, multipartParser } from '../uploads';
import { parseIdempotencyKey, parseImageRequest, parseListQuery } from '../validation';
import { listObject, refuseUnknownCursor } from './list';

export interface ImageRoutesDeps {
  intake: JobIntakeService;
  jobs: JobRepository;
  blobs: BlobStore;
  presenter: JobPresenter;
  waiter: JobWaiter;
  syncTimeoutMs: number;
  maxUploadBytes: number;
  maxUploadTotalBytes: number;
  rateLimits: RateLimits;
  /** The JSON body parsers, mounted on each route after its rate limit (http/bodies.ts). */
  bodies: RequestBodies;
}

/** Job failures of a synchronous call, as the HTTP error a client of OpenAI's API would get. */
const SYNC_FAILURE_STATUS = new Map<string, number>([
  ['moderation_blocked', 400],
  ['invalid_image', 400],
  ['generation_failed', 500],
]);

export function imageRoutes(deps: ImageRoutesDeps): Router {
  const router = Router();
  const upload = multipartParser(deps);

  const create = (edit: boolean) => async (req: Request, res: Response) => {
    const body = { ...((req.body as Record<string, unknown> | undefined) ?? {}) };
    const inputs = edit ? (isMultipartForm(req) ? multipartEditInputs(req) : jsonEditInputs(body, deps.maxUploadBytes)) : null;
    const params = parseImageRequest(body, edit ? 'edit' : 'generation');
    const { job, replayed } = await deps.intake.createImageJob(
      res.locals.workspaceId,
      res.locals.requestId,
      params,
      inputs,
      parseIdempotencyKey(req.get('idempotency-key')),
    );
    // The image request id is the creation call's request id; a replay answers with the first one's.
    res.setHeader('x-request-id', job.id);
    if (replayed) res.setHeader('idempotent-replayed', 'true');
    if (job.kind !== 'image')
      throw new ApiError(409, 'conflict_error', 'Idempotency-Key belongs to a different kind of request.', null, 'idempotency_key_reused');
    if (!isSynchronous(job)) {
      res.status(202).json(deps.presenter.imageRequest(job));
      return;
    }
    const finished = await deps.waiter.wait(job.id, deps.syncTimeoutMs);
    if (!finished || finished.kind !== 'image') {
      throw new ApiError(504, 'api_error', `Generation is still running; fetch GET /v1/images/${job.id} later.`, null, 'timeout');
    }
    if (finished.status === 'failed') {
      const error = finished.error!;
      const status = SYNC_FAILURE_STATUS.get(error.code) ?? 500;
      throw new ApiError(status, status === 400 ? 'invalid_request_error' : 'api_error', error.message, null, error.code);
    }
    res.status(200).json(await syncBody(deps, finished));
  };

  const { create: limitCreate, read: limitRead } = deps.rateLimits;
  router.post(
    '/generations',
    limitCreate,
    requireBodyType('json', 'multipart/form-data'),
    deps.bodies.json,
    deps.bodies.uploadSlot,
    upload.none(),
    create(false),
  );
  router.post('/edits', limitCreate, requireBodyType('json', 'multipart/form-data'), deps.bodies.editJson, deps.bodies.uploadSlot, upload.any(), create(true));

  router.get('/', limitRead, async (req, res) => {
    const page = await deps.jobs.list(res.locals.workspaceId, 'image', parseListQuery(req.query));
    refuseUnknownCursor(page, 'image');
    const images = (await deps.jobs.getMany(page.ids)).filter((j): j is ImageJob => j.kind === 'image');
    res.json(
      listObject(
        images.map((j) => deps.presenter.imageRequest(j)),
        page.hasMore,
      ),
    );
  });

  router.get('/:id', limitRead, async (req, res) => {
    const job = await deps.jobs.getForWorkspace(res.locals.workspaceId, req.params.id);
    if (!job || job.kind !== 'image') throw ApiError.notFound(`No image request found with id '${req.params.id}'.`);
    res.json(deps.presenter.imageRequest(job));
  });

  return router;
}

/** The completed object, with `url` or `b64_json` items as asked. */
async function syncBody(deps: ImageRoutesDeps, job: ImageJob) {
  const rendered = deps.presenter.imageRequest(job);
  const data =
    job.response_format === 'b64_json'
      ? await Promise.all(job.outputs.map(async (key) => ({ b64_json: (await deps.blobs.get(key)).toString('base64') })))
      : rendered.data;
  return { ...rendered, data };
}
