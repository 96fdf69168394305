import Joi from 'joi';
import type { RetrySchedule } from '@media/domain';
import type { CrashPoint } from './faults';
import type { LogFormat } from './logger';
import { splitList } from './setting-kinds';
import { DOCS_URL_PLACEHOLDER, SETTING_NAMES, SETTINGS, settingValues, type SettingName, type SettingValues } from './settings';

export { parseModelMap } from './settings';

/**
 * Every setting of every service, validated once at start-up. Only this module reads the
 * environment; services receive the typed {@link AppConfig} through their constructors. Each
 * variable is declared once, in settings.ts; this module adds the rules between variables and
 * maps their values onto this shape.
 */
export interface AppConfig {
  /**
   * One Redis (`REDIS_URL`), a primary found through Sentinels (`REDIS_SENTINELS`), or a Redis Cluster
   * (`REDIS_CLUSTER_NODES`); with either of the last two, `REDIS_URL` is not used.
   */
  redis: RedisTarget;
  /**
   * Namespace for every Redis key and BullMQ queue, so several deployments (or tests) share one
   * Redis. It may carry a `{…}` hash tag, which then puts every key in one cluster slot (see keyspace.ts).
   */
  keyPrefix: string;
  port: number;
  publicBaseUrl: string;
  docsUrl: string;
  linkTtlSeconds: number;
  /** Optional fixed key for download-link HMACs; when unset one is created once in Redis and shared. */
  linkSigningSecret: string | undefined;
  mediaDir: string;
  /** Where media bytes live: files under `mediaDir`, or an S3-compatible bucket. */
  blobStore: BlobStoreSettings;
  /** What makes the images and videos: the built-in procedural renderer, or a model server. */
  generatorBackend: GeneratorBackendSettings;
  /** How long a finished job's record and media are kept (its `expires_at`). */
  mediaRetentionSeconds: number;
  /** How long an ended callback (delivered or failed) and its attempt log are kept after its last attempt. */
  callbackRetentionSeconds: number;
  /** How often the retention sweep (a BullMQ job scheduler on the `maintenance` queue) runs. */
  retentionSweepIntervalMs: number;
  webhookTimeoutMs: number;
  /** The retry ladder's gaps, before attempts 2..6 (the ladder's shape in `@media/domain`'s callbacks.ts). */
  webhookRetryScheduleMs: RetrySchedule;
  secretRotationOverlapSeconds: number;
  callbackAllowHttp: boolean;
  callbackAllowedCidrs: string[];
  /**
   * Address and port pairs (`127.0.0.1:9443`, `[::1]:9443`) exempted from the private-address block:
   * one receiver, not a network. `npm start` sets its local receiver's here.
   */
  callbackAllowedEndpoints: string[];
  callbackCaFile: string | undefined;
  logLevel: string;
  /**
   * `json` (one object per line) or `pretty` (one short human line per event); unset, the services
   * write JSON, and `npm start` gives them `pretty` when its own output is a terminal.
   */
  logFormat: LogFormat | undefined;
  generatorConcurrency: number;
  dispatcherConcurrency: number;
  /** Attempts in flight to one callback destination (origin) across every dispatcher. */
  destinationMaxInFlight: number;
  /** The same cap while the destination is in the slow lane (its recent attempts timed out or were slow). */
  destinationSlowMaxInFlight: number;
  generationTimeoutMs: number;
  generationAttempts: number;
  /** BullMQ lock; a killed worker's job is picked up again after roughly this long. */
  jobLockMs: number;
  syncImageTimeoutMs: number;
  moderationBlocklist: string[];
  maxUploadBytes: number;
  /** All file parts of one multipart request together (they are streamed to temp files, not held in memory). */
  maxUploadTotalBytes: number;
  maxJsonBytes: number;
  idempotencyTtlSeconds: number;
  shutdownTimeoutMs: number;
  ffmpegPath: string | undefined;
  /** Per-workspace defaults; the admin CLI's `set-limits` overrides them for one workspace. */
  rateLimitCreatePerMinute: number;
  rateLimitReadPerMinute: number;
  maxWaitingJobsPerWorkspace: number;
  /** Failed API-key authentications one client address may make per minute before it is answered 429 for the rest of the window. */
  authFailuresPerAddressPerMinute: number;
  /** The gateway's public listener: connections at once in all, and from one client address (a trusted proxy's excepted). */
  httpMaxConnections: number;
  httpMaxConnectionsPerAddress: number;
  /** How long a connection may take to send a request's headers (from its first byte, or from the connection's start). */
  httpHeadersTimeoutMs: number;
  /** The slowest a request body may arrive, on average, once its first 10 s have passed. */
  httpMinBodyBytesPerSecond: number;
  /** Multipart uploads one workspace may stream into one gateway process at once. */
  maxConcurrentUploadsPerWorkspace: number;
  /**
   * Replicas that must confirm a job's acceptance, and a job's finish and charge, before a client or
   * a receiver is told (Redis WAIT), and how long to wait for them; 0 waits for none.
   */
  redisWaitReplicas: number;
  redisWaitTimeoutMs: number;
  /** Test-only crash points (see faults.ts); empty in production. */
  faultCrashPoints: CrashPoint[];
  /** Operations port: /healthz, /readyz, /metrics (and Bull Board on the gateway). */
  opsPort: number;
  /**
   * The address the operations port listens on: loopback unless the deployment needs more (in
   * Kubernetes the kubelet's probes and Prometheus reach the pod's address, so the manifests set 0.0.0.0).
   */
  opsHost: string;
  /**
   * Host names a request to the operations port may name in its `Host` header, lower-cased, besides
   * IP addresses and `localhost`, which are always accepted: any other name is refused, so a page
   * that points a name of its own at this address (DNS rebinding) cannot read `/metrics` or the board.
   */
  opsAllowedHosts: string[];
  /**
   * How long a worker may sit idle while work has waited longer than this, or stay disconnected
   * from Redis, before its liveness probe fails and Kubernetes restarts it.
   */
  workerLivenessBoundMs: number;
  /** `npm start` only (tools/admin/src/local-stack.ts); no service reads it. */
  localStack: LocalStackSettings;
  /** HTTP Basic credentials for Bull Board; without a password the board is not mounted at all. */
  operatorUsername: string;
  operatorPassword: string | undefined;
  /** Key-encryption keys for secrets at rest (`SECRETS_ENCRYPTION_KEYS`), newest first; none: secrets are stored as they are. */
  secretsEncryptionKeys: Buffer[];
  /** The HTTP CONNECT proxy every callback is tunnelled through (`CALLBACK_EGRESS_PROXY`); none when unset. */
  callbackEgressProxy: string | undefined;
  /**
   * Traces: the OTLP/HTTP endpoint (`OTEL_EXPORTER_OTLP_ENDPOINT`; off without one), how often spans
   * are sent, and whether an API call continues the caller's `traceparent`/`tracestate`
   * (`OTEL_TRUST_INCOMING_TRACE_CONTEXT`; by default it starts a trace of its own, linked to the caller's).
   */
  tracing: { endpoint: string | undefined; scheduleDelayMs: number; trustIncomingContext: boolean };
  /**
   * Express's `trust proxy`: false (default), a hop count, or the proxies' addresses/CIDRs. Behind an
   * Ingress it must be set, or every client shares the Ingress's address (the dashboard's sign-in
   * limit per address would then lock everyone out).
   */
  trustProxy: boolean | number | string[];
}

