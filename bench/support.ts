/**
 * Shared pieces of `npm run bench` (bench/run.ts): the run's deadline and clean-up, the services as
 * child processes from `dist/`, the HTTPS receiver and bare-Express children, the machine
 * description, and small statistics helpers.
 */
import { execFileSync, fork, spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { availableParallelism, cpus, loadavg, tmpdir, totalmem, type as osType, release, arch } from 'node:os';
import { join, resolve } from 'node:path';
import { Redis } from 'ioredis';
import { createAccounts } from '@media/accounts';
import type { TestPki } from '../test/dispatcher/support/pki';
import type { Arrival, ReceiverStats } from './ipc';
import { CONFIG_KEYS, createRedis, loadConfig } from '@media/common';
import { deleteKeysUnder, freePort, REDIS_URL } from '../test/support/stack';

export const ROOT = resolve(__dirname, '..');
export { REDIS_URL };

/**
 * The Redis settings of the bench's environment, as the services read them (REDIS_URL, or Sentinels,
 * credentials, TLS), given to every service and client of the run, so that the bench measures the
 * Redis an operator points it at.
 */
function redisSettings(): Record<string, string> {
  const set = CONFIG_KEYS.filter((key) => key.startsWith('REDIS_') && process.env[key]).map((key) => [key, process.env[key] as string]);
  return { REDIS_URL, ...Object.fromEntries(set) };
}

/** A number from the environment, or the default. */
export function envNumber(name: string, fallback: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isFinite(value) || value < 0) throw new Error(`${name} must be a non-negative number, got ${raw}`);
  return value;
}

// ---------------------------------------------------------------------------------------------
// Run-wide deadline and clean-up: every child process, key prefix and temporary directory the
// bench makes is registered here, and removed on the way out whatever happens.

const children = new Set<ChildProcess>();
const prefixes = new Set<string>();
const tempDirs = new Set<string>();
let cleanupRedis: Redis | undefined;
/** Set by run.ts for `BENCH_REDIS=cluster`: the seeds every service and client of the run uses. */
let clusterNodes: string | undefined;
let clusterClient: (() => Redis) | undefined;

/** Runs everything of this bench on a Redis Cluster instead of REDIS_URL. */
export function useRedisCluster(nodes: string, client: () => Redis): void {
  clusterNodes = nodes;
  clusterClient = client;
}

/** A new connection to the run's Redis: the environment's (REDIS_URL or Sentinels), or the cluster of `BENCH_REDIS=cluster`. */
export function benchRedis(): Redis {
  return clusterClient ? clusterClient() : createRedis(loadConfig(redisSettings()).redis, 'worker');
}
let deadlineAt = Number.POSITIVE_INFINITY;

/** This run's id: every key prefix is `bench-<runId>-<phase>`. */
export const RUN_ID = randomBytes(4).toString('hex');

export function setDeadline(atMs: number): void {
  deadlineAt = atMs;
}

/** Milliseconds left before the run's deadline. */
export function remainingMs(): number {
  return deadlineAt - Date.now();
}

/** A fresh key prefix, deleted at clean-up. */
export function newPrefix(phase: string): string {
  const prefix = `bench-${RUN_ID}-${phase}`;
  prefixes.add(prefix);
  return prefix;
}

export function tempDir(label: string): string {
  const dir = mkdtempSync(join(tmpdir(), `bench-${label}-`));
  tempDirs.add(dir);
  return dir;
}

export function registerChild(child: ChildProcess): void {
  children.add(child);
  child.once('exit', () => children.delete(child));
}

/** Ends one child: SIGTERM, then SIGKILL if it has not gone after `graceMs`. */
export async function stopChild(child: ChildProcess, graceMs = 5_000): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = once(child, 'exit');
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
  await exited;
  clearTimeout(timer);
}

/** Deletes one prefix's keys now (a phase ends), and forgets it. */
export async function dropPrefix(redis: Redis, prefix: string): Promise<void> {
  await deleteKeysUnder(redis, prefix);
  prefixes.delete(prefix);
}

