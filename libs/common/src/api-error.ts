/**
 * The one way an HTTP request fails, for every HTTP front end (the gateway's routes and the
 * dashboard router it mounts): the gateway's error handler renders it. It lives in a library so
 * that the dashboard, a library itself, throws the very class the handler recognises.
 */
/** The OpenAI error shape: `{"error": {"message", "type", "param", "code"}}`. */
export type ErrorType =
  'invalid_request_error' | 'authentication_error' | 'permission_error' | 'not_found_error' | 'conflict_error' | 'rate_limit_error' | 'api_error';

/** What a client should wait before trying again when Redis (or the blob store) is unreachable. */
export const OUTAGE_RETRY_AFTER_SECONDS = 2;

export class ApiError extends Error {
  /** Seconds for a `Retry-After` header (429, 503). */
  retryAfterSeconds: number | undefined;

  constructor(
    readonly status: number,
    readonly type: ErrorType,
    message: string,
    readonly param: string | null = null,
    readonly code: string | null = null,
  ) {
    // Messages and params quote client input; a lone surrogate in them would make the error body
    // itself unreadable to strict JSON parsers.
    super(message.toWellFormed());
    this.name = 'ApiError';
    this.param = param?.toWellFormed() ?? null;
  }

  toJSON() {
    return { error: { message: this.message, type: this.type, param: this.param, code: this.code } };
  }

  static invalid(message: string, param: string | null = null, code: string | null = null): ApiError {
    return new ApiError(400, 'invalid_request_error', message, param, code);
  }

  static notFound(message: string): ApiError {
    return new ApiError(404, 'not_found_error', message, null, 'not_found');
  }

  static rateLimited(message: string, code: string, retryAfterSeconds?: number): ApiError {
    const error = new ApiError(429, 'rate_limit_error', message, null, code);
    error.retryAfterSeconds = retryAfterSeconds;
    return error;
  }

  /** Design section 2, "Dependency outage": a 503 the client may retry, never a 500. */
  static unavailable(): ApiError {
    const error = new ApiError(503, 'api_error', 'The service is temporarily unavailable. Please retry shortly.', null, 'service_unavailable');
    error.retryAfterSeconds = OUTAGE_RETRY_AFTER_SECONDS;
    return error;
  }
}
