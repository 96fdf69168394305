/**
 * Isolation between workspaces: what one workspace's load does to another's latency, each figure
 * beside the same one measured on an idle stack in the same run.
 *
 * Generation (benchGenerationIsolation): gateway and generator as processes from dist/. Workspace B
 * makes small 256x256 images one at a time, synchronous (request → response) and asynchronous with
 * a callback_url (POST → its record completed; no dispatcher runs, so nothing is delivered), first
 * on the idle stack, then while workspace A has a backlog of large 1536x1024 images queued (600 by
 * default, the size of the backlog that once held a small synchronous image for 100 s). A's render
 * time alone and how much of its backlog was still unfinished when B was done are reported too, so
 * the "during" figures can be read against them.
 *
 * Delivery (bench/delivery-isolation.ts): B's callbacks while A's receiver hangs, with the shipped
 * settings and with the settings from before isolation.
 */
import { JobRepository } from '@media/jobs';
import { benchDeliveryIsolation, type DeliveryIsolationResult } from './delivery-isolation';
import {
  BenchStack,
  createWorkspace,
  dropPrefix,
  envNumber,
  newPrefix,
  percentile,
  remainingMs,
  serviceEnv,
  sleep,
  submitImage,
  type BenchContext,
} from './support';
import { allKeys } from '../test/support/store-keys';

export interface LatencyFigures {
  n: number;
  p50Ms: number;
  p99Ms: number;
  maxMs: number;
}

/** B's latencies on the idle stack and while A's backlog waits. */
export interface BaselineAndLoaded {
  baseline: LatencyFigures;
  duringBacklog: LatencyFigures;
}

export interface GenerationIsolationResult {
  generatorConcurrency: number;
  /** A's large image, request → response on the idle stack (a synchronous call). */
  largeRenderMs: LatencyFigures;
  backlogQueued: number;
  /** A's jobs not yet finished when B's last call ended: the backlog was really there. */
  backlogLeftWhenDone: number;
  sync: BaselineAndLoaded;
  async: BaselineAndLoaded;
}

/** Every isolation figure of the run; each kind of load has its own function and entry. */
export interface IsolationResult {
  generation?: GenerationIsolationResult;
  delivery?: DeliveryIsolationResult;
}

export async function benchIsolation(ctx: BenchContext): Promise<IsolationResult> {
  return { generation: await benchGenerationIsolation(ctx), delivery: await benchDeliveryIsolation(ctx) };
}

const SMALL = { model: 'pixel-1', prompt: 'a red kite', size: '256x256', quality: 'low' };
const LARGE = { model: 'pixel-1', prompt: 'a harbour at dusk, every boat lit', size: '1536x1024', quality: 'high' };

const figures = (samples: number[]): LatencyFigures => {
  const sorted = [...samples].sort((a, b) => a - b);
  return { n: sorted.length, p50Ms: percentile(sorted, 50), p99Ms: percentile(sorted, 99), maxMs: sorted.at(-1) ?? Number.NaN };
};

export async function benchGenerationIsolation(ctx: BenchContext): Promise<GenerationIsolationResult> {
  const SAMPLES = Math.max(1, envNumber('BENCH_ISOLATION_SAMPLES', 20));
  const BACKLOG = Math.max(1, envNumber('BENCH_ISOLATION_BACKLOG', 600));
  const GENERATOR_CONCURRENCY = envNumber('GENERATOR_CONCURRENCY', 2);
  const { redis, pki, receiver } = ctx;

  const prefix = newPrefix('isolation-generation');
  const a = await createWorkspace(redis, prefix, 'backlog');
  const b = await createWorkspace(redis, prefix, 'small');
  const jobs = new JobRepository(redis, allKeys(prefix));
  const stack = await BenchStack.start(
    prefix,
    ['api-gateway', 'generator'],
    await serviceEnv(prefix, pki, {
      RATE_LIMIT_CREATE_PER_MINUTE: '100000000',
      RATE_LIMIT_READ_PER_MINUTE: '100000000',
      MAX_WAITING_JOBS_PER_WORKSPACE: '100000000',
      GENERATOR_CONCURRENCY: String(GENERATOR_CONCURRENCY),
    }),
  );
  const callbackUrl = receiver.url('/hook');

  const syncCall = async (apiKey: string, body: object): Promise<number> => {
    const start = performance.now();
    const res = await fetch(`${stack.baseUrl}/v1/images/generations`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${apiKey}` },
      body: JSON.stringify(body),
    });
    const text = await res.text();
    if (res.status !== 200) throw new Error(`a synchronous image answered ${res.status}: ${text}`);
    return performance.now() - start;
  };
  const asyncCall = async (apiKey: string, body: object): Promise<number> => {
    const start = performance.now();
    const id = await submitImage(stack.baseUrl, apiKey, JSON.stringify({ ...body, callback_url: callbackUrl }));
    for (;;) {
      const job = await jobs.get(id);
      if (job?.status === 'failed') throw new Error(`image ${id} failed: ${JSON.stringify(job.error)}`);
      if (job?.status === 'completed') return performance.now() - start;
      if (remainingMs() <= 0) throw new Error(`image ${id} had not finished at the run's deadline`);
      stack.assertAlive();
      await sleep(5);
    }
  };
  /** B's small images, one at a time, synchronous and asynchronous in turn. */
  const measureB = async () => {
    const sync: number[] = [];
    const async: number[] = [];
    for (let i = 0; i < SAMPLES; i++) {
      sync.push(await syncCall(b.apiKey, { ...SMALL, prompt: `${SMALL.prompt} ${i}` }));
      async.push(await asyncCall(b.apiKey, { ...SMALL, prompt: `${SMALL.prompt}, later ${i}` }));
    }
    return { sync: figures(sync), async: figures(async) };
  };

  try {
    // Warm-up: the first calls of a fresh process pay for loading code and fonts.
    for (let i = 0; i < 3; i++) {
      await syncCall(b.apiKey, SMALL);
      await syncCall(a.apiKey, LARGE);
    }
    const baseline = await measureB();
    const large: number[] = [];
    for (let i = 0; i < 5; i++) large.push(await syncCall(a.apiKey, { ...LARGE, prompt: `${LARGE.prompt} ${i}` }));

    // A's backlog, a few calls at a time, as a client queueing a batch would.
    let next = 0;
    await Promise.all(
      Array.from({ length: 16 }, async () => {
        while (next < BACKLOG) {
          next++;
          await submitImage(stack.baseUrl, a.apiKey, JSON.stringify({ ...LARGE, prompt: `${LARGE.prompt} #${next}`, callback_url: callbackUrl }));
        }
      }),
    );
    const during = await measureB();
    const left = await jobs.unfinishedCount(a.workspaceId);
    return {
      generatorConcurrency: GENERATOR_CONCURRENCY,
      largeRenderMs: figures(large),
      backlogQueued: BACKLOG,
      backlogLeftWhenDone: left,
      sync: { baseline: baseline.sync, duringBacklog: during.sync },
      async: { baseline: baseline.async, duringBacklog: during.async },
    };
  } finally {
    await stack.stop();
    await dropPrefix(redis, prefix);
  }
}
