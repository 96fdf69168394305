import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { EndpointRepository } from './endpoint-store';
import { parseEndpointInput, presentWebhookEndpoint } from './endpoints';
import { allKeys } from '../../../test/support/store-keys';

const redis = new Redis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379');
const keys = allKeys(`test-${randomBytes(6).toString('hex')}`);
const store = new EndpointRepository(redis, keys, 3);
const fields = { url: 'https://h.test/x', events: ['image.completed' as const], description: 'd', enabled: true };

afterAll(async () => {
  const found = (await Promise.all(keys.patterns.map((pattern) => redis.keys(pattern)))).flat();
  if (found.length > 0) await redis.del(...found);
  redis.disconnect();
});

const newWorkspace = () => `ws_${randomBytes(6).toString('hex')}`;

describe('EndpointRepository', () => {
  it('holds a workspace to its most endpoints, also when they are created at once', async () => {
    const ws = newWorkspace();
    const made = await Promise.all(Array.from({ length: 8 }, () => store.create(ws, fields, 1_000)));
    expect(made.filter((e) => e !== undefined)).toHaveLength(3);
    expect(await store.list(ws)).toHaveLength(3);
    expect(await store.list(newWorkspace())).toEqual([]);
  });

  it('changes only the fields given, and nothing for an endpoint that is not there', async () => {
    const ws = newWorkspace();
    const endpoint = (await store.create(ws, fields, 1_000))!;
    const changed = await store.update(ws, endpoint.id, { description: 'new', failing_since_ms: null }, 2_000);
    expect(changed).toEqual({ ...endpoint, description: 'new', updated_ms: 2_000 });
    expect(await store.get(ws, endpoint.id)).toEqual(changed);
    expect(await store.update(ws, 'we_missing', { description: 'x' }, 2_000)).toBeUndefined();
    expect(await store.update(newWorkspace(), endpoint.id, { description: 'x' }, 2_000)).toBeUndefined();
  });

  it('disables an endpoint once every attempt has failed for the time given, and a delivered attempt starts that over', async () => {
    const ws = newWorkspace();
    const endpoint = (await store.create(ws, fields, 0))!;
    const failed = (atMs: number) => store.noteOutcome(ws, endpoint.id, { delivered: false, atMs, error: `timeout at ${atMs}` }, 1_000);
    expect(await failed(100)).toBeUndefined();
    expect(await store.get(ws, endpoint.id)).toMatchObject({ enabled: true, failing_since_ms: 100, last_error: 'timeout at 100', last_error_ms: 100 });
    // Delivered once: the failing stretch ends, the last error stays for the record.
    expect(await store.noteOutcome(ws, endpoint.id, { delivered: true, atMs: 900, error: '' }, 1_000)).toBeUndefined();
    expect(await store.get(ws, endpoint.id)).toMatchObject({ enabled: true, failing_since_ms: null, last_error: 'timeout at 100' });
    expect(await failed(1_000)).toBeUndefined();
    expect(await failed(1_999)).toBeUndefined();
    const disabled = await failed(2_000);
    expect(disabled).toMatchObject({ enabled: false, disabled_reason: 'failing', failing_since_ms: 1_000, last_error: 'timeout at 2000', updated_ms: 2_000 });
    // Disabled already: later failures are noted and disable nothing again.
    expect(await failed(3_000)).toBeUndefined();
    expect(presentWebhookEndpoint((await store.get(ws, endpoint.id))!)).toMatchObject({
      enabled: false,
      disabled_reason: 'failing',
      failing_since: 1,
      last_error: { message: 'timeout at 3000', at: 3 },
    });
    // An endpoint deleted while its callbacks still run: nothing to note.
    expect(await store.delete(ws, endpoint.id)).toBe(true);
    expect(await failed(4_000)).toBeUndefined();
    expect(await store.get(ws, endpoint.id)).toBeUndefined();
  });
});

describe('parseEndpointInput', () => {
  it('fills the defaults of a creation and puts events in the catalogue order, once each', () => {
    expect(parseEndpointInput({ url: 'https://h.test/x' }, 'create')).toEqual({
      url: 'https://h.test/x',
      events: ['video.completed', 'video.failed', 'image.completed', 'image.failed'],
      description: '',
    });
    expect(parseEndpointInput({ events: ['image.failed', 'video.completed', 'image.failed'] }, 'update')).toEqual({
      events: ['video.completed', 'image.failed'],
    });
    expect(parseEndpointInput({}, 'update')).toEqual({});
  });

  it.each([
    [[], 'body'],
    [{ url: 'https://h.test/x', events: ['video.started'] }, 'events'],
    [{ url: 'https://h.test/x', events: [] }, 'events'],
    [{ url: 'https://h.test/x', events: [1] }, 'events'],
    [{ url: 42 }, 'url'],
    [{ url: `https://h.test/${'x'.repeat(2048)}` }, 'url'],
    [{}, 'url'],
    [{ url: 'https://h.test/x', enabled: 1 }, 'enabled'],
    [{ url: 'https://h.test/x', description: null }, 'description'],
    [{ url: 'https://h.test/x', signing_secret: 'whsec_x' }, 'signing_secret'],
  ])('refuses %j, naming %s', (body, param) => {
    expect(() => parseEndpointInput(body, 'create')).toThrow(expect.objectContaining({ name: 'EndpointInputError', param }));
  });
});