/**
 * The blob store's settings. S3 credentials are not among them: the AWS SDK's default chain finds
 * them (`AWS_ACCESS_KEY_ID`/`AWS_SECRET_ACCESS_KEY`, a profile, or a workload role).
 */
export type BlobStoreSettings =
  { kind: 'fs'; dir: string } | { kind: 's3'; bucket: string; region: string | undefined; endpoint: string | undefined; forcePathStyle: boolean };

/**
 * The generator backend. `openai-compatible` forwards each job to a server speaking OpenAI's Images
 * and Videos APIs (OpenAI itself, or a self-hosted one).
 */
export type GeneratorBackendSettings =
  | { kind: 'procedural' }
  | {
      kind: 'openai-compatible';
      /** The API's base, version included (`https://api.openai.com/v1`); no trailing slash. */
      baseUrl: string;
      /** Sent as `Authorization: Bearer …`; never logged. */
      apiKey: string;
      /** Our model id → the server's; a model not in it is sent under its own id. */
      modelMap: ReadonlyMap<string, string>;
    };

/**
 * What `npm start` keeps beside the services it starts: its state directory (demo workspace, the
 * local receiver's certificates, a redis-server's data) and the port of the local HTTPS receiver
 * that the first callbacks go to.
 */
export interface LocalStackSettings {
  /** Relative paths are taken from the repository root. */
  dir: string;
  /**
   * Whether `npm start` runs its local HTTPS receiver and exempts its one address and port. Off: no
   * receiver and no exemption, so callbacks need a public https URL as in production.
   */
  receiver: boolean;
  /** 0 lets the system pick a free port (the launcher prints the one it got). */
  receiverPort: number;
}

