import { AUDIT_ACTIONS } from '@media/accounts';
import { MAX_ENDPOINT_DESCRIPTION, MAX_ENDPOINTS_PER_WORKSPACE } from '@media/callbacks';
import type { SchemaObject } from 'openapi3-ts/oas31';
import type { ErrorType } from '@media/common';
import {
  type AttemptErrorClass,
  type AttemptTrigger,
  type CallbackState,
  describeSize,
  EVENT_TYPES,
  type EventType,
  type ImageModel,
  type ImageOutputFormat,
  type JobErrorCode,
  type JobStatus,
  MODEL_CATALOG,
  type ResponseFormat,
  type VideoModel,
} from '@media/domain';
import { DATA_URL, MAX_IMAGES } from '../uploads';
import { binary, closedObject, describedEnum, idOf, orNull, ref, unique, unixSeconds, type Schema } from './schema-kit';

const imageModels = MODEL_CATALOG.filter((m): m is ImageModel => m.kind === 'image');
const videoModels = MODEL_CATALOG.filter((m): m is VideoModel => m.kind === 'video');
const imageSizes = unique(imageModels.flatMap((m) => Object.keys(m.pricePerImage)));
const videoSizes = unique(videoModels.flatMap((m) => m.sizes));

const JOB_STATUSES: Record<JobStatus, string> = {
  queued: 'accepted, waiting for a generator (videos only: image requests are `in_progress` from acceptance)',
  in_progress: 'being made',
  completed: 'made; links are minted fresh on every read and every callback attempt',
  failed: 'no output was made; `error` says why; never charged',
};

const JOB_ERROR_CODES: Record<JobErrorCode, string> = {
  moderation_blocked: 'the prompt was blocked by output moderation',
  invalid_image: 'an uploaded image or the mask could not be decoded (a mask needs an alpha channel)',
  generation_failed: 'the generator failed or timed out on every try',
};

const CALLBACK_STATES: Record<CallbackState, string> = {
  pending: 'on the automatic retry ladder',
  delivered: 'an attempt, automatic or manual, got a 2xx answer',
  failed: 'the last automatic attempt failed (a manual retry may still deliver it)',
};

const ATTEMPT_ERRORS: Record<AttemptErrorClass, string> = {
  http_error: 'an answer whose status is not 2xx or 3xx, or an answer that is not HTTP',
  redirect: 'a 3xx answer; redirects are never followed',
  timeout: 'no complete answer within the webhook timeout',
  refused: 'nobody accepted the connection (or no route to the host)',
  reset: 'the connection was cut before a complete answer',
  tls: 'TLS handshake or certificate failure',
  dns: 'the host name no longer resolves',
  blocked_address: 'the URL failed the callback URL rules when checked again for this attempt; nothing was dialled',
  dispatcher_error: 'the dispatcher itself could not make the attempt, five times over',
  proxy: 'the egress proxy (CALLBACK_EGRESS_PROXY) could not be reached or refused the tunnel; nothing reached the receiver',
  relay_offline: 'a callback to the relay URL with no `media-callbacks listen` connected to take it, or whose listener left before its handler answered',
};

const ATTEMPT_TRIGGERS: Record<AttemptTrigger, string> = {
  scheduled: 'an automatic attempt of the retry ladder',
  manual: 'a manual retry (API, dashboard, admin CLI or a bulk recovery)',
};

const RESPONSE_FORMATS: Record<ResponseFormat, string> = {
  url: 'download links (the only form `GET` and callbacks ever use)',
  b64_json: 'the image bytes, base64-encoded, in a synchronous answer',
};

const OUTPUT_FORMATS: Record<ImageOutputFormat, string> = { png: 'PNG', jpeg: 'JPEG', webp: 'WebP' };

export const ERROR_TYPES: Record<ErrorType, string> = {
  invalid_request_error: 'the request is wrong; do not repeat it unchanged',
  authentication_error: 'no API key, or an unknown one',
  permission_error: 'a download link that is not valid or has expired',
  not_found_error: 'no such route or object in this workspace',
  conflict_error: 'the request conflicts with an earlier one',
  rate_limit_error: 'over a per-workspace limit; `Retry-After` says when to try again',
  api_error: 'the service failed or could not be reached; try again later',
};

const modelIds = (models: readonly { id: string }[]) => models.map((m) => m.id);

