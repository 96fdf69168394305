import express, { type RequestHandler } from 'express';
import { ApiError } from './api-error';
import { closeAfterAnswer } from './middleware';

/**
 * How long a JSON body may take to arrive before a request of another workspace that the budget
 * cannot fit takes its place: 32 MiB at 3.2 MiB/s. Past it, the body goes on arriving only while
 * nobody else waits; a client that sends slowly (or stops) cannot hold every other workspace's
 * edits at 503 for as long as Node waits for a request.
 */
export const PREEMPT_AFTER_MS = 10_000;

/** One request's part of the budget. */
export interface Reservation {
  /** Gives the bytes back (safe to call twice). */
  release(): void;
  /** The body has arrived: it is no longer a candidate to be cut short. */
  received(): void;
}

interface Holder {
  bytes: number;
  workspaceId: string | undefined;
  sinceMs: number;
  receiving: boolean;
  cutShort: () => void;
  release: () => void;
}

/**
 * Bytes of large JSON bodies one gateway process holds at once. A JSON edit carries its images
 * inline, and between the raw body, its text, the parsed data URLs and the decoded images, one
 * takes about three times its size in memory until it is answered; without a budget, a few
 * parallel bodies at `MAX_JSON_BYTES` would take more than a pod has (measured: about four times
 * the body's size, while it is parsed and decoded). Counted by what each request declares (its
 * Content-Length, or the cap when it does not say).
 *
 * A request the budget cannot fit takes the place of bodies of other workspaces that have been
 * arriving for longer than {@link PREEMPT_AFTER_MS}, oldest first, when that makes room: one
 * workspace's slow uploads never keep another's out for longer than that.
 */
export class BodyBudget {
  private inUse = 0;
  private readonly holders = new Set<Holder>();

  constructor(
    readonly capacityBytes: number,
    private readonly preemptAfterMs = PREEMPT_AFTER_MS,
    private readonly now: () => number = Date.now,
  ) {}

  /**
   * Reserves `bytes` for a request of `workspaceId`, or undefined when they are not free now, even
   * after cutting short what may be. `cutShort` ends this request's upload if another takes its place.
   */
  take(bytes: number, workspaceId: string | undefined, cutShort: () => void): Reservation | undefined {
    if (this.inUse + bytes > this.capacityBytes) this.makeRoom(bytes, workspaceId);
    if (this.inUse + bytes > this.capacityBytes) return undefined;
    this.inUse += bytes;
    const holder: Holder = {
      bytes,
      workspaceId,
      sinceMs: this.now(),
      receiving: true,
      cutShort,
      release: () => {
        if (!this.holders.delete(holder)) return;
        this.inUse -= bytes;
      },
    };
    this.holders.add(holder);
    return { release: holder.release, received: () => (holder.receiving = false) };
  }

  private makeRoom(bytes: number, workspaceId: string | undefined): void {
    const cutoff = this.now() - this.preemptAfterMs;
    const slow = [...this.holders].filter((h) => h.receiving && h.workspaceId !== workspaceId && h.sinceMs <= cutoff).sort((a, b) => a.sinceMs - b.sinceMs);
    // Cut nobody short unless that lets this request in.
    if (this.inUse - slow.reduce((sum, h) => sum + h.bytes, 0) + bytes > this.capacityBytes) return;
    for (const holder of slow) {
      if (this.inUse + bytes <= this.capacityBytes) return;
      holder.release();
      holder.cutShort();
    }
  }
}

const BUSY = 'The gateway is reading as many large JSON bodies as it holds at once. Retry shortly, or send the images as multipart/form-data.';
const CUT_SHORT = `This JSON body was still arriving after ${PREEMPT_AFTER_MS / 1000} s while other requests waited for room. Send it again faster, or as multipart/form-data.`;

/**
 * `express.json` for bodies of up to `maxBytes` within a process-wide {@link BodyBudget} of
 * `maxBytes`: one body at the cap at a time, or several smaller ones. A body declared over
 * `maxBytes` is refused before any of it is read; one that does not fit the budget now gets
 * `503 server_busy` with `Retry-After` (the openai SDK retries it; multipart, which streams, needs
 * no budget), and so does one cut short for another workspace's request, its connection closed. A
 * reservation lasts until the answer, as the decoded images stay referenced while a synchronous
 * edit waits for its job.
 */
export function budgetedJson(maxBytes: number, budget = new BodyBudget(maxBytes)): RequestHandler {
  const parse = express.json({ limit: maxBytes });
  return (req, res, next) => {
    if (!req.is('json')) return next();
    const declared = Number(req.get('content-length') ?? Number.NaN);
    if (declared > maxBytes) {
      // Nothing of the body is read: the connection goes with the answer.
      closeAfterAnswer(req, res);
      throw new ApiError(413, 'invalid_request_error', `Request body is larger than ${maxBytes} bytes (MAX_JSON_BYTES).`, null, 'request_too_large');
    }
    let cut = false;
    const reservation = budget.take(Number.isFinite(declared) && declared >= 0 ? declared : maxBytes, res.locals.workspaceId, () => {
      cut = true;
      if (res.headersSent) return;
      // The rest of the body is not waited for: the connection goes with the answer.
      closeAfterAnswer(req, res);
      res.setHeader('retry-after', '1');
      res.status(503).json(new ApiError(503, 'api_error', CUT_SHORT, null, 'server_busy').toJSON());
    });
    if (!reservation) {
      const busy = new ApiError(503, 'api_error', BUSY, null, 'server_busy');
      // Not closed: Node reads the unread body away, so the client gets this answer, not a reset.
      busy.retryAfterSeconds = 1;
      throw busy;
    }
    res.once('close', reservation.release);
    parse(req, res, (err?: unknown) => {
      // Answered already: what the parser made of the rest goes nowhere.
      if (cut) return;
      reservation.received();
      next(err);
    });
  };
}
