/**
 * `npm run bench`: each figure beside its peer, measured in the same run on the same machine, with
 * the ratios and the machine stated. Services run from dist/ as separate processes; the HTTPS
 * receiver (bench/receiver.ts) and the bare Express peer (bench/bare-express.ts) are processes of
 * their own; all traffic stays on 127.0.0.1. Every phase has its own Redis key prefix
 * (`bench-<run>-<phase>`), deleted when the phase ends, and the whole run stops by itself at a
 * deadline, cleaning up on the way out.
 *
 * Phases, in order (BENCH_ONLY=redis-cost,dispatcher,gateway,latency,memory,generation,isolation,attempt-memory picks some):
 *   redis-cost  bench/redis-cost.ts  Redis CPU and commands per job, end to end, vs BullMQ alone (two hops)
 *   dispatcher  bench/dispatcher.ts  callbacks/s of one dispatcher vs a naive BullMQ worker and plain got POST loops
 *   gateway     bench/gateway.ts     async image acceptance of one gateway vs bare Express and a naive gateway (autocannon)
 *   latency     bench/latency.ts     job end → receiver's first byte, whole stack, paced jobs
 *   memory      bench/memory.ts      Redis memory per pending callback, by key kind
 *   generation  bench/generation.ts  sync image and video generation times (no peer)
 *   isolation   bench/isolation.ts   one workspace's latency while another has a backlog, vs idle
 *   attempt-memory bench/attempt-memory.ts  memory per callback attempt in flight (sizes DISPATCHER_CONCURRENCY)
 *
 * Timings are reports, not tests: the exit code is non-zero only when a phase could not run or a
 * figure is invalid (e.g. the gateway answered anything but 202 under load).
 *
 * Knobs (env): BENCH_DEADLINE_S=600, BENCH_CALLBACKS=2000, BENCH_CALLBACK_WARMUP=100,
 * DISPATCHER_CONCURRENCY=100 in the dispatcher phase (ours and the naive worker; 50 in the latency phase), BENCH_IN_FLIGHT=<the same>, BENCH_AC_CONNECTIONS=50, BENCH_AC_PIPELINING=1,
 * BENCH_AC_SECONDS=10, BENCH_AC_WARMUP_SECONDS=2, BENCH_LATENCY_RATES=20,10, BENCH_LATENCY_SECONDS=15,
 * GENERATOR_CONCURRENCY=2, BENCH_MEMORY_JOBS=1000, BENCH_MEMORY_WARMUP=20, BENCH_GENERATION_ROUNDS=5,
 * BENCH_ISOLATION_SAMPLES=20, BENCH_ISOLATION_BACKLOG=600,
 * BENCH_REDIS_COST_SCRIPTS=1 (the redis-cost phase's time per script, from the slow log), BENCH_OUT=bench/results/latest.json, REDIS_URL, BENCH_CPU_PROF=<dir> (each service writes a V8 CPU
 * profile there when it stops), BENCH_REDIS=cluster (every phase on a three-primary Redis Cluster that
 * the run starts on loopback, instead of REDIS_URL).
 */
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { makeTestPki, type TestPki } from '../test/dispatcher/support/pki';
import { TestRedisCluster } from '../test/support/redis-cluster';
import { benchDispatcher, type DispatcherResult, type ThroughputRun } from './dispatcher';
import { benchGateway, type GatewayResult, type LoadRun } from './gateway';
import { benchGeneration, type GenerationResult } from './generation';
import { benchIsolation, type IsolationResult } from './isolation';
import { benchAttemptMemory, type AttemptMemoryResult } from './attempt-memory';
import { benchLatency, type LatencyResult } from './latency';
import { benchRedisCost, type RedisCostResult } from './redis-cost';
import { benchMemory, type MemoryResult } from './memory';
import {
  benchRedis,
  cleanupAll,
  currentLoad,
  envNumber,
  machineInfo,
  printTable,
  ReceiverClient,
  remainingMs,
  ROOT,
  RUN_ID,
  setDeadline,
  useRedisCluster,
  type BenchContext,
  type MachineInfo,
} from './support';

const PHASES = ['redis-cost', 'dispatcher', 'gateway', 'latency', 'memory', 'generation', 'isolation', 'attempt-memory'] as const;
type Phase = (typeof PHASES)[number];

interface Results {
  'redis-cost'?: RedisCostResult;
  dispatcher?: DispatcherResult;
  gateway?: GatewayResult;
  latency?: LatencyResult;
  memory?: MemoryResult;
  generation?: GenerationResult;
  isolation?: IsolationResult;
  'attempt-memory'?: AttemptMemoryResult;
}

