import { pipeline } from 'node:stream/promises';
import type { Response } from 'express';
import { BlobNotFoundError, type BlobStore, type BlobStream } from '@media/blob-store';
import { ApiError } from './api-error';

/**
 * Streams a blob as the response, with the content type the store gives it. A missing blob is
 * `missing`; a store that cannot be reached is left to the error handler (503). Once bytes flow,
 * a read error or a client that goes away ends the response and releases the file or connection.
 */
export async function sendBlob(res: Response, blobs: BlobStore, key: string, missing: ApiError, headers: Record<string, string> = {}): Promise<void> {
  let blob: BlobStream;
  try {
    blob = await blobs.open(key);
  } catch (err) {
    if (err instanceof BlobNotFoundError) throw missing;
    throw err;
  }
  res.setHeader('content-type', blob.contentType);
  res.setHeader('content-length', String(blob.size));
  for (const [name, value] of Object.entries(headers)) res.setHeader(name, value);
  // pipeline destroys both ends on failure; there is nothing left to tell a client that is gone.
  await pipeline(blob.body, res).catch(() => undefined);
}
