import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { isAbsolute, join, relative, resolve } from 'node:path';
import { createAccounts, WorkspaceRepository } from '@media/accounts';
import { createRedis, loadConfig, pingRedis, type AppConfig, type LogFormat, type RedisTarget } from '@media/common';
import { StoreKeys, SecretBox } from '@media/storage';
import { DemoSecrets, DemoWorkspaceFile, type DemoWorkspace } from './demo-workspace';
import { ensureLoopbackPki } from './local-pki';
import { startLocalReceiver, type LocalReceiver } from './local-receiver';
import { StackPidFile } from './stack-pid-file';

/**
 * `npm start`: the whole system on one machine. A local redis-server when none answers at
 * REDIS_URL, a demo workspace on first run, a local HTTPS receiver for its callbacks (unless
 * LOCAL_RECEIVER=off), then the three services as separate processes.
 *
 * Every process it starts is tethered to it (tether.ts): whether the launcher is stopped by a
 * signal (Ctrl-C, `kill`, npm passing on SIGINT or SIGTERM) or dies without warning (SIGKILL, a
 * crash), nothing of the stack is left holding a port.
 */
const ROOT = resolve(__dirname, '../../..');
const TETHER = join(__dirname, 'tether.js');
const SERVICES = ['api-gateway', 'generator', 'webhook-dispatcher'] as const;
/** The receiver listens on this address only; the exemption is this address and the receiver's port. */
const RECEIVER_HOST = '127.0.0.1';
const RECEIVER_CERT_DAYS = 90;
const READY_WITHIN_MS = 60_000;
/** How often the demo workspace's secrets are read back, so var/demo-workspace.json follows a rotation. */
const SECRETS_FOLLOW_MS = 2_000;
/** Beyond a service's own SHUTDOWN_TIMEOUT_MS, before it is SIGKILLed. */
const STOP_GRACE_MS = 5_000;
const REDIS_STOP_MS = 10_000;

/** A path as a reader finds it: relative to the repository when inside it. */
const shown = (path: string): string => {
  const rel = relative(ROOT, path);
  return rel.startsWith('..') || isAbsolute(rel) ? path : rel;
};

/**
 * SIGTERM, then SIGKILL after `graceMs`; resolves once the child has exited. A child started in a
 * process group of its own (`detached`) is SIGKILLed with its group, so that what it runs goes too.
 */
async function terminate(child: ChildProcess, graceMs: number, group = false): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = once(child, 'exit');
  child.kill('SIGTERM');
  let timer: NodeJS.Timeout | undefined;
  const inTime = await Promise.race([exited.then(() => true), new Promise<boolean>((r) => (timer = setTimeout(() => r(false), graceMs)))]);
  clearTimeout(timer);
  if (!inTime) {
    if (group && child.pid !== undefined) process.kill(-child.pid, 'SIGKILL');
    else child.kill('SIGKILL');
    await exited;
  }
}

type SingleRedis = Extract<RedisTarget, { kind: 'single' }>;