const common = {
  prompt: {
    type: 'string',
    minLength: 1,
    maxLength: 32_000,
    description: 'What to make. Leading and trailing white space is removed; an unpaired surrogate becomes U+FFFD.',
  },
  callback_url: {
    ...orNull({ type: 'string', format: 'uri', maxLength: 2048 }),
    description:
      "Where to POST the job's result when it ends (see `webhooks`). `https` only, no credentials in the URL, and a host on the public internet: not localhost nor a loopback, private, link-local, CGNAT, multicast, reserved or unspecified address, nor a name resolving to one. Checked now (`400 invalid_callback_url`) and again on every delivery attempt.",
  },
  seed: { ...orNull({ type: 'integer', minimum: 0, maximum: 2 ** 31 - 1 }), description: 'Makes the output repeatable.' },
  user: { type: 'string', maxLength: 256, description: 'An end-user id of yours. Accepted and ignored.' },
} satisfies Record<string, SchemaObject>;

/** Sent by the official `openai` SDK on generations and edits alike (README: which are applied, which ignored). */
const SDK_IMAGE_PARAMETERS = {
  background: { type: 'string', enum: ['auto', 'transparent', 'opaque'] },
  output_compression: { type: 'integer', minimum: 0, maximum: 100 },
  partial_images: { type: 'integer', minimum: 0, maximum: 3 },
  stream: { type: 'boolean', enum: [false], description: 'Accepted for compatibility with the `openai` SDK; only `false`: no streaming.' },
} satisfies Record<string, SchemaObject>;

/** Generations only. */
export const SDK_GENERATION_PARAMETERS = {
  quality: { type: 'string', enum: ['auto', 'low', 'medium', 'high', 'standard', 'hd'] },
  moderation: { type: 'string', enum: ['auto', 'low'] },
  style: { type: 'string', enum: ['vivid', 'natural'] },
} satisfies Record<string, SchemaObject>;

/** Edits only: no `hd` (DALL-E 3's, generations only). */
export const SDK_EDIT_PARAMETERS = {
  quality: { type: 'string', enum: ['auto', 'low', 'medium', 'high', 'standard'] },
  input_fidelity: { type: 'string', enum: ['high', 'low'] },
} satisfies Record<string, SchemaObject>;

const accepted = (params: Record<string, SchemaObject>) =>
  Object.fromEntries(Object.entries(params).map(([name, schema]) => [name, { description: 'Accepted for compatibility with the `openai` SDK.', ...schema }]));

const imageFields: Record<string, Schema> = {
  prompt: common.prompt,
  model: { type: 'string', enum: modelIds(imageModels), default: imageModels[0].id, description: 'An image model of `GET /v1/models`.' },
  n: { type: 'integer', minimum: 1, maximum: 10, default: 1, description: 'How many images.' },
  size: {
    type: 'string',
    enum: [...imageSizes, 'auto'],
    default: 'auto',
    description: `One of the model's sizes; \`auto\` is the model's default (${imageModels.map((m) => `${m.id}: ${m.defaultSize}`).join(', ')}).`,
  },
  response_format: { ...describedEnum(RESPONSE_FORMATS, 'How a synchronous answer carries the images; ignored with `callback_url`.'), default: 'url' },
  output_format: { ...describedEnum(OUTPUT_FORMATS, 'The image file format.'), default: 'png' },
  seed: common.seed,
  user: common.user,
  callback_url: common.callback_url,
  ...accepted(SDK_IMAGE_PARAMETERS),
};

const dataUrl: SchemaObject = {
  type: 'string',
  pattern: DATA_URL.source,
  description: 'An inline `data:image/png|jpeg|webp;base64,…` URL; the service never fetches a URL.',
};
const imageUrlObject = closedObject({ image_url: dataUrl });
const jsonImage: Schema = { oneOf: [dataUrl, imageUrlObject] };

const imageFiles = binary('application/octet-stream', 'A PNG, JPEG or WebP file, recognised by its bytes.');
const editRequired = { anyOf: [{ required: ['image'] }, { required: ['images'] }] };

const videoResolutions = unique(videoSizes.map((s) => describeSize(s).resolution));
const videoAspectRatios = unique(videoSizes.map((s) => describeSize(s).aspect_ratio));
const minSeconds = Math.min(...videoModels.map((m) => m.minSeconds));
const maxSeconds = Math.max(...videoModels.map((m) => m.maxSeconds));