/** One line of the final table. */
interface Row {
  figure: string;
  ours: string;
  peer: string;
  ratio: string;
  goal: string;
  met: string;
}

const GOALS = {
  /** Redis CPU per job, at most this many times BullMQ's own two-hop floor. */
  redisCostVsBullmq: 2,
  dispatcherVsKeepAlive: 0.9,
  gatewayVsExpress: 0.75,
  latencyP50Ms: 5,
  latencyP99Ms: 10,
  memoryBytes: 1.5 * 1024,
  /** Another workspace's backlog may cost a small job this many of the backlog's render times, at most (p50, p99). */
  isolationRendersP50: 3,
  isolationRendersP99: 5,
};

const fmt = (n: number, digits = 0) => (Number.isFinite(n) ? n.toFixed(digits) : 'n/a');
const yesNo = (ok: boolean) => (ok ? 'yes' : 'NO');

function tableRows(r: Results): Row[] {
  const rows: Row[] = [];
  /** A process's CPU per request beside its peer's (µs), when /proc gave both. */
  const cpuRow = (figure: string, ours: number | undefined, peerName: string, peer: number | undefined) => {
    if (ours === undefined || peer === undefined) return;
    rows.push({ figure, ours: `${fmt(ours)} µs`, peer: `${peerName}: ${fmt(peer)} µs`, ratio: fmt(peer / ours, 2), goal: '(info)', met: '' });
  };
  if (r['redis-cost']) {
    const { ours, oursLoaded, peer, pacedPeer, mode } = r['redis-cost'];
    const where = mode === 'cluster' ? ' (cluster, all nodes)' : '';
    // The goal's figure: ours in the peer's conditions, each hop drained by busy workers.
    const ratio = oursLoaded.cpuMicrosPerJob / peer.cpuMicrosPerJob;
    rows.push({
      figure: `Redis CPU per async job, end to end, under load${where}`,
      ours: `${fmt(oursLoaded.cpuMicrosPerJob)} µs, ${fmt(oursLoaded.commandsPerJob)} cmds`,
      peer: `BullMQ 2 hops: ${fmt(peer.cpuMicrosPerJob)} µs, ${fmt(peer.commandsPerJob)} cmds`,
      ratio: fmt(ratio, 2),
      goal: `≤ ${GOALS.redisCostVsBullmq}`,
      met: yesNo(ratio <= GOALS.redisCostVsBullmq),
    });
    rows.push({
      figure: `  same, a steady flow of ${fmt(ours.jobs / ours.seconds)} jobs/s`,
      ours: `${fmt(ours.cpuMicrosPerJob)} µs, ${fmt(ours.commandsPerJob)} cmds`,
      peer: `BullMQ paced: ${fmt(pacedPeer.cpuMicrosPerJob)} µs, ${fmt(pacedPeer.commandsPerJob)} cmds`,
      ratio: fmt(ours.cpuMicrosPerJob / pacedPeer.cpuMicrosPerJob, 2),
      goal: '(info)',
      met: '',
    });
    if (oursLoaded.perNode) {
      const busiest = Math.max(...oursLoaded.perNode.map((n) => n.share));
      rows.push({
        figure: '  busiest node, share of Redis CPU',
        ours: `${fmt(busiest * 100)} %`,
        peer: '–',
        ratio: '–',
        goal: '≤ 50 %',
        met: yesNo(busiest <= 0.5),
      });
    }
  }
  if (r.dispatcher) {
    const d = r.dispatcher;
    const ratio = d.dispatcher.perSecond / d.keepAlive.perSecond;
    rows.push({
      figure: `Callbacks/s, 1 dispatcher, ${d.callbacks} queued`,
      ours: `${fmt(d.dispatcher.perSecond)}/s`,
      peer: `got loop, keep-alive: ${fmt(d.keepAlive.perSecond)}/s`,
      ratio: fmt(ratio, 2),
      goal: `≥ ${GOALS.dispatcherVsKeepAlive}`,
      met: yesNo(ratio >= GOALS.dispatcherVsKeepAlive),
    });
    rows.push({
      figure: '  same, vs new TLS connection per request',
      ours: `${fmt(d.dispatcher.perSecond)}/s`,
      peer: `got loop, fresh TLS: ${fmt(d.freshTls.perSecond)}/s`,
      ratio: fmt(d.dispatcher.perSecond / d.freshTls.perSecond, 2),
      goal: '(info)',
      met: '',
    });
    if (d.naive) {
      rows.push({
        figure: '  same, vs a naive BullMQ worker (sign, got POST)',
        ours: `${fmt(d.dispatcher.perSecond)}/s`,
        peer: `naive dispatcher: ${fmt(d.naive.perSecond)}/s`,
        ratio: fmt(d.dispatcher.perSecond / d.naive.perSecond, 2),
        goal: '(info)',
        met: '',
      });
    }
    // The sender's own CPU per callback: what the throughput ratio comes down to when the sender's
    // core is the bottleneck, and steadier than it when the machine is shared.
    cpuRow('  same, CPU per callback of the sending process', d.dispatcher.cpuMicrosPerRequest, 'got loop, keep-alive', d.keepAlive.cpuMicrosPerRequest);
    cpuRow('  same, CPU per callback, vs the naive worker', d.dispatcher.cpuMicrosPerRequest, 'naive dispatcher', d.naive?.cpuMicrosPerRequest);
  }
  if (r.gateway) {
    const g = r.gateway;
    const ratio = g.gateway.requestsPerSecond / g.bareExpress.requestsPerSecond;
    const invalid = g.invalid.length > 0;
    rows.push({
      figure: 'Async image acceptance (202), 1 gateway',
      ours: `${fmt(g.gateway.requestsPerSecond)} req/s`,
      peer: `bare Express: ${fmt(g.bareExpress.requestsPerSecond)} req/s`,
      ratio: fmt(ratio, 2),
      goal: `≥ ${GOALS.gatewayVsExpress}`,
      met: invalid ? 'INVALID' : yesNo(ratio >= GOALS.gatewayVsExpress),
    });
    if (g.naiveGateway) {
      rows.push({
        figure: '  same, vs a naive gateway (key HGET, joi, HSET, Queue.add)',
        ours: `${fmt(g.gateway.requestsPerSecond)} req/s`,
        peer: `naive gateway: ${fmt(g.naiveGateway.requestsPerSecond)} req/s`,
        ratio: fmt(g.gateway.requestsPerSecond / g.naiveGateway.requestsPerSecond, 2),
        goal: '(info)',
        met: invalid ? 'INVALID' : '',
      });
    }
    if (g.traced) {
      rows.push({
        figure: '  same, exporting a trace per request (OTLP)',
        ours: `${fmt(g.traced.run.requestsPerSecond)} req/s`,
        peer: `gateway, tracing off: ${fmt(g.gateway.requestsPerSecond)} req/s`,
        ratio: fmt(g.traced.run.requestsPerSecond / g.gateway.requestsPerSecond, 2),
        goal: '(info)',
        met: '',
      });
    }
    // The serving process's own CPU per answer: autocannon loads each until its core is busy, so
    // this is what the throughput ratio comes down to.
    cpuRow('  same, CPU per request of the serving process', g.gateway.cpuMicrosPerRequest, 'bare Express', g.bareExpress.cpuMicrosPerRequest);
    cpuRow('  same, CPU per request, vs the naive gateway', g.gateway.cpuMicrosPerRequest, 'naive gateway', g.naiveGateway?.cpuMicrosPerRequest);
  }
  if (r.latency) {
    for (const run of r.latency.runs) {
      const label = `Job end → first byte, whole stack, ${run.ratePerSecond} jobs/s`;
      const complete = run.delivered === run.jobs;
      rows.push({
        figure: `${label}, p50`,
        ours: `${fmt(run.p50Ms)} ms`,
        peer: '–',
        ratio: '–',
        goal: `≤ ${GOALS.latencyP50Ms} ms`,
        met: complete ? yesNo(run.p50Ms <= GOALS.latencyP50Ms) : 'INCOMPLETE',
      });
      rows.push({
        figure: `${label}, p99`,
        ours: `${fmt(run.p99Ms)} ms`,
        peer: '–',
        ratio: '–',
        goal: `≤ ${GOALS.latencyP99Ms} ms`,
        met: complete ? yesNo(run.p99Ms <= GOALS.latencyP99Ms) : 'INCOMPLETE',
      });
    }
  }
  if (r.memory) {
    const m = r.memory;
    const bytes = (b: number) => `${fmt(b)} B (${fmt(b / 1024, 2)} KiB)`;
    rows.push({
      figure: 'Redis memory per pending callback (its keys and queue entries)',
      ours: bytes(m.callbackMachineryBytes),
      peer: '–',
      ratio: '–',
      goal: '≤ 1.5 KiB',
      met: yesNo(m.callbackMachineryBytes <= GOALS.memoryBytes),
    });
    rows.push({
      figure: '  everything (adds the job, its queue, ledger, capped streams)',
      ours: bytes(m.everythingBytes),
      peer: '–',
      ratio: '–',
      goal: '(info)',
      met: '',
    });
  }
  if (r.generation) {
    const g = r.generation;
    rows.push({ figure: 'Sync image 1024x1024, request → response, p50', ours: `${fmt(g.image.p50Ms)} ms`, peer: '–', ratio: '–', goal: '(info)', met: '' });
    for (const store of ['fs', 's3'] as const) {
      const v = g.stores[store];
      const mb = v.bytes / 1e6;
      rows.push({
        figure: `Video 4 s 1280x720 + audio, POST → completed (stored, ${store}), p50`,
        ours: `${fmt(v.video.p50Ms)} ms`,
        peer: '–',
        ratio: '–',
        goal: '(info)',
        met: '',
      });
      rows.push({
        figure: `  its download through the gateway (${mb.toFixed(1)} MB, ${store}), p50`,
        ours: `${fmt(v.download.p50Ms)} ms (${((mb * 1000) / v.download.p50Ms).toFixed(0)} MB/s)`,
        peer: '–',
        ratio: '–',
        goal: '(info)',
        met: '',
      });
    }
  }
  if (r.isolation?.generation) {
    const g = r.isolation.generation;
    const render = g.largeRenderMs.p50Ms;
    const backlog = `A: ${g.backlogQueued} large queued`;
    for (const kind of ['sync', 'async'] as const) {
      for (const [p, renders] of [
        ['p50', GOALS.isolationRendersP50],
        ['p99', GOALS.isolationRendersP99],
      ] as const) {
        const during = g[kind].duringBacklog[`${p}Ms`];
        const idle = g[kind].baseline[`${p}Ms`];
        const limit = idle + renders * render;
        rows.push({
          figure: `B's ${kind} image 256x256 while ${backlog}, ${p}`,
          ours: `${fmt(during)} ms`,
          peer: `B idle: ${fmt(idle)} ms`,
          ratio: fmt(during / idle, 1),
          goal: `≤ idle + ${renders} × A's render (${fmt(limit)} ms)`,
          met: yesNo(during <= limit),
        });
      }
    }
  }
  if (r.isolation?.delivery) {
    const d = r.isolation.delivery;
    // The peer (the settings before isolation) is the last run; the shipped settings' runs come first.
    const before = d.runs.at(-1)!;
    for (const shipped of d.runs.slice(0, -1)) {
      const where = shipped.sharedHost ? "at other paths of B's own host" : 'at a host of its own';
      for (const p of ['p50', 'p99'] as const) {
        const idle = shipped[`baseline${p.toUpperCase() as 'P50' | 'P99'}Ms`];
        const during = shipped[`during${p.toUpperCase() as 'P50' | 'P99'}Ms`];
        const limit = Math.max(2 * idle, idle + 1_000);
        rows.push({
          figure: `B's callback, job end → first byte, while A's callbacks hang ${where} (${d.darkCallbacks} due), ${p}`,
          ours: `${fmt(during)} ms`,
          peer: `B idle: ${fmt(idle)} ms; before isolation: ${fmt(before[`during${p.toUpperCase() as 'P50' | 'P99'}Ms`])} ms`,
          ratio: fmt(during / idle, 1),
          goal: `≤ 2 × idle or idle + 1 s (${fmt(limit)} ms)`,
          met: yesNo(during <= limit),
        });
      }
    }
  }
  if (r['attempt-memory']) {
    const a = r['attempt-memory'];
    const perAttempt = a.rssPerAttemptBytes;
    // DISPATCHER_CONCURRENCY 500 on each of two queues must fit the pod's 512 Mi limit with room to spare.
    const budget = (256 * 1024 * 1024) / 1000;
    rows.push({
      figure: `Memory per callback attempt in flight (RSS, ${a.steps.at(-1)!.inFlight} held open)`,
      ours: `${fmt(perAttempt / 1024, 1)} KiB`,
      peer: `heap + external: ${fmt(a.heapPerAttemptBytes / 1024, 1)} KiB`,
      ratio: '–',
      goal: `≤ ${fmt(budget / 1024)} KiB (1000 in 256 MiB)`,
      met: yesNo(perAttempt <= budget),
    });
  }
  return rows;
}