/** Stops every child but `keep`, deletes every key prefix and temporary directory of this run. Idempotent. */
export async function cleanupAll(keep: ChildProcess[] = []): Promise<void> {
  await Promise.all([...children].filter((c) => !keep.includes(c)).map((c) => stopChild(c, 3_000).catch(() => undefined)));
  if (prefixes.size > 0) {
    cleanupRedis ??= benchRedis();
    for (const prefix of [...prefixes]) {
      await deleteKeysUnder(cleanupRedis, prefix).catch((err) => console.error(`could not delete keys under ${prefix}: ${String(err)}`));
      prefixes.delete(prefix);
    }
  }
  cleanupRedis?.disconnect();
  cleanupRedis = undefined;
  for (const dir of tempDirs) rmSync(dir, { recursive: true, force: true });
  tempDirs.clear();
}

/** Last resort on a hard exit: no child outlives the bench. */
process.on('exit', () => {
  for (const child of children) child.kill('SIGKILL');
});

/** Polls `check` every `everyMs` until it is true; fails after `timeoutMs` or at the run's deadline. */
export async function waitUntil(check: () => Promise<boolean> | boolean, timeoutMs: number, what: string, everyMs = 25): Promise<void> {
  const until = Math.min(Date.now() + timeoutMs, deadlineAt);
  while (!(await check())) {
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await sleep(everyMs);
  }
}

export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

// ---------------------------------------------------------------------------------------------
// Services from dist/, as separate processes.

export type ServiceName = 'api-gateway' | 'generator' | 'webhook-dispatcher';

const READY: Record<ServiceName, RegExp> = {
  'api-gateway': /api-gateway listening/,
  generator: /generator started/,
  'webhook-dispatcher': /webhook-dispatcher started/,
};

/** USER_HZ: the unit of /proc/<pid>/stat's CPU times, 100 on every Linux Node runs on. */
const CLOCK_TICKS_PER_SECOND = 100;

/**
 * CPU time (user + system, ms) a child process has used so far, from /proc; undefined where there is
 * no /proc. Read at both ends of a measured stretch, it gives the process's cost per unit of work,
 * which says where the time goes even when a shared machine moves the throughput from run to run.
 */
export function processCpuMs(pid: number | undefined): number | undefined {
  if (pid === undefined) return undefined;
  try {
    // Fields after the command's closing parenthesis: state is the 3rd field, utime the 14th, stime the 15th.
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / CLOCK_TICKS_PER_SECOND;
  } catch {
    return undefined;
  }
}

/**
 * One service process. Its log is read only until it is ready; after that stdout is drained with
 * only a short tail kept, so the bench process spends no time parsing log lines.
 */
export class BenchService {
  private tail: string[] = [];
  private stderr = '';

  private constructor(
    readonly name: ServiceName,
    readonly child: ChildProcess,
  ) {}

  static async start(name: ServiceName, env: NodeJS.ProcessEnv): Promise<BenchService> {
    // BENCH_CPU_PROF=<dir>: each service writes a V8 CPU profile there when it stops (open it in
    // Chrome DevTools or speedscope), to see where a phase's time goes.
    const profile = process.env.BENCH_CPU_PROF ? ['--cpu-prof', `--cpu-prof-dir=${resolve(process.env.BENCH_CPU_PROF)}`] : [];
    const child = spawn(process.execPath, [...profile, join(ROOT, 'services', name, 'dist', 'main.js')], { env, stdio: ['ignore', 'pipe', 'pipe'] });
    registerChild(child);
    const service = new BenchService(name, child);
    child.stderr!.on('data', (c: Buffer) => {
      if (service.stderr.length < 20_000) service.stderr += c.toString();
    });
    await new Promise<void>((ready, fail) => {
      let out = '';
      const timer = setTimeout(() => fail(new Error(`${name} did not start within 30 s\n${out.slice(-2000)}\n${service.stderr}`)), 30_000);
      const onExit = (code: number | null) => {
        clearTimeout(timer);
        fail(new Error(`${name} exited with ${code} while starting\n${out.slice(-2000)}\n${service.stderr}`));
      };
      const onData = (c: Buffer) => {
        out += c.toString();
        if (READY[name].test(out)) {
          clearTimeout(timer);
          child.off('exit', onExit);
          child.stdout!.off('data', onData);
          child.stdout!.on('data', (chunk: Buffer) => {
            service.tail.push(chunk.toString());
            if (service.tail.length > 20) service.tail.shift();
          });
          ready();
        }
      };
      child.stdout!.on('data', onData);
      child.once('exit', onExit);
    });
    return service;
  }