export type RedisTarget =
  /**
   * Credentials in the URL (`redis://user:password@host:port`) or in `auth` (REDIS_USERNAME,
   * REDIS_PASSWORD: a Secret may hold the password while the address stays in a ConfigMap), never
   * both; `rediss://` is TLS.
   */
  (
    | { kind: 'single'; url: string; auth?: RedisAuth }
    /** Seed nodes; the client learns the rest of the cluster from them. */
    | { kind: 'cluster'; nodes: { host: string; port: number }[]; auth: RedisAuth }
    /** The Sentinels watching the primary called `name`; the client asks them where it is, and again after a failover. */
    | { kind: 'sentinel'; sentinels: { host: string; port: number }[]; name: string; auth: RedisAuth }
  ) & {
    /** TLS to every node (and Sentinel); absent: plain TCP. */
    tls?: RedisTls;
  };

/** How Redis's TLS certificates are checked: the system's roots, or the CAs of one PEM file. */
export interface RedisTls {
  caFile?: string;
}

/** Credentials for the Redis nodes (an ACL user, or the default user's password) and for the Sentinels. */
export interface RedisAuth {
  username?: string;
  password?: string;
  sentinelPassword?: string;
}

/** The rules between settings, added to the schemas the table declares: each setting's own checks are settings.ts's. */
const DEPENDS_ON_OTHERS: { readonly [K in SettingName]?: (schema: Joi.AnySchema) => Joi.AnySchema } = {
  REDIS_SENTINEL_NAME: (schema) =>
    schema
      .when('REDIS_SENTINELS', { is: Joi.exist(), then: Joi.required(), otherwise: Joi.forbidden() })
      .messages({ 'any.required': '{{#label}} must name the primary the Sentinels monitor', 'any.unknown': '{{#label}} is only read with REDIS_SENTINELS' }),
  DOCS_URL: (schema) =>
    schema.when('NODE_ENV', {
      is: 'production',
      then: Joi.required()
        .custom((value: string, helpers) =>
          URL.canParse(value) && new URL(value).hostname === new URL(DOCS_URL_PLACEHOLDER).hostname
            ? helpers.message({ custom: `{{#label}} is the placeholder ${DOCS_URL_PLACEHOLDER}: set it to your documentation site (NODE_ENV=production)` })
            : value,
        )
        .messages({
          'any.required': `{{#label}} must be set when NODE_ENV=production (its default is the placeholder ${DOCS_URL_PLACEHOLDER}): your documentation site, shown in the callback user-agent`,
        }),
    }),
  S3_BUCKET: (schema) => schema.when('BLOB_STORE', { is: 's3', then: Joi.required() }),
  UPSTREAM_BASE_URL: (schema) => schema.when('GENERATOR_BACKEND', { is: 'openai-compatible', then: Joi.required() }),
  UPSTREAM_API_KEY: (schema) => schema.when('GENERATOR_BACKEND', { is: 'openai-compatible', then: Joi.required() }),
};

