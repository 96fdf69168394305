// `node scripts/with-redis.mjs -- <command…>` runs the command with a Redis answering at REDIS_URL:
// the one already answering there (the tests never flush it: they keep to key prefixes of their
// own), or else a private redis-server on a free loopback port with its own temporary directory,
// which is stopped and removed when the command ends, however it ends. The command's exit status is
// this script's. No dependencies, so it runs before anything is built.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createConnection, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const separator = process.argv.indexOf('--');
const command = separator === -1 ? [] : process.argv.slice(separator + 1);
if (command.length === 0) {
  console.error('usage: node scripts/with-redis.mjs -- <command> [args…]');
  process.exit(2);
}

const url = process.env.REDIS_URL || 'redis://127.0.0.1:6379';

/** True when something at host:port answers PING as a Redis does (+PONG, or -NOAUTH when it has a password). */
function answers(host, port, withinMs = 1_000) {
  return new Promise((done) => {
    const socket = createConnection({ host, port });
    const finish = (ok) => {
      socket.destroy();
      done(ok);
    };
    socket.setTimeout(withinMs, () => finish(false));
    socket.once('error', () => finish(false));
    socket.once('connect', () => socket.write('PING\r\n'));
    socket.once('data', (data) => finish(/^[+-]/.test(data.toString())));
  });
}

function freePort() {
  return new Promise((done, fail) => {
    const server = createServer();
    server.once('error', fail);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => done(port));
    });
  });
}

async function privateRedis() {
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), 'media-test-redis-'));
  const server = spawn(
    'redis-server',
    ['--port', String(port), '--bind', '127.0.0.1', '--dir', dir, '--save', '', '--appendonly', 'no', '--logfile', join(dir, 'redis.log')],
    {
      stdio: 'ignore',
    },
  );
  const exited = new Promise((done) => server.once('exit', done));
  server.once('error', () => undefined);
  const stop = async () => {
    if (server.exitCode === null && server.signalCode === null) {
      server.kill('SIGTERM');
      let timer;
      await Promise.race([exited, new Promise((r) => (timer = setTimeout(r, 5_000)))]);
      clearTimeout(timer);
      if (server.exitCode === null && server.signalCode === null) server.kill('SIGKILL');
    }
    rmSync(dir, { recursive: true, force: true });
  };
  for (let i = 0; i < 100; i++) {
    if (await answers('127.0.0.1', port, 200)) {
      return { url: `redis://127.0.0.1:${port}`, dir, stop };
    }
    if (server.exitCode !== null) break;
    await new Promise((r) => setTimeout(r, 50));
  }
  await stop();
  throw new Error(`redis-server did not start on 127.0.0.1:${port} (is redis-server installed?)`);
}

const { hostname, port } = new URL(url);
const host = hostname.replace(/^\[(.*)\]$/, '$1');
let redis;
if (!(await answers(host, Number(port || 6379)))) {
  redis = await privateRedis();
  console.error(`no Redis answers at ${url}: using a private redis-server at ${redis.url} for this run (in ${redis.dir}; removed afterwards)`);
}

const child = spawn(command[0], command.slice(1), {
  stdio: 'inherit',
  env: redis ? { ...process.env, REDIS_URL: redis.url } : process.env,
});
// A signal to this process (npm forwards SIGINT/SIGTERM to its script) goes on to the command;
// the private Redis is stopped once the command has ended.
for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP']) process.on(signal, () => child.kill(signal));
const [code, signal] = await new Promise((done) => {
  child.once('exit', (c, s) => done([c, s]));
  child.once('error', (err) => {
    console.error(`cannot run ${command[0]}: ${err.message}`);
    done([127, null]);
  });
});
await redis?.stop();
process.exitCode = code ?? (signal ? 128 + ({ SIGINT: 2, SIGTERM: 15, SIGHUP: 1, SIGKILL: 9 }[signal] ?? 1) : 1);
