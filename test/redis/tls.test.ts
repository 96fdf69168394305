// Redis over TLS, as a managed Redis with in-transit encryption offers it: a Redis that listens
// only on a TLS port, with a certificate from a CA of the test's own. The settings a platform team
// sets (`rediss://` and REDIS_TLS_CA_FILE) reach every connection the services make, and the
// certificate is checked: without the CA the same address is refused.
import { createRedis, loadConfig } from '@media/common';
import { DispatcherHarness } from '../dispatcher/support/harness';
import { TestRedisTls } from '../support/redis-tls';

let tls: TestRedisTls;

beforeAll(async () => {
  tls = await TestRedisTls.start();
}, 30_000);

afterAll(async () => {
  await tls?.destroy();
});

it('connects with rediss:// and the CA file, and refuses a certificate it cannot check', async () => {
  const trusted = createRedis(loadConfig(tls.env).redis, 'request');
  try {
    expect(await trusted.ping()).toBe('PONG');
  } finally {
    trusted.disconnect();
  }
  const untrusted = createRedis(loadConfig({ REDIS_URL: tls.url }).redis, 'request');
  untrusted.on('error', () => undefined);
  try {
    await expect(untrusted.ping()).rejects.toThrow(/certificate|Reached the max retries/);
  } finally {
    untrusted.disconnect();
  }
}, 30_000);

describe('the three services on a TLS-only Redis', () => {
  let h: DispatcherHarness;

  beforeAll(async () => {
    h = await DispatcherHarness.start({}, { redisTls: tls, inProcess: true });
  }, 60_000);

  afterAll(async () => {
    await h?.stop();
  });

  it('accepts, makes and calls back an asynchronous image, and answers a synchronous one (pub/sub)', async () => {
    const id = await h.jobs.image(h.receiver.url('/tls'));
    const { callback } = await h.settled(await h.messageIdOf(id), ['delivered']);
    expect(callback.state).toBe('delivered');
    expect((await h.jobs.get(id)).status).toBe('completed');
    expect(await h.jobs.syncImage()).toMatch(/^req_/);
  }, 60_000);
});
