/**
 * One workspace's receiver goes dark while another's is healthy: workspace B's callbacks, job end →
 * receiver's first byte, at a gentle pace, first alone (baseline), then while workspace A has
 * BENCH_ISOLATION_DARK callbacks hanging at a receiver that never answers, with the production
 * timeout (15 s). Run three times: with the shipped isolation settings with A's receiver a host of
 * its own, then at paths of B's own host (many customers share one: integration platforms, tunnels,
 * company gateways), and as the service was before the isolation settings (DISPATCHER_CONCURRENCY 50,
 * no destination cap) as the peer. B's receiver is the bench's receiver process; A's own host is an
 * in-process HTTPS server that reads each request and never answers, and at B's host A's callbacks
 * go to `/hang`, which the receiver process holds open.
 */
import { TestReceiver } from '../test/dispatcher/support/receiver';
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
import { allKeys } from '../test/support/store-keys';

export interface DeliveryIsolationRun {
  label: string;
  settings: Record<string, string>;
  /** Whether A's callbacks go to paths of B's receiver host rather than to a host of their own. */
  sharedHost: boolean;
  baselineP50Ms: number;
  baselineP99Ms: number;
  duringP50Ms: number;
  duringP99Ms: number;
  /** A's attempts hanging at the dark receiver when B's run started. */
  darkInFlight: number;
}

export interface DeliveryIsolationResult {
  darkCallbacks: number;
  bCallbacks: number;
  runs: DeliveryIsolationRun[];
}

const SHIPPED: Record<string, string> = {};
const BEFORE: Record<string, string> = {
  DISPATCHER_CONCURRENCY: '50',
  CALLBACK_DESTINATION_MAX_IN_FLIGHT: '10000',
  CALLBACK_DESTINATION_SLOW_MAX_IN_FLIGHT: '10000',
};

export async function benchDeliveryIsolation(ctx: BenchContext): Promise<DeliveryIsolationResult> {
  const DARK = envNumber('BENCH_ISOLATION_DARK', 200);
  const B = envNumber('BENCH_ISOLATION_B', 40);
  const runs: DeliveryIsolationRun[] = [];
  for (const [label, settings, sharedHost] of [
    ['isolation (shipped settings), separate hosts', SHIPPED, false],
    ['isolation (shipped settings), one shared host', SHIPPED, true],
    ['before: concurrency 50, no cap', BEFORE, false],
  ] as const) {
    runs.push(await oneRun(ctx, label, settings, sharedHost, DARK, B));
  }
  return { darkCallbacks: DARK, bCallbacks: B, runs };
}

async function oneRun(
  ctx: BenchContext,
  label: string,
  settings: Record<string, string>,
  sharedHost: boolean,
  dark: number,
  b: number,
): Promise<DeliveryIsolationRun> {
  const { redis, receiver, pki } = ctx;
  const prefix = newPrefix('isolation-delivery');
  const darkReceiver = await TestReceiver.start(pki);
  darkReceiver.script('/dark', () => 'hang');
  const [wsA, wsB] = [await createWorkspace(redis, prefix, 'a'), await createWorkspace(redis, prefix, 'b')];
  const stack = await BenchStack.start(
    prefix,
    ['api-gateway', 'generator', 'webhook-dispatcher'],
    await serviceEnv(prefix, pki, { RATE_LIMIT_CREATE_PER_MINUTE: '100000000', MAX_WAITING_JOBS_PER_WORKSPACE: '100000000', ...settings }),
  );
  const bodyFor = (url: string) => JSON.stringify({ model: 'pixel-1', prompt: 'a small red boat', size: '256x256', callback_url: url });

  /** B's callbacks at 10/s; job end → first byte at the healthy receiver, sorted. */
  const runB = async (): Promise<number[]> => {
    await receiver.reset();
    const ids: Promise<string>[] = [];
    const t0 = Date.now();
    for (let i = 0; i < b; i++) {
      const wait = t0 + i * 100 - Date.now();
      if (wait > 0) await sleep(wait);
      ids.push(submitImage(stack.baseUrl, wsB.apiKey, bodyFor(receiver.url('/hook'))));
    }
    const mine = new Set(await Promise.all(ids));
    await waitUntil(
      async () => {
        stack.assertAlive();
        return (await receiver.uniqueCount()) >= b;
      },
      240_000,
      `B's ${b} callbacks (${label})`,
      50,
    );
    return (await receiver.arrivals())
      .filter((a) => mine.has(a.jobId))
      .map((a) => a.receivedMs - a.eventMs)
      .sort((x, y) => x - y);
  };

  try {
    await runB(); // warm-up: JIT, connections, lazily made keys
    const baseline = await runB();
    const darkBody = bodyFor(sharedHost ? receiver.url('/hang') : darkReceiver.url('/dark'));
    const hanging = async () => (sharedHost ? (await receiver.stats()).hanging : darkReceiver.inFlight);
    for (let i = 0; i < dark; i += 50) {
      await Promise.all(Array.from({ length: Math.min(50, dark - i) }, () => submitImage(stack.baseUrl, wsA.apiKey, darkBody)));
    }
    // A's first attempts hang: as many as the dispatcher lets in flight.
    await waitUntil(async () => (await hanging()) >= Math.min(dark, 10), 60_000, `A's attempts to hang (${label})`, 50);
    await waitUntil(async () => (await redis.scard(allKeys(prefix).workspaceUnfinished(wsA.workspaceId))) === 0, 60_000, `A's jobs to be made (${label})`, 50);
    const darkInFlight = await hanging();
    const during = await runB();
    return {
      label,
      settings,
      sharedHost,
      baselineP50Ms: percentile(baseline, 50),
      baselineP99Ms: percentile(baseline, 99),
      duringP50Ms: percentile(during, 50),
      duringP99Ms: percentile(during, 99),
      darkInFlight,
    };
  } finally {
    await stack.stop();
    await darkReceiver.stop();
    await dropPrefix(redis, prefix);
  }
}
