import { createServer, STATUS_CODES, type IncomingMessage, type RequestListener, type Server, type ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import type { Logger } from '@media/common';
import { newId } from '@media/domain';
import { ApiError } from './api-error';

function toApiError(code: string | undefined): ApiError {
  // The request line counts towards Node's header limit, so an overlong URL lands here too.
  if (code === 'HPE_HEADER_OVERFLOW') {
    return new ApiError(431, 'invalid_request_error', 'The request line or headers are too large.', null, 'request_header_fields_too_large');
  }
  if (code === 'ERR_HTTP_REQUEST_TIMEOUT') {
    return new ApiError(408, 'invalid_request_error', 'The request was not received in time.', null, 'request_timeout');
  }
  return ApiError.invalid('The request is not valid HTTP.', null, 'invalid_http_request');
}

/** `error` as a closing answer in the documented shape, with an `x-request-id` of its own; logged as the request. */
function closingAnswer(error: ApiError, logger: Logger, why: string): { headers: Record<string, string>; body: string } {
  const requestId = newId('req');
  const body = JSON.stringify(error.toJSON());
  logger.info('request', { request_id: requestId, status: error.status, parse_error: why });
  return {
    headers: {
      'content-type': 'application/json; charset=utf-8',
      'content-length': String(Buffer.byteLength(body)),
      'x-request-id': requestId,
      connection: 'close',
    },
    body,
  };
}

/**
 * Answers `error` straight onto the socket and closes the connection: what follows on it (a body,
 * the next request) cannot be framed.
 */
function answerAndClose(socket: Duplex, error: ApiError, logger: Logger, why: string): void {
  const { headers, body } = closingAnswer(error, logger, why);
  const head = Object.entries(headers).map(([name, value]) => `${name}: ${value}`);
  socket.end([`HTTP/1.1 ${error.status} ${STATUS_CODES[error.status]}`, ...head, '', body].join('\r\n'));
}

/** Refuses a WebSocket upgrade with an ordinary HTTP answer in the documented error shape, and closes the socket. */
export function refuseUpgrade(socket: Duplex, error: ApiError, logger: Logger, why: string): void {
  if (socket.destroyed) return;
  if (error.retryAfterSeconds !== undefined) {
    const { headers, body } = closingAnswer(error, logger, why);
    const head = Object.entries({ ...headers, 'retry-after': String(error.retryAfterSeconds) }).map(([name, value]) => `${name}: ${value}`);
    socket.end([`HTTP/1.1 ${error.status} ${STATUS_CODES[error.status]}`, ...head, '', body].join('\r\n'));
    return;
  }
  answerAndClose(socket, error, logger, why);
}

/**
 * Node answers a request it cannot parse (request line or headers over its limits, bytes that are
 * not HTTP) with a bare status line before any middleware runs. This answers in the documented
 * error shape with an `x-request-id` instead, and closes the connection, whose framing is lost.
 */
export function clientErrorHandler(logger: Logger): (err: NodeJS.ErrnoException, socket: Duplex) => void {
  return (err, socket) => {
    // A client that is gone cannot be answered, nor one whose response has already begun.
    const inResponse = (socket as { _httpMessage?: { headersSent?: boolean } })._httpMessage?.headersSent === true;
    if (err.code === 'ECONNRESET' || socket.destroyed || !socket.writable || inResponse) {
      socket.destroy();
      return;
    }
    answerAndClose(socket, toApiError(err.code), logger, err.code ?? err.message);
  };
}

/**
 * Answers `error` through the request's response, which Node sends after the answers still owed to
 * earlier requests on the connection, then closes it.
 */
function answerInTurn(res: ServerResponse, error: ApiError, logger: Logger, why: string): void {
  const { headers, body } = closingAnswer(error, logger, why);
  res.writeHead(error.status, headers).end(body);
}

/**
 * The gateway's HTTP server. Besides what {@link clientErrorHandler} covers, Node refuses three
 * parseable requests by itself, with a bare status or none at all: `CONNECT` (it hands the socket
 * over and closes it), an `Expect` other than `100-continue` (a bare 417), and an HTTP/1.1
 * request without `Host` (a bare 400). Each is answered in the error shape here instead.
 */
export function createApiServer(listener: RequestListener, logger: Logger): Server {
  // Expired connections (headers not in within server.headersTimeout) are looked for every second.
  const server = createServer({ requireHostHeader: false, connectionsCheckingInterval: 1_000 }, (req, res) => {
    if (lacksHost(req)) {
      answerInTurn(res, ApiError.invalid('An HTTP/1.1 request needs a Host header.', null, 'invalid_http_request'), logger, 'no Host header');
      return;
    }
    listener(req, res);
  });
  server.on('clientError', clientErrorHandler(logger));
  // The socket is the handler's alone from here: nothing else will answer on it.
  server.on('connect', (_req: IncomingMessage, socket: Duplex) =>
    answerAndClose(socket, ApiError.invalid('CONNECT is not served here: this is an API, not a proxy.', null, 'invalid_http_request'), logger, 'CONNECT'),
  );
  server.on('checkExpectation', (req: IncomingMessage, res: ServerResponse) => {
    const error = new ApiError(417, 'invalid_request_error', 'The only Expect this server meets is 100-continue.', null, 'expectation_failed');
    answerInTurn(res, error, logger, `Expect: ${req.headers.expect}`);
  });
  return server;
}

/** RFC 9112 3.2: a server must answer 400 to an HTTP/1.1 request without Host (HTTP/1.0 may omit it). */
function lacksHost(req: IncomingMessage): boolean {
  return req.httpVersionMajor === 1 && req.httpVersionMinor >= 1 && req.headers.host === undefined;
}