const schema = Joi.object(Object.fromEntries(SETTING_NAMES.map((name) => [name, DEPENDS_ON_OTHERS[name]?.(SETTINGS[name].schema) ?? SETTINGS[name].schema])))
  // One shape of Redis at a time: a second one set by mistake would be silently ignored.
  .oxor('REDIS_SENTINELS', 'REDIS_CLUSTER_NODES')
  .messages({ 'object.oxor': 'set REDIS_SENTINELS or REDIS_CLUSTER_NODES, not both' })
  // WAIT counts one connection's writes on one node; a Cluster client spreads a job's writes over
  // connections it picks itself, so there is nothing there for WAIT to count yet.
  .custom((value: Record<string, unknown>, helpers) =>
    value.REDIS_CLUSTER_NODES && Number(value.REDIS_WAIT_REPLICAS) > 0
      ? helpers.message({ custom: 'REDIS_WAIT_REPLICAS is not supported with REDIS_CLUSTER_NODES' })
      : value,
  )
  // With one REDIS_URL, credentials in it and beside it would leave one set unused: which one the
  // operator meant is not for us to guess.
  .custom((value: Record<string, unknown>, helpers) =>
    !value.REDIS_SENTINELS && !value.REDIS_CLUSTER_NODES && (value.REDIS_USERNAME || value.REDIS_PASSWORD) && urlHasCredentials(value.REDIS_URL)
      ? helpers.message({
          custom:
            'REDIS_URL carries credentials and REDIS_USERNAME or REDIS_PASSWORD is set too: keep one of them (the password in a Secret as REDIS_PASSWORD, and REDIS_URL without it)',
        })
      : value,
  )
  // A CA file for a connection that is not TLS would be ignored, and the operator would believe the
  // certificates were checked against it.
  .custom((value: Record<string, unknown>, helpers) =>
    value.REDIS_TLS_CA_FILE && !redisTlsOn(value)
      ? helpers.message({ custom: 'REDIS_TLS_CA_FILE is only read with TLS: set REDIS_TLS=true or a rediss:// REDIS_URL' })
      : value,
  );

/** A `redis://user:password@…` URL: its credentials are the ones used, whatever else is set. */
function urlHasCredentials(url: unknown): boolean {
  return typeof url === 'string' && URL.canParse(url) && (new URL(url).username !== '' || new URL(url).password !== '');
}

/** TLS is on with REDIS_TLS, and for one Redis also with a `rediss://` URL. */
function redisTlsOn(value: Partial<Record<'REDIS_TLS' | 'REDIS_URL' | 'REDIS_SENTINELS' | 'REDIS_CLUSTER_NODES', unknown>>): boolean {
  const single = !value.REDIS_SENTINELS && !value.REDIS_CLUSTER_NODES;
  return value.REDIS_TLS === true || value.REDIS_TLS === 'true' || (single && /^rediss:/i.test(String(value.REDIS_URL ?? '')));
}

/** Names of the settings, for the README and for docker-compose/k8s checks. */
export const CONFIG_KEYS: readonly string[] = SETTING_NAMES;

export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`invalid configuration:\n  - ${problems.join('\n  - ')}`);
    this.name = 'ConfigError';
  }
}

/** The settings a {@link RedisTarget} is made of. */
type RedisSettings = Pick<
  SettingValues,
  | 'REDIS_URL'
  | 'REDIS_SENTINELS'
  | 'REDIS_SENTINEL_NAME'
  | 'REDIS_CLUSTER_NODES'
  | 'REDIS_USERNAME'
  | 'REDIS_PASSWORD'
  | 'REDIS_SENTINEL_PASSWORD'
  | 'REDIS_TLS'
  | 'REDIS_TLS_CA_FILE'
>;

