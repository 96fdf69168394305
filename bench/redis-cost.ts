/**
 * Redis's cost per job: main-thread CPU and commands that Redis spends on one asynchronous image
 * job from acceptance to its delivered callback (gateway, generator and dispatcher from dist/),
 * beside its peer, BullMQ alone moving a job through two queue hops (add → worker → add → worker),
 * each measured on the same Redis in the same run. Redis is what this service scales on: workers
 * scale out, every job's records and queue hops land on Redis primaries.
 *
 * How: a Redis of the phase's own (single mode; with BENCH_REDIS=cluster, the run's cluster, every
 * node read). For each side: a warm-up, then CONFIG RESETSTAT and an idle spell (the side's
 * processes running, nothing submitted) for the idle rate of CPU and commands; then RESETSTAT again,
 * N jobs, and the totals once the last one has ended, less the idle rate over the same time.
 * `INFO cpu` (used_cpu_user_main_thread + used_cpu_sys_main_thread) and `INFO commandstats`.
 *
 * Under load, our generator uses its openai-compatible backend with a model server on loopback that
 * answers every request at once with the same 256x256 PNG, and runs 50 jobs at once as the peer's
 * workers do. In production the model runs elsewhere; here the built-in renderer draws on the same
 * two cores as Redis and slows Redis's own thread several times over (generation's Redis CPU was
 * 570-750 µs per job beside it, 160-200 µs with the model on loopback, at about the same rate, and
 * pinning Redis to a core of its own did not help), so the figure would measure the renderer.
 *
 * The steady flow shows the other thing the peer's burst leaves out: a Redis that is mostly idle
 * spends several times more CPU on each command it wakes up for (the same finish script, measured
 * on its own: 40 µs of Redis CPU per call back to back, 184 µs one every 10 ms).
 */
