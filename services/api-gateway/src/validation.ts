import { AUDIT_ACTIONS, splitAuditActions, type AuditAction, type AuditQuery } from '@media/accounts';
import Joi from 'joi';
import {
  type CallbackState,
  describeSize,
  EVENT_TYPES,
  type EventType,
  findModel,
  type ImageBackground,
  type ImageModel,
  type ImageOutputFormat,
  type ImageQuality,
  MODEL_CATALOG,
  type ResponseFormat,
  type VideoModel,
} from '@media/domain';
import { imagePrice } from '@media/jobs';
import type { CallbackListQuery } from '@media/callbacks';
import { ApiError } from './http/api-error';

export type ImageOperation = 'generation' | 'edit';

/** Parameters the openai SDK sends that the renderer has no use for: accepted so that its code runs unchanged. */
export const IGNORED_IMAGE_PARAMS = ['user', 'moderation', 'style', 'input_fidelity', 'partial_images'] as const;
export type IgnoredImageParam = (typeof IGNORED_IMAGE_PARAMS)[number];

export interface ImageParams {
  model: ImageModel;
  prompt: string;
  n: number;
  size: string;
  response_format: ResponseFormat;
  output_format: ImageOutputFormat;
  callback_url: string | null;
  seed: number | null;
  // Left out when not given (or given as their default), so that a request without them has the
  // same Idempotency-Key fingerprint as before they existed.
  quality?: ImageQuality;
  background?: ImageBackground;
  output_compression?: number;
  /** Not used, but part of the request: the Idempotency-Key fingerprint covers them. */
  ignored?: Partial<Record<IgnoredImageParam, string | number>>;
}

export interface VideoParams {
  model: VideoModel;
  prompt: string;
  seconds: number;
  size: string;
  generate_audio: boolean;
  callback_url: string | null;
  seed: number | null;
  /** Not used, but part of the request: the Idempotency-Key fingerprint covers it. */
  user?: string;
}

/** `POST /v1/videos/{id}/remix`: everything else comes from the source video. */
export interface RemixParams {
  prompt: string;
  callback_url: string | null;
}

const defaultImageModel = MODEL_CATALOG.find((m) => m.kind === 'image')!.id;
const defaultVideoModel = MODEL_CATALOG.find((m) => m.kind === 'video')!.id;

const common = {
  prompt: Joi.string().trim().min(1).max(32_000).required(),
  callback_url: Joi.string().max(2048).allow(null),
  seed: Joi.number()
    .integer()
    .min(0)
    .max(2 ** 31 - 1)
    .allow(null),
  user: Joi.string().max(256),
};

const oneOf = (...values: string[]) => Joi.string().valid(...values);

/** OpenAI's value sets, per endpoint, as the openai SDK (v6) types them. */
const imageCommon = {
  model: Joi.string().default(defaultImageModel),
  ...common,
  n: Joi.number().integer().min(1).max(10).default(1),
  size: Joi.string().default('auto'),
  response_format: oneOf('url', 'b64_json').default('url'),
  output_format: oneOf('png', 'jpeg', 'webp').default('png'),
  background: oneOf('transparent', 'opaque', 'auto'),
  output_compression: Joi.number().integer().min(0).max(100),
  partial_images: Joi.number().integer().min(0).max(3),
  stream: Joi.boolean(),
};

const imageSchemas: Record<ImageOperation, Joi.ObjectSchema> = {
  generation: Joi.object({
    ...imageCommon,
    quality: oneOf('standard', 'hd', 'low', 'medium', 'high', 'auto'),
    moderation: oneOf('low', 'auto'),
    style: oneOf('vivid', 'natural'),
  }),
  edit: Joi.object({
    ...imageCommon,
    quality: oneOf('standard', 'low', 'medium', 'high', 'auto'),
    input_fidelity: oneOf('high', 'low'),
  }),
};

/**
 * The image parameters the SDK types as nullable: null is the same as leaving them out (OpenAI's
 * reading). `callback_url` and `seed` take null in their schemas already.
 */
const NULL_MEANS_DEFAULT = [
  'model',
  'n',
  'size',
  'response_format',
  'output_format',
  'quality',
  'background',
  'moderation',
  'style',
  'output_compression',
  'partial_images',
  'input_fidelity',
  'stream',
];

/** A value that is the documented default is the same request as one that leaves it out. */
const IMAGE_DEFAULTS: Readonly<Record<string, unknown>> = { quality: 'auto', background: 'auto', moderation: 'auto', input_fidelity: 'low' };

