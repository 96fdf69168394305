// Every setting, declared once: its environment variable, default, checks, typed value, the
// `AppConfig` field it fills, what the docs say of it and which processes read it. config.ts
// validates the environment against this table (adding the rules between settings), takes the
// fields that one setting fills from it (`fills`, see setting-kinds.ts) and makes the composite ones
// (the Redis target, the blob store…) itself; docs/configuration.md's settings table is written from
// it (`npm run docs:config`).
//
// A new setting is one entry below: its builder (setting-kinds.ts), default, checks, description
// and readers, and `fills: { someField: true }` for the `AppConfig` field it becomes (a function
// instead of `true` when the value is reshaped). Then `npm run docs:config`, and .env.example.
import { isIP } from 'node:net';
import { DEFAULT_RETRY_SCHEDULE, parseRetrySchedule, RetryScheduleError } from '@media/domain';
import Joi from 'joi';
import { CRASH_POINTS, type CrashPoint } from './faults';
import { LOG_FORMATS } from './logger';
import {
  bool,
  fieldEntries,
  type FieldsOf,
  int,
  list,
  nodes,
  oneOf,
  parsed,
  parseNode,
  port,
  READERS,
  Refusal,
  splitList,
  str,
  TABLE_HEADER,
  tableRow,
  type ValueOf,
} from './setting-kinds';

// Millisecond settings become Node timers, which take at most 2^31 - 1 ms (24.8 days) and fire at
// once beyond that: each has a maximum well inside it, so a typo is refused at start-up.
const HOUR_MS = 3_600_000;
const DAY_MS = 24 * HOUR_MS;

/** DOCS_URL's default: fine on a laptop, but a production receiver would be pointed at nobody's documentation. */
export const DOCS_URL_PLACEHOLDER = 'https://docs.example.com';

/**
 * The placeholders `k8s/base` ships in its Secret: a deployment that forgot to replace one would
 * run with a value anyone who has read the repository knows.
 */
/** A duration setting's text: a whole number and a unit. */
const DURATION = /^(\d+)(ms|s|m|h|d)$/;
const DURATION_UNIT_MS: Record<string, number> = { ms: 1, s: 1_000, m: 60_000, h: HOUR_MS, d: DAY_MS };

const notThePlaceholder = (text: Joi.StringSchema, placeholder: string) =>
  text.invalid(placeholder).messages({ 'any.invalid': "{{#label}} is k8s/base's placeholder: replace it with a secret of your own" });

/** `address/prefix`, IPv4 or IPv6, as the callback guard takes them (`127.0.0.0/8`, `::1/128`). */
function isCidr(text: string): boolean {
  const match = /^([^/]+)\/(\d{1,3})$/.exec(text);
  const family = match ? isIP(match[1]!) : 0;
  return family !== 0 && Number(match![2]) <= (family === 4 ? 32 : 128);
}

/** `a.b.c.d:port` or `[v6]:port`: an address, never a name, which could resolve anywhere. */
function isEndpoint(text: string): boolean {
  const node = parseNode(text);
  return node !== undefined && isIP(node.host) !== 0 && (isIP(node.host) === 6) === text.startsWith('[');
}

