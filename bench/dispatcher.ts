/**
 * Webhook dispatcher benchmark: ONE real dispatcher process (services/webhook-dispatcher/dist)
 * against a local HTTPS receiver on 127.0.0.1, on the real Redis under its own key prefix.
 *
 * - Burst: N job-finished events for already completed jobs, enqueued at once; measures callbacks
 *   delivered per second, and job end → receiver's first byte under that backlog.
 * - Paced: events at a steady rate well below capacity; measures the same delay without a backlog.
 *
 * "First byte" is when the receiver has the request head (Node's 'request' event), which on
 * loopback is within microseconds of the first byte. Job end is the job's `finished_ms`, set just
 * before its event is enqueued, and read back from the envelope `timestamp`.
 *
 * Usage: npm run bench   (env: BENCH_N=2000, BENCH_PACED_N=400, BENCH_PACED_RATE=100, DISPATCHER_CONCURRENCY=50)
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { createServer, type Server } from 'node:https';
import { resolve } from 'node:path';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { bullPrefix, jobIds } from '@media/common';
import type { ImageJob } from '@media/domain';
import { createAccounts } from '@media/accounts';
import { JobRepository, StoreKeys } from '@media/storage';
import { makeTestPki, type TestPki } from '../test/dispatcher/support/pki';
import { deleteKeysUnder, REDIS_URL } from '../test/support/stack';

const ROOT = resolve(__dirname, '..');
const N = Number(process.env.BENCH_N ?? 2000);
const PACED_N = Number(process.env.BENCH_PACED_N ?? 400);
const PACED_RATE = Number(process.env.BENCH_PACED_RATE ?? 100);
const CONCURRENCY = process.env.DISPATCHER_CONCURRENCY ?? '50';
/** The benchmark stops by itself, whatever happens. */
const DEADLINE_MS = 180_000;

interface Arrival {
  receivedMs: number;
  eventMs: number;
}

/** An HTTPS receiver that answers 204 and notes when each callback's head arrived. */
async function startReceiver(pki: TestPki): Promise<{ server: Server; port: number; arrivals: Map<string, Arrival> }> {
  const arrivals = new Map<string, Arrival>();
  const server = createServer({ cert: pki.cert, key: pki.key }, (req, res) => {
    const receivedMs = Date.now();
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const id = String(req.headers['webhook-id']);
      // A repeat (at-least-once) keeps the first arrival.
      if (!arrivals.has(id)) {
        const eventMs = Date.parse((JSON.parse(Buffer.concat(chunks).toString('utf8')) as { timestamp: string }).timestamp);
        arrivals.set(id, { receivedMs, eventMs });
      }
      res.writeHead(204).end();
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return { server, port: (server.address() as { port: number }).port, arrivals };
}

async function startDispatcher(env: NodeJS.ProcessEnv): Promise<ChildProcess> {
  const child = spawn(process.execPath, [resolve(ROOT, 'services/webhook-dispatcher/dist/main.js')], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  let stderr = '';
  child.stderr!.on('data', (c: Buffer) => (stderr += c.toString()));
  await new Promise<void>((ready, fail) => {
    let out = '';
    const onData = (c: Buffer) => {
      out += c.toString();
      if (out.includes('webhook-dispatcher started')) {
        child.stdout!.off('data', onData);
        // Keep draining the log so the pipe never blocks the dispatcher.
        child.stdout!.resume();
        ready();
      }
    };
    child.stdout!.on('data', onData);
    child.once('exit', (code) => fail(new Error(`dispatcher exited with ${code}: ${stderr}`)));
  });
  return child;
}

function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)];
}

