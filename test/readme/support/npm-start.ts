import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { deleteKeysUnder, eventually, freePort, REDIS_URL } from '../../support/stack';

const ROOT = resolve(__dirname, '../../..');

const isFree = (port: number) =>
  new Promise<boolean>((done) => {
    const server = createServer();
    server.once('error', () => done(false));
    server.listen(port, '127.0.0.1', () => server.close(() => done(true)));
  });

/** A port whose next two are free as well: `npm start` gives the services OPS_PORT, +1 and +2. */
async function freePortRun(length: number): Promise<number> {
  for (let tries = 0; tries < 50; tries++) {
    const first = await freePort();
    if (first + length - 1 > 65_535) continue;
    const rest = await Promise.all(Array.from({ length: length - 1 }, (_, i) => isFree(first + i + 1)));
    if (rest.every(Boolean)) return first;
  }
  throw new Error(`no ${length} consecutive free ports found`);
}

/**
 * `npm start`'s launcher (tools/admin/dist/local-stack.js, which `npm start` runs after the set-up
 * step) with its own key prefix, ports, state directory and media directory, so it shares nothing
 * with a developer's own `npm start` or with other tests.
 */
export class NpmStartStack {
  stdout = '';
  stderr = '';
  readonly prefix = `readme-${randomBytes(6).toString('hex')}`;
  /** The environment of the stack, and of the commands run against it (the admin CLI needs the same). */
  env: NodeJS.ProcessEnv = {};
  baseUrl = '';
  receiverPort = 0;
  opsPort = 0;
  stateDir = '';
  private mediaDir = '';
  private child: ChildProcess | undefined;
  private exited: Promise<unknown> = Promise.resolve();

  async start(): Promise<void> {
    const port = await freePort();
    this.opsPort = await freePortRun(3);
    this.stateDir = await mkdtemp(join(tmpdir(), 'readme-state-'));
    this.mediaDir = await mkdtemp(join(tmpdir(), 'readme-media-'));
    this.baseUrl = `http://localhost:${port}`;
    this.env = {
      PATH: process.env.PATH,
      HOME: process.env.HOME,
      REDIS_URL,
      KEY_PREFIX: this.prefix,
      PORT: String(port),
      PUBLIC_BASE_URL: this.baseUrl,
      OPS_PORT: String(this.opsPort),
      MEDIA_DIR: this.mediaDir,
      LOCAL_STACK_DIR: this.stateDir,
      // The system picks it; the test reads it from what the launcher prints, as a reader would.
      LOCAL_RECEIVER_PORT: '0',
    };
    // Its own process group, so that whatever it started can be stopped even if it hangs.
    const child = spawn(process.execPath, [join(ROOT, 'tools/admin/dist/local-stack.js')], {
      cwd: ROOT,
      env: this.env,
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true,
    });
    this.child = child;
    this.exited = new Promise((r) => child.once('exit', r));
    child.stdout!.on('data', (chunk: Buffer) => (this.stdout += chunk.toString()));
    child.stderr!.on('data', (chunk: Buffer) => (this.stderr += chunk.toString()));
    await eventually(
      () => {
        if (child.exitCode !== null) throw new Error(`npm start's launcher exited with ${child.exitCode}`);
        return /^stack ready/m.test(this.stdout) ? true : undefined;
      },
      45_000,
      'the stack to print "stack ready"',
    ).catch((err) => {
      throw new Error(`${String(err)}\nstdout:\n${this.stdout}\nstderr:\n${this.stderr}`);
    });
    this.receiverPort = Number(/^Callbacks: https:\/\/localhost:(\d+)\/webhooks/m.exec(this.stdout)?.[1]);
  }

  /** Everything the launcher printed that is not a service's JSON log line. */
  get launcherLines(): string {
    return this.stdout
      .split('\n')
      .filter((line) => !line.startsWith('{"'))
      .join('\n');
  }

  async stop(): Promise<void> {
    const child = this.child;
    if (child?.pid !== undefined && child.exitCode === null && child.signalCode === null) {
      // SIGTERM: the launcher stops the services (each drains), its receiver, then itself.
      child.kill('SIGTERM');
      let timer: NodeJS.Timeout | undefined;
      const stopped = await Promise.race([this.exited.then(() => true), new Promise((r) => (timer = setTimeout(() => r(false), 20_000)))]);
      clearTimeout(timer);
      if (!stopped) process.kill(-child.pid, 'SIGKILL');
    }
    const redis = new Redis(REDIS_URL, { maxRetriesPerRequest: 1 });
    try {
      await deleteKeysUnder(redis, this.prefix);
    } finally {
      redis.disconnect();
    }
    await rm(this.stateDir, { recursive: true, force: true });
    await rm(this.mediaDir, { recursive: true, force: true });
  }
}
