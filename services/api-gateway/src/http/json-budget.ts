import type { RequestHandler } from 'express';
import { jsonBody } from '@media/common';
import { ApiError } from './api-error';
import { closeAfterAnswer } from './middleware';

/**
 * What a JSON body must average to keep its place in the budget once {@link PREEMPT_GRACE_MS} have
 * passed, while a request of another workspace waits for room: 32 MiB in 128 s. A body that has
 * stopped arriving for as long loses it too, however fast it began. So a client that sends slowly,
 * or starts a body and stops, cannot keep every other workspace's edits at 503 for as long as Node
 * waits for a request.
 */
export const MIN_BODY_RATE_BYTES_PER_S = 256 * 1024;
/** How long a body arrives (or stops) before it is judged: a connection's first moments say little. */
export const PREEMPT_GRACE_MS = 2_000;

/** One request's part of the budget. */
export interface Reservation {
  /** Gives the bytes back (safe to call twice). */
  release(): void;
  /** The body has arrived: it is no longer a candidate to be cut short. */
  received(): void;
}

/** The request a reservation is for. */
export interface BodyRequest {
  workspaceId: string | undefined;
  /** Bytes of its body arrived so far. */
  arrived(): number;
  /** Ends its upload with an answer: another request has taken its place. */
  cutShort(): void;
}

interface Holder extends BodyRequest {
  bytes: number;
  sinceMs: number;
  receiving: boolean;
  /** What had arrived when last looked at, and when it last grew. */
  lastArrived: number;
  lastProgressMs: number;
  release(): void;
}

/**
 * Bytes of large JSON bodies one gateway process holds at once. A JSON edit carries its images
 * inline, and between the raw body, its text, the parsed data URLs and the decoded images, one
 * takes about three times its size in memory until it is answered; without a budget, a few
 * parallel bodies at `MAX_JSON_BYTES` would take more than a pod has (measured: about four times
 * the body's size, while it is parsed and decoded). Counted by what each request declares (its
 * Content-Length, or the cap when it does not say or its body is compressed).
 *
 * A request the budget cannot fit takes the place of bodies of other workspaces that are still
 * arriving slowly or not at all (see {@link MIN_BODY_RATE_BYTES_PER_S}), slowest first, when that
 * makes room: one workspace's slow or stalled uploads keep another's out for about
 * {@link PREEMPT_GRACE_MS}, not for as long as Node waits for a request.
 */
export class BodyBudget {
  private inUse = 0;
  private readonly holders = new Set<Holder>();

  constructor(
    readonly capacityBytes: number,
    private readonly now: () => number = Date.now,
  ) {}

  /** Reserves `bytes` for `request`, or undefined when they are not free now, even after cutting short what may be. */
  take(bytes: number, request: BodyRequest): Reservation | undefined {
    if (this.inUse + bytes > this.capacityBytes) this.makeRoom(bytes, request.workspaceId);
    if (this.inUse + bytes > this.capacityBytes) return undefined;
    this.inUse += bytes;
    const now = this.now();
    const holder: Holder = {
      ...request,
      bytes,
      sinceMs: now,
      receiving: true,
      lastArrived: 0,
      lastProgressMs: now,
      release: () => {
        if (!this.holders.delete(holder)) return;
        this.inUse -= bytes;
      },
    };
    this.holders.add(holder);
    return { release: holder.release, received: () => (holder.receiving = false) };
  }

  private makeRoom(bytes: number, workspaceId: string | undefined): void {
    const now = this.now();
    const slow = [...this.holders]
      .filter((h) => h.receiving && h.workspaceId !== workspaceId && this.isSlow(h, now))
      .sort((a, b) => rate(a, now) - rate(b, now));
    // Cut nobody short unless that lets this request in.
    if (this.inUse - slow.reduce((sum, h) => sum + h.bytes, 0) + bytes > this.capacityBytes) return;
    for (const holder of slow) {
      if (this.inUse + bytes <= this.capacityBytes) return;
      holder.release();
      holder.cutShort();
    }
  }

  /** Stopped for the grace, or under the rate once the grace has passed. Looking is what notes its progress. */
  private isSlow(holder: Holder, now: number): boolean {
    const arrived = holder.arrived();
    if (arrived > holder.lastArrived) {
      holder.lastArrived = arrived;
      holder.lastProgressMs = now;
    }
    if (now - holder.lastProgressMs >= PREEMPT_GRACE_MS) return true;
    return now - holder.sinceMs >= PREEMPT_GRACE_MS && rate(holder, now) < MIN_BODY_RATE_BYTES_PER_S;
  }
}

/** Bytes a second a holder's body has averaged. */
const rate = (holder: Holder, now: number) => (holder.lastArrived * 1000) / Math.max(1, now - holder.sinceMs);

const BUSY = 'The gateway is reading as many large JSON bodies as it holds at once. Retry shortly, or send the images as multipart/form-data.';
const CUT_SHORT = `This JSON body stopped arriving, or arrived at under ${MIN_BODY_RATE_BYTES_PER_S / 1024} KiB/s, while other requests waited for room. Send it again faster, or as multipart/form-data.`;

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
  const parse = jsonBody(maxBytes);
  return (req, res, next) => {
    if (!req.is('json')) return next();
    const declared = Number(req.get('content-length') ?? Number.NaN);
    if (declared > maxBytes) {
      // Nothing of the body is read: the connection goes with the answer.
      closeAfterAnswer(req, res);
      throw new ApiError(413, 'invalid_request_error', `Request body is larger than ${maxBytes} bytes (MAX_JSON_BYTES).`, null, 'request_too_large');
    }
    let cut = false;
    const started = req.socket.bytesRead;
    // Compressed, a body's size says nothing of what it inflates to (up to the cap).
    const compressed = (req.get('content-encoding')?.trim().toLowerCase() || 'identity') !== 'identity';
    const bytes = Number.isFinite(declared) && declared >= 0 && !compressed ? declared : maxBytes;
    const reservation = budget.take(bytes, {
      workspaceId: res.locals.workspaceId,
      arrived: () => req.socket.bytesRead - started,
      cutShort: () => {
        cut = true;
        if (res.headersSent) return;
        // The rest of the body is not waited for: the connection goes with the answer.
        closeAfterAnswer(req, res);
        res.setHeader('retry-after', '1');
        res.status(503).json(new ApiError(503, 'api_error', CUT_SHORT, null, 'server_busy').toJSON());
      },
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