async function ensureRedis(target: SingleRedis, stateDir: string, started: (child: ChildProcess) => void): Promise<void> {
  const url = target.url;
  // The target, not its URL alone: a password may be set beside an address-only REDIS_URL.
  const probe = createRedis(target, 'request');
  probe.on('error', () => undefined);
  const up = await pingRedis(probe, 1_500);
  probe.disconnect();
  if (up) return;
  const { hostname, port } = new URL(url);
  if (!['127.0.0.1', 'localhost', '::1', '[::1]'].includes(hostname)) {
    throw new Error(`Redis at ${url} does not answer, and it is not local, so none is started here`);
  }
  if (spawnSync('redis-server', ['--version']).status !== 0) installRedis();
  const dir = join(stateDir, 'redis');
  await mkdir(dir, { recursive: true });
  console.log(`starting redis-server on port ${port || 6379} (data in ${shown(dir)}, AOF on)`);
  const args = ['--port', port || '6379', '--bind', '127.0.0.1', '--dir', dir, '--appendonly', 'yes', '--save', ''];
  // Its own process group, so that a Ctrl-C in the terminal does not stop Redis under services
  // that are still draining: the launcher stops it after them.
  const child = spawn(process.execPath, [TETHER, '--exec', 'redis-server', ...args], { stdio: ['ignore', 'ignore', 'inherit', 'ipc'], detached: true });
  started(child);
  for (let i = 0; i < 50; i++) {
    const client = createRedis(target, 'request');
    client.on('error', () => undefined);
    const ok = await pingRedis(client, 200);
    client.disconnect();
    if (ok) return;
    if (child.exitCode !== null) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error('redis-server did not start');
}

function installRedis(): void {
  if (process.getuid?.() !== 0 || spawnSync('apt-get', ['--version']).status !== 0) {
    throw new Error('redis-server is not installed; install it (Debian/Ubuntu: apt-get install redis-server) and run npm start again');
  }
  console.log('installing redis-server from Debian packages…');
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  spawnSync('apt-get', ['update', '-qq'], { stdio: 'inherit', env });
  const install = spawnSync('apt-get', ['install', '-y', '-qq', 'redis-server'], { stdio: 'inherit', env });
  if (install.status !== 0) throw new Error('apt-get install redis-server failed');
}

/**
 * The demo workspace, made on the first run; its secrets are followed in the store from then on
 * ({@link DemoSecrets}), so a rotation needs no restart.
 */
async function ensureDemoWorkspace(
  config: AppConfig,
  file: DemoWorkspaceFile,
  workspaces: WorkspaceRepository,
  redis: ReturnType<typeof createRedis>,
): Promise<{ demo: DemoWorkspace; created: boolean }> {
  const saved = await file.read();
  if (saved && (await workspaces.get(saved.workspace_id))) return { demo: saved, created: false };
  const created = await createAccounts(config, redis).createWorkspace('demo', 'owner@demo.local');
  const demo: DemoWorkspace = {
    workspace_id: created.workspace.id,
    api_key: created.apiKey,
    signing_secret: created.signingSecret,
    dashboard: { url: `${config.publicBaseUrl}/dashboard/`, email: created.owner.email, password: created.owner.password, role: 'owner' },
  };
  await file.write(demo);
  return { demo, created: true };
}

/**
 * The callback settings that let the dispatcher reach the local receiver, added to whatever the
 * environment already allows: the receiver's one address and port (not a range: nothing else on
 * this machine becomes reachable) and one extra CA (its own, whose key no longer exists). A
 * deployment started any other way has neither.
 */
async function localCallbackEnv(config: AppConfig, receiverEndpoint: string, receiverCaFile: string, pkiDir: string): Promise<Record<string, string>> {
  const endpoints = [...new Set([...config.callbackAllowedEndpoints, receiverEndpoint])];
  let caFile = receiverCaFile;
  if (config.callbackCaFile) {
    // CALLBACK_CA_FILE names one bundle, so a CA the developer already trusts goes in beside ours.
    caFile = join(pkiDir, 'ca-bundle.pem');
    await writeFile(caFile, `${await readFile(config.callbackCaFile, 'utf8')}\n${await readFile(receiverCaFile, 'utf8')}`);
  }
  return { CALLBACK_ALLOWED_ENDPOINTS: endpoints.join(','), CALLBACK_CA_FILE: caFile };
}

/** Waits until the gateway and both workers answer `/readyz`, or until a child has exited. */
async function waitUntilReady(urls: string[], isStopping: () => boolean): Promise<string[]> {
  const deadline = Date.now() + READY_WITHIN_MS;
  let pending = urls;
  while (pending.length > 0 && Date.now() < deadline && !isStopping()) {
    const answers = await Promise.all(
      pending.map((url) =>
        fetch(url, { signal: AbortSignal.timeout(1_000) }).then(
          (r) => r.ok,
          () => false,
        ),
      ),
    );
    pending = pending.filter((_, i) => !answers[i]);
    if (pending.length > 0) await new Promise((r) => setTimeout(r, 200));
  }
  return pending;
}

/** What is running, so that one `stop` can take down whatever has been started so far. */
class Stack {
  readonly services: ChildProcess[] = [];
  redis: ChildProcess | undefined;
  receiver: LocalReceiver | undefined;
  secrets: DemoSecrets | undefined;
  redisClient: ReturnType<typeof createRedis> | undefined;
  #stopping = false;

  constructor(
    private readonly pidFile: StackPidFile,
    private readonly serviceGraceMs: number,
  ) {}

  get stopping(): boolean {
    return this.#stopping;
  }

  /** Services first (they drain against Redis), then the receiver, then Redis; then exits. Safe to call twice. */
  async stop(code: number): Promise<void> {
    if (this.#stopping) return;
    this.#stopping = true;
    this.secrets?.close();
    await Promise.all(this.services.map((child) => terminate(child, this.serviceGraceMs)));
    await this.receiver?.close();
    this.redisClient?.disconnect();
    if (this.redis) await terminate(this.redis, REDIS_STOP_MS, true);
    this.pidFile.release();
    process.exit(code);
  }
}

async function main(): Promise<void> {
  const config = loadConfig();
  const stateDir = resolve(ROOT, config.localStack.dir);
  const pidFile = new StackPidFile(join(stateDir, 'npm-start.pid'));
  pidFile.claim(ROOT);
  const stack = new Stack(pidFile, config.shutdownTimeoutMs + STOP_GRACE_MS);
  // From here on, one way out: stop what has started so far, then exit.
  process.on('SIGINT', () => void stack.stop(0));
  process.on('SIGTERM', () => void stack.stop(0));
  try {
    await startStack(config, stateDir, stack, pidFile);
  } catch (err) {
    // A start-up step cut short by a stop already under way is no error of its own.
    if (!stack.stopping) console.error(err instanceof Error ? err.message : err);
    await stack.stop(1);
  }
}

async function startStack(config: AppConfig, stateDir: string, stack: Stack, pidFile: StackPidFile): Promise<void> {
  // A cluster (REDIS_CLUSTER_NODES) is the operator's to run; only a single local Redis is started here.
  if (config.redis.kind === 'single') await ensureRedis(config.redis, stateDir, (child) => (stack.redis = child));
  if (stack.stopping) return;

  const redis = createRedis(config.redis, 'request');
  // Its errors reach the caller of each command; DemoSecrets keeps the last secrets while Redis is away.
  redis.on('error', () => undefined);
  stack.redisClient = redis;
  const workspaces = new WorkspaceRepository(redis, new StoreKeys(config.keyPrefix), SecretBox.of(config.secretsEncryptionKeys));
  const demoPath = join(stateDir, 'demo-workspace.json');
  const demoFile = new DemoWorkspaceFile(demoPath, shown(demoPath));
  const { demo, created } = await ensureDemoWorkspace(config, demoFile, workspaces, redis);
  const secrets = new DemoSecrets(workspaces, demoFile, demo, (line) => console.log(line));
  stack.secrets = secrets;
  // A rotation while the stack was down is caught up on now, before the file is printed.
  await secrets.current();
  secrets.follow(SECRETS_FOLLOW_MS);

  let callbackEnv: Record<string, string> = {};
  let pkiCaFile = '';
  if (config.localStack.receiver) {
    const pkiDir = join(stateDir, 'local-receiver');
    const { files: pki } = ensureLoopbackPki(pkiDir, { days: RECEIVER_CERT_DAYS });
    pkiCaFile = pki.caFile;
    stack.receiver = await startLocalReceiver({
      port: config.localStack.receiverPort,
      secret: () => secrets.current(),
      owner: { pid: process.pid, root: ROOT },
      tls: { cert: await readFile(pki.certFile, 'utf8'), key: await readFile(pki.keyFile, 'utf8') },
      log: (line) => console.log(`local receiver: ${line}`),
    });
    callbackEnv = await localCallbackEnv(config, `${RECEIVER_HOST}:${stack.receiver.port}`, pki.caFile, pkiDir);
  }
  if (stack.stopping) return;

  // Bull Board is mounted only with an operator password: without one set, the stack makes one (kept
  // in the state directory, so it stays the same from run to run), and the board is there as the
  // docs show it.
  const operatorFile = join(stateDir, 'operator-password');
  const operatorEnv = config.operatorPassword ? {} : { OPERATOR_PASSWORD: await localOperatorPassword(operatorFile) };

  // One machine, three ops ports (design section 3): gateway OPS_PORT, generator +1, dispatcher +2.
  const opsPortOf = (index: number) => config.opsPort + index;
  // A person at a terminal reads one short line per event; a pipe or a file (a program, the tests)
  // gets JSON lines, as in production. A LOG_FORMAT of the developer's own is kept either way.
  const logFormat: LogFormat = config.logFormat ?? (process.stdout.isTTY ? 'pretty' : 'json');
  pidFile.recordPorts({
    api: config.port,
    ops: config.opsPort,
    ...(stack.receiver ? { receiver: stack.receiver.port } : {}),
  });
  SERVICES.forEach((name, index) => {
    const child = spawn(process.execPath, [TETHER, join(ROOT, 'services', name, 'dist', 'main.js')], {
      // The default MEDIA_DIR is relative; every service gets the same absolute one.
      env: {
        ...process.env,
        ...callbackEnv,
        ...operatorEnv,
        MEDIA_DIR: resolve(ROOT, config.mediaDir),
        OPS_PORT: String(opsPortOf(index)),
        LOG_FORMAT: logFormat,
      },
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    child.on('exit', (code, signal) => {
      if (!stack.stopping) {
        console.error(`${name} exited (${signal ?? code}); stopping the stack`);
        void stack.stop(1);
      }
    });
    stack.services.push(child);
  });

  const notReady = await waitUntilReady(
    [`http://127.0.0.1:${config.port}/readyz`, ...SERVICES.map((_, index) => `http://127.0.0.1:${opsPortOf(index)}/readyz`)],
    () => stack.stopping,
  );
  if (stack.stopping) return;

  // Printed last, after the services' start-up lines, so that it is what the terminal shows.
  console.log(created ? `created a demo workspace (saved to ${demoFile.label}):` : `demo workspace (saved in ${demoFile.label}):`);
  // The file's copy: the secret that signs now, even after a rotation.
  console.log(JSON.stringify((await demoFile.read()) ?? demo, null, 2));
  console.log(`API: ${config.publicBaseUrl}/v1  (Authorization: Bearer <api_key>)`);
  if (stack.receiver) {
    const { callbackUrl, port } = stack.receiver;
    console.log(`Callbacks: ${callbackUrl}  (local HTTPS receiver: verifies each delivery with the demo workspace's signing secret)`);
    console.log(`  what arrived: curl -s --cacert ${shown(pkiCaFile)} ${callbackUrl}`);
    console.log(`  for this stack only, the dispatcher trusts that CA and CALLBACK_ALLOWED_ENDPOINTS includes ${RECEIVER_HOST}:${port}`);
  } else {
    console.log('Callbacks: no local receiver (LOCAL_RECEIVER=off): a callback_url must be a public https URL, as in production');
  }
  console.log(`Dashboard: ${config.publicBaseUrl}/dashboard/  (sign in with dashboard.email and dashboard.password)`);
  SERVICES.forEach((name, index) => console.log(`${name} ops: http://127.0.0.1:${opsPortOf(index)}  (/healthz /readyz /metrics)`));
  console.log(
    `Bull Board: http://127.0.0.1:${opsPortOf(0)}/queues  (${
      config.operatorPassword ? 'OPERATOR_USERNAME / OPERATOR_PASSWORD' : `user ${config.operatorUsername}, password in ${shown(operatorFile)}`
    })`,
  );
  console.log(notReady.length === 0 ? 'stack ready (Ctrl-C stops it)' : `not ready after ${READY_WITHIN_MS / 1000} s: ${notReady.join(' ')}`);
}

/** The local stack's operator password: the one saved in `path`, or a new one saved there (owner-only). */
async function localOperatorPassword(path: string): Promise<string> {
  const saved = await readFile(path, 'utf8').then(
    (text) => text.trim(),
    () => '',
  );
  if (saved.length >= 16) return saved;
  const password = randomBytes(18).toString('base64url');
  await writeFile(path, `${password}\n`, { mode: 0o600 });
  return password;
}

main().catch((err) => {
  console.error(err instanceof Error ? err.message : err);
  process.exit(1);
});
