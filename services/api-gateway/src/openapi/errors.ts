import type { HeaderObject, ReferenceObject, ResponseObject } from 'openapi3-ts/oas31';
import type { ErrorType } from '@media/common';
import { ref } from './schema-kit';

interface ErrorCode {
  status: number;
  type: ErrorType;
  when: string;
}

/**
 * Every error code the gateway answers with, by the status and type it comes with (the README's
 * Errors table). Each response of the document lists the codes of its status, and its schema
 * allows exactly those, so a code the contract tests meet that is missing here fails them.
 */
export const ERROR_CODES: Record<string, ErrorCode> = {
  invalid_json: { status: 400, type: 'invalid_request_error', when: 'the body is not valid JSON' },
  invalid_request: { status: 400, type: 'invalid_request_error', when: 'any other malformed body, or a path that is not valid percent-encoded UTF-8' },
  invalid_http_request: {
    status: 400,
    type: 'invalid_request_error',
    when: 'bytes that are not HTTP, `CONNECT`, or an HTTP/1.1 request without `Host`; the connection is closed',
  },
  missing_required_parameter: { status: 400, type: 'invalid_request_error', when: 'a required field is missing (`prompt`, an edit without `image`)' },
  unknown_parameter: { status: 400, type: 'invalid_request_error', when: 'a field the endpoint does not take, or an unexpected file field' },
  invalid_value: {
    status: 400,
    type: 'invalid_request_error',
    when: 'wrong type or range, or a field other than `prompt` and `user` holding a control character, an unpaired surrogate, a noncharacter or U+FFFD',
  },
  invalid_size: { status: 400, type: 'invalid_request_error', when: 'a size the model does not offer, or `size`, `resolution` and `aspect_ratio` disagree' },
  invalid_duration: { status: 400, type: 'invalid_request_error', when: "`seconds` outside the model's range" },
  invalid_model: { status: 400, type: 'invalid_request_error', when: 'an image model for a video, or the reverse' },
  invalid_callback_url: {
    status: 400,
    type: 'invalid_request_error',
    when: '`callback_url` breaks a rule; the message names it (`param` is always `callback_url`)',
  },
  invalid_image_format: {
    status: 400,
    type: 'invalid_request_error',
    when: 'an upload that is not PNG, JPEG or WebP, or a JSON image that is not a base64 data URL',
  },
  too_many_images: { status: 400, type: 'invalid_request_error', when: 'more images than one edit takes' },
  invalid_multipart: { status: 400, type: 'invalid_request_error', when: 'a multipart body that cannot be parsed, or over its part limits' },
  invalid_idempotency_key: { status: 400, type: 'invalid_request_error', when: '`Idempotency-Key` empty, longer than 255 or not printable ASCII' },
  recovery_too_large: { status: 400, type: 'invalid_request_error', when: 'a recovery window holding too many failed callbacks: narrow `since`/`until`' },
  moderation_blocked: { status: 400, type: 'invalid_request_error', when: 'synchronous image call: the job failed moderation' },
  invalid_image: { status: 400, type: 'invalid_request_error', when: 'synchronous edit: an input or the mask could not be decoded' },
  missing_api_key: { status: 401, type: 'authentication_error', when: 'no `Authorization: Bearer` header' },
  invalid_api_key: { status: 401, type: 'authentication_error', when: 'an unknown API key' },
  invalid_link: { status: 403, type: 'permission_error', when: 'a download link whose signature or form is wrong' },
  link_expired: { status: 403, type: 'permission_error', when: 'a download link past `expires`' },
  not_found: { status: 404, type: 'not_found_error', when: 'no such route, no such object in this workspace, or the file is gone' },
  model_not_found: { status: 404, type: 'invalid_request_error', when: 'an unknown `model` (`param: "model"`)' },
  idempotency_key_reused: { status: 409, type: 'conflict_error', when: 'the same `Idempotency-Key` with other parameters, or on another kind of request' },
  idempotency_key_in_use: {
    status: 409,
    type: 'conflict_error',
    when: 'an edit repeated with its `Idempotency-Key` while the first request is still storing its uploads (`Retry-After` says when to retry)',
  },
  video_not_ready: { status: 409, type: 'invalid_request_error', when: 'the video has not completed (content, remix)' },
  video_in_progress: { status: 409, type: 'invalid_request_error', when: 'deleting a video that is queued or in progress' },
  content_expired: { status: 410, type: 'invalid_request_error', when: 'the video file was removed' },
  request_too_large: { status: 413, type: 'invalid_request_error', when: 'a JSON body over its limit' },
  file_too_large: { status: 413, type: 'invalid_request_error', when: 'an uploaded or data-URL image over the upload limit' },
  upload_too_large: {
    status: 413,
    type: 'invalid_request_error',
    when: 'a multipart body over `MAX_UPLOAD_TOTAL_BYTES`; the connection is closed, the rest not read',
  },
  unsupported_media_type: {
    status: 415,
    type: 'invalid_request_error',
    when: 'a body that is neither JSON nor multipart (where those are taken), or an unsupported `Content-Encoding` (a multipart body is taken unencoded)',
  },
  rate_limit_exceeded: { status: 429, type: 'rate_limit_error', when: "over the workspace's request limit for this bucket" },
  too_many_pending_jobs: { status: 429, type: 'rate_limit_error', when: 'a creation call while the workspace has its maximum of unfinished jobs' },
  too_many_listeners: { status: 429, type: 'rate_limit_error', when: 'a relay listener while the workspace has 5 connected (`Retry-After`)' },
  endpoint_limit_reached: { status: 400, type: 'invalid_request_error', when: 'a webhook endpoint while the workspace has 10' },
  upgrade_required: { status: 426, type: 'invalid_request_error', when: 'the relay listener path without `Upgrade: websocket`' },
  test_callback_timeout: { status: 504, type: 'api_error', when: 'a test event no dispatcher sent within the webhook timeout and a few seconds more' },
  generation_failed: { status: 500, type: 'api_error', when: 'synchronous image call: the generator failed' },
  internal_error: { status: 500, type: 'api_error', when: 'an unexpected server error (details only in the logs)' },
  service_unavailable: { status: 503, type: 'api_error', when: 'Redis or the blob store cannot be reached' },
  server_busy: {
    status: 503,
    type: 'api_error',
    when: 'a JSON edit while the gateway holds as many large JSON bodies as it can, or one that stopped arriving whose place another workspace took (`Retry-After`); multipart is not limited so',
  },
  timeout: { status: 504, type: 'api_error', when: 'synchronous image call still running after the wait; fetch `GET /v1/images/{id}` later' },
};

