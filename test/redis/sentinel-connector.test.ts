// How a connection behind Sentinels follows a promotion, with the Sentinels played by the test
// (FakeSentinel) so that what real ones do only now and then happens every time: a Sentinel that
// has not heard of a promotion yet and still names the old primary, and the steps of a failover
// one by one. The two "primaries" are real redis-servers; a write shows which one a client is on.
import { Redis } from 'ioredis';
import { FollowingSentinelConnector, sentinelPlacement, StoreReachability } from '@media/common';
import { eventually } from '../support/basics';
import { FakeSentinel } from '../support/fake-sentinel';
import { capturingLogger } from '../support/log-capture';
import { PrivateRedis } from '../support/private-redis';

const NAME = 'media-primary';

let old: PrivateRedis;
let next: PrivateRedis;
let stale: FakeSentinel;
let current: FakeSentinel;
let client: Redis;
const readers: Redis[] = [];

const address = (redis: PrivateRedis) => ({ host: '127.0.0.1', port: redis.port });
const at = (redis: PrivateRedis) => `127.0.0.1:${redis.port}`;
const reader = (redis: PrivateRedis) => {
  const r = new Redis(redis.url, { maxRetriesPerRequest: 1 });
  readers.push(r);
  return r;
};

beforeAll(async () => {
  [old, next] = await Promise.all([PrivateRedis.start(), PrivateRedis.start()]);
});

afterAll(async () => {
  await Promise.all([old?.destroy(), next?.destroy()]);
});

beforeEach(async () => {
  stale = await FakeSentinel.start(address(old));
  current = await FakeSentinel.start(address(old));
  // The stale Sentinel first: it answers the first lookup, so ioredis asks it first from then on.
  client = new Redis({
    sentinels: [
      { host: '127.0.0.1', port: stale.port },
      { host: '127.0.0.1', port: current.port },
    ],
    name: NAME,
    maxRetriesPerRequest: null,
    Connector: FollowingSentinelConnector,
  });
  client.on('error', () => undefined);
  await client.set('where', 'first');
  expect(sentinelPlacement(client)).toEqual({ connectedTo: at(old), named: at(old) });
});

afterEach(async () => {
  client.disconnect();
  for (const r of readers.splice(0)) r.disconnect();
  await Promise.all([stale.close(), current.close()]);
  // The last test kills `next`; nothing runs after it.
  await Promise.all(
    [old, next].map((node) =>
      reader(node)
        .flushall()
        .catch(() => undefined),
    ),
  );
});

it('follows an announced promotion past a Sentinel that still names the old primary', async () => {
  current.primary = address(next);
  current.publish('+switch-master', `${NAME} 127.0.0.1 ${old.port} 127.0.0.1 ${next.port}`);
  await eventually(async () => (sentinelPlacement(client)?.connectedTo === at(next) ? true : undefined), 10_000, 'the client on the promoted node');
  await client.set('where', 'after');
  // The old primary is alive and would have taken the write: it must not have it.
  expect(await reader(next).get('where')).toBe('after');
  expect(await reader(old).get('where')).toBe('first');
  expect(sentinelPlacement(client)).toEqual({ connectedTo: at(next), named: at(next) });
});

it('keeps writes off the old primary from the moment a replica is picked until it is promoted, then writes to it', async () => {
  current.publish('+selected-slave', `slave ${at(next)} 127.0.0.1 ${next.port} @ ${NAME} 127.0.0.1 ${old.port}`);
  await eventually(async () => (client.status !== 'ready' ? true : undefined), 10_000, 'the client to leave the old primary');
  const write = client.set('where', 'during');
  // Both Sentinels still name the old primary, as they do until the promotion is announced.
  current.publish('+promoted-slave', `slave ${at(next)} 127.0.0.1 ${next.port} @ ${NAME} 127.0.0.1 ${old.port}`);
  await write;
  expect(await reader(next).get('where')).toBe('during');
  expect(await reader(old).get('where')).toBe('first');
});

it('looks again when the replica is promoted while it asks a slow Sentinel, which names the old primary', async () => {
  stale.lookupDelayMs = 500;
  // The connection drops (a network blip): its lookup starts at the slow Sentinel.
  const looked = stale.lookups;
  client.stream.destroy();
  await eventually(async () => (stale.lookups > looked ? true : undefined), 5_000, 'the lookup to reach the slow Sentinel');
  current.publish('+selected-slave', `slave ${at(next)} 127.0.0.1 ${next.port} @ ${NAME} 127.0.0.1 ${old.port}`);
  current.publish('+promoted-slave', `slave ${at(next)} 127.0.0.1 ${next.port} @ ${NAME} 127.0.0.1 ${old.port}`);
  await client.set('where', 'promoted');
  expect(await reader(next).get('where')).toBe('promoted');
  expect(await reader(old).get('where')).toBe('first');
  expect(sentinelPlacement(client)).toEqual({ connectedTo: at(next), named: at(next) });
});

it('goes back to the primary it had when the failover is given up', async () => {
  current.publish('+selected-slave', `slave ${at(next)} 127.0.0.1 ${next.port} @ ${NAME} 127.0.0.1 ${old.port}`);
  await eventually(async () => (client.status !== 'ready' ? true : undefined), 10_000, 'the client to leave the old primary');
  const write = client.set('where', 'kept');
  current.publish('-failover-abort-no-good-slave', `master ${NAME} 127.0.0.1 ${old.port}`);
  await write;
  expect(await reader(old).get('where')).toBe('kept');
});

it('is not ready while the primary the Sentinels name does not answer, and says once which node it tries and which they name', async () => {
  const logs = capturingLogger('test');
  const reachability = new StoreReachability(client, 'prefix', logs.logger, 0);
  expect(await reachability.check()).toEqual({ ready: true, status: 'ready' });
  // The node promoted is down too: the client can reach neither.
  await next.kill();
  current.primary = address(next);
  stale.primary = address(next);
  current.publish('+switch-master', `${NAME} 127.0.0.1 ${old.port} 127.0.0.1 ${next.port}`);
  const answer = await eventually(
    async () => {
      const readiness = await reachability.check();
      return readiness.ready ? undefined : readiness;
    },
    10_000,
    'readiness to fail',
  );
  // It left the old primary (alive) at the announcement and tries the promoted one.
  expect(answer).toMatchObject({ ready: false, status: 'redis unreachable', redis: { connected_to: at(next), sentinels_name: at(next) } });
  await reachability.check();
  const said = await eventually(
    async () => {
      const lines = logs.lines.filter((l) => String(l.message).startsWith('redis primary unreachable'));
      return lines.length > 0 ? lines : undefined;
    },
    5_000,
    'the line that says so',
  );
  expect(said).toEqual([expect.objectContaining({ level: 'error', connected_to: at(next), sentinels_name: at(next) })]);
});