import { createHash } from 'node:crypto';
import { existsSync, readdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { Queue, Worker } from 'bullmq';
import { bullPrefix, LuaScript } from '@media/common';
import type { QueueName } from '@media/queues';
import { Redis } from 'ioredis';
import sharp from 'sharp';
import { OpenAiTestServer } from '../services/generator/src/backends/test-support/openai-server';
import type { TestRedisCluster } from '../test/support/redis-cluster';
import {
  BenchStack,
  createWorkspace,
  envNumber,
  newPrefix,
  privateRedis,
  privateRedisEnv,
  serviceEnv,
  sleep,
  submitImage,
  waitUntil,
  type BenchContext,
} from './support';

/** Workspaces the jobs of our side are spread over (BENCH_REDIS_COST_WORKSPACES). */
const WORKSPACES = envNumber('BENCH_REDIS_COST_WORKSPACES', 32);

/** What Redis spent, per job, on one side. */
export interface RedisCostSide {
  jobs: number;
  seconds: number;
  /** Main-thread CPU per job, idle cost subtracted (µs). */
  cpuMicrosPerJob: number;
  /** The part of it spent in the kernel (system time): reading and writing sockets, waking up. */
  sysMicrosPerJob: number;
  commandsPerJob: number;
  /** The busiest commands, per job. */
  topCommands: { command: string; perJob: number; microsPerJob: number }[];
  /** With a cluster: CPU per job on each node (µs), by port. */
  perNode?: { port: number; cpuMicrosPerJob: number; share: number }[];
  idleCpuMicrosPerSecond: number;
  /**
   * Under load, the run's stages one after the other (acceptance by the gateway, generation, then
   * delivery), each with its own cost per job: which service's steps the Redis time goes to.
   */
  stages?: { name: string; seconds: number; cpuMicrosPerJob: number; commandsPerJob: number }[];
  /** With BENCH_REDIS_COST_SCRIPTS=1: every command and script by the time Redis spent in it, per job. */
  profile?: { name: string; callsPerJob: number; microsPerJob: number }[];
}

export interface RedisCostResult {
  /** Our jobs as clients send them: a steady flow, each job crossing idle workers. */
  ours: RedisCostSide;
  /**
   * The same jobs under load, as the peer runs them: all accepted while the workers are held, then
   * each queue drained by busy workers, which is where Redis's cost per job sets the ceiling.
   */
  oursLoaded: RedisCostSide;
  peer: RedisCostSide;
  /** The same peer with jobs added at the rate our run went at (context, not the goal's peer). */
  pacedPeer: RedisCostSide;
  mode: 'single' | 'cluster';
}

interface Reading {
  cpuMicros: number[];
  sysMicros: number[];
  commands: Map<string, { calls: number; micros: number }>;
  atMs: number;
}

/** The Redis nodes measured: one private redis-server, or every node of the run's cluster. */
class MeasuredRedis {
  private constructor(
    readonly ports: number[],
    readonly env: Record<string, string>,
    readonly client: () => Redis,
    /** Stops what the phase started (its own redis-server); nothing for the run's cluster. */
    readonly stop: () => Promise<void> = async () => undefined,
  ) {}

  static async single(): Promise<MeasuredRedis> {
    const { url, port, stop } = await privateRedis('redis-cost');
    return new MeasuredRedis([port], privateRedisEnv(url), () => new Redis(url, { maxRetriesPerRequest: null }), stop);
  }

  static cluster(cluster: TestRedisCluster): MeasuredRedis {
    return new MeasuredRedis(cluster.ports, { REDIS_CLUSTER_NODES: cluster.nodes }, () => cluster.client());
  }

  private async eachNode<T>(run: (node: Redis) => Promise<T>): Promise<T[]> {
    return Promise.all(
      this.ports.map(async (port) => {
        const node = new Redis(port, '127.0.0.1', { maxRetriesPerRequest: 1 });
        try {
          return await run(node);
        } finally {
          node.disconnect();
        }
      }),
    );
  }

  async reset(): Promise<void> {
    await this.eachNode((node) => node.config('RESETSTAT'));
  }

  /**
   * Every command into the slow log (threshold 0), so that each script's time can be told apart:
   * commandstats counts all of them as `evalsha`. It slows Redis itself, so the phase's CPU figure
   * is not comparable when this is on.
   */
  async startProfile(): Promise<void> {
    await this.eachNode(async (node) => {
      await node.config('SET', 'slowlog-max-len', '5000000');
      await node.config('SET', 'slowlog-log-slower-than', '0');
      await node.slowlog('RESET');
    });
  }

  async readProfile(jobs: number): Promise<{ name: string; callsPerJob: number; microsPerJob: number }[]> {
    const names = scriptNames();
    const totals = new Map<string, { calls: number; micros: number }>();
    await this.eachNode(async (node) => {
      const entries = (await node.slowlog('GET', '-1')) as [number, number, number, string[]][];
      await node.config('SET', 'slowlog-log-slower-than', '10000');
      await node.slowlog('RESET');
      for (const [, , micros, args] of entries) {
        const command = (args[0] ?? '').toLowerCase();
        const script =
          command === 'evalsha'
            ? (names.get(args[1] ?? '') ?? `evalsha ${args[1]?.slice(0, 8)}`)
            : command === 'eval'
              ? `eval (text) ${(args[1] ?? '').replace(/\s+/g, ' ').slice(0, 60)}`
              : command;
        // BullMQ's scripts by queue (its first key names it), so that each hop's share shows.
        const queue = script.startsWith('bullmq ') ? /\{queue:([a-z-]+)\}/.exec(args[3] ?? '')?.[1] : undefined;
        const name = queue ? `${script} (${queue})` : script;
        const seen = totals.get(name) ?? { calls: 0, micros: 0 };
        totals.set(name, { calls: seen.calls + 1, micros: seen.micros + micros });
      }
    });
    return [...totals]
      .map(([name, t]) => ({ name, callsPerJob: t.calls / jobs, microsPerJob: t.micros / jobs }))
      .sort((a, b) => b.microsPerJob - a.microsPerJob);
  }

  async read(): Promise<Reading> {
    const infos = await this.eachNode(async (node) => ({ cpu: await node.info('cpu'), stats: await node.info('commandstats') }));
    const commands = new Map<string, { calls: number; micros: number }>();
    const cpu = infos.map(({ cpu, stats }) => {
      for (const [, name, calls, micros] of stats.matchAll(/^cmdstat_([^:]+):calls=(\d+),usec=(\d+)/gm)) {
        const seen = commands.get(name) ?? { calls: 0, micros: 0 };
        commands.set(name, { calls: seen.calls + Number(calls), micros: seen.micros + Number(micros) });
      }
      const field = (name: string) => Number(new RegExp(`^${name}:([\\d.]+)`, 'm').exec(cpu)?.[1] ?? Number.NaN);
      return { all: (field('used_cpu_user_main_thread') + field('used_cpu_sys_main_thread')) * 1e6, sys: field('used_cpu_sys_main_thread') * 1e6 };
    });
    return { cpuMicros: cpu.map((c) => c.all), sysMicros: cpu.map((c) => c.sys), commands, atMs: Date.now() };
  }
}

/** Script SHA-1 → a readable name: the project's `.lua` files (as LuaScript loads them) and BullMQ's. */
function scriptNames(): Map<string, string> {
  const names = new Map<string, string>();
  const root = join(__dirname, '..');
  for (const pkg of readdirSync(join(root, 'libs'))) {
    const dir = join(root, 'libs', pkg, 'lua');
    if (!existsSync(dir)) continue;
    for (const file of readdirSync(dir).filter((f) => f.endsWith('.lua'))) {
      const name = file.slice(0, -'.lua'.length);
      names.set(LuaScript.load(dir, name).sha, name);
    }
  }
  // BullMQ's scripts are modules exporting { name, content }; its Scripts class loads each by content.
  const loadModule = createRequire(__filename);
  const bullDir = join(dirname(loadModule.resolve('bullmq/package.json')), 'dist', 'cjs', 'scripts');
  for (const file of readdirSync(bullDir).filter((f) => /^[A-Za-z]+-\d+\.js$/.test(f))) {
    const script = Object.values(loadModule(join(bullDir, file)) as Record<string, { name?: string; content?: string }>)[0];
    if (script?.content) names.set(createHash('sha1').update(script.content).digest('hex'), `bullmq ${script.name}`);
  }
  return names;
}

type IdleSpell = { before: Reading; after: Reading };

/** What the idle stack spends per second, of what `pick` reads from a reading. */
function idleRate(idle: IdleSpell, pick: (r: Reading) => number): number {
  return (pick(idle.after) - pick(idle.before)) / ((idle.after.atMs - idle.before.atMs) / 1000);
}

/** What was spent over `seconds` beyond the idle stack's rate for as long, per job. */
function beyondIdle(spent: number, idlePerSecond: number, seconds: number, jobs: number): number {
  return Math.max(0, spent - idlePerSecond * seconds) / jobs;
}

const sum = (values: number[]) => values.reduce((a, b) => a + b, 0);
const allCalls = (r: Reading) => sum([...r.commands.values()].map((c) => c.calls));
const callsOf = (command: string) => (r: Reading) => r.commands.get(command)?.calls ?? 0;

/** What Redis did between two readings; the first after a RESETSTAT, so commandstats are since then. */
function cost(idle: IdleSpell, before: Reading, after: Reading, jobs: number, ports: number[]): RedisCostSide {
  const seconds = (after.atMs - before.atMs) / 1000;
  const idleCpuPerNode = after.cpuMicros.map((_, i) => idleRate(idle, (r) => r.cpuMicros[i]!));
  const cpuPerNode = after.cpuMicros.map((c, i) => beyondIdle(c - before.cpuMicros[i]!, idleCpuPerNode[i]!, seconds, jobs));
  const sys = sum(
    after.sysMicros.map((c, i) =>
      beyondIdle(
        c - before.sysMicros[i]!,
        idleRate(idle, (r) => r.sysMicros[i]!),
        seconds,
        jobs,
      ),
    ),
  );
  const rows = [...after.commands].map(([command, c]) => ({
    command,
    perJob: beyondIdle(c.calls, idleRate(idle, callsOf(command)), seconds, jobs),
    microsPerJob: c.micros / jobs,
  }));
  const cpu = sum(cpuPerNode);
  return {
    jobs,
    seconds,
    cpuMicrosPerJob: cpu,
    sysMicrosPerJob: sys,
    commandsPerJob: sum(rows.map((r) => r.perJob)),
    topCommands: rows.sort((a, b) => b.perJob - a.perJob).slice(0, 10),
    perNode: ports.length > 1 ? ports.map((port, i) => ({ port, cpuMicrosPerJob: cpuPerNode[i]!, share: cpu > 0 ? cpuPerNode[i]! / cpu : 0 })) : undefined,
    idleCpuMicrosPerSecond: sum(idleCpuPerNode),
  };
}

/** What Redis did between two readings of one run, less the idle cost over the same time. */
function stage(idle: IdleSpell, name: string, from: Reading, to: Reading, jobs: number) {
  const seconds = (to.atMs - from.atMs) / 1000;
  const cpu = (r: Reading) => sum(r.cpuMicros);
  return {
    name,
    seconds,
    cpuMicrosPerJob: beyondIdle(cpu(to) - cpu(from), idleRate(idle, cpu), seconds, jobs),
    commandsPerJob: beyondIdle(allCalls(to) - allCalls(from), idleRate(idle, allCalls), seconds, jobs),
  };
}

/** Resets the statistics, lets `idleMs` pass with nothing submitted, and reads the idle cost. */
async function idleSpell(measured: MeasuredRedis, idleMs: number): Promise<IdleSpell> {
  await measured.reset();
  const before = await measured.read();
  await sleep(idleMs);
  return { before, after: await measured.read() };
}

/** One side's measured run of `jobs` jobs, after its idle spell; profiled with BENCH_REDIS_COST_SCRIPTS=1. */
async function measure(
  measured: MeasuredRedis,
  idle: IdleSpell,
  jobs: number,
  run: (mark: (stage: string) => Promise<void>) => Promise<void>,
): Promise<RedisCostSide> {
  await measured.reset();
  const profiling = process.env.BENCH_REDIS_COST_SCRIPTS === '1';
  if (profiling) await measured.startProfile();
  const before = await measured.read();
  // A stage ends where the run marks it, and begins where the one before it ended.
  const marks: { name: string; at: Reading }[] = [];
  await run(async (name) => void marks.push({ name, at: await measured.read() }));
  const side = cost(idle, before, await measured.read(), jobs, measured.ports);
  if (marks.length > 0) side.stages = marks.map((m, i) => stage(idle, m.name, i === 0 ? before : marks[i - 1]!.at, m.at, jobs));
  if (profiling) side.profile = await measured.readProfile(jobs);
  return side;
}

/**
 * Our side. `loaded`: the generation and job-events queues are paused while the jobs are accepted,
 * then resumed one after the other, so that each hop is drained by workers that always have a next
 * job, as the peer's burst is; otherwise jobs arrive as a steady flow and each crosses idle workers.
 */
async function ourSide(ctx: BenchContext, measured: MeasuredRedis, jobs: number, idleMs: number, loaded: boolean): Promise<RedisCostSide> {
  const redis = measured.client();
  const prefix = newPrefix('redis-cost');
  const model = loaded ? await instantModelServer() : undefined;
  const stack = await BenchStack.start(
    prefix,
    ['api-gateway', 'generator', 'webhook-dispatcher'],
    await serviceEnv(prefix, ctx.pki, {
      ...measured.env,
      RATE_LIMIT_CREATE_PER_MINUTE: '100000000',
      MAX_WAITING_JOBS_PER_WORKSPACE: '100000000',
      ...(model ? { ...model.env, GENERATOR_CONCURRENCY: '50' } : {}),
    }),
  );
  const queues: Queue[] = [];
  try {
    // Many workspaces, taken in turn, as a multi-tenant deployment has them: on a cluster their
    // store shards spread over the primaries (one workspace would load one shard's primary).
    const apiKeys = await Promise.all(Array.from({ length: WORKSPACES }, (_, i) => createWorkspace(redis, prefix, `bench${i}`).then((ws) => ws.apiKey)));
    // Each workspace calls back its own receiver (an origin of its own), as tenants do: one receiver
    // for all would have most of the burst wait for that destination's slots.
    const origins = await ctx.receiver.origins(WORKSPACES);
    const bodies = origins.map((origin) =>
      JSON.stringify({ model: 'pixel-1', prompt: 'a lighthouse at dusk', size: '256x256', callback_url: `${origin}/hook` }),
    );
    const queue = (name: QueueName) => new Queue(name, { connection: redis, prefix: bullPrefix(prefix, name) });
    const generation = queue('generation');
    const events = queue('job-events');
    queues.push(generation, events);
    const run = async (count: number, hold = false, mark: (stage: string) => Promise<void> = async () => undefined) => {
      await ctx.receiver.reset();
      if (hold) await Promise.all([generation.pause(), events.pause()]);
      // 16 submissions in flight: a steady flow, as clients make it, without a backlog to drain.
      let next = 0;
      await Promise.all(
        Array.from({ length: 16 }, async () => {
          while (next < count) {
            next++;
            await submitImage(stack.baseUrl, apiKeys[next % WORKSPACES]!, bodies[next % WORKSPACES]!);
          }
        }),
      );
      if (hold) {
        await mark('acceptance (gateway)');
        await generation.resume();
        await waitUntil(
          async () => {
            stack.assertAlive();
            const waiting = await events.getJobCountByTypes('wait', 'prioritized');
            return waiting >= count;
          },
          120_000,
          `${count} job-finished events held`,
          // BullMQ's getCounts is a script: looked at seldom, so that it barely shows in the figure.
          250,
        );
        await mark('generation (generator)');
        await events.resume();
      }
      await waitUntil(
        async () => {
          stack.assertAlive();
          return (await ctx.receiver.uniqueCount()) >= count;
        },
        120_000,
        `${count} callbacks`,
        20,
      );
      // A callback arrives before its attempt is recorded and its event leaves the queue: the job's
      // work ends when job-events has nothing left in hand.
      await waitUntil(async () => (await events.getJobCountByTypes('active', 'wait', 'prioritized', 'delayed')) === 0, 60_000, 'job-events emptied', 100);
      if (hold) await mark('delivery (dispatcher)');
    };
    await run(20);
    const idle = await idleSpell(measured, idleMs);
    return await measure(measured, idle, jobs, (mark) => run(jobs, loaded, mark));
  } finally {
    await Promise.all(queues.map((q) => q.close()));
    await stack.stop();
    await model?.stop();
    redis.disconnect();
  }
}

/** A model server that answers every image request at once with the same 256x256 PNG. */
async function instantModelServer(): Promise<OpenAiTestServer> {
  const png = await sharp({ create: { width: 256, height: 256, channels: 3, background: { r: 40, g: 90, b: 160 } } })
    .png()
    .toBuffer();
  const server = await OpenAiTestServer.start();
  server.script('images.generations', () => ({ status: 200, json: { created: Math.floor(Date.now() / 1000), data: [{ b64_json: png.toString('base64') }] } }));
  return server;
}

/**
 * BullMQ alone: a job added to one queue, whose worker adds it to a second queue, whose worker
 * completes it. Completed jobs kept as the services keep them (the last 100).
 */
async function peerSide(measured: MeasuredRedis, jobs: number, idleMs: number, jobsPerSecond?: number): Promise<RedisCostSide> {
  // One hash tag, so that both queues' keys are valid on a cluster too.
  const prefix = `{${newPrefix('redis-cost-peer')}}`;
  const connection = measured.client();
  const options = { connection, prefix };
  const first = new Queue('first', options);
  const second = new Queue('second', options);
  const jobOptions = { removeOnComplete: { count: 100 }, removeOnFail: { count: 100 } };
  let done = 0;
  const workers = [
    new Worker('first', async (job) => void (await second.add('hop', job.data, jobOptions)), { ...options, concurrency: 50 }),
    new Worker('second', async () => void done++, { ...options, concurrency: 50 }),
  ];
  try {
    await Promise.all(workers.map((w) => w.waitUntilReady()));
    const run = async (count: number) => {
      done = 0;
      // As many in flight as the services' run: the same flow of jobs.
      let next = 0;
      const startedMs = Date.now();
      await Promise.all(
        Array.from({ length: 16 }, async () => {
          while (next < count) {
            const n = next++;
            // Paced: job n is added no sooner than n / rate seconds after the start.
            if (jobsPerSecond) await sleep(startedMs + (n * 1000) / jobsPerSecond - Date.now());
            await first.add('job', { n, prompt: 'a lighthouse at dusk' }, jobOptions);
          }
        }),
      );
      await waitUntil(() => done >= count, 120_000, `${count} jobs through two hops`, 20);
      // A job's handler ends before BullMQ moves it to completed: the work ends when nothing is active.
      await waitUntil(async () => (await first.getActiveCount()) + (await second.getActiveCount()) === 0, 60_000, 'both queues idle', 20);
    };
    await run(20);
    const idle = await idleSpell(measured, idleMs);
    return await measure(measured, idle, jobs, () => run(jobs));
  } finally {
    await Promise.all(workers.map((w) => w.close()));
    await first.obliterate({ force: true }).catch(() => undefined);
    await second.obliterate({ force: true }).catch(() => undefined);
    await first.close();
    await second.close();
    connection.disconnect();
  }
}

export async function benchRedisCost(ctx: BenchContext, cluster?: TestRedisCluster): Promise<RedisCostResult> {
  const JOBS = envNumber('BENCH_REDIS_COST_JOBS', 500);
  // A burst of 500 is over in a tenth of a second for the peer: too short for Redis's CPU counters
  // (kept at the scheduler's tick) to tell apart from noise; both bursts are this many jobs.
  const BURST = envNumber('BENCH_REDIS_COST_BURST_JOBS', 2000);
  const IDLE_MS = envNumber('BENCH_REDIS_COST_IDLE_SECONDS', 5) * 1000;
  const measured = cluster ? MeasuredRedis.cluster(cluster) : await MeasuredRedis.single();
  try {
    const peer = await peerSide(measured, BURST, IDLE_MS);
    const ours = await ourSide(ctx, measured, JOBS, IDLE_MS, false);
    // BullMQ costs more per job when jobs trickle in than in a burst (each one wakes an idle worker,
    // which fetches it alone): the same peer at our run's rate says how much of the gap that is.
    const pacedPeer = await peerSide(measured, JOBS, IDLE_MS, JOBS / ours.seconds);
    const oursLoaded = await ourSide(ctx, measured, BURST, IDLE_MS, true);
    return { ours, oursLoaded, peer, pacedPeer, mode: cluster ? 'cluster' : 'single' };
  } finally {
    await measured.stop();
  }
}
