import type { NextFunction, Request, RequestHandler, Response } from 'express';
import type { Redis } from 'ioredis';
import type { Logger } from '@media/common';
import { newId, rehomeId } from '@media/domain';
import type { WorkspaceAccounts } from '@media/accounts';
import { ApiError } from './api-error';
import { isDependencyOutage } from './outage';
import type { FailedAuthThrottle } from './auth-throttle';
import { matchedRoute, requestPath } from './route-pattern';

declare module 'express-serve-static-core' {
  interface Locals {
    requestId: string;
    workspaceId: string;
    logger: Logger;
    /** The fields `logger` adds to each of the request's lines; {@link requireApiKey} adds the workspace's. */
    logFields: RequestLogFields;
  }
}

/** What every line the request logs is about: the request, and once its API key is known, the workspace. */
export interface RequestLogFields {
  request_id: string;
  workspace_id?: string;
}

/**
 * Every response carries `x-request-id`; image requests reuse it as their id. Every answer is logged
 * with the path the client asked for (never its query) and the route pattern it matched, if any.
 */
export function requestContext(logger: Logger): RequestHandler {
  return (req, res, next) => {
    const requestId = newId('req');
    res.locals.requestId = requestId;
    // One child logger per request: winston copies these fields into a line when it is logged, so
    // the workspace and the request's final id, which requireApiKey sets in them, are on every line
    // logged after that.
    const fields: RequestLogFields = { request_id: requestId };
    res.locals.logFields = fields;
    res.locals.logger = logger.child(fields);
    res.setHeader('x-request-id', requestId);
    const started = process.hrtime.bigint();
    const route = matchedRoute(req);
    res.on('finish', () => {
      res.locals.logger.info('request', {
        method: req.method,
        path: requestPath(req),
        route: route(),
        status: res.statusCode,
        duration_ms: Number(process.hrtime.bigint() - started) / 1e6,
        workspace_id: res.locals.workspaceId,
      });
    });
    next();
  };
}

/**
 * `Authorization: Bearer <key>` → the key's workspace, or 401; the key's last use is recorded (at
 * most once a minute). With a throttle, an address that sent too many wrong or missing keys is
 * answered 429 before its key is looked at.
 */
export function requireApiKey(accounts: Pick<WorkspaceAccounts, 'identifyApiKey'>, throttle?: Pick<FailedAuthThrottle, 'check' | 'failed'>): RequestHandler {
  return async (req, res, next) => {
    const address = req.ip ?? req.socket.remoteAddress ?? '';
    throttle?.check(address);
    const header = req.get('authorization') ?? '';
    const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
    if (!match) {
      await throttle?.failed(address);
      throw new ApiError(401, 'authentication_error', 'Missing API key. Send it as "Authorization: Bearer <API_KEY>".', null, 'missing_api_key');
    }
    const identity = await accounts.identifyApiKey(match[1]);
    if (!identity) {
      await throttle?.failed(address);
      throw new ApiError(401, 'authentication_error', 'Incorrect API key provided.', null, 'invalid_api_key');
    }
    const { workspaceId, keyId } = identity;
    res.locals.workspaceId = workspaceId;
    // Who the audit says made a change with this request.
    res.locals.apiKeyId = keyId;
    // The request's id now names its workspace's shard: an image request keeps it as its own id,
    // whose records are stored beside the workspace's (`rehomeId`).
    const requestId = rehomeId(res.locals.requestId, workspaceId);
    if (requestId !== res.locals.requestId) {
      res.locals.requestId = requestId;
      res.setHeader('x-request-id', requestId);
    }
    res.locals.logFields.workspace_id = workspaceId;
    res.locals.logFields.request_id = requestId;
    next();
  };
}

/**
 * While the connection is down ioredis holds each command until several reconnect attempts have
 * failed, seconds that grow with the outage; answering 503 at once lets the client (or the load
 * balancer) go elsewhere. A command that fails in the moment between this check and its reply is
 * still a 503 through the error handler.
 */
export function requireRedis(redis: Redis): RequestHandler {
  return (_req, _res, next) => {
    if (redis.status !== 'ready') throw ApiError.unavailable();
    next();
  };
}

const MULTIPART_FORM = 'multipart/form-data';
const IS_MULTIPART_FORM = Symbol('body is multipart/form-data');

type TypedRequest = Request & { [IS_MULTIPART_FORM]?: boolean };

/**
 * Whether the request's body is `multipart/form-data` (`req.is`), parsed from its Content-Type once
 * per request: the body type check, the upload slots and the multipart parser of a route all ask.
 */
export function isMultipartForm(req: Request): boolean {
  const typed = req as TypedRequest;
  return (typed[IS_MULTIPART_FORM] ??= req.is(MULTIPART_FORM) === MULTIPART_FORM);
}