const videoSchema = Joi.object({
  model: Joi.string().default(defaultVideoModel),
  ...common,
  // The openai SDK sends `seconds` as a digit string.
  seconds: Joi.alternatives(Joi.number().integer(), Joi.string().pattern(/^\d+$/)),
  size: Joi.string().pattern(/^\d+x\d+$/),
  resolution: Joi.string().pattern(/^\d+p$/),
  aspect_ratio: Joi.string().pattern(/^\d+:\d+$/),
  generate_audio: Joi.boolean(),
});

/** Prose fields: any text is welcome, so it is only made storable. */
const FREE_TEXT = new Set(['prompt', 'user']);

/**
 * Code points that no model id, size, format, number or URL of ours contains: controls (NUL
 * included), surrogates (an unpaired one has no UTF-8 form), noncharacters, and U+FFFD, which is
 * what the body decoder made of bytes that were not UTF-8.
 */
const NOT_IN_A_VALUE = /[\p{Cc}\p{Cs}\p{Noncharacter_Code_Point}\uFFFD]/u;

/** Design section 2: every refusal of `callback_url` has the same code, whatever rule it broke. */
const codeFor = (param: string | null) => (param === 'callback_url' ? 'invalid_callback_url' : 'invalid_value');

const page = {
  limit: Joi.number().integer().min(1).max(100).default(20),
  after: Joi.string().max(64),
};

const listQuery = Joi.object({
  ...page,
  order: Joi.string().valid('asc', 'desc').default('desc'),
});

const unixSeconds = Joi.number()
  .integer()
  .min(0)
  .max(2 ** 40);

const callbackListQuery = Joi.object({
  ...page,
  status: Joi.string().valid('pending', 'delivered', 'failed'),
  type: Joi.string().valid(...EVENT_TYPES),
  job_id: Joi.string().max(64),
  endpoint_id: Joi.string().max(64),
  created_after: unixSeconds,
  created_before: unixSeconds,
});

const auditListQuery = Joi.object({
  ...page,
  action: Joi.string()
    .max(1_000)
    .custom((text: string, helpers) => {
      const { actions, unknown } = splitAuditActions(text);
      return unknown === undefined
        ? actions
        : helpers.message({ custom: `{{#label}} has an unknown action '${unknown}'; actions are ${AUDIT_ACTIONS.join(', ')}` });
    }),
});

const recoveryBody = Joi.object({
  since: unixSeconds.required(),
  until: unixSeconds,
});

export interface ListQuery {
  limit: number;
  after?: string;
  order: 'asc' | 'desc';
}

export function parseListQuery(query: unknown): ListQuery {
  return validate<ListQuery>(listQuery, query);
}

/** `GET /v1/callbacks`: times in Unix seconds, `created_after` inclusive, `created_before` exclusive. */
export function parseCallbackListQuery(query: unknown): CallbackListQuery {
  const raw = validate<{
    limit: number;
    after?: string;
    status?: CallbackState;
    type?: EventType;
    job_id?: string;
    endpoint_id?: string;
    created_after?: number;
    created_before?: number;
  }>(callbackListQuery, query);
  // As `POST /v1/callbacks/recover` refuses it: a window that ends before it starts is a mistake,
  // not a question whose answer is "none".
  if (raw.created_after !== undefined && raw.created_before !== undefined && raw.created_before <= raw.created_after) {
    throw ApiError.invalid("Invalid 'created_before': must be later than 'created_after'.", 'created_before', 'invalid_value');
  }
  return {
    limit: raw.limit,
    after: raw.after,
    state: raw.status,
    type: raw.type,
    jobId: raw.job_id,
    endpointId: raw.endpoint_id,
    createdAfterMs: raw.created_after === undefined ? undefined : raw.created_after * 1000,
    createdBeforeMs: raw.created_before === undefined ? undefined : raw.created_before * 1000,
  };
}

/** `GET /v1/audit-events`: a page, and optionally only some actions (`action=member.added,api_key.revoked`). */
export function parseAuditListQuery(query: unknown): AuditQuery {
  const raw = validate<{ limit: number; after?: string; action?: AuditAction[] }>(auditListQuery, query);
  return { limit: raw.limit, after: raw.after, actions: raw.action };
}

/** How far ahead of the gateway's clock a client's may be. */
const CLOCK_SKEW_MS = 60_000;

