// Helpers that need nothing of the test stack, so that the stack and the Redis topologies it runs on
// (redis-cluster.ts, redis-sentinel.ts, private-redis.ts) can all use them without importing each other,
// and a test that starts no process can use them without importing stack.ts, which spawns the services
// (and so would put the test in the Jest project `e2e`: test/support/test-projects.ts).
import { createServer } from 'node:net';
import { Redis, type Cluster } from 'ioredis';
import { isCluster } from '@media/common';

// Ports are handed out below the kernel's ephemeral range (32768–60999 on Linux): a port found with
// listen(0) and closed again can be taken by any outgoing connection (a Redis client, a callback POST)
// before the service that was meant to have it binds. Each Jest worker owns its own slice of
// [10000, 20000), so two workers never hand out the same port, and a Cluster node's bus port (+10000)
// falls in [20000, 30000), which nothing else hands out.
const PORT_FLOOR = 10_000;
const PORT_SPAN = 10_000;
const CLUSTER_BUS_OFFSET = 10_000;
const SLICES = 16;
// Outside Jest (a bench run) the upper half of the slices, picked by pid.
const workerId = Number(process.env.JEST_WORKER_ID);
const slice = workerId > 0 ? (workerId - 1) % (SLICES / 2) : SLICES / 2 + (process.pid % (SLICES / 2));
const sliceSize = Math.floor(PORT_SPAN / SLICES);
let nextOffset = Math.floor(Math.random() * sliceSize);

function canBind(port: number, host: string): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(false));
    server.listen({ port, host, exclusive: true }, () => server.close(() => resolve(true)));
  });
}

// Ports that fetch() refuses to dial (the Fetch standard's "bad ports"); of them only 10080 lies in
// the range handed out, the rest are listed so that a change of range cannot bring one in unnoticed.
const FETCH_BAD_PORTS = new Set([
  1, 7, 9, 11, 13, 15, 17, 19, 20, 21, 22, 23, 25, 37, 42, 43, 53, 69, 77, 79, 87, 95, 101, 102, 103, 104, 109, 110, 111, 113, 115, 117, 119, 123, 135, 137,
  139, 143, 161, 179, 389, 427, 465, 512, 513, 514, 515, 526, 530, 531, 532, 540, 548, 554, 556, 563, 587, 601, 636, 989, 990, 993, 995, 1719, 1720, 1723, 2049,
  3659, 4045, 4190, 5060, 5061, 6000, 6566, 6665, 6666, 6667, 6668, 6669, 6679, 6697, 10080,
]);

async function portIsFree(port: number): Promise<boolean> {
  if (FETCH_BAD_PORTS.has(port)) return false;
  // The services listen on every address (`::`), receivers and Redis on 127.0.0.1: both must be free.
  return (await canBind(port, '127.0.0.1')) && (await canBind(port, '::'));
}

/**
 * A port on loopback that nothing listens on, from this worker's own slice; with `run`, the first of
 * that many consecutive free ports (`npm start` gives its services OPS_PORT, +1 and +2).
 */
export async function freePort(options: { clusterBus?: boolean; run?: number } = {}): Promise<number> {
  const run = options.run ?? 1;
  const first = PORT_FLOOR + slice * sliceSize;
  for (let tries = 0; tries < sliceSize; tries++) {
    const port = first + (nextOffset % sliceSize);
    nextOffset += run;
    if (port + run > first + sliceSize) continue;
    if (await allFree(port, run, options.clusterBus ?? false)) return port;
  }
  throw new Error(`no ${run} free port(s) in ${first}..${first + sliceSize - 1}`);
}

async function allFree(port: number, run: number, clusterBus: boolean): Promise<boolean> {
  for (let p = port; p < port + run; p++) {
    if (!(await portIsFree(p))) return false;
    if (clusterBus && !(await portIsFree(p + CLUSTER_BUS_OFFSET))) return false;
  }
  return true;
}

/** Polls `check` every `intervalMs` until it returns a value other than undefined, or fails after `timeoutMs`. */
export async function eventually<T>(check: () => Promise<T | undefined> | T | undefined, timeoutMs = 20_000, what = 'condition', intervalMs = 50): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  for (;;) {
    try {
      const value = await check();
      if (value !== undefined) return value;
    } catch (err) {
      lastError = err;
    }
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}${lastError ? `: ${String(lastError)}` : ''}`);
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}

/** Waits until a Redis on loopback answers PING (a server the test just started). */
export async function redisAnswers(target: { port: number } | { url: string }, what: string): Promise<void> {
  await eventually(
    async () => {
      const options = { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null };
      const probe = 'url' in target ? new Redis(target.url, options) : new Redis(target.port, '127.0.0.1', options);
      probe.on('error', () => undefined);
      try {
        await probe.connect();
        return (await probe.ping()) === 'PONG' ? true : undefined;
      } finally {
        probe.disconnect();
      }
    },
    10_000,
    what,
  );
}

export const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';

/** Every key under `prefix:`, with the node that holds it (on a cluster, SCAN walks one node's keys). */
export async function keysUnder(redis: Redis, prefix: string): Promise<{ node: Redis; key: string }[]> {
  if (isCluster(redis)) {
    const primaries = (redis as unknown as Cluster).nodes('master') as unknown as Redis[];
    return (await Promise.all(primaries.map((node) => keysUnder(node, prefix)))).flat();
  }
  const found: { node: Redis; key: string }[] = [];
  let cursor = '0';
  do {
    const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}:*`, 'COUNT', 1000);
    cursor = next;
    for (const key of keys) found.push({ node: redis, key });
  } while (cursor !== '0');
  return found;
}

/** Deletes every key under `prefix:` (and nothing else: the Redis may be shared). */
export async function deleteKeysUnder(redis: Redis, prefix: string): Promise<void> {
  // One DEL per key: a multi-key DEL must not cross cluster slots.
  await Promise.all((await keysUnder(redis, prefix)).map(({ node, key }) => node.del(key)));
}
