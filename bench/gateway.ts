/**
 * Asynchronous image acceptance of ONE gateway process (services/api-gateway/dist, run alone: no
 * generator, so accepted jobs stay queued), beside two peers, each its own process: a bare Express
 * app (bench/bare-express.ts) that parses the same JSON body and answers 202 with the gateway's 202
 * body, and a naive gateway (bench/naive-gateway.ts) that checks the API key, validates with joi,
 * writes the job and adds it to BullMQ on the same Redis, as a newcomer would. All are loaded by
 * autocannon from this process with the same connections, pipelining and duration, after the same
 * warm-up. The gateway's rate limit and waiting-jobs cap are raised far above what the
 * run can reach, and any answer other than 202 makes the figure invalid (reported, and the bench
 * exits non-zero): the figure must never count 429s.
 */
import { createHash } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import autocannon from 'autocannon';
import { freePort } from '../test/support/basics';
import {
  BenchStack,
  createWorkspace,
  dropPrefix,
  envNumber,
  HelperProcess,
  naivePeerRedisUrl,
  newPrefix,
  processCpuMs,
  serviceEnv,
  type BenchContext,
} from './support';
import { allKeys } from '../test/support/store-keys';

export interface LoadRun {
  requestsPerSecond: number;
  /** 2xx answers in the measured run. */
  ok: number;
  non2xx: number;
  errors: number;
  timeouts: number;
  /** Status code → count. */
  statusCodes: Record<string, number>;
  latencyP50Ms: number;
  latencyP99Ms: number;
  seconds: number;
  /** CPU time of the serving process per 2xx answer over the measured run (user + system); undefined where /proc cannot be read. */
  cpuMicrosPerRequest?: number;
}

export interface GatewayResult {
  connections: number;
  pipelining: number;
  durationSeconds: number;
  warmupSeconds: number;
  bodyBytes: number;
  gateway: LoadRun;
  bareExpress: LoadRun;
  /** The naive gateway (bench/naive-gateway.ts); absent when the run's Redis is more than a URL (e.g. BENCH_REDIS=cluster). */
  naiveGateway?: LoadRun;
  /** The same gateway exporting a trace per request (OTLP/HTTP to a sink in the bench process); absent with BENCH_TRACING=0. */
  traced?: { run: LoadRun; spansExported: number };
  /** Jobs the gateway stored in its workspace's image index (every 202 must have stored one). */
  jobsStored: number;
  /** Problems that make the figure invalid. */
  invalid: string[];
}

/**
 * The same load on a second gateway that exports a span per request over OTLP/HTTP to a sink here
 * (which answers as a collector does and counts what it got): what tracing costs when it is on.
 */
