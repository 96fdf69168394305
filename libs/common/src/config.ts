import { isIP } from 'node:net';
import Joi from 'joi';
import { DEFAULT_RETRY_SCHEDULE, parseRetrySchedule, RetryScheduleError, type RetrySchedule } from '@media/domain';
import { CRASH_POINTS, type CrashPoint } from './faults';
import { LOG_FORMATS, type LogFormat } from './logger';

/**
 * Every setting of every service, validated once at start-up. Only this module reads the
 * environment; services receive the typed {@link AppConfig} through their constructors.
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
  /** The retry ladder's gaps, before attempts 2..6 (see `@media/domain`'s retry-ladder). */
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

const list = (text: string): string[] =>
  text
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s.length > 0);

const csv = Joi.string().allow('').default('');

/** `host:port`, `[v6]:port`; undefined when it is neither. */
function parseNode(text: string): { host: string; port: number } | undefined {
  const match = /^(?:\[([0-9A-Fa-f:.]+)\]|([A-Za-z0-9.-]+)):(\d{1,5})$/.exec(text);
  if (!match) return undefined;
  const port = Number(match[3]);
  if (port < 1 || port > 65_535) return undefined;
  return { host: match[1] ?? match[2]!, port };
}

/** A model id on either side of `UPSTREAM_MODEL_MAP`: OpenAI's (`gpt-image-1`), or a self-hosted server's (`org/model:tag`). */
const MODEL_ID = /^[A-Za-z0-9][A-Za-z0-9._:/@+-]*$/;

/**
 * `pixel-1=gpt-image-1,motion-1=sora-2` → a map; the problems as text when it is not that shape.
 * A Map, since the keys are operator text and must never reach an object's prototype.
 */
export function parseModelMap(text: string): ReadonlyMap<string, string> | string {
  const map = new Map<string, string>();
  for (const entry of list(text)) {
    const [ours, theirs, ...rest] = entry.split('=').map((side) => side.trim());
    if (rest.length > 0 || !ours || !theirs || !MODEL_ID.test(ours) || !MODEL_ID.test(theirs)) return `has an entry that is not ours=theirs: ${entry}`;
    if (map.has(ours)) return `maps ${ours} twice`;
    map.set(ours, theirs);
  }
  return map;
}

/** `a.b.c.d:port` or `[v6]:port`, comma-separated: addresses, never names, which could resolve anywhere. */
const endpointList = Joi.string()
  .custom((value: string, helpers) => {
    const bad = list(value).filter((entry) => {
      const node = parseNode(entry);
      return node === undefined || isIP(node.host) === 0 || (isIP(node.host) === 6) !== entry.startsWith('[');
    });
    return bad.length === 0 ? value : helpers.message({ custom: `{{#label}} has entries that are not ip:port or [ipv6]:port: ${bad.join(', ')}` });
  })
  .allow('')
  .default('');

/** `host:port` seeds, comma-separated. */
const nodeList = Joi.string().custom((value: string, helpers) => {
  const bad = list(value).filter((node) => parseNode(node) === undefined);
  if (list(value).length === 0) return helpers.message({ custom: '{{#label}} must list host:port seeds, comma-separated' });
  return bad.length === 0 ? value : helpers.message({ custom: `{{#label}} has entries that are not host:port: ${bad.join(', ')}` });
});

// Millisecond settings become Node timers, which take at most 2^31 - 1 ms (24.8 days) and fire at
// once beyond that: each has a maximum well inside it, so a typo is refused at start-up.
const HOUR_MS = 3_600_000;
const DAY_MS = 24 * HOUR_MS;

/** `address/prefix`, IPv4 or IPv6, as the callback guard takes them (`127.0.0.0/8`, `::1/128`). */
function isCidr(text: string): boolean {
  const match = /^([^/]+)\/(\d{1,3})$/.exec(text);
  const family = match ? isIP(match[1]!) : 0;
  return family !== 0 && Number(match![2]) <= (family === 4 ? 32 : 128);
}

