import type {
  HeaderObject,
  OpenAPIObject,
  OperationObject,
  ParameterObject,
  PathItemObject,
  ReferenceObject,
  RequestBodyObject,
  ResponseObject,
  SchemaObject,
} from 'openapi3-ts/oas31';
import { OUTAGE_RETRY_AFTER_SECONDS, type AppConfig } from '@media/common';
import { MEDIA_TYPES } from '@media/blob-store';
import { AUDIT_ACTIONS } from '@media/accounts';
import { MAX_ENDPOINTS_PER_WORKSPACE, MAX_RECOVERY, RECOVERY_ATTEMPTS_PER_SECOND } from '@media/callbacks';
import { MAX_IMAGES } from '../uploads';
import { ERROR_RESPONSES, errorResponse } from './errors';
import { binary, closedObject, humanDuration, ref } from './schema-kit';
import { componentSchemas } from './schemas';
import { webhookItems, webhooksDescription } from './webhooks';

/** What the document says that depends on the deployment: its address, limits and delivery settings. */
export type OpenApiSettings = Pick<
  AppConfig,
  | 'publicBaseUrl'
  | 'docsUrl'
  | 'linkTtlSeconds'
  | 'mediaRetentionSeconds'
  | 'webhookTimeoutMs'
  | 'webhookRetryScheduleMs'
  | 'secretRotationOverlapSeconds'
  | 'auditRetentionSeconds'
  | 'syncImageTimeoutMs'
  | 'maxUploadBytes'
  | 'maxJsonBytes'
  | 'idempotencyTtlSeconds'
  | 'rateLimitCreatePerMinute'
  | 'rateLimitReadPerMinute'
  | 'maxWaitingJobsPerWorkspace'
>;

/** Where the document is served; public, like the health checks. */
export const OPENAPI_PATH = '/v1/openapi.json';

type Bucket = 'create' | 'read';
type Headers = Record<string, HeaderObject | ReferenceObject>;

const header = (name: string): ReferenceObject => ({ $ref: `#/components/headers/${name}` });
const param = (name: string): ReferenceObject => ({ $ref: `#/components/parameters/${name}` });
const json = (schema: SchemaObject | ReferenceObject) => ({ 'application/json': { schema } });

const RATE_LIMIT_HEADERS = ['x-ratelimit-limit-requests', 'x-ratelimit-remaining-requests', 'x-ratelimit-reset-requests'];
const RATE_LIMIT_HEADER_REFS: Headers = Object.fromEntries(RATE_LIMIT_HEADERS.map((name) => [name, header(name)]));

interface OperationSpec {
  tag: string;
  operationId: string;
  summary: string;
  description?: string;
  /** False for the public routes (no API key). */
  auth?: boolean;
  /** The workspace request bucket the route counts against. */
  bucket?: Bucket;
  parameters?: (ParameterObject | ReferenceObject)[];
  requestBody?: RequestBodyObject;
  /** Success responses; their headers are completed here. */
  ok: Record<string, ResponseObject>;
  /** Error statuses beyond those every route of its kind answers. */
  errors?: number[];
}

/**
 * One operation with the responses every route of its kind has: `x-request-id` on all of them;
 * 401 and 503 behind the API key (the key check and the Redis check come first); the rate-limit
 * headers and 429 on limited routes.
 */
function operation(spec: OperationSpec): OperationObject {
  const auth = spec.auth ?? true;
  const limited = spec.bucket !== undefined;
  const statuses = new Set([...(spec.errors ?? []), ...(auth ? [401, 500, 503] : [500]), ...(limited ? [429] : [])]);
  const responses: Record<string, ResponseObject | ReferenceObject> = {};
  for (const [status, response] of Object.entries(spec.ok)) {
    responses[status] = { ...response, headers: { 'x-request-id': header('x-request-id'), ...(limited ? RATE_LIMIT_HEADER_REFS : {}), ...response.headers } };
  }
  for (const status of [...statuses].sort((a, b) => a - b)) responses[String(status)] = { $ref: `#/components/responses/${ERROR_RESPONSES[status].name}` };
  return {
    tags: [spec.tag],
    operationId: spec.operationId,
    summary: spec.summary,
    ...(spec.description ? { description: spec.description } : {}),
    ...(auth ? {} : { security: [] }),
    ...(spec.parameters ? { parameters: spec.parameters } : {}),
    ...(spec.requestBody ? { requestBody: spec.requestBody } : {}),
    responses,
  };
}

