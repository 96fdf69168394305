import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { chmod, mkdir, readFile, writeFile } from 'node:fs/promises';
import { isAbsolute, join, relative, resolve } from 'node:path';
import { createAccounts } from '@media/accounts';
import { createRedis, loadConfig, pingRedis, type AppConfig } from '@media/common';
import { StoreKeys, WorkspaceRepository } from '@media/storage';
import { ensureLoopbackPki } from './local-pki';
import { startLocalReceiver } from './local-receiver';

/**
 * `npm start`: the whole system on one machine. A local redis-server when none answers at
 * REDIS_URL, a demo workspace on first run, a local HTTPS receiver for its callbacks, then the
 * three services as separate processes.
 */
const ROOT = resolve(__dirname, '../../..');
const SERVICES = ['api-gateway', 'generator', 'webhook-dispatcher'] as const;
/** The receiver listens on this address only, so the exemption covers nothing else. */
const RECEIVER_CIDR = '127.0.0.1/32';
const RECEIVER_CERT_DAYS = 90;
const READY_WITHIN_MS = 60_000;

/** A path as a reader finds it: relative to the repository when inside it. */
const shown = (path: string): string => {
  const rel = relative(ROOT, path);
  return rel.startsWith('..') || isAbsolute(rel) ? path : rel;
};