/** Creation calls take JSON or multipart; anything else is a 415. */
export function requireBodyType(...types: string[]): RequestHandler {
  // When no other type listed can match a multipart/form-data body, the match also says whether it is one.
  const answersMultipart = types.includes(MULTIPART_FORM) && types.every((type) => type === MULTIPART_FORM || !/multipart|\*/.test(type));
  return (req, _res, next) => {
    const matched = req.is(types);
    if (!matched) {
      throw new ApiError(415, 'invalid_request_error', `Content-Type must be one of: ${types.join(', ')}.`, null, 'unsupported_media_type');
    }
    if (answersMultipart) (req as TypedRequest)[IS_MULTIPART_FORM] = matched === MULTIPART_FORM;
    next();
  };
}

/** Translates parser and unexpected errors into the documented shape; never leaks internals. */
export function errorHandler(): (err: unknown, req: Request, res: Response, next: NextFunction) => void {
  return (err, req, res, _next) => {
    // Answered already (a body cut short for arriving too slowly): what failed after goes nowhere.
    if (res.headersSent) {
      req.socket.destroy();
      return;
    }
    const apiError = toApiError(err);
    if (apiError.status === 503 && !(err instanceof ApiError))
      res.locals.logger?.warn('dependency unavailable', { error: err instanceof Error ? err.message : String(err) });
    // An ApiError is an answer the code chose (a 504 from a wait that ran out, say); only what
    // nothing chose to answer is an error to look at.
    else if (apiError.status >= 500 && apiError.status !== 503 && !(err instanceof ApiError))
      res.locals.logger?.error('unhandled error', { error: err instanceof Error ? err.stack : String(err) });
    if (apiError.retryAfterSeconds !== undefined) res.setHeader('retry-after', String(apiError.retryAfterSeconds));
    res.status(apiError.status).json(apiError.toJSON());
  };
}

function toApiError(err: unknown): ApiError {
  if (err instanceof ApiError) return err;
  if (isDependencyOutage(err)) return ApiError.unavailable();
  const e = err as { type?: string; status?: number };
  if (e?.type === 'entity.too.large') return new ApiError(413, 'invalid_request_error', 'Request body is too large.', null, 'request_too_large');
  if (e?.type === 'entity.parse.failed') return ApiError.invalid('We could not parse the JSON body of your request.', null, 'invalid_json');
  if (e?.type === 'encoding.unsupported' || e?.type === 'charset.unsupported') {
    return new ApiError(415, 'invalid_request_error', 'Unsupported request encoding.', null, 'unsupported_media_type');
  }
  if (typeof e?.status === 'number' && e.status >= 400 && e.status < 500) return ApiError.invalid('Malformed request.', null, 'invalid_request');
  return new ApiError(500, 'api_error', 'The server had an error while processing your request.', null, 'internal_error');
}

/** A year: what browsers and the HSTS preload list expect of a site that means it. */
const HSTS = 'max-age=31536000; includeSubDomains';

/**
 * Headers every answer of the gateway carries: `X-Content-Type-Options: nosniff` (a downloaded file
 * is never run as another type than it says), and, when the service is reached over https (its
 * public address is https, or a trusted proxy says the request came over https), HSTS, so that a
 * browser never tries plain http to it again. Never on a plain-http local stack, where HSTS would
 * lock the browser out of localhost.
 */
export function transportSecurity(publicHttps: boolean): RequestHandler {
  return (req, res, next) => {
    res.setHeader('x-content-type-options', 'nosniff');
    if (publicHttps || req.secure) res.setHeader('strict-transport-security', HSTS);
    next();
  };
}

/** How long, and how much, a refused body is still read and dropped before its connection is cut. */
const LINGER_MS = 2_000;
const LINGER_BYTES = 64 * 1024 * 1024;

/**
 * Marks the answer `Connection: close` and closes the connection once it is out, without reading
 * the rest of the body. Node destroys the socket as soon as such an answer is written; bytes the
 * client is still sending then make the kernel reset the connection, and a reset can discard the
 * answer before the client has read it (it sees EPIPE, never the 413). So the write side is ended
 * at once and what still arrives is read and dropped for a short while (at most {@link LINGER_MS}
 * and {@link LINGER_BYTES}: the lingering close of nginx and Apache), then the socket is destroyed.
 */
export function closeAfterAnswer(req: Request, res: Response): void {
  res.setHeader('connection', 'close');
  const socket = req.socket as Request['socket'] & { destroySoon(): void };
  socket.destroySoon = () => {
    socket.end();
    let dropped = 0;
    const cut = () => socket.destroy();
    const timer = setTimeout(cut, LINGER_MS).unref();
    socket.once('close', () => clearTimeout(timer));
    socket.once('end', cut);
    socket.on('data', (chunk: Buffer) => {
      dropped += chunk.length;
      if (dropped > LINGER_BYTES) cut();
    });
    socket.resume();
  };
}
