/** The OpenAI error shape: `{"error": {"message", "type", "param", "code"}}`. */
export type ErrorType =
  | 'invalid_request_error'
  | 'authentication_error'
  | 'permission_error'
  | 'not_found_error'
  | 'conflict_error'
  | 'rate_limit_error'
  | 'api_error';

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly type: ErrorType,
    message: string,
    readonly param: string | null = null,
    readonly code: string | null = null,
  ) {
    super(message);
    this.name = 'ApiError';
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
}
