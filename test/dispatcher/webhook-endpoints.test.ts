// Workspace webhook endpoints end to end: the real gateway, generator and dispatcher (in-process),
// real Redis and a real HTTPS receiver on loopback. The API's routes and refusals, fan-out to every
// subscribed endpoint beside a request's own callback_url, unmodified openai SDK code getting its
// `video.completed`, an endpoint turned off mid-ladder, and the automatic disabling of one whose
// every attempt fails, each change in the workspace's audit.
import OpenAI from 'openai';
import { Webhook } from 'standardwebhooks';
import { callbackIdFor } from '@media/domain';
import { expectApiError } from '../support/http';
import { api, eventually, type TestWorkspace } from '../support/stack';
import { DispatcherHarness } from './support/harness';

let h: DispatcherHarness;
let call: ReturnType<typeof api>;
/** Every endpoint a test makes is deleted after it, so that each test sees only its own deliveries. */
const made: string[] = [];

/** How long every attempt to an endpoint may fail before it is disabled: long enough for the ladder's first steps, short enough for a test. */
const DISABLE_AFTER_S = 2;

beforeAll(async () => {
  h = await DispatcherHarness.start(
    { WEBHOOK_RETRY_SCHEDULE: '300ms,600ms,900ms,1200ms,1500ms', WEBHOOK_TIMEOUT_MS: '5000', WEBHOOK_ENDPOINT_DISABLE_AFTER: `${DISABLE_AFTER_S}s` },
    { inProcess: true },
  );
  call = api(h.stack, h.workspace.apiKey);
});

afterEach(async () => {
  while (made.length > 0) await call(`/v1/webhook-endpoints/${made.pop()}`, { method: 'DELETE' });
});

afterAll(async () => {
  await h?.stop();
});

async function createEndpoint(body: Record<string, unknown>, client = call): Promise<any> {
  const res = await client('/v1/webhook-endpoints', { method: 'POST', json: body });
  if (res.status !== 201) throw new Error(`endpoint creation answered ${res.status}: ${res.text}`);
  made.push(res.json.id);
  return res.json;
}

/** The requests that reached `path`, once there are `count`. */
function received(path: string, count = 1, timeoutMs = 30_000) {
  return eventually(
    () => {
      const got = h.receiver.requestsTo(path);
      return got.length >= count ? got : undefined;
    },
    timeoutMs,
    `${count} request(s) to ${path}`,
  );
}

async function auditActions(): Promise<any[]> {
  const res = await call('/v1/audit-events?limit=100');
  expect(res.status).toBe(200);
  return res.json.data;
}