/** `POST /v1/callbacks/recover`: the window in Unix seconds, `since` inclusive, `until` exclusive (default: now). */
export function parseRecoveryRequest(body: unknown, nowMs = Date.now()): { sinceMs: number; untilMs?: number } {
  const raw = validate<{ since: number; until?: number }>(recoveryBody, body);
  if (raw.until !== undefined && raw.until <= raw.since) throw ApiError.invalid("Invalid 'until': must be later than 'since'.", 'until', 'invalid_value');
  if (raw.until !== undefined) return { sinceMs: raw.since * 1000, untilMs: raw.until * 1000 };
  // Without `until` the window ends now, so a `since` from the future would make it run backwards:
  // refused, unless it is within a client's clock skew of now, which reads as now.
  if (raw.since * 1000 > nowMs + CLOCK_SKEW_MS) throw ApiError.invalid("Invalid 'since': must not be in the future.", 'since', 'invalid_value');
  return { sinceMs: Math.min(raw.since * 1000, nowMs) };
}

function withoutNulls(body: unknown, params: readonly string[]): unknown {
  if (typeof body !== 'object' || body === null) return body;
  const kept = { ...(body as Record<string, unknown>) };
  for (const param of params) if (kept[param] === null) delete kept[param];
  return kept;
}

function validate<T>(schema: Joi.ObjectSchema, body: unknown): T {
  // Joi silently drops a `__proto__` key; it is as unknown as any other.
  if (typeof body === 'object' && body !== null && Object.hasOwn(body, '__proto__')) {
    throw ApiError.invalid("Unknown parameter: '__proto__'.", '__proto__', 'unknown_parameter');
  }
  const { value, error } = schema.validate(body ?? {}, { abortEarly: true, convert: true, stripUnknown: false });
  if (error) {
    const detail = error.details[0];
    const param = detail.path.join('.') || null;
    if (detail.type === 'object.unknown') throw ApiError.invalid(`Unknown parameter: '${param}'.`, param, 'unknown_parameter');
    if (detail.type === 'any.required') throw ApiError.invalid(`Missing required parameter: '${param}'.`, param, 'missing_required_parameter');
    throw ApiError.invalid(`Invalid '${param}': ${detail.message.replace(/^"[^"]*" /, '')}.`, param, codeFor(param));
  }
  return normaliseText(value as Record<string, unknown>) as T;
}

/**
 * What is accepted is what is stored and shown back: prose has unpaired surrogates replaced by
 * U+FFFD (what any UTF-8 encoder does with them), and a value of any other field that holds a
 * character none of its valid values has is refused rather than silently changed.
 */
function normaliseText(fields: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [param, value] of Object.entries(fields)) {
    if (typeof value === 'string' && FREE_TEXT.has(param)) out[param] = value.toWellFormed();
    else if (typeof value === 'string' && NOT_IN_A_VALUE.test(value)) {
      throw ApiError.invalid(`Invalid '${param}': it contains a control character, an unpaired surrogate, a noncharacter or U+FFFD.`, param, codeFor(param));
    } else out[param] = value;
  }
  return out;
}

/** `Idempotency-Key`: printable ASCII, as an HTTP header value should be; anything else is refused, not guessed at. */
export function parseIdempotencyKey(header: string | undefined): string | undefined {
  if (header === undefined) return undefined;
  if (!/^[\x20-\x7e]{1,255}$/.test(header)) {
    throw ApiError.invalid('Idempotency-Key must be 1 to 255 printable ASCII characters.', null, 'invalid_idempotency_key');
  }
  return header;
}

function modelOf<K extends 'image' | 'video'>(id: string, kind: K) {
  const model = findModel(id);
  if (!model) throw new ApiError(404, 'invalid_request_error', `The model '${id}' does not exist.`, 'model', 'model_not_found');
  if (model.kind !== kind) throw ApiError.invalid(`The model '${id}' makes ${model.kind}s, not ${kind}s.`, 'model', 'invalid_model');
  return model as Extract<typeof model, { kind: K }>;
}

