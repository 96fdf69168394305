import type { Request, RequestHandler, Response } from 'express';
import type { CapLog } from './connection-guard';
import { ApiError } from './api-error';
import { closeAfterAnswer } from './middleware';
import { requestPath } from './route-pattern';

/** How long a body arrives before its rate is judged: a connection's first moments say little. */
export const BODY_RATE_GRACE_MS = 10_000;
/** How often the bodies arriving are looked at. */
const CHECK_EVERY_MS = 1_000;

interface Arriving {
  req: Request;
  res: Response;
  startedMs: number;
  /** What the socket had read when the body began (its headers, and earlier requests on it). */
  startBytes: number;
}

/**
 * The slowest a request body may arrive: once {@link BODY_RATE_GRACE_MS} have passed, one that has
 * averaged under `minBytesPerSecond` (or stopped) is answered `408 request_timeout` and its
 * connection closed, so that a client sending a byte every few seconds cannot hold a connection
 * and an upload's place for the five minutes Node would wait (the Ingress passes slow bodies
 * through). Bodies are looked at together once a second, by one timer.
 */
export function minimumBodyRate(minBytesPerSecond: number, capLog: CapLog, now: () => number = Date.now): RequestHandler {
  const arriving = new Set<Arriving>();
  let timer: NodeJS.Timeout | undefined;
  const check = () => {
    const at = now();
    for (const body of arriving) {
      if (body.req.complete || body.res.writableEnded) {
        arriving.delete(body);
        continue;
      }
      const elapsedMs = at - body.startedMs;
      if (elapsedMs < BODY_RATE_GRACE_MS) continue;
      const bytes = body.req.socket.bytesRead - body.startBytes;
      if ((bytes * 1000) / elapsedMs >= minBytesPerSecond) continue;
      arriving.delete(body);
      cutShort(body, bytes, elapsedMs);
    }
    if (arriving.size === 0 && timer) {
      clearInterval(timer);
      timer = undefined;
    }
  };
  const cutShort = ({ req, res }: Arriving, bytes: number, elapsedMs: number) => {
    capLog.hit('request body cut short: it arrived under HTTP_MIN_BODY_BYTES_PER_SECOND', req.ip ?? '', {
      client_address: req.ip,
      workspace_id: res.locals.workspaceId,
      path: requestPath(req),
      bytes,
      elapsed_ms: elapsedMs,
    });
    if (res.headersSent) {
      req.socket.destroy();
      return;
    }
    const error = new ApiError(
      408,
      'invalid_request_error',
      `The request body arrived at under ${minBytesPerSecond} bytes a second; send it again faster.`,
      null,
      'request_timeout',
    );
    closeAfterAnswer(req, res);
    res.status(408).json(error.toJSON());
    // Whoever was reading the body (a parser, a route) finds it ended, and answers nothing more.
    req.destroy();
  };
  return (req, res, next) => {
    const hasBody = Number(req.headers['content-length'] ?? 0) > 0 || req.headers['transfer-encoding'] !== undefined;
    if (minBytesPerSecond === 0 || !hasBody || req.complete) return next();
    const body: Arriving = { req, res, startedMs: now(), startBytes: req.socket.bytesRead };
    arriving.add(body);
    res.once('close', () => arriving.delete(body));
    timer ??= setInterval(check, CHECK_EVERY_MS).unref();
    next();
  };
}
