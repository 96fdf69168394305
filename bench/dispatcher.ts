/**
 * Callback throughput of ONE real dispatcher process (services/webhook-dispatcher/dist), beside a
 * naive BullMQ worker and two plain got POST loops to the same receiver, with the same body, in the
 * same run:
 *
 * - dispatcher: N completed image jobs with a callback_url are written straight into Redis (no
 *   gateway, no generator), then their N `job-finished` events (each naming its job and its
 *   workspace, as the generator's do) are queued in one addBulk; the figure is N / (last
 *   callback's arrival at the receiver − the addBulk call).
 * - naive dispatcher (bench/naive-dispatcher.ts, its own process as ours is): N jobs carrying the
 *   URL and the dispatcher's own body, queued in one addBulk on a queue of its own, timed the same
 *   way (the addBulk call to the last arrival). It runs `DISPATCHER_CONCURRENCY` jobs at once, as
 *   ours does, and ours runs with a destination cap that lets one workspace use all of its
 *   concurrency at the one receiver (see CONCURRENCY below), so both have as many POSTs in flight.
 * - keep-alive loop: N POSTs of the dispatcher's own body and headers (captured from its warm-up)
 *   from this process with got, `inFlight` at a time, over a keep-alive agent (at most `inFlight`
 *   sockets): what HTTP over TLS costs on this machine when connections are reused.
 * - fresh-TLS loop: the same, with an agent that opens a new connection per request (keepAlive
 *   false, Node's default TLS session cache), configured like the dispatcher's own agent.
 *
 * Each of the four gets the same warm-up (BENCH_CALLBACK_WARMUP requests, not counted).
 */
import { Agent as HttpsAgent } from 'node:https';
import { createSecureContext, rootCertificates } from 'node:tls';
import { randomBytes } from 'node:crypto';
import { Queue } from 'bullmq';
import { bullPrefix } from '@media/common';
import { jobIds } from '@media/queues';
import { headroomOf } from '@media/callbacks';
import { newIdBeside, type ImageJob } from '@media/domain';
import { JobRepository } from '@media/jobs';
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
  waitUntil,
  type BenchContext,
} from './support';
import type { NaiveCallbackJob } from './naive-dispatcher';
import type { ReceiverStats } from './ipc';
import { allKeys } from '../test/support/store-keys';

export interface ThroughputRun {
  requests: number;
  seconds: number;
  perSecond: number;
  /** Answers other than 204, and transport errors. */
  failures: number;
  /** TLS connections the receiver accepted during the run, and how many resumed a session. */
  connections: number;
  resumedSessions: number;
  /**
   * CPU time per request of the sending process over the run (user + system): the dispatcher's own
   * process, or this process for the got loops. Unknown (undefined) where /proc cannot be read.
   */
  cpuMicrosPerRequest?: number;
}

export interface DispatcherResult {
  callbacks: number;
  dispatcherConcurrency: number;
  inFlight: number;
  warmup: number;
  bodyBytes: number;
  /** CALLBACK_DESTINATION_MAX_IN_FLIGHT of our dispatcher in this phase (one workspace's share of it is at least the concurrency). */
  destinationMaxInFlight: number;
  dispatcher: ThroughputRun;
  /** The naive BullMQ worker (bench/naive-dispatcher.ts), DISPATCHER_CONCURRENCY at once; absent when the run's Redis is more than a URL. */
  naive?: ThroughputRun;
  keepAlive: ThroughputRun;
  freshTls: ThroughputRun;
}

const BODY_HEADERS = ['content-type', 'user-agent', 'webhook-id', 'webhook-timestamp', 'webhook-signature'];