function redisTarget(value: RedisSettings): RedisTarget {
  const auth: RedisAuth = { username: value.REDIS_USERNAME, password: value.REDIS_PASSWORD, sentinelPassword: value.REDIS_SENTINEL_PASSWORD };
  const tls = redisTlsOn(value) ? { tls: { caFile: value.REDIS_TLS_CA_FILE } } : {};
  // The schema requires REDIS_SENTINEL_NAME with REDIS_SENTINELS.
  if (value.REDIS_SENTINELS) return { kind: 'sentinel', sentinels: value.REDIS_SENTINELS, name: value.REDIS_SENTINEL_NAME!, auth, ...tls };
  if (value.REDIS_CLUSTER_NODES) return { kind: 'cluster', nodes: value.REDIS_CLUSTER_NODES, auth, ...tls };
  const separate = value.REDIS_USERNAME || value.REDIS_PASSWORD ? { auth: { username: value.REDIS_USERNAME, password: value.REDIS_PASSWORD } } : {};
  return { kind: 'single', url: value.REDIS_URL, ...separate, ...tls };
}

/** The typed settings of the environment; throws a {@link ConfigError} listing every bad key. */
function readSettings(env: NodeJS.ProcessEnv): SettingValues {
  const known: Record<string, string> = {};
  for (const key of SETTING_NAMES) {
    const value = env[key];
    if (value !== undefined && value !== '') known[key] = value;
  }
  const { value, error } = schema.validate(known, { abortEarly: false, convert: true });
  if (error) throw new ConfigError(error.details.map((d) => d.message));
  return settingValues(value);
}