/** The component name and the summary of each error status. */
export const ERROR_RESPONSES: Record<number, { name: string; title: string }> = {
  400: { name: 'BadRequest', title: 'Bad request' },
  401: { name: 'Unauthorized', title: 'No valid API key' },
  403: { name: 'Forbidden', title: 'Download link refused' },
  404: { name: 'NotFound', title: 'Not found' },
  409: { name: 'Conflict', title: 'Conflict' },
  410: { name: 'Gone', title: 'Gone' },
  413: { name: 'PayloadTooLarge', title: 'Body too large' },
  415: { name: 'UnsupportedMediaType', title: 'Unsupported content type' },
  426: { name: 'UpgradeRequired', title: 'A WebSocket is needed' },
  429: { name: 'TooManyRequests', title: 'Over a workspace limit' },
  500: { name: 'InternalServerError', title: 'Server error' },
  503: { name: 'ServiceUnavailable', title: 'Unavailable for now' },
  504: { name: 'GatewayTimeout', title: 'Still running' },
};

/** An error response of `status`: the error shape, narrowed to the types and codes of that status. */
export function errorResponse(status: number, headers: Record<string, HeaderObject | ReferenceObject>): ResponseObject {
  const codes = Object.entries(ERROR_CODES).filter(([, c]) => c.status === status);
  if (codes.length === 0) throw new Error(`no error code answers with ${status}`);
  const types = [...new Set(codes.map(([, c]) => c.type))];
  return {
    description: `${ERROR_RESPONSES[status].title}. Codes:\n\n${codes.map(([code, c]) => `- \`${code}\`: ${c.when}`).join('\n')}`,
    headers,
    content: {
      'application/json': {
        schema: {
          allOf: [
            ref('Error'),
            { type: 'object', properties: { error: { type: 'object', properties: { type: { enum: types }, code: { enum: codes.map(([code]) => code) } } } } },
          ],
        },
      },
    },
  };
}
