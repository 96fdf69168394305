import { Router } from 'express';
import type { WorkspaceAccounts } from '@media/accounts';
import { ApiError } from '../http/api-error';

/** What a workspace id can look like; anything else is not looked up. */
const WORKSPACE_ID = /^[A-Za-z0-9_-]{1,64}$/;

/**
 * A receiver's public verification keys for `v1a` signatures. No API key: a public key is public,
 * and the receiver that needs it is not our client. An unknown workspace and one that does not sign
 * asymmetrically answer the same 404, so the route tells nobody which workspaces exist.
 */
export function webhookKeyRoutes(accounts: Pick<WorkspaceAccounts, 'publicSigningKeys'>): Router {
  const router = Router();
  router.get('/:workspace_id', async (req, res) => {
    const workspaceId = req.params.workspace_id;
    const keys = WORKSPACE_ID.test(workspaceId) ? await accounts.publicSigningKeys(workspaceId) : [];
    if (keys.length === 0) throw ApiError.notFound(`No webhook verification keys for workspace '${workspaceId}'.`);
    // A rotated-out key keeps signing through its overlap, so an answer a few minutes stale still verifies.
    res.setHeader('cache-control', 'public, max-age=300');
    res.json({
      object: 'list',
      data: keys.map((k) => ({
        object: 'webhook_key',
        public_key: k.public_key,
        created_at: Math.floor(k.created_ms / 1000),
        expires_at: k.expires_ms === 0 ? null : Math.floor(k.expires_ms / 1000),
      })),
    });
  });
  return router;
}
