/**
 * Asynchronous image acceptance of ONE gateway process (services/api-gateway/dist, run alone: no
 * generator, so accepted jobs stay queued), beside a bare Express app (bench/bare-express.ts, its
 * own process) that parses the same JSON body and answers 202 with the gateway's 202 body. Both are
 * loaded by autocannon from this process with the same connections, pipelining and duration, after
 * the same warm-up. The gateway's rate limit and waiting-jobs cap are raised far above what the
 * run can reach, and any answer other than 202 makes the figure invalid (reported, and the bench
 * exits non-zero): the figure must never count 429s.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import autocannon from 'autocannon';
import { freePort } from '../test/support/basics';
import { BenchStack, createWorkspace, dropPrefix, envNumber, HelperProcess, newPrefix, processCpuMs, serviceEnv, type BenchContext } from './support';
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
  try {
    const body = JSON.stringify({ model: 'pixel-1', prompt: 'a lighthouse at dusk', size: '256x256', callback_url: receiver.url('/hook') });
    const headers = { 'content-type': 'application/json', authorization: `Bearer ${apiKey}` };
    const first = await fetch(`${stack.baseUrl}/v1/images/generations`, { method: 'POST', headers, body });
    const reply = await first.text();
    if (first.status !== 202) throw new Error(`the gateway answered ${first.status} to an image request with callback_url: ${reply}`);

    bare = await HelperProcess.start('bare-express.ts');
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
    const before = await redis.zcard(allKeys(prefix).workspaceImages(workspaceId));
    const gateway = await load(stack.baseUrl, stack.services[0]?.child.pid);
    stack.assertAlive();
    // Warm-up and measured requests alike stored a job each; count them all.
    const jobsStored = await redis.zcard(allKeys(prefix).workspaceImages(workspaceId));
    const traced = envNumber('BENCH_TRACING', 1) > 0 ? await tracedLoad(prefix, stack.env, load) : undefined;

    const invalid: string[] = [];
    for (const [name, run] of [
      ['gateway', gateway],
      ['bare Express', bareExpress],
    ] as const) {
      const other = Object.entries(run.statusCodes).filter(([code]) => code !== '202');
      if (run.non2xx > 0 || other.length > 0) invalid.push(`${name}: ${run.non2xx} non-2xx answers (${other.map(([c, n]) => `${n}× ${c}`).join(', ')})`);
      if (run.errors > 0) invalid.push(`${name}: ${run.errors} connection errors (${run.timeouts} timeouts)`);
      if (run.ok === 0) invalid.push(`${name}: no request succeeded`);
    }
    if (jobsStored - before < gateway.ok) invalid.push(`gateway: ${gateway.ok} answers 202 but only ${jobsStored - before} jobs stored`);
    return {
      connections: CONNECTIONS,
      pipelining: PIPELINING,
      durationSeconds: DURATION,
      warmupSeconds: WARMUP,
      bodyBytes: Buffer.byteLength(body),
      gateway,
      bareExpress,
      traced,
      jobsStored,
      invalid,
    };
  } finally {
    await bare?.stop();
    await stack.stop();
    await dropPrefix(redis, prefix);
  }
}
