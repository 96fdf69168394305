import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import express, { Router, type NextFunction, type Request, type RequestHandler, type Response } from 'express';
import {
  AccountsError,
  type Action,
  type ApiKeyInfo,
  ApiKeyNotFoundError,
  AsymmetricSigningOffError,
  can,
  InvalidAccountInputError,
  InvalidCredentialsError,
  isRole,
  LastOwnerError,
  MemberExistsError,
  MemberNotFoundError,
  AUDIT_ACTIONS,
  type AuditActor,
  presentAuditEvent,
  splitAuditActions,
  type PublicSigningKey,
  type Role,
  type SecretsView,
  type Session,
  SignInThrottledError,
  tokensEqual,
  type WorkspaceAccounts,
  WorkspaceNotFoundError,
} from '@media/accounts';
import { CallbackUrlRejectedError } from '@media/callback-guard';
import {
  type CallbackAdmin,
  CallbackNotFoundError,
  type DestinationGate,
  destinationOf,
  endpointApiError,
  presentCallback,
  presentWebhookEndpoint,
  RecoveryTooLargeError,
  type RelayDirectory,
  type TestCallbacks,
  type WebhookEndpoints,
} from '@media/callbacks';
import { ApiError, jsonBody } from '@media/common';
import type { JobPresenter } from '@media/domain';
import type { JobRepository } from '@media/jobs';
import type { OverviewRepository } from '@media/storage';
import type {
  ApiKeyRow,
  AsymmetricSigningState,
  CallbackFilter,
  JobKind,
  AuditList,
  EndpointTestResult,
  KeysPage,
  OverviewWindow,
  RecoveryFilters,
  RevealedSecrets,
  SessionInfo,
  SignedOut,
  TestCallbackResult,
} from './contract';
import { EndpointsView } from './endpoints';
import { OverviewView } from './overview';
import { RelayListenersView } from './relay-listeners';
import { RequestsView } from './requests';

declare module 'express-serve-static-core' {
  interface Locals {
    workspaceId: string;
    dashboardSession?: Session;
    /** The signed-in member, as the dashboard's rate limits key them (a hash of the e-mail). */
    memberKey?: string;
  }
}

/** The session cookie. Path=/dashboard keeps it off every API call; the page never reads it (HttpOnly). */
export const SESSION_COOKIE = 'media_session';

/** No inline script or style, nothing from another origin, never framed: a receiver's answer, shown on the page, is attacker-controlled. */
export const CONTENT_SECURITY_POLICY =
  "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'";

export interface DashboardDeps {
  accounts: WorkspaceAccounts;
  /** WEBHOOK_RETRY_SCHEDULE: what the Overview says a failing callback's ladder takes. */
  retryScheduleMs: readonly number[];
  jobs: JobRepository;
  presenter: JobPresenter;
  callbackAdmin: CallbackAdmin;
  testCallbacks: Pick<TestCallbacks, 'send'>;
  /** The workspace's webhook endpoints: their checks, their audit and their test events. */
  endpoints: Pick<WebhookEndpoints, 'list' | 'get' | 'create' | 'update' | 'delete' | 'sendTest'>;
  /** How the workspace's callback destinations are doing (slots shared by every dispatcher). */
  destinations: Pick<DestinationGate, 'ofWorkspace'>;
  /** The Overview's aggregates. */
  overview: Pick<OverviewRepository, 'read'>;
  /** The relay's directory: the workspace's `media-callbacks listen` connections, and which URLs are relay URLs. */
  relays: Pick<RelayDirectory, 'listeners' | 'existingRelayUrl' | 'isRelayUrl'>;
  /**
   * The dashboard's own buckets, per member (they key on `res.locals.workspaceId` and
   * `res.locals.memberKey`, which the session sets): never the workspace's API buckets, so API
   * traffic cannot hold back an owner's revocation.
   */
  rateLimits: { read: RequestHandler; write: RequestHandler };
  /** 503 at once while Redis is down (the gateway's middleware). */
  requireRedis: RequestHandler;
  /** Set the cookie's Secure flag: PUBLIC_BASE_URL is https. */
  secureCookies: boolean;
  /** The browser app's build (Vite output); `libs/dashboard/dist/web` by default. */
  webDir?: string;
}