const cidrList = Joi.string()
  .custom((value: string, helpers) => {
    const bad = list(value).filter((entry) => !isCidr(entry));
    return bad.length === 0
      ? value
      : helpers.message({ custom: `{{#label}} has entries that are not address/prefix (127.0.0.0/8, ::1/128): ${bad.join(', ')}` });
  })
  .allow('')
  .default('');

/** A DNS name (`ops.media.svc`, `localhost`): letters, digits and hyphens between dots; no port, no address range. */
const HOST_NAME = /^(?=.{1,253}\.?$)[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*\.?$/;

const hostNameList = Joi.string()
  .custom((value: string, helpers) => {
    const bad = list(value).filter((entry) => !HOST_NAME.test(entry));
    return bad.length === 0 ? value : helpers.message({ custom: `{{#label}} has entries that are not host names (no port, no scheme): ${bad.join(', ')}` });
  })
  .allow('')
  .default('');

/**
 * The placeholders `k8s/base` ships in its Secret: a deployment that forgot to replace one would
 * run with a value anyone who has read the repository knows.
 */
const notThePlaceholder = (placeholder: string) =>
  Joi.string().invalid(placeholder).messages({ 'any.invalid': "{{#label}} is k8s/base's placeholder: replace it with a secret of your own" });

/** DOCS_URL's default: fine on a laptop, but a production receiver would be pointed at nobody's documentation. */
const DOCS_URL_PLACEHOLDER = 'https://docs.example.com';

const docsUrl = Joi.string()
  .uri({ scheme: ['http', 'https'] })
  .default(DOCS_URL_PLACEHOLDER)
  .when('NODE_ENV', {
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
  });

const schema = Joi.object({
  REDIS_URL: Joi.string()
    .uri({ scheme: ['redis', 'rediss'] })
    .default('redis://127.0.0.1:6379'),
  REDIS_CLUSTER_NODES: nodeList,
  REDIS_SENTINELS: nodeList,
  REDIS_SENTINEL_NAME: Joi.string()
    .pattern(/^[A-Za-z0-9_.-]+$/)
    .when('REDIS_SENTINELS', { is: Joi.exist(), then: Joi.required(), otherwise: Joi.forbidden() })
    .messages({ 'any.required': '{{#label}} must name the primary the Sentinels monitor', 'any.unknown': '{{#label}} is only read with REDIS_SENTINELS' }),
  REDIS_USERNAME: Joi.string(),
  REDIS_PASSWORD: Joi.string(),
  REDIS_SENTINEL_PASSWORD: Joi.string(),
  REDIS_TLS: Joi.boolean().truthy('1').falsy('0').default(false),
  REDIS_TLS_CA_FILE: Joi.string(),
  REDIS_WAIT_REPLICAS: Joi.number().integer().min(0).max(16).default(0),
  REDIS_WAIT_TIMEOUT_MS: Joi.number().integer().min(10).max(60_000).default(1_000),
  // Letters, digits, _ . - and at most one `{…}` hash tag (Redis Cluster: every key then shares its slot).
  KEY_PREFIX: Joi.string()
    .pattern(/^[A-Za-z0-9_.-]*(\{[A-Za-z0-9_.-]+\}[A-Za-z0-9_.-]*)?$/)
    .message('{{#label}} may hold letters, digits, _ . - and one hash tag (a name in curly braces)')
    .default('media'),
  PORT: Joi.number().port().default(8080),
  PUBLIC_BASE_URL: Joi.string()
    .uri({ scheme: ['http', 'https'] })
    .default('http://localhost:8080'),
  // `production` (the Docker image sets it) refuses the development defaults that must not reach a receiver.
  NODE_ENV: Joi.string(),
  DOCS_URL: docsUrl,
  LINK_TTL_SECONDS: Joi.number().integer().min(60).default(86_400),
  LINK_SIGNING_SECRET: notThePlaceholder('replace-me-with-32-or-more-random-characters').min(32),
  MEDIA_DIR: Joi.string().default('var/media'),
  BLOB_STORE: Joi.string().valid('fs', 's3').default('fs'),
  S3_BUCKET: Joi.string()
    .pattern(/^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/)
    .when('BLOB_STORE', { is: 's3', then: Joi.required() }),
  S3_REGION: Joi.string().pattern(/^[a-z0-9-]+$/),
  S3_ENDPOINT: Joi.string().uri({ scheme: ['http', 'https'] }),
  S3_FORCE_PATH_STYLE: Joi.boolean().truthy('1').falsy('0').default(false),
  GENERATOR_BACKEND: Joi.string().valid('procedural', 'openai-compatible').default('procedural'),
  UPSTREAM_BASE_URL: Joi.string()
    .uri({ scheme: ['http', 'https'] })
    .custom((value: string, helpers) => {
      // The key belongs in UPSTREAM_API_KEY, which is never logged; a URL is (in errors, in start-up lines).
      const url = URL.canParse(value) ? new URL(value) : undefined;
      return url && (url.username || url.password) ? helpers.message({ custom: '{{#label}} must not carry credentials; set UPSTREAM_API_KEY' }) : value;
    })
    .when('GENERATOR_BACKEND', { is: 'openai-compatible', then: Joi.required() }),
  // Joi quotes a failing value in its messages; this one's must never name the key itself.
  UPSTREAM_API_KEY: Joi.string()
    .pattern(/^[\x21-\x7e]+$/)
    .message('{{#label}} must be printable ASCII without spaces')
    .when('GENERATOR_BACKEND', { is: 'openai-compatible', then: Joi.required() }),
  UPSTREAM_MODEL_MAP: Joi.string()
    .custom((value: string, helpers) => {
      const parsed = parseModelMap(value);
      return typeof parsed === 'string' ? helpers.message({ custom: `{{#label}} ${parsed}` }) : value;
    })
    .allow('')
    .default(''),
  // No floor beyond a second: tests and soak runs use seconds. Links never outlive their media (they
  // are cut at `expires_at`), so a period shorter than LINK_TTL_SECONDS plus the callback ladder
  // gives callbacks links shorter than the spec's 24 hours; the README says so.
  MEDIA_RETENTION_SECONDS: Joi.number()
    .integer()
    .min(1)
    .default(7 * 86_400),
  CALLBACK_RETENTION_SECONDS: Joi.number()
    .integer()
    .min(1)
    .default(7 * 86_400),
  RETENTION_SWEEP_INTERVAL_SECONDS: Joi.number().integer().min(1).max(86_400).default(60),
  WEBHOOK_TIMEOUT_MS: Joi.number().integer().min(100).max(60_000).default(15_000),
  WEBHOOK_RETRY_SCHEDULE: Joi.string()
    .custom((value: string, helpers) => {
      try {
        parseRetrySchedule(value);
      } catch (err) {
        if (!(err instanceof RetryScheduleError)) throw err;
        return helpers.message({ custom: `{{#label}} ${err.message}` });
      }
      return value;
    })
    .default(DEFAULT_RETRY_SCHEDULE),
  SECRET_ROTATION_OVERLAP_SECONDS: Joi.number().integer().min(0).default(86_400),
  CALLBACK_ALLOW_HTTP: Joi.boolean().truthy('1').falsy('0').default(false),
  CALLBACK_ALLOWED_CIDRS: cidrList,
  CALLBACK_ALLOWED_ENDPOINTS: endpointList,
  CALLBACK_CA_FILE: Joi.string(),
  LOG_LEVEL: Joi.string().valid('error', 'warn', 'info', 'debug').default('info'),
  // No default here: whether it was set decides what `npm start` gives its services.
  LOG_FORMAT: Joi.string().valid(...LOG_FORMATS),
  GENERATOR_CONCURRENCY: Joi.number().integer().min(1).max(64).default(2),
  // Attempts are I/O: a process holds hundreds of them in flight at little cost (README, "Isolation").
  DISPATCHER_CONCURRENCY: Joi.number().integer().min(1).max(5000).default(500),
  CALLBACK_DESTINATION_MAX_IN_FLIGHT: Joi.number().integer().min(1).max(10_000).default(100),
  CALLBACK_DESTINATION_SLOW_MAX_IN_FLIGHT: Joi.number().integer().min(1).max(10_000).default(20),
  GENERATION_TIMEOUT_MS: Joi.number().integer().min(1_000).max(DAY_MS).default(300_000),
  GENERATION_ATTEMPTS: Joi.number().integer().min(1).max(10).default(3),
  // BullMQ writes its stalled-job check's key with this as its expiry and renews locks every half of
  // it: a lock of hours would leave jobs of a killed worker unrecovered for as long, on every worker.
  JOB_LOCK_MS: Joi.number().integer().min(1_000).max(600_000).default(10_000),
  SYNC_IMAGE_TIMEOUT_MS: Joi.number().integer().min(1_000).max(600_000).default(120_000),
  MODERATION_BLOCKLIST: csv,
  MAX_UPLOAD_BYTES: Joi.number()
    .integer()
    .min(1_024)
    .default(20 * 1024 * 1024),
  MAX_UPLOAD_TOTAL_BYTES: Joi.number()
    .integer()
    .min(1_024)
    .default(64 * 1024 * 1024),
  MAX_JSON_BYTES: Joi.number()
    .integer()
    .min(1_024)
    .default(32 * 1024 * 1024),
  IDEMPOTENCY_TTL_SECONDS: Joi.number().integer().min(60).default(86_400),
  SHUTDOWN_TIMEOUT_MS: Joi.number().integer().min(1_000).max(HOUR_MS).default(30_000),
  FFMPEG_PATH: Joi.string(),
  RATE_LIMIT_CREATE_PER_MINUTE: Joi.number().integer().min(1).default(300),
  RATE_LIMIT_READ_PER_MINUTE: Joi.number().integer().min(1).default(1_200),
  MAX_WAITING_JOBS_PER_WORKSPACE: Joi.number().integer().min(1).default(1_000),
  AUTH_FAILURES_PER_ADDRESS_PER_MINUTE: Joi.number().integer().min(1).default(100),
  HTTP_MAX_CONNECTIONS: Joi.number().integer().min(1).default(10_000),
  HTTP_MAX_CONNECTIONS_PER_ADDRESS: Joi.number().integer().min(1).default(256),
  HTTP_HEADERS_TIMEOUT_MS: Joi.number().integer().min(1_000).max(120_000).default(10_000),
  HTTP_MIN_BODY_BYTES_PER_SECOND: Joi.number().integer().min(0).default(16_384),
  MAX_CONCURRENT_UPLOADS_PER_WORKSPACE: Joi.number().integer().min(1).default(8),
  TRUST_PROXY: Joi.string()
    .pattern(/^(\d+|[0-9A-Fa-f:./,\s]+)$/)
    .allow('')
    .default(''),
  FAULT_CRASH_POINTS: Joi.string()
    .custom((value: string, helpers) => {
      const unknown = list(value).filter((p) => !CRASH_POINTS.includes(p as CrashPoint));
      return unknown.length === 0 ? value : helpers.message({ custom: `{{#label}} has unknown crash points: ${unknown.join(', ')}` });
    })
    .allow('')
    .default(''),
  OPS_PORT: Joi.number().port().default(9464),
  OPS_HOST: Joi.string()
    .ip({ cidr: 'forbidden' })
    .messages({
      'string.ip': '{{#label}} must be an IP address to listen on (127.0.0.1, 0.0.0.0, ::), not a host name',
      'string.ipVersion': '{{#label}} must be an IP address to listen on (127.0.0.1, 0.0.0.0, ::), not a host name',
    })
    .default('127.0.0.1'),
  // IP addresses and localhost are always accepted (the kubelet and Prometheus use the pod's address).
  OPS_ALLOWED_HOSTS: hostNameList,
  WORKER_LIVENESS_BOUND_MS: Joi.number().integer().min(1_000).max(DAY_MS).default(120_000),
  LOCAL_STACK_DIR: Joi.string().default('var'),
  LOCAL_RECEIVER: Joi.string().valid('on', 'off').default('on'),
  LOCAL_RECEIVER_PORT: Joi.number().port().default(9443),
  OPERATOR_USERNAME: Joi.string()
    .pattern(/^[^:]+$/)
    .default('operator'),
  // Long enough that Basic auth over the ops port is not guessable in practice.
  OPERATOR_PASSWORD: notThePlaceholder('replace-me-with-a-long-operator-password').min(16),
  // Base64 of 32 random bytes each (`openssl rand -base64 32`), newest first.
  SECRETS_ENCRYPTION_KEYS: Joi.string().custom((value: string, helpers) =>
    list(value).every((k) => /^[A-Za-z0-9+/]{43}=$/.test(k))
      ? value
      : helpers.message({ custom: '{{#label}} must list base64 keys of 32 bytes each (openssl rand -base64 32)' }),
  ),
  // http://host:port of a forward proxy that takes CONNECT; credentials in it would be logged, so none.
  CALLBACK_EGRESS_PROXY: Joi.string()
    .uri({ scheme: ['http'] })
    .pattern(/^http:\/\/[^/@]+:\d+\/?$/)
    .messages({ 'string.pattern.base': '{{#label}} must be http://host:port (a forward proxy taking CONNECT; no credentials, no path)' }),
  // The OpenTelemetry SDK reads the other standard OTEL_* variables itself; this one turns tracing on.
  OTEL_EXPORTER_OTLP_ENDPOINT: Joi.string().uri({ scheme: ['http', 'https'] }),
  // The standard variable, read here because the trace SDK's batch processor no longer reads it.
  OTEL_BSP_SCHEDULE_DELAY: Joi.number().integer().min(1).max(600_000).default(5_000),
  // Only behind a proxy that sets or strips traceparent/tracestate itself: a client could otherwise
  // choose its jobs' trace id, turn their sampling off and put its tracestate into every span.
  OTEL_TRUST_INCOMING_TRACE_CONTEXT: Joi.boolean().truthy('1').falsy('0').default(false),
})
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
export const CONFIG_KEYS: readonly string[] = Object.keys(schema.describe().keys);

export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`invalid configuration:\n  - ${problems.join('\n  - ')}`);
    this.name = 'ConfigError';
  }
}

