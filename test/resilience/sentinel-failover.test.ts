// Redis with Sentinels, as a platform team runs it: the services' connections (createRedis with
// REDIS_SENTINELS, and REDIS_PASSWORD for the nodes) find the primary through the Sentinels, write nothing to REDIS_URL's Redis, and
// when the primary is killed go on against the replica the Sentinels promote, a BullMQ worker
// included, without a restart; the old primary comes back as a replica and nothing writes to it.
// A connection follows the Sentinels' announcement of a promotion: off a primary that hangs without
// closing anything, and without ending when the announcement comes while it looks for the primary.
import { Queue, Worker } from 'bullmq';
import { Redis } from 'ioredis';
import { createRedis, loadConfig } from '@media/common';
import { eventually, REDIS_URL } from '../support/stack';
import { TestRedisSentinel } from '../support/redis-sentinel';
import { TcpProxy } from '../support/tcp-proxy';

const prefix = `sentinel-${process.pid}-${Date.now()}`;
let sentinel: TestRedisSentinel;
let redis: Redis;
const closers: (() => Promise<unknown>)[] = [];

beforeAll(async () => {
  sentinel = await TestRedisSentinel.start();
  // REDIS_URL names the shared test Redis on purpose: nothing may be written there.
  const config = loadConfig({ ...sentinel.env, REDIS_URL, KEY_PREFIX: prefix });
  expect(config.redis.kind).toBe('sentinel');
  redis = createRedis(config.redis, 'worker');
  redis.on('error', () => undefined);
}, 60_000);

afterAll(async () => {
  for (const close of closers.reverse()) await close().catch(() => undefined);
  redis?.disconnect();
  await sentinel?.destroy();
});

/** Keys under this test's prefix on one Redis. */
async function keysOn(target: string | Redis): Promise<string[]> {
  const node = typeof target === 'string' ? new Redis(target, { maxRetriesPerRequest: 1 }) : target;
  try {
    return await node.keys(`${prefix}*`);
  } finally {
    node.disconnect();
  }
}

describe('Redis behind Sentinels', () => {
  it('reaches the primary through the Sentinels and writes nothing to REDIS_URL', async () => {
    await redis.set(`${prefix}:hello`, 'world');
    const primary = await sentinel.primaryPort();
    expect(primary).toBe(sentinel.dataPorts[0]);
    expect(await keysOn(sentinel.node(primary))).toEqual([`${prefix}:hello`]);
    expect(await keysOn(REDIS_URL)).toEqual([]);
  });

  it('goes on after the primary is killed: writes within 30 s, the same BullMQ worker consumes, the old primary returns as a replica', async () => {
    const connection = redis;
    const queue = new Queue('failover', { connection, prefix });
    const done = new Set<string>();
    const worker = new Worker('failover', async (job) => void done.add(job.id!), { connection, prefix, concurrency: 4 });
    worker.on('error', () => undefined);
    queue.on('error', () => undefined);
    closers.push(
      () => queue.close(),
      () => worker.close(true),
    );
    const add = async (from: number, count: number) => {
      for (let i = from; i < from + count; i++) await queue.add('job', { i }, { jobId: `j${i}` });
    };
    const allDone = (count: number) => eventually(() => (done.size >= count ? true : undefined), 30_000, `${count} jobs processed`);

    await add(0, 20);
    await allDone(20);

    const old = await sentinel.primaryPort();
    const killedAt = Date.now();
    await sentinel.kill(old);
    // The same connection, retrying: a write goes through once the replica is promoted.
    await redis.set(`${prefix}:after-failover`, '1');
    const outageMs = Date.now() - killedAt;
    // The Sentinel asked may learn of the promotion a moment after the one that made it (hello messages).
    const promoted = await eventually(
      async () => {
        const port = await sentinel.primaryPort();
        return port !== old ? port : undefined;
      },
      10_000,
      'the Sentinel asked to name the promoted replica',
    );
    console.log(`write blocked ${outageMs} ms after the primary's SIGKILL; the Sentinels promoted ${promoted}`);
    expect(outageMs).toBeLessThan(30_000);

    await add(20, 20);
    await allDone(40);

    // The old primary comes back on its port and data; the Sentinels make it a replica. A Sentinel
    // converts a returning primary only once it has reported that role for the failover timeout
    // (5 s here) and its INFO, read every 10 s outside a failover, shows it back: some 15 to 25 s,
    // which a loaded machine stretched past 60 once (a fresh clone's whole suite on two cores).
    await sentinel.launchNode(old);
    await eventually(async () => ((await sentinel.roleOf(old)) === 'slave' ? true : undefined), 120_000, 'the old primary to become a replica', 250);
    await redis.incr(`${prefix}:counter`);
    await add(40, 10);
    await allDone(50);
    expect([...done].sort()).toEqual(Array.from({ length: 50 }, (_, i) => `j${i}`).sort());
    expect(await keysOn(REDIS_URL)).toEqual([]);
    // Closed while the primary answers: a worker closed after the later tests' failovers can be
    // reconnecting its blocking connection, which BullMQ then reconnects after its close, and that
    // one looks for the Sentinels for ever once they are gone (the test run would never end).
    await worker.close();
    await queue.close();
  }, 240_000);
});

