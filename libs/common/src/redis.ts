import { readFileSync } from 'node:fs';
import type { ConnectionOptions } from 'node:tls';
import { Cluster, Redis, type ClusterOptions, type RedisOptions } from 'ioredis';
import { ConfigError, type RedisAuth, type RedisTarget, type RedisTls } from './config';
import { storePrefix } from './keyspace';
import { FollowingSentinelConnector, type FollowingSentinelOptions, type PromotionListener } from './sentinel-connector';
import type { Logger } from './logger';

/** One log line per this many ms at most while a connection keeps failing (ioredis retries every few ms). */
const ERROR_LOG_INTERVAL_MS = 10_000;

/**
 * Connections for workers must retry forever (BullMQ requires `maxRetriesPerRequest: null`);
 * request-path connections fail fast so an HTTP call does not hang while Redis is away.
 *
 * With a logger, connection errors go to the JSON log (throttled) instead of ioredis's
 * "Unhandled error event" on the console; every long-lived connection should pass one.
 *
 * On a Redis Cluster the result is an ioredis `Cluster`, typed as `Redis`: every command, script,
 * pipeline and MULTI the services send has all its keys in one slot (keyspace.ts), which is what a
 * Cluster client needs to route them, and BullMQ takes a Cluster as its connection. The few places
 * where the two differ go through {@link duplicateRedis} and {@link isCluster}.
 */
export function createRedis(target: RedisTarget | string, role: 'worker' | 'request', logger?: Logger): Redis {
  const options: RedisOptions = {
    maxRetriesPerRequest: role === 'worker' ? null : 3,
    enableReadyCheck: true,
    // A primary demoted by a failover answers writes with READONLY while the connection stays up
    // (a managed Redis promoting behind one address, or an old primary back as a replica):
    // reconnect, which finds the new primary, and send the command again.
    reconnectOnError: (err) => (err.message.startsWith('READONLY') ? 2 : false),
  };
  const resolved: RedisTarget = typeof target === 'string' ? { kind: 'single', url: target } : target;
  const tls = resolved.tls ? tlsOptions(resolved.tls) : undefined;
  if (tls) options.tls = tls;
  const redis =
    resolved.kind === 'cluster'
      ? (new Cluster(resolved.nodes, clusterOptions({ ...options, ...credentials(resolved.auth) })) as unknown as Redis)
      : resolved.kind === 'sentinel'
        ? new Redis({
            ...options,
            ...credentials(resolved.auth),
            // The Sentinels speak TLS when the nodes do (one certificate authority for both).
            ...(tls ? { enableTLSForSentinelMode: true, sentinelTLS: tls } : {}),
            sentinels: resolved.sentinels,
            name: resolved.name,
            sentinelPassword: resolved.auth.sentinelPassword,
            // Hears of a promotion from the Sentinels (+switch-master) at once, rather than when
            // the old primary's connection fails; every duplicate (BullMQ's blocking ones) does too.
            Connector: FollowingSentinelConnector,
            ...(logger ? { onPromotion: logPromotions(logger) } : {}),
          } satisfies RedisOptions & FollowingSentinelOptions)
        : new Redis(resolved.url, { ...options, ...credentials(resolved.auth ?? {}) });
  if (logger) logRedisErrors(redis, logger, role);
  // A request connection carries the commands of every HTTP call in flight (the gateway's image
  // intake sends three per call); sent one write(2) each, they cost the gateway and Redis more CPU
  // than anything else the call does.
  if (role === 'request') coalesceWrites(redis);
  return redis;
}

const promotionLogs = new WeakMap<Logger, PromotionListener>();

/**
 * One log line per new primary the Sentinels promote: every connection of a process (and every
 * duplicate of one) hears each Sentinel announce it, and those given one logger share this listener.
 */
function logPromotions(logger: Logger): PromotionListener {
  let listener = promotionLogs.get(logger);
  if (!listener) {
    let last = '';
    listener = ({ host, port }) => {
      const primary = `${host}:${port}`;
      if (primary === last) return;
      last = primary;
      logger.warn('redis primary changed: the Sentinels promoted a replica', { primary });
    };
    promotionLogs.set(logger, listener);
  }
  return listener;
}

const caFiles = new Map<string, Buffer>();

/** Certificates checked against the system's roots, or against the CA file's (read once per process). */
function tlsOptions(tls: RedisTls): ConnectionOptions {
  if (!tls.caFile) return {};
  let ca = caFiles.get(tls.caFile);
  if (!ca) {
    try {
      ca = readFileSync(tls.caFile);
    } catch (err) {
      throw new ConfigError([`REDIS_TLS_CA_FILE cannot be read: ${(err as Error).message}`]);
    }
    caFiles.set(tls.caFile, ca);
  }
  return { ca };
}

function credentials(auth: RedisAuth): Pick<RedisOptions, 'username' | 'password'> {
  return { ...(auth.username ? { username: auth.username } : {}), ...(auth.password ? { password: auth.password } : {}) };
}