  get alive(): boolean {
    return this.child.exitCode === null && this.child.signalCode === null;
  }

  /** CPU time the process has used so far (see {@link processCpuMs}). */
  cpuMs(): number | undefined {
    return processCpuMs(this.child.pid);
  }

  /** The last lines it logged and its stderr, for an error message. */
  diagnostics(): string {
    return `${this.name} (pid ${this.child.pid}) last output:\n${this.tail.join('').slice(-3000)}\nstderr: ${this.stderr.slice(-2000)}`;
  }

  stop(): Promise<void> {
    return stopChild(this.child);
  }
}

/**
 * The Redis URL for the naive peers (bench/naive-gateway.ts, bench/naive-dispatcher.ts), which
 * connect as a newcomer's code does, `new Redis(url)`; undefined when the run's Redis is more than a
 * URL (a cluster, Sentinels, TLS or credential settings), and those peers are then left out.
 */
export function naivePeerRedisUrl(): string | undefined {
  if (clusterNodes) return undefined;
  const settings = redisSettings();
  return Object.keys(settings).length === 1 ? settings.REDIS_URL : undefined;
}

/** Settings every service of the bench gets; `extra` wins. */
export async function serviceEnv(prefix: string, pki: TestPki, extra: Record<string, string> = {}): Promise<NodeJS.ProcessEnv> {
  const port = await freePort();
  return {
    PATH: process.env.PATH,
    ...(clusterNodes ? { REDIS_CLUSTER_NODES: clusterNodes } : redisSettings()),
    KEY_PREFIX: prefix,
    PORT: String(port),
    PUBLIC_BASE_URL: `http://127.0.0.1:${port}`,
    MEDIA_DIR: tempDir('media'),
    // The production default: the gateway logs one line per request, the dispatcher one per attempt.
    LOG_LEVEL: 'info',
    // A loopback https receiver with our own CA, as the dispatcher tests do.
    CALLBACK_ALLOWED_CIDRS: '127.0.0.0/8,::1/128',
    CALLBACK_CA_FILE: pki.caFile,
    DOCS_URL: 'https://docs.media.test',
    ...extra,
  };
}

/** A group of services on one key prefix, each with its own ops port. */
export class BenchStack {
  readonly services: BenchService[] = [];

  private constructor(
    readonly prefix: string,
    readonly env: NodeJS.ProcessEnv,
  ) {}

  static async start(prefix: string, names: ServiceName[], env: NodeJS.ProcessEnv): Promise<BenchStack> {
    const stack = new BenchStack(prefix, env);
    try {
      for (const name of names) stack.services.push(await BenchService.start(name, { ...env, OPS_PORT: String(await freePort()) }));
    } catch (err) {
      await stack.stop();
      throw err;
    }
    return stack;
  }

  get baseUrl(): string {
    return `http://127.0.0.1:${this.env.PORT}`;
  }

  /** Throws with their output if a service has died. */
  assertAlive(): void {
    const dead = this.services.filter((s) => !s.alive);
    if (dead.length > 0) throw new Error(`service died:\n${dead.map((s) => s.diagnostics()).join('\n')}`);
  }

  async stop(): Promise<void> {
    await Promise.all(this.services.map((s) => s.stop()));
  }
}

/**
 * A redis-server of the bench's own on a free loopback port (no persistence), for figures that read
 * Redis's own counters and must not see anyone else's commands. Stopped with the run, or by `stop`.
 */
export async function privateRedis(label: string): Promise<{ url: string; port: number; stop: () => Promise<void> }> {
  const port = await freePort();
  const child = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--dir', tempDir(label), '--save', '', '--appendonly', 'no'], {
    stdio: 'ignore',
  });
  registerChild(child);
  const url = `redis://127.0.0.1:${port}`;
  await waitUntil(
    async () => {
      const probe = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
      probe.on('error', () => undefined);
      try {
        await probe.connect();
        return (await probe.ping()) === 'PONG';
      } catch {
        return false;
      } finally {
        probe.disconnect();
      }
    },
    10_000,
    `the ${label} redis-server`,
  );
  return { url, port, stop: () => stopChild(child) };
}