export function parseImageRequest(body: unknown, operation: ImageOperation): ImageParams {
  const raw = validate<Record<string, unknown>>(imageSchemas[operation], withoutNulls(body, NULL_MEANS_DEFAULT));
  const model = modelOf(raw.model as string, 'image');
  const size = raw.size === 'auto' ? model.defaultSize : (raw.size as string);
  if (imagePrice(model, size) === undefined) {
    throw ApiError.invalid(`Invalid size '${size}'. Supported sizes: ${Object.keys(model.pricePerImage).join(', ')}, auto.`, 'size', 'invalid_size');
  }
  if (raw.stream === true) {
    throw ApiError.invalid(`Streaming is not offered: leave 'stream' out or set it to false.`, 'stream', 'unsupported_value');
  }
  const given = (param: string) => (raw[param] === undefined || raw[param] === IMAGE_DEFAULTS[param] ? undefined : raw[param]);
  const background = given('background') as ImageBackground | undefined;
  if (background === 'transparent' && raw.output_format === 'jpeg') {
    throw ApiError.invalid(
      "A transparent background needs an output_format with an alpha channel: 'png' or 'webp', not 'jpeg'.",
      'background',
      'invalid_value',
    );
  }
  const ignored = Object.fromEntries(IGNORED_IMAGE_PARAMS.flatMap((param) => (given(param) === undefined ? [] : [[param, given(param)]])));
  return {
    model,
    prompt: raw.prompt as string,
    n: raw.n as number,
    size,
    response_format: raw.response_format as ResponseFormat,
    output_format: raw.output_format as ImageOutputFormat,
    callback_url: (raw.callback_url as string | undefined) ?? null,
    seed: (raw.seed as number | undefined) ?? null,
    quality: given('quality') as ImageQuality | undefined,
    background,
    output_compression: given('output_compression') as number | undefined,
    ignored: Object.keys(ignored).length > 0 ? ignored : undefined,
  };
}

export function parseVideoRequest(body: unknown): VideoParams {
  const raw = validate<Record<string, unknown>>(videoSchema, body);
  const model = modelOf(raw.model as string, 'video');
  const seconds = raw.seconds === undefined ? model.defaultSeconds : Number(raw.seconds);
  if (seconds < model.minSeconds || seconds > model.maxSeconds) {
    throw ApiError.invalid(`Invalid 'seconds': must be between ${model.minSeconds} and ${model.maxSeconds}.`, 'seconds', 'invalid_duration');
  }
  const size = resolveVideoSize(model, raw.size as string | undefined, raw.resolution as string | undefined, raw.aspect_ratio as string | undefined);
  return {
    model,
    prompt: raw.prompt as string,
    seconds,
    size,
    generate_audio: (raw.generate_audio as boolean | undefined) ?? false,
    callback_url: (raw.callback_url as string | undefined) ?? null,
    seed: (raw.seed as number | undefined) ?? null,
    user: raw.user as string | undefined,
  };
}

const remixSchema = Joi.object({ prompt: common.prompt, callback_url: common.callback_url });

export function parseRemixRequest(body: unknown): RemixParams {
  const raw = validate<{ prompt: string; callback_url?: string | null }>(remixSchema, body);
  return { prompt: raw.prompt, callback_url: raw.callback_url ?? null };
}

/** `size`, `resolution` and `aspect_ratio` are three views of one choice; they must agree. */
function resolveVideoSize(model: VideoModel, size?: string, resolution?: string, aspect?: string): string {
  const matches = (candidate: string) => {
    const d = describeSize(candidate);
    return (!resolution || d.resolution === resolution) && (!aspect || d.aspect_ratio === aspect);
  };
  if (size) {
    if (!model.sizes.includes(size)) {
      throw ApiError.invalid(`Invalid size '${size}'. Supported sizes: ${model.sizes.join(', ')}.`, 'size', 'invalid_size');
    }
    if (!matches(size)) throw ApiError.invalid(`size '${size}' does not match resolution/aspect_ratio.`, 'size', 'invalid_size');
    return size;
  }
  if (!resolution && !aspect) return model.defaultSize;
  const found = [model.defaultSize, ...model.sizes].find(matches);
  if (!found) {
    throw ApiError.invalid('No supported size has that resolution and aspect_ratio.', resolution ? 'resolution' : 'aspect_ratio', 'invalid_size');
  }
  return found;
}

/** Each request's Joi rules, for the test that holds the OpenAPI document's request schemas to them. */
export const REQUEST_RULES = {
  imageGeneration: imageSchemas.generation,
  imageEdit: imageSchemas.edit,
  video: videoSchema,
  remix: remixSchema,
  list: listQuery,
  callbackList: callbackListQuery,
  recovery: recoveryBody,
} as const;
