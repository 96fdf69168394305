/**
 * Where a service's CPU went, from a V8 CPU profile written with BENCH_CPU_PROF=<dir>:
 *
 *   npx tsx bench/cpu-profile.ts <file.cpuprofile> [window seconds, default 3] [--skip <seconds>] [--timeline]
 *
 * It looks only at the busiest stretch of the given length (the measured run, not start-up or the
 * idle wait around it) and charges each sample to the nearest package on its stack, counting from
 * the sample's own frame up: a Node internal (a socket write, a hash) goes to whichever package
 * called it, so "got" includes the HTTP client work got asked Node for. Garbage collection and
 * socket writes that no package frame leads to are their own lines. Then the busiest functions of
 * our own code (libs/, services/), each with the Node internals it called; then self time (the
 * sample's own frame only) by package (node_modules package, libs/<name>, services/<name>, bench/,
 * or Node itself) and the functions with the most self time.
 *
 * `--skip <seconds>` leaves out the profile's first seconds (start-up: loading modules and reading
 * the config can be the busiest stretch of a short run); `--timeline` prints the busy share of each
 * half second, to see where the measured run is.
 */
import { readFileSync } from 'node:fs';

interface CallFrame {
  functionName: string;
  url: string;
  lineNumber: number;
}
interface ProfileNode {
  id: number;
  callFrame: CallFrame;
  children?: number[];
}
interface CpuProfile {
  nodes: ProfileNode[];
  startTime: number;
  samples: number[];
  timeDeltas: number[];
}