async function ensureRedis(url: string, stateDir: string): Promise<ChildProcess | undefined> {
  const probe = createRedis(url, 'request');
  probe.on('error', () => undefined);
  const up = await pingRedis(probe, 1_500);
  probe.disconnect();
  if (up) return undefined;
  const { hostname, port } = new URL(url);
  if (!['127.0.0.1', 'localhost', '::1', '[::1]'].includes(hostname)) {
    throw new Error(`Redis at ${url} does not answer, and it is not local, so none is started here`);
  }
  if (spawnSync('redis-server', ['--version']).status !== 0) installRedis();
  const dir = join(stateDir, 'redis');
  await mkdir(dir, { recursive: true });
  console.log(`starting redis-server on port ${port || 6379} (data in ${shown(dir)}, AOF on)`);
  const child = spawn('redis-server', ['--port', port || '6379', '--bind', '127.0.0.1', '--dir', dir, '--appendonly', 'yes', '--save', ''], {
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  for (let i = 0; i < 50; i++) {
    const client = createRedis(url, 'request');
    client.on('error', () => undefined);
    const ok = await pingRedis(client, 200);
    client.disconnect();
    if (ok) return child;
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

/** What `var/demo-workspace.json` holds. */
interface DemoWorkspace {
  workspace_id: string;
  api_key: string;
  signing_secret: string;
  dashboard: { url: string; email: string; password: string; role: string };
}

/**
 * The demo workspace, made on the first run, and its signing secrets as they stand now: read from
 * the store rather than the file, so that after a `rotate-secret` a restart is all the receiver needs.
 */
async function ensureDemoWorkspace(config: AppConfig, stateDir: string): Promise<{ demo: DemoWorkspace; created: boolean; secrets: string[] }> {
  const file = join(stateDir, 'demo-workspace.json');
  const redis = createRedis(config.redis, 'request');
  try {
    const workspaces = new WorkspaceRepository(redis, new StoreKeys(config.keyPrefix));
    if (existsSync(file)) {
      const saved = JSON.parse(await readFile(file, 'utf8')) as DemoWorkspace;
      if (await workspaces.get(saved.workspace_id)) return { demo: saved, created: false, secrets: await workspaces.activeSecrets(saved.workspace_id) };
    }
    const created = await createAccounts(config, redis).createWorkspace('demo', 'owner@demo.local');
    const demo: DemoWorkspace = {
      workspace_id: created.workspace.id,
      api_key: created.apiKey,
      signing_secret: created.signingSecret,
      dashboard: { url: `${config.publicBaseUrl}/dashboard/`, email: created.owner.email, password: created.owner.password, role: 'owner' },
    };
    await mkdir(stateDir, { recursive: true });
    await writeFile(file, JSON.stringify(demo, null, 2), { mode: 0o600 });
    await chmod(file, 0o600);
    return { demo, created: true, secrets: [created.signingSecret] };
  } finally {
    redis.disconnect();
  }
}

/**
 * The callback settings that let the dispatcher reach the local receiver, added to whatever the
 * environment already allows: one address (the receiver's) rather than a range, and one extra CA
 * (its own, whose key no longer exists). A deployment started any other way has neither.
 */
async function localCallbackEnv(config: AppConfig, receiverCaFile: string, pkiDir: string): Promise<Record<string, string>> {
  const cidrs = [...new Set([...config.callbackAllowedCidrs, RECEIVER_CIDR])];
  let caFile = receiverCaFile;
  if (config.callbackCaFile) {
    // CALLBACK_CA_FILE names one bundle, so a CA the developer already trusts goes in beside ours.
    caFile = join(pkiDir, 'ca-bundle.pem');
    await writeFile(caFile, `${await readFile(config.callbackCaFile, 'utf8')}\n${await readFile(receiverCaFile, 'utf8')}`);
  }
  return { CALLBACK_ALLOWED_CIDRS: cidrs.join(','), CALLBACK_CA_FILE: caFile };
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

async function main(): Promise<void> {
  const config = loadConfig();
  const stateDir = resolve(ROOT, config.localStack.dir);
  // A cluster (REDIS_CLUSTER_NODES) is the operator's to run; only a single local Redis is started here.
  const redisChild = config.redis.kind === 'single' ? await ensureRedis(config.redis.url, stateDir) : undefined;
  try {
    await startStack(config, stateDir, redisChild);
  } catch (err) {
    redisChild?.kill('SIGTERM');
    throw err;
  }
}

async function startStack(config: AppConfig, stateDir: string, redisChild: ChildProcess | undefined): Promise<void> {
  const { demo, created, secrets } = await ensureDemoWorkspace(config, stateDir);

  const pkiDir = join(stateDir, 'local-receiver');
  const { files: pki } = ensureLoopbackPki(pkiDir, { days: RECEIVER_CERT_DAYS });
  const receiver = await startLocalReceiver({
    port: config.localStack.receiverPort,
    secret: secrets,
    tls: { cert: await readFile(pki.certFile, 'utf8'), key: await readFile(pki.keyFile, 'utf8') },
    log: (line) => console.log(`local receiver: ${line}`),
  });
  const callbackEnv = await localCallbackEnv(config, pki.caFile, pkiDir);

  let stopping = false;
  // One machine, three ops ports (design section 3): gateway OPS_PORT, generator +1, dispatcher +2.
  const opsPortOf = (index: number) => config.opsPort + index;
  const children = SERVICES.map((name, index) => {
    const child = spawn(process.execPath, [join(ROOT, 'services', name, 'dist', 'main.js')], {
      // The default MEDIA_DIR is relative; every service gets the same absolute one.
      env: { ...process.env, ...callbackEnv, MEDIA_DIR: resolve(ROOT, config.mediaDir), OPS_PORT: String(opsPortOf(index)) },
      stdio: ['ignore', 'inherit', 'inherit'],
    });
    child.on('exit', (code, signal) => {
      if (!stopping) {
        console.error(`${name} exited (${signal ?? code}); stopping the stack`);
        void stop(1);
      }
    });
    return child;
  });

  const stop = async (code: number) => {
    if (stopping) return;
    stopping = true;
    await Promise.all(
      children.map((c) => new Promise<void>((r) => (c.exitCode !== null || c.signalCode !== null ? r() : (c.once('exit', () => r()), c.kill('SIGTERM'))))),
    );
    await receiver.close();
    redisChild?.kill('SIGTERM');
    process.exit(code);
  };
  process.on('SIGINT', () => void stop(0));
  process.on('SIGTERM', () => void stop(0));

  const notReady = await waitUntilReady(
    [`http://127.0.0.1:${config.port}/readyz`, ...SERVICES.map((_, index) => `http://127.0.0.1:${opsPortOf(index)}/readyz`)],
    () => stopping,
  );
  if (stopping) return;

  // Printed last, after the services' start-up lines, so that it is what the terminal shows.
  const demoFile = shown(join(stateDir, 'demo-workspace.json'));
  console.log(created ? `created a demo workspace (saved to ${demoFile}):` : `demo workspace (saved in ${demoFile}):`);
  console.log(JSON.stringify(demo, null, 2));
  console.log(`API: ${config.publicBaseUrl}/v1  (Authorization: Bearer <api_key>)`);
  console.log(`Callbacks: ${receiver.callbackUrl}  (local HTTPS receiver: verifies each delivery with the demo workspace's signing secret)`);
  console.log(`  what arrived: curl -s --cacert ${shown(pki.caFile)} ${receiver.callbackUrl}`);
  console.log(`  for this stack only, the dispatcher trusts that CA and CALLBACK_ALLOWED_CIDRS includes ${RECEIVER_CIDR}`);
  console.log(`Dashboard: ${config.publicBaseUrl}/dashboard/  (sign in with dashboard.email and dashboard.password)`);
  SERVICES.forEach((name, index) => console.log(`${name} ops: http://127.0.0.1:${opsPortOf(index)}  (/healthz /readyz /metrics)`));
  if (config.operatorPassword) console.log(`Bull Board: http://127.0.0.1:${opsPortOf(0)}/queues  (OPERATOR_USERNAME / OPERATOR_PASSWORD)`);
  console.log(notReady.length === 0 ? 'stack ready (Ctrl-C stops it)' : `not ready after ${READY_WITHIN_MS / 1000} s: ${notReady.join(' ')}`);
}

main().catch((err) => {
  console.error(err instanceof Error ? err.message : err);
  process.exit(1);
});
