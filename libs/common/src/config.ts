import Joi from 'joi';
import {
  DOCS_URL_PLACEHOLDER,
  SETTING_NAMES,
  SETTINGS,
  settingFields,
  settingValues,
  type SettingFields,
  type SettingName,
  type SettingValues,
} from './settings';

export { parseModelMap } from './settings';

/**
 * Every setting of every service, validated once at start-up. Only this module reads the
 * environment; services receive the typed {@link AppConfig} through their constructors. Each
 * variable is declared once, in settings.ts, and so is the field it fills by itself
 * ({@link SettingFields}: its `fills` entry is the field's declaration, its description the field's
 * documentation). The fields below combine several settings; this module adds the rules between
 * variables and makes them.
 */
export interface AppConfig extends SettingFields {
  /**
   * One Redis (`REDIS_URL`), a primary found through Sentinels (`REDIS_SENTINELS`), or a Redis Cluster
   * (`REDIS_CLUSTER_NODES`); with either of the last two, `REDIS_URL` is not used.
   */
  redis: RedisTarget;
  /** Where media bytes live: files under `mediaDir`, or an S3-compatible bucket. */
  blobStore: BlobStoreSettings;
  /** What makes the images and videos: the built-in procedural renderer, or a model server. */
  generatorBackend: GeneratorBackendSettings;
  /** `npm start` only (tools/admin/src/local-stack.ts); no service reads it. */
  localStack: LocalStackSettings;
  /**
   * Traces: the OTLP/HTTP endpoint (`OTEL_EXPORTER_OTLP_ENDPOINT`; off without one), how often spans
   * are sent, and whether an API call continues the caller's `traceparent`/`tracestate`
   * (`OTEL_TRUST_INCOMING_TRACE_CONTEXT`; by default it starts a trace of its own, linked to the caller's).
   */
  tracing: { endpoint: string | undefined; scheduleDelayMs: number; trustIncomingContext: boolean };
}

/** The fields of {@link AppConfig} that combine several settings, made here rather than declared in settings.ts. */
export type CompositeConfig = Omit<AppConfig, keyof SettingFields>;

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
  const composite: CompositeConfig = {
    redis: redisTarget(value),
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
    localStack: { dir: value.LOCAL_STACK_DIR, receiver: value.LOCAL_RECEIVER === 'on', receiverPort: value.LOCAL_RECEIVER_PORT },
    tracing: {
      endpoint: value.OTEL_EXPORTER_OTLP_ENDPOINT,
      scheduleDelayMs: value.OTEL_BSP_SCHEDULE_DELAY,
      trustIncomingContext: value.OTEL_TRUST_INCOMING_TRACE_CONTEXT,
    },
  };
  return { ...settingFields(value), ...composite };
}
