import type { AuditActor, AuditLog, AuditTarget } from '@media/accounts';
import { CallbackUrlRejectedError } from '@media/callback-guard';
import { ApiError } from '@media/common';
import { EVENT_TYPES, type EventType } from '@media/domain';
import type { EndpointChange, EndpointRepository } from './endpoint-store';
import type { RelayDirectory } from './relay';
import { EndpointInputError, parseEndpointInput, type WebhookEndpointRecord } from './endpoints';
import type { TestCallbackOutcome } from './sample-callback-store';
import type { TestCallbacks } from './sample-callbacks';

/** No endpoint with that id in the caller's workspace (another workspace's looks the same). */
export class EndpointNotFoundError extends Error {
  override readonly name = 'EndpointNotFoundError';

  constructor(readonly endpointId: string) {
    super(`no webhook endpoint ${endpointId}`);
  }
}

/** The workspace has its most endpoints already. */
export class TooManyEndpointsError extends Error {
  override readonly name = 'TooManyEndpointsError';

  constructor(readonly max: number) {
    super(`a workspace has at most ${max} webhook endpoints; delete one first`);
  }
}

export interface WebhookEndpointsDeps {
  store: EndpointRepository;
  audit: Pick<AuditLog, 'record'>;
  /** The URL rules of every callback; throws `CallbackUrlRejectedError` for a refused URL. */
  guard: { check(url: string): Promise<unknown> };
  /** Relay URLs (`media-callbacks listen`): an endpoint may name its own workspace's, never another's. */
  relays?: Pick<RelayDirectory, 'isRelayUrl' | 'ownsRelayUrl'>;
  /** Sends a signed sample event and waits for the receiver's answer. */
  tests: Pick<TestCallbacks, 'send'>;
  /** Most endpoints per workspace (the store's own limit; named in the error). */
  maxPerWorkspace: number;
  now?: () => number;
}

/**
 * A workspace's webhook endpoints as its people and its API keys manage them, for the API and the
 * dashboard alike: every change checks the URL with the rules of `callback_url`, and is recorded
 * in the workspace's audit (ids, URL and events: an endpoint holds no secret).
 */
export class WebhookEndpoints {
  private readonly now: () => number;

  constructor(private readonly deps: WebhookEndpointsDeps) {
    this.now = deps.now ?? Date.now;
  }

  list(workspaceId: string): Promise<WebhookEndpointRecord[]> {
    return this.deps.store.list(workspaceId);
  }

  /** @throws EndpointNotFoundError */
  async get(workspaceId: string, id: string): Promise<WebhookEndpointRecord> {
    const endpoint = await this.deps.store.get(workspaceId, id);
    if (!endpoint) throw new EndpointNotFoundError(id);
    return endpoint;
  }

  /**
   * A new endpoint from a request's body (the API's and the dashboard's alike).
   *
   * @throws EndpointInputError for a body {@link parseEndpointInput} refuses
   * @throws CallbackUrlRejectedError when the URL rules refuse its URL
   * @throws TooManyEndpointsError when the workspace has its most already
   */
  async create(workspaceId: string, body: unknown, actor: AuditActor): Promise<WebhookEndpointRecord> {
    const input = parseEndpointInput(body ?? {}, 'create');
    if (input.url === undefined) throw new EndpointInputError('url', 'Missing required parameter: url.', 'missing_required_parameter');
    await this.checkUrl(workspaceId, input.url);
    const endpoint = await this.deps.store.create(
      workspaceId,
      { url: input.url, events: input.events ?? [], description: input.description ?? '', enabled: input.enabled ?? true },
      this.now(),
    );
    if (!endpoint) throw new TooManyEndpointsError(this.deps.maxPerWorkspace);
    await this.deps.audit.record(workspaceId, 'webhook_endpoint.created', actor, target(endpoint));
    return endpoint;
  }

