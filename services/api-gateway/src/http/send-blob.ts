import { pipeline } from 'node:stream/promises';
import type { Response } from 'express';
import type { BlobStore } from '@media/storage';
import { ApiError } from './api-error';

// Keyed by the extension of a key from the URL: a Map knows only its own entries, never `constructor`.
const CONTENT_TYPES = new Map([
  ['png', 'image/png'],
  ['jpg', 'image/jpeg'],
  ['webp', 'image/webp'],
  ['mp4', 'video/mp4'],
]);

/**
 * Streams a blob as the response. A blob that cannot be opened is an error in the documented shape;
 * once bytes flow, a read error or a client that goes away ends the response and closes the file.
 */
export async function sendBlob(res: Response, blobs: BlobStore, key: string, missing: ApiError, headers: Record<string, string> = {}): Promise<void> {
  const size = await blobs.size(key);
  if (size === undefined) throw missing;
  let stream;
  try {
    stream = await blobs.open(key);
  } catch {
    throw missing;
  }
  res.setHeader('content-type', CONTENT_TYPES.get(key.split('.').pop() ?? '') ?? 'application/octet-stream');
  res.setHeader('content-length', String(size));
  for (const [name, value] of Object.entries(headers)) res.setHeader(name, value);
  // pipeline destroys both ends on failure; there is nothing left to tell a client that is gone.
  await pipeline(stream, res).catch(() => undefined);
}
