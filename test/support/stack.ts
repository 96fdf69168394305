import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { Redis } from 'ioredis';
import { createAccounts, type WorkspaceAccounts, WorkspaceRepository } from '@media/accounts';
import { FileBlobStore, type BlobStore } from '@media/blob-store';
import { JobRepository } from '@media/jobs';
import { S3TestServer } from '../../libs/blob-store/src/test-support/s3-server';
import type { TestRedisCluster } from './redis-cluster';
import type { TestRedisTls } from './redis-tls';
import type { TestRedisSentinel } from './redis-sentinel';
import { deleteKeysUnder, eventually, freePort, REDIS_URL } from './basics';
import { allKeys } from './store-keys';

export { deleteKeysUnder, eventually, freePort, keysUnder, redisAnswers, REDIS_URL } from './basics';

export type ServiceName = 'api-gateway' | 'generator' | 'webhook-dispatcher';

/** Both blob stores, for `describe.each` in the tests that write or read media. */
export const BLOB_STORES = ['fs', 's3'] as const;
export type BlobStoreKind = (typeof BLOB_STORES)[number];
/** The store of stacks that do not name one; `TEST_BLOB_STORE=s3` runs every stack on S3. */
const DEFAULT_BLOB_STORE: BlobStoreKind = process.env.TEST_BLOB_STORE === 's3' ? 's3' : 'fs';
/** `TEST_IN_PROCESS=0` starts processes for the stacks that ask for in-process services (to compare, or to rule it out). */
const IN_PROCESS_ALLOWED = process.env.TEST_IN_PROCESS !== '0';

const ROOT = resolve(__dirname, '../..');

/** One service as a real child process, with its JSON log lines kept for assertions. */
export class ServiceProcess {
  readonly lines: Record<string, unknown>[] = [];
  /** Output that was not a JSON log line (stdout lines and everything on stderr): should stay empty. */
  readonly nonJson: string[] = [];
  /** Everything the process wrote to stderr, over all its starts. */
  stderr = '';
  private child: ChildProcess | undefined;
  private exited: Promise<number | null> = Promise.resolve(null);

  constructor(
    readonly name: ServiceName,
    private readonly env: NodeJS.ProcessEnv,
  ) {}

  async start(readyMessage: string | RegExp): Promise<void> {
    const child = spawn(process.execPath, [join(ROOT, 'services', this.name, 'dist', 'main.js')], {
      // The run's compile cache (test/support/global-setup.ts), the one thing taken from Jest's own environment.
      env: { NODE_COMPILE_CACHE: process.env.NODE_COMPILE_CACHE, ...this.env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    this.child = child;
    this.exited = new Promise((r) => child.once('exit', (code) => r(code)));
    let buffered = '';
    child.stdout!.on('data', (chunk: Buffer) => {
      buffered += chunk.toString();
      let nl: number;
      while ((nl = buffered.indexOf('\n')) >= 0) {
        const line = buffered.slice(0, nl);
        buffered = buffered.slice(nl + 1);
        this.takeLine(line);
      }
    });
    let stderr = '';
    child.stderr!.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
      this.stderr += chunk.toString();
    });
    const startedAt = this.lines.length;
    await eventually(
      () => {
        if (child.exitCode !== null) throw new Error(`${this.name} exited with ${child.exitCode}: ${stderr}`);
        return this.lines.slice(startedAt).some((l) => String(l.message).match(readyMessage)) ? true : undefined;
      },
      20_000,
      `${this.name} to start`,
    ).catch((err) => {
      throw new Error(`${String(err)}\nstderr: ${stderr}`);
    });
  }

  /** The service's operations address (/healthz, /readyz, /metrics). */
  get opsUrl(): string {
    return `http://127.0.0.1:${this.env.OPS_PORT}`;
  }

  get pid(): number | undefined {
    return this.child?.pid;
  }

  /** Resolves with the exit code (null when killed by a signal) once the process has ended. */
  waitForExit(): Promise<number | null> {
    return this.exited;
  }

  /** Sends a signal and waits for the process to end. */
  async kill(signal: NodeJS.Signals = 'SIGTERM'): Promise<number | null> {
    if (!this.child || this.child.exitCode !== null || this.child.signalCode !== null) return this.child?.exitCode ?? null;
    this.child.kill(signal);
    return this.exited;
  }

  /** Ends the service when its stack stops: a process is killed outright. */
  async end(): Promise<void> {
    await this.kill('SIGKILL');
  }

  /** Takes one line of the service's stdout: a JSON log line, or output that should not be there. */
  protected takeLine(line: string): void {
    try {
      this.lines.push(JSON.parse(line) as Record<string, unknown>);
    } catch {
      this.lines.push({ message: line });
      this.nonJson.push(line);
    }
  }

  hasLog(predicate: (line: Record<string, unknown>) => boolean): boolean {
    return this.lines.some(predicate);
  }
}

/**
 * One service run inside the Jest worker (TestStack.start's `inProcess`), through the start function
 * its main.ts calls, with the env a process would get and its log lines kept as a process's are. It
 * has no pid and no stderr (stays empty); SIGTERM and SIGINT run the shutdown main.ts runs on them
 * (the exit code is then 0), and a signal that would kill a process outright is refused: a test that
 * needs one starts processes.
 */
export class InProcessService extends ServiceProcess {
  private running: { stop(signal: string): Promise<void> } | undefined;
  private stopped: Promise<number | null> | undefined;
  private failed: Promise<number | null> | undefined;

