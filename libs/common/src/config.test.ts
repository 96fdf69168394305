import { CONFIG_KEYS, ConfigError, loadConfig, parseModelMap, type AppConfig, type CompositeConfig } from './config';
import type { Fills } from './setting-kinds';
import { SETTING_NAMES, SETTINGS, type SettingFields } from './settings';

describe('loadConfig', () => {
  it('applies the documented defaults', () => {
    const config = loadConfig({});
    expect(config).toMatchObject({
      redis: { kind: 'single', url: 'redis://127.0.0.1:6379' },
      keyPrefix: 'media',
      port: 8080,
      publicBaseUrl: 'http://localhost:8080',
      linkTtlSeconds: 86_400,
      webhookTimeoutMs: 15_000,
      webhookRetryScheduleMs: [60_000, 300_000, 1_800_000, 7_200_000, 28_800_000],
      secretRotationOverlapSeconds: 86_400,
      callbackAllowHttp: false,
      callbackAllowedCidrs: [],
      callbackCaFile: undefined,
    });
  });

  it('lists every bad key in one error', () => {
    let error: unknown;
    try {
      loadConfig({ PORT: 'eighty', WEBHOOK_RETRY_SCHEDULE: '1m,5m', CALLBACK_ALLOW_HTTP: 'maybe', REDIS_URL: 'http://x' });
    } catch (err) {
      error = err;
    }
    expect(error).toBeInstanceOf(ConfigError);
    const problems = (error as ConfigError).problems.join('\n');
    for (const key of ['PORT', 'WEBHOOK_RETRY_SCHEDULE', 'CALLBACK_ALLOW_HTTP', 'REDIS_URL']) expect(problems).toContain(key);
    // The retry ladder's own reason, not a generic one.
    expect(problems).toMatch(/WEBHOOK_RETRY_SCHEDULE.* must list 5 gaps \(attempts 2-6\) like 1m,5m,30m,2h,8h; it has 2/);
  });

  it('takes Redis Cluster seeds instead of REDIS_URL, and a hash-tagged prefix', () => {
    const config = loadConfig({ REDIS_CLUSTER_NODES: '10.0.0.5:7000, redis-1.svc:7001,[::1]:7002', KEY_PREFIX: 'prod-{media}' });
    expect(config.redis).toEqual({
      kind: 'cluster',
      nodes: [
        { host: '10.0.0.5', port: 7000 },
        { host: 'redis-1.svc', port: 7001 },
        { host: '::1', port: 7002 },
      ],
      auth: { username: undefined, password: undefined, sentinelPassword: undefined },
    });
    expect(config.keyPrefix).toBe('prod-{media}');
  });

  it('takes Sentinels and the name of the primary instead of REDIS_URL, with credentials for the nodes and the Sentinels', () => {
    const config = loadConfig({
      REDIS_URL: 'redis://ignored:6379',
      REDIS_SENTINELS: '10.0.0.21:26379,sentinel-2.svc:26379',
      REDIS_SENTINEL_NAME: 'mymaster',
      REDIS_USERNAME: 'media',
      REDIS_PASSWORD: 'node-secret',
      REDIS_SENTINEL_PASSWORD: 'sentinel-secret',
    });
    expect(config.redis).toEqual({
      kind: 'sentinel',
      sentinels: [
        { host: '10.0.0.21', port: 26379 },
        { host: 'sentinel-2.svc', port: 26379 },
      ],
      name: 'mymaster',
      auth: { username: 'media', password: 'node-secret', sentinelPassword: 'sentinel-secret' },
    });
  });

  it('refuses Sentinels without a name, a name without Sentinels, and Sentinels with a Cluster', () => {
    const problems = (env: NodeJS.ProcessEnv) => {
      try {
        loadConfig(env);
        return '';
      } catch (err) {
        return (err as ConfigError).problems.join('\n');
      }
    };
    expect(problems({ REDIS_SENTINELS: '10.0.0.21:26379' })).toMatch(/REDIS_SENTINEL_NAME.*must name the primary/);
    expect(problems({ REDIS_SENTINEL_NAME: 'mymaster' })).toMatch(/REDIS_SENTINEL_NAME.*only read with REDIS_SENTINELS/);
    expect(problems({ REDIS_SENTINELS: '10.0.0.21:26379', REDIS_SENTINEL_NAME: 'm', REDIS_CLUSTER_NODES: '10.0.0.5:7000' })).toMatch(
      /set REDIS_SENTINELS or REDIS_CLUSTER_NODES, not both/,
    );
    expect(problems({ REDIS_SENTINELS: 'sentinel-without-port', REDIS_SENTINEL_NAME: 'm' })).toMatch(
      /"REDIS_SENTINELS" has entries that are not host:port: sentinel-without-port/,
    );
  });

  it('turns TLS on for every shape (REDIS_TLS, or rediss:// for one Redis), with an optional CA file, and refuses a CA file without TLS', () => {
    expect(loadConfig({ REDIS_URL: 'rediss://redis.example:6380' }).redis).toEqual({
      kind: 'single',
      url: 'rediss://redis.example:6380',
      tls: { caFile: undefined },
    });
    expect(loadConfig({ REDIS_URL: 'redis://redis.example:6379' }).redis).toEqual({ kind: 'single', url: 'redis://redis.example:6379' });
    expect(loadConfig({ REDIS_CLUSTER_NODES: '10.0.0.5:7000', REDIS_TLS: 'true', REDIS_TLS_CA_FILE: '/etc/redis/ca.pem' }).redis).toMatchObject({
      kind: 'cluster',
      tls: { caFile: '/etc/redis/ca.pem' },
    });
    expect(loadConfig({ REDIS_SENTINELS: '10.0.0.21:26379', REDIS_SENTINEL_NAME: 'm', REDIS_TLS: '1' }).redis).toMatchObject({ kind: 'sentinel', tls: {} });
    // rediss:// names one Redis: with Sentinels it is not read, so it does not turn TLS on there.
    expect(loadConfig({ REDIS_URL: 'rediss://ignored:6380', REDIS_SENTINELS: '10.0.0.21:26379', REDIS_SENTINEL_NAME: 'm' }).redis.tls).toBeUndefined();
    expect(() => loadConfig({ REDIS_TLS_CA_FILE: '/etc/redis/ca.pem' })).toThrow(/REDIS_TLS_CA_FILE is only read with TLS/);
  });

  it('refuses bad cluster seeds and prefixes with more than one hash tag or stray braces', () => {
    for (const env of [
      { REDIS_CLUSTER_NODES: 'redis-1' },
      { REDIS_CLUSTER_NODES: 'a:1,b:99999' },
      { REDIS_CLUSTER_NODES: ' , ' },
      { KEY_PREFIX: '{a}{b}' },
      { KEY_PREFIX: 'media}' },
      { KEY_PREFIX: '{}' },
      { KEY_PREFIX: 'me dia' },
    ]) {
      expect(() => loadConfig(env)).toThrow(ConfigError);
    }
  });

  it('parses lists and flags', () => {
    const config = loadConfig({
      CALLBACK_ALLOW_HTTP: 'true',
      CALLBACK_ALLOWED_CIDRS: '127.0.0.0/8, ::1/128',
      WEBHOOK_RETRY_SCHEDULE: '300ms,1s,2m,1h,8h',
      MODERATION_BLOCKLIST: 'Forbidden, nope',
    });
    expect(config.callbackAllowHttp).toBe(true);
    expect(config.callbackAllowedCidrs).toEqual(['127.0.0.0/8', '::1/128']);
    expect(config.webhookRetryScheduleMs).toEqual([300, 1_000, 120_000, 3_600_000, 28_800_000]);
    expect(config.moderationBlocklist).toEqual(['forbidden', 'nope']);
  });

  it('refuses CIDRs that are not address/prefix, naming the setting', () => {
    for (const bad of ['garbage', '10.0.0.0/99', '::1/129', '127.0.0.1', 'localhost/8', '10.0.0.0/8,x']) {
      expect(() => loadConfig({ CALLBACK_ALLOWED_CIDRS: bad })).toThrow(/CALLBACK_ALLOWED_CIDRS.*not address\/prefix/);
    }
  });

  it('refuses millisecond settings past what a timer holds, and retry gaps over a day', () => {
    // Node fires a timer of more than 2^31 - 1 ms at once: a lock, a timeout or a drain deadline
    // of that size would turn into one of 1 ms.
    for (const [key, over] of [
      ['JOB_LOCK_MS', '600001'],
      ['GENERATION_TIMEOUT_MS', '3000000000'],
      ['SHUTDOWN_TIMEOUT_MS', '99999999999'],
      ['SYNC_IMAGE_TIMEOUT_MS', '600001'],
      ['WORKER_LIVENESS_BOUND_MS', '86400001'],
    ]) {
      expect(() => loadConfig({ [key!]: over })).toThrow(new RegExp(`"${key}" must be less than or equal to`));
    }
    expect(loadConfig({ JOB_LOCK_MS: '600000', SHUTDOWN_TIMEOUT_MS: '3600000' })).toMatchObject({ jobLockMs: 600_000, shutdownTimeoutMs: 3_600_000 });
    expect(() => loadConfig({ WEBHOOK_RETRY_SCHEDULE: '1m,5m,30m,2h,99999999h' })).toThrow(
      /WEBHOOK_RETRY_SCHEDULE.*"99999999h" is longer than a gap may be \(24h\)/,
    );
    expect(loadConfig({ WEBHOOK_RETRY_SCHEDULE: '24h,24h,24h,24h,24h' }).webhookRetryScheduleMs).toEqual(Array(5).fill(86_400_000));
  });

  it("refuses k8s/base's placeholder secrets, Redis credentials that REDIS_URL would ignore, and a host name for OPS_HOST", () => {
    expect(() => loadConfig({ LINK_SIGNING_SECRET: 'replace-me-with-32-or-more-random-characters' })).toThrow(/LINK_SIGNING_SECRET.*placeholder/);
    expect(() => loadConfig({ OPERATOR_PASSWORD: 'replace-me-with-a-long-operator-password' })).toThrow(/OPERATOR_PASSWORD.*placeholder/);
    // One Redis takes its credentials from the URL or from REDIS_USERNAME and REDIS_PASSWORD (a Secret
    // may hold the password while the address stays in a ConfigMap), not from both.
    expect(loadConfig({ REDIS_PASSWORD: 's3cretpass' }).redis).toMatchObject({ kind: 'single', auth: { password: 's3cretpass' } });
    expect(loadConfig({ REDIS_USERNAME: 'media', REDIS_PASSWORD: 's3cretpass' }).redis).toMatchObject({ auth: { username: 'media' } });
    expect(() => loadConfig({ REDIS_URL: 'redis://:urlpass@127.0.0.1:6379', REDIS_PASSWORD: 's3cretpass' })).toThrow(/REDIS_URL carries credentials/);
    expect(() => loadConfig({ REDIS_URL: 'redis://media:urlpass@127.0.0.1:6379', REDIS_USERNAME: 'media' })).toThrow(/keep one of them/);
    expect(() => loadConfig({ OPS_HOST: 'localhost' })).toThrow(/"OPS_HOST" must be an IP address to listen on/);
    expect(loadConfig({ OPS_HOST: '0.0.0.0' }).opsHost).toBe('0.0.0.0');
  });

  it("refuses DOCS_URL's placeholder in production, unset or spelled out, with a message that says what to set", () => {
    // A laptop or a test keeps the default.
    expect(loadConfig({}).docsUrl).toBe('https://docs.example.com');
    expect(loadConfig({ NODE_ENV: 'test' }).docsUrl).toBe('https://docs.example.com');
    const refusal = (env: NodeJS.ProcessEnv): string => {
      try {
        loadConfig(env);
      } catch (err) {
        expect(err).toBeInstanceOf(ConfigError);
        return (err as ConfigError).message;
      }
      throw new Error(`accepted ${JSON.stringify(env)}`);
    };
    expect(refusal({ NODE_ENV: 'production' })).toBe(
      'invalid configuration:\n  - "DOCS_URL" must be set when NODE_ENV=production (its default is the placeholder https://docs.example.com): your documentation site, shown in the callback user-agent',
    );
    for (const placeholder of ['https://docs.example.com', 'https://docs.example.com/', 'http://DOCS.example.com/webhooks']) {
      expect(refusal({ NODE_ENV: 'production', DOCS_URL: placeholder })).toBe(
        'invalid configuration:\n  - "DOCS_URL" is the placeholder https://docs.example.com: set it to your documentation site (NODE_ENV=production)',
      );
    }
    // Listed beside every other bad key, as always.
    expect(refusal({ NODE_ENV: 'production', PORT: 'x' })).toMatch(/"PORT" must be a number\n {2}- "DOCS_URL" must be set/);
    expect(loadConfig({ NODE_ENV: 'production', DOCS_URL: 'https://docs.media.test/' }).docsUrl).toBe('https://docs.media.test');
  });

  it('reads CALLBACK_ALLOWED_ENDPOINTS as address:port pairs and refuses names, ranges and bare addresses', () => {
    expect(loadConfig({}).callbackAllowedEndpoints).toEqual([]);
    expect(loadConfig({ CALLBACK_ALLOWED_ENDPOINTS: '127.0.0.1:9443, [::1]:9443' }).callbackAllowedEndpoints).toEqual(['127.0.0.1:9443', '[::1]:9443']);
    for (const bad of ['localhost:9443', '127.0.0.0/8', '127.0.0.1', '127.0.0.1:0', '::1:9443', '[127.0.0.1]:9443', '2130706433:9443']) {
      expect(() => loadConfig({ CALLBACK_ALLOWED_ENDPOINTS: bad })).toThrow(/CALLBACK_ALLOWED_ENDPOINTS.*not ip:port/);
    }
  });

  it('reads OPS_ALLOWED_HOSTS as host names, lower-case without a trailing dot, and refuses ports, schemes and wildcards', () => {
    expect(loadConfig({}).opsAllowedHosts).toEqual([]);
    expect(loadConfig({ OPS_ALLOWED_HOSTS: 'Api-Gateway-Ops.media.svc.cluster.local., metrics ' }).opsAllowedHosts).toEqual([
      'api-gateway-ops.media.svc.cluster.local',
      'metrics',
    ]);
    for (const bad of ['ops.media:9464', 'http://ops.media', '*.media.svc', 'ops..media', '-ops.media', '[::1]']) {
      expect(() => loadConfig({ OPS_ALLOWED_HOSTS: bad })).toThrow(/OPS_ALLOWED_HOSTS.*not host names/);
    }
  });

  it('turns the local receiver of npm start on by default, and off with LOCAL_RECEIVER=off', () => {
    expect(loadConfig({}).localStack).toEqual({ dir: 'var', receiver: true, receiverPort: 9443 });
    expect(loadConfig({ LOCAL_RECEIVER: 'off' }).localStack.receiver).toBe(false);
    expect(() => loadConfig({ LOCAL_RECEIVER: 'no' })).toThrow(/LOCAL_RECEIVER/);
  });

  it('reads LOG_FORMAT as json or pretty, and leaves it unset (json) when not given, so npm start can tell', () => {
    expect(loadConfig({}).logFormat).toBeUndefined();
    expect(loadConfig({ LOG_FORMAT: 'json' }).logFormat).toBe('json');
    expect(loadConfig({ LOG_FORMAT: 'pretty' }).logFormat).toBe('pretty');
    expect(() => loadConfig({ LOG_FORMAT: 'text' })).toThrow(/"LOG_FORMAT" must be one of \[json, pretty\]/);
  });

  it('reads the per-workspace limits and refuses ones that would stop every call', () => {
    expect(loadConfig({})).toMatchObject({ rateLimitCreatePerMinute: 300, rateLimitReadPerMinute: 1_200, maxWaitingJobsPerWorkspace: 1_000 });
    expect(loadConfig({ RATE_LIMIT_CREATE_PER_MINUTE: '5', RATE_LIMIT_READ_PER_MINUTE: '7', MAX_WAITING_JOBS_PER_WORKSPACE: '2' })).toMatchObject({
      rateLimitCreatePerMinute: 5,
      rateLimitReadPerMinute: 7,
      maxWaitingJobsPerWorkspace: 2,
    });
    expect(() => loadConfig({ RATE_LIMIT_CREATE_PER_MINUTE: '0', RATE_LIMIT_READ_PER_MINUTE: 'lots', MAX_WAITING_JOBS_PER_WORKSPACE: '-1' })).toThrow(
      /RATE_LIMIT_CREATE_PER_MINUTE[\s\S]*RATE_LIMIT_READ_PER_MINUTE[\s\S]*MAX_WAITING_JOBS_PER_WORKSPACE/,
    );
  });

  it('chooses the blob store: files by default, an S3 bucket with BLOB_STORE=s3, whose bucket is required', () => {
    expect(loadConfig({ MEDIA_DIR: '/data/media' }).blobStore).toEqual({ kind: 'fs', dir: '/data/media' });
    expect(loadConfig({ BLOB_STORE: 's3', S3_BUCKET: 'media-prod' }).blobStore).toEqual({
      kind: 's3',
      bucket: 'media-prod',
      region: undefined,
      endpoint: undefined,
      forcePathStyle: false,
    });
    expect(
      loadConfig({ BLOB_STORE: 's3', S3_BUCKET: 'media', S3_REGION: 'eu-west-1', S3_ENDPOINT: 'http://minio:9000', S3_FORCE_PATH_STYLE: 'true' }).blobStore,
    ).toEqual({ kind: 's3', bucket: 'media', region: 'eu-west-1', endpoint: 'http://minio:9000', forcePathStyle: true });
    expect(() => loadConfig({ BLOB_STORE: 's3', S3_ENDPOINT: 'minio:9000', S3_FORCE_PATH_STYLE: 'sometimes' })).toThrow(
      /S3_BUCKET[\s\S]*S3_ENDPOINT[\s\S]*S3_FORCE_PATH_STYLE/,
    );
    expect(() => loadConfig({ BLOB_STORE: 'gcs' })).toThrow(/BLOB_STORE/);
    expect(() => loadConfig({ BLOB_STORE: 's3', S3_BUCKET: 'Not_A_Bucket' })).toThrow(/S3_BUCKET/);
  });

  it('chooses the procedural generator by default, and the openai-compatible one with its upstream', () => {
    expect(loadConfig({}).generatorBackend).toEqual({ kind: 'procedural' });
    // Upstream settings without the backend that reads them change nothing.
    expect(loadConfig({ UPSTREAM_BASE_URL: 'http://models:8000/v1' }).generatorBackend).toEqual({ kind: 'procedural' });
    expect(
      loadConfig({
        GENERATOR_BACKEND: 'openai-compatible',
        UPSTREAM_BASE_URL: 'https://api.openai.com/v1/',
        UPSTREAM_API_KEY: 'sk-test-123',
        UPSTREAM_MODEL_MAP: 'pixel-1=gpt-image-1, motion-1 = sora-2,x=black-forest-labs/FLUX.1-dev:fp8',
      }).generatorBackend,
    ).toEqual({
      kind: 'openai-compatible',
      baseUrl: 'https://api.openai.com/v1',
      apiKey: 'sk-test-123',
      modelMap: new Map([
        ['pixel-1', 'gpt-image-1'],
        ['motion-1', 'sora-2'],
        ['x', 'black-forest-labs/FLUX.1-dev:fp8'],
      ]),
    });
    expect(
      loadConfig({ GENERATOR_BACKEND: 'openai-compatible', UPSTREAM_BASE_URL: 'http://127.0.0.1:9/v1', UPSTREAM_API_KEY: 'none' }).generatorBackend,
    ).toMatchObject({
      modelMap: new Map(),
    });
  });

  it('refuses an openai-compatible backend without its upstream, and bad upstream settings, without ever quoting the key', () => {
    expect(() => loadConfig({ GENERATOR_BACKEND: 'openai-compatible' })).toThrow(/UPSTREAM_BASE_URL[\s\S]*UPSTREAM_API_KEY/);
    expect(() => loadConfig({ GENERATOR_BACKEND: 'comfy' })).toThrow(/GENERATOR_BACKEND/);
    const upstream = { GENERATOR_BACKEND: 'openai-compatible', UPSTREAM_API_KEY: 'sk-fine' };
    for (const url of ['ftp://models/v1', 'models:8000/v1', 'https://user:sk-in-url@api.example.com/v1']) {
      expect(() => loadConfig({ ...upstream, UPSTREAM_BASE_URL: url })).toThrow(/UPSTREAM_BASE_URL/);
    }
    let error: unknown;
    try {
      loadConfig({ ...upstream, UPSTREAM_BASE_URL: 'https://api.example.com/v1', UPSTREAM_API_KEY: 'sk-secret value\n' });
    } catch (err) {
      error = err;
    }
    expect((error as ConfigError).message).toMatch(/UPSTREAM_API_KEY/);
    expect((error as ConfigError).message).not.toContain('sk-secret');
  });

  it('names the contract settings of the design', () => {
    for (const key of [
      'REDIS_URL',
      'PORT',
      'PUBLIC_BASE_URL',
      'DOCS_URL',
      'LINK_TTL_SECONDS',
      'WEBHOOK_TIMEOUT_MS',
      'WEBHOOK_RETRY_SCHEDULE',
      'SECRET_ROTATION_OVERLAP_SECONDS',
      'CALLBACK_ALLOW_HTTP',
      'CALLBACK_ALLOWED_CIDRS',
      'CALLBACK_CA_FILE',
    ]) {
      expect(CONFIG_KEYS).toContain(key);
    }
  });
});