describe('the /v1/webhook-endpoints API', () => {
  it('creates, lists, reads, changes and deletes an endpoint, each change in the audit with the API key and no secret', async () => {
    const created = await createEndpoint({ url: h.receiver.url('/crud'), description: 'Orders <b>service</b>' });
    expect(created).toEqual({
      object: 'webhook_endpoint',
      id: expect.stringMatching(/^we_[0-9a-z]{25}$/),
      url: h.receiver.url('/crud'),
      events: ['video.completed', 'video.failed', 'image.completed', 'image.failed'],
      description: 'Orders <b>service</b>',
      enabled: true,
      disabled_reason: null,
      created_at: expect.any(Number),
      updated_at: expect.any(Number),
      failing_since: null,
      last_error: null,
    });
    expect((await call('/v1/webhook-endpoints')).json).toMatchObject({ object: 'list', data: [created], has_more: false });
    expect((await call(`/v1/webhook-endpoints/${created.id}`)).json).toEqual(created);

    const changed = await call(`/v1/webhook-endpoints/${created.id}`, { method: 'PATCH', json: { events: ['image.failed', 'video.completed'] } });
    expect(changed.status).toBe(200);
    // In the catalogue's order, whatever order they were given in.
    expect(changed.json).toMatchObject({ events: ['video.completed', 'image.failed'], enabled: true });
    const off = await call(`/v1/webhook-endpoints/${created.id}`, { method: 'PATCH', json: { enabled: false } });
    expect(off.json).toMatchObject({ enabled: false, disabled_reason: 'manual' });
    const on = await call(`/v1/webhook-endpoints/${created.id}`, { method: 'PATCH', json: { enabled: true } });
    expect(on.json).toMatchObject({ enabled: true, disabled_reason: null });

    const deleted = await call(`/v1/webhook-endpoints/${created.id}`, { method: 'DELETE' });
    expect(deleted.json).toEqual({ object: 'webhook_endpoint.deleted', id: created.id, deleted: true });
    made.splice(made.indexOf(created.id), 1);
    expectApiError(await call(`/v1/webhook-endpoints/${created.id}`), 404, { type: 'not_found_error', code: 'not_found' });

    const keyId = (await h.stack.accounts.apiKeys(h.workspace.workspaceId))[0]!.id;
    const events = (await auditActions()).filter((e) => e.target.id === created.id);
    expect(events.map((e) => e.action)).toEqual([
      'webhook_endpoint.deleted',
      'webhook_endpoint.enabled',
      'webhook_endpoint.disabled',
      'webhook_endpoint.updated',
      'webhook_endpoint.created',
    ]);
    for (const event of events) expect(event.actor).toEqual({ type: 'api_key', id: keyId });
    expect(events.find((e) => e.action === 'webhook_endpoint.updated').target).toMatchObject({ changed: ['events'] });
    const text = JSON.stringify(events);
    for (const secret of [h.workspace.apiKey, h.workspace.signingSecret]) expect(text).not.toContain(secret);
  });

  it('refuses bad input with a 400 in the error shape: unknown or no events, a refused URL, an unknown field, an 11th endpoint', async () => {
    const refusals: [Record<string, unknown>, string, string][] = [
      [{ url: h.receiver.url('/x'), events: ['video.started'] }, 'events', 'invalid_value'],
      [{ url: h.receiver.url('/x'), events: [] }, 'events', 'invalid_value'],
      [{ url: h.receiver.url('/x'), events: 'video.completed' }, 'events', 'invalid_value'],
      [{ url: 'http://127.0.0.1/hook' }, 'url', 'invalid_callback_url'],
      [{ url: 'https://10.1.2.3/hook' }, 'url', 'invalid_callback_url'],
      [{ url: 'not a url' }, 'url', 'invalid_callback_url'],
      [{ events: ['image.completed'] }, 'url', 'missing_required_parameter'],
      [{ url: h.receiver.url('/x'), secret: 'mine' }, 'secret', 'unknown_parameter'],
      [{ url: h.receiver.url('/x'), enabled: 'yes' }, 'enabled', 'invalid_value'],
      [{ url: h.receiver.url('/x'), description: 'd'.repeat(501) }, 'description', 'invalid_value'],
    ];
    for (const [body, param, code] of refusals) {
      expectApiError(await call('/v1/webhook-endpoints', { method: 'POST', json: body }), 400, { type: 'invalid_request_error', param, code });
    }
    const notJson = await call('/v1/webhook-endpoints', { method: 'POST', body: 'url=x', headers: { 'content-type': 'application/x-www-form-urlencoded' } });
    expectApiError(notJson, 415, { code: 'unsupported_media_type' });

    for (let i = 0; i < 10; i++) await createEndpoint({ url: h.receiver.url(`/many/${i}`), events: ['image.failed'] });
    expectApiError(await call('/v1/webhook-endpoints', { method: 'POST', json: { url: h.receiver.url('/eleventh') } }), 400, {
      code: 'endpoint_limit_reached',
    });
    const first = made[0]!;
    expectApiError(await call(`/v1/webhook-endpoints/${first}`, { method: 'PATCH', json: { url: 'https://192.168.0.1/x' } }), 400, {
      param: 'url',
      code: 'invalid_callback_url',
    });
    expectApiError(await call(`/v1/webhook-endpoints/${first}`, { method: 'PATCH', json: { events: ['nope'] } }), 400, { param: 'events' });
    expectApiError(await call(`/v1/webhook-endpoints/${first}/test`, { method: 'POST', json: { type: 'nope' } }), 400, { param: 'type' });
    expect((await call('/v1/webhook-endpoints')).json.data).toHaveLength(10);
  });

  it("another workspace's endpoint answers like a missing one, and its endpoints are not listed", async () => {
    const mine = await createEndpoint({ url: h.receiver.url('/mine') });
    const other: TestWorkspace = await h.stack.createWorkspace('endpoints-other');
    const theirs = api(h.stack, other.apiKey);
    expect((await theirs('/v1/webhook-endpoints')).json.data).toEqual([]);
    for (const [method, path] of [
      ['GET', ''],
      ['PATCH', ''],
      ['DELETE', ''],
      ['POST', '/test'],
    ] as const) {
      const res = await theirs(`/v1/webhook-endpoints/${mine.id}${path}`, { method, ...(method === 'PATCH' ? { json: { enabled: false } } : {}) });
      expectApiError(res, 404, { code: 'not_found' });
    }
    expect((await call(`/v1/webhook-endpoints/${mine.id}`)).json).toMatchObject({ enabled: true });
  });

  it('sends a signed test event of the type asked for and returns what the receiver answered', async () => {
    h.receiver.script('/test-event', () => ({ status: 202, body: 'thanks' }));
    const endpoint = await createEndpoint({ url: h.receiver.url('/test-event'), events: ['video.failed', 'image.completed'] });
    const res = await call(`/v1/webhook-endpoints/${endpoint.id}/test`, { method: 'POST' });
    expect(res.status).toBe(200);
    expect(res.json).toMatchObject({ object: 'webhook_endpoint.test', type: 'video.failed', delivered: true, status_code: 202, response_excerpt: 'thanks' });
    const asked = await call(`/v1/webhook-endpoints/${endpoint.id}/test`, { method: 'POST', json: { type: 'image.completed' } });
    expect(asked.json).toMatchObject({ type: 'image.completed', delivered: true });
    const [first, second] = await received('/test-event', 2);
    const verified = [first!, second!].map((r) => new Webhook(h.workspace.signingSecret).verify(r.body, r.headers) as any);
    expect(verified.map((e) => e.type)).toEqual(['video.failed', 'image.completed']);
    expect(verified[0].data).toMatchObject({ object: 'video', status: 'failed' });
    expect(first!.headers['webhook-id']).toBe(res.json.webhook_id);
  });
});