  constructor(
    name: ServiceName,
    private readonly serviceEnv: NodeJS.ProcessEnv,
  ) {
    super(name, serviceEnv);
  }

  override async start(readyMessage: string | RegExp): Promise<void> {
    if (this.running) throw new Error(`${this.name} runs in-process and was started already: a restart needs a service process`);
    const { startInProcess } = await import('./in-process.js');
    const startedAt = this.lines.length;
    let startFailed: unknown;
    this.running = await startInProcess(this.name, this.serviceEnv, {
      onLine: (line) => this.takeLine(line),
      onStartFailed: (err) => {
        startFailed = err;
        this.failed = Promise.resolve(1);
      },
    });
    await eventually(
      () => {
        if (startFailed !== undefined) throw new Error(`${this.name} failed to start: ${String(startFailed)}`);
        return this.lines.slice(startedAt).some((l) => String(l.message).match(readyMessage)) ? true : undefined;
      },
      20_000,
      `${this.name} to start`,
    );
  }

  override get pid(): number | undefined {
    return undefined;
  }

  override waitForExit(): Promise<number | null> {
    return this.failed ?? this.stopped ?? new Promise(() => undefined);
  }

  override async kill(signal: NodeJS.Signals = 'SIGTERM'): Promise<number | null> {
    if (signal !== 'SIGTERM' && signal !== 'SIGINT') throw new Error(`${this.name} runs in-process: ${signal} needs a service process`);
    return this.shutDown(signal);
  }

  override async end(): Promise<void> {
    await this.shutDown('SIGTERM');
  }

  private shutDown(signal: string): Promise<number | null> {
    if (!this.running) return Promise.resolve(null);
    const running = this.running;
    this.stopped ??= running.stop(signal).then(() => 0);
    return this.stopped;
  }
}

export interface TestWorkspace {
  workspaceId: string;
  apiKey: string;
  signingSecret: string;
  /** The owner's dashboard sign-in. */
  owner: { email: string; password: string };
}

export interface StackOptions {
  blobStore?: BlobStoreKind;
  redisCluster?: TestRedisCluster;
  redisSentinel?: TestRedisSentinel;
  redisTls?: TestRedisTls;
  /** Run the services inside the Jest worker ({@link InProcessService}); processes by default. */
  inProcess?: boolean;
}

const READY: Record<ServiceName, RegExp> = {
  'api-gateway': /api-gateway listening/,
  generator: /generator started/,
  'webhook-dispatcher': /webhook-dispatcher started/,
};

/**
 * A whole deployment for one test file: its own key prefix on the real Redis, its own blob store (a
 * media directory, or a bucket on its own S3 server on loopback), the real services (processes, or
 * inside the Jest worker with `inProcess`), and a cleanup that removes only its own keys.
 */
export class TestStack {
  readonly prefix = `test-${randomBytes(6).toString('hex')}`;
  readonly redis: Redis;
  readonly keys = allKeys(this.prefix);
  readonly workspaces: WorkspaceRepository;
  readonly jobs: JobRepository;
  /** Workspace accounts on this stack's keys (minting and storing credentials, as the CLI does). */
  readonly accounts: WorkspaceAccounts;
  /** The latest process started of each service. */
  readonly services = new Map<ServiceName, ServiceProcess>();
  /** Every process started, replicas included, so that stop() ends them all. */
  readonly processes: ServiceProcess[] = [];
  baseUrl = '';
  mediaDir = '';
  env: NodeJS.ProcessEnv = {};
  blobStore: BlobStoreKind = 'fs';
  /** The S3 server of an `s3` stack (stop and start it to play an outage). */
  s3: S3TestServer | undefined;
  /** The stack's blob store, as the services see it. */
  blobs!: BlobStore;
  /** Whether its services run inside the Jest worker rather than as processes. */
  inProcess = false;

  /** The stack's Redis: a URL, or the cluster or Sentinels it runs on (`redisUrl` is then unused). */
  private constructor(
    readonly redisUrl: string,
    readonly cluster?: TestRedisCluster,
    readonly sentinel?: TestRedisSentinel,
    readonly tls?: TestRedisTls,
  ) {
    this.redis = this.newClient();
    // Tests that stop Redis on purpose expect this client to lose its connection; it reconnects.
    this.redis.on('error', () => undefined);
    this.workspaces = new WorkspaceRepository(this.redis, this.keys);
    this.jobs = new JobRepository(this.redis, this.keys);
    this.accounts = createAccounts({ keyPrefix: this.prefix, secretRotationOverlapSeconds: 86_400 }, this.redis);
  }

