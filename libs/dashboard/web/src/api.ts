/**
 * The one place the browser talks to the server: a typed client for the dashboard API
 * (libs/dashboard/src/contract.ts). Components call these methods, never fetch().
 */
import type {
  AsymmetricSigningState,
  AuditAction,
  AuditList,
  CreatedApiKey,
  CreatedMember,
  DestinationList,
  EndpointDeliveries,
  EndpointList,
  EndpointRequest,
  EndpointTestResult,
  FilteredRecoveryPreview,
  FilteredRecoveryStarted,
  JobKind,
  KeysPage,
  Member,
  Overview,
  OverviewWindow,
  RecoveryPreview,
  RecoveryStarted,
  RequestDetail,
  RequestList,
  RevealedSecrets,
  Role,
  RecoveryFilters,
  RelayListeners,
  SessionInfo,
  SignedOut,
  CallbackFilter,
  TestCallbackResult,
  Usage,
} from '../../src/contract';
import type { CallbackObject, WebhookEndpointObject } from '@media/callbacks';
import type { EventType } from '@media/domain';

export type * from '../../src/contract';
export type { CallbackObject, CallbackDetailObject, CallbackAttemptObject, WebhookEndpointObject } from '@media/callbacks';
export type { EventType } from '@media/domain';

/** Where the API lives: same origin, under the app's base path (Vite's `base`, '/dashboard/'). */
const API_ROOT = `${import.meta.env.BASE_URL}api`;

/** An error the server answered with `{ error: { message, code } }` (or a network failure). */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly code: string | null,
    /** Seconds to wait, from `Retry-After` (sign-in rate limit). */
    readonly retryAfter: number | null = null,
  ) {
    super(message);
    this.name = 'ApiError';
  }
}

export interface RequestFilters {
  kind?: JobKind | '';
  callback_status?: CallbackFilter | '';
  /** An origin, `https://host:port`. */
  destination?: string;
  /** Unix seconds: when the request's callback was created, from (inclusive) and to (exclusive). */
  created_after?: number;
  created_before?: number;
  q?: string;
  after?: string;
  limit?: number;
}

type Method = 'GET' | 'POST' | 'PATCH' | 'DELETE';

export class DashboardApi {
  /** Set from the session; sent as `x-csrf-token` on every state-changing request. */
  private csrfToken: string | null = null;

  /** Called when the server says the session is gone (401), so the app can show the sign-in page. */
  constructor(private readonly onSignedOut: () => void) {}

  // Session
  /** Who is signed in; null when nobody is (the server answers that with 200, which no console logs). */
  async session(): Promise<SessionInfo | null> {
    try {
      const answer = await this.call<SessionInfo | SignedOut>('GET', '/session', undefined, { quiet401: true });
      return 'signed_in' in answer ? null : this.remember(answer);
    } catch (err) {
      if (err instanceof ApiError && err.status === 401) return null;
      throw err;
    }
  }
  async signIn(email: string, password: string): Promise<SessionInfo> {
    return this.remember(await this.call<SessionInfo>('POST', '/session', { email, password }, { quiet401: true }));
  }
  async signOut(): Promise<void> {
    await this.call<void>('DELETE', '/session', undefined, { quiet401: true });
    this.csrfToken = null;
  }

  // Overview, and retrying a destination's failed callbacks
  overview(window: OverviewWindow): Promise<Overview> {
    return this.call('GET', `/overview${query({ window })}`);
  }
  previewRecovery(destination: string): Promise<RecoveryPreview> {
    return this.call('GET', `/callbacks/recover${query({ destination })}`);
  }
  recover(destination: string): Promise<RecoveryStarted> {
    return this.call('POST', '/callbacks/recover', { destination });
  }

  // Requests and callbacks
  requests(filters: RequestFilters): Promise<RequestList> {
    return this.call('GET', `/requests${query({ ...filters })}`);
  }
  request(id: string): Promise<RequestDetail> {
    return this.call('GET', `/requests/${encodeURIComponent(id)}`);
  }
  retryCallback(callbackId: string): Promise<CallbackObject> {
    return this.call('POST', `/callbacks/${encodeURIComponent(callbackId)}/retry`);
  }
  previewFilteredRecovery(filters: RecoveryFilters): Promise<FilteredRecoveryPreview> {
    return this.call('GET', `/requests/recovery${query({ ...filters })}`);
  }
  recoverFiltered(filters: RecoveryFilters): Promise<FilteredRecoveryStarted> {
    return this.call('POST', '/requests/recovery', filters);
  }
  destinations(): Promise<DestinationList> {
    return this.call('GET', '/destinations');
  }

