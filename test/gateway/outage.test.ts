import { expectApiError } from '../support/http';
import { PrivateRedis } from '../support/private-redis';
import { api, eventually, TestStack, type TestWorkspace } from '../support/stack';

/**
 * Design section 2, "Dependency outage": while Redis is unreachable the gateway answers 503
 * `service_unavailable` with `Retry-After`, never a 500; it starts without Redis and stays up.
 * The gateway runs on a private redis-server that the test starts and stops.
 */
let redis: PrivateRedis;
let stack: TestStack;
let ws: TestWorkspace | undefined;
let redisUp = false;

async function startRedis(): Promise<void> {
  await redis.launch();
  redisUp = true;
}

async function stopRedis(): Promise<void> {
  await redis.stop();
  redisUp = false;
}

beforeAll(async () => {
  // Launched once to reserve its port and directory, then stopped: the gateway starts with no Redis.
  redis = await PrivateRedis.start();
  await stopRedis();
  stack = await TestStack.start(['api-gateway'], { REDIS_URL: redis.url });
});

afterAll(async () => {
  // The stack's clean-up deletes its keys, so Redis must be up for it.
  if (redis && !redisUp) await startRedis();
  await stack?.stop();
  await redis?.destroy();
});

const get = (path: string) => fetch(`${stack.baseUrl}${path}`);
const video = { prompt: 'outage', seconds: 1, size: '640x360' };

async function expectUnavailable(res: Awaited<ReturnType<ReturnType<typeof api>>>): Promise<void> {
  expectApiError(res, 503, { type: 'api_error', code: 'service_unavailable', param: null });
  const retryAfter = Number(res.headers.get('retry-after'));
  expect(retryAfter).toBeGreaterThanOrEqual(1);
  expect(retryAfter).toBeLessThanOrEqual(60);
}

it('starts without Redis: alive, not ready, and 503 with Retry-After for the API', async () => {
  expect(stack.service('api-gateway').hasLog((l) => l.message === 'api-gateway listening' && l.ready === false)).toBe(true);
  expect((await get('/healthz')).status).toBe(200);
  expect((await get('/readyz')).status).toBe(503);
  const call = api(stack, 'sk_any');
  await expectUnavailable(await call('/v1/videos', { method: 'POST', json: video }));
  await expectUnavailable(await call('/v1/videos'));
  await expectUnavailable(await call('/v1/images/generations', { method: 'POST', json: { prompt: 'x' } }));
});

it('serves the OpenAPI document without Redis: it needs none', async () => {
  const res = await get('/v1/openapi.json');
  expect(res.status).toBe(200);
  expect(((await res.json()) as { openapi: string }).openapi).toMatch(/^3\.1\./);
});

it('becomes fully functional once Redis appears', async () => {
  await startRedis();
  ws = await stack.createWorkspace('outage');
  await eventually(async () => ((await get('/readyz')).status === 200 ? true : undefined), 15_000, 'the gateway to become ready');
  const call = api(stack, ws.apiKey);
  const created = await eventually(
    async () => {
      const res = await call('/v1/videos', { method: 'POST', json: video });
      return res.status === 200 ? res : undefined;
    },
    15_000,
    'a creation call to succeed',
  );
  expect(created.json.status).toBe('queued');
  expect((await call(`/v1/videos/${created.json.id}`)).status).toBe(200);
  expect(stack.service('api-gateway').hasLog((l) => l.message === 'api-gateway ready')).toBe(true);
});

it('answers 503 again while Redis is down, stays alive, and recovers when it is back', async () => {
  const call = api(stack, ws!.apiKey);
  await stopRedis();
  const started = Date.now();
  await expectUnavailable(await call('/v1/videos', { method: 'POST', json: video }));
  // At once, not after ioredis's retries: the client is told to come back rather than kept waiting.
  expect(Date.now() - started).toBeLessThan(2_000);
  await expectUnavailable(await call('/v1/videos'));
  expect((await get('/readyz')).status).toBe(503);
  expect((await get('/healthz')).status).toBe(200);

  // Long enough for ioredis to fail a dozen reconnects.
  await new Promise((r) => setTimeout(r, 3_000));
  expect((await get('/healthz')).status).toBe(200);

  await startRedis();
  const res = await eventually(
    async () => {
      const attempt = await call('/v1/videos', { method: 'POST', json: video });
      return attempt.status === 200 ? attempt : undefined;
    },
    15_000,
    'creation calls to succeed again',
  );
  expect(res.json.object).toBe('video');
});

it('logged through the JSON logger only, with connection errors throttled', async () => {
  const gateway = stack.service('api-gateway');
  expect((await get('/healthz')).status).toBe(200);
  expect(gateway.lines.filter((l) => l.service !== 'api-gateway' || typeof l.level !== 'string')).toEqual([]);
  expect(gateway.stderr).toBe('');
  const errors = gateway.lines.filter((l) => l.message === 'redis connection error');
  expect(errors.length).toBeGreaterThan(0);
  // ioredis reports every failed reconnect (dozens here); the log keeps a few per connection.
  expect(errors.length).toBeLessThanOrEqual(10);
  expect(gateway.lines.filter((l) => l.message === 'request' && l.status === 500)).toEqual([]);
});