const seconds = (ms: number) => Math.floor(ms / 1000);
const secondsOrNull = (ms: number | null) => (ms === null ? null : seconds(ms));

/**
 * The dashboard, mounted by the gateway at `/dashboard`: the JSON API of `contract.ts`
 * under `/api`, the browser app's static files elsewhere (its `index.html` for client-side routes).
 * Authentication is the session cookie only, never an API key.
 */
export function dashboardRouter(deps: DashboardDeps): Router {
  const router = Router();
  const webDir = deps.webDir ?? resolve(__dirname, '..', 'dist', 'web');
  router.use(securityHeaders);
  // `/dashboard` → `/dashboard/`, so that the page's relative URLs resolve under the dashboard.
  router.get('/', (req, res, next) => (req.originalUrl === '/dashboard' ? res.redirect(301, '/dashboard/') : next()));
  router.use('/api', apiRouter(deps));

  // index.html and assets are fingerprinted by Vite except index.html itself, which must never be cached stale.
  router.use(
    express.static(webDir, {
      index: false,
      fallthrough: true,
      setHeaders: (res, path) => res.setHeader('cache-control', path.endsWith('.html') ? 'no-store' : 'public, max-age=31536000, immutable'),
    }),
  );
  router.get(/.*/, (req, res) => {
    const index = resolve(webDir, 'index.html');
    // A missing asset answers 404 rather than the page: a browser expecting a script must not get HTML.
    if (/\.[a-z0-9]+$/i.test(req.path) || !existsSync(index)) throw ApiError.notFound(`Unknown route GET /dashboard${req.path}.`);
    res.setHeader('cache-control', 'no-store');
    res.sendFile(index);
  });
  return router;
}

function securityHeaders(_req: Request, res: Response, next: NextFunction): void {
  res.setHeader('content-security-policy', CONTENT_SECURITY_POLICY);
  res.setHeader('x-content-type-options', 'nosniff');
  res.setHeader('referrer-policy', 'no-referrer');
  res.setHeader('x-frame-options', 'DENY');
  res.setHeader('cross-origin-opener-policy', 'same-origin');
  next();
}