/**
 * Each error status once, for every operation that answers it. The rate-limit headers are always
 * there on a 429 (only limited routes answer it); on other errors only once a limited route's
 * limiter has run: a 401, a body the JSON parser refused and a 503 come before it.
 */
function errorResponses(s: OpenApiSettings): Record<string, ResponseObject> {
  return Object.fromEntries(
    Object.entries(ERROR_RESPONSES).map(([key, { name }]) => {
      const status = Number(key);
      const headers: Headers = { 'x-request-id': header('x-request-id'), ...(status === 429 ? RATE_LIMIT_HEADER_REFS : rateLimitHeaders(s, false)) };
      if (status === 429 || status === 503) headers['retry-after'] = header('retry-after');
      // Only `idempotency_key_in_use` among the 409s: the key's first request is still being processed.
      if (status === 409)
        headers['retry-after'] = {
          description: 'With `idempotency_key_in_use`: seconds to wait before trying again.',
          schema: { type: 'integer', minimum: 1 },
        };
      return [name, errorResponse(status, headers)];
    }),
  );
}

/** OpenAI's headers, on every answer of a limited route once its limiter has run. */
function rateLimitHeaders(s: OpenApiSettings, required: boolean): Record<string, HeaderObject> {
  const when = required ? '' : ' Only on rate-limited routes, once the limiter has run.';
  return {
    'x-ratelimit-limit-requests': {
      required,
      description: `Requests this workspace may make per minute in this route's bucket (defaults: create ${s.rateLimitCreatePerMinute}, read ${s.rateLimitReadPerMinute}).${when}`,
      schema: { type: 'integer', minimum: 1 },
    },
    'x-ratelimit-remaining-requests': { required, description: `Left in the current one-minute window.${when}`, schema: { type: 'integer', minimum: 0 } },
    'x-ratelimit-reset-requests': {
      required,
      description: `Until the window resets, e.g. \`250ms\`, \`42s\`, \`1m0s\`.${when}`,
      schema: { type: 'string', pattern: '^(\\d+ms|(\\d+h)?(\\d+m)?\\d+s)$' },
    },
  };
}

const pathId = (name: string, prefix: string, what: string): ParameterObject => ({
  name,
  in: 'path',
  required: true,
  description: `The \`${prefix}_…\` id of the ${what}. One of another workspace answers like a missing one (404).`,
  schema: { type: 'string' },
});

const creationHeaders: Headers = { 'idempotent-replayed': header('idempotent-replayed') };

const body = (schemaName: string, multipartSchema?: string): RequestBodyObject => ({
  required: true,
  content: {
    ...json(ref(schemaName)),
    ...(multipartSchema ? { 'multipart/form-data': { schema: ref(multipartSchema) } } : {}),
  },
});

const listParameters = (what: string) => [
  param('limit'),
  {
    ...param('after'),
    description: `The id of the last ${what} seen: the page continues after it. A ${what} removed (deleted, or by retention) within the hour keeps its place; an id that names no ${what} of the workspace (removed earlier, never one) is a 400.`,
  },
  param('order'),
];