  // API keys and signing secrets
  keys(): Promise<KeysPage> {
    return this.call('GET', '/keys');
  }
  createKey(): Promise<CreatedApiKey> {
    return this.call('POST', '/keys');
  }
  revokeKey(id: string): Promise<void> {
    return this.call('DELETE', `/keys/${encodeURIComponent(id)}`);
  }
  revealSecrets(): Promise<RevealedSecrets> {
    return this.call('POST', '/secrets/reveal');
  }
  rotateSecret(): Promise<RevealedSecrets> {
    return this.call('POST', '/secrets/rotate');
  }
  endOverlap(): Promise<RevealedSecrets> {
    return this.call('POST', '/secrets/end-overlap');
  }
  enableAsymmetricSigning(): Promise<AsymmetricSigningState> {
    return this.call('POST', '/signing-keys/enable');
  }
  rotateSigningKey(): Promise<AsymmetricSigningState> {
    return this.call('POST', '/signing-keys/rotate');
  }
  testCallback(url: string): Promise<TestCallbackResult> {
    return this.call('POST', '/test-callback', { url });
  }

  // Webhook endpoints
  endpoints(): Promise<EndpointList> {
    return this.call('GET', '/endpoints');
  }
  endpointDeliveries(id: string): Promise<EndpointDeliveries> {
    return this.call('GET', `/endpoints/${encodeURIComponent(id)}/deliveries`);
  }
  createEndpoint(input: EndpointRequest): Promise<WebhookEndpointObject> {
    return this.call('POST', '/endpoints', input);
  }
  updateEndpoint(id: string, input: EndpointRequest): Promise<WebhookEndpointObject> {
    return this.call('PATCH', `/endpoints/${encodeURIComponent(id)}`, input);
  }
  deleteEndpoint(id: string): Promise<void> {
    return this.call('DELETE', `/endpoints/${encodeURIComponent(id)}`);
  }
  testEndpoint(id: string, type?: EventType): Promise<EndpointTestResult> {
    return this.call('POST', `/endpoints/${encodeURIComponent(id)}/test`, type ? { type } : {});
  }

  // Listeners on developers' machines (media-callbacks listen)
  relayListeners(): Promise<RelayListeners> {
    return this.call('GET', '/relay-listeners');
  }

  // Usage
  usage(days = 30): Promise<Usage> {
    return this.call('GET', `/usage${query({ days })}`);
  }

  // Audit
  audit(actions: readonly AuditAction[] = [], after?: string): Promise<AuditList> {
    return this.call('GET', `/audit${query({ action: actions.join(',') || undefined, after })}`);
  }

  // Members
  members(): Promise<Member[]> {
    return this.call('GET', '/members');
  }
  addMember(email: string, role: Role): Promise<CreatedMember> {
    return this.call('POST', '/members', { email, role });
  }
  setRole(email: string, role: Role): Promise<Member> {
    return this.call('PATCH', `/members/${encodeURIComponent(email)}`, { role });
  }
  removeMember(email: string): Promise<void> {
    return this.call('DELETE', `/members/${encodeURIComponent(email)}`);
  }

  private remember(session: SessionInfo): SessionInfo {
    this.csrfToken = session.csrf_token;
    return session;
  }

  private async call<T>(method: Method, path: string, body?: unknown, opts: { quiet401?: boolean } = {}): Promise<T> {
    const headers: Record<string, string> = { accept: 'application/json' };
    // POST and PATCH always carry a JSON body (`{}` when there is nothing to say): the server accepts
    // only JSON bodies, and an empty body still counts as one of no type.
    if (method === 'POST' || method === 'PATCH') body ??= {};
    if (body !== undefined) headers['content-type'] = 'application/json';
    // Reads carry it too: the server answers 401 `session_changed` when the browser's cookie now
    // belongs to another session (a sign-in in another tab) rather than the new session's data.
    if (this.csrfToken) headers['x-csrf-token'] = this.csrfToken;
    let res: Response;
    try {
      res = await fetch(`${API_ROOT}${path}`, {
        method,
        headers,
        body: body === undefined ? undefined : JSON.stringify(body),
        credentials: 'same-origin',
        cache: 'no-store',
      });
    } catch {
      throw new ApiError(0, 'The dashboard server did not answer. Check your connection and try again.', 'network_error');
    }
    if (res.status === 204) return undefined as T;
    const text = await res.text();
    let json: unknown = undefined;
    try {
      json = text ? JSON.parse(text) : undefined;
    } catch {
      // Not JSON (a proxy's error page): reported below with the status.
    }
    if (res.ok) return json as T;
    const error = (json as { error?: { message?: unknown; code?: unknown } } | undefined)?.error;
    const retryAfter = Number(res.headers.get('retry-after')) || null;
    const failure = new ApiError(
      res.status,
      typeof error?.message === 'string' ? error.message : `The server answered ${res.status} ${res.statusText}.`,
      typeof error?.code === 'string' ? error.code : null,
      retryAfter,
    );
    if (res.status === 401 && failure.code === 'session_changed') {
      // The browser is signed in as someone else now: start again under that session.
      window.location.reload();
    } else if (res.status === 401 && !opts.quiet401) {
      this.csrfToken = null;
      this.onSignedOut();
    }
    throw failure;
  }
}

function query(params: Record<string, string | number | undefined>): string {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== '') q.set(k, String(v));
  const s = q.toString();
  return s ? `?${s}` : '';
}
