import { spawn, type ChildProcess } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { deleteKeysUnder, eventually, freePort, REDIS_URL } from '../../support/stack';

const ROOT = resolve(__dirname, '../../..');

export const isFree = (port: number) =>
  new Promise<boolean>((done) => {
    const server = createServer();
    server.once('error', () => done(false));
    server.listen(port, '127.0.0.1', () => server.close(() => done(true)));
  });

/** One process as /proc shows it. */
export interface ProcessEntry {
  pid: number;
  ppid: number;
  /** `Z` for a zombie: dead, only not yet reaped by its parent. */
  state: string;
  command: string;
}

/** Every process on the machine (Linux /proc). */
export function processTable(): ProcessEntry[] {
  const table: ProcessEntry[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
      // The command name is in parentheses and may hold anything, spaces and ")" included.
      const [state, ppid] = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      const command = readFileSync(`/proc/${name}/cmdline`, 'utf8').split('\0').join(' ').trim();
      table.push({ pid: Number(name), ppid: Number(ppid), state: state!, command });
    } catch {
      // Gone between the listing and the read.
    }
  }
  return table;
}

/** `pid` and every process below it (by parent pid, so one in a process group of its own too). */
export function processTree(pid: number): ProcessEntry[] {
  const table = processTable();
  const tree = table.filter((p) => p.pid === pid);
  for (let i = 0; i < tree.length; i++) tree.push(...table.filter((p) => p.ppid === tree[i]!.pid));
  return tree;
}

/** The ones among `pids` that still run (zombies have finished running: they hold no port and no work). */
export function stillRunning(pids: number[]): ProcessEntry[] {
  const table = new Map(processTable().map((p) => [p.pid, p]));
  return pids.map((pid) => table.get(pid)).filter((p): p is ProcessEntry => p !== undefined && p.state !== 'Z');
}

export interface NpmStartOptions {
  /**
   * `launcher` (default) runs tools/admin/dist/local-stack.js directly; `npm` runs `npm start`
   * itself, as a developer does (the set-up step, then npm → sh → bash scripts/node.sh → node).
   */
  via?: 'launcher' | 'npm';
  /** A REDIS_URL where nothing answers yet, so that the launcher starts a redis-server of its own. */
  ownRedis?: boolean;
  /** Settings on top of the stack's own. */
  env?: NodeJS.ProcessEnv;
  /**
   * Under a pseudo-terminal (util-linux `script`), as in a developer's terminal: the launcher's
   * stdout is a TTY, and `stdout` gets what the terminal shows (stderr included; line ends as `\n`).
   */
  terminal?: boolean;
}

/** The launcher's own process (not npm's, a shell's or a terminal's that started it). */
const isLauncher = (p: ProcessEntry) => /^(\S*\/)?node \S*tools\/admin\/dist\/local-stack\.js$/.test(p.command);