function printDetails(r: Results): void {
  if (r['redis-cost']) {
    const { ours, oursLoaded, peer, pacedPeer, mode } = r['redis-cost'];
    console.log(
      `\nRedis cost per job (${mode}; main-thread CPU and commands, idle cost subtracted); ours: async 256x256 images with callbacks, ${oursLoaded.jobs} under load and ${ours.jobs} in a steady flow,` +
        ` idle ${fmt(ours.idleCpuMicrosPerSecond)} µs/s; peer: BullMQ jobs through two queues, ${peer.jobs} in a burst and ${pacedPeer.jobs} paced, idle ${fmt(peer.idleCpuMicrosPerSecond)} µs/s`,
    );
    console.log(
      `  under load: the jobs accepted while the generation and job-events queues were paused, then each queue resumed and drained (${fmt(oursLoaded.seconds, 1)} s);` +
        ` the peer's burst took ${fmt(peer.seconds, 1)} s`,
    );
    console.log(
      `  steady flow: 16 submissions in flight, each job crossing idle workers (${fmt(ours.seconds, 1)} s); the peer paced at that rate (${fmt(pacedPeer.jobs / pacedPeer.seconds)} jobs/s)`,
    );
    console.log(
      `  in the kernel (system time; the rest is Redis's own work): ours under load ${fmt(oursLoaded.sysMicrosPerJob)} µs, steady ${fmt(ours.sysMicrosPerJob)} µs;` +
        ` peer burst ${fmt(peer.sysMicrosPerJob)} µs, paced ${fmt(pacedPeer.sysMicrosPerJob)} µs`,
    );
    for (const st of oursLoaded.stages ?? []) {
      console.log(`  ours under load, ${st.name}: ${fmt(st.cpuMicrosPerJob)} µs, ${fmt(st.commandsPerJob)} commands per job (${fmt(st.seconds, 1)} s)`);
    }
    const top = (side: typeof ours) => side.topCommands.map((c) => `${c.command} ${fmt(c.perJob, 1)}`).join(', ');
    const sides = [
      ['ours, under load', oursLoaded],
      ['peer, burst', peer],
      ['ours, steady', ours],
      ['peer, paced', pacedPeer],
    ] as const;
    for (const [name, side] of sides) console.log(`  ${name}, commands per job: ${top(side)}`);
    for (const [name, { profile }] of sides) {
      if (!profile) continue;
      console.log(`  ${name}, by Redis time per job (slow log at threshold 0, BENCH_REDIS_COST_SCRIPTS=1; the CPU figures are inflated by it):`);
      for (const p of profile.slice(0, 30)) console.log(`    ${fmt(p.microsPerJob, 1).padStart(8)} µs  ${fmt(p.callsPerJob, 2).padStart(6)} calls  ${p.name}`);
    }
    for (const [name, side] of [
      ['under load', oursLoaded],
      ['steady', ours],
    ] as const) {
      for (const node of side.perNode ?? []) console.log(`  ${name}, node ${node.port}: ${fmt(node.cpuMicrosPerJob)} µs per job (${fmt(node.share * 100)} %)`);
    }
  }
  if (r.dispatcher) {
    const d = r.dispatcher;
    console.log(`\ncallback throughput: ${d.callbacks} requests each, after ${d.warmup} warm-up requests each; body ${d.bodyBytes} B`);
    console.log(
      `  DISPATCHER_CONCURRENCY ${d.dispatcherConcurrency} (ours, CALLBACK_DESTINATION_MAX_IN_FLIGHT ${d.destinationMaxInFlight} so that one workspace may use all of it; and the naive worker); got loops ${d.inFlight} in flight; receiver answers 204`,
    );
    if (!d.naive) console.log('  naive dispatcher: not run (it connects with a Redis URL alone, and this run uses a cluster, Sentinels or TLS settings)');
    const senders: [string, ThroughputRun][] = [
      ['dispatcher', d.dispatcher],
      ...(d.naive ? [['naive dispatcher', d.naive] as [string, ThroughputRun]] : []),
      ['got keep-alive', d.keepAlive],
      ['got fresh TLS', d.freshTls],
    ];
    for (const [name, run] of senders) {
      const cpu = run.cpuMicrosPerRequest !== undefined ? `  CPU ${fmt(run.cpuMicrosPerRequest)} µs per request` : '';
      console.log(
        `  ${name.padEnd(16)} ${fmt(run.perSecond).padStart(6)}/s  ${fmt(run.seconds, 2)} s  failures ${run.failures}  TLS connections ${run.connections} (${run.resumedSessions} resumed sessions)${cpu}`,
      );
    }
  }
  if (r.gateway) {
    const g = r.gateway;
    console.log(
      `\nimage acceptance: autocannon, ${g.connections} connections, pipelining ${g.pipelining}, ${g.durationSeconds} s measured after a ${g.warmupSeconds} s warm-up; body ${g.bodyBytes} B`,
    );
    if (!g.naiveGateway) console.log('  naive gateway: not run (it connects with a Redis URL alone, and this run uses a cluster, Sentinels or TLS settings)');
    const loads: [string, LoadRun][] = [
      ['gateway', g.gateway],
      ['bare Express', g.bareExpress],
      ...(g.naiveGateway ? [['naive gateway', g.naiveGateway] as [string, LoadRun]] : []),
      ...(g.traced ? [['traced', g.traced.run] as [string, LoadRun]] : []),
    ];
    for (const [name, run] of loads) {
      const codes = Object.entries(run.statusCodes)
        .map(([c, n]) => `${c}×${n}`)
        .join(' ');
      const cpu = run.cpuMicrosPerRequest !== undefined ? `  CPU ${fmt(run.cpuMicrosPerRequest)} µs per request` : '';
      console.log(
        `  ${name.padEnd(13)} ${fmt(run.requestsPerSecond).padStart(6)} req/s  latency p50 ${fmt(run.latencyP50Ms)} ms p99 ${fmt(run.latencyP99Ms)} ms  statuses ${codes}  non-2xx ${run.non2xx}  errors ${run.errors}${cpu}`,
      );
    }
    console.log(`  jobs the gateway stored: ${g.jobsStored} (warm-up included)`);
    if (g.traced) console.log(`  traced: a second gateway exporting over OTLP/HTTP to a sink in this process, ${g.traced.spansExported} spans received`);
    for (const problem of g.invalid) console.error(`  INVALID: ${problem}`);
  }
  if (r.latency) {
    const l = r.latency;
    console.log(`\njob end → first byte: GENERATOR_CONCURRENCY ${l.generatorConcurrency}, DISPATCHER_CONCURRENCY ${l.dispatcherConcurrency}, 256x256 images`);
    for (const run of l.runs) {
      console.log(
        `  ${run.ratePerSecond} jobs/s for ${fmt(run.seconds)} s: ${run.delivered}/${run.jobs} delivered; min ${fmt(run.minMs)}  p50 ${fmt(run.p50Ms)}  p99 ${fmt(run.p99Ms)}  max ${fmt(run.maxMs)} ms`,
      );
    }
  }
  if (r.memory) {
    const m = r.memory;
    console.log(
      `\nRedis memory per pending callback: ${m.jobs} jobs (after ${m.warmup} warm-up jobs), each callback after one failed attempt (500), attempt 2 delayed (WEBHOOK_RETRY_SCHEDULE ${m.retrySchedule})`,
    );
    console.log(
      '  sum of MEMORY USAGE <key> SAMPLES 0 over every key under the prefix, after − before, / jobs (kinds under 0.5 B/callback left out here, kept in the JSON)',
    );
    printTable(
      ['kind', 'group', 'type/encoding', 'keys before→after', 'B/callback'],
      m.kinds
        .filter((k) => Math.abs(k.bytesPerCallback) >= 0.5)
        .map((k) => [k.kind, k.group, k.type, `${k.keysBefore}→${k.keysAfter}`, fmt(k.bytesPerCallback, 1)]),
    );
    console.log('  one key of each growing kind (byte length of each hash field, or of the string value):');
    for (const k of m.kinds.filter((row) => row.bytesPerCallback > 0 && row.keysAfter > row.keysBefore)) {
      const parts = k.sample.fieldBytes
        ? Object.entries(k.sample.fieldBytes)
            .map(([f, n]) => `${f} ${n}`)
            .join(', ')
        : k.sample.stringBytes !== undefined
          ? `${k.sample.stringBytes} B value`
          : '';
      console.log(`    ${k.kind} (${k.sample.key}): ${parts}`);
    }
    const limits = Object.entries(m.encodingLimits)
      .map(([name, value]) => `${name} ${value}`)
      .join(', ');
    if (limits) console.log(`  Redis compact-encoding limits: ${limits}`);
    console.log(
      `  everything ${fmt(m.everythingBytes)} B; callback-only (everything − job record − job indexes) ${fmt(m.callbackOnlyBytes)} B; callback keys + its queues ${fmt(m.callbackMachineryBytes)} B`,
    );
  }
  if (r.generation) {
    const g = r.generation;
    console.log(
      `\ngeneration: sync image 1024x1024 min ${fmt(g.image.minMs)} p50 ${fmt(g.image.p50Ms)} max ${fmt(g.image.maxMs)} ms (n=${g.image.n}); video 4 s 720p + audio min ${fmt(g.video.minMs)} p50 ${fmt(g.video.p50Ms)} max ${fmt(g.video.maxMs)} ms (n=${g.video.n})`,
    );
  }
  if (r.isolation?.generation) {
    const g = r.isolation.generation;
    console.log(
      `\ngeneration isolation: 1 gateway, 1 generator, GENERATOR_CONCURRENCY ${g.generatorConcurrency}; A's large image 1536x1024 (high) alone p50 ${fmt(g.largeRenderMs.p50Ms)} max ${fmt(g.largeRenderMs.maxMs)} ms;` +
        ` A queued ${g.backlogQueued}, ${g.backlogLeftWhenDone} still unfinished when B was done`,
    );
    printTable(
      ['B, 256x256', 'n', 'idle p50', 'during p50', 'ratio', 'idle p99', 'during p99', 'ratio'],
      (['sync', 'async'] as const).map((kind) => {
        const { baseline: idle, duringBacklog: during } = g[kind];
        return [
          kind,
          String(during.n),
          fmt(idle.p50Ms),
          fmt(during.p50Ms),
          fmt(during.p50Ms / idle.p50Ms, 1),
          fmt(idle.p99Ms),
          fmt(during.p99Ms),
          fmt(during.p99Ms / idle.p99Ms, 1),
        ];
      }),
    );
  }
  if (r.isolation?.delivery) {
    const d = r.isolation.delivery;
    console.log(
      `\ndelivery isolation: 1 gateway, 1 generator, 1 dispatcher; A: ${d.darkCallbacks} callbacks to a receiver that never answers (WEBHOOK_TIMEOUT_MS 15000), at a host of its own or at other paths of B's; B: ${d.bCallbacks} callbacks at 10/s to a healthy one`,
    );
    printTable(
      ['settings', 'A hanging', 'B idle p50', 'B during p50', 'B idle p99', 'B during p99', 'p99 ratio'],
      d.runs.map((run) => [
        run.label,
        String(run.darkInFlight),
        fmt(run.baselineP50Ms),
        fmt(run.duringP50Ms),
        fmt(run.baselineP99Ms),
        fmt(run.duringP99Ms),
        fmt(run.duringP99Ms / run.baselineP99Ms, 1),
      ]),
    );
  }
  if (r['attempt-memory']) {
    console.log('\nmemory of one sender with attempts held open (a child process, after a full GC at each step)');
    const mib = (b: number) => fmt(b / 1024 / 1024, 1);
    const kib = (b: number | null) => (b === null ? '–' : fmt(b / 1024, 1));
    printTable(
      ['in flight', 'RSS MiB', 'heap used MiB', 'external MiB', 'RSS KiB / attempt', 'heap + external KiB / attempt'],
      r['attempt-memory'].steps.map((step) => [
        String(step.inFlight),
        mib(step.rssBytes),
        mib(step.heapUsedBytes),
        mib(step.externalBytes),
        kib(step.rssPerAttemptBytes),
        kib(step.heapPerAttemptBytes),
      ]),
    );
  }
}