function paths(s: OpenApiSettings): Record<string, PathItemObject> {
  const imageCreation = (edit: boolean): OperationSpec => ({
    tag: 'Images',
    operationId: edit ? 'editImage' : 'createImage',
    summary: edit ? 'Edit images' : 'Generate images',
    description: [
      edit
        ? `Edits the first of the input images (up to ${MAX_IMAGES}), optionally within a mask. Multipart with files, or JSON with data URLs.`
        : 'Makes images from a prompt. JSON or a multipart form.',
      `Without \`callback_url\` the call waits up to ${humanDuration(s.syncImageTimeoutMs)} and answers 200 with the images (504 \`timeout\` past that; the job carries on). With \`callback_url\` it answers 202 at once with the request \`in_progress\`, and a callback follows. A job that fails answers with its error as an HTTP error (400 \`moderation_blocked\`, 400 \`invalid_image\`, 500 \`generation_failed\`) and is not charged.`,
    ].join('\n\n'),
    bucket: 'create',
    parameters: [param('Idempotency-Key')],
    requestBody: edit
      ? { required: true, content: { 'multipart/form-data': { schema: ref('ImageEditMultipartRequest') }, ...json(ref('ImageEditRequest')) } }
      : body('ImageGenerationRequest', 'ImageGenerationRequest'),
    ok: {
      200: {
        description: "The completed images (synchronous call). `x-request-id` is the request's `id`.",
        headers: creationHeaders,
        content: json(ref('ImageResult')),
      },
      202: {
        description: 'Accepted (`callback_url` given): the request, `in_progress`. `x-request-id` is its `id`.',
        headers: creationHeaders,
        content: json({ allOf: [ref('ImageRequest'), { type: 'object', properties: { status: { const: 'in_progress' } } }] }),
      },
    },
    errors: [400, 404, 409, 413, 415, 500, 504],
  });

  const files = Object.values(MEDIA_TYPES).map((t) => t.contentType);

  return {
    '/healthz': {
      get: operation({
        tag: 'Health',
        operationId: 'getHealth',
        summary: 'Liveness',
        description: 'The process is up; answers while Redis is away too.',
        auth: false,
        ok: { 200: { description: 'Alive.', content: json(ref('Health')) } },
        errors: [],
      }),
    },
    '/readyz': {
      // Not the error shape: a probe reads the status code.
      get: {
        tags: ['Health'],
        operationId: 'getReadiness',
        summary: 'Readiness',
        description: 'Whether Redis answers.',
        security: [],
        responses: {
          200: { description: 'Ready.', headers: { 'x-request-id': header('x-request-id') }, content: json(ref('Readiness')) },
          503: { description: 'Redis does not answer.', headers: { 'x-request-id': header('x-request-id') }, content: json(ref('Readiness')) },
        },
      },
    },
    [OPENAPI_PATH]: {
      get: operation({
        tag: 'Documentation',
        operationId: 'getOpenApiDocument',
        summary: 'This document',
        description:
          'Public and the same for everyone: built once per process and served from memory, gzip-compressed when the client accepts it, with an `ETag` to revalidate against.',
        auth: false,
        ok: {
          200: {
            description: 'The OpenAPI 3.1 document.',
            headers: { etag: header('etag'), 'cache-control': { schema: { type: 'string' } } },
            content: json({ type: 'object', required: ['openapi'], properties: { openapi: { type: 'string', pattern: '^3\\.1\\.' } } }),
          },
          304: { description: '`If-None-Match` names the current `ETag`.', headers: { etag: header('etag') } },
        },
      }),
    },
    '/v1/models': {
      get: operation({
        tag: 'Models',
        operationId: 'listModels',
        summary: 'List models',
        description: 'The catalogue: what can be requested, at which sizes and durations, and at what price. Not rate-limited.',
        ok: { 200: { description: 'Every model.', content: json(ref('ModelList')) } },
      }),
    },
    '/v1/models/{id}': {
      get: operation({
        tag: 'Models',
        operationId: 'retrieveModel',
        summary: 'Retrieve a model',
        parameters: [{ name: 'id', in: 'path', required: true, schema: { type: 'string' } }],
        ok: { 200: { description: 'The model.', content: json(ref('Model')) } },
        errors: [404],
      }),
    },
    '/v1/images/generations': { post: operation(imageCreation(false)) },
    '/v1/images/edits': { post: operation(imageCreation(true)) },
    '/v1/images': {
      get: operation({
        tag: 'Images',
        operationId: 'listImages',
        summary: 'List image requests',
        bucket: 'read',
        parameters: listParameters('image request'),
        ok: { 200: { description: 'A page of image requests.', content: json(ref('ImageRequestList')) } },
        errors: [400],
      }),
    },
    '/v1/images/{id}': {
      get: operation({
        tag: 'Images',
        operationId: 'retrieveImage',
        summary: 'Retrieve an image request',
        description: `Links are minted fresh on every read, valid ${humanDuration(s.linkTtlSeconds * 1000)}.`,
        bucket: 'read',
        parameters: [pathId('id', 'req', 'image request')],
        ok: { 200: { description: 'The image request.', content: json(ref('ImageRequest')) } },
        errors: [404],
      }),
    },
    '/v1/videos': {
      post: operation({
        tag: 'Videos',
        operationId: 'createVideo',
        summary: 'Create a video',
        description: 'Queues a video and answers at once; poll `GET /v1/videos/{id}` or give `callback_url`.',
        bucket: 'create',
        parameters: [param('Idempotency-Key')],
        requestBody: body('VideoCreateRequest', 'VideoCreateRequest'),
        ok: { 200: { description: 'The video, `queued`.', headers: creationHeaders, content: json(ref('Video')) } },
        errors: [400, 404, 409, 413, 415],
      }),
      get: operation({
        tag: 'Videos',
        operationId: 'listVideos',
        summary: 'List videos',
        bucket: 'read',
        parameters: listParameters('video'),
        ok: { 200: { description: 'A page of videos.', content: json(ref('VideoList')) } },
        errors: [400],
      }),
    },
    '/v1/videos/{id}': {
      get: operation({
        tag: 'Videos',
        operationId: 'retrieveVideo',
        summary: 'Retrieve a video',
        bucket: 'read',
        parameters: [pathId('id', 'video', 'video')],
        ok: { 200: { description: 'The video.', content: json(ref('Video')) } },
        errors: [404],
      }),
      delete: operation({
        tag: 'Videos',
        operationId: 'deleteVideo',
        summary: 'Delete a video',
        description: 'Deletes a finished video and its file. A video still queued or in progress cannot be deleted (409 `video_in_progress`).',
        bucket: 'create',
        parameters: [pathId('id', 'video', 'video')],
        ok: { 200: { description: 'Deleted.', content: json(ref('VideoDeleted')) } },
        errors: [404, 409],
      }),
    },
    '/v1/videos/{id}/remix': {
      post: operation({
        tag: 'Videos',
        operationId: 'remixVideo',
        summary: 'Remix a video',
        description:
          'A new video from a completed one and a new prompt: same model, seconds, size and audio as the source, a new id, `status: "queued"`, and `remixed_from_video_id` naming the source. 409 `video_not_ready` unless the source is completed.',
        bucket: 'create',
        parameters: [pathId('id', 'video', 'source video')],
        requestBody: body('VideoRemixRequest'),
        ok: { 200: { description: 'The new video, `queued`.', content: json(ref('Video')) } },
        errors: [400, 404, 409, 413],
      }),
    },
    '/v1/videos/{id}/content': {
      get: operation({
        tag: 'Videos',
        operationId: 'downloadVideoContent',
        summary: 'Download a video',
        description: 'The MP4 bytes, with the API key (no signed link needed).',
        bucket: 'read',
        parameters: [
          pathId('id', 'video', 'video'),
          {
            name: 'variant',
            in: 'query',
            required: false,
            schema: { type: 'string', enum: ['video'], default: 'video' },
            description: 'The only variant is `video`.',
          },
        ],
        ok: {
          200: {
            description: 'The video file.',
            headers: { 'content-length': header('content-length') },
            content: { [MEDIA_TYPES.mp4.contentType]: { schema: binary(MEDIA_TYPES.mp4.contentType) } },
          },
        },
        errors: [400, 404, 409, 410],
      }),
    },
    '/v1/files/{key}': {
      get: operation({
        tag: 'Files',
        operationId: 'downloadFile',
        summary: 'Download through a signed link',
        description: `The \`url\`s of jobs and callbacks. No API key: the link is the credential, HMAC-signed and valid ${humanDuration(s.linkTtlSeconds * 1000)} from when it was minted (every read and every callback attempt mints new ones). Use the links as given rather than building them.`,
        auth: false,
        parameters: [
          {
            name: 'key',
            in: 'path',
            required: true,
            description: "The object's key as the link names it; it holds slashes (`ws_…/req_…/0.png`).",
            schema: { type: 'string' },
          },
          { name: 'expires', in: 'query', required: true, schema: { type: 'string', pattern: '^\\d+$' }, description: 'Unix seconds.' },
          { name: 'signature', in: 'query', required: true, schema: { type: 'string', pattern: '^[A-Za-z0-9_-]{43}$' } },
        ],
        ok: {
          200: {
            description: 'The file.',
            headers: { 'content-length': header('content-length'), 'cache-control': { schema: { type: 'string', const: 'private, max-age=3600' } } },
            content: Object.fromEntries(files.map((type) => [type, { schema: binary(type) }])),
          },
        },
        errors: [403, 404, 503],
      }),
    },
    '/v1/webhook-keys/{workspace_id}': {
      get: operation({
        tag: 'Webhooks',
        operationId: 'listWebhookKeys',
        summary: "A workspace's public keys for v1a signatures",
        description: `No API key: what a receiver fetches to verify \`v1a\` (ed25519) signatures, for a workspace that has turned asymmetric signing on. Two keys for ${humanDuration(s.secretRotationOverlapSeconds * 1000)} after a key rotation, the current one first; both sign meanwhile. An unknown workspace and one that does not sign asymmetrically are both 404. Not rate-limited: one small read, cacheable for 5 min.`,
        auth: false,
        parameters: [{ name: 'workspace_id', in: 'path', required: true, description: 'The `ws_…` id of the workspace.', schema: { type: 'string' } }],
        ok: {
          200: {
            description: 'The public keys that verify deliveries now.',
            headers: { 'cache-control': { schema: { type: 'string', const: 'public, max-age=300' } } },
            content: json(ref('WebhookKeyList')),
          },
        },
        errors: [404, 503],
      }),
    },
    '/v1/callbacks': {
      get: operation({
        tag: 'Callbacks',
        operationId: 'listCallbacks',
        summary: 'List callbacks',
        description: 'Newest first; the filters combine.',
        bucket: 'read',
        parameters: [
          param('limit'),
          { ...param('after'), description: 'The `msg_` id of the last callback seen; one that names no callback of the list is a 400.' },
          { name: 'status', in: 'query', schema: ref('CallbackStatus') },
          { name: 'type', in: 'query', schema: ref('EventType') },
          { name: 'job_id', in: 'query', schema: { type: 'string', maxLength: 64 }, description: 'The callbacks of one job.' },
          { name: 'endpoint_id', in: 'query', schema: { type: 'string', maxLength: 64 }, description: 'The callbacks to one webhook endpoint.' },
          { name: 'created_after', in: 'query', schema: { type: 'integer', minimum: 0, maximum: 2 ** 40 }, description: 'Unix seconds, inclusive.' },
          {
            name: 'created_before',
            in: 'query',
            schema: { type: 'integer', minimum: 0, maximum: 2 ** 40 },
            description: 'Unix seconds, exclusive; later than `created_after`.',
          },
        ],
        ok: { 200: { description: 'A page of callbacks.', content: json(ref('CallbackList')) } },
        errors: [400],
      }),
    },
    '/v1/webhook-endpoints': {
      get: operation({
        tag: 'Webhook endpoints',
        operationId: 'listWebhookEndpoints',
        summary: 'List webhook endpoints',
        bucket: 'read',
        ok: { 200: { description: "The workspace's endpoints.", content: json(ref('WebhookEndpointList')) } },
      }),
      post: operation({
        tag: 'Webhook endpoints',
        operationId: 'createWebhookEndpoint',
        summary: 'Create a webhook endpoint',
        description: `Every job of the workspace that ends with a subscribed event is sent to it, signed like any callback, whether or not the request gave a \`callback_url\` (which still gets its own). At most ${MAX_ENDPOINTS_PER_WORKSPACE} per workspace (400 \`endpoint_limit_reached\`); a refused URL is 400 \`invalid_callback_url\`, an unknown event type 400 \`invalid_value\`.`,
        bucket: 'create',
        requestBody: { required: true, content: json(ref('WebhookEndpointCreate')) },
        ok: { 201: { description: 'The new endpoint.', content: json(ref('WebhookEndpoint')) } },
        errors: [400, 413, 415],
      }),
    },
    '/v1/webhook-endpoints/{id}': {
      get: operation({
        tag: 'Webhook endpoints',
        operationId: 'retrieveWebhookEndpoint',
        summary: 'Retrieve a webhook endpoint',
        bucket: 'read',
        parameters: [pathId('id', 'we', 'endpoint')],
        ok: { 200: { description: 'The endpoint.', content: json(ref('WebhookEndpoint')) } },
        errors: [404],
      }),
      patch: operation({
        tag: 'Webhook endpoints',
        operationId: 'updateWebhookEndpoint',
        summary: 'Change a webhook endpoint',
        description:
          'Only the fields given change. `enabled: true` turns an endpoint on again, also one disabled for failing. Callbacks already made keep the URL they were made with.',
        bucket: 'create',
        parameters: [pathId('id', 'we', 'endpoint')],
        requestBody: { required: true, content: json(ref('WebhookEndpointUpdate')) },
        ok: { 200: { description: 'The endpoint as it now is.', content: json(ref('WebhookEndpoint')) } },
        errors: [400, 404, 413, 415],
      }),
      delete: operation({
        tag: 'Webhook endpoints',
        operationId: 'deleteWebhookEndpoint',
        summary: 'Delete a webhook endpoint',
        description: 'No new callbacks are made for it; those already made finish their ladders.',
        bucket: 'create',
        parameters: [pathId('id', 'we', 'endpoint')],
        ok: { 200: { description: 'It is gone.', content: json(ref('WebhookEndpointDeleted')) } },
        errors: [404],
      }),
    },
    '/v1/webhook-endpoints/{id}/test': {
      post: operation({
        tag: 'Webhook endpoints',
        operationId: 'testWebhookEndpoint',
        summary: 'Send a test event to a webhook endpoint',
        description: `A signed sample of \`type\` (by default the first event the endpoint is subscribed to), enabled or not, and the receiver's answer; waits up to \`WEBHOOK_TIMEOUT_MS\` (${s.webhookTimeoutMs} ms) and a few seconds more. 504 \`test_callback_timeout\` when no dispatcher sent it in time.`,
        bucket: 'create',
        parameters: [pathId('id', 'we', 'endpoint')],
        requestBody: { required: false, content: json(closedObject({ type: ref('EventType') }, [])) },
        ok: { 200: { description: "The receiver's answer.", content: json(ref('WebhookEndpointTest')) } },
        errors: [400, 404, 413, 504],
      }),
    },
    '/v1/webhook-relay/listen': {
      get: operation({
        tag: 'Webhook endpoints',
        operationId: 'listenWebhookRelay',
        summary: 'Relay callbacks to a developer’s machine (WebSocket)',
        description:
          'What `media-callbacks listen` connects to: a WebSocket (`Upgrade: websocket`, the API key as a Bearer token) over which the workspace’s callbacks to its relay URL, and with `events` those events, are passed to the CLI, which POSTs them to a local handler and sends back the answer. The first frame names the relay URL. Refusals come before the upgrade: 401, 400 for an unknown event, 429 `too_many_listeners` past 5 per workspace; a GET without the upgrade is 426.',
        parameters: [
          { name: 'events', in: 'query', schema: { type: 'string' }, description: 'Event types also received without a `callback_url`, comma-separated.' },
          {
            name: 'reveal_secret',
            in: 'query',
            schema: { type: 'string', enum: ['1'] },
            description: 'The first frame carries the workspace’s signing secret.',
          },
        ],
        ok: { 101: { description: 'Switched to the WebSocket; frames as `tools/cli/src/protocol.ts` describes.' } },
        errors: [400, 426, 429],
      }),
    },
    '/v1/audit-events': {
      get: operation({
        tag: 'Audit',
        operationId: 'listAuditEvents',
        summary: 'List audit events',
        description: `Who changed what in the workspace: members, API keys, signing secrets and keys, webhook endpoints. Newest first; kept ${humanDuration(s.auditRetentionSeconds * 1000)} (\`AUDIT_RETENTION_SECONDS\`). Never holds a secret.`,
        bucket: 'read',
        parameters: [
          param('limit'),
          { ...param('after'), description: 'The `aud_` id of the last event seen; one that names no event of the list is a 400.' },
          {
            name: 'action',
            in: 'query',
            schema: { type: 'string' },
            description: `Only these actions, comma-separated: ${AUDIT_ACTIONS.map((a) => `\`${a}\``).join(', ')}.`,
          },
        ],
        ok: { 200: { description: 'A page of audit events.', content: json(ref('AuditEventList')) } },
        errors: [400],
      }),
    },
    '/v1/callbacks/recover': {
      post: operation({
        tag: 'Callbacks',
        operationId: 'recoverCallbacks',
        summary: 'Retry the failed callbacks of a time window',
        description: `After a receiver outage: one manual attempt for every \`failed\` callback created in \`[since, until)\`, spread at ${RECOVERY_ATTEMPTS_PER_SECOND} per second so the receiver is not flooded. At most ${MAX_RECOVERY} callbacks per recovery (400 \`recovery_too_large\` beyond: narrow the window).`,
        bucket: 'create',
        requestBody: { required: true, content: json(ref('CallbackRecoveryRequest')) },
        ok: { 202: { description: 'The attempts are queued.', content: json(ref('CallbackRecovery')) } },
        errors: [400, 413, 415],
      }),
    },
    '/v1/callbacks/{id}': {
      get: operation({
        tag: 'Callbacks',
        operationId: 'retrieveCallback',
        summary: 'Retrieve a callback and its attempts',
        bucket: 'read',
        parameters: [pathId('id', 'msg', 'callback')],
        ok: { 200: { description: 'The callback, with every attempt.', content: json(ref('CallbackDetail')) } },
        errors: [404],
      }),
    },
    '/v1/callbacks/{id}/retry': {
      post: operation({
        tag: 'Callbacks',
        operationId: 'retryCallback',
        summary: 'Retry a callback now',
        description:
          "One attempt at once, in any state. It does not extend the automatic ladder; if it delivers, the callback becomes `delivered` and a still-scheduled automatic attempt is cancelled. The attempt shows in `GET /v1/callbacks/{id}` once made. With `Idempotency-Key`, a repeat of the call answers with the first call's attempt (`idempotent-replayed: true`) and queues no other.",
        bucket: 'create',
        parameters: [pathId('id', 'msg', 'callback'), param('Idempotency-Key')],
        ok: {
          202: {
            description: 'The callback as it stood when the attempt was queued (on a repeat of an `Idempotency-Key`, as it stands now).',
            headers: creationHeaders,
            content: json(ref('Callback')),
          },
        },
        errors: [404, 409],
      }),
    },
  };
}