/** One word for `sh -c`: single-quoted. */
const shellWord = (word: string) => `'${word.replaceAll("'", `'\\''`)}'`;

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
  /** The gateway's port. */
  port = 0;
  /** Set with `ownRedis`: the port of the redis-server the launcher starts. */
  redisPort = 0;
  stateDir = '';
  private mediaDir = '';
  private child: ChildProcess | undefined;
  private exited: Promise<unknown> = Promise.resolve();

  constructor(private readonly options: NpmStartOptions = {}) {}

  /** The process this started: npm with `via: 'npm'`, else the launcher. */
  get pid(): number {
    return this.child!.pid!;
  }

  /** The launcher's pid (npm's child, with `via: 'npm'`; the terminal's, with `terminal`). */
  get launcherPid(): number {
    if (this.options.via !== 'npm' && !this.options.terminal) return this.pid;
    const launcher = processTree(this.pid).find(isLauncher);
    if (!launcher) throw new Error(`no launcher under npm (pid ${this.pid}): ${JSON.stringify(processTree(this.pid))}`);
    return launcher.pid;
  }

  /** Resolves once the process this started has exited. */
  get done(): Promise<unknown> {
    return this.exited;
  }

  /**
   * Starts the stack. A port found free can be taken by another test's process before the stack
   * binds it (several suites run at once): then the launcher stops with EADDRINUSE, and the stack
   * is started again on other ports.
   */
  async start(): Promise<void> {
    for (let tries = 1; ; tries++) {
      try {
        return await this.launch();
      } catch (err) {
        if (tries >= 3 || !String(err).includes('EADDRINUSE')) throw err;
        await this.exited;
        await Promise.all([rm(this.stateDir, { recursive: true, force: true }), rm(this.mediaDir, { recursive: true, force: true })]);
        this.stdout = '';
        this.stderr = '';
      }
    }
  }

  private async launch(): Promise<void> {
    const port = await freePort();
    this.port = port;
    this.opsPort = await freePort({ run: 3 });
    if (this.options.ownRedis) this.redisPort = await freePort();
    this.stateDir = await mkdtemp(join(tmpdir(), 'readme-state-'));
    this.mediaDir = await mkdtemp(join(tmpdir(), 'readme-media-'));
    this.baseUrl = `http://localhost:${port}`;
    this.env = {
      PATH: process.env.PATH,
      HOME: process.env.HOME,
      REDIS_URL: this.options.ownRedis ? `redis://127.0.0.1:${this.redisPort}` : REDIS_URL,
      KEY_PREFIX: this.prefix,
      PORT: String(port),
      PUBLIC_BASE_URL: this.baseUrl,
      OPS_PORT: String(this.opsPort),
      MEDIA_DIR: this.mediaDir,
      LOCAL_STACK_DIR: this.stateDir,
      // The system picks it; the test reads it from what the launcher prints, as a reader would.
      LOCAL_RECEIVER_PORT: '0',
      ...this.options.env,
    };
    if (this.options.via === 'npm') this.env.npm_config_update_notifier = 'false';
    let [command, args] = this.options.via === 'npm' ? ['npm', ['start']] : [process.execPath, [join(ROOT, 'tools/admin/dist/local-stack.js')]];
    // -e: script's exit status is the command's; -f: what is written is passed on at once.
    if (this.options.terminal) [command, args] = ['script', ['-qfec', [command, ...args].map(shellWord).join(' '), '/dev/null']];
    // Its own process group, so that whatever it started can be stopped even if it hangs.
    const child = spawn(command, args, {
      cwd: ROOT,
      env: this.env,
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true,
    });
    this.child = child;
    this.exited = new Promise((r) => child.once('exit', r));
    child.stdout!.on('data', (chunk: Buffer) => (this.stdout += this.options.terminal ? chunk.toString().replaceAll('\r', '') : chunk.toString()));
    child.stderr!.on('data', (chunk: Buffer) => (this.stderr += chunk.toString()));
    await eventually(
      () => {
        if (child.exitCode !== null) throw new Error(`npm start's launcher exited with ${child.exitCode}`);
        return /^stack ready/m.test(this.stdout) ? true : undefined;
      },
      // npm's own start and the set-up step come first.
      this.options.via === 'npm' ? 90_000 : 45_000,
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
      // SIGTERM: the launcher stops the services (each drains), its receiver, then itself; npm passes
      // it on. A terminal's `script` would cut the launcher short (SIGKILL soon after), so it goes to the launcher there.
      const launcher = this.options.terminal ? processTree(child.pid).find(isLauncher) : undefined;
      if (launcher) process.kill(launcher.pid, 'SIGTERM');
      else child.kill('SIGTERM');
      let timer: NodeJS.Timeout | undefined;
      const stopped = await Promise.race([this.exited.then(() => true), new Promise((r) => (timer = setTimeout(() => r(false), 20_000)))]);
      clearTimeout(timer);
      if (!stopped) process.kill(-child.pid, 'SIGKILL');
    }
    // With its own Redis, the keys went with it (its data is in the state directory).
    if (!this.options.ownRedis) {
      const redis = new Redis(REDIS_URL, { maxRetriesPerRequest: 1 });
      try {
        await deleteKeysUnder(redis, this.prefix);
      } finally {
        redis.disconnect();
      }
    }
    await rm(this.stateDir, { recursive: true, force: true });
    await rm(this.mediaDir, { recursive: true, force: true });
  }
}