/** The Redis keys of the validated environment: REDIS_URL has a default; the schema requires REDIS_SENTINEL_NAME with REDIS_SENTINELS. */
interface RedisSettings {
  REDIS_URL: string;
  REDIS_SENTINELS?: string;
  REDIS_SENTINEL_NAME?: string;
  REDIS_CLUSTER_NODES?: string;
  REDIS_USERNAME?: string;
  REDIS_PASSWORD?: string;
  REDIS_SENTINEL_PASSWORD?: string;
  REDIS_TLS?: boolean;
  REDIS_TLS_CA_FILE?: string;
}

function redisTarget(value: RedisSettings): RedisTarget {
  const nodes = (text: string) => list(text).map((node) => parseNode(node)!);
  const auth: RedisAuth = { username: value.REDIS_USERNAME, password: value.REDIS_PASSWORD, sentinelPassword: value.REDIS_SENTINEL_PASSWORD };
  const tls = redisTlsOn(value) ? { tls: { caFile: value.REDIS_TLS_CA_FILE } } : {};
  if (value.REDIS_SENTINELS) return { kind: 'sentinel', sentinels: nodes(value.REDIS_SENTINELS), name: value.REDIS_SENTINEL_NAME!, auth, ...tls };
  if (value.REDIS_CLUSTER_NODES) return { kind: 'cluster', nodes: nodes(value.REDIS_CLUSTER_NODES), auth, ...tls };
  const separate = value.REDIS_USERNAME || value.REDIS_PASSWORD ? { auth: { username: value.REDIS_USERNAME, password: value.REDIS_PASSWORD } } : {};
  return { kind: 'single', url: value.REDIS_URL, ...separate, ...tls };
}