function components(s: OpenApiSettings): OpenAPIObject['components'] {
  return {
    securitySchemes: {
      bearerAuth: { type: 'http', scheme: 'bearer', description: 'A workspace API key: `Authorization: Bearer <API_KEY>`.' },
    },
    schemas: componentSchemas,
    responses: errorResponses(s),
    parameters: {
      'Idempotency-Key': {
        name: 'Idempotency-Key',
        in: 'header',
        required: false,
        description: `The same key from the same workspace within ${humanDuration(s.idempotencyTtlSeconds * 1000)} returns the first call's job (with \`idempotent-replayed: true\`) and makes no second job or charge (on a callback retry: the first call's attempt, and no second one); with other parameters, or on another kind of call, it is 409 \`idempotency_key_reused\`. An edit repeated while its first request is still storing its uploads is 409 \`idempotency_key_in_use\` with \`Retry-After\`.`,
        schema: { type: 'string', pattern: '^[\\x20-\\x7e]{1,255}$' },
      },
      limit: { name: 'limit', in: 'query', schema: { type: 'integer', minimum: 1, maximum: 100, default: 20 } },
      after: { name: 'after', in: 'query', schema: { type: 'string', maxLength: 64 } },
      order: { name: 'order', in: 'query', schema: { type: 'string', enum: ['asc', 'desc'], default: 'desc' }, description: 'By creation time.' },
    },
    headers: {
      'x-request-id': { required: true, description: 'Names the call in the logs; on every response.', schema: { type: 'string', pattern: '^req_[0-9a-z]+$' } },
      'idempotent-replayed': { description: 'An `Idempotency-Key` matched an earlier call: this is its job.', schema: { type: 'string', const: 'true' } },
      ...rateLimitHeaders(s, true),
      'retry-after': { required: true, description: 'Seconds to wait before trying again.', schema: { type: 'integer', minimum: 1 } },
      etag: { required: true, schema: { type: 'string' } },
      'content-length': { required: true, schema: { type: 'integer', minimum: 0 } },
    },
  };
}

