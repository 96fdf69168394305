import { EVENT_TYPES, type EventType } from '@media/domain';

/** Most webhook endpoints one workspace may have. */
export const MAX_ENDPOINTS_PER_WORKSPACE = 10;
/** Longest endpoint description, in characters. */
export const MAX_ENDPOINT_DESCRIPTION = 500;
/** Longest endpoint URL, as for a request's `callback_url`. */
export const MAX_ENDPOINT_URL = 2048;

/**
 * Why an endpoint is off: a person (or API key) turned it off, or every attempt to it failed for
 * WEBHOOK_ENDPOINT_DISABLE_AFTER and delivery turned it off. Null while it is enabled.
 */
export type EndpointDisabledReason = 'manual' | 'failing';

/** A workspace webhook endpoint as stored: a destination that every subscribed job end is sent to. */
export interface WebhookEndpointRecord {
  /** `we_…`, on the workspace's shard. */
  id: string;
  workspace_id: string;
  url: string;
  /** The event types it receives; never empty. */
  events: EventType[];
  description: string;
  enabled: boolean;
  disabled_reason: EndpointDisabledReason | null;
  created_ms: number;
  updated_ms: number;
  /** When the current run of failed attempts began (Unix ms); null after a delivered attempt. */
  failing_since_ms: number | null;
  /** The latest failed attempt's error class and detail, and when it was. */
  last_error: string | null;
  last_error_ms: number | null;
}

/** The API's `webhook_endpoint` object (design section 3), with what failing looks like. */
export interface WebhookEndpointObject {
  object: 'webhook_endpoint';
  id: string;
  url: string;
  events: EventType[];
  description: string;
  enabled: boolean;
  disabled_reason: EndpointDisabledReason | null;
  created_at: number;
  updated_at: number;
  /** When every attempt since began to fail (Unix seconds); null when the latest attempt delivered or none was made. */
  failing_since: number | null;
  /** The latest failed attempt: its error class and a short detail (never a secret), and when. */
  last_error: { message: string; at: number } | null;
}

const seconds = (ms: number) => Math.floor(ms / 1000);

export function presentWebhookEndpoint(e: WebhookEndpointRecord): WebhookEndpointObject {
  return {
    object: 'webhook_endpoint',
    id: e.id,
    url: e.url,
    events: e.events,
    description: e.description,
    enabled: e.enabled,
    disabled_reason: e.disabled_reason,
    created_at: seconds(e.created_ms),
    updated_at: seconds(e.updated_ms),
    failing_since: e.failing_since_ms === null ? null : seconds(e.failing_since_ms),
    last_error: e.last_error === null ? null : { message: e.last_error, at: seconds(e.last_error_ms ?? e.updated_ms) },
  };
}

/** Whether an endpoint takes this event now. */
export const endpointWants = (e: Pick<WebhookEndpointRecord, 'enabled' | 'events'>, type: EventType): boolean => e.enabled && e.events.includes(type);

/** What a client may set on an endpoint; every field is optional on a change, `url` required on creation. */
export interface EndpointInput {
  url?: string;
  events?: EventType[];
  description?: string;
  enabled?: boolean;
}

/** A field of an endpoint's input that is not acceptable: the API's 400 names `param` and `code`. */
export class EndpointInputError extends Error {
  override readonly name = 'EndpointInputError';

  constructor(
    readonly param: string,
    message: string,
    readonly code: 'invalid_value' | 'invalid_callback_url' | 'unknown_parameter' | 'missing_required_parameter' = 'invalid_value',
  ) {
    super(message);
  }
}

const FIELDS = new Set(['url', 'events', 'description', 'enabled']);

/**
 * Reads an endpoint's input from a request body (the API's and the dashboard's alike). The URL's
 * form only: the address rules (the same as `callback_url`'s) are checked by whoever stores it.
 *
 * @throws EndpointInputError naming the first field that is wrong
 */
export function parseEndpointInput(body: unknown, purpose: 'create' | 'update'): EndpointInput {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw new EndpointInputError('body', 'The request body must be a JSON object.');
  const raw = body as Record<string, unknown>;
  const unknown = Object.keys(raw).find((key) => !FIELDS.has(key));
  if (unknown !== undefined) throw new EndpointInputError(unknown, `Unknown parameter: '${unknown}'.`, 'unknown_parameter');
  const input: EndpointInput = {};
  if (raw.url !== undefined) {
    if (typeof raw.url !== 'string' || raw.url.length === 0 || raw.url.length > MAX_ENDPOINT_URL)
      throw new EndpointInputError('url', `url must be an https URL of at most ${MAX_ENDPOINT_URL} characters.`, 'invalid_callback_url');
    input.url = raw.url;
  } else if (purpose === 'create') {
    throw new EndpointInputError('url', 'Missing required parameter: url.', 'missing_required_parameter');
  }
  if (raw.events !== undefined) {
    if (!Array.isArray(raw.events) || raw.events.length === 0)
      throw new EndpointInputError('events', `events must be a non-empty list of event types: ${EVENT_TYPES.join(', ')}.`);
    const bad = raw.events.find((e) => typeof e !== 'string' || !(EVENT_TYPES as readonly string[]).includes(e));
    if (bad !== undefined) throw new EndpointInputError('events', `Unknown event type ${JSON.stringify(bad)}; the event types are ${EVENT_TYPES.join(', ')}.`);
    // In the catalogue's order, each once: the same subscription always reads the same.
    input.events = EVENT_TYPES.filter((type) => (raw.events as string[]).includes(type));
  } else if (purpose === 'create') {
    input.events = [...EVENT_TYPES];
  }
  if (raw.description !== undefined) {
    if (typeof raw.description !== 'string' || raw.description.length > MAX_ENDPOINT_DESCRIPTION)
      throw new EndpointInputError('description', `description must be a string of at most ${MAX_ENDPOINT_DESCRIPTION} characters.`);
    input.description = raw.description;
  } else if (purpose === 'create') {
    input.description = '';
  }
  if (raw.enabled !== undefined) {
    if (typeof raw.enabled !== 'boolean') throw new EndpointInputError('enabled', 'enabled must be true or false.');
    input.enabled = raw.enabled;
  }
  return input;
}