/** Packages by what they are; the first that matches a frame's URL names it. */
const GROUPS: [string, RegExp][] = [
  [
    'got (HTTP client)',
    /node_modules\/(got|@sindresorhus|@szmarczak|cacheable-|form-data-encoder|lowercase-keys|p-cancelable|responselike|decompress-response|mimic-response)\//,
  ],
  ['ioredis', /node_modules\/(ioredis|redis-errors|redis-parser|denque|cluster-key-slot|standard-as-callback)\//],
  ['bullmq', /node_modules\/(bullmq|msgpackr)\//],
  ['winston (logging)', /node_modules\/(winston|winston-transport|logform|safe-stable-stringify|triple-beam|fecha|@colors|readable-stream)\//],
  [
    'express (router, body parsing, responses)',
    /node_modules\/(express|router|body-parser|raw-body|type-is|content-type|on-finished|finalhandler|parseurl|qs|mime-types|media-typer|iconv-lite|http-errors|statuses|accepts|negotiator|fresh|etag|vary|proxy-addr|forwarded|encodeurl|send|debug|path-to-regexp|bytes|ee-first)\//,
  ],
  ['joi (validation)', /node_modules\/(joi|@hapi|@sideway)\//],
  ['prom-client (metrics)', /node_modules\/(prom-client|tdigest|bintrees)\//],
  ['OpenTelemetry', /node_modules\/@opentelemetry\//],
  ['our code (libs/, services/)', /\/(libs|services)\/[^/]+\/(dist|src)\//],
  ['other packages', /node_modules\//],
];
const OURS = /\/(libs|services)\/[^/]+\/(dist|src)\//;

function main(): void {
  const args = process.argv.slice(2);
  const flag = (name: string) => {
    const at = args.indexOf(name);
    return at < 0 ? undefined : args.splice(at, name === '--timeline' ? 1 : 2)[1];
  };
  const skipUs = Number(flag('--skip') ?? 0) * 1e6;
  const timeline = args.includes('--timeline') && (flag('--timeline'), true);
  const [file, windowArg] = args;
  if (!file) throw new Error('usage: npx tsx bench/cpu-profile.ts <file.cpuprofile> [window seconds] [--skip <seconds>] [--timeline]');
  const windowUs = Number(windowArg ?? 3) * 1e6;
  const profile = JSON.parse(readFileSync(file, 'utf8')) as CpuProfile;
  const nodes = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of profile.nodes) for (const child of n.children ?? []) parent.set(child, n.id);
  const isIdle = (id: number) => nodes.get(id)!.callFrame.functionName === '(idle)';

  // Sample times, then the window of the given length with the most non-idle time.
  let clock = profile.startTime;
  const times = profile.timeDeltas.map((d) => (clock += d));
  let best = 0;
  let bestStart = 0;
  let busy = 0;
  const first = times.findIndex((t) => t - profile.startTime >= skipUs);
  if (timeline) {
    const buckets = new Map<number, [number, number]>();
    for (let i = 0; i < times.length; i++) {
      const b = Math.floor((times[i]! - profile.startTime) / 500_000);
      const [busyUs, allUs] = buckets.get(b) ?? [0, 0];
      buckets.set(b, [busyUs + (isIdle(profile.samples[i]!) ? 0 : profile.timeDeltas[i]!), allUs + profile.timeDeltas[i]!]);
    }
    for (const [b, [busyUs]] of buckets)
      console.log(`  ${(b / 2).toFixed(1).padStart(6)} s  ${'#'.repeat(Math.round((busyUs / 500_000) * 40))} ${Math.round(busyUs / 5_000)} %`);
  }
  for (let i = Math.max(0, first), j = Math.max(0, first); i < times.length; i++) {
    if (!isIdle(profile.samples[i]!)) busy += profile.timeDeltas[i]!;
    while (times[i]! - times[j]! > windowUs) {
      if (!isIdle(profile.samples[j]!)) busy -= profile.timeDeltas[j]!;
      j++;
    }
    if (busy > best) [best, bestStart] = [busy, j];
  }

  const byGroup = new Map<string, number>();
  const byOwnFunction = new Map<string, number>();
  const selfByPackage = new Map<string, number>();
  const selfByFunction = new Map<string, number>();
  const add = (map: Map<string, number>, key: string, us: number) => map.set(key, (map.get(key) ?? 0) + us);
  let total = 0;
  for (let i = bestStart; i < times.length && times[i]! <= times[bestStart]! + windowUs; i++) {
    const id = profile.samples[i]!;
    if (isIdle(id)) continue;
    const us = profile.timeDeltas[i]!;
    total += us;
    const leaf = nodes.get(id)!.callFrame;
    let group: string | undefined;
    let own: string | undefined;
    for (let at: number | undefined = id; at !== undefined && (group === undefined || own === undefined); at = parent.get(at)) {
      const frame = nodes.get(at)!.callFrame;
      if (group === undefined) group = GROUPS.find(([, pattern]) => pattern.test(frame.url))?.[0];
      // Our own function nearest the sample, unless a package stands between them.
      if (own === undefined && /node_modules\//.test(frame.url)) own = '';
      if (own === undefined && OURS.test(frame.url))
        own = `${frame.functionName || '(anonymous)'} ${frame.url.split('/').slice(-3).join('/')}:${frame.lineNumber + 1}`;
    }
    if (group === undefined) {
      if (leaf.functionName === '(garbage collector)') group = 'garbage collection';
      else if (leaf.functionName === 'writev' || leaf.functionName === 'writeUtf8String' || leaf.functionName === 'writeBuffer') group = 'socket writes';
      else if (/^node:/.test(leaf.url)) group = 'Node internals (event loop, sockets, timers)';
      else group = `other (${leaf.functionName || 'native'})`;
    }
    add(byGroup, group, us);
    if (own) add(byOwnFunction, own, us);
    const where = packageOf(leaf);
    add(selfByPackage, where, us);
    add(selfByFunction, `${leaf.functionName || '(anonymous)'}  [${where}${leaf.url ? ` ${leaf.url.split('/').at(-1)}:${leaf.lineNumber + 1}` : ''}]`, us);
  }

  const pct = (us: number) => `${((us / total) * 100).toFixed(1).padStart(5)} %`;
  console.log(`${file}: busiest ${windowUs / 1e6} s, ${(total / 1e6).toFixed(2)} s of CPU in it`);
  for (const [group, us] of [...byGroup].sort((a, b) => b[1] - a[1])) console.log(`  ${pct(us)}  ${group}`);
  console.log('our busiest functions (with the Node internals they called):');
  for (const [name, us] of [...byOwnFunction].sort((a, b) => b[1] - a[1]).slice(0, 15)) console.log(`  ${pct(us)}  ${name}`);
  console.log('self time by package (the sampled frame only):');
  for (const [name, us] of [...selfByPackage].sort((a, b) => b[1] - a[1]).slice(0, 20)) console.log(`  ${pct(us)}  ${name}`);
  console.log('functions with the most self time:');
  for (const [name, us] of [...selfByFunction].sort((a, b) => b[1] - a[1]).slice(0, 30)) console.log(`  ${pct(us)}  ${name}`);
}

/** Where a frame's code lives: its node_modules package, libs/<name>, services/<name>, bench/, Node itself, or V8 (GC, native). */
function packageOf(frame: CallFrame): string {
  const url = frame.url;
  const modules = /node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(
    url.split('node_modules/').length > 2 ? `node_modules/${url.split('node_modules/').at(-1)}` : url,
  );
  if (modules) return modules[1]!;
  const ours = /\/(libs|services)\/([^/]+)\//.exec(url);
  if (ours) return `${ours[1]}/${ours[2]}`;
  if (/\/bench\//.test(url)) return 'bench/';
  // Node's own modules by area: node:internal/streams, node:internal/crypto, node:_http_client…
  if (/^node:/.test(url)) return url.split('/').length > 2 ? url.split('/').slice(0, -1).join('/') : url;
  if (frame.functionName === '(garbage collector)') return '(garbage collector)';
  return url ? url : `(native ${frame.functionName || '?'})`;
}

main();