/** Validates the environment once; throws a {@link ConfigError} listing every bad key. */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): AppConfig {
  const known: Record<string, string> = {};
  for (const key of CONFIG_KEYS) {
    const value = env[key];
    if (value !== undefined && value !== '') known[key] = value;
  }
  const { value, error } = schema.validate(known, { abortEarly: false, convert: true });
  if (error) throw new ConfigError(error.details.map((d) => d.message));
  return {
    redis: redisTarget(value),
    keyPrefix: value.KEY_PREFIX,
    port: value.PORT,
    publicBaseUrl: value.PUBLIC_BASE_URL.replace(/\/+$/, ''),
    docsUrl: value.DOCS_URL.replace(/\/+$/, ''),
    linkTtlSeconds: value.LINK_TTL_SECONDS,
    linkSigningSecret: value.LINK_SIGNING_SECRET,
    mediaDir: value.MEDIA_DIR,
    blobStore:
      value.BLOB_STORE === 's3'
        ? { kind: 's3', bucket: value.S3_BUCKET, region: value.S3_REGION, endpoint: value.S3_ENDPOINT, forcePathStyle: value.S3_FORCE_PATH_STYLE }
        : { kind: 'fs', dir: value.MEDIA_DIR },
    generatorBackend:
      value.GENERATOR_BACKEND === 'openai-compatible'
        ? {
            kind: 'openai-compatible',
            baseUrl: value.UPSTREAM_BASE_URL.replace(/\/+$/, ''),
            apiKey: value.UPSTREAM_API_KEY,
            modelMap: parseModelMap(value.UPSTREAM_MODEL_MAP) as ReadonlyMap<string, string>,
          }
        : { kind: 'procedural' },
    mediaRetentionSeconds: value.MEDIA_RETENTION_SECONDS,
    callbackRetentionSeconds: value.CALLBACK_RETENTION_SECONDS,
    retentionSweepIntervalMs: value.RETENTION_SWEEP_INTERVAL_SECONDS * 1_000,
    webhookTimeoutMs: value.WEBHOOK_TIMEOUT_MS,
    webhookRetryScheduleMs: parseRetrySchedule(value.WEBHOOK_RETRY_SCHEDULE),
    secretRotationOverlapSeconds: value.SECRET_ROTATION_OVERLAP_SECONDS,
    callbackAllowHttp: value.CALLBACK_ALLOW_HTTP,
    callbackAllowedCidrs: list(value.CALLBACK_ALLOWED_CIDRS),
    callbackAllowedEndpoints: list(value.CALLBACK_ALLOWED_ENDPOINTS),
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
    moderationBlocklist: list(value.MODERATION_BLOCKLIST).map((w) => w.toLowerCase()),
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
    faultCrashPoints: list(value.FAULT_CRASH_POINTS) as CrashPoint[],
    trustProxy: value.TRUST_PROXY === '' ? false : /^\d+$/.test(value.TRUST_PROXY) ? Number(value.TRUST_PROXY) : list(value.TRUST_PROXY),
    opsPort: value.OPS_PORT,
    opsHost: value.OPS_HOST,
    // A trailing dot names the same host (`localhost.`); Host headers are compared without it.
    opsAllowedHosts: list(value.OPS_ALLOWED_HOSTS).map((h) => h.toLowerCase().replace(/\.$/, '')),
    workerLivenessBoundMs: value.WORKER_LIVENESS_BOUND_MS,
    redisWaitReplicas: value.REDIS_WAIT_REPLICAS,
    redisWaitTimeoutMs: value.REDIS_WAIT_TIMEOUT_MS,
    localStack: { dir: value.LOCAL_STACK_DIR, receiver: value.LOCAL_RECEIVER === 'on', receiverPort: value.LOCAL_RECEIVER_PORT },
    operatorUsername: value.OPERATOR_USERNAME,
    operatorPassword: value.OPERATOR_PASSWORD,
    callbackEgressProxy: value.CALLBACK_EGRESS_PROXY,
    secretsEncryptionKeys: value.SECRETS_ENCRYPTION_KEYS ? list(value.SECRETS_ENCRYPTION_KEYS).map((k) => Buffer.from(k, 'base64')) : [],
    tracing: {
      endpoint: value.OTEL_EXPORTER_OTLP_ENDPOINT,
      scheduleDelayMs: value.OTEL_BSP_SCHEDULE_DELAY,
      trustIncomingContext: value.OTEL_TRUST_INCOMING_TRACE_CONTEXT,
    },
  };
}