describe('parseModelMap', () => {
  it('reads ours=theirs pairs and names what is wrong with anything else', () => {
    expect(parseModelMap('')).toEqual(new Map());
    expect(parseModelMap('a=b,c=d')).toEqual(
      new Map([
        ['a', 'b'],
        ['c', 'd'],
      ]),
    );
    for (const bad of ['pixel-1', 'pixel-1=', '=gpt-image-1', 'a=b=c', 'a=b,a=c', 'a b=c', '__proto__=x y']) {
      expect([bad, typeof parseModelMap(bad)]).toEqual([bad, 'string']);
    }
    expect(parseModelMap('a=b,a=c')).toBe('maps a twice');
  });
});

describe('the fields of AppConfig', () => {
  /** The fields that combine several settings, written in config.ts; every other field is a setting's `fills` entry. */
  const COMPOSITE = ['redis', 'blobStore', 'generatorBackend', 'localStack', 'tracing'] as const;
  type Equal<X, Y> = (<T>() => T extends X ? 1 : 2) extends <T>() => T extends Y ? 1 : 2 ? true : false;
  // A field written into AppConfig by hand, rather than declared by a setting, fails to compile here.
  const composite: Equal<keyof CompositeConfig, (typeof COMPOSITE)[number]> = true;
  const derived: Equal<Exclude<keyof AppConfig, (typeof COMPOSITE)[number]>, keyof SettingFields> = true;

  it('are declared by the settings, one field each at most and no field twice, beside the composite ones', () => {
    expect([composite, derived]).toEqual([true, true]);
    const filled = SETTING_NAMES.flatMap((name) => Object.keys(SETTINGS[name].fills));
    for (const name of SETTING_NAMES) expect([name, Object.keys(SETTINGS[name].fills).length <= 1]).toEqual([name, true]);
    expect(new Set([...filled, ...COMPOSITE]).size).toBe(filled.length + COMPOSITE.length);
    expect(Object.keys(loadConfig({})).sort()).toEqual([...filled, ...COMPOSITE].sort());
  });

  it("hold their setting's typed value, or what the setting's entry makes of it", () => {
    const env: Record<string, string> = {
      PORT: '9000',
      LOG_LEVEL: 'debug',
      RETENTION_SWEEP_INTERVAL_SECONDS: '5',
      PUBLIC_BASE_URL: 'https://media.example//',
      OPS_ALLOWED_HOSTS: 'Ops.Media.,metrics',
      TRUST_PROXY: '2',
      SECRETS_ENCRYPTION_KEYS: Buffer.alloc(32, 7).toString('base64'),
    };
    const config = loadConfig(env) as unknown as Record<string, unknown>;
    for (const name of SETTING_NAMES) {
      const value = SETTINGS[name].read(SETTINGS[name].schema.validate(env[name]).value);
      for (const [field, make] of Object.entries(SETTINGS[name].fills as Fills<unknown>)) {
        expect([name, field, config[field]]).toEqual([name, field, make === true ? value : make(value)]);
      }
    }
    expect(config).toMatchObject({
      port: 9000,
      logLevel: 'debug',
      retentionSweepIntervalMs: 5_000,
      publicBaseUrl: 'https://media.example',
      opsAllowedHosts: ['ops.media', 'metrics'],
      trustProxy: 2,
      secretsEncryptionKeys: [Buffer.alloc(32, 7)],
    });
  });
});
