import express, { type Express, type RequestHandler } from 'express';
import type { Redis } from 'ioredis';
import { pingRedis, type Logger } from '@media/common';
import { traceRequests } from './http/tracing';
import type { WorkspaceAccounts, WorkspaceRepository } from '@media/accounts';
import type { CallbackAdmin, CallbackRepository, DestinationGate, RelayDirectory, TestCallbacks, WebhookEndpoints } from '@media/callbacks';
import { dashboardRouter } from '@media/dashboard';
import type { JobPresenter, LinkSigner } from '@media/domain';
import type { BlobStore } from '@media/blob-store';
import type { JobRepository, LimitRepository } from '@media/jobs';
import type { OverviewRepository } from '@media/storage';
import { ApiError } from './http/api-error';
import { errorHandler, requestContext, requireApiKey, requireRedis, transportSecurity } from './http/middleware';
import { FailedAuthThrottle } from './http/auth-throttle';
import { requestBodies } from './http/bodies';
import { minimumBodyRate } from './http/body-rate';
import { CapLog } from './http/connection-guard';
import { dashboardRateLimits, rateLimits } from './http/rate-limit';
import type { JobIntakeService } from './job-intake';
import type { JobWaiter } from './job-waiter';
import { OPENAPI_PATH } from './openapi/document';
import { auditEventRoutes } from './routes/audit-events';
import { callbackRoutes } from './routes/callbacks';
import { fileRoutes } from './routes/files';
import { imageRoutes } from './routes/images';
import { modelRoutes } from './routes/models';
import { videoRoutes } from './routes/videos';
import { webhookEndpointRoutes } from './routes/webhook-endpoints';
import { webhookKeyRoutes } from './routes/webhook-keys';

export interface GatewayDeps {
  redis: Redis;
  logger: Logger;
  workspaces: WorkspaceRepository;
  jobs: JobRepository;
  /** Callback records: a deleted video's callback goes with it. */
  callbacks: CallbackRepository;
  limits: LimitRepository;
  blobs: BlobStore;
  links: LinkSigner;
  presenter: JobPresenter;
  intake: JobIntakeService;
  waiter: JobWaiter;
  callbackAdmin: CallbackAdmin;
  accounts: WorkspaceAccounts;
  testCallbacks: TestCallbacks;
  /** The workspace's webhook endpoints (API and dashboard). */
  endpoints: WebhookEndpoints;
  /** How callback destinations are doing, for the dashboard. */
  destinations: Pick<DestinationGate, 'ofWorkspace'>;
  /** The aggregates the dashboard's Overview reads. */
  overview: Pick<OverviewRepository, 'read'>;
  /** The relay's directory, whose `media-callbacks listen` connections and relay URL the dashboard shows. */
  relays: Pick<RelayDirectory, 'listeners' | 'existingRelayUrl' | 'isRelayUrl'>;
  /** WEBHOOK_RETRY_SCHEDULE, which the Overview states. */
  retryScheduleMs: readonly number[];
  /** The public address is https: the dashboard's cookie is Secure, and every answer carries HSTS. */
  secureCookies: boolean;
  /** Express's `trust proxy` (TRUST_PROXY): which proxies' X-Forwarded-For names the client. */
  trustProxy: boolean | number | string[];
  /** OTEL_TRUST_INCOMING_TRACE_CONTEXT: an API call continues the caller's trace instead of only linking to it. */
  trustIncomingTraceContext: boolean;
  syncImageTimeoutMs: number;
  maxUploadBytes: number;
  maxUploadTotalBytes: number;
  maxJsonBytes: number;
  /** AUTH_FAILURES_PER_ADDRESS_PER_MINUTE: wrong or missing keys from one address before it is answered 429. */
  authFailuresPerAddressPerMinute: number;
  /** MAX_CONCURRENT_UPLOADS_PER_WORKSPACE: multipart uploads one workspace streams into this process at once. */
  maxConcurrentUploadsPerWorkspace: number;
  /** HTTP_MIN_BODY_BYTES_PER_SECOND: the slowest a request body may arrive once its first 10 s have passed; 0 for no floor. */
  minBodyBytesPerSecond: number;
  /** Answers `GET /v1/openapi.json`; made once per process (`staticJson`). */
  openApi: RequestHandler;
  /** `/readyz`: whether the store answers (on a Cluster, its slot's node); a PING of `redis` when not given. */
  storeAnswers?: () => Promise<boolean>;
}

