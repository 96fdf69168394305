// Fair scheduling across workspaces on the real stack: two gateways and two generators (default
// GENERATOR_CONCURRENCY each) on one Redis. Workspace A queues hundreds of large asynchronous images;
// workspace B's small synchronous and asynchronous images must then take about what they took on an
// idle stack, give or take a few of A's render times, instead of waiting behind A's whole backlog.
// Every bound is stated in figures measured here, on this machine, in this run.
import sharp from 'sharp';
import { ASYNC_PRIORITY_BAND, JobQueue } from '@media/queues';
import { createLogger } from '@media/common';
import { newIdBeside, type ImageJob } from '@media/domain';
import { INTAKE_GRACE_MS, IntakeRepair } from '../../services/generator/src/intake-repair';
import type { ServiceProcess } from '../support/stack';
import { api, eventually, freePort, TestStack, type TestWorkspace } from '../support/stack';
import { bullQueue } from './helpers';

const BACKLOG = 400;
const SAMPLES = 3;
/** The backlog must still be there when B has finished: most of it still unfinished. */
const BACKLOG_LEFT_AT_LEAST = 200;
const LARGE = { prompt: 'a harbour at dusk, every boat lit', size: '1536x1024', quality: 'high' };
const SMALL = { prompt: 'a red kite', size: '256x256', quality: 'low' };
/** A loopback callback URL: no dispatcher runs here, so nothing is sent to it. */
const CALLBACK_URL = 'https://127.0.0.1:9/hook';

interface Figures {
  p50: number;
  max: number;
  samples: number[];
}
const figures = (samples: number[]): Figures => {
  const sorted = [...samples].sort((a, b) => a - b);
  return { p50: sorted[Math.floor((sorted.length - 1) / 2)] ?? Infinity, max: sorted.at(-1) ?? Infinity, samples };
};
const median = (values: number[]) => figures(values).p50;
/**
 * What B may take while A has a backlog: its idle latency plus a few of A's render times (a slot
 * to free up, and its own render slowed by the jobs beside it), for the median and for every call.
 */
const bounds = (idle: Figures, renderMs: number) => ({ p50: idle.p50 + 3 * renderMs, max: idle.max + 5 * renderMs });