function apiRouter(deps: DashboardDeps): Router {
  const api = Router();
  const accounts = deps.accounts;
  const view = new RequestsView(deps);
  const overview = new OverviewView(deps);
  const endpointsView = new EndpointsView(deps);
  const relayListeners = new RelayListenersView(deps);
  const { read, write } = deps.rateLimits;

  api.use((_req, res, next) => {
    // Answers carry secrets and private data: never stored by the browser or a proxy.
    res.setHeader('cache-control', 'no-store');
    next();
  });
  api.use(deps.requireRedis);
  api.use(jsonBody('16kb'));
  // Every body is JSON: a cross-site form cannot send that without a CORS preflight, which we never grant.
  api.use((req, _res, next) => {
    const hasBody = Number(req.headers['content-length'] ?? 0) > 0 || req.headers['transfer-encoding'] !== undefined;
    if (hasBody && !req.is('json')) {
      throw new ApiError(415, 'invalid_request_error', 'Content-Type must be application/json.', null, 'unsupported_media_type');
    }
    next();
  });

  const cookie = (token: string, maxAgeSeconds: number | null) =>
    [
      `${SESSION_COOKIE}=${token}`,
      'Path=/dashboard',
      'HttpOnly',
      'SameSite=Strict',
      ...(deps.secureCookies ? ['Secure'] : []),
      ...(maxAgeSeconds === null ? [] : [`Max-Age=${maxAgeSeconds}`]),
    ].join('; ');

  const sessionInfo = (s: Session): SessionInfo => ({
    member: { email: s.email, role: s.role },
    workspace: { id: s.workspace.id, name: s.workspace.name },
    csrf_token: s.csrfToken,
  });

  // --- sign-in: the one state-changing call without a session (and so without a CSRF token) ---
  api.post('/session', async (req, res) => {
    const body = (req.body ?? {}) as Record<string, unknown>;
    if (typeof body.email !== 'string' || typeof body.password !== 'string') {
      throw ApiError.invalid('email and password are required.', typeof body.email !== 'string' ? 'email' : 'password', 'invalid_value');
    }
    const { token, session } = await accounts.signIn(body.email, body.password, req.ip ?? req.socket.remoteAddress ?? 'unknown').catch(toApiError);
    // A new sign-in ends the session the browser had: no token outlives the sign-in that replaced it.
    const previous = readCookie(req.headers.cookie, SESSION_COOKIE);
    if (previous) await accounts.signOut(previous);
    // A session cookie (no Max-Age): it ends with the browser, and the server ends it after 12 h idle.
    res.setHeader('set-cookie', cookie(token, null));
    res.json(sessionInfo(session));
  });

  // Everything below needs a session; state-changing calls also need its CSRF token.
  api.use(async (req, res, next) => {
    const token = readCookie(req.headers.cookie, SESSION_COOKIE);
    const session = token ? await accounts.resume(token) : undefined;
    if (!session) {
      if (req.method === 'DELETE' && req.path === '/session') {
        res.setHeader('set-cookie', cookie('', 0));
        res.status(204).end();
        return;
      }
      // The app's first question on every visit: being signed out is an answer, not an error (a
      // browser logs every 4xx to its console).
      if (req.method === 'GET' && req.path === '/session') {
        const answer: SignedOut = { signed_in: false };
        res.json(answer);
        return;
      }
      throw new ApiError(401, 'authentication_error', 'Not signed in.', null, 'not_signed_in');
    }
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      const sent = req.get('x-csrf-token') ?? '';
      if (!tokensEqual(sent, session.csrfToken))
        throw new ApiError(403, 'permission_error', 'Missing or wrong CSRF token (x-csrf-token).', null, 'csrf_failed');
    } else {
      // The app sends its session's token with reads too: a page opened under a session that a
      // sign-in in another tab replaced (the cookie is the browser's, not the page's) would
      // otherwise show the new session's workspace under the old one's name.
      const sent = req.get('x-csrf-token');
      if (sent !== undefined && !tokensEqual(sent, session.csrfToken)) {
        throw new ApiError(
          401,
          'authentication_error',
          'This page belongs to a session that has ended: this browser signed in again.',
          null,
          'session_changed',
        );
      }
    }
    res.locals.dashboardSession = session;
    res.locals.workspaceId = session.workspace.id;
    res.locals.memberKey = createHash('sha256').update(session.email).digest('hex').slice(0, 32);
    next();
  });
  // Signing out is never refused for having changed too much this minute: ending a session must
  // always work, so it comes before the limits.
  api.delete('/session', async (req, res) => {
    await accounts.signOut(readCookie(req.headers.cookie, SESSION_COOKIE) ?? '');
    res.setHeader('set-cookie', cookie('', 0));
    res.status(204).end();
  });
  api.use((req, res, next) => (req.method === 'GET' || req.method === 'HEAD' ? read : write)(req, res, next));

  const session = (res: Response): Session => res.locals.dashboardSession!;
  /** Who the audit says made a change: the signed-in member. */
  const actor = (res: Response): AuditActor => ({ type: 'member', email: session(res).email });
  const allow = (res: Response, action: Action) => {
    if (!can(session(res).role, action))
      throw new ApiError(403, 'permission_error', `Your role (${session(res).role}) may not do this.`, null, 'permission_denied');
  };

  api.get('/session', (_req, res) => {
    res.json(sessionInfo(session(res)));
  });

  // --- requests -------------------------------------------------------------------------------
  api.get('/requests', async (req, res) => {
    const query = req.query as Record<string, unknown>;
    res.json(
      await view.list(session(res).workspace.id, {
        kind: oneOf<JobKind>(query.kind, ['image', 'video'], 'kind'),
        callbackStatus: oneOf<CallbackFilter>(query.callback_status, ['pending', 'failing', 'delivered', 'failed'], 'callback_status'),
        destination: origin(query.destination, 'destination', true),
        createdAfterMs: milliseconds(unixSeconds(query.created_after, 'created_after')),
        createdBeforeMs: milliseconds(unixSeconds(query.created_before, 'created_before')),
        q: optionalString(query.q, 'q'),
        after: optionalString(query.after, 'after'),
        limit: integer(query.limit, 'limit', 1, 100, 20),
      }),
    );
  });

  // Retrying the failed callbacks the page's filters list: counted first (GET), then done (POST).
  // Open to every role, as a callback's Retry is; the recovery's pace and limits apply.
  api.get('/requests/recovery', async (req, res) => {
    res.json(await view.previewRecovery(session(res).workspace.id, recoveryFilters(req.query as Record<string, unknown>)).catch(toApiError));
  });

  api.post('/requests/recovery', async (req, res) => {
    const filters = recoveryFilters((req.body ?? {}) as Record<string, unknown>);
    res.status(202).json(await view.recover(session(res).workspace.id, filters).catch(toApiError));
  });

  api.get('/requests/:id', async (req, res) => {
    const detail = await view.detail(session(res).workspace.id, req.params.id);
    if (!detail) throw ApiError.notFound(`No request found with id '${req.params.id}'.`);
    res.json(detail);
  });

  api.post('/callbacks/:id/retry', async (req, res) => {
    const { callback } = await deps.callbackAdmin.retryNow(session(res).workspace.id, req.params.id).catch(toApiError);
    res.status(202).json(presentCallback(callback));
  });

  // --- overview -------------------------------------------------------------------------------
  api.get('/overview', async (req, res) => {
    const window = oneOf<OverviewWindow>((req.query as Record<string, unknown>).window, ['1h', '24h', '7d'], 'window') ?? '1h';
    res.json(await overview.overview(session(res).workspace.id, window));
  });

  // Retrying every failed callback to one destination: counted first (GET), then done (POST).
  api.get('/callbacks/recover', async (req, res) => {
    const destination = origin((req.query as Record<string, unknown>).destination, 'destination')!;
    res.json(await overview.previewRecovery(session(res).workspace.id, destination).catch(toApiError));
  });

  api.post('/callbacks/recover', async (req, res) => {
    const destination = origin(((req.body ?? {}) as Record<string, unknown>).destination, 'destination')!;
    res.status(202).json(await overview.recover(session(res).workspace.id, destination).catch(toApiError));
  });

  api.get('/destinations', async (_req, res) => {
    res.json(await view.destinations(session(res).workspace.id));
  });

  api.get('/usage', async (req, res) => {
    res.json(await view.usage(session(res).workspace.id, integer((req.query as Record<string, unknown>).days, 'days', 1, 366, 30)));
  });

  // --- API keys and signing secrets -----------------------------------------------------------
  api.get('/keys', async (_req, res) => {
    const s = session(res);
    const [keys, secrets, publicKeys] = await Promise.all([
      accounts.apiKeys(s.workspace.id),
      accounts.secrets(s.workspace.id),
      accounts.publicSigningKeys(s.workspace.id),
    ]);
    const page: KeysPage = {
      api_keys: keys.map(keyRow),
      signing: {
        current_created_at: seconds(secrets.current.created_ms),
        previous_expires_at: secrets.previous ? seconds(secrets.previous.expires_ms) : null,
        can_rotate: can(s.role, 'rotate_secret'),
        can_end_overlap: can(s.role, 'end_overlap'),
      },
      asymmetric: asymmetricState(publicKeys, s.role),
    };
    res.json(page);
  });

  api.post('/keys', async (_req, res) => {
    allow(res, 'manage_keys');
    const created = await accounts.createApiKey(session(res).workspace.id, actor(res));
    res.status(201).json({ ...keyRow(created), key: created.key });
  });

  api.delete('/keys/:id', async (req, res) => {
    allow(res, 'manage_keys');
    await accounts.revokeApiKey(session(res).workspace.id, req.params.id, actor(res)).catch(toApiError);
    res.status(204).end();
  });

  // --- audit ------------------------------------------------------------------------------
  api.get('/audit', async (req, res) => {
    allow(res, 'read_audit');
    const q = req.query as Record<string, unknown>;
    const { actions, unknown } = typeof q.action === 'string' && q.action !== '' ? splitAuditActions(q.action) : { actions: [], unknown: undefined };
    if (unknown !== undefined) throw ApiError.invalid(`Invalid 'action': there is no action '${unknown}'.`, 'action', 'invalid_value');
    const after = typeof q.after === 'string' && q.after !== '' ? q.after : undefined;
    const page = await accounts.audit.list(session(res).workspace.id, {
      limit: integer(q.limit, 'limit', 1, 100, 50),
      after,
      actions,
    });
    if (!page.cursorFound) throw ApiError.invalid("Invalid 'after': no audit event of this workspace has that id.", 'after', 'invalid_value');
    const list: AuditList = { data: page.events.map(presentAuditEvent), has_more: page.hasMore, actions: AUDIT_ACTIONS };
    res.json(list);
  });

  api.post('/secrets/reveal', async (_req, res) => {
    res.json(revealed(await accounts.secrets(session(res).workspace.id)));
  });

  api.post('/secrets/rotate', async (_req, res) => {
    allow(res, 'rotate_secret');
    res.json(revealed(await accounts.rotateSecret(session(res).workspace.id, actor(res))));
  });

  api.post('/secrets/end-overlap', async (_req, res) => {
    allow(res, 'end_overlap');
    res.json(revealed(await accounts.endOverlap(session(res).workspace.id, actor(res))));
  });

  // Who may rotate the secret may turn on and rotate the ed25519 key pair: both change what receivers verify with.
  api.post('/signing-keys/enable', async (_req, res) => {
    allow(res, 'rotate_secret');
    const s = session(res);
    res.json(asymmetricState((await accounts.enableAsymmetricSigning(s.workspace.id, actor(res))).keys, s.role));
  });

  api.post('/signing-keys/rotate', async (_req, res) => {
    allow(res, 'rotate_secret');
    const s = session(res);
    res.json(asymmetricState(await accounts.rotateSigningKey(s.workspace.id, actor(res)).catch(toApiError), s.role));
  });

  api.post('/test-callback', async (req, res) => {
    const url = (req.body as Record<string, unknown> | undefined)?.url;
    if (typeof url !== 'string' || url.length === 0 || url.length > 2048)
      throw ApiError.invalid('url must be a URL of at most 2048 characters.', 'url', 'invalid_callback_url');
    const outcome = await deps.testCallbacks.send(session(res).workspace.id, url).catch((err: unknown) => {
      if (err instanceof CallbackUrlRejectedError) throw ApiError.invalid(err.message, 'url', 'invalid_callback_url');
      throw err;
    });
    if (!outcome)
      throw new ApiError(504, 'api_error', 'No dispatcher sent the test callback in time. Is the webhook-dispatcher running?', null, 'test_callback_timeout');
    const result: TestCallbackResult = outcome;
    res.json(result);
  });

  // --- webhook endpoints ----------------------------------------------------------------------
  // Every role reads them; owners and admins change and test them. The service checks each change
  // (the URL rules of callback_url, the workspace's limit) and records it in the audit.
  api.get('/endpoints', async (_req, res) => {
    res.json(await endpointsView.list(session(res).workspace.id, session(res).role));
  });

  api.get('/endpoints/:id/deliveries', async (req, res) => {
    res.json(await endpointsView.deliveries(session(res).workspace.id, req.params.id).catch(endpointApiError));
  });

  api.post('/endpoints', async (req, res) => {
    allow(res, 'manage_endpoints');
    const created = await deps.endpoints.create(session(res).workspace.id, req.body, actor(res)).catch(endpointApiError);
    res.status(201).json(presentWebhookEndpoint(created));
  });

  api.patch('/endpoints/:id', async (req, res) => {
    allow(res, 'manage_endpoints');
    res.json(presentWebhookEndpoint(await deps.endpoints.update(session(res).workspace.id, req.params.id, req.body, actor(res)).catch(endpointApiError)));
  });

  api.delete('/endpoints/:id', async (req, res) => {
    allow(res, 'manage_endpoints');
    await deps.endpoints.delete(session(res).workspace.id, req.params.id, actor(res)).catch(endpointApiError);
    res.status(204).end();
  });

  api.post('/endpoints/:id/test', async (req, res) => {
    allow(res, 'manage_endpoints');
    const type = ((req.body ?? {}) as Record<string, unknown>).type;
    const { type: sent, outcome } = await deps.endpoints.sendTest(session(res).workspace.id, req.params.id, type).catch(endpointApiError);
    if (!outcome)
      throw new ApiError(504, 'api_error', 'No dispatcher sent the test event in time. Is the webhook-dispatcher running?', null, 'test_callback_timeout');
    const result: EndpointTestResult = { type: sent, ...outcome };
    res.json(result);
  });

  // --- relay listeners (media-callbacks listen) ------------------------------------------------
  // Every role reads them, as it reads the endpoints: each is named by its key's id and prefix, never the key.
  api.get('/relay-listeners', async (_req, res) => {
    res.json(await relayListeners.list(session(res).workspace.id));
  });

  // --- members --------------------------------------------------------------------------------
  api.get('/members', async (_req, res) => {
    res.json(await accounts.members(session(res).workspace.id));
  });

  api.post('/members', async (req, res) => {
    allow(res, 'manage_members');
    const body = (req.body ?? {}) as Record<string, unknown>;
    if (!isRole(body.role)) throw ApiError.invalid('role must be owner, admin or member.', 'role', 'invalid_value');
    // A JSON body may hold anything there: only a string is an address to check.
    if (typeof body.email !== 'string') throw ApiError.invalid('email must be an e-mail address.', 'email', 'invalid_value');
    const created = await accounts.addMember(session(res).workspace.id, body.email, body.role, actor(res)).catch(toApiError);
    res.status(201).json(created);
  });

  api.patch('/members/:email', async (req, res) => {
    allow(res, 'manage_members');
    const role = ((req.body ?? {}) as Record<string, unknown>).role;
    if (!isRole(role)) throw ApiError.invalid('role must be owner, admin or member.', 'role', 'invalid_value');
    res.json(await accounts.setRole(session(res).workspace.id, req.params.email, role, actor(res)).catch(toApiError));
  });

  api.delete('/members/:email', async (req, res) => {
    allow(res, 'manage_members');
    await accounts.removeMember(session(res).workspace.id, req.params.email, actor(res)).catch(toApiError);
    res.status(204).end();
  });

  api.use((req) => {
    throw ApiError.notFound(`Unknown route ${req.method} /dashboard/api${req.path}.`);
  });
  return api;
}