/** How clients reach the gateway, which the transport headers of every answer depend on. */
export interface Transport {
  /** The public address (`PUBLIC_BASE_URL`) is https. */
  publicHttps: boolean;
  /** Express's `trust proxy` (TRUST_PROXY): which proxies' X-Forwarded-For and X-Forwarded-Proto count. */
  trustProxy: boolean | number | string[];
}

/**
 * What every variant of the gateway answers: transport headers, request ids, logs, liveness and
 * readiness, and the OpenAPI document, which needs no API key, no workspace and no Redis.
 */
function baseApp(logger: Logger, isReady: () => Promise<boolean>, openApi: RequestHandler, transport: Transport): Express {
  const app = express();
  app.disable('x-powered-by');
  app.set('trust proxy', transport.trustProxy);
  app.use(transportSecurity(transport.publicHttps));
  app.use(requestContext(logger));
  app.get('/healthz', (_req, res) => {
    res.json({ status: 'ok' });
  });
  app.get('/readyz', async (_req, res) => {
    const ok = await isReady();
    res.status(ok ? 200 : 503).json({ status: ok ? 'ready' : 'redis unreachable' });
  });
  app.get(OPENAPI_PATH, openApi);
  return app;
}

/**
 * The gateway until Redis has answered once (it holds the link-signing key every other part
 * needs): alive, not ready, and 503 for everything else, so that it can be started before Redis.
 */
export function createStartingApp(logger: Logger, openApi: RequestHandler, transport: Transport): Express {
  const app = baseApp(logger, async () => false, openApi, transport);
  app.use(() => {
    throw ApiError.unavailable();
  });
  app.use(errorHandler());
  return app;
}

/** The HTTP surface; every dependency comes in, so tests build it against a real Redis. */
export function createApp(deps: GatewayDeps): Express {
  const app = baseApp(deps.logger, deps.storeAnswers ?? (() => pingRedis(deps.redis)), deps.openApi, {
    publicHttps: deps.secureCookies,
    trustProxy: deps.trustProxy,
  });

  const capLog = new CapLog(deps.logger);
  app.use(minimumBodyRate(deps.minBodyBytesPerSecond, capLog));
  app.use('/v1', traceRequests({ trustIncoming: deps.trustIncomingTraceContext }));
  app.use('/v1/files', fileRoutes(deps.links, deps.blobs));
  app.use('/v1/webhook-keys', requireRedis(deps.redis), webhookKeyRoutes(deps.accounts));

  const v1 = express.Router();
  v1.use(requireRedis(deps.redis));
  v1.use(requireApiKey(deps.accounts, new FailedAuthThrottle(deps.limits, deps.authFailuresPerAddressPerMinute, deps.logger)));
  v1.use('/models', modelRoutes());
  const limits = rateLimits(deps.limits);
  const bodies = requestBodies(deps, capLog);
  v1.use('/images', imageRoutes({ ...deps, syncTimeoutMs: deps.syncImageTimeoutMs, rateLimits: limits, bodies }));
  v1.use('/videos', videoRoutes({ ...deps, rateLimits: limits, bodies }));
  v1.use('/callbacks', callbackRoutes({ ...deps, rateLimits: limits, bodies }));
  // The relay's WebSocket is taken by the server's upgrade handler; a plain GET is told what it needs.
  v1.get('/webhook-relay/listen', () => {
    throw new ApiError(
      426,
      'invalid_request_error',
      'This is a WebSocket: connect with `Upgrade: websocket`, as `media-callbacks listen` does.',
      null,
      'upgrade_required',
    );
  });
  v1.use('/webhook-endpoints', webhookEndpointRoutes({ endpoints: deps.endpoints, rateLimits: limits, bodies }));
  v1.use('/audit-events', auditEventRoutes({ audit: deps.accounts.audit, rateLimits: limits }));
  app.use('/v1', v1);
  // The dashboard: same origin as the API, its own session auth, and rate limits per member of its own.
  app.use('/dashboard', dashboardRouter({ ...deps, rateLimits: dashboardRateLimits(deps.limits), requireRedis: requireRedis(deps.redis) }));

  app.use((req) => {
    throw ApiError.notFound(`Unknown route ${req.method} ${req.path}.`);
  });
  app.use(errorHandler());
  return app;
}