/** The settings that put the services on such a Redis (Sentinel settings, read first, blanked). */
export function privateRedisEnv(url: string): Record<string, string> {
  return { REDIS_URL: url, REDIS_SENTINELS: '', REDIS_SENTINEL_NAME: '' };
}

/** A workspace on `prefix`, made the way the tests and the admin CLI make one. */
export async function createWorkspace(redis: Redis, prefix: string, name = 'bench'): Promise<{ workspaceId: string; apiKey: string }> {
  const created = await createAccounts({ keyPrefix: prefix, secretRotationOverlapSeconds: 86_400 }, redis).createWorkspace(name, `owner@${name}.test`);
  return { workspaceId: created.workspace.id, apiKey: created.apiKey };
}

// ---------------------------------------------------------------------------------------------
// Child helpers written in TypeScript (bench/receiver.ts, bench/bare-express.ts), run by fork with
// the parent's own tsx loader, and driven over IPC.

type Pending = Map<number, { resolve: (value: unknown) => void; reject: (err: Error) => void }>;

/** A forked helper answering `{ rid, cmd, ... }` messages with `{ rid, result }` or `{ rid, error }`. */
/** POSTs one image request to a gateway and returns the job id; anything but 202 is an error. */
export async function submitImage(baseUrl: string, apiKey: string, body: string): Promise<string> {
  const res = await fetch(`${baseUrl}/v1/images/generations`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${apiKey}` },
    body,
  });
  const text = await res.text();
  if (res.status !== 202) throw new Error(`the gateway answered ${res.status}: ${text}`);
  return (JSON.parse(text) as { id: string }).id;
}

export class HelperProcess {
  private nextRid = 1;
  private readonly pending: Pending = new Map();

  private constructor(readonly child: ChildProcess) {
    child.on('message', (msg: { rid?: number; result?: unknown; error?: string }) => {
      if (msg.rid === undefined) return;
      const waiter = this.pending.get(msg.rid);
      if (!waiter) return;
      this.pending.delete(msg.rid);
      if (msg.error !== undefined) waiter.reject(new Error(msg.error));
      else waiter.resolve(msg.result);
    });
    child.once('exit', (code) => {
      for (const waiter of this.pending.values()) waiter.reject(new Error(`helper exited with ${code}`));
      this.pending.clear();
    });
  }

  /**
   * Forks `bench/<file>`. With `profiled`, a peer under measurement (bare Express, the naive
   * gateway and dispatcher) writes a V8 CPU profile to BENCH_CPU_PROF when it stops, as the services do.
   */
  static async start(file: string, env: NodeJS.ProcessEnv = {}, profiled = false): Promise<HelperProcess> {
    const profile = profiled && process.env.BENCH_CPU_PROF ? ['--cpu-prof', `--cpu-prof-dir=${resolve(process.env.BENCH_CPU_PROF)}`] : [];
    const child = fork(join(ROOT, 'bench', file), [], {
      env: { ...process.env, ...env },
      execArgv: [...process.execArgv, ...profile],
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    registerChild(child);
    const helper = new HelperProcess(child);
    await helper.call('ping', {}, 30_000);
    return helper;
  }

  call<T = unknown>(cmd: string, args: Record<string, unknown> = {}, timeoutMs = 30_000): Promise<T> {
    const rid = this.nextRid++;
    return new Promise<T>((resolvePromise, reject) => {
      const timer = setTimeout(() => {
        this.pending.delete(rid);
        reject(new Error(`helper ${cmd} timed out`));
      }, timeoutMs);
      this.pending.set(rid, {
        resolve: (v) => {
          clearTimeout(timer);
          resolvePromise(v as T);
        },
        reject: (e) => {
          clearTimeout(timer);
          reject(e);
        },
      });
      this.child.send({ rid, cmd, ...args });
    });
  }

  stop(): Promise<void> {
    return stopChild(this.child);
  }
}

/** The HTTPS receiver child (bench/receiver.ts): `/hook…` answers 204, `/fail…` answers 500, `/hang…` never answers. */
export class ReceiverClient {
  private constructor(
    readonly helper: HelperProcess,
    readonly port: number,
  ) {}

  static async start(pki: TestPki): Promise<ReceiverClient> {
    const helper = await HelperProcess.start('receiver.ts');
    const port = await helper.call<number>('listen', { cert: pki.cert, key: pki.key });
    return new ReceiverClient(helper, port);
  }

  url(path: '/hook' | '/fail' | '/hang'): string {
    return `https://127.0.0.1:${this.port}${path}`;
  }

  /** Ports opened by {@link origins}, kept for the next phase that asks. */
  private readonly morePorts: number[] = [];

  /**
   * `count` distinct origins (`https://127.0.0.1:<port>`) answering as `/hook` and `/fail` do, the
   * first of them this receiver's own port; a destination is an origin, so each is one of its own.
   */
  async origins(count: number): Promise<string[]> {
    const missing = count - 1 - this.morePorts.length;
    if (missing > 0) this.morePorts.push(...(await this.helper.call<number[]>('listenMore', { count: missing })));
    return [this.port, ...this.morePorts.slice(0, count - 1)].map((port) => `https://127.0.0.1:${port}`);
  }

  /** Forgets every arrival and zeroes the counters. */
  reset(): Promise<void> {
    return this.helper.call('reset');
  }

  stats(): Promise<ReceiverStats> {
    return this.helper.call('stats');
  }

  /** How many distinct `webhook-id`s arrived. */
  uniqueCount(): Promise<number> {
    return this.helper.call('unique');
  }

  /** The first arrival of each `webhook-id`. */
  arrivals(): Promise<Arrival[]> {
    return this.helper.call('arrivals', {}, 60_000);
  }

  /** The body and headers of the latest request (what the dispatcher sends). */
  sample(): Promise<{ body: string; headers: Record<string, string> } | null> {
    return this.helper.call('sample');
  }

  stop(): Promise<void> {
    return this.helper.stop();
  }
}

