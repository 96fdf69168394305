// What `npm start` gives beyond the three services: its callback exemption (the local receiver's
// address and port, nothing else on this machine), a receiver and a var/demo-workspace.json that
// follow a secret rotation, a clear word when a stack left running holds the state directory or
// the receiver's port, and LOCAL_RECEIVER=off.
import { execFile, spawn } from 'node:child_process';
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { request } from 'node:https';
import { createServer, type AddressInfo, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { Redis } from 'ioredis';
import { verify } from '@media/callback-signing';
import { finished } from '../support/process';
import { deleteKeysUnder, eventually, freePort, REDIS_URL } from '../support/stack';
import { isFree, NpmStartStack } from '../readme/support/npm-start';
import { PrivateRedis } from '../support/private-redis';

const ROOT = resolve(__dirname, '../..');
const LAUNCHER = join(ROOT, 'tools/admin/dist/local-stack.js');
const run = promisify(execFile);

/** A loopback port that accepts TCP connections and counts them: a stand-in for any other local service. */
async function listeningPort(): Promise<{ server: Server; port: number; connections: () => number }> {
  let connections = 0;
  const server = createServer((socket) => {
    connections++;
    socket.destroy();
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return { server, port: (server.address() as AddressInfo).port, connections: () => connections };
}

async function closeServer(server: Server): Promise<void> {
  server.close();
  await once(server, 'close');
}

function demoWorkspace(stack: NpmStartStack): { workspace_id: string; api_key: string; signing_secret: string } {
  return JSON.parse(readFileSync(join(stack.stateDir, 'demo-workspace.json'), 'utf8'));
}

async function createImage(stack: NpmStartStack, callbackUrl: string): Promise<{ status: number; body: any }> {
  const res = await fetch(`${stack.baseUrl}/v1/images/generations`, {
    method: 'POST',
    headers: { authorization: `Bearer ${demoWorkspace(stack).api_key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'pixel-1', prompt: 'a lighthouse at dusk', size: '512x512', callback_url: callbackUrl }),
  });
  return { status: res.status, body: await res.json() };
}

/** The deliveries the local receiver kept, read over HTTPS with the CA `npm start` made. */
function receiverDeliveries(stack: NpmStartStack): Promise<any[]> {
  const ca = readFileSync(join(stack.stateDir, 'local-receiver', 'ca.pem'));
  return new Promise((done, fail) => {
    const req = request({ host: '127.0.0.1', servername: 'localhost', port: stack.receiverPort, path: '/webhooks', ca }, (res) => {
      let body = '';
      res.on('data', (c: Buffer) => (body += c.toString()));
      res.on('end', () => done((JSON.parse(body) as { data: any[] }).data));
    });
    req.once('error', fail);
    req.end();
  });
}

/** The verified delivery of a job; on a timeout, what did arrive (a rejected one shows as a 400). */
const deliveryOf = (stack: NpmStartStack, jobId: string) =>
  eventually(async () => (await receiverDeliveries(stack)).find((d) => d.event?.data?.id === jobId), 30_000, `the delivery of ${jobId}`).catch(async (err) => {
    const seen = (await receiverDeliveries(stack)).map((d) => `${d.status} ${d.webhook_id}`);
    throw new Error(`${String(err)}; the receiver has: ${seen.join(', ')}\n${stack.launcherLines}`);
  });

/** A second launcher, run to its end (it is expected to refuse to start). */
function secondLauncher(env: NodeJS.ProcessEnv) {
  return finished(spawn(process.execPath, [LAUNCHER], { cwd: ROOT, env, timeout: 60_000 }));
}

const refused = (message: string) => ({
  error: { message, type: 'invalid_request_error', param: 'callback_url', code: 'invalid_callback_url' },
});

describe('npm start, with its local receiver', () => {
  const stack = new NpmStartStack();

  beforeAll(async () => {
    await stack.start();
  }, 60_000);

  afterAll(async () => {
    await stack.stop();
  }, 30_000);

  it("exempts exactly the receiver's address and port: another loopback port is refused with the 400 of the rules", async () => {
    expect(stack.launcherLines).toContain(`CALLBACK_ALLOWED_ENDPOINTS includes 127.0.0.1:${stack.receiverPort}`);
    expect(stack.stdout).toContain(`"allowed_endpoints":["127.0.0.1:${stack.receiverPort}"]`);

    const other = await listeningPort();
    try {
      const p = stack.receiverPort;
      const cases: [string, string][] = [
        [`https://127.0.0.1:${other.port}/`, 'callback_url resolves to a non-public address (127.0.0.1)'],
        [`https://localhost:${other.port}/webhooks`, 'callback_url host localhost is a loopback name'],
        [`https://2130706433:${other.port}/`, 'callback_url resolves to a non-public address (127.0.0.1)'],
        ['https://2130706433/', 'callback_url resolves to a non-public address (127.0.0.1)'],
        [`https://[::ffff:127.0.0.1]:${p}/webhooks`, 'callback_url resolves to a non-public address (::ffff:7f00:1)'],
        [`https://127.0.0.2:${p}/webhooks`, 'callback_url resolves to a non-public address (127.0.0.2)'],
        [`https://[::1]:${p}/webhooks`, 'callback_url resolves to a non-public address (::1)'],
        [`https://127.0.0.1:${stack.port}/v1/models`, 'callback_url resolves to a non-public address (127.0.0.1)'],
      ];
      for (const [url, message] of cases) {
        expect([url, await createImage(stack, url)]).toEqual([url, { status: 400, body: refused(message) }]);
      }
      expect(other.connections()).toBe(0);

      // …while the receiver's URL is accepted and its callback arrives, signed.
      const accepted = await createImage(stack, `https://localhost:${p}/webhooks`);
      expect(accepted.status).toBe(202);
      const delivery = await deliveryOf(stack, accepted.body.id);
      expect(delivery).toMatchObject({ status: 200, verified: true, event: { type: 'image.completed', data: { id: accepted.body.id } } });
    } finally {
      await closeServer(other.server);
    }
  });

  it('verifies deliveries signed with a rotated secret, and rewrites var/demo-workspace.json with it, without a restart', async () => {
    const before = demoWorkspace(stack);
    // No overlap: from now on deliveries carry the new secret's signature only.
    const { stdout } = await run(process.execPath, [join(ROOT, 'tools/admin/dist/main.js'), 'rotate-secret', '--workspace', before.workspace_id], {
      cwd: ROOT,
      env: { ...stack.env, SECRET_ROTATION_OVERLAP_SECONDS: '0' },
    });
    const rotated = JSON.parse(stdout) as { signing_secret: string };
    expect(rotated.signing_secret).not.toBe(before.signing_secret);

    const job = await createImage(stack, `https://localhost:${stack.receiverPort}/webhooks`);
    expect(job.status).toBe(202);
    const delivery = await deliveryOf(stack, job.body.id);
    expect(delivery).toMatchObject({ status: 200, verified: true, event: { type: 'image.completed' } });
    // Signed with the new secret alone: the old one no longer verifies it.
    const body = Buffer.from(JSON.stringify(delivery.event));
    expect(verify(body, delivery.headers, rotated.signing_secret)).toEqual(delivery.event);
    expect(() => verify(body, delivery.headers, before.signing_secret)).toThrow('No matching webhook signature found');

    expect(demoWorkspace(stack)).toEqual({ ...before, signing_secret: rotated.signing_secret });
    expect(stack.launcherLines).toMatch(/signing secret was rotated; .*demo-workspace\.json now holds the new one/);
  });

  it('a second npm start on the same state directory names the running one and how to stop it, and touches nothing', async () => {
    const launcherPid = stack.launcherPid;
    const pidFile = JSON.parse(readFileSync(join(stack.stateDir, 'npm-start.pid'), 'utf8'));
    expect(pidFile).toMatchObject({ pid: launcherPid, root: ROOT, ports: { api: stack.port, ops: stack.opsPort, receiver: stack.receiverPort } });

    const second = await secondLauncher(stack.env);
    expect(second.code).toBe(1);
    expect(second.stderr.trim()).toBe(
      `another npm start (pid ${launcherPid}) is running from ${ROOT} (ports: api ${stack.port}, ops ${stack.opsPort}, receiver ${stack.receiverPort}); ` +
        `stop it with \`kill ${launcherPid}\` (or Ctrl-C in its terminal), then run npm start again`,
    );
    expect(second.stdout).toBe('');
    // The first one still runs, and still owns its pid file.
    expect((await fetch(`${stack.baseUrl}/readyz`)).status).toBe(200);
    expect(JSON.parse(readFileSync(join(stack.stateDir, 'npm-start.pid'), 'utf8')).pid).toBe(launcherPid);
  });

  describe('a second npm start from another state directory', () => {
    const prefix = `${stack.prefix}-second`;
    let stateDir = '';
    const env = async (receiverPort: number) => ({
      ...stack.env,
      KEY_PREFIX: prefix,
      LOCAL_STACK_DIR: stateDir,
      PORT: String(await freePort()),
      OPS_PORT: String(await freePort()),
      LOCAL_RECEIVER_PORT: String(receiverPort),
    });

    beforeEach(async () => {
      stateDir = await mkdtemp(join(tmpdir(), 'local-stack-second-'));
    });

    afterEach(async () => {
      await rm(stateDir, { recursive: true, force: true });
      const redis = new Redis(REDIS_URL, { maxRetriesPerRequest: 1 });
      await deleteKeysUnder(redis, prefix).finally(() => redis.disconnect());
    });

    it("on the running one's receiver port is told that npm start holds it", async () => {
      const launcherPid = stack.launcherPid;
      const second = await secondLauncher(await env(stack.receiverPort));
      expect(second.code).toBe(1);
      expect(second.stderr.trim()).toBe(
        `another npm start (pid ${launcherPid}) is running from ${ROOT} (ports: receiver ${stack.receiverPort}); ` +
          `stop it with \`kill ${launcherPid}\` (or Ctrl-C in its terminal), then run npm start again`,
      );
      // It stopped what it had started and left no pid file behind.
      expect(() => readFileSync(join(stateDir, 'npm-start.pid'))).toThrow(/ENOENT/);
    });

    it('on a port something else holds keeps the hint to choose another port', async () => {
      const other = await listeningPort();
      try {
        const second = await secondLauncher(await env(other.port));
        expect(second.code).toBe(1);
        expect(second.stderr.trim()).toBe(
          `the local callback receiver cannot listen on 127.0.0.1:${other.port} (listen EADDRINUSE: address already in use 127.0.0.1:${other.port}); ` +
            'set LOCAL_RECEIVER_PORT, or LOCAL_RECEIVER=off',
        );
      } finally {
        await closeServer(other.server);
      }
    });
  });
});

describe('npm start with LOCAL_RECEIVER=off', () => {
  let receiverPort = 0;
  let stack: NpmStartStack;

  beforeAll(async () => {
    receiverPort = await freePort();
    stack = new NpmStartStack({ env: { LOCAL_RECEIVER: 'off', LOCAL_RECEIVER_PORT: String(receiverPort) } });
    await stack.start();
  }, 60_000);

  afterAll(async () => {
    await stack?.stop();
  }, 30_000);

  it('runs no receiver, exempts nothing, and says that callbacks need a public https URL', async () => {
    expect(stack.launcherLines).toContain('Callbacks: no local receiver (LOCAL_RECEIVER=off): a callback_url must be a public https URL, as in production');
    expect(stack.launcherLines).not.toContain('CALLBACK_ALLOWED_ENDPOINTS');
    // The services were given no relaxation, so they do not announce one.
    expect(stack.stdout).not.toContain('CALLBACK URL CHECKS RELAXED');
    expect(await isFree(receiverPort)).toBe(true);
    expect(await createImage(stack, `https://localhost:${receiverPort}/webhooks`)).toEqual({
      status: 400,
      body: refused('callback_url host localhost is a loopback name'),
    });
    expect(await createImage(stack, `https://127.0.0.1:${receiverPort}/webhooks`)).toEqual({
      status: 400,
      body: refused('callback_url resolves to a non-public address (127.0.0.1)'),
    });
  });
});

describe('npm start on a Redis that wants a password, given apart from REDIS_URL', () => {
  const password = 'a-long-local-redis-password';
  let server: PrivateRedis;
  let stack: NpmStartStack;

  beforeAll(async () => {
    server = await PrivateRedis.start({ password });
    stack = new NpmStartStack({ env: { LOCAL_RECEIVER: 'off', REDIS_URL: server.url, REDIS_PASSWORD: password } });
    await stack.start();
  }, 90_000);

  afterAll(async () => {
    await stack?.stop();
    await server?.destroy();
  }, 30_000);

  it('uses that Redis (it starts none of its own) and answers a synchronous image', async () => {
    expect(stack.launcherLines).not.toContain('starting redis-server');
    const res = await fetch(`${stack.baseUrl}/v1/images/generations`, {
      method: 'POST',
      headers: { authorization: `Bearer ${demoWorkspace(stack).api_key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'pixel-1', prompt: 'a lighthouse at dusk', size: '256x256' }),
    });
    expect([res.status, ((await res.json()) as { status: string }).status]).toEqual([200, 'completed']);
    const client = new Redis(server.url, { password });
    try {
      expect(await client.dbsize()).toBeGreaterThan(0);
    } finally {
      client.disconnect();
    }
  });
});