describe('generator: fair scheduling across workspaces', () => {
  let stack: TestStack;
  let a: TestWorkspace;
  let b: TestWorkspace;
  let gateways: string[];
  let generators: ServiceProcess[];

  beforeAll(async () => {
    stack = await TestStack.start(['api-gateway', 'generator'], {
      CALLBACK_ALLOWED_CIDRS: '127.0.0.0/8',
      RATE_LIMIT_CREATE_PER_MINUTE: '100000',
      RATE_LIMIT_READ_PER_MINUTE: '100000',
      MAX_WAITING_JOBS_PER_WORKSPACE: '5000',
    });
    const firstGenerator = stack.service('generator');
    generators = [firstGenerator, await stack.startService('generator')];
    const port = await freePort();
    await stack.startService('api-gateway', { PORT: String(port), PUBLIC_BASE_URL: `http://127.0.0.1:${port}` });
    gateways = [stack.baseUrl, `http://127.0.0.1:${port}`];
    a = await stack.createWorkspace('backlog');
    b = await stack.createWorkspace('small');
  });

  afterAll(async () => {
    await stack?.stop();
  });

  const post = (gateway: string, ws: TestWorkspace, body: object, signal?: AbortSignal) =>
    fetch(`${gateway}/v1/images/generations`, {
      method: 'POST',
      headers: { authorization: `Bearer ${ws.apiKey}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
      signal,
    });

  /** A synchronous call, request to response; Infinity when it took longer than `limitMs`. */
  async function syncLatency(gateway: string, ws: TestWorkspace, body: object, limitMs = 60_000): Promise<number> {
    const start = performance.now();
    try {
      const res = await post(gateway, ws, body, AbortSignal.timeout(Math.ceil(limitMs)));
      const text = await res.text();
      if (res.status !== 200) throw new Error(`sync image answered ${res.status}: ${text}`);
    } catch (err) {
      // A DOMException from fetch, of another realm than this test's Error: known by its name.
      if ((err as { name?: unknown } | null)?.name === 'TimeoutError') return Infinity;
      throw err;
    }
    return performance.now() - start;
  }

  /** An asynchronous image, from its POST to its record completed; Infinity when that took longer than `limitMs`. */
  async function asyncLatency(gateway: string, ws: TestWorkspace, body: object, limitMs = 60_000): Promise<number> {
    const start = performance.now();
    const res = await post(gateway, ws, { ...body, callback_url: CALLBACK_URL });
    const text = await res.text();
    if (res.status !== 202) throw new Error(`async image answered ${res.status}: ${text}`);
    const id = (JSON.parse(text) as { id: string }).id;
    for (;;) {
      const job = await stack.jobs.get(id);
      if (job?.status === 'failed') throw new Error(`image ${id} failed: ${JSON.stringify(job.error)}`);
      if (job?.status === 'completed') return performance.now() - start;
      if (performance.now() - start > limitMs) return Infinity;
      await new Promise((r) => setTimeout(r, 5));
    }
  }

  /**
   * B's small images, one at a time, alternating. A call over its limit ends the round: it has
   * failed already, and what was not measured counts as Infinity.
   */
  async function measureB(gateway: string, limitMs = { sync: 60_000, async: 60_000 }): Promise<{ sync: Figures; async: Figures }> {
    const sync: number[] = [];
    const async: number[] = [];
    for (let i = 0; i < SAMPLES; i++) {
      sync.push(await syncLatency(gateway, b, { ...SMALL, prompt: `${SMALL.prompt} ${i}` }, limitMs.sync));
      if (sync.includes(Infinity)) break;
      async.push(await asyncLatency(gateway, b, { ...SMALL, prompt: `${SMALL.prompt} later ${i}` }, limitMs.async));
      if (async.includes(Infinity)) break;
    }
    return { sync: figures(sync), async: figures(async) };
  }

  /** How long each of these finished generation jobs held its generator slot (BullMQ's processedOn → finishedOn). */
  async function slotTimes(ids: string[]): Promise<number[]> {
    const generation = bullQueue(stack, 'generation');
    try {
      const jobs = await Promise.all(ids.map((id) => generation.getJob(id)));
      return jobs.flatMap((job) => (job?.processedOn && job.finishedOn ? [job.finishedOn - job.processedOn] : []));
    } finally {
      await generation.close();
    }
  }

  it("keeps B's small images within a few of A's render times of their idle latency while A has a backlog of hundreds", async () => {
    // Idle stack: B's latencies (after a round that warms both gateways and generators up), and
    // what one of A's large images takes.
    await measureB(gateways[0]);
    await measureB(gateways[1]);
    const baseline = await measureB(gateways[1]);
    const largeAlone = figures([await syncLatency(gateways[0], a, LARGE), await syncLatency(gateways[0], a, LARGE)]);

    // A queues its backlog through both gateways, a few calls at a time.
    const backlog: string[] = [];
    const submitters = Array.from({ length: 16 }, async (_, lane) => {
      while (backlog.length < BACKLOG) {
        const i = backlog.length;
        backlog.push('');
        const res = await post(gateways[i % 2], a, { ...LARGE, prompt: `${LARGE.prompt} ${i}`, callback_url: CALLBACK_URL });
        const text = await res.text();
        if (res.status !== 202) throw new Error(`lane ${lane}: A's image ${i} answered ${res.status}: ${text}`);
        backlog[i] = (JSON.parse(text) as { id: string }).id;
      }
    });
    await Promise.all(submitters);
    // A's render time under this load (both generators busy), from the backlog jobs that have finished so far.
    const someDone = await eventually(
      async () => {
        const times = await slotTimes(backlog);
        return times.length >= 4 ? times : undefined;
      },
      30_000,
      "a few of A's backlog jobs to finish",
    );
    const earlyRenderMs = Math.max(median(someDone), largeAlone.p50);

    // B's calls go through the second gateway. A job may wait for a free slot (the jobs running
    // when it arrives) and render more slowly beside them, but never for the backlog: with one FIFO,
    // B's first call would wait for BACKLOG / 4 slots ≈ 100 renders. A call well past its bound is
    // cut short, so a regression fails in seconds rather than after the whole backlog.
    const cutAt = { sync: 1.5 * bounds(baseline.sync, earlyRenderMs).max, async: 1.5 * bounds(baseline.async, earlyRenderMs).max };
    const during = await measureB(gateways[1], cutAt);
    const unfinished = await stack.jobs.unfinishedCount(a.workspaceId);
    // The bounds' unit: A's render time under this load, from every backlog job finished by now.
    const loadedRender = figures(await slotTimes(backlog));
    const renderMs = Math.max(loadedRender.p50, largeAlone.p50);
    const bound = { sync: bounds(baseline.sync, renderMs), async: bounds(baseline.async, renderMs) };

    const ratio = (x: number, y: number) => (x / y).toFixed(1);
    console.log(
      [
        `fairness (2 gateways, 2 generators): A's large image ${LARGE.size} ${LARGE.quality}: ${largeAlone.p50.toFixed(0)} ms alone (request → response), ` +
          `slot time under load p50 ${loadedRender.p50} ms over ${loadedRender.samples.length} jobs; bound unit ${renderMs.toFixed(0)} ms`,
        `B sync  ${SMALL.size}: idle p50 ${baseline.sync.p50.toFixed(0)} max ${baseline.sync.max.toFixed(0)} ms; during A's backlog p50 ${during.sync.p50.toFixed(0)} max ${during.sync.max.toFixed(0)} ms (×${ratio(during.sync.p50, baseline.sync.p50)})`,
        `B async ${SMALL.size}: idle p50 ${baseline.async.p50.toFixed(0)} max ${baseline.async.max.toFixed(0)} ms; during A's backlog p50 ${during.async.p50.toFixed(0)} max ${during.async.max.toFixed(0)} ms (×${ratio(during.async.p50, baseline.async.p50)})`,
        `A's backlog: ${BACKLOG} queued, ${unfinished} still unfinished when B was done (Infinity: a call cut short, far past its bound)`,
      ].join('\n'),
    );

    // The backlog was really there while B ran (not drained by a fast machine).
    expect(unfinished).toBeGreaterThanOrEqual(BACKLOG_LEFT_AT_LEAST);
    // Both generator replicas took A's jobs: the order held across processes.
    for (const generator of generators) expect(generator.hasLog((l) => l.message === 'job completed')).toBe(true);
    const over = (['sync', 'async'] as const).flatMap((kind) => [
      ...(during[kind].p50 > bound[kind].p50 ? [`${kind} p50 ${during[kind].p50.toFixed(0)} ms > ${bound[kind].p50.toFixed(0)} ms`] : []),
      ...(during[kind].max > bound[kind].max ? [`${kind} max ${during[kind].max.toFixed(0)} ms > ${bound[kind].max.toFixed(0)} ms`] : []),
    ]);
    expect(over).toEqual([]);
  });
});

