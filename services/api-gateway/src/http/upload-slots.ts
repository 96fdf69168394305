import type { RequestHandler } from 'express';
import type { CapLog } from './connection-guard';
import { ApiError } from './api-error';
import { closeAfterAnswer, isMultipartForm } from './middleware';

/**
 * Multipart uploads one workspace streams into this process at once, as the JSON edits' budget
 * bounds theirs: past `maxPerWorkspace`, another is answered `429 too_many_concurrent_uploads` with
 * `Retry-After` before any of its body is read, and its connection closed. Other workspaces'
 * uploads are not affected. Mount it after the API key, before the multipart parser.
 */
export function uploadSlots(maxPerWorkspace: number, capLog: CapLog): RequestHandler {
  const inFlight = new Map<string, number>();
  return (req, res, next) => {
    if (!isMultipartForm(req)) return next();
    const workspaceId = res.locals.workspaceId;
    const held = inFlight.get(workspaceId) ?? 0;
    if (held >= maxPerWorkspace) {
      capLog.hit('upload refused: the workspace streams MAX_CONCURRENT_UPLOADS_PER_WORKSPACE already', workspaceId, {
        workspace_id: workspaceId,
        max_concurrent_uploads: maxPerWorkspace,
      });
      closeAfterAnswer(req, res);
      throw ApiError.rateLimited(
        `This workspace is already uploading ${maxPerWorkspace} request bodies at once to this server. Retry when one has finished.`,
        'too_many_concurrent_uploads',
        1,
      );
    }
    inFlight.set(workspaceId, held + 1);
    res.once('close', () => {
      const left = (inFlight.get(workspaceId) ?? 1) - 1;
      if (left <= 0) inFlight.delete(workspaceId);
      else inFlight.set(workspaceId, left);
    });
    next();
  };
}