const requests: Record<string, SchemaObject> = {
  ImageGenerationRequest: closedObject({ ...imageFields, ...accepted(SDK_GENERATION_PARAMETERS) }, ['prompt'], {
    description: 'JSON, or the same fields as a multipart form. Without `callback_url` the call waits for the images; with it the call answers 202 at once.',
  }),
  ImageEditRequest: closedObject(
    {
      ...imageFields,
      image: {
        oneOf: [jsonImage, { type: 'array', minItems: 1, maxItems: MAX_IMAGES, items: jsonImage }],
        description: `The images to edit (the first is edited; at most ${MAX_IMAGES}), as data URLs.`,
      },
      images: {
        type: 'array',
        minItems: 1,
        maxItems: MAX_IMAGES,
        items: imageUrlObject,
        description: 'The same as `image`, in the `[{"image_url": …}]` form.',
      },
      mask: { ...jsonImage, description: 'A PNG with an alpha channel: fully transparent pixels mark the area to edit.' },
      ...accepted(SDK_EDIT_PARAMETERS),
    },
    ['prompt'],
    { ...editRequired, description: 'The JSON form of an edit: the images as base64 data URLs.' },
  ),
  ImageEditMultipartRequest: closedObject(
    {
      ...imageFields,
      image: {
        oneOf: [imageFiles, { type: 'array', minItems: 1, maxItems: MAX_IMAGES, items: imageFiles }],
        description: `One or more image files (at most ${MAX_IMAGES}; the first is edited).`,
      },
      'image[]': {
        type: 'array',
        minItems: 1,
        maxItems: MAX_IMAGES,
        items: imageFiles,
        description: 'The same as `image`, under the name the `openai` SDK uses for several files.',
      },
      mask: { ...imageFiles, description: 'A PNG with an alpha channel: fully transparent pixels mark the area to edit.' },
      ...accepted(SDK_EDIT_PARAMETERS),
    },
    ['prompt'],
    { anyOf: [{ required: ['image'] }, { required: ['image[]'] }], description: 'The multipart form of an edit; every other field is a form field.' },
  ),
  VideoCreateRequest: closedObject(
    {
      prompt: common.prompt,
      model: { type: 'string', enum: modelIds(videoModels), default: videoModels[0].id, description: 'A video model of `GET /v1/models`.' },
      seconds: {
        anyOf: [
          { type: 'integer', minimum: minSeconds, maximum: maxSeconds },
          { type: 'string', pattern: '^\\d+$', description: 'The `openai` SDK sends a digit string.' },
        ],
        default: videoModels[0].defaultSeconds,
        description: `Duration, within the model's range (${videoModels.map((m) => `${m.id}: ${m.minSeconds}–${m.maxSeconds}`).join(', ')}); \`400 invalid_duration\` outside it.`,
      },
      size: { type: 'string', enum: videoSizes, description: `\`WxH\`; default ${videoModels.map((m) => `${m.id}: ${m.defaultSize}`).join(', ')}.` },
      resolution: {
        type: 'string',
        enum: videoResolutions,
        description: 'The short side, e.g. `720p`. With `aspect_ratio` or alone it picks the first matching size; with `size` it must agree.',
      },
      aspect_ratio: { type: 'string', enum: videoAspectRatios, description: 'E.g. `16:9`; like `resolution`, another view of `size`.' },
      generate_audio: { type: 'boolean', default: false, description: 'Adds an audio track, priced extra.' },
      seed: common.seed,
      user: common.user,
      callback_url: common.callback_url,
    },
    ['prompt'],
    { description: 'JSON, or the same fields as a multipart form (as the `openai` SDK sends it).' },
  ),
  VideoRemixRequest: closedObject({ prompt: common.prompt, callback_url: common.callback_url }, ['prompt']),
  CallbackRecoveryRequest: closedObject(
    {
      since: { type: 'integer', minimum: 0, maximum: 2 ** 40, description: 'Start of the window, inclusive (Unix seconds).' },
      until: { type: 'integer', minimum: 0, maximum: 2 ** 40, description: 'End of the window, exclusive (Unix seconds); later than `since`; default now.' },
    },
    ['since'],
  ),
};

const jobError = closedObject(
  {
    code: describedEnum(JOB_ERROR_CODES, 'Why the job failed.'),
    message: { type: 'string' },
  },
  ['code', 'message'],
  { description: 'Why a job failed; `null` unless `status` is `failed`.' },
);

