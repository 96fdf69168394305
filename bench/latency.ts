/**
 * Job end → receiver's first byte through the whole stack: gateway, generator and dispatcher as
 * separate processes from dist/, image jobs with a callback_url POSTed at a fixed rate for a
 * bounded time (by default 20/s for 15 s, then 10/s for 15 s), each rate after the previous one has
 * drained. Job end is the envelope's `timestamp` (the job's `finished_ms`, stamped by the generator);
 * first byte is the receiver's 'request' event (the request head is in; on loopback within
 * microseconds of the first byte). Both clocks are this machine's.
 */
import {
  BenchStack,
  createWorkspace,
  dropPrefix,
  envNumber,
  newPrefix,
  percentile,
  serviceEnv,
  sleep,
  submitImage,
  waitUntil,
  type BenchContext,
} from './support';

export interface LatencyRun {
  ratePerSecond: number;
  seconds: number;
  jobs: number;
  /** Callbacks that arrived (each job's first one). */
  delivered: number;
  p50Ms: number;
  p99Ms: number;
  minMs: number;
  maxMs: number;
}

export interface LatencyResult {
  generatorConcurrency: number;
  dispatcherConcurrency: number;
  runs: LatencyRun[];
}

export async function benchLatency(ctx: BenchContext): Promise<LatencyResult> {
  const RATES = (process.env.BENCH_LATENCY_RATES ?? '20,10')
    .split(',')
    .map((r) => Number(r.trim()))
    .filter((r) => r > 0);
  const SECONDS = envNumber('BENCH_LATENCY_SECONDS', 15);
  const GENERATOR_CONCURRENCY = envNumber('GENERATOR_CONCURRENCY', 2);
  const DISPATCHER_CONCURRENCY = envNumber('DISPATCHER_CONCURRENCY', 50);
  const { redis, receiver, pki } = ctx;

  const prefix = newPrefix('latency');
  const { apiKey } = await createWorkspace(redis, prefix);
  const stack = await BenchStack.start(
    prefix,
    ['api-gateway', 'generator', 'webhook-dispatcher'],
    await serviceEnv(prefix, pki, {
      RATE_LIMIT_CREATE_PER_MINUTE: '100000000',
      MAX_WAITING_JOBS_PER_WORKSPACE: '100000000',
      GENERATOR_CONCURRENCY: String(GENERATOR_CONCURRENCY),
      DISPATCHER_CONCURRENCY: String(DISPATCHER_CONCURRENCY),
    }),
  );
  const body = JSON.stringify({ model: 'pixel-1', prompt: 'a lighthouse at dusk', size: '256x256', callback_url: receiver.url('/hook') });
  const submit = (): Promise<string> => submitImage(stack.baseUrl, apiKey, body);

  /** Jobs at `rate` per second for `count` jobs; resolves once every one's callback has arrived. */
  const paced = async (rate: number, count: number): Promise<string[]> => {
    await receiver.reset();
    const t0 = Date.now();
    const submitted: Promise<string>[] = [];
    for (let i = 0; i < count; i++) {
      const wait = t0 + (i * 1000) / rate - Date.now();
      if (wait > 0) await sleep(wait);
      submitted.push(submit());
    }
    const ids = await Promise.all(submitted);
    await waitUntil(
      async () => {
        stack.assertAlive();
        return (await receiver.uniqueCount()) >= count;
      },
      60_000,
      `${count} callbacks at ${rate}/s`,
      50,
    );
    return ids;
  };

  try {
    // Warm-up (JIT, connections, lazily made keys): a few jobs at a gentle pace, not counted.
    await paced(5, 5);
    const runs: LatencyRun[] = [];
    for (const rate of RATES) {
      const count = Math.max(1, Math.round(rate * SECONDS));
      const ids = new Set(await paced(rate, count));
      const arrivals = (await receiver.arrivals()).filter((a) => ids.has(a.jobId));
      const delays = arrivals.map((a) => a.receivedMs - a.eventMs).sort((a, b) => a - b);
      runs.push({
        ratePerSecond: rate,
        seconds: count / rate,
        jobs: count,
        delivered: arrivals.length,
        p50Ms: percentile(delays, 50),
        p99Ms: percentile(delays, 99),
        minMs: delays[0] ?? Number.NaN,
        maxMs: delays.at(-1) ?? Number.NaN,
      });
    }
    return { generatorConcurrency: GENERATOR_CONCURRENCY, dispatcherConcurrency: DISPATCHER_CONCURRENCY, runs };
  } finally {
    await stack.stop();
    await dropPrefix(redis, prefix);
  }
}
