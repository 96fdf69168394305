import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Redis, type RedisOptions } from 'ioredis';
import { makeTestPki, type TestPki } from '../dispatcher/support/pki';
import { eventually, freePort } from './basics';

/**
 * A real Redis of the test's own that speaks TLS only (`--port 0 --tls-port P`), with a certificate
 * for 127.0.0.1 from a throw-away CA: what a managed Redis with in-transit encryption gives.
 */
export class TestRedisTls {
  private constructor(
    readonly port: number,
    private readonly pki: TestPki,
    private readonly child: ChildProcess,
  ) {}

  static async start(): Promise<TestRedisTls> {
    const pki = makeTestPki();
    const cert = join(pki.dir, 'redis.crt');
    const key = join(pki.dir, 'redis.key');
    writeFileSync(cert, pki.cert);
    writeFileSync(key, pki.key, { mode: 0o600 });
    const port = await freePort();
    const child = spawn(
      'redis-server',
      [
        '--port',
        '0',
        '--tls-port',
        String(port),
        '--bind',
        '127.0.0.1',
        '--dir',
        pki.dir,
        '--tls-cert-file',
        cert,
        '--tls-key-file',
        key,
        '--tls-ca-cert-file',
        pki.caFile,
        '--tls-auth-clients',
        'no',
        '--appendonly',
        'no',
        '--save',
        '',
      ],
      { stdio: 'ignore' },
    );
    const redis = new TestRedisTls(port, pki, child);
    await eventually(
      async () => {
        const probe = redis.client({ lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
        probe.on('error', () => undefined);
        try {
          await probe.connect();
          return (await probe.ping()) === 'PONG' ? true : undefined;
        } finally {
          probe.disconnect();
        }
      },
      10_000,
      'the TLS Redis to answer',
    );
    return redis;
  }

  get url(): string {
    return `rediss://127.0.0.1:${this.port}`;
  }

  get caFile(): string {
    return this.pki.caFile;
  }

  /** The settings that point the services at it. */
  get env(): Record<string, string> {
    return { REDIS_URL: this.url, REDIS_TLS_CA_FILE: this.caFile };
  }

  client(options: RedisOptions = { maxRetriesPerRequest: null }): Redis {
    return new Redis(this.url, { ...options, tls: { ca: this.pki.caPem } });
  }

  async destroy(): Promise<void> {
    if (this.child.exitCode === null && this.child.signalCode === null) {
      const exited = once(this.child, 'exit');
      this.child.kill('SIGKILL');
      await exited;
    }
    this.pki.cleanup();
  }
}
