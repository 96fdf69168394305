import { Router, type Response } from 'express';
import type { AuditActor } from '@media/accounts';
import { endpointApiError, presentWebhookEndpoint, type WebhookEndpoints } from '@media/callbacks';
import { ApiError } from '../http/api-error';
import type { RequestBodies } from '../http/bodies';
import { requireBodyType } from '../http/middleware';
import type { RateLimits } from '../http/rate-limit';
import { listObject } from './list';

export interface WebhookEndpointRoutesDeps {
  endpoints: WebhookEndpoints;
  rateLimits: RateLimits;
  bodies: RequestBodies;
}

/** The API key a request came with: the audit's actor for what it changes. */
const actor = (res: Response): AuditActor => ({ type: 'api_key', id: res.locals.apiKeyId as string });

/**
 * `/v1/webhook-endpoints` (design section 3): the workspace's endpoints, each sent every job end it
 * is subscribed to. An API key manages them as an owner or admin would on the dashboard.
 */
export function webhookEndpointRoutes(deps: WebhookEndpointRoutesDeps): Router {
  const router = Router();
  const { create: limitCreate, read: limitRead } = deps.rateLimits;
  const endpoints = deps.endpoints;
  const jsonType = requireBodyType('json');

  router.get('/', limitRead, async (_req, res) => {
    const all = await endpoints.list(res.locals.workspaceId);
    res.json(listObject(all.map(presentWebhookEndpoint), false));
  });

  router.post('/', limitCreate, jsonType, deps.bodies.json, async (req, res) => {
    const created = await endpoints.create(res.locals.workspaceId, req.body, actor(res)).catch(endpointApiError);
    res.status(201).json(presentWebhookEndpoint(created));
  });

  router.get('/:id', limitRead, async (req, res) => {
    res.json(presentWebhookEndpoint(await endpoints.get(res.locals.workspaceId, req.params.id).catch(endpointApiError)));
  });

  router.patch('/:id', limitCreate, jsonType, deps.bodies.json, async (req, res) => {
    res.json(presentWebhookEndpoint(await endpoints.update(res.locals.workspaceId, String(req.params.id), req.body, actor(res)).catch(endpointApiError)));
  });

  router.delete('/:id', limitCreate, async (req, res) => {
    const removed = await endpoints.delete(res.locals.workspaceId, req.params.id, actor(res)).catch(endpointApiError);
    res.json({ object: 'webhook_endpoint.deleted', id: removed.id, deleted: true });
  });

  // The body is optional here (`{"type": …}`): a bare POST sends the endpoint's first event type.
  router.post('/:id/test', limitCreate, deps.bodies.json, async (req, res) => {
    const type = ((req.body ?? {}) as Record<string, unknown>).type;
    const { type: sent, outcome } = await endpoints.sendTest(res.locals.workspaceId, String(req.params.id), type).catch(endpointApiError);
    if (!outcome)
      throw new ApiError(504, 'api_error', 'No dispatcher sent the test event in time. Is the webhook-dispatcher running?', null, 'test_callback_timeout');
    res.json({ object: 'webhook_endpoint.test', type: sent, ...outcome });
  });

  return router;
}