// Which priority each way into the generation queue gives a job, read from BullMQ with no generator
// running (the jobs stay queued): the gateway's one-step admission, its upload path (edits), and
// the intake repair of a job a gateway stored and never queued.
describe('generator: queue priorities by workspace rank', () => {
  let stack: TestStack;

  beforeAll(async () => {
    stack = await TestStack.start(['api-gateway'], { CALLBACK_ALLOWED_CIDRS: '127.0.0.0/8' });
  });

  afterAll(async () => {
    await stack?.stop();
  });

  it("ranks each job among its workspace's unfinished ones, synchronous calls in a band below every asynchronous job", async () => {
    const c = await stack.createWorkspace('ranked');
    const d = await stack.createWorkspace('other');
    const call = api(stack, c.apiKey);
    const png = await sharp({ create: { width: 8, height: 8, channels: 3, background: '#36c' } })
      .png()
      .toBuffer();
    const created = async (path: string, json: object) => {
      const res = await call(path, { method: 'POST', json });
      expect([path, res.status]).toEqual([path, path === '/v1/videos' ? 200 : 202]);
      return res.json.id as string;
    };
    await created('/v1/images/generations', { prompt: 'one', size: '256x256', callback_url: CALLBACK_URL });
    await created('/v1/videos', { prompt: 'two', seconds: 1, size: '640x360' });
    await created('/v1/images/edits', {
      prompt: 'three',
      size: '256x256',
      image: `data:image/png;base64,${png.toString('base64')}`,
      callback_url: CALLBACK_URL,
    });
    // Synchronous calls wait for a generator that is not there: the client gives up, the job stays queued.
    const syncCall = (ws: TestWorkspace, prompt: string) =>
      fetch(`${stack.baseUrl}/v1/images/generations`, {
        method: 'POST',
        headers: { authorization: `Bearer ${ws.apiKey}`, 'content-type': 'application/json' },
        body: JSON.stringify({ prompt, size: '256x256' }),
        signal: AbortSignal.timeout(500),
      }).catch(() => undefined);
    await Promise.all([syncCall(c, 'four'), syncCall(d, 'first of d')]);

    // A job the gateway stored and never queued (it died in between), found by the intake repair.
    const orphan: ImageJob = {
      id: newIdBeside(d.workspaceId, 'img'),
      kind: 'image',
      operation: 'generation',
      workspace_id: d.workspaceId,
      model: 'pixel-1',
      prompt: 'orphan',
      seed: 1,
      status: 'in_progress',
      created_ms: Date.now(),
      finished_ms: null,
      cost: null,
      error: null,
      callback_url: CALLBACK_URL,
      request_id: 'req_orphan',
      n: 1,
      size: '256x256',
      output_format: 'png',
      response_format: 'url',
      inputs: [],
      mask: null,
      outputs: [],
    };
    await stack.jobs.create(orphan);
    const logger = createLogger('fairness-test', 'error');
    const producer = new JobQueue('generation', stack.redis, stack.prefix, logger);
    const generation = bullQueue(stack, 'generation');
    try {
      await new IntakeRepair(stack.jobs, producer, logger).run(Date.now() + INTAKE_GRACE_MS + 1);
      const queued = await eventually(
        async () => {
          const jobs = await generation.getJobs(['prioritized', 'wait'], 0, -1);
          return jobs.length === 6 ? jobs : undefined;
        },
        10_000,
        'six queued jobs',
      );
      const priorities = Object.fromEntries(
        await Promise.all(
          queued.map(async (job) => {
            const record = await stack.jobs.get(job.id!);
            return [`${record!.workspace_id === c.workspaceId ? 'c' : 'd'}:${record!.prompt}`, job.priority] as const;
          }),
        ),
      );
      expect(priorities).toEqual({
        'c:one': ASYNC_PRIORITY_BAND + 1,
        'c:two': ASYNC_PRIORITY_BAND + 2,
        'c:three': ASYNC_PRIORITY_BAND + 3,
        'c:four': 4,
        'd:first of d': 1,
        'd:orphan': ASYNC_PRIORITY_BAND + 2,
      });
    } finally {
      await generation.close();
      await producer.close();
    }
  });
});