async function tracedLoad(
  prefix: string,
  env: NodeJS.ProcessEnv,
  load: (baseUrl: string, pid: number | undefined) => Promise<LoadRun>,
): Promise<{ run: LoadRun; spansExported: number }> {
  let spansExported = 0;
  const sink = createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      spansExported += (body.match(/"spanId"/g) ?? []).length;
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((resolve) => sink.listen(0, '127.0.0.1', resolve));
  const port = (sink.address() as AddressInfo).port;
  const gatewayPort = String(await freePort());
  const traced = await BenchStack.start(prefix, ['api-gateway'], {
    ...env,
    PORT: gatewayPort,
    PUBLIC_BASE_URL: `http://127.0.0.1:${gatewayPort}`,
    OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${port}`,
    OTEL_BSP_SCHEDULE_DELAY: '1000',
  });
  try {
    const run = await load(traced.baseUrl, traced.services[0]?.child.pid);
    traced.assertAlive();
    return { run, spansExported };
  } finally {
    await traced.stop();
    await new Promise<void>((resolve) => sink.close(() => resolve()));
  }
}

export async function benchGateway(ctx: BenchContext): Promise<GatewayResult> {
  const CONNECTIONS = envNumber('BENCH_AC_CONNECTIONS', 50);
  const PIPELINING = envNumber('BENCH_AC_PIPELINING', 1);
  const DURATION = envNumber('BENCH_AC_SECONDS', 10);
  const WARMUP = envNumber('BENCH_AC_WARMUP_SECONDS', 2);
  const { redis, receiver, pki } = ctx;

  const prefix = newPrefix('gateway');
  const { workspaceId, apiKey } = await createWorkspace(redis, prefix);
  const stack = await BenchStack.start(
    prefix,
    ['api-gateway'],
    await serviceEnv(prefix, pki, {
      // Far above what one run can reach (tens of thousands of requests): no 429 may be measured.
      RATE_LIMIT_CREATE_PER_MINUTE: '100000000',
      MAX_WAITING_JOBS_PER_WORKSPACE: '100000000',
    }),
  );
  let bare: HelperProcess | undefined;
  let naive: HelperProcess | undefined;
  const naivePrefix = newPrefix('naive-gateway');
  const naiveRedisUrl = naivePeerRedisUrl();
  try {
    const body = JSON.stringify({ model: 'pixel-1', prompt: 'a lighthouse at dusk', size: '256x256', callback_url: receiver.url('/hook') });
    const headers = { 'content-type': 'application/json', authorization: `Bearer ${apiKey}` };
    const first = await fetch(`${stack.baseUrl}/v1/images/generations`, { method: 'POST', headers, body });
    const reply = await first.text();
    if (first.status !== 202) throw new Error(`the gateway answered ${first.status} to an image request with callback_url: ${reply}`);

    bare = await HelperProcess.start('bare-express.ts', {}, true);
    const barePort = await bare.call<number>('listen', { reply });

    const load = async (baseUrl: string, pid: number | undefined): Promise<LoadRun> => {
      const options = { url: `${baseUrl}/v1/images/generations`, method: 'POST' as const, headers, body, connections: CONNECTIONS, pipelining: PIPELINING };
      if (WARMUP > 0) await autocannon({ ...options, duration: WARMUP });
      const cpuBefore = processCpuMs(pid);
      const result = await autocannon({ ...options, duration: DURATION });
      const cpuAfter = processCpuMs(pid);
      const statusCodes = Object.fromEntries(Object.entries(result.statusCodeStats ?? {}).map(([code, s]) => [code, s.count ?? 0]));
      return {
        requestsPerSecond: result['2xx'] / result.duration,
        ok: result['2xx'],
        non2xx: result.non2xx,
        errors: result.errors,
        timeouts: result.timeouts,
        statusCodes,
        latencyP50Ms: result.latency.p50,
        latencyP99Ms: result.latency.p99,
        seconds: result.duration,
        ...(cpuBefore !== undefined && cpuAfter !== undefined && result['2xx'] > 0
          ? { cpuMicrosPerRequest: ((cpuAfter - cpuBefore) * 1000) / result['2xx'] }
          : {}),
      };
    };
    const bareExpress = await load(`http://127.0.0.1:${barePort}`, bare.child.pid);
    await bare.stop();

    let naiveGateway: LoadRun | undefined;
    let naiveQueued = 0;
    if (naiveRedisUrl) {
      // The naive gateway's API keys: SHA-256 of the key → workspace, in one hash (its only lookup).
      await redis.hset(`${naivePrefix}:api-keys`, createHash('sha256').update(apiKey).digest('hex'), workspaceId);
      naive = await HelperProcess.start('naive-gateway.ts', {}, true);
      const naivePort = await naive.call<number>('listen', { redisUrl: naiveRedisUrl, prefix: naivePrefix });
      const probe = await fetch(`http://127.0.0.1:${naivePort}/v1/images/generations`, { method: 'POST', headers, body });
      if (probe.status !== 202) throw new Error(`the naive gateway answered ${probe.status}: ${await probe.text()}`);
      naiveGateway = await load(`http://127.0.0.1:${naivePort}`, naive.child.pid);
      await naive.stop();
      naiveQueued = await redis.llen(`${naivePrefix}:bull:generation:wait`);
      // Its keys go before the gateway is loaded, so that each side runs beside only its own.
      await dropPrefix(redis, naivePrefix);
    }
    const before = await redis.zcard(allKeys(prefix).workspaceImages(workspaceId));
    const gateway = await load(stack.baseUrl, stack.services[0]?.child.pid);
    stack.assertAlive();
    // Warm-up and measured requests alike stored a job each; count them all.
    const jobsStored = await redis.zcard(allKeys(prefix).workspaceImages(workspaceId));
    const traced = envNumber('BENCH_TRACING', 1) > 0 ? await tracedLoad(prefix, stack.env, load) : undefined;

    const invalid: string[] = [];
    const runs: [string, LoadRun][] = [
      ['gateway', gateway],
      ['bare Express', bareExpress],
      ...(naiveGateway ? [['naive gateway', naiveGateway] as [string, LoadRun]] : []),
    ];
    for (const [name, run] of runs) {
      const other = Object.entries(run.statusCodes).filter(([code]) => code !== '202');
      if (run.non2xx > 0 || other.length > 0) invalid.push(`${name}: ${run.non2xx} non-2xx answers (${other.map(([c, n]) => `${n}× ${c}`).join(', ')})`);
      if (run.errors > 0) invalid.push(`${name}: ${run.errors} connection errors (${run.timeouts} timeouts)`);
      if (run.ok === 0) invalid.push(`${name}: no request succeeded`);
    }
    if (jobsStored - before < gateway.ok) invalid.push(`gateway: ${gateway.ok} answers 202 but only ${jobsStored - before} jobs stored`);
    if (naiveGateway && naiveQueued < naiveGateway.ok) invalid.push(`naive gateway: ${naiveGateway.ok} answers 202 but only ${naiveQueued} jobs queued`);
    return {
      connections: CONNECTIONS,
      pipelining: PIPELINING,
      durationSeconds: DURATION,
      warmupSeconds: WARMUP,
      bodyBytes: Buffer.byteLength(body),
      gateway,
      bareExpress,
      naiveGateway,
      traced,
      jobsStored,
      invalid,
    };
  } finally {
    await bare?.stop();
    await naive?.stop();
    await stack.stop();
    await dropPrefix(redis, prefix);
    await dropPrefix(redis, naivePrefix);
  }
}