export async function benchDispatcher(ctx: BenchContext): Promise<DispatcherResult> {
  const N = envNumber('BENCH_CALLBACKS', 2000);
  const WARMUP = envNumber('BENCH_CALLBACK_WARMUP', 100);
  // "The same concurrency" is the same number of POSTs in flight at the one receiver: the naive
  // worker runs CONCURRENCY jobs at once, and so does ours (each job-finished event makes its
  // attempt 1 in its own handler). Ours also caps what one workspace has in flight at a destination
  // (CALLBACK_DESTINATION_MAX_IN_FLIGHT less a tenth of headroom, 90 of the default 100), and an
  // attempt over it waits as a delayed job: the cap is raised just enough that it is never reached
  // here, so the concurrency, not isolation, is what bounds both (isolation has its own phase).
  const CONCURRENCY = envNumber('DISPATCHER_CONCURRENCY', 100);
  // The got loops keep as many requests in flight, unless told otherwise.
  const IN_FLIGHT = envNumber('BENCH_IN_FLIGHT', CONCURRENCY);
  let destinationMaxInFlight = 100;
  while (destinationMaxInFlight - headroomOf(destinationMaxInFlight) < CONCURRENCY) destinationMaxInFlight++;
  const { redis, receiver, pki } = ctx;

  const prefix = newPrefix('dispatch');
  const { workspaceId } = await createWorkspace(redis, prefix);
  const jobs = new JobRepository(redis, allKeys(prefix));
  const events = new Queue('job-events', { connection: redis, prefix: bullPrefix(prefix, 'job-events') });
  const stack = await BenchStack.start(
    prefix,
    ['webhook-dispatcher'],
    await serviceEnv(prefix, pki, {
      DISPATCHER_CONCURRENCY: String(CONCURRENCY),
      CALLBACK_DESTINATION_MAX_IN_FLIGHT: String(destinationMaxInFlight),
    }),
  );
  const url = receiver.url('/hook');

  /** Stores `count` completed image jobs that ended now; returns their events, ready for the queue. */
  async function finishedJobs(count: number) {
    const out: { name: 'job-finished'; data: { jobId: string; workspaceId: string }; opts: { jobId: string } }[] = [];
    for (let start = 0; start < count; start += 100) {
      const batch = [];
      for (let i = start; i < Math.min(count, start + 100); i++) {
        const id = newIdBeside(workspaceId, 'req');
        const now = Date.now();
        const job: ImageJob = {
          id,
          workspace_id: workspaceId,
          kind: 'image',
          operation: 'generation',
          model: 'pixel-1',
          prompt: 'a lighthouse at dusk',
          seed: 1,
          status: 'completed',
          created_ms: now - 1_000,
          finished_ms: now,
          cost: 0.005,
          error: null,
          callback_url: url,
          request_id: id,
          n: 1,
          size: '256x256',
          output_format: 'png',
          response_format: 'url',
          inputs: [],
          mask: null,
          outputs: [`${workspaceId}/${id}/0.png`],
        };
        batch.push(jobs.create(job));
        out.push({ name: 'job-finished', data: { jobId: id, workspaceId }, opts: { jobId: jobIds.jobFinished(id) } });
      }
      await Promise.all(batch);
    }
    return out;
  }

  async function runOf(requests: number, startMs: number, endMs: number, failures: number, stats: ReceiverStats, cpuMs?: number): Promise<ThroughputRun> {
    const seconds = (endMs - startMs) / 1000;
    return {
      requests,
      seconds,
      perSecond: requests / seconds,
      failures,
      connections: stats.connections,
      resumedSessions: stats.resumedSessions,
      ...(cpuMs !== undefined ? { cpuMicrosPerRequest: (cpuMs * 1000) / requests } : {}),
    };
  }

  /**
   * The naive worker: its own process, warmed up like ours, then N jobs in one addBulk timed to the
   * last arrival. The producer's side is here: one job per callback, the retry ladder as BullMQ's
   * attempts and backoff (6 attempts, 1 min doubling), the last 100 completed jobs kept as our
   * job-events queue keeps them.
   */
  async function naiveRun(body: string): Promise<ThroughputRun | undefined> {
    const redisUrl = naivePeerRedisUrl();
    if (!redisUrl) return undefined;
    const naivePrefix = newPrefix('naive-dispatch');
    const queue = new Queue<NaiveCallbackJob>('callbacks', {
      connection: redis,
      prefix: `${naivePrefix}:bull`,
      defaultJobOptions: { attempts: 6, backoff: { type: 'exponential', delay: 60_000 }, removeOnComplete: { count: 100 } },
    });
    const worker = await HelperProcess.start('naive-dispatcher.ts', {}, true);
    try {
      const secret = `whsec_${randomBytes(32).toString('base64')}`;
      await worker.call('start', { redisUrl, prefix: naivePrefix, concurrency: CONCURRENCY, caFile: pki.caFile, secret });
      const jobsOf = (count: number) => Array.from({ length: count }, () => ({ name: 'callback', data: { url, body } }));
      await receiver.reset();
      await queue.addBulk(jobsOf(Math.max(1, WARMUP)));
      await waitUntil(async () => (await receiver.uniqueCount()) >= Math.max(1, WARMUP), 60_000, 'naive dispatcher warm-up callbacks');
      const burst = jobsOf(N);
      await receiver.reset();
      const cpuBefore = processCpuMs(worker.child.pid);
      const t0 = Date.now();
      await queue.addBulk(burst);
      await waitUntil(async () => (await receiver.uniqueCount()) >= N, 180_000, `${N} naive dispatcher callbacks`, 50);
      const cpuAfter = processCpuMs(worker.child.pid);
      const arrivals = await receiver.arrivals();
      const lastArrival = Math.max(...arrivals.map((a) => a.receivedMs));
      const cpu = cpuBefore !== undefined && cpuAfter !== undefined ? cpuAfter - cpuBefore : undefined;
      return await runOf(N, t0, lastArrival, arrivals.filter((a) => a.status !== 204).length, await receiver.stats(), cpu);
    } finally {
      await worker.call('stop').catch(() => undefined);
      await worker.stop();
      await queue.close();
      await dropPrefix(redis, naivePrefix);
    }
  }

  try {
    // Dispatcher warm-up, which also gives the peers the exact body and headers it sends.
    await receiver.reset();
    await events.addBulk(await finishedJobs(Math.max(1, WARMUP)));
    await waitUntil(async () => (await receiver.uniqueCount()) >= Math.max(1, WARMUP), 60_000, 'dispatcher warm-up callbacks');
    const sample = await receiver.sample();
    if (!sample) throw new Error('no callback body captured');
    const headers = Object.fromEntries(BODY_HEADERS.filter((h) => sample.headers[h] !== undefined).map((h) => [h, sample.headers[h]]));
    const body = Buffer.from(sample.body, 'utf8');

    // Dispatcher: every record first, then all events in one go, so seeding does not pace delivery.
    const burst = await finishedJobs(N);
    await receiver.reset();
    const [service] = stack.services;
    const cpuBefore = service!.cpuMs();
    const t0 = Date.now();
    await events.addBulk(burst);
    await waitUntil(
      async () => {
        stack.assertAlive();
        return (await receiver.uniqueCount()) >= N;
      },
      180_000,
      `${N} dispatcher callbacks`,
      50,
    );
    // Read before anything else: the dispatcher is idle now, and the attempts' records are written
    // by the time their callbacks' last bytes are in (give or take the last few).
    const cpuAfter = service!.cpuMs();
    const arrivals = await receiver.arrivals();
    const lastArrival = Math.max(...arrivals.map((a) => a.receivedMs));
    const cpu = cpuBefore !== undefined && cpuAfter !== undefined ? cpuAfter - cpuBefore : undefined;
    const dispatcher = await runOf(N, t0, lastArrival, arrivals.filter((a) => a.status !== 204).length, await receiver.stats(), cpu);
    await stack.stop();

    const naive = await naiveRun(body.toString('utf8'));

    // The peers: this process, got, the same receiver, body and headers.
    const { got } = await import('got');
    const secureContext = createSecureContext({ ca: [...rootCertificates, pki.caPem] });
    const loop = async (keepAlive: boolean): Promise<ThroughputRun> => {
      const agent = new HttpsAgent(keepAlive ? { keepAlive: true, maxSockets: IN_FLIGHT, secureContext } : { keepAlive: false, secureContext });
      const client = got.extend({
        followRedirect: false,
        throwHttpErrors: false,
        retry: { limit: 0 },
        decompress: false,
        http2: false,
        timeout: { request: 15_000 },
        agent: { https: agent },
      });
      const run = async (count: number) => {
        let issued = 0;
        let failures = 0;
        const worker = async () => {
          while (issued < count) {
            issued++;
            try {
              const res = await client.post(url, { body, headers });
              if (res.statusCode !== 204) failures++;
            } catch {
              failures++;
            }
          }
        };
        await Promise.all(Array.from({ length: Math.min(IN_FLIGHT, count) }, worker));
        return failures;
      };
      try {
        await run(Math.max(1, WARMUP));
        await receiver.reset();
        const cpuBefore = process.cpuUsage();
        const start = Date.now();
        const failures = await run(N);
        const end = Date.now();
        const { user, system } = process.cpuUsage(cpuBefore);
        return await runOf(N, start, end, failures, await receiver.stats(), (user + system) / 1000);
      } finally {
        agent.destroy();
      }
    };
    const keepAlive = await loop(true);
    const freshTls = await loop(false);
    return {
      callbacks: N,
      dispatcherConcurrency: CONCURRENCY,
      destinationMaxInFlight,
      inFlight: IN_FLIGHT,
      warmup: WARMUP,
      bodyBytes: body.length,
      dispatcher,
      naive,
      keepAlive,
      freshTls,
    };
  } finally {
    await stack.stop();
    await events.close();
    await dropPrefix(redis, prefix);
  }
}
