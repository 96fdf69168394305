import { STATUS_CODES } from 'node:http';
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
    const error = toApiError(err.code);
    const requestId = newId('req');
    const body = JSON.stringify(error.toJSON());
    socket.end(
      [
        `HTTP/1.1 ${error.status} ${STATUS_CODES[error.status]}`,
        'content-type: application/json; charset=utf-8',
        `content-length: ${Buffer.byteLength(body)}`,
        `x-request-id: ${requestId}`,
        'connection: close',
        '',
        body,
      ].join('\r\n'),
    );
    logger.info('request', { request_id: requestId, status: error.status, parse_error: err.code ?? err.message });
  };
}
