import { Router } from 'express';
import { presentAuditEvent, type AuditLog } from '@media/accounts';
import type { RateLimits } from '../http/rate-limit';
import { listObject, refuseUnknownCursor } from './list';
import { parseAuditListQuery } from '../validation';

/** `GET /v1/audit-events` (design section 3): who changed what in the workspace, newest first. */
export function auditEventRoutes(deps: { audit: AuditLog; rateLimits: RateLimits }): Router {
  const router = Router();
  router.get('/', deps.rateLimits.read, async (req, res) => {
    const page = await deps.audit.list(res.locals.workspaceId, parseAuditListQuery(req.query));
    refuseUnknownCursor(page, 'audit event');
    res.json(listObject(page.events.map(presentAuditEvent), page.hasMore));
  });
  return router;
}