  /**
   * Starts `services` against the shared test Redis, or the one named by `env.REDIS_URL`. With
   * `inProcess`, every service of the stack (startService's too) runs inside the Jest worker
   * ({@link InProcessService}) rather than as a process: the same code from the same env, without a
   * Node start and a thousand modules loaded per service.
   */
  static async start(services: ServiceName[], env: Record<string, string> = {}, options: StackOptions = {}): Promise<TestStack> {
    const stack = new TestStack(options.redisTls?.url ?? env.REDIS_URL ?? REDIS_URL, options.redisCluster, options.redisSentinel, options.redisTls);
    stack.inProcess = (options.inProcess ?? false) && IN_PROCESS_ALLOWED;
    const port = await freePort();
    stack.mediaDir = await mkdtemp(join(tmpdir(), 'media-test-'));
    stack.blobStore = options.blobStore ?? DEFAULT_BLOB_STORE;
    if (stack.blobStore === 's3') {
      stack.s3 = await S3TestServer.start();
      stack.blobs = stack.s3.store();
    } else {
      stack.blobs = new FileBlobStore(stack.mediaDir);
    }
    stack.baseUrl = `http://127.0.0.1:${port}`;
    stack.env = {
      PATH: process.env.PATH,
      // With Sentinels, REDIS_URL still names the shared test Redis: the services must not use it.
      ...(stack.cluster ? { REDIS_CLUSTER_NODES: stack.cluster.nodes } : { REDIS_URL: stack.redisUrl, ...stack.sentinel?.env, ...stack.tls?.env }),
      KEY_PREFIX: stack.prefix,
      PORT: String(port),
      PUBLIC_BASE_URL: stack.baseUrl,
      MEDIA_DIR: stack.mediaDir,
      LOG_LEVEL: 'info',
      JOB_LOCK_MS: '3000',
      SHUTDOWN_TIMEOUT_MS: '10000',
      ...stack.s3?.env,
      ...env,
    };
    // Together, as a deployment starts them: most of a start is loading modules, a second or two.
    const started = await Promise.allSettled(services.map((name) => stack.startService(name)));
    const failed = started.find((s) => s.status === 'rejected');
    if (failed) {
      // The start's error is the one to see, not one from cleaning up after it.
      await stack.stop().catch(() => undefined);
      throw failed.reason;
    }
    return stack;
  }

  /** Starts one service; `extraEnv` applies to this process only (e.g. a crash point). */
  async startService(name: ServiceName, extraEnv: Record<string, string> = {}): Promise<ServiceProcess> {
    // Each process its own ops port: several services of a stack share this machine.
    const serviceEnv = { ...this.env, OPS_PORT: String(await freePort()), ...extraEnv };
    const service = this.inProcess ? new InProcessService(name, serviceEnv) : new ServiceProcess(name, serviceEnv);
    this.services.set(name, service);
    this.processes.push(service);
    await service.start(READY[name]);
    return service;
  }

  service(name: ServiceName): ServiceProcess {
    const service = this.services.get(name);
    if (!service) throw new Error(`${name} is not running`);
    return service;
  }

  async createWorkspace(name = 'test'): Promise<TestWorkspace> {
    const created = await this.accounts.createWorkspace(name, `owner@${name}.test`);
    return { workspaceId: created.workspace.id, apiKey: created.apiKey, signingSecret: created.signingSecret, owner: created.owner };
  }

  /**
   * A new connection to the stack's Redis, as the tests' own handle is made. Failover tests read
   * through one made after the promotion, so that what they find does not hang on how the tests'
   * long-lived client came through the switch (ioredis's own Sentinel failover detector could end a
   * client whose reconnect raced the promotion; FollowingSentinelConnector, which the services and
   * these clients use, no longer does).
   */
  newClient(): Redis {
    const { cluster, sentinel, tls } = this;
    return cluster ? cluster.client() : sentinel ? sentinel.client() : tls ? tls.client() : new Redis(this.redisUrl, { maxRetriesPerRequest: null });
  }

  async stop(): Promise<void> {
    await Promise.all(this.processes.map((s) => s.end()));
    const redis = this.redis.status === 'end' ? this.newClient() : this.redis;
    await deleteKeysUnder(redis, this.prefix);
    redis.disconnect();
    this.redis.disconnect();
    await this.blobs?.close();
    await this.s3?.destroy();
    await rm(this.mediaDir, { recursive: true, force: true });
  }
}

/** fetch with the workspace's API key. */
export function api(stack: TestStack, apiKey: string) {
  return async (path: string, init: RequestInit & { json?: unknown } = {}) => {
    const headers = new Headers(init.headers);
    headers.set('authorization', `Bearer ${apiKey}`);
    let body = init.body;
    if (init.json !== undefined) {
      headers.set('content-type', 'application/json');
      body = JSON.stringify(init.json);
    }
    const res = await fetch(`${stack.baseUrl}${path}`, { ...init, headers, body });
    return { status: res.status, headers: res.headers, ...(await readBody(res)) };
  };
}

/** A response body as text and, when it is JSON, parsed (undefined otherwise). */
export async function readBody(res: Response): Promise<{ text: string; json: any }> {
  const text = await res.text();
  try {
    return { text, json: JSON.parse(text) };
  } catch {
    return { text, json: undefined };
  }
}
