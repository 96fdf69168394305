import { Router } from 'express';
import {
  CallbackNotFoundError,
  IdempotencyKeyReusedError,
  presentCallback,
  presentCallbackDetail,
  RecoveryTooLargeError,
  type CallbackAdmin,
} from '@media/callbacks';
import { ApiError } from '../http/api-error';
import { requireBodyType } from '../http/middleware';
import type { RateLimits } from '../http/rate-limit';
import type { RequestBodies } from '../http/bodies';
import { listObject, refuseUnknownCursor } from './list';
import { parseCallbackListQuery, parseIdempotencyKey, parseRecoveryRequest } from '../validation';

export interface CallbackRoutesDeps {
  callbackAdmin: CallbackAdmin;
  rateLimits: RateLimits;
  /** The JSON body parsers, mounted on each route after its rate limit (http/bodies.ts). */
  bodies: RequestBodies;
}

const seconds = (ms: number) => Math.floor(ms / 1000);

/** The Callbacks API (design section 3): reads take the read bucket, retries and recoveries the create bucket. */
export function callbackRoutes(deps: CallbackRoutesDeps): Router {
  const router = Router();
  const { create: limitCreate, read: limitRead } = deps.rateLimits;
  const admin = deps.callbackAdmin;

  // Another workspace's callback answers exactly like a missing one.
  const notFound = (err: unknown, id: string): never => {
    if (err instanceof CallbackNotFoundError) throw ApiError.notFound(`No callback found with id '${id}'.`);
    throw err;
  };

  router.get('/', limitRead, async (req, res) => {
    const page = await admin.list(res.locals.workspaceId, parseCallbackListQuery(req.query));
    refuseUnknownCursor(page, 'callback');
    res.json(listObject(page.callbacks.map(presentCallback), page.hasMore));
  });

  // Before '/:id' so that 'recover' is never taken for an id.
  router.post('/recover', limitCreate, requireBodyType('json'), deps.bodies.json, async (req, res) => {
    const window = parseRecoveryRequest({ ...(req.body ?? {}) });
    const recovery = await admin.recover(res.locals.workspaceId, window).catch((err: unknown) => {
      if (err instanceof RecoveryTooLargeError)
        throw ApiError.invalid(`Too many failed callbacks in this window: ${err.message}.`, 'since', 'recovery_too_large');
      throw err;
    });
    res.status(202).json({
      object: 'callback.recovery',
      id: recovery.id,
      since: seconds(recovery.sinceMs),
      until: seconds(recovery.untilMs),
      count: recovery.count,
      rate_per_second: recovery.ratePerSecond,
    });
  });

  router.get('/:id', limitRead, async (req, res) => {
    const { callback, attempts } = await admin.describe(res.locals.workspaceId, req.params.id).catch((err) => notFound(err, req.params.id));
    res.json(presentCallbackDetail(callback, attempts));
  });

  router.post('/:id/retry', limitCreate, async (req, res) => {
    const key = parseIdempotencyKey(req.get('idempotency-key'));
    const { callback, replayed } = await admin.retryNow(res.locals.workspaceId, req.params.id, key).catch((err: unknown) => {
      if (err instanceof IdempotencyKeyReusedError)
        throw new ApiError(409, 'conflict_error', 'This Idempotency-Key was already used for a different request.', null, 'idempotency_key_reused');
      return notFound(err, req.params.id);
    });
    if (replayed) res.setHeader('idempotent-replayed', 'true');
    res.status(202).json(presentCallback(callback));
  });

  return router;
}
