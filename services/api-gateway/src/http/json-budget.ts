import express, { type RequestHandler } from 'express';
import { ApiError } from './api-error';
import { closeAfterAnswer } from './middleware';

/**
 * Bytes of large JSON bodies one gateway process holds at once. A JSON edit carries its images
 * inline, and between the raw body, its text, the parsed data URLs and the decoded images, one
 * takes about three times its size in memory until it is answered; without a budget, a few
 * parallel bodies at `MAX_JSON_BYTES` would take more than a pod has (measured: about four times
 * the body's size, while it is parsed and decoded). Counted by what each request declares (its
 * Content-Length, or the cap when it does not say).
 */
export class BodyBudget {
  private inUse = 0;

  constructor(readonly capacityBytes: number) {}

  /** Reserves `bytes` and returns their release (safe to call twice), or undefined when they are not free now. */
  take(bytes: number): (() => void) | undefined {
    if (this.inUse + bytes > this.capacityBytes) return undefined;
    this.inUse += bytes;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.inUse -= bytes;
    };
  }
}

const BUSY = 'The gateway is reading as many large JSON bodies as it holds at once. Retry shortly, or send the images as multipart/form-data.';

/**
 * `express.json` for bodies of up to `maxBytes` within a process-wide {@link BodyBudget} of
 * `maxBytes`: one body at the cap at a time, or several smaller ones. A body declared over
 * `maxBytes` is refused before any of it is read; one that does not fit the budget now gets
 * `503 server_busy` with `Retry-After` (the openai SDK retries it; multipart, which streams, needs
 * no budget). A reservation lasts until the answer, as the decoded images stay referenced while a
 * synchronous edit waits for its job.
 */
export function budgetedJson(maxBytes: number): RequestHandler {
  const parse = express.json({ limit: maxBytes });
  const budget = new BodyBudget(maxBytes);
  return (req, res, next) => {
    if (!req.is('json')) return next();
    const declared = Number(req.get('content-length') ?? Number.NaN);
    if (declared > maxBytes) {
      // Nothing of the body is read: the connection goes with the answer.
      closeAfterAnswer(req, res);
      throw new ApiError(413, 'invalid_request_error', `Request body is larger than ${maxBytes} bytes (MAX_JSON_BYTES).`, null, 'request_too_large');
    }
    const release = budget.take(Number.isFinite(declared) && declared >= 0 ? declared : maxBytes);
    if (!release) {
      const busy = new ApiError(503, 'api_error', BUSY, null, 'server_busy');
      // Not closed: Node reads the unread body away, so the client gets this answer, not a reset.
      busy.retryAfterSeconds = 1;
      throw busy;
    }
    res.once('close', release);
    parse(req, res, next);
  };
}