describe('delivery to endpoints', () => {
  it('sends a job’s end to every subscribed endpoint and to its callback_url: three callbacks, three ids, each verified', async () => {
    const all = await createEndpoint({ url: h.receiver.url('/fan/all') });
    const images = await createEndpoint({ url: h.receiver.url('/fan/images'), events: ['image.completed'] });
    const videos = await createEndpoint({ url: h.receiver.url('/fan/videos'), events: ['video.completed'] });
    const jobId = await h.jobs.image(h.receiver.url('/fan/own'), 'a kite over fields');

    const requests = await Promise.all(['/fan/own', '/fan/all', '/fan/images'].map(async (path) => (await received(path))[0]!));
    const ids = requests.map((r) => r.headers['webhook-id']);
    expect(new Set(ids).size).toBe(3);
    expect(ids).toEqual([
      callbackIdFor(jobId, 'image.completed'),
      callbackIdFor(jobId, 'image.completed', all.id),
      callbackIdFor(jobId, 'image.completed', images.id),
    ]);
    const bodies = requests.map((r) => new Webhook(h.workspace.signingSecret).verify(r.body, r.headers) as any);
    for (const body of bodies) expect(body).toMatchObject({ type: 'image.completed', data: { id: jobId, status: 'completed' } });

    // Each is a callback of its own in the API, with its endpoint.
    const ofJob = await call(`/v1/callbacks?job_id=${jobId}`);
    expect(ofJob.json.data.map((cb: any) => [cb.id, cb.endpoint_id]).sort()).toEqual(
      [
        [ids[0], null],
        [ids[1], all.id],
        [ids[2], images.id],
      ].sort(),
    );
    const ofEndpoint = await call(`/v1/callbacks?endpoint_id=${images.id}`);
    expect(ofEndpoint.json.data).toEqual([expect.objectContaining({ id: ids[2], endpoint_id: images.id, url: images.url })]);
    expect((await call(`/v1/callbacks/${ids[1]}`)).json).toMatchObject({
      endpoint_id: all.id,
      status: 'delivered',
      attempts: [expect.objectContaining({ status_code: 200 })],
    });

    // The endpoint for videos only got nothing, and a replayed event makes no second callback.
    await h.deliveriesSettled();
    expect(h.receiver.requestsTo('/fan/videos')).toEqual([]);
    expect((await call(`/v1/callbacks?endpoint_id=${videos.id}`)).json.data).toEqual([]);
    for (const path of ['/fan/own', '/fan/all', '/fan/images']) expect(h.receiver.requestsTo(path)).toHaveLength(1);
  });

  it('gives unmodified openai SDK code its video.completed at an endpoint, which webhooks.unwrap accepts; an image-only endpoint gets nothing', async () => {
    const videos = await createEndpoint({ url: h.receiver.url('/sdk/videos'), events: ['video.completed'] });
    await createEndpoint({ url: h.receiver.url('/sdk/images'), events: ['image.completed', 'image.failed'] });
    const client = new OpenAI({ apiKey: h.workspace.apiKey, baseURL: `${h.stack.baseUrl}/v1`, maxRetries: 0 });
    const video = await client.videos.create({ model: 'motion-1' as never, prompt: 'a harbour at dawn', seconds: '1' as never, size: '640x360' as never });

    const [request] = await received('/sdk/videos');
    const event = await new OpenAI({ apiKey: 'unused', webhookSecret: h.workspace.signingSecret }).webhooks.unwrap(request!.body, request!.headers);
    expect(event).toMatchObject({ type: 'video.completed', data: { id: video.id, object: 'video', status: 'completed' } });
    expect(request!.headers['webhook-id']).toBe(callbackIdFor(video.id, 'video.completed', videos.id));
    // A wrong secret is refused by the same SDK.
    await expect(
      new OpenAI({ apiKey: 'unused', webhookSecret: 'whsec_' + Buffer.from('x'.repeat(32)).toString('base64') }).webhooks.unwrap(
        request!.body,
        request!.headers,
      ),
    ).rejects.toThrow();

    await h.deliveriesSettled();
    expect(h.receiver.requestsTo('/sdk/images')).toEqual([]);
  });

  it('removes a job’s endpoint callbacks with the job', async () => {
    const endpoint = await createEndpoint({ url: h.receiver.url('/removed-with-job'), events: ['video.completed'] });
    const video = await call('/v1/videos', { method: 'POST', json: { model: 'motion-1', prompt: 'soon gone', seconds: 1, size: '640x360' } });
    const messageId = callbackIdFor(video.json.id, 'video.completed', endpoint.id);
    await h.settled(messageId, ['delivered']);
    expect((await call(`/v1/videos/${video.json.id}`, { method: 'DELETE' })).status).toBe(200);
    expectApiError(await call(`/v1/callbacks/${messageId}`), 404, { code: 'not_found' });
    expect((await call(`/v1/callbacks?endpoint_id=${endpoint.id}`)).json.data).toEqual([]);
    expect(await h.stack.redis.exists(h.stack.keys.jobFanOutCallbacks(video.json.id))).toBe(0);
  });

  it('sends a synchronous image call’s event to subscribed endpoints', async () => {
    const endpoint = await createEndpoint({ url: h.receiver.url('/sync'), events: ['image.completed'] });
    const requestId = await h.jobs.syncImage('a quiet pier');
    const [request] = await received('/sync');
    expect(new Webhook(h.workspace.signingSecret).verify(request!.body, request!.headers)).toMatchObject({ type: 'image.completed', data: { id: requestId } });
    expect(request!.headers['webhook-id']).toBe(callbackIdFor(requestId, 'image.completed', endpoint.id));
  });

  it('lets a callback already made finish its ladder when its endpoint is turned off mid-way, and makes no new ones', async () => {
    h.receiver.script('/off-mid-way', () => ({ status: 503, body: 'down' }));
    const endpoint = await createEndpoint({ url: h.receiver.url('/off-mid-way'), events: ['image.completed'] });
    const jobId = await h.jobs.image(h.receiver.url('/off-mid-way-own'), 'a lighthouse');
    await received('/off-mid-way');
    expect((await call(`/v1/webhook-endpoints/${endpoint.id}`, { method: 'PATCH', json: { enabled: false } })).json).toMatchObject({ enabled: false });

    const messageId = callbackIdFor(jobId, 'image.completed', endpoint.id);
    const { callback, attempts } = await h.settled(messageId, ['failed']);
    expect(callback).toMatchObject({ endpoint_id: endpoint.id, attempt_count: 6, ladder_attempt: 6 });
    expect(attempts.map((a) => a.status)).toEqual([503, 503, 503, 503, 503, 503]);

    const later = await h.jobs.image(h.receiver.url('/off-mid-way-own'), 'a second lighthouse');
    await received('/off-mid-way-own', 2);
    await h.deliveriesSettled();
    expect(await h.callbacks.get(callbackIdFor(later, 'image.completed', endpoint.id))).toBeUndefined();
    expect(h.receiver.requestsTo('/off-mid-way')).toHaveLength(6);
  });

  it(`disables an endpoint whose every attempt failed for WEBHOOK_ENDPOINT_DISABLE_AFTER (${DISABLE_AFTER_S}s here), says why, audits it, and takes one call to enable`, async () => {
    h.receiver.script('/failing', () => ({ status: 500, body: 'boom' }));
    const endpoint = await createEndpoint({ url: h.receiver.url('/failing'), events: ['image.completed'] });
    const jobId = await h.jobs.image(h.receiver.url('/failing-own'), 'a storm');
    const disabled = await eventually(
      async () => {
        const got = (await call(`/v1/webhook-endpoints/${endpoint.id}`)).json;
        return got.enabled ? undefined : got;
      },
      30_000,
      'the endpoint to be disabled',
    );
    expect(disabled).toMatchObject({
      enabled: false,
      disabled_reason: 'failing',
      failing_since: expect.any(Number),
      last_error: { message: 'http_error: HTTP 500', at: expect.any(Number) },
    });
    expect(disabled.last_error.at - disabled.failing_since).toBeGreaterThanOrEqual(DISABLE_AFTER_S - 1);
    // The callback that was failing is not dropped: it finishes its ladder.
    const { attempts } = await h.settled(callbackIdFor(jobId, 'image.completed', endpoint.id), ['failed']);
    expect(attempts).toHaveLength(6);

    const audit = (await auditActions()).find((e) => e.action === 'webhook_endpoint.disabled' && e.target.id === endpoint.id);
    expect(audit).toMatchObject({ actor: { type: 'system' }, target: { type: 'webhook_endpoint', reason: 'failing', last_error: 'http_error: HTTP 500' } });

    const enabled = await call(`/v1/webhook-endpoints/${endpoint.id}`, { method: 'PATCH', json: { enabled: true } });
    expect(enabled.json).toMatchObject({ enabled: true, disabled_reason: null, failing_since: null });
    h.receiver.script('/failing', () => ({ status: 200, body: 'ok' }));
    const next = await h.jobs.image(h.receiver.url('/failing-own'), 'calm again');
    await h.settled(callbackIdFor(next, 'image.completed', endpoint.id), ['delivered']);
    expect((await call(`/v1/webhook-endpoints/${endpoint.id}`)).json).toMatchObject({ enabled: true, failing_since: null });
  });
});
