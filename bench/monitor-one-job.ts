// Not a bench phase: a tool for reading what Redis does for one job (`npx tsx bench/monitor-one-job.ts`
// after a build). Starts the three services on a
// Redis of its own, sends a few warm-up jobs, then one asynchronous image with a callback under
// MONITOR, and prints every command with its key shape, grouped and counted.
import { Redis } from 'ioredis';
import { makeTestPki } from '../test/dispatcher/support/pki';
import {
  BenchStack,
  cleanupAll,
  createWorkspace,
  newPrefix,
  privateRedis,
  privateRedisEnv,
  ReceiverClient,
  serviceEnv,
  sleep,
  submitImage,
  waitUntil,
} from './support';

async function main(): Promise<void> {
  const { url } = await privateRedis('monitor');
  const redis = new Redis(url);
  const pki = makeTestPki([], { keyType: 'rsa2048' });
  const receiver = await ReceiverClient.start(pki);
  const prefix = newPrefix('monitor');
  const stack = await BenchStack.start(prefix, ['api-gateway', 'generator', 'webhook-dispatcher'], await serviceEnv(prefix, pki, privateRedisEnv(url)));
  try {
    const { apiKey } = await createWorkspace(redis, prefix);
    const body = JSON.stringify({ model: 'pixel-1', prompt: 'a lighthouse at dusk', size: '256x256', callback_url: receiver.url('/hook') });
    for (let i = 0; i < 5; i++) await submitImage(stack.baseUrl, apiKey, body);
    await waitUntil(async () => (await receiver.uniqueCount()) >= 5, 30_000, 'warm-up');
    await sleep(2_000);
    const monitor = await redis.monitor();
    const lines: string[] = [];
    monitor.on('monitor', (_time: string, args: string[]) => lines.push(args.map((a) => (a.length > 60 ? `${a.slice(0, 57)}...` : a)).join(' ')));
    await receiver.reset();
    const t0 = Date.now();
    await submitImage(stack.baseUrl, apiKey, body);
    await waitUntil(async () => (await receiver.uniqueCount()) >= 1, 30_000, 'the job');
    await sleep(1_500);
    monitor.disconnect();
    const seconds = (Date.now() - t0) / 1000;
    const shape = (line: string) =>
      line
        .replace(new RegExp(prefix.replace(/[-]/g, '\\-'), 'g'), 'P')
        .replace(/\b(req|msg|ws|key|video)_[0-9a-z]{8,}/g, '$1_X')
        .replace(/\b\d{6,}\b/g, 'N')
        .replace(/\b[0-9a-f]{40}\b/g, 'SHA')
        .split(' ')
        .slice(0, 4)
        .join(' ');
    const counts = new Map<string, number>();
    for (const line of lines) counts.set(shape(line), (counts.get(shape(line)) ?? 0) + 1);
    console.log(`${lines.length} commands in ${seconds.toFixed(1)} s (idle polling included)`);
    for (const [line, n] of [...counts].sort((a, b) => b[1] - a[1])) console.log(`${String(n).padStart(4)}  ${line}`);
  } finally {
    await stack.stop();
    await receiver.stop();
    redis.disconnect();
    pki.cleanup();
    await cleanupAll();
  }
}

void main().then(
  () => process.exit(0),
  (err) => (console.error(err), process.exit(1)),
);
