// `npm test` sets up a fresh machine itself (scripts/test.sh). These run its pieces as a newcomer's
// machine would meet them: no Redis answering, no browser, no root; and a Node older than .nvmrc's.
import { spawn, type SpawnOptionsWithoutStdio } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import Redis from 'ioredis';
import { finished } from '../support/process';

const ROOT = resolve(__dirname, '../..');
const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
/** An unprivileged user, for the checks that must behave as they do for a developer without root. */
const NOBODY = process.getuid?.() === 0 ? { uid: 65534, gid: 65534 } : {};

const run = (args: string[], options: SpawnOptionsWithoutStdio = {}) => finished(spawn(process.execPath, args, { cwd: ROOT, ...options }));

function freePort(): Promise<number> {
  return new Promise((done) => {
    const server = createServer().listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => done(port));
    });
  });
}

async function redisAnswers(url: string): Promise<boolean> {
  const client = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
  client.on('error', () => undefined);
  try {
    await client.connect();
    return (await client.ping()) === 'PONG';
  } catch {
    return false;
  } finally {
    client.disconnect();
  }
}

describe('npm test on a machine that lacks what it needs', () => {
  let bare = '';
  beforeAll(() => {
    // A PATH with node on it and nothing else: no redis-server, redis-cli, openssl, curl, prometheus or promtool.
    bare = mkdtempSync(join(tmpdir(), 'bare-path-'));
    symlinkSync(process.execPath, join(bare, 'node'));
  });
  afterAll(() => rmSync(bare, { recursive: true, force: true }));

  it('without root, fails at once with one line naming every program and the package to install', async () => {
    const started = Date.now();
    const ran = await run(['scripts/prerequisites.mjs'], {
      ...NOBODY,
      env: { PATH: bare, CHROMIUM_PATH: join(bare, 'no-such-chromium') },
    });
    expect(ran.code).toBe(1);
    expect(Date.now() - started).toBeLessThan(10_000);
    const lines = ran.stderr.trim().split('\n');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(
      /^npm test needs redis-server, redis-cli, openssl, curl, prometheus, promtool, chromium: install with "sudo apt-get install -y redis-server redis-tools openssl curl prometheus chromium"/,
    );
    expect(lines[0]).toContain(join(bare, 'no-such-chromium'));
  });

  it('names only what is missing: here, just the browser', async () => {
    const ran = await run(['scripts/prerequisites.mjs'], { ...NOBODY, env: { ...process.env, CHROMIUM_PATH: '/nonexistent/chromium' } });
    expect([ran.code, ran.stderr.trim()]).toEqual([
      1,
      'npm test needs chromium: install with "sudo apt-get install -y chromium" (or set CHROMIUM_PATH to a Chromium binary; looked for /nonexistent/chromium)',
    ]);
  });

  it('passes quietly where everything is present', async () => {
    const ran = await run(['scripts/prerequisites.mjs'], { ...NOBODY, env: process.env });
    expect([ran.code, ran.stderr]).toEqual([0, '']);
  });
});

describe('a Redis for the run (scripts/with-redis.mjs)', () => {
  const probe = `const R=require('ioredis');const r=new R(process.env.REDIS_URL);r.ping().then(p=>{console.log(process.env.REDIS_URL+' '+p);r.disconnect();process.exit(7)})`;

  it('starts a private redis-server when none answers at REDIS_URL, gives its address to the command, then stops and removes it', async () => {
    const dead = `redis://127.0.0.1:${await freePort()}`;
    const ran = await run(['scripts/with-redis.mjs', '--', process.execPath, '-e', probe], { env: { ...process.env, REDIS_URL: dead } });
    expect(ran.code).toBe(7);
    const [seen, pong] = ran.stdout.trim().split(' ');
    expect(pong).toBe('PONG');
    expect(seen).not.toBe(dead);
    expect(seen).toMatch(/^redis:\/\/127\.0\.0\.1:\d+$/);
    const dir = /in (\S+); removed afterwards/.exec(ran.stderr)?.[1];
    expect(dir).toBeDefined();
    expect(existsSync(dir!)).toBe(false);
    expect(await redisAnswers(seen)).toBe(false);
  });

  it('uses the Redis that answers at REDIS_URL as it is', async () => {
    const ran = await run(['scripts/with-redis.mjs', '--', process.execPath, '-e', probe], { env: { ...process.env, REDIS_URL } });
    expect([ran.code, ran.stdout.trim(), ran.stderr]).toEqual([7, `${REDIS_URL} PONG`, '']);
  });

  it('passes a signal on to the command and still stops the private Redis', async () => {
    const dead = `redis://127.0.0.1:${await freePort()}`;
    const child = spawn(
      process.execPath,
      ['scripts/with-redis.mjs', '--', process.execPath, '-e', 'console.log(process.env.REDIS_URL); setInterval(() => {}, 1000)'],
      {
        cwd: ROOT,
        env: { ...process.env, REDIS_URL: dead },
      },
    );
    const done = finished(child);
    const url = await new Promise<string>((ok) => child.stdout.once('data', (c: Buffer) => ok(c.toString().trim())));
    expect(await redisAnswers(url)).toBe(true);
    child.kill('SIGTERM');
    const ran = await done;
    expect(ran.code).toBe(128 + 15);
    expect(await redisAnswers(url)).toBe(false);
  });
});

describe('the Node release (scripts/use-node.sh)', () => {
  it('puts a Node of the .nvmrc line or newer first on PATH', async () => {
    const want = Number(readFileSync(join(ROOT, '.nvmrc'), 'utf8').trim());
    const ran = await finished(spawn('bash', ['-c', 'source scripts/use-node.sh && node -p process.versions.node'], { cwd: ROOT, env: process.env }));
    expect(ran.code).toBe(0);
    expect(Number(ran.stdout.trim().split('.')[0])).toBeGreaterThanOrEqual(want);
  }, 120_000);

  it('is the release the package and the image declare', () => {
    const want = readFileSync(join(ROOT, '.nvmrc'), 'utf8').trim();
    const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { engines: { node: string } };
    expect(pkg.engines.node).toBe(`>=${want}`);
    expect(readFileSync(join(ROOT, 'Dockerfile'), 'utf8')).toContain(`ARG NODE_IMAGE=node:${want}-bookworm-slim`);
  });
});