async function waitFor(condition: () => boolean, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

async function main(): Promise<void> {
  const prefix = `bench-${randomBytes(6).toString('hex')}`;
  const redis = new Redis(REDIS_URL, { maxRetriesPerRequest: null });
  const keys = new StoreKeys(prefix);
  const jobs = new JobRepository(redis, keys);
  const pki = makeTestPki();
  const receiver = await startReceiver(pki);
  const events = new Queue('job-events', { connection: redis, prefix: bullPrefix(prefix) });
  let dispatcher: ChildProcess | undefined;
  const watchdog = setTimeout(() => {
    console.error(`benchmark exceeded ${DEADLINE_MS / 1000}s; stopping`);
    void cleanup().finally(() => process.exit(1));
  }, DEADLINE_MS);

  async function cleanup(): Promise<void> {
    clearTimeout(watchdog);
    if (dispatcher && dispatcher.exitCode === null && dispatcher.signalCode === null) {
      dispatcher.kill('SIGTERM');
      await once(dispatcher, 'exit');
    }
    await events.close();
    await deleteKeysUnder(redis, prefix);
    redis.disconnect();
    receiver.server.closeAllConnections();
    receiver.server.close();
    pki.cleanup();
  }

  try {
    const workspaceId = (await createAccounts({ keyPrefix: prefix, secretRotationOverlapSeconds: 86_400 }, redis).createWorkspace('bench', 'owner@bench.test')).workspace.id;
    const url = `https://localhost:${receiver.port}/hook`;
    let seq = 0;
    /** Stores a completed image job that ended now, and returns its event for the queue. */
    const finishedJob = async () => {
      const id = `req_bench${String(seq++).padStart(6, '0')}`;
      const now = Date.now();
      const job: ImageJob = {
        id, workspace_id: workspaceId, kind: 'image', operation: 'generation', model: 'pixel-1', prompt: 'bench', seed: 1,
        status: 'completed', created_ms: now - 1_000, finished_ms: now, cost: 0.005, error: null, callback_url: url, request_id: id,
        n: 1, size: '256x256', output_format: 'png', response_format: 'url', inputs: [], mask: null, outputs: [`${workspaceId}/${id}/0.png`],
      };
      await jobs.create(job);
      return { name: 'job-finished', data: { jobId: id }, opts: { jobId: jobIds.jobFinished(id) } };
    };

    dispatcher = await startDispatcher({
      PATH: process.env.PATH,
      REDIS_URL,
      KEY_PREFIX: prefix,
      CALLBACK_ALLOWED_CIDRS: '127.0.0.0/8',
      CALLBACK_CA_FILE: pki.caFile,
      DISPATCHER_CONCURRENCY: CONCURRENCY,
      // Any free ops port: a local stack may hold the default one.
      OPS_PORT: '0',
      LOG_LEVEL: 'info',
    });

    // Burst: the job records first, then every event in one go, so seeding does not pace delivery.
    const burst = [];
    for (let i = 0; i < N; i++) burst.push(await finishedJob());
    const burstStart = Date.now();
    await events.addBulk(burst);
    await waitFor(() => receiver.arrivals.size >= N, DEADLINE_MS, `${N} burst callbacks`);
    const burstArrivals = [...receiver.arrivals.values()];
    const burstSeconds = (Math.max(...burstArrivals.map((a) => a.receivedMs)) - burstStart) / 1000;
    // Event times were stamped while the records were written, before the burst was released.
    const burstDelays = burstArrivals.map((a) => a.receivedMs - Math.max(a.eventMs, burstStart)).sort((a, b) => a - b);

    // Paced: one job ending every 1/PACED_RATE s.
    const pacedStart = receiver.arrivals.size;
    const interval = 1000 / PACED_RATE;
    const t0 = Date.now();
    for (let i = 0; i < PACED_N; i++) {
      const wait = t0 + i * interval - Date.now();
      if (wait > 0) await new Promise((r) => setTimeout(r, wait));
      const event = await finishedJob();
      await events.add(event.name, event.data, event.opts);
    }
    await waitFor(() => receiver.arrivals.size >= pacedStart + PACED_N, DEADLINE_MS, `${PACED_N} paced callbacks`);
    const pacedDelays = [...receiver.arrivals.values()].slice(pacedStart).map((a) => a.receivedMs - a.eventMs).sort((a, b) => a - b);

    const rows: [string, string][] = [
      ['dispatcher processes', '1'],
      ['DISPATCHER_CONCURRENCY', CONCURRENCY],
      ['receiver', 'HTTPS on 127.0.0.1 (TLS handshake per callback)'],
      [`burst: ${N} callbacks delivered in`, `${burstSeconds.toFixed(2)} s`],
      ['burst: callbacks delivered / s', (N / burstSeconds).toFixed(0)],
      ['burst: job end → first byte p50', `${percentile(burstDelays, 50)} ms`],
      ['burst: job end → first byte p99', `${percentile(burstDelays, 99)} ms`],
      [`paced (${PACED_RATE}/s, ${PACED_N} jobs): job end → first byte p50`, `${percentile(pacedDelays, 50)} ms`],
      [`paced (${PACED_RATE}/s, ${PACED_N} jobs): job end → first byte p99`, `${percentile(pacedDelays, 99)} ms`],
    ];
    const width = Math.max(...rows.map(([k]) => k.length));
    console.log(`\nwebhook-dispatcher benchmark (${new Date().toISOString()})`);
    console.log('-'.repeat(width + 24));
    for (const [k, v] of rows) console.log(`${k.padEnd(width)}  ${v}`);
    console.log('-'.repeat(width + 24));
  } finally {
    await cleanup();
  }
}

main().catch((err) => {
  console.error(err instanceof Error ? err.stack : err);
  process.exit(1);
});
