import { createHash } from 'node:crypto';
import { gzipSync } from 'node:zlib';
import type { RequestHandler } from 'express';

/**
 * Serves a document that never changes while the process runs. It is public, so there is no
 * workspace to rate-limit; instead a request costs next to nothing: the bytes, their gzip form and
 * the ETag are made once here, and a call only compares a header and writes a buffer (no
 * serialising, hashing or compressing per request, no Redis).
 */
export function staticJson(document: object): RequestHandler {
  const plain = Buffer.from(JSON.stringify(document));
  const gzip = gzipSync(plain, { level: 9 });
  // Weak: the plain and gzip bodies are the same document, so one validator serves both.
  const etag = `W/"${createHash('sha256').update(plain).digest('base64url')}"`;
  return (req, res) => {
    res.setHeader('content-type', 'application/json; charset=utf-8');
    res.setHeader('cache-control', 'public, max-age=300');
    res.setHeader('etag', etag);
    res.setHeader('vary', 'accept-encoding');
    if (req.fresh) {
      res.status(304).end();
      return;
    }
    const body = req.acceptsEncodings('gzip', 'identity') === 'gzip' ? gzip : plain;
    if (body === gzip) res.setHeader('content-encoding', 'gzip');
    res.setHeader('content-length', String(body.length));
    res.end(body);
  };
}