function clusterOptions(redisOptions: RedisOptions): ClusterOptions {
  return {
    redisOptions,
    // Commands issued while the slot map is being learned wait for it instead of failing.
    enableOfflineQueue: true,
    enableReadyCheck: true,
    // Retry forever with a capped back-off, as a single connection does; a request connection
    // still fails its commands after maxRetriesPerRequest.
    clusterRetryStrategy: (times: number) => Math.min(100 + times * 200, 2_000),
    // A failover moves slots: follow MOVED/ASK and refresh the map rather than failing the command.
    maxRedirections: 16,
    retryDelayOnFailover: 200,
    retryDelayOnClusterDown: 300,
    retryDelayOnTryAgain: 200,
  };
}

export function isCluster(redis: Redis): boolean {
  return (redis as unknown as { isCluster?: boolean }).isCluster === true;
}

/** A new connection to the same Redis or cluster, with some options changed. */
export function duplicateRedis(redis: Redis, overrides: RedisOptions): Redis {
  if (isCluster(redis)) {
    const cluster = redis as unknown as Cluster;
    return cluster.duplicate([], { redisOptions: { ...cluster.options.redisOptions, ...overrides } }) as unknown as Redis;
  }
  return redis.duplicate(overrides);
}

/**
 * Sends the commands a connection is given during one turn of the event loop in one write(2)
 * rather than one each: the connection's socket is corked at the first command and uncorked once
 * the turn's I/O callbacks have run (setImmediate), so a command waits microseconds at most. Order,
 * replies, errors and the offline queue are ioredis's own, unchanged; only how many system calls
 * carry the bytes changes. A command is never held across an await, so a process killed after a
 * reply was awaited cannot have lost that command.
 *
 * Not ioredis's `enableAutoPipelining`, which batches the same way through a Pipeline per batch:
 * each copies every script defined on the connection (BullMQ defines dozens on the gateway's),
 * and only one batch may be in flight at a time; under load it cost the gateway more CPU per
 * request than this.
 */
export function coalesceWrites(redis: Redis): void {
  // A Cluster client holds one connection per node and makes them as it learns the slot map; they
  // are left as ioredis makes them.
  if (isCluster(redis)) return;
  const wrapped = new WeakSet<object>();
  // ioredis makes a new socket on every (re)connect and emits `connect` for it on the next tick:
  // its ready check may go out uncorked, everything after (the offline queue included) is coalesced.
  redis.on('connect', () => {
    const stream = redis.stream;
    if (wrapped.has(stream)) return;
    wrapped.add(stream);
    const write = stream.write;
    let corked = false;
    const uncork = () => {
      corked = false;
      stream.uncork();
    };
    stream.write = function (this: typeof stream, ...args: Parameters<typeof stream.write>) {
      if (!corked) {
        corked = true;
        stream.cork();
        setImmediate(uncork);
      }
      return write.apply(this, args);
    } as typeof stream.write;
  });
}

/**
 * Sends an emitter's `error` events to the log, at most one line per interval, with a count of
 * what was left out. Also used for BullMQ queues and workers, which re-emit their connection's errors.
 */
export function logRedisErrors(emitter: { on(event: 'error', listener: (err: Error) => void): unknown }, logger: Logger, source: string): void {
  let lastLogged = 0;
  let suppressed = 0;
  emitter.on('error', (err: Error) => {
    const now = Date.now();
    if (now - lastLogged < ERROR_LOG_INTERVAL_MS) {
      suppressed++;
      return;
    }
    logger.warn('redis connection error', { source, error: err.message, suppressed });
    lastLogged = now;
    suppressed = 0;
  });
}

/** Waits until Redis answers or the deadline passes; used by start-up and /readyz. */
export async function pingRedis(redis: Redis, timeoutMs = 1_000): Promise<boolean> {
  return answers(() => redis.ping().then((reply) => reply === 'PONG'), timeoutMs);
}

/**
 * Readiness: whether the store can be reached. On a Cluster a PING goes to any node, which says
 * nothing about the one that serves `{store}` (during a failover the others answer while it cannot
 * be written), so a read of a key in that slot stands in for it. `{store}` holds the accounts that
 * every request needs (API keys, secrets); the workspace shards are not probed: a primary of some
 * shards failing over stalls only those workspaces' calls (503 until its replica takes over),
 * while a pod marked unready would turn every workspace away with them.
 */
export function storeAnswers(redis: Redis, keyPrefix: string, timeoutMs = 1_000): Promise<boolean> {
  if (!isCluster(redis)) return pingRedis(redis, timeoutMs);
  return answers(() => redis.exists(`${storePrefix(keyPrefix)}:readiness`).then(() => true), timeoutMs);
}

async function answers(probe: () => Promise<boolean>, timeoutMs: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      probe(),
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error('timeout')), timeoutMs);
      }),
    ]);
  } catch {
    return false;
  } finally {
    clearTimeout(timer);
  }
}