function keyRow(key: ApiKeyInfo): ApiKeyRow {
  return { id: key.id, prefix: key.prefix, created_at: seconds(key.created_ms), last_used_at: secondsOrNull(key.last_used_ms) };
}

function asymmetricState(keys: PublicSigningKey[], role: Role): AsymmetricSigningState {
  return {
    public_keys: keys.map((k) => ({
      public_key: k.public_key,
      created_at: seconds(k.created_ms),
      expires_at: k.expires_ms === 0 ? null : seconds(k.expires_ms),
    })),
    can_manage: can(role, 'rotate_secret'),
  };
}

function revealed(secrets: SecretsView): RevealedSecrets {
  return {
    current: secrets.current.secret,
    previous: secrets.previous?.secret ?? null,
    previous_expires_at: secrets.previous ? seconds(secrets.previous.expires_ms) : null,
  };
}

/** The accounts' and callbacks' refusals in the API's error shape; anything else goes on to the error handler. */
function toApiError(err: unknown): never {
  if (err instanceof InvalidCredentialsError) throw new ApiError(401, 'authentication_error', err.message, null, 'invalid_credentials');
  if (err instanceof SignInThrottledError) throw ApiError.rateLimited(err.message, 'sign_in_rate_limited', err.retryAfterSeconds);
  if (err instanceof InvalidAccountInputError) throw ApiError.invalid(err.message, err.param, 'invalid_value');
  if (err instanceof MemberExistsError) throw new ApiError(409, 'conflict_error', err.message, 'email', 'member_exists');
  if (err instanceof LastOwnerError) throw new ApiError(409, 'conflict_error', err.message, null, 'last_owner');
  if (err instanceof AsymmetricSigningOffError) throw new ApiError(409, 'conflict_error', err.message, null, 'asymmetric_signing_off');
  if (err instanceof MemberNotFoundError || err instanceof ApiKeyNotFoundError || err instanceof WorkspaceNotFoundError) throw ApiError.notFound(err.message);
  if (err instanceof CallbackNotFoundError) throw ApiError.notFound(`No callback found with id '${err.messageId}'.`);
  if (err instanceof RecoveryTooLargeError)
    throw ApiError.invalid(`Too many failed callbacks to retry at once: ${err.message}.`, 'destination', 'recovery_too_large');
  if (err instanceof AccountsError) throw ApiError.invalid(err.message);
  throw err;
}

