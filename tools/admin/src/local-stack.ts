import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { chmod, mkdir, readFile, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { createAccounts } from '@media/accounts';
import { createRedis, loadConfig, pingRedis, type AppConfig } from '@media/common';
import { StoreKeys, WorkspaceRepository } from '@media/storage';

/**
 * `npm start`: the whole system on one machine. A local redis-server when none answers at
 * REDIS_URL, then the three services as separate processes, and a demo workspace on first run.
 */
const ROOT = resolve(__dirname, '../../..');
const SERVICES = ['api-gateway', 'generator', 'webhook-dispatcher'] as const;
const DEMO_FILE = join(ROOT, 'var', 'demo-workspace.json');

async function ensureRedis(url: string): Promise<ChildProcess | undefined> {
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
  const dir = join(ROOT, 'var', 'redis');
  await mkdir(dir, { recursive: true });
  console.log(`starting redis-server on port ${port || 6379} (data in var/redis, AOF on)`);
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

async function ensureDemoWorkspace(config: AppConfig): Promise<void> {
  const redis = createRedis(config.redis, 'request');
  try {
    const workspaces = new WorkspaceRepository(redis, new StoreKeys(config.keyPrefix));
    if (existsSync(DEMO_FILE)) {
      const saved = JSON.parse(await readFile(DEMO_FILE, 'utf8')) as { workspace_id: string };
      if (await workspaces.get(saved.workspace_id)) {
        console.log(`demo workspace ${saved.workspace_id}: credentials in var/demo-workspace.json`);
        return;
      }
    }
    const created = await createAccounts(config, redis).createWorkspace('demo', 'owner@demo.local');
    const demo = {
      workspace_id: created.workspace.id,
      api_key: created.apiKey,
      signing_secret: created.signingSecret,
      dashboard: { url: `${config.publicBaseUrl}/dashboard/`, email: created.owner.email, password: created.owner.password, role: 'owner' },
    };
    await mkdir(join(ROOT, 'var'), { recursive: true });
    await writeFile(DEMO_FILE, JSON.stringify(demo, null, 2));
    await chmod(DEMO_FILE, 0o600);
    console.log('created a demo workspace (saved to var/demo-workspace.json):');
    console.log(JSON.stringify(demo, null, 2));
  } finally {
    redis.disconnect();
  }
}

async function main(): Promise<void> {
  const config = loadConfig();
  // A cluster (REDIS_CLUSTER_NODES) is the operator's to run; only a single local Redis is started here.
  const redisChild = config.redis.kind === 'single' ? await ensureRedis(config.redis.url) : undefined;
  await ensureDemoWorkspace(config);

  let stopping = false;
  // One machine, three ops ports (design section 3): gateway OPS_PORT, generator +1, dispatcher +2.
  const opsPortOf = (index: number) => config.opsPort + index;
  const children = SERVICES.map((name, index) => {
    const child = spawn(process.execPath, [join(ROOT, 'services', name, 'dist', 'main.js')], {
      // The default MEDIA_DIR is relative; every service gets the same absolute one.
      env: { ...process.env, MEDIA_DIR: resolve(ROOT, config.mediaDir), OPS_PORT: String(opsPortOf(index)) },
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
  console.log(`API: ${config.publicBaseUrl}/v1  (Authorization: Bearer <api_key>)`);
  SERVICES.forEach((name, index) => console.log(`${name} ops: http://127.0.0.1:${opsPortOf(index)}  (/healthz /readyz /metrics)`));
  if (config.operatorPassword) console.log(`Bull Board: http://127.0.0.1:${opsPortOf(0)}/queues  (OPERATOR_USERNAME / OPERATOR_PASSWORD)`);
  console.log(`Dashboard: ${config.publicBaseUrl}/dashboard/  (sign in with dashboard.email and dashboard.password)`);

  const stop = async (code: number) => {
    if (stopping) return;
    stopping = true;
    await Promise.all(
      children.map((c) => new Promise<void>((r) => (c.exitCode !== null || c.signalCode !== null ? r() : (c.once('exit', () => r()), c.kill('SIGTERM'))))),
    );
    redisChild?.kill('SIGTERM');
    process.exit(code);
  };
  process.on('SIGINT', () => void stop(0));
  process.on('SIGTERM', () => void stop(0));
}

main().catch((err) => {
  console.error(err instanceof Error ? err.message : err);
  process.exit(1);
});