function describeMachine(m: MachineInfo): string {
  return `${m.cpu}, ${m.cores} cores, ${m.memoryGiB} GiB; Node ${m.node}; Redis ${m.redis}; ${m.os}; ${m.date}; load average ${m.loadAverageAtStart.join(' ')}${
    m.loadAverageAtEnd ? ` → ${m.loadAverageAtEnd.join(' ')}` : ''
  }; code ${m.git}`;
}

function outputPath(): string {
  const out = resolve(process.env.BENCH_OUT ?? join(ROOT, 'bench', 'results', 'latest.json'));
  mkdirSync(dirname(out), { recursive: true });
  // bench/results/ is never committed: it ignores itself.
  const ignore = join(ROOT, 'bench', 'results', '.gitignore');
  if (dirname(out) === dirname(ignore) && !existsSync(ignore)) writeFileSync(ignore, '*\n');
  return out;
}

async function main(): Promise<number> {
  const deadlineSeconds = envNumber('BENCH_DEADLINE_S', 600);
  const startedAt = Date.now();
  setDeadline(startedAt + deadlineSeconds * 1000);
  const watchdog = setTimeout(() => {
    console.error(`\nbench: the ${deadlineSeconds} s deadline passed; stopping and cleaning up`);
    void cleanupAll().finally(() => process.exit(2));
  }, deadlineSeconds * 1000);
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.once(signal, () => {
      console.error(`\nbench: ${signal}; cleaning up`);
      void cleanupAll().finally(() => process.exit(130));
    });
  }

  const only = (process.env.BENCH_ONLY ?? '')
    .split(',')
    .map((p) => p.trim())
    .filter(Boolean);
  for (const p of only) if (!PHASES.includes(p as Phase)) throw new Error(`BENCH_ONLY: unknown phase ${p} (phases: ${PHASES.join(', ')})`);
  const phases = PHASES.filter((p) => only.length === 0 || only.includes(p));

  // BENCH_REDIS=cluster: the same phases on a three-primary Redis Cluster made here on loopback.
  const cluster = process.env.BENCH_REDIS === 'cluster' ? await TestRedisCluster.start() : undefined;
  if (cluster) useRedisCluster(cluster.nodes, () => cluster.client());
  const redis = benchRedis();
  let pki: TestPki | undefined;
  let receiver: ReceiverClient | undefined;
  const results: Results = {};
  const errors: Partial<Record<Phase, string>> = {};
  try {
    const machine = await machineInfo(redis);
    console.log(`bench run ${RUN_ID}: ${describeMachine(machine)}`);
    console.log(`phases: ${phases.join(', ')}; deadline ${deadlineSeconds} s\n`);
    pki = makeTestPki([], { keyType: 'rsa2048' });
    receiver = await ReceiverClient.start(pki);
    const ctx: BenchContext = { redis, pki, receiver };
    const run: Record<Phase, () => Promise<void>> = {
      'redis-cost': async () => void (results['redis-cost'] = await benchRedisCost(ctx, cluster)),
      dispatcher: async () => void (results.dispatcher = await benchDispatcher(ctx)),
      gateway: async () => void (results.gateway = await benchGateway(ctx)),
      latency: async () => void (results.latency = await benchLatency(ctx)),
      memory: async () => {
        // It sums MEMORY USAGE over a SCAN of one server; a cluster spreads the keys over three.
        if (cluster) throw new Error('the memory phase measures a single Redis; run it without BENCH_REDIS=cluster');
        results.memory = await benchMemory(ctx);
      },
      generation: async () => void (results.generation = await benchGeneration(ctx)),
      isolation: async () => void (results.isolation = await benchIsolation(ctx)),
      'attempt-memory': async () => void (results['attempt-memory'] = await benchAttemptMemory(ctx)),
    };
    for (const phase of phases) {
      if (remainingMs() <= 0) {
        errors[phase] = `not run: the ${deadlineSeconds} s deadline had passed`;
        continue;
      }
      const t0 = Date.now();
      console.log(`[${phase}] running (${Math.round(remainingMs() / 1000)} s left before the deadline)`);
      try {
        await run[phase]();
        console.log(`[${phase}] done in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
      } catch (err) {
        const message = err instanceof Error ? (err.stack ?? err.message) : String(err);
        errors[phase] = remainingMs() <= 0 ? `stopped at the ${deadlineSeconds} s deadline (${message.split('\n')[0]})` : message;
        console.error(`[${phase}] FAILED after ${((Date.now() - t0) / 1000).toFixed(1)} s: ${errors[phase]}`);
        // Whatever the phase left behind goes before the next one starts.
        await cleanupAll([receiver.helper.child]);
      }
    }
    machine.loadAverageAtEnd = currentLoad();

    printDetails(results);
    const rows = tableRows(results);
    console.log(`\n=== bench results (run ${RUN_ID}, ${((Date.now() - startedAt) / 1000).toFixed(0)} s) ===`);
    console.log(`machine: ${describeMachine(machine)}`);
    printTable(
      ['figure', 'ours', 'peer (same run)', 'ratio', 'goal', 'met?'],
      rows.map((r) => [r.figure, r.ours, r.peer, r.ratio, r.goal, r.met]),
    );
    for (const [phase, error] of Object.entries(errors)) console.error(`phase ${phase} FAILED: ${error.split('\n')[0]}`);

    const out = outputPath();
    writeFileSync(out, `${JSON.stringify({ run: RUN_ID, machine, phases, table: rows, results, errors }, null, 2)}\n`);
    const shown = relative(process.cwd(), out);
    console.log(`\nJSON: ${shown.startsWith('..') || shown === '' ? out : shown}`);
    const invalid = (results.gateway?.invalid.length ?? 0) > 0;
    if (remainingMs() <= 0) return 2;
    return Object.keys(errors).length > 0 || invalid ? 1 : 0;
  } finally {
    clearTimeout(watchdog);
    await receiver?.stop().catch(() => undefined);
    await cleanupAll();
    pki?.cleanup();
    redis.disconnect();
    await cluster?.destroy();
  }
}

main().then(
  (code) => process.exit(code),
  async (err) => {
    console.error(err instanceof Error ? err.stack : err);
    await cleanupAll().catch(() => undefined);
    process.exit(1);
  },
);