const cost = { ...orNull({ type: 'number', minimum: 0 }), description: 'US dollars charged; `null` until completed, and for ever when failed.' };
const link = orNull({ type: 'string', format: 'uri' });
const echoedCallbackUrl = { ...orNull({ type: 'string' }), description: 'The `callback_url` of the request, or `null`.' };
const imageStatuses = (Object.keys(JOB_STATUSES) as JobStatus[]).filter((s) => s !== 'queued');

const videoFields: Record<string, Schema> = {
  id: idOf('video'),
  object: { type: 'string', const: 'video' },
  model: { type: 'string' },
  status: describedEnum(JOB_STATUSES, 'Where the job stands.'),
  progress: { type: 'integer', minimum: 0, maximum: 100, description: '100 once completed.' },
  created_at: unixSeconds('When the video was requested'),
  completed_at: orNull(unixSeconds('When it completed; `null` until then')),
  expires_at: orNull(
    unixSeconds('When the video, its file and its callback are removed (retention, from when it ended, completed or failed); `null` while it runs'),
  ),
  seconds: { type: 'integer', minimum: 1 },
  resolution: { type: 'string', pattern: '^\\d+p$' },
  aspect_ratio: { type: 'string', pattern: '^\\d+:\\d+$' },
  size: { type: 'string', pattern: '^\\d+x\\d+$' },
  generate_audio: { type: 'boolean' },
  prompt: { type: 'string' },
  url: { ...link, description: 'A signed download link to the MP4, minted for this answer; `null` unless completed.' },
  url_expires_at: orNull(unixSeconds('When `url` stops working')),
  cost,
  error: orNull(ref('JobError')),
  callback_url: echoedCallbackUrl,
};

const imageRequestFields: Record<string, Schema> = {
  id: idOf('req', 'Also the `x-request-id` of the creation call.'),
  object: { type: 'string', const: 'image.generation' },
  created: unixSeconds("OpenAI's `created`: when the images were made; until then, when the request was accepted (the same as `created_at`)"),
  model: { type: 'string' },
  status: describedEnum(JOB_STATUSES, 'Where the request stands (no `queued` state: image requests are in progress from acceptance).', imageStatuses),
  created_at: unixSeconds('When the request was accepted'),
  completed_at: orNull(unixSeconds('When it completed; `null` until then')),
  data: { type: 'array', items: ref('ImageUrl'), description: 'One link per image once completed; empty before.' },
  url_expires_at: orNull(unixSeconds('When the links stop working; `null` until completed')),
  cost,
  error: orNull(ref('JobError')),
  callback_url: echoedCallbackUrl,
};

const callbackFields: Record<string, Schema> = {
  id: idOf('msg', 'The `webhook-id` of every attempt of this callback.'),
  object: { type: 'string', const: 'callback' },
  type: ref('EventType'),
  job_id: { type: 'string', description: 'The `video_…` or `req_…` id of the job.' },
  endpoint_id: {
    ...orNull(idOf('we')),
    description: "The workspace webhook endpoint the callback goes to; `null` for the request's own `callback_url`.",
  },
  url: { type: 'string', description: "The destination: the request's `callback_url`, or the endpoint's URL when the callback was made." },
  status: ref('CallbackStatus'),
  attempt_count: { type: 'integer', minimum: 0, description: 'Every attempt made, manual ones included.' },
  next_attempt_at: orNull(unixSeconds('When the next automatic attempt is due; `null` when none is')),
  delivered_at: orNull(unixSeconds('When an attempt got a 2xx')),
  created_at: unixSeconds('When the callback was created (the job ended)'),
};

const ms = { type: 'integer', minimum: 0 } satisfies SchemaObject;

const list = (item: string, description: string): SchemaObject =>
  closedObject(
    {
      object: { type: 'string', const: 'list' },
      data: { type: 'array', items: ref(item) },
      first_id: orNull({ type: 'string' }),
      last_id: orNull({ type: 'string', description: 'Pass it as `after` to read the next page.' }),
      has_more: { type: 'boolean' },
    },
    undefined,
    { description },
  );