function overview(s: OpenApiSettings): string {
  return [
    'Generates images and videos, and reports finished jobs to a `callback_url` with signed callbacks (see `webhooks`).',
    '',
    '- **Authentication**: `Authorization: Bearer <API_KEY>` on every `/v1` call except this document, signed file links and the webhook verification keys (`GET /v1/webhook-keys/{workspace_id}`).',
    "- **Request ids**: every response carries `x-request-id: req_…`; an image request's id is the `x-request-id` of its creation call.",
    '- **Errors**: `{"error": {"message", "type", "param", "code"}}` with a matching status; each response lists its codes. Bytes that are not HTTP, `CONNECT` and an HTTP/1.1 request without `Host` answer 400 `invalid_http_request`, a request that does not arrive in time 408 `request_timeout`, an `Expect` other than `100-continue` 417 `expectation_failed`, headers over 16 KiB 431 `request_header_fields_too_large`, on any path.',
    `- **Limits**: per workspace, shared by every gateway replica: a create bucket (${s.rateLimitCreatePerMinute}/min by default) for creation calls, retries and recoveries, a read bucket (${s.rateLimitReadPerMinute}/min) for reads of jobs and callbacks; at most ${s.maxWaitingJobsPerWorkspace} unfinished jobs. Models, files, webhook keys, health and this document are not limited.`,
    `- **Bodies**: JSON up to 1 MiB (${s.maxJsonBytes} bytes for \`/v1/images/edits\`), uploads up to ${s.maxUploadBytes} bytes a file; unknown fields are refused.`,
    `- **Dependency outage**: 503 \`service_unavailable\` with \`Retry-After: ${OUTAGE_RETRY_AFTER_SECONDS}\`, never a 500.`,
    `- **Retention**: a finished job (its record, its files and its callback) is kept ${humanDuration(s.mediaRetentionSeconds * 1000)} after it ends (a video's \`expires_at\`); links are valid ${humanDuration(s.linkTtlSeconds * 1000)}, never past \`expires_at\`.`,
    '',
    'Every `*_at` field is integer Unix seconds or null. Lists are `{object: "list", data, first_id, last_id, has_more}`, newest first; pass `last_id` as `after` for the next page.',
  ].join('\n');
}

/**
 * The OpenAPI 3.1 document of the gateway's public API and of the callbacks it sends, built from
 * the code's own catalogue, enums and limits, and from this deployment's settings.
 */
export function buildOpenApiDocument(settings: OpenApiSettings): OpenAPIObject {
  return {
    openapi: '3.1.1',
    info: { title: 'Media generation API', version: '1.0', description: overview(settings) },
    servers: [{ url: settings.publicBaseUrl }],
    security: [{ bearerAuth: [] }],
    tags: [
      { name: 'Models' },
      { name: 'Images' },
      { name: 'Videos' },
      { name: 'Files', description: 'Signed download links.' },
      { name: 'Callbacks', description: "What became of each job's callback; manual retries and bulk recovery." },
      { name: 'Webhooks', description: webhooksDescription(settings) },
      { name: 'Webhook endpoints', description: "Destinations every subscribed job end is sent to, as OpenAI's project webhooks." },
      { name: 'Audit', description: 'Who changed what in the workspace.' },
      { name: 'Health' },
      { name: 'Documentation' },
    ],
    paths: paths(settings),
    webhooks: webhookItems(settings),
    components: components(settings),
  };
}