  /**
   * Changes what a request's body names. Turning it on clears why it was off and its failing stretch (so one
   * more failure does not turn it off again at once); off by hand is `manual`.
   *
   * @throws EndpointInputError for a body {@link parseEndpointInput} refuses
   * @throws EndpointNotFoundError
   * @throws CallbackUrlRejectedError when the URL rules refuse a new URL
   */
  async update(workspaceId: string, id: string, body: unknown, actor: AuditActor): Promise<WebhookEndpointRecord> {
    const input = parseEndpointInput(body ?? {}, 'update');
    const before = await this.get(workspaceId, id);
    if (input.url !== undefined && input.url !== before.url) await this.checkUrl(workspaceId, input.url);
    const change: EndpointChange = {};
    if (input.url !== undefined) change.url = input.url;
    if (input.events !== undefined) change.events = input.events;
    if (input.description !== undefined) change.description = input.description;
    if (input.enabled === true && !before.enabled) Object.assign(change, { enabled: true, disabled_reason: null, failing_since_ms: null });
    if (input.enabled === false && before.enabled) Object.assign(change, { enabled: false, disabled_reason: 'manual' });
    const after = await this.deps.store.update(workspaceId, id, change, this.now());
    if (!after) throw new EndpointNotFoundError(id);
    // One event per kind of change, so that "who turned it off" is found by its own action.
    if (change.enabled === true) await this.deps.audit.record(workspaceId, 'webhook_endpoint.enabled', actor, target(after));
    if (change.enabled === false) await this.deps.audit.record(workspaceId, 'webhook_endpoint.disabled', actor, { ...target(after), reason: 'manual' });
    const edited = (['url', 'events', 'description'] as const).filter((field) => change[field] !== undefined && !same(before[field], after[field]));
    if (edited.length > 0) await this.deps.audit.record(workspaceId, 'webhook_endpoint.updated', actor, { ...target(after), changed: edited });
    return after;
  }

  /** @throws EndpointNotFoundError */
  async delete(workspaceId: string, id: string, actor: AuditActor): Promise<WebhookEndpointRecord> {
    const endpoint = await this.get(workspaceId, id);
    if (!(await this.deps.store.delete(workspaceId, id))) throw new EndpointNotFoundError(id);
    await this.deps.audit.record(workspaceId, 'webhook_endpoint.deleted', actor, target(endpoint));
    return endpoint;
  }

  /** The rules of `callback_url`: the address rules, or, for a relay URL, that it is this workspace's. */
  private async checkUrl(workspaceId: string, url: string): Promise<void> {
    if (!this.deps.relays?.isRelayUrl(url)) {
      await this.deps.guard.check(url);
      return;
    }
    if (!(await this.deps.relays.ownsRelayUrl(workspaceId, url)))
      throw new EndpointInputError('url', "The url is a relay URL, but not this workspace's (see `media-callbacks listen`).", 'invalid_callback_url');
  }

  /**
   * Sends a signed sample of one of its events (the first it is subscribed to, or `type`, as a
   * request gave it) to the endpoint, enabled or not, and waits for the answer; undefined when no
   * dispatcher sent it in time.
   *
   * @throws EndpointInputError for a `type` that is not an event type
   * @throws EndpointNotFoundError
   * @throws CallbackUrlRejectedError when its URL fails the rules at this moment (its host resolves elsewhere than at creation)
   */
  async sendTest(workspaceId: string, id: string, type?: unknown): Promise<{ type: EventType; outcome: TestCallbackOutcome | undefined }> {
    if (type !== undefined && !(typeof type === 'string' && (EVENT_TYPES as readonly string[]).includes(type)))
      throw new EndpointInputError('type', `type must be one of ${EVENT_TYPES.join(', ')}.`);
    const endpoint = await this.get(workspaceId, id);
    const chosen = (type as EventType | undefined) ?? endpoint.events[0]!;
    return { type: chosen, outcome: await this.deps.tests.send(workspaceId, endpoint.url, chosen) };
  }
}

/** An endpoint as the audit names it: id, URL (its host and path, never a query that may carry a token) and events. */
function target(endpoint: WebhookEndpointRecord): AuditTarget {
  return { type: 'webhook_endpoint', id: endpoint.id, url: withoutQuery(endpoint.url), events: endpoint.events, enabled: endpoint.enabled };
}

function withoutQuery(url: string): string {
  try {
    const parsed = new URL(url);
    return `${parsed.origin}${parsed.pathname}`;
  } catch {
    return '(invalid url)';
  }
}

const same = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b);

/**
 * The answer a refusal of an endpoint's change gets, the same from the API and the dashboard: the
 * documented error shape, a 404 for another workspace's endpoint as for a missing one.
 */
export function endpointApiError(err: unknown): never {
  if (err instanceof EndpointNotFoundError) throw ApiError.notFound(`No webhook endpoint found with id '${err.endpointId}'.`);
  if (err instanceof TooManyEndpointsError)
    throw ApiError.invalid(`A workspace has at most ${err.max} webhook endpoints; delete one before adding another.`, null, 'endpoint_limit_reached');
  if (err instanceof EndpointInputError) throw ApiError.invalid(err.message, err.param, err.code);
  if (err instanceof CallbackUrlRejectedError) throw ApiError.invalid(err.message, 'url', 'invalid_callback_url');
  throw err;
}