const objects: Record<string, SchemaObject> = {
  Error: closedObject(
    {
      error: closedObject({
        message: { type: 'string', description: 'For people; may quote the input.' },
        type: describedEnum(ERROR_TYPES, 'The class of error.'),
        param: { ...orNull({ type: 'string' }), description: 'The offending field, or `null`.' },
        code: { ...orNull({ type: 'string' }), description: 'Stable, machine-readable; see each response for the codes it can carry.' },
      }),
    },
    undefined,
    { description: "OpenAI's error shape; every API error has it." },
  ),
  JobError: jobError,
  ImageModel: closedObject({
    id: { type: 'string', enum: modelIds(imageModels) },
    object: { type: 'string', const: 'model' },
    created: unixSeconds('When the model was added'),
    owned_by: { type: 'string' },
    kind: { type: 'string', const: 'image' },
    sizes: { type: 'array', items: { type: 'string', enum: imageSizes } },
    pricing: closedObject({
      per_image: { type: 'object', additionalProperties: { type: 'number', minimum: 0 }, description: 'US dollars per image, by size.' },
    }),
  }),
  VideoModel: closedObject({
    id: { type: 'string', enum: modelIds(videoModels) },
    object: { type: 'string', const: 'model' },
    created: unixSeconds('When the model was added'),
    owned_by: { type: 'string' },
    kind: { type: 'string', const: 'video' },
    sizes: { type: 'array', items: { type: 'string', enum: videoSizes } },
    seconds: closedObject({ min: { type: 'integer' }, max: { type: 'integer' }, default: { type: 'integer' } }),
    pricing: closedObject({
      per_second: { type: 'number', minimum: 0, description: 'US dollars per second of video.' },
      audio_per_second: { type: 'number', minimum: 0, description: 'Added per second with `generate_audio`.' },
    }),
  }),
  Model: {
    oneOf: [ref('ImageModel'), ref('VideoModel')],
    discriminator: { propertyName: 'kind', mapping: { image: '#/components/schemas/ImageModel', video: '#/components/schemas/VideoModel' } },
  },
  ModelList: closedObject({ object: { type: 'string', const: 'list' }, data: { type: 'array', items: ref('Model') } }),
  Video: closedObject(
    {
      ...videoFields,
      remixed_from_video_id: {
        ...orNull(idOf('video')),
        description: 'The source video of a remix (`POST /v1/videos/{id}/remix`); null on other videos.',
      },
    },
    Object.keys(videoFields),
    { description: 'A video job as the API and its callbacks show it.' },
  ),
  VideoList: list('Video', 'Newest first unless `order=asc`.'),
  VideoDeleted: closedObject({ id: idOf('video'), object: { type: 'string', const: 'video.deleted' }, deleted: { type: 'boolean', const: true } }),
  ImageUrl: closedObject({ url: { type: 'string', format: 'uri', description: 'A signed download link.' } }),
  ImageBase64: closedObject({ b64_json: { type: 'string', contentEncoding: 'base64', description: 'The image bytes.' } }),
  ImageRequest: closedObject(imageRequestFields, undefined, {
    description: 'An image request (generation or edit) as the API and its callbacks show it; `data` always holds links.',
  }),
  ImageResult: closedObject(
    {
      ...imageRequestFields,
      status: { type: 'string', const: 'completed' },
      data: { type: 'array', items: { oneOf: [ref('ImageUrl'), ref('ImageBase64')] }, description: 'Links, or base64 with `response_format: b64_json`.' },
    },
    undefined,
    { description: 'The answer of a synchronous image call: the completed image request.' },
  ),
  ImageRequestList: list('ImageRequest', 'Newest first unless `order=asc`.'),
  Callback: closedObject(callbackFields, undefined, { description: "What became of a job's callback." }),
  CallbackAttempt: closedObject({
    number: { type: 'integer', minimum: 1, description: 'Position among all attempts, automatic and manual.' },
    trigger: describedEnum(ATTEMPT_TRIGGERS, 'What made the attempt.'),
    sent_at: unixSeconds('When the request started'),
    duration_ms: ms,
    status_code: { ...orNull({ type: 'integer' }), description: "The receiver's HTTP status, or `null` when no answer came." },
    error: { ...orNull(describedEnum(ATTEMPT_ERRORS, 'Why the attempt failed; `null` exactly when it delivered (2xx).')) },
    address: { ...orNull({ type: 'string' }), description: 'The IP address dialled, or `null` when none was.' },
    response_excerpt: { type: 'string', description: 'The start of the answer (text the receiver chose).' },
    timing: {
      ...orNull(ref('CallbackAttemptTiming')),
      description: 'How the time split up, where it was measured; `null` when nothing was sent.',
    },
  }),
  CallbackAttemptTiming: closedObject({ dns_ms: orNull(ms), connect_ms: orNull(ms), tls_ms: orNull(ms), first_byte_ms: orNull(ms) }),
  CallbackDetail: closedObject(
    { ...callbackFields, attempts: { type: 'array', items: ref('CallbackAttempt'), description: 'Every attempt, oldest first.' } },
    undefined,
    { description: 'A callback with its attempts.' },
  ),
  CallbackList: list('Callback', 'Newest first.'),
  AuditEvent: closedObject(
    {
      object: { type: 'string', const: 'audit_event' },
      id: idOf('aud'),
      action: { type: 'string', enum: [...AUDIT_ACTIONS], description: 'What was done.' },
      actor: {
        oneOf: [
          closedObject({ type: { type: 'string', const: 'member' }, email: { type: 'string', description: 'The dashboard member who did it.' } }),
          closedObject({ type: { type: 'string', const: 'api_key' }, id: { type: 'string', description: 'The id of the API key that did it.' } }),
          closedObject({ type: { type: 'string', const: 'operator' } }, undefined, { description: 'The admin CLI or the local stack.' }),
          closedObject({ type: { type: 'string', const: 'system' } }, undefined, { description: 'The service itself.' }),
        ],
        description: 'Who did it.',
      },
      target: {
        type: 'object',
        required: ['type', 'id'],
        properties: {
          type: { type: 'string', enum: ['workspace', 'member', 'api_key', 'signing_secret', 'signing_key', 'webhook_endpoint'] },
          id: { type: 'string', description: "A member's e-mail, a key's or an endpoint's id, or the workspace's id for its secrets and keys." },
        },
        additionalProperties: {
          oneOf: [{ type: 'string' }, { type: 'number' }, { type: 'boolean' }, { type: 'array', items: { type: 'string' } }, { type: 'null' }],
        },
        description: 'What was changed, and what it became (a role, a prefix); never a secret.',
      },
      created_at: unixSeconds('When'),
    },
    undefined,
    { description: 'One change to the workspace, with who made it.' },
  ),
  AuditEventList: list('AuditEvent', 'Newest first.'),
  WebhookEndpoint: closedObject(
    {
      object: { type: 'string', const: 'webhook_endpoint' },
      id: idOf('we'),
      url: { type: 'string', description: 'Where its callbacks go; the rules of `callback_url` apply, at creation and at every attempt.' },
      events: { type: 'array', minItems: 1, items: ref('EventType'), description: 'The event types it receives.' },
      description: { type: 'string', maxLength: MAX_ENDPOINT_DESCRIPTION },
      enabled: { type: 'boolean', description: 'Whether new callbacks are made for it; callbacks already made finish their ladders either way.' },
      disabled_reason: {
        ...orNull({ type: 'string', enum: ['manual', 'failing'] }),
        description:
          '`manual`: turned off by a member or an API key; `failing`: every attempt failed for `WEBHOOK_ENDPOINT_DISABLE_AFTER`; `null` while enabled.',
      },
      created_at: unixSeconds('When it was created'),
      updated_at: unixSeconds('When it last changed'),
      failing_since: orNull(unixSeconds('When every attempt since began to fail; `null` once one delivers')),
      last_error: {
        ...orNull(closedObject({ message: { type: 'string', description: 'The error class and a short detail.' }, at: unixSeconds('When') })),
        description: 'The latest failed attempt.',
      },
    },
    undefined,
    { description: 'A workspace webhook endpoint: every job end of a subscribed type is sent to it, with or without a `callback_url` on the request.' },
  ),
  WebhookEndpointList: list('WebhookEndpoint', 'Oldest first; a workspace has at most ' + MAX_ENDPOINTS_PER_WORKSPACE + '.'),
  WebhookEndpointCreate: closedObject(
    {
      url: { type: 'string', maxLength: 2048, description: 'An https URL (the rules of `callback_url`).' },
      events: { type: 'array', minItems: 1, items: ref('EventType'), description: 'All four when omitted.' },
      description: { type: 'string', maxLength: MAX_ENDPOINT_DESCRIPTION },
      enabled: { type: 'boolean', description: 'True when omitted.' },
    },
    ['url'],
  ),
  WebhookEndpointUpdate: closedObject(
    {
      url: { type: 'string', maxLength: 2048 },
      events: { type: 'array', minItems: 1, items: ref('EventType') },
      description: { type: 'string', maxLength: MAX_ENDPOINT_DESCRIPTION },
      enabled: { type: 'boolean', description: 'True turns it back on (and forgets its failing stretch); false turns it off (`disabled_reason: manual`).' },
    },
    [],
  ),
  WebhookEndpointDeleted: closedObject({
    id: idOf('we'),
    object: { type: 'string', const: 'webhook_endpoint.deleted' },
    deleted: { type: 'boolean', const: true },
  }),
  WebhookEndpointTest: closedObject(
    {
      object: { type: 'string', const: 'webhook_endpoint.test' },
      type: ref('EventType'),
      webhook_id: idOf('msg', 'The `webhook-id` the sample was sent with.'),
      delivered: { type: 'boolean' },
      status_code: orNull({ type: 'integer' }),
      error: orNull({ type: 'string', description: 'The error class, as on a callback attempt.' }),
      duration_ms: ms,
      address: orNull({ type: 'string' }),
      response_excerpt: { type: 'string' },
    },
    undefined,
    { description: 'What the endpoint answered to a signed sample event. Nothing is recorded in any callback.' },
  ),
  CallbackStatus: describedEnum(CALLBACK_STATES, 'Delivery state of a callback.'),
  EventType: { type: 'string', enum: [...EVENT_TYPES], description: 'The event a callback reports.' },
  CallbackRecovery: closedObject({
    object: { type: 'string', const: 'callback.recovery' },
    id: idOf('rcv'),
    since: unixSeconds('Start of the window, inclusive'),
    until: unixSeconds('End of the window, exclusive'),
    count: { type: 'integer', minimum: 0, description: 'Failed callbacks found, each given one manual attempt.' },
    rate_per_second: { type: 'integer', minimum: 1, description: 'How fast the attempts go out.' },
  }),
  WebhookKey: closedObject(
    {
      object: { type: 'string', const: 'webhook_key' },
      public_key: {
        type: 'string',
        pattern: '^whpk_[A-Za-z0-9+/]{43}=$',
        description: 'The ed25519 public key: `whpk_` and the base64 of its 32 bytes. Verifies the `v1a` entries of `webhook-signature`.',
      },
      created_at: unixSeconds('When the key pair was made'),
      expires_at: orNull(unixSeconds('When it stops signing, during a rotation overlap; null for the current key')),
    },
    undefined,
    { description: "One of a workspace's public keys for `v1a` signatures." },
  ),
  WebhookKeyList: closedObject(
    { object: { type: 'string', const: 'list' }, data: { type: 'array', items: ref('WebhookKey'), minItems: 1, maxItems: 2 } },
    undefined,
    { description: 'The current key first, then the previous one while it still signs (a rotation overlap).' },
  ),
  Health: closedObject({ status: { type: 'string', const: 'ok' } }),
  Readiness: closedObject({ status: { type: 'string', enum: ['ready', 'redis unreachable'] } }),
};

