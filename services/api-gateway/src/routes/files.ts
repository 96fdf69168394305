import { Router } from 'express';
import type { LinkSigner } from '@media/domain';
import { isValidBlobKey, type BlobStore } from '@media/blob-store';
import { ApiError } from '../http/api-error';
import { sendBlob } from '../http/send-blob';

/** Signed download links: no API key, the link itself is the capability. */
export function fileRoutes(links: LinkSigner, blobs: BlobStore): Router {
  const router = Router();
  router.get('/*key', async (req, res) => {
    const key = (req.params as unknown as { key: string[] }).key.join('/');
    const { expires, signature } = req.query;
    const verdict = typeof expires === 'string' && typeof signature === 'string' && isValidBlobKey(key) ? links.check(key, expires, signature) : 'invalid';
    if (verdict === 'expired') throw new ApiError(403, 'permission_error', 'This download link has expired.', null, 'link_expired');
    if (verdict !== 'ok') throw new ApiError(403, 'permission_error', 'This download link is not valid.', null, 'invalid_link');
    await sendBlob(res, blobs, key, ApiError.notFound('The file no longer exists.'), { 'cache-control': 'private, max-age=3600' });
  });
  return router;
}