describe('waiting for replicas (REDIS_WAIT_REPLICAS)', () => {
  it('holds a write until the replica has it, and goes ahead, counted, when no replica confirms in time or none is in sync', async () => {
    const { ReplicaWait } = await import('@media/storage');
    const short: number[] = [];
    // A replica in sync confirms within milliseconds; the long bound only keeps a loaded machine
    // from reading a slow confirmation as none. The short one is what the second half waits out.
    const patient = new ReplicaWait(1, 5_000, (acknowledged) => short.push(acknowledged));
    const wait = new ReplicaWait(1, 300, (acknowledged) => short.push(acknowledged));
    const primary = await sentinel.primaryPort();
    const replica = sentinel.dataPorts.find((port) => port !== primary)!;
    await eventually(async () => ((await sentinel.replicating(replica)) ? true : undefined), 30_000, 'a replica in sync');
    // In sync as the primary sees it too (`state=online`), which is what the wait asks.
    const onPrimary = sentinel.node(primary);
    await eventually(
      async () => (/state=online/.test(await onPrimary.info('replication')) ? true : undefined),
      30_000,
      'the primary to see its replica online',
    );
    onPrimary.disconnect();
    await redis.set(`${prefix}:waited`, '1');
    await patient.after(redis);
    expect(short).toEqual([]);
    const onReplica = sentinel.node(replica);
    expect(await onReplica.get(`${prefix}:waited`)).toBe('1');
    onReplica.disconnect();

    // The replica hung (its link still up as far as the primary knows): the wait ends at its
    // timeout, and the write stands on the primary.
    sentinel.pause(replica);
    await redis.set(`${prefix}:unconfirmed`, '1');
    const started = Date.now();
    await wait.after(redis);
    expect(Date.now() - started).toBeGreaterThanOrEqual(290);
    expect(short).toEqual([0]);
    expect(await redis.get(`${prefix}:unconfirmed`)).toBe('1');

    // The replica gone: no wait could be confirmed, so once the primary says it has none in sync
    // (asked at most a second apart), a write goes ahead at once, counted.
    sentinel.resume(replica);
    await sentinel.kill(replica);
    await eventually(
      async () => {
        short.length = 0;
        await redis.set(`${prefix}:alone`, '1');
        const began = Date.now();
        await wait.after(redis);
        return Date.now() - began < 290 && short.length === 1 && short[0] === 0 ? true : undefined;
      },
      10_000,
      'a write to go ahead at once while no replica is in sync',
    );
    expect(await redis.get(`${prefix}:alone`)).toBe('1');
    await sentinel.launchNode(replica);
  }, 60_000);
});