/** Validates the environment once; throws a {@link ConfigError} listing every bad key. */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): AppConfig {
  const value = readSettings(env);
  return {
    redis: redisTarget(value),
    keyPrefix: value.KEY_PREFIX,
    port: value.PORT,
    publicBaseUrl: value.PUBLIC_BASE_URL.replace(/\/+$/, ''),
    docsUrl: value.DOCS_URL.replace(/\/+$/, ''),
    linkTtlSeconds: value.LINK_TTL_SECONDS,
    linkSigningSecret: value.LINK_SIGNING_SECRET,
    mediaDir: value.MEDIA_DIR,
    // The schema requires S3_BUCKET with BLOB_STORE=s3, and the upstream's address and key with GENERATOR_BACKEND=openai-compatible.
    blobStore:
      value.BLOB_STORE === 's3'
        ? { kind: 's3', bucket: value.S3_BUCKET!, region: value.S3_REGION, endpoint: value.S3_ENDPOINT, forcePathStyle: value.S3_FORCE_PATH_STYLE }
        : { kind: 'fs', dir: value.MEDIA_DIR },
    generatorBackend:
      value.GENERATOR_BACKEND === 'openai-compatible'
        ? {
            kind: 'openai-compatible',
            baseUrl: value.UPSTREAM_BASE_URL!.replace(/\/+$/, ''),
            apiKey: value.UPSTREAM_API_KEY!,
            modelMap: value.UPSTREAM_MODEL_MAP,
          }
        : { kind: 'procedural' },
    mediaRetentionSeconds: value.MEDIA_RETENTION_SECONDS,
    callbackRetentionSeconds: value.CALLBACK_RETENTION_SECONDS,
    retentionSweepIntervalMs: value.RETENTION_SWEEP_INTERVAL_SECONDS * 1_000,
    webhookTimeoutMs: value.WEBHOOK_TIMEOUT_MS,
    webhookRetryScheduleMs: value.WEBHOOK_RETRY_SCHEDULE,
    secretRotationOverlapSeconds: value.SECRET_ROTATION_OVERLAP_SECONDS,
    callbackAllowHttp: value.CALLBACK_ALLOW_HTTP,
    callbackAllowedCidrs: value.CALLBACK_ALLOWED_CIDRS,
    callbackAllowedEndpoints: value.CALLBACK_ALLOWED_ENDPOINTS,
    callbackCaFile: value.CALLBACK_CA_FILE,
    logLevel: value.LOG_LEVEL,
    logFormat: value.LOG_FORMAT,
    generatorConcurrency: value.GENERATOR_CONCURRENCY,
    dispatcherConcurrency: value.DISPATCHER_CONCURRENCY,
    destinationMaxInFlight: value.CALLBACK_DESTINATION_MAX_IN_FLIGHT,
    destinationSlowMaxInFlight: value.CALLBACK_DESTINATION_SLOW_MAX_IN_FLIGHT,
    generationTimeoutMs: value.GENERATION_TIMEOUT_MS,
    generationAttempts: value.GENERATION_ATTEMPTS,
    jobLockMs: value.JOB_LOCK_MS,
    syncImageTimeoutMs: value.SYNC_IMAGE_TIMEOUT_MS,
    moderationBlocklist: value.MODERATION_BLOCKLIST.map((w) => w.toLowerCase()),
    maxUploadBytes: value.MAX_UPLOAD_BYTES,
    maxUploadTotalBytes: value.MAX_UPLOAD_TOTAL_BYTES,
    maxJsonBytes: value.MAX_JSON_BYTES,
    idempotencyTtlSeconds: value.IDEMPOTENCY_TTL_SECONDS,
    shutdownTimeoutMs: value.SHUTDOWN_TIMEOUT_MS,
    ffmpegPath: value.FFMPEG_PATH,
    rateLimitCreatePerMinute: value.RATE_LIMIT_CREATE_PER_MINUTE,
    rateLimitReadPerMinute: value.RATE_LIMIT_READ_PER_MINUTE,
    maxWaitingJobsPerWorkspace: value.MAX_WAITING_JOBS_PER_WORKSPACE,
    authFailuresPerAddressPerMinute: value.AUTH_FAILURES_PER_ADDRESS_PER_MINUTE,
    httpMaxConnections: value.HTTP_MAX_CONNECTIONS,
    httpMaxConnectionsPerAddress: value.HTTP_MAX_CONNECTIONS_PER_ADDRESS,
    httpHeadersTimeoutMs: value.HTTP_HEADERS_TIMEOUT_MS,
    httpMinBodyBytesPerSecond: value.HTTP_MIN_BODY_BYTES_PER_SECOND,
    maxConcurrentUploadsPerWorkspace: value.MAX_CONCURRENT_UPLOADS_PER_WORKSPACE,
    faultCrashPoints: value.FAULT_CRASH_POINTS,
    trustProxy: value.TRUST_PROXY === '' ? false : /^\d+$/.test(value.TRUST_PROXY) ? Number(value.TRUST_PROXY) : splitList(value.TRUST_PROXY),
    opsPort: value.OPS_PORT,
    opsHost: value.OPS_HOST,
    // A trailing dot names the same host (`localhost.`); Host headers are compared without it.
    opsAllowedHosts: value.OPS_ALLOWED_HOSTS.map((h) => h.toLowerCase().replace(/\.$/, '')),
    workerLivenessBoundMs: value.WORKER_LIVENESS_BOUND_MS,
    redisWaitReplicas: value.REDIS_WAIT_REPLICAS,
    redisWaitTimeoutMs: value.REDIS_WAIT_TIMEOUT_MS,
    localStack: { dir: value.LOCAL_STACK_DIR, receiver: value.LOCAL_RECEIVER === 'on', receiverPort: value.LOCAL_RECEIVER_PORT },
    operatorUsername: value.OPERATOR_USERNAME,
    operatorPassword: value.OPERATOR_PASSWORD,
    callbackEgressProxy: value.CALLBACK_EGRESS_PROXY,
    secretsEncryptionKeys: value.SECRETS_ENCRYPTION_KEYS.map((k) => Buffer.from(k, 'base64')),
    tracing: {
      endpoint: value.OTEL_EXPORTER_OTLP_ENDPOINT,
      scheduleDelayMs: value.OTEL_BSP_SCHEDULE_DELAY,
      trustIncomingContext: value.OTEL_TRUST_INCOMING_TRACE_CONTEXT,
    },
  };
}
