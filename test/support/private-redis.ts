import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { freePort, redisAnswers } from './basics';

/**
 * A redis-server of the test's own, on a free loopback port, with AOF and fsync on every write as
 * production runs it, so a test may stop, kill and relaunch it on the same port and data directory
 * without touching the shared test Redis.
 */
export class PrivateRedis {
  private child: ChildProcess | undefined;

  private constructor(
    readonly port: number,
    private readonly dir: string,
  ) {}

  /** With `password`, the server wants it from every client from then on (`requirepass`). */
  static async start(options: { password?: string } = {}): Promise<PrivateRedis> {
    const redis = new PrivateRedis(await freePort(), await mkdtemp(join(tmpdir(), 'private-redis-')));
    await redis.launch();
    if (options.password) {
      const admin = new Redis(redis.url);
      try {
        await admin.config('SET', 'requirepass', options.password);
      } finally {
        admin.disconnect();
      }
    }
    return redis;
  }

  get url(): string {
    return `redis://127.0.0.1:${this.port}`;
  }

  get pid(): number | undefined {
    return this.child?.pid;
  }

  /** Starts redis-server (again) on the same port and directory; resolves once it answers PING (AOF loaded). */
  async launch(): Promise<void> {
    this.child = spawn(
      'redis-server',
      ['--port', String(this.port), '--bind', '127.0.0.1', '--dir', this.dir, '--appendonly', 'yes', '--appendfsync', 'always', '--save', ''],
      { stdio: 'ignore' },
    );
    await redisAnswers({ url: this.url }, 'private redis-server to answer');
  }

  /** A clean shutdown: Redis flushes its append-only file and exits. */
  async stop(): Promise<void> {
    await this.signal('SIGTERM');
  }

  /** A crash: SIGKILL, no chance to flush anything beyond what `appendfsync always` already wrote. */
  async kill(): Promise<void> {
    await this.signal('SIGKILL');
  }

  async destroy(): Promise<void> {
    await this.kill();
    await rm(this.dir, { recursive: true, force: true });
  }

  private async signal(signal: NodeJS.Signals): Promise<void> {
    const child = this.child;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    const exited = once(child, 'exit');
    child.kill(signal);
    await exited;
  }
}