/** `video.completed` → `VideoCompletedEvent`. */
export const eventSchemaName = (type: EventType): string =>
  `${type
    .split('.')
    .map((w) => w[0].toUpperCase() + w.slice(1))
    .join('')}Event`;

function eventSchema(type: EventType): SchemaObject {
  const [kind, outcome] = type.split('.') as ['video' | 'image', 'completed' | 'failed'];
  const job = kind === 'video' ? 'Video' : 'ImageRequest';
  return closedObject(
    {
      type: { type: 'string', const: type },
      timestamp: { type: 'string', format: 'date-time', description: 'When the job ended, ISO 8601 UTC with milliseconds; the same on every attempt.' },
      data: {
        allOf: [ref(job), { type: 'object', properties: { status: { const: outcome }, error: outcome === 'failed' ? ref('JobError') : { type: 'null' } } }],
        description: `The job exactly as \`GET /v1/${kind === 'video' ? 'videos' : 'images'}/{id}\` shows it, rendered for this attempt (fresh links).`,
      },
    },
    undefined,
    { description: `The body of a \`${type}\` callback.` },
  );
}

export const componentSchemas: Record<string, SchemaObject> = {
  ...objects,
  ...requests,
  ...Object.fromEntries(EVENT_TYPES.map((type) => [eventSchemaName(type), eventSchema(type)])),
};