/** A DNS name (`ops.media.svc`, `localhost`): letters, digits and hyphens between dots; no port, no address range. */
const HOST_NAME = /^(?=.{1,253}\.?$)[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*\.?$/;

/** A model id on either side of `UPSTREAM_MODEL_MAP`: OpenAI's (`gpt-image-1`), or a self-hosted server's (`org/model:tag`). */
const MODEL_ID = /^[A-Za-z0-9][A-Za-z0-9._:/@+-]*$/;

/**
 * `pixel-1=gpt-image-1,motion-1=sora-2` → a map; the problems as text when it is not that shape.
 * A Map, since the keys are operator text and must never reach an object's prototype.
 */
export function parseModelMap(text: string): ReadonlyMap<string, string> | string {
  const map = new Map<string, string>();
  for (const entry of splitList(text)) {
    const [ours, theirs, ...rest] = entry.split('=').map((side) => side.trim());
    if (rest.length > 0 || !ours || !theirs || !MODEL_ID.test(ours) || !MODEL_ID.test(theirs)) return `has an entry that is not ours=theirs: ${entry}`;
    if (map.has(ours)) return `maps ${ours} twice`;
    map.set(ours, theirs);
  }
  return map;
}

/**
 * The settings, in the order they are validated (and so in which their problems are listed) and
 * documented.
 */
export const SETTINGS = {
  REDIS_URL: str({
    default: 'redis://127.0.0.1:6379',
    check: (s) => s.uri({ scheme: ['redis', 'rediss'] }),
    readBy: READERS,
    description: 'Redis for the store and the queues (`redis://` or `rediss://`).',
  }),
  REDIS_CLUSTER_NODES: nodes({
    readBy: READERS,
    description:
      'Redis Cluster seeds, `host:port,host:port`; when set, store and queues run on the cluster and `REDIS_URL` is not used ([Redis Cluster](#redis-cluster)).',
  }),
  REDIS_SENTINELS: nodes({
    readBy: READERS,
    description:
      'Sentinel addresses, `host:port,host:port`; when set, store and queues connect to the primary the Sentinels name, follow it through a failover, and `REDIS_URL` is not used. Not with `REDIS_CLUSTER_NODES`.',
  }),
  REDIS_SENTINEL_NAME: str({
    check: (s) => s.pattern(/^[A-Za-z0-9_.-]+$/),
    readBy: READERS,
    description: 'The name the Sentinels monitor the primary under (`sentinel monitor <name> …`); required with `REDIS_SENTINELS`.',
  }),
  REDIS_USERNAME: str({
    readBy: READERS,
    description:
      'An ACL user for the Redis nodes: behind Sentinels, in a Cluster, or beside a `REDIS_URL` without credentials (a URL that carries them, `redis://user:password@host:6379`, and this setting together are refused: keep one).',
  }),
  REDIS_PASSWORD: str({
    readBy: READERS,
    description:
      "The password for the Redis nodes (the ACL user's, or the default user's alone), read as `REDIS_USERNAME` is: so the password can live in a Secret while `REDIS_URL`, an address, stays in a ConfigMap.",
  }),
  REDIS_SENTINEL_PASSWORD: str({ readBy: READERS, description: "The Sentinels' own password (`requirepass` in sentinel.conf), when they have one." }),
  REDIS_TLS: bool({
    default: false,
    readBy: READERS,
    description:
      "TLS to every Redis node, and to the Sentinels with `REDIS_SENTINELS`; certificates are checked (the system's CAs, or `REDIS_TLS_CA_FILE`). One Redis can say it with a `rediss://` `REDIS_URL` instead.",
  }),
  REDIS_TLS_CA_FILE: str({
    readBy: READERS,
    description: "A PEM file of the CAs that sign the Redis certificates (a managed Redis's or your own), instead of the system's; only read with TLS on.",
  }),
  REDIS_WAIT_REPLICAS: int({
    fills: { redisWaitReplicas: true },
    min: 0,
    max: 16,
    default: 0,
    readBy: ['gateway', 'generator'],
    description:
      "Replicas that must confirm a job's acceptance (before the 202 or 200) and a job's finish and charge (before its event is queued), with Redis `WAIT`. Replication stays asynchronous: this narrows what a failover can lose, it does not make Redis a consensus store. Not with `REDIS_CLUSTER_NODES`.",
  }),
  REDIS_WAIT_TIMEOUT_MS: int({
    fills: { redisWaitTimeoutMs: true },
    min: 10,
    max: 60_000,
    default: 1_000,
    readBy: ['gateway', 'generator'],
    description: 'How long a write waits for those replicas; one not confirmed in time goes ahead and counts in `media_redis_replica_wait_short_total`.',
  }),
  KEY_PREFIX: str({
    fills: { keyPrefix: true },
    default: 'media',
    // Letters, digits, _ . - and at most one `{…}` hash tag (Redis Cluster: every key then shares its slot).
    check: (s) =>
      s
        .pattern(/^[A-Za-z0-9_.-]*(\{[A-Za-z0-9_.-]+\}[A-Za-z0-9_.-]*)?$/)
        .message('{{#label}} may hold letters, digits, _ . - and one hash tag (a name in curly braces)'),
    readBy: READERS,
    description:
      'Namespace of every Redis key and BullMQ queue (`[A-Za-z0-9_.-]`, and at most one `{…}` hash tag, which puts every key in one cluster slot), so deployments and test runs can share one Redis.',
  }),
  PORT: port({ fills: { port: true }, default: 8080, readBy: ['gateway', 'npm start'], description: 'Gateway listening port.' }),
  PUBLIC_BASE_URL: str({
    fills: {
      /** Without a trailing slash, so that paths are appended to it. */
      publicBaseUrl: (url) => url.replace(/\/+$/, ''),
    },
    default: 'http://localhost:8080',
    check: (s) => s.uri({ scheme: ['http', 'https'] }),
    readBy: ['gateway', 'dispatcher', 'npm start'],
    description: 'Base of download links (use the public https address in production).',
  }),
  // `production` (the Docker image sets it) refuses the development defaults that must not reach a
  // receiver (config.ts's rules between settings): every process that loads the config reads it.
  NODE_ENV: str({
    note: '`production` in the Docker image',
    readBy: READERS,
    description: "`production` refuses the development defaults that must not reach production: `DOCS_URL`'s placeholder.",
  }),
  DOCS_URL: str({
    fills: {
      /** Without a trailing slash, so that paths are appended to it. */
      docsUrl: (url) => url.replace(/\/+$/, ''),
    },
    default: DOCS_URL_PLACEHOLDER,
    check: (s) => s.uri({ scheme: ['http', 'https'] }),
    note: 'a placeholder; required with `NODE_ENV=production`',
    readBy: ['gateway', 'dispatcher'],
    description:
      "Documentation site, used in the callback `user-agent` (`Service-Webhooks/1.0 (+DOCS_URL/webhooks)`). With `NODE_ENV=production` (the Docker image's, so docker compose and Kubernetes too) a service refuses to start while it is unset or names the placeholder's host `docs.example.com`: every receiver would be pointed at nobody's documentation. `k8s/base` sets it; docker compose takes it from your shell or `.env`.",
  }),
  LINK_TTL_SECONDS: int({
    fills: { linkTtlSeconds: true },
    min: 60,
    default: 86_400,
    readBy: ['gateway', 'generator', 'dispatcher'],
    description: 'Validity of download links, minted fresh on every GET and callback attempt (min 60).',
  }),
  LINK_SIGNING_SECRET: str({
    fills: { linkSigningSecret: true },
    check: (s) => notThePlaceholder(s, 'replace-me-with-32-or-more-random-characters').min(32),
    readBy: ['gateway', 'dispatcher', 'admin'],
    description:
      "Fixed key (≥ 32 characters) for download-link HMACs; `k8s/base`'s placeholder is refused. Unset: one is created once in Redis and shared by all services.",
  }),
  MEDIA_DIR: str({
    fills: { mediaDir: true },
    default: 'var/media',
    readBy: ['gateway', 'generator', 'npm start'],
    description:
      'Directory of the filesystem blob store (relative to the working directory; `npm start` uses `<repo>/var/media`). Must be shared by gateway and generator. Not used with `BLOB_STORE=s3`.',
  }),
  BLOB_STORE: oneOf(['fs', 's3'], {
    default: 'fs',
    readBy: ['gateway', 'generator'],
    description:
      'Where media lives: `fs` (files under `MEDIA_DIR`) or `s3` (an S3-compatible bucket, settings below). See [Media storage](#media-storage-blob-store).',
  }),
  S3_BUCKET: str({
    check: (s) => s.pattern(/^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/),
    readBy: ['gateway', 'generator'],
    description: 'Bucket of the S3 store; required with `BLOB_STORE=s3`. It must exist; objects go at its root under keys like `ws_…/video_…/video.mp4`.',
  }),
  S3_REGION: str({
    check: (s) => s.pattern(/^[a-z0-9-]+$/),
    readBy: ['gateway', 'generator'],
    description: "Region of the bucket. Unset: the AWS SDK's own chain (`AWS_REGION`, the profile), or `us-east-1` when `S3_ENDPOINT` is set.",
  }),
  S3_ENDPOINT: str({
    check: (s) => s.uri({ scheme: ['http', 'https'] }),
    readBy: ['gateway', 'generator'],
    description: 'URL of an S3-compatible server (MinIO, Ceph RGW, R2, …), e.g. `http://minio:9000`. Unset: AWS S3.',
  }),
  S3_FORCE_PATH_STYLE: bool({
    default: false,
    readBy: ['gateway', 'generator'],
    description: '`true`: address the bucket in the path (`http://endpoint/bucket/key`) rather than the host name, as most self-hosted servers need.',
  }),
  GENERATOR_BACKEND: oneOf(['procedural', 'openai-compatible'], {
    default: 'procedural',
    readBy: ['generator'],
    description:
      "What makes images and videos: `procedural` (the built-in renderer, no model) or `openai-compatible` (a model server speaking OpenAI's Images and Videos APIs). See [Generator backends](#generator-backends).",
  }),
  UPSTREAM_BASE_URL: str({
    check: (s) =>
      s.uri({ scheme: ['http', 'https'] }).custom((value: string, helpers) => {
        // The key belongs in UPSTREAM_API_KEY, which is never logged; a URL is (in errors, in start-up lines).
        const url = URL.canParse(value) ? new URL(value) : undefined;
        return url && (url.username || url.password) ? helpers.message({ custom: '{{#label}} must not carry credentials; set UPSTREAM_API_KEY' }) : value;
      }),
    readBy: ['generator'],
    description:
      "Base of the model server's API, version included: `https://api.openai.com/v1`, `http://models.internal:8000/v1`. http(s), no credentials in it; required with `openai-compatible`.",
  }),
  UPSTREAM_API_KEY: str({
    // Joi quotes a failing value in its messages; this one's must never name the key itself.
    check: (s) => s.pattern(/^[\x21-\x7e]+$/).message('{{#label}} must be printable ASCII without spaces'),
    readBy: ['generator'],
    description:
      "Sent as `Authorization: Bearer …` to the model server (not to the links it answers with); required with `openai-compatible` (any value for a server that checks none). Never logged, never in a job's error. Keep it in a Secret.",
  }),
  UPSTREAM_MODEL_MAP: parsed({
    default: '',
    parse: (text) => {
      const map = parseModelMap(text);
      return typeof map === 'string' ? new Refusal(map) : map;
    },
    readBy: ['generator'],
    description:
      "Our model ids to the server's, `ours=theirs` comma-separated, e.g. `pixel-1=gpt-image-1,motion-1=sora-2`. A model not in it is sent under its own id; an id on the left that is not in the catalog stops the generator at start-up.",
  }),
  // No floor beyond a second: tests and soak runs use seconds. Links never outlive their media (they
  // are cut at `expires_at`), so a period shorter than LINK_TTL_SECONDS plus the callback ladder
  // gives callbacks links shorter than the spec's 24 hours; the docs say so.
  MEDIA_RETENTION_SECONDS: int({
    fills: { mediaRetentionSeconds: true },
    min: 1,
    default: 7 * 86_400,
    note: '7 days',
    readBy: ['gateway', 'generator'],
    description:
      "How long a finished job's record and media are kept (min 1). Stamped on the job when it ends, shown as the video's `expires_at`; download links never outlive it. Keep it above `LINK_TTL_SECONDS` plus the callback ladder (about 11 h) so every callback carries 24 h links. See [Retention](#retention).",
  }),
  CALLBACK_RETENTION_SECONDS: int({
    fills: { callbackRetentionSeconds: true },
    min: 1,
    default: 7 * 86_400,
    note: '7 days',
    readBy: ['generator'],
    description: 'How long an ended callback (delivered or failed) and its attempt log are kept after its last attempt (min 1).',
  }),
  RETENTION_SWEEP_INTERVAL_SECONDS: int({
    fills: {
      /** In milliseconds, as BullMQ's job scheduler takes it. */
      retentionSweepIntervalMs: (seconds) => seconds * 1_000,
    },
    min: 1,
    max: 86_400,
    default: 60,
    readBy: ['generator'],
    description: 'How often the retention sweep runs (1–86400): a BullMQ job scheduler on the `maintenance` queue, taken by one generator replica at a time.',
  }),
  WEBHOOK_TIMEOUT_MS: int({
    fills: { webhookTimeoutMs: true },
    min: 100,
    max: 60_000,
    default: 15_000,
    readBy: ['gateway', 'dispatcher', 'admin'],
    description: 'Time a receiver has to answer a callback, for the whole exchange (100–60000).',
  }),
  WEBHOOK_RETRY_SCHEDULE: parsed({
    fills: { webhookRetryScheduleMs: true },
    default: DEFAULT_RETRY_SCHEDULE,
    parse: (text) => {
      try {
        return parseRetrySchedule(text);
      } catch (err) {
        if (!(err instanceof RetryScheduleError)) throw err;
        return new Refusal(err.message);
      }
    },
    readBy: ['gateway', 'dispatcher'],
    description:
      'Exactly five gaps: before attempts 2–6, each counted from the end of the failed attempt, each at most `24h`. Units `ms`, `s`, `m`, `h`; e.g. `1s,2s,3s,4s,5s` runs the whole ladder in seconds (tests, demos).',
  }),
  SECRET_ROTATION_OVERLAP_SECONDS: int({
    fills: { secretRotationOverlapSeconds: true },
    min: 0,
    default: 86_400,
    readBy: ['gateway', 'admin'],
    description: 'How long a rotated-out signing secret keeps signing beside the new one.',
  }),
  WEBHOOK_ENDPOINT_DISABLE_AFTER: parsed({
    fills: { endpointDisableAfterMs: true },
    default: '5d',
    parse: (text) => {
      const match = DURATION.exec(text.trim());
      const ms = match ? Number(match[1]) * DURATION_UNIT_MS[match[2]!]! : NaN;
      if (!(ms >= 1_000 && ms <= 365 * DAY_MS))
        return new Refusal('must be a duration from 1s to 365d: a whole number and a unit (ms, s, m, h, d), e.g. 5d or 12h');
      return ms;
    },
    readBy: ['dispatcher'],
    description:
      'How long every attempt to a webhook endpoint may fail, with none delivered, before the endpoint is disabled (its callbacks already made finish their ladders; enabling it again is one click or one API call): 5 days by default, as Svix does. A whole number and a unit: `ms`, `s`, `m`, `h`, `d`.',
  }),
  AUDIT_RETENTION_SECONDS: int({
    fills: { auditRetentionSeconds: true },
    min: 60,
    default: 7_776_000,
    readBy: ['gateway', 'dispatcher', 'admin'],
    description: "How long a workspace's audit events (who changed its endpoints, API keys, signing secrets and members) are kept: 90 days by default.",
  }),
  CALLBACK_ALLOW_HTTP: bool({
    fills: { callbackAllowHttp: true },
    default: false,
    readBy: ['gateway', 'dispatcher'],
    description: 'Accept `http://` callback URLs. Local development and tests only.',
  }),
  CALLBACK_ALLOWED_CIDRS: list({
    fills: { callbackAllowedCidrs: true },
    entry: isCidr,
    problem: 'has entries that are not address/prefix (127.0.0.0/8, ::1/128)',
    readBy: ['gateway', 'dispatcher'],
    description:
      'CIDRs exempted from the private-address block, e.g. `127.0.0.0/8,::1/128` (each `address/prefix`; anything else stops the process). Development and tests only; logged loudly when set.',
  }),
  CALLBACK_ALLOWED_ENDPOINTS: list({
    fills: { callbackAllowedEndpoints: true },
    entry: isEndpoint,
    problem: 'has entries that are not ip:port or [ipv6]:port',
    readBy: ['gateway', 'dispatcher', 'npm start'],
    description:
      "Address and port pairs exempted from the private-address block, e.g. `127.0.0.1:9443,[::1]:9443`: a callback URL passes when its port (443 when it names none) is the pair's and its address (the literal, or every address its name resolves to, checked on every attempt) is exactly the pair's; the same address on another port, or its IPv4-mapped form, stays refused. Development and tests only; logged loudly when set. `npm start` sets its local receiver's.",
  }),
  CALLBACK_CA_FILE: str({
    fills: { callbackCaFile: true },
    readBy: ['dispatcher', 'npm start'],
    description: 'Extra trusted CA bundle (PEM file) for callback TLS.',
  }),
  LOG_LEVEL: oneOf(['error', 'warn', 'info', 'debug'], {
    fills: {
      /** A winston level, as `createLogger` takes it. */
      logLevel: (level): string => level,
    },
    default: 'info',
    readBy: ['gateway', 'generator', 'dispatcher'],
    description: '`error`, `warn`, `info` or `debug`. Logs are lines on stdout (`LOG_FORMAT`); secrets are redacted.',
  }),
  // No default here: whether it was set decides what `npm start` gives its services.
  LOG_FORMAT: oneOf(LOG_FORMATS, {
    fills: { logFormat: true },
    shown: '`json`',
    note: '`pretty` under `npm start` in a terminal',
    readBy: ['gateway', 'generator', 'dispatcher', 'npm start'],
    description:
      '`json`: one JSON object per line, for production and for whatever reads the logs. `pretty`: one short line per event for a person, `HH:MM:SS level service message` and the key fields (`method`, `path`, `job_id`, `message_id`, `status`, `duration`, `error`), the level coloured when stdout is a terminal. `npm start` gives its services `pretty` when its own output is a terminal and this is unset, `json` when it is a pipe or a file.',
  }),
  GENERATOR_CONCURRENCY: int({
    fills: { generatorConcurrency: true },
    min: 1,
    max: 64,
    default: 2,
    readBy: ['generator'],
    description:
      "Jobs one generator process runs at once (1–64). Each job's video encoder and image operations get an equal share of the CPUs the process may use (in a container, its CPU limit), one thread at least.",
  }),
  // Attempts are I/O: a process holds hundreds of them in flight at little cost (README, "Isolation").
  DISPATCHER_CONCURRENCY: int({
    fills: { dispatcherConcurrency: true },
    min: 1,
    max: 5000,
    default: 500,
    readBy: ['dispatcher'],
    description:
      'Callback attempts one dispatcher process runs at once, per queue (1–5000); see [Isolation](callbacks.md#isolation-one-receiver-cannot-hold-up-the-others).',
  }),
  // The gateway reads both caps too: the dashboard shows a destination's slots against them.
  CALLBACK_DESTINATION_MAX_IN_FLIGHT: int({
    fills: { destinationMaxInFlight: true },
    min: 1,
    max: 10_000,
    default: 100,
    readBy: ['gateway', 'dispatcher'],
    description: 'Attempts in flight to one destination (receiver origin) at once, over every dispatcher.',
  }),
  CALLBACK_DESTINATION_SLOW_MAX_IN_FLIGHT: int({
    fills: { destinationSlowMaxInFlight: true },
    min: 1,
    max: 10_000,
    default: 20,
    readBy: ['gateway', 'dispatcher'],
    description: 'The same cap for a destination in the slow lane (an attempt timed out or took over half of `WEBHOOK_TIMEOUT_MS` in the last minute).',
  }),
  GENERATION_TIMEOUT_MS: int({
    fills: { generationTimeoutMs: true },
    min: 1_000,
    max: DAY_MS,
    default: 300_000,
    readBy: ['generator'],
    description: 'Longest one generation attempt may take (1000 to 86400000, a day); then it counts as failed.',
  }),
  // The generator's intake repair queues jobs again with the same retries as the gateway.
  GENERATION_ATTEMPTS: int({
    fills: { generationAttempts: true },
    min: 1,
    max: 10,
    default: 3,
    readBy: ['gateway', 'generator'],
    description: 'Tries per job for transient generator errors before it ends `generation_failed` (1–10). Set on the job when it is queued.',
  }),
  // BullMQ writes its stalled-job check's key with this as its expiry and renews locks every half of
  // it: a lock of hours would leave jobs of a killed worker unrecovered for as long, on every worker.
  JOB_LOCK_MS: int({
    fills: { jobLockMs: true },
    min: 1_000,
    max: 600_000,
    default: 10_000,
    readBy: ['generator', 'dispatcher'],
    description:
      "BullMQ lock of a running job, renewed every half of it; a killed worker's job is picked up again after roughly this long plus half of it (1000 to 600000). Shorter recovers faster after a crash, but a worker whose event loop stalls longer than this (a starved CPU) loses its job to another worker, which then does the same work twice (never charged or called back twice: completion and attempts are recorded once). It is also how long a worker's claim on the due retries it is promoting keeps other workers off them: a worker that dies mid-promotion leaves them to the others after this long.",
  }),
  SYNC_IMAGE_TIMEOUT_MS: int({
    fills: { syncImageTimeoutMs: true },
    min: 1_000,
    max: 600_000,
    default: 120_000,
    readBy: ['gateway'],
    description: 'How long a synchronous image call waits before answering `504 timeout` (1000 to 600000).',
  }),
  MODERATION_BLOCKLIST: list({
    fills: {
      /** Lower-cased: prompts are lower-cased before the terms are looked for. */
      moderationBlocklist: (terms) => terms.map((term) => term.toLowerCase()),
    },
    readBy: ['generator'],
    description: 'Comma-separated terms; a prompt containing one (case-insensitive) ends the job `moderation_blocked`, uncharged.',
  }),
  MAX_UPLOAD_BYTES: int({
    fills: { maxUploadBytes: true },
    min: 1_024,
    default: 20 * 1024 * 1024,
    note: '20 MiB',
    readBy: ['gateway'],
    description: 'Largest uploaded file in a multipart request (min 1024).',
  }),
  MAX_UPLOAD_TOTAL_BYTES: int({
    fills: { maxUploadTotalBytes: true },
    min: 1_024,
    default: 64 * 1024 * 1024,
    note: '64 MiB',
    readBy: ['gateway'],
    description:
      "A whole multipart body (refused by its `Content-Length`, or as it arrives). Room for 16 images of 4 MiB. Parts are streamed to temp files (the gateway's `/tmp`) and a part that does not start like a PNG, JPEG or WebP is refused at its first bytes, so a request holds only a few chunks in memory whatever it sends; a refused body is not read further ([docs/security.md](security.md#uploads)).",
  }),
  MAX_JSON_BYTES: int({
    fills: { maxJsonBytes: true },
    min: 1_024,
    default: 32 * 1024 * 1024,
    note: '32 MiB',
    readBy: ['gateway'],
    description:
      'Largest JSON body of `POST /v1/images/edits`, whose images come inline as data URLs; other JSON bodies are capped at 1 MiB (min 1024). Such a body is read whole (about six times its size in memory), so a gateway process reads at most this much of them at once; another gets `503 server_busy` ([docs/security.md](security.md#uploads)).',
  }),
  IDEMPOTENCY_TTL_SECONDS: int({
    fills: { idempotencyTtlSeconds: true },
    min: 60,
    default: 86_400,
    readBy: ['gateway'],
    description: 'How long an `Idempotency-Key` is remembered (min 60).',
  }),
  SHUTDOWN_TIMEOUT_MS: int({
    fills: { shutdownTimeoutMs: true },
    min: 1_000,
    max: HOUR_MS,
    default: 30_000,
    readBy: ['gateway', 'generator', 'dispatcher', 'npm start'],
    description: 'On SIGTERM, how long in-flight requests and jobs may finish before the process exits (1000 to 3600000).',
  }),
  FFMPEG_PATH: str({
    fills: { ffmpegPath: true },
    readBy: ['generator'],
    description:
      'ffmpeg binary; unset uses the one from `@ffmpeg-installer/ffmpeg`. The openai-compatible backend also uses it, to check that a returned video decodes.',
  }),
  RATE_LIMIT_CREATE_PER_MINUTE: int({
    fills: { rateLimitCreatePerMinute: true },
    min: 1,
    default: 300,
    readBy: ['gateway', 'admin'],
    description:
      'Creation calls (`POST` image generations, edits, videos, remixes, callback recoveries and retries; `DELETE` of a video) one workspace may make per minute (min 1); `set-limits` overrides it per workspace.',
  }),
  RATE_LIMIT_READ_PER_MINUTE: int({
    fills: { rateLimitReadPerMinute: true },
    min: 1,
    default: 1_200,
    readBy: ['gateway', 'admin'],
    description:
      'Read and list calls (`GET /v1/images…`, `/v1/videos…`, `/v1/callbacks…`) one workspace may make per minute (min 1); `set-limits` overrides it per workspace.',
  }),
  MAX_WAITING_JOBS_PER_WORKSPACE: int({
    fills: { maxWaitingJobsPerWorkspace: true },
    min: 1,
    default: 1_000,
    readBy: ['gateway', 'admin'],
    description:
      'Jobs one workspace may have accepted and not finished; past it creation calls answer `429 too_many_pending_jobs` (min 1); `set-limits` overrides it per workspace.',
  }),
  AUTH_FAILURES_PER_ADDRESS_PER_MINUTE: int({
    fills: { authFailuresPerAddressPerMinute: true },
    min: 1,
    default: 100,
    readBy: ['gateway'],
    description:
      "Wrong or missing API keys one client address may send per minute; past it, every API call from that address is answered `429 too_many_failed_authentications` until the minute is over, a valid key's included. Other addresses are not affected. Set `TRUST_PROXY` so the client's address is counted, not the Ingress's.",
  }),
  HTTP_MAX_CONNECTIONS: int({
    fills: { httpMaxConnections: true },
    min: 1,
    default: 10_000,
    readBy: ['gateway'],
    description:
      "Connections the gateway's public port holds at once; past it, new ones are closed at once (logged). Below the process's file-descriptor limit.",
  }),
  HTTP_MAX_CONNECTIONS_PER_ADDRESS: int({
    fills: { httpMaxConnectionsPerAddress: true },
    min: 1,
    default: 256,
    readBy: ['gateway'],
    description:
      'Connections one client address may hold at once; past it, its new ones are closed at once (logged). Not applied to the proxies `TRUST_PROXY` trusts, which carry many clients.',
  }),
  HTTP_HEADERS_TIMEOUT_MS: int({
    fills: { httpHeadersTimeoutMs: true },
    min: 1_000,
    max: 120_000,
    default: 10_000,
    readBy: ['gateway'],
    description:
      "How long a connection may take to send a request's headers; an idle connection that never sends one is closed after about this long (1000–120000).",
  }),
  HTTP_MIN_BODY_BYTES_PER_SECOND: int({
    fills: { httpMinBodyBytesPerSecond: true },
    min: 0,
    default: 16_384,
    readBy: ['gateway'],
    description:
      'The slowest a request body may arrive on average once its first 10 s have passed; a slower one is answered `408 request_timeout` and its connection closed. 0 turns it off.',
  }),
  MAX_CONCURRENT_UPLOADS_PER_WORKSPACE: int({
    fills: { maxConcurrentUploadsPerWorkspace: true },
    min: 1,
    default: 8,
    readBy: ['gateway'],
    description:
      'Multipart uploads one workspace streams into one gateway process at once; another one meanwhile is answered `429 too_many_concurrent_uploads` with `Retry-After`.',
  }),
  // Empty (off), a hop count, or addresses/CIDRs: config.ts tells them apart.
  TRUST_PROXY: str({
    fills: {
      /** Express's `trust proxy`: false (unset), a hop count, or the proxies' addresses/CIDRs. */
      trustProxy: (text): boolean | number | string[] => (text === '' ? false : /^\d+$/.test(text) ? Number(text) : splitList(text)),
    },
    default: '',
    check: (s) => s.pattern(/^(\d+|[0-9A-Fa-f:./,\s]+)$/).allow(''),
    note: 'off',
    readBy: ['gateway'],
    description:
      "Which proxies' `X-Forwarded-For` names the client: a hop count (`1` behind one Ingress) or the proxies' addresses/CIDRs, comma-separated. Set it behind a load balancer, or every client shares the balancer's address and the dashboard's sign-in limit per address (50 failures in 15 min) applies to everyone at once.",
  }),
  FAULT_CRASH_POINTS: list({
    fills: { faultCrashPoints: true },
    entry: (point): point is CrashPoint => CRASH_POINTS.includes(point as CrashPoint),
    problem: 'has unknown crash points',
    readBy: ['gateway', 'generator', 'dispatcher'],
    description:
      'Tests only, never in production: comma-separated crash points (`libs/common/src/faults.ts`) at which a service kills itself, to prove a crash there loses and duplicates nothing.',
  }),
  OPS_PORT: port({
    fills: { opsPort: true },
    default: 9464,
    readBy: ['gateway', 'generator', 'dispatcher', 'npm start'],
    description:
      "Each service's operations port: `/healthz` (liveness; fails when a worker is wedged), `/readyz` (fails while Redis is unreachable), `/metrics` (Prometheus). `/metrics` is never on the public port; the gateway also keeps `/healthz` and `/readyz` on `PORT`. `npm start` gives gateway, generator and dispatcher `OPS_PORT`, `+1`, `+2` and prints them.",
  }),
  OPS_HOST: str({
    fills: { opsHost: true },
    default: '127.0.0.1',
    check: (s) =>
      s.ip({ cidr: 'forbidden' }).messages({
        'string.ip': '{{#label}} must be an IP address to listen on (127.0.0.1, 0.0.0.0, ::), not a host name',
        'string.ipVersion': '{{#label}} must be an IP address to listen on (127.0.0.1, 0.0.0.0, ::), not a host name',
      }),
    readBy: ['gateway', 'generator', 'dispatcher'],
    description:
      "The IP address the operations port listens on (an address, not a host name). Loopback unless more is needed: the Kubernetes manifests and docker-compose set `0.0.0.0` (the kubelet's probes and Prometheus reach the pod's address; NetworkPolicies limit who may).",
  }),
  // IP addresses and localhost are always accepted (the kubelet and Prometheus use the pod's address).
  OPS_ALLOWED_HOSTS: list({
    fills: {
      /** Lower-cased, without a trailing dot (`localhost.` names `localhost`): `Host` headers are compared so. */
      opsAllowedHosts: (hosts) => hosts.map((host) => host.toLowerCase().replace(/\.$/, '')),
    },
    entry: (name) => HOST_NAME.test(name),
    problem: 'has entries that are not host names (no port, no scheme)',
    readBy: ['gateway', 'generator', 'dispatcher'],
    description:
      "Host names, comma-separated, that a request to the operations port may carry in its `Host` header besides IP addresses (any port) and `localhost`, which are always served; any other name is answered `421` and logged, so a DNS-rebinding page cannot read `/metrics` or Bull Board. Add a name only when the port is reached by it (a Service, a scrape by name); the manifests' probes and PodMonitor reach pods by address.",
  }),
  WORKER_LIVENESS_BOUND_MS: int({
    fills: { workerLivenessBoundMs: true },
    min: 1_000,
    max: DAY_MS,
    default: 120_000,
    readBy: ['generator', 'dispatcher'],
    description:
      "A worker's liveness fails when work has waited longer than this while the worker (with free slots) did nothing for as long, or when its Redis connection has been down longer than this (1000 to 86400000).",
  }),
  LOCAL_STACK_DIR: str({
    default: 'var',
    readBy: ['npm start'],
    description:
      "`npm start` only: where it keeps the demo workspace, its local receiver's certificates, a redis-server's data and `npm-start.pid` (the running launcher's pid and ports: a second `npm start` on the same directory names it and does not start) (relative to the repository).",
  }),
  LOCAL_RECEIVER: oneOf(['on', 'off'], {
    default: 'on',
    readBy: ['npm start'],
    description:
      '`npm start` only: `off` runs no [local callback receiver](development.md#the-local-stack-npm-start) and exempts nothing, so callbacks need a public https URL.',
  }),
  LOCAL_RECEIVER_PORT: port({
    default: 9443,
    readBy: ['npm start'],
    description:
      '`npm start` only: port of the [local callback receiver](development.md#the-local-stack-npm-start) on 127.0.0.1 (`0`: any free port, printed).',
  }),
  OPERATOR_USERNAME: str({
    fills: { operatorUsername: true },
    default: 'operator',
    check: (s) => s.pattern(/^[^:]+$/),
    readBy: ['gateway', 'npm start'],
    description: 'User name for Bull Board (HTTP Basic).',
  }),
  OPERATOR_PASSWORD: str({
    fills: { operatorPassword: true },
    // Long enough that Basic auth over the ops port is not guessable in practice.
    check: (s) => notThePlaceholder(s, 'replace-me-with-a-long-operator-password').min(16),
    readBy: ['gateway', 'npm start'],
    description:
      "Password for Bull Board at `/queues` on the gateway's ops port (min 16 characters, compared in constant time; `k8s/base`'s placeholder is refused). Unset: the board is not mounted at all (`npm start` then makes one for its stack, saved in `var/operator-password`).",
  }),
  // Base64 of 32 random bytes each (`openssl rand -base64 32`), newest first.
  SECRETS_ENCRYPTION_KEYS: list({
    fills: {
      /** The keys' 32 bytes each, newest first; none: secrets are stored as they are. */
      secretsEncryptionKeys: (keys): Buffer[] => keys.map((key) => Buffer.from(key, 'base64')),
    },
    entry: (key) => /^[A-Za-z0-9+/]{43}=$/.test(key),
    problem: 'must list base64 keys of 32 bytes each (openssl rand -base64 32)',
    secret: true,
    shown: 'unset',
    note: 'set it in production',
    readBy: ['gateway', 'dispatcher', 'admin', 'npm start'],
    description:
      'Key-encryption keys, each base64 of 32 random bytes (`openssl rand -base64 32`), comma-separated, newest first. Signing secrets and the link-signing key are stored in Redis sealed with AES-256-GCM under the first, bound to their workspace; any listed key opens what it sealed, so a key is rotated by adding a new one first, running `npm run -s admin -- reencrypt-secrets`, then removing the old one. Records stored before it was set keep working and are sealed when next written or by that command. Unset: secrets are stored as they are (the services log a warning). [Security](security.md#secrets-at-rest).',
  }),
  // http://host:port of a forward proxy that takes CONNECT; credentials in it would be logged, so none.
  CALLBACK_EGRESS_PROXY: str({
    fills: { callbackEgressProxy: true },
    check: (s) =>
      s
        .uri({ scheme: ['http'] })
        .pattern(/^http:\/\/[^/@]+:\d+\/?$/)
        .messages({ 'string.pattern.base': '{{#label}} must be http://host:port (a forward proxy taking CONNECT; no credentials, no path)' }),
    readBy: ['dispatcher'],
    description:
      "`http://host:port` of a forward proxy taking HTTP `CONNECT` (such as Stripe's Smokescreen) that every callback is tunnelled through, so receivers can allow its address. The URL guard runs first and the `CONNECT` names the checked IP, never the host name; TLS and the certificate check stay end to end with the receiver, and `WEBHOOK_TIMEOUT_MS` covers the proxy too. A proxy that cannot be reached or refuses the tunnel fails the attempt as `proxy` (retried on the ladder). [More](callbacks.md#a-static-source-address-egress-proxy).",
  }),
  // The OpenTelemetry SDK reads the other standard OTEL_* variables itself; this one turns tracing on.
  OTEL_EXPORTER_OTLP_ENDPOINT: str({
    check: (s) => s.uri({ scheme: ['http', 'https'] }),
    readBy: ['gateway', 'generator', 'dispatcher'],
    description:
      "OpenTelemetry traces over OTLP/HTTP to this base address (a collector's, e.g. `http://otel-collector:4318`; the exporter adds OTLP's traces path); off when unset. The SDK reads the other standard `OTEL_*` variables of the exporter itself (`OTEL_EXPORTER_OTLP_HEADERS`, `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`, `OTEL_EXPORTER_OTLP_TIMEOUT`…); `OTEL_SERVICE_NAME` replaces the service's own name. [Traces](operations.md#traces).",
  }),
  // The standard variable, read here because the trace SDK's batch processor does not read it.
  OTEL_BSP_SCHEDULE_DELAY: int({
    min: 1,
    max: 600_000,
    default: 5_000,
    readBy: ['gateway', 'generator', 'dispatcher'],
    description: 'How often finished spans are sent, in milliseconds (the standard variable).',
  }),
  // Only behind a proxy that sets or strips traceparent/tracestate itself: a client could otherwise
  // choose its jobs' trace id, turn their sampling off and put its tracestate into every span.
  OTEL_TRUST_INCOMING_TRACE_CONTEXT: bool({
    default: false,
    readBy: ['gateway'],
    description:
      "`true` continues the `traceparent`/`tracestate` an API call carries (trace id, sampled flag, tracestate). Off, every API call starts a trace of its own and links to the caller's span. Only behind a proxy that sets or strips those headers itself. [Security](security.md#trace-context).",
  }),
};

export type SettingName = keyof typeof SETTINGS;

/** The typed value of every setting, as `loadConfig` reads them. */
export type SettingValues = { readonly [K in SettingName]: ValueOf<(typeof SETTINGS)[K]> };

export const SETTING_NAMES = Object.keys(SETTINGS) as SettingName[];

/** Every member of a union at once: `A | B` → `A & B`. */
type AllOf<U> = (U extends unknown ? (all: U) => void : never) extends (all: infer I) => void ? I : never;

/**
 * The fields of `AppConfig` that one setting fills by itself, each declared by its setting's
 * `fills` entry and typed by the value it puts there.
 */
export type SettingFields = AllOf<{ [K in SettingName]: FieldsOf<(typeof SETTINGS)[K]> }[SettingName]>;

/** The typed values of what the schema accepted (`accepted`: Joi's output for the whole environment). */
export function settingValues(accepted: Readonly<Record<string, unknown>>): SettingValues {
  const values: Partial<Record<SettingName, unknown>> = {};
  for (const name of SETTING_NAMES) values[name] = SETTINGS[name].read(accepted[name]);
  // Each entry is its own setting's read, so it has its setting's type.
  return values as SettingValues;
}

/** The fields the settings fill by themselves, from their typed values. */
export function settingFields(values: SettingValues): SettingFields {
  const fields: Record<string, unknown> = {};
  for (const name of SETTING_NAMES) for (const [field, value] of fieldEntries(SETTINGS[name], values[name])) fields[field] = value;
  // Each field is its own setting's entry applied to that setting's value, so it has the type FieldsOf gives it.
  return fields as SettingFields;
}

/** The setting's row of docs/configuration.md's settings table. */
export const settingRow = (name: SettingName): string => tableRow(name, SETTINGS[name]);

/** docs/configuration.md's settings table, as `npm run docs:config` writes it. */
export const settingsTable = (): string => [...TABLE_HEADER, ...SETTING_NAMES.map(settingRow)].join('\n');