describe('a promotion announced while a connection asks the Sentinels for the primary', () => {
  it('looks again instead of ending the connection', async () => {
    // Every way to the Sentinels goes through a proxy that can hold new connections, so the lookup
    // a reconnect makes is still in flight when the Sentinels announce the promotion.
    const proxies = await Promise.all(sentinel.sentinelPorts.map((port) => TcpProxy.start(port)));
    const announced = new Set<number>();
    const listeners = sentinel.sentinelPorts.map((port) => {
      const listener = new Redis(port, '127.0.0.1', { maxRetriesPerRequest: null });
      listener.on('error', () => undefined);
      listener.on('message', () => announced.add(port));
      return listener;
    });
    const sentinels = proxies.map((proxy) => `127.0.0.1:${proxy.port}`).join(',');
    const client = createRedis(loadConfig({ ...sentinel.env, REDIS_SENTINELS: sentinels, REDIS_URL, KEY_PREFIX: prefix }).redis, 'worker');
    client.on('error', () => undefined);
    closers.push(async () => {
      client.disconnect();
      for (const listener of listeners) listener.disconnect();
      await Promise.all(proxies.map((proxy) => proxy.close()));
    });
    try {
      await Promise.all(listeners.map((listener) => listener.subscribe('+switch-master')));
      const old = await sentinel.primaryPort();
      const replica = sentinel.dataPorts.find((port) => port !== old)!;
      await eventually(async () => ((await sentinel.replicating(replica)) ? true : undefined), 30_000, 'a replica in sync');
      await client.set(`${prefix}:before-promotion`, '1');
      // The connection's subscriptions to the Sentinels' announcements are made (one through each proxy).
      await eventually(
        async () => {
          const subscribed = await Promise.all(
            sentinel.sentinelPorts.map(async (port) => {
              const probe = new Redis(port, '127.0.0.1', { maxRetriesPerRequest: 1 });
              try {
                const clients = (await probe.call('CLIENT', 'LIST')) as string;
                return clients.split('\n').filter((line) => / sub=[1-9]/.test(line)).length >= 2;
              } finally {
                probe.disconnect();
              }
            }),
          );
          return subscribed.every(Boolean) ? true : undefined;
        },
        10_000,
        "the connection's subscriptions on every Sentinel",
      );

      for (const proxy of proxies) proxy.hold();
      await sentinel.kill(old);
      await eventually(() => (proxies.some((proxy) => proxy.heldConnections > 0) ? true : undefined), 10_000, 'the reconnect to ask a Sentinel');
      await eventually(() => (announced.size === sentinel.sentinelPorts.length ? true : undefined), 30_000, 'every Sentinel to announce the promotion');
      // The announcements reach the connection's subscriptions (made before the hold) at once.
      await new Promise((r) => setTimeout(r, 200));
      for (const proxy of proxies) proxy.release();

      await client.set(`${prefix}:after-promotion`, '1');
      expect(client.status).toBe('ready');
      expect(await sentinel.primaryPort()).toBe(replica);
      // Back as the promoted node's replica at once, for the next test's failover.
      await sentinel.launchNode(old, replica);
    } finally {
      for (const proxy of proxies) proxy.release();
    }
  }, 90_000);
});

describe('a primary that hangs without closing its connections', () => {
  it('is left for the replica the Sentinels promote, when they announce it', async () => {
    const client = createRedis(loadConfig({ ...sentinel.env, REDIS_URL, KEY_PREFIX: prefix }).redis, 'worker');
    client.on('error', () => undefined);
    closers.push(async () => client.disconnect());
    const old = await sentinel.primaryPort();
    const replica = sentinel.dataPorts.find((port) => port !== old)!;
    await eventually(async () => ((await sentinel.replicating(replica)) ? true : undefined), 30_000, 'a replica in sync');
    await client.set(`${prefix}:before-hang`, '1');
    // Nothing closes the connection: only the Sentinels' announcement can tell the client to leave.
    sentinel.pause(old);
    try {
      const started = Date.now();
      await client.set(`${prefix}:after-hang`, '1');
      console.log(`write answered ${Date.now() - started} ms after the primary hung`);
      // The write may be answered by the promoted replica before every Sentinel names it: the
      // client follows the failover's leader from the promotion on.
      await eventually(async () => ((await sentinel.primaryPort()) === replica ? true : undefined), 30_000, 'the Sentinels to name the promoted replica');
      const promoted = sentinel.node(replica);
      expect(await promoted.get(`${prefix}:after-hang`)).toBe('1');
      promoted.disconnect();
    } finally {
      // The last test here: the Sentinels make it a replica in time, which the first kill test shows.
      sentinel.resume(old);
    }
  }, 60_000);
});