// ---------------------------------------------------------------------------------------------
// Numbers and the machine.

/** The nearest-rank percentile of sorted samples. */
export function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))];
}

export interface MachineInfo {
  cpu: string;
  cores: number;
  memoryGiB: number;
  node: string;
  redis: string;
  os: string;
  date: string;
  loadAverageAtStart: number[];
  loadAverageAtEnd?: number[];
  git: string;
}

export async function machineInfo(redis: Redis): Promise<MachineInfo> {
  const info = await redis.info('server');
  const cpuList = cpus();
  let git = 'unknown';
  try {
    const head = execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: ROOT, encoding: 'utf8' }).trim();
    const dirty = execFileSync('git', ['status', '--porcelain', '--untracked-files=no'], { cwd: ROOT, encoding: 'utf8' }).trim() !== '';
    git = `${head}${dirty ? ' + uncommitted changes' : ''}`;
  } catch {
    // not a git checkout
  }
  return {
    cpu: cpuList[0]?.model.trim() ?? 'unknown',
    cores: availableParallelism(),
    memoryGiB: Math.round((totalmem() / 2 ** 30) * 10) / 10,
    node: process.version,
    redis: `${/redis_version:(\S+)/.exec(info)?.[1] ?? 'unknown'}${clusterNodes ? `, cluster of ${clusterNodes.split(',').length} primaries on this machine` : ''}`,
    os: `${osType()} ${release()} ${arch()}`,
    date: new Date().toISOString(),
    loadAverageAtStart: loadavg().map((l) => Math.round(l * 100) / 100),
    git,
  };
}

export function currentLoad(): number[] {
  return loadavg().map((l) => Math.round(l * 100) / 100);
}

/** Prints rows as an aligned text table. */
export function printTable(headers: string[], rows: string[][]): void {
  const widths = headers.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: string[]) =>
    cells
      .map((c, i) => (c ?? '').padEnd(widths[i]))
      .join('  ')
      .trimEnd();
  console.log(line(headers));
  console.log(widths.map((w) => '-'.repeat(w)).join('  '));
  for (const row of rows) console.log(line(row));
}

/** What every phase gets from bench/run.ts. */
export interface BenchContext {
  /** The bench's own Redis client (reads, seeding, MEMORY USAGE). */
  redis: Redis;
  /** The receiver's CA and 2048-bit RSA certificate. */
  pki: TestPki;
  receiver: ReceiverClient;
}