/** An endpoint's fields from a request body, read as the API reads them (its 400s included). */
/** One cookie's value from a `Cookie` header; no parser dependency for one name. */
export function readCookie(header: string | undefined, name: string): string | undefined {
  for (const part of (header ?? '').split(';')) {
    const eq = part.indexOf('=');
    if (eq > 0 && part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim() || undefined;
  }
  return undefined;
}

/** The Requests page's filters a recovery honours, from a query string or a JSON body. */
function recoveryFilters(source: Record<string, unknown>): RecoveryFilters {
  const text = (value: unknown) => (typeof value === 'number' ? String(value) : value);
  const filters: RecoveryFilters = {
    destination: origin(source.destination, 'destination', true),
    kind: oneOf<JobKind>(source.kind, ['image', 'video'], 'kind'),
    created_after: unixSeconds(text(source.created_after), 'created_after'),
    created_before: unixSeconds(text(source.created_before), 'created_before'),
  };
  if (filters.created_after !== undefined && filters.created_before !== undefined && filters.created_after >= filters.created_before)
    throw ApiError.invalid('created_before must be later than created_after.', 'created_before', 'invalid_value');
  for (const key of Object.keys(filters) as (keyof RecoveryFilters)[]) if (filters[key] === undefined) delete filters[key];
  return filters;
}

/** A time as the public API takes one: integer Unix seconds. */
function unixSeconds(value: unknown, param: string): number | undefined {
  const text = optionalString(value, param);
  if (text === undefined) return undefined;
  if (!/^\d{1,11}$/.test(text)) throw ApiError.invalid(`${param} must be a time in integer Unix seconds.`, param, 'invalid_value');
  return Number(text);
}

const milliseconds = (unix: number | undefined) => (unix === undefined ? undefined : unix * 1000);

function optionalString(value: unknown, param: string): string | undefined {
  if (value === undefined || value === '') return undefined;
  if (typeof value !== 'string' || value.length > 200) throw ApiError.invalid(`${param} must be a short string.`, param, 'invalid_value');
  return value;
}

function oneOf<T extends string>(value: unknown, allowed: readonly T[], param: string): T | undefined {
  const text = optionalString(value, param);
  if (text === undefined) return undefined;
  if (!(allowed as readonly string[]).includes(text)) throw ApiError.invalid(`${param} must be one of: ${allowed.join(', ')}.`, param, 'invalid_value');
  return text as T;
}

function integer(value: unknown, param: string, min: number, max: number, fallback: number): number {
  const text = optionalString(value, param);
  if (text === undefined) return fallback;
  if (!/^\d{1,6}$/.test(text) || Number(text) < min || Number(text) > max)
    throw ApiError.invalid(`${param} must be an integer from ${min} to ${max}.`, param, 'invalid_value');
  return Number(text);
}

/** A destination as the dashboard names one: an origin (`https://host:port`; a default port may be left out). */
function origin(value: unknown, param: string, optional = false): string | undefined {
  const text = optionalString(value, param);
  if (text === undefined) {
    if (optional) return undefined;
    throw ApiError.invalid(`${param} is required: an origin such as https://hooks.example.com:443.`, param, 'invalid_value');
  }
  let url: URL | undefined;
  try {
    url = new URL(text);
  } catch {
    url = undefined;
  }
  if (
    !url ||
    !['https:', 'http:'].includes(url.protocol) ||
    url.pathname !== '/' ||
    url.search ||
    url.hash ||
    url.username ||
    url.password ||
    text.endsWith('/')
  )
    throw ApiError.invalid(`${param} must be an origin such as https://hooks.example.com:443.`, param, 'invalid_value');
  return destinationOf(text).origin;
}
