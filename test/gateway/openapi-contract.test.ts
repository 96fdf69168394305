import type { OpenAPIObject } from 'openapi3-ts/oas31';
import sharp from 'sharp';
import { loadConfig } from '@media/common';
import { verify } from '@media/callback-signing';
import { buildOpenApiDocument } from '../../services/api-gateway/src/openapi/document';
import { DispatcherHarness } from '../dispatcher/support/harness';
import type { ReceivedRequest } from '../dispatcher/support/receiver';
import { OpenApiContract, type CheckedResponse } from '../support/openapi';
import { api, eventually, readBody } from '../support/stack';

/**
 * The served OpenAPI document against the real services: every documented operation that exists
 * is driven through the real gateway (with the generator and the dispatcher running, and an HTTPS
 * receiver on loopback), and each answer, success or error, is validated against the document's
 * schema for that operation and status; so are the callbacks the receiver gets, against `webhooks`.
 */
let h: DispatcherHarness;
let contract: OpenApiContract;
let call: ReturnType<typeof api>;
/** Jobs made along the way, whose callbacks the last tests read. */
const jobs: Record<string, string> = {};

/** A call without the API key, as a client of the public routes makes it. */
async function get(url: string, init: RequestInit = {}): Promise<CheckedResponse> {
  const res = await fetch(url.startsWith('http') ? url : `${h.stack.baseUrl}${url}`, init);
  return { status: res.status, headers: res.headers, ...(await readBody(res)) };
}

const post = (json: unknown, headers: Record<string, string> = {}) => ({ method: 'POST', json, headers });
const png = () =>
  sharp({ create: { width: 64, height: 64, channels: 4, background: '#3366ff' } })
    .png()
    .toBuffer();
const hooks = () => h.receiver.url('/hooks');

/** Checks the exchange and its status in one step, so a failure names both. */
function expectAnswer(operation: string, res: CheckedResponse, status: number, code?: string): void {
  expect({ operation, status: res.status, code: (res.json as { error?: { code?: string } } | undefined)?.error?.code }).toMatchObject({
    status,
    ...(code ? { code } : {}),
  });
  contract.check(operation, res);
}

/** The job at `path` once its status is `status`. */
const whenStatus = (path: string, status: string, timeoutMs = 30_000) =>
  eventually(
    async () => {
      const res = await call(path);
      return res.json.status === status ? res : undefined;
    },
    timeoutMs,
    `${path} to be ${status}`,
  );

/** A request body the document accepts (or, with `valid: false`, refuses). */
function expectDocumented(operation: string, body: unknown, valid = true): void {
  const verdict = contract.requestBody(operation, body);
  expect({ operation, body, valid: verdict.valid, errors: verdict.errors }).toMatchObject({ valid });
}

beforeAll(async () => {
  h = await DispatcherHarness.start({ WEBHOOK_RETRY_SCHEDULE: '100ms,100ms,100ms,100ms,100ms', WEBHOOK_TIMEOUT_MS: '5000' }, { inProcess: true });
  h.receiver.script('/hooks', () => ({ status: 204 }));
  call = api(h.stack, h.workspace.apiKey);
  const served = await get('/v1/openapi.json');
  expect(served.status).toBe(200);
  contract = new OpenApiContract(served.json as OpenAPIObject);
});

afterAll(async () => {
  await h?.stop();
});

describe('GET /v1/openapi.json', () => {
  it('is public, unlimited, built from this gateway’s configuration, and carries x-request-id', async () => {
    const res = await get('/v1/openapi.json');
    expectAnswer('GET /v1/openapi.json', res, 200);
    expect(res.headers.get('content-type')).toBe('application/json; charset=utf-8');
    expect(res.headers.get('x-ratelimit-limit-requests')).toBeNull();
    expect(res.json).toEqual(JSON.parse(JSON.stringify(buildOpenApiDocument(loadConfig(h.stack.env)))));
    expect((res.json as { servers: { url: string }[] }).servers).toEqual([{ url: h.stack.baseUrl }]);
  });

  it('answers a revalidation with 304 and sends gzip to a client that takes it', async () => {
    const plain = await get('/v1/openapi.json', { headers: { 'accept-encoding': 'identity' } });
    expect(plain.headers.get('content-encoding')).toBeNull();
    const gzip = await get('/v1/openapi.json', { headers: { 'accept-encoding': 'gzip' } });
    expect(gzip.headers.get('content-encoding')).toBe('gzip');
    expect(Number(gzip.headers.get('content-length'))).toBeLessThan(Number(plain.headers.get('content-length')));
    expect(gzip.json).toEqual(plain.json);
    const etag = plain.headers.get('etag')!;
    expect(gzip.headers.get('etag')).toBe(etag);
    // fetch adds `cache-control: no-cache` to a conditional request unless it has one, and that asks for a full answer.
    const revalidated = await get('/v1/openapi.json', { headers: { 'if-none-match': etag, 'cache-control': 'max-age=0' } });
    expectAnswer('GET /v1/openapi.json', revalidated, 304);
  });
});

describe('real responses match the document', () => {
  it('health and readiness', async () => {
    expectAnswer('GET /healthz', await get('/healthz'), 200);
    expectAnswer('GET /readyz', await get('/readyz'), 200);
  });

  it('models, an unknown model, and calls without or with a wrong API key', async () => {
    expectAnswer('GET /v1/models', await call('/v1/models'), 200);
    expectAnswer('GET /v1/models/{id}', await call('/v1/models/pixel-1'), 200);
    expectAnswer('GET /v1/models/{id}', await call('/v1/models/motion-1'), 200);
    expectAnswer('GET /v1/models/{id}', await call('/v1/models/nope'), 404, 'model_not_found');
    expectAnswer('GET /v1/models', await get('/v1/models'), 401, 'missing_api_key');
    expectAnswer('GET /v1/videos', await api(h.stack, 'sk_wrong')('/v1/videos'), 401, 'invalid_api_key');
  });

  it('a synchronous generation: links, or base64', async () => {
    const request = { prompt: 'a lighthouse at dusk', size: '256x256', n: 2 };
    expectDocumented('POST /v1/images/generations', request);
    expectAnswer('POST /v1/images/generations', await call('/v1/images/generations', post(request)), 200);
    const b64 = { prompt: 'a lighthouse at dusk', size: '256x256', response_format: 'b64_json', output_format: 'webp' };
    expectDocumented('POST /v1/images/generations', b64);
    const res = await call('/v1/images/generations', post(b64));
    expectAnswer('POST /v1/images/generations', res, 200);
    expect(res.json.data[0].b64_json).toEqual(expect.any(String));
  });

  it('a generation with callback_url: 202, then the request read, listed and downloaded through its signed link', async () => {
    const request = { prompt: 'a quiet harbour', size: '256x256', callback_url: hooks() };
    expectDocumented('POST /v1/images/generations', request);
    const accepted = await call('/v1/images/generations', post(request));
    expectAnswer('POST /v1/images/generations', accepted, 202);
    jobs.imageCompleted = accepted.json.id;
    const done = await whenStatus(`/v1/images/${jobs.imageCompleted}`, 'completed');
    expectAnswer('GET /v1/images/{id}', done, 200);
    expectAnswer('GET /v1/images', await call('/v1/images?limit=2'), 200);
    expectAnswer('GET /v1/images/{id}', await call('/v1/images/req_nope'), 404, 'not_found');

    const link = done.json.data[0].url as string;
    expectAnswer('GET /v1/files/{key}', await get(link), 200);
    expectAnswer('GET /v1/files/{key}', await get(link.replace(/signature=[^&]+/, `signature=${'A'.repeat(43)}`)), 403, 'invalid_link');
  });

  it('failed image requests: the synchronous call answers with the job’s error, the request reads as failed', async () => {
    const res = await call('/v1/images/generations', post({ prompt: 'something forbidden', size: '256x256' }));
    expectAnswer('POST /v1/images/generations', res, 400, 'moderation_blocked');
    const failed = await call(`/v1/images/${res.headers.get('x-request-id')}`);
    expectAnswer('GET /v1/images/{id}', failed, 200);
    expect(failed.json.status).toBe('failed');
    const accepted = await call('/v1/images/generations', post({ prompt: 'something forbidden', size: '256x256', callback_url: hooks() }));
    expectAnswer('POST /v1/images/generations', accepted, 202);
    jobs.imageFailed = accepted.json.id;
  });

  it('edits: multipart with a file, JSON with a data URL, and without any image', async () => {
    const form = new FormData();
    form.set('prompt', 'add a red hat');
    form.set('size', '256x256');
    form.set('image', new Blob([await png()], { type: 'image/png' }), 'cat.png');
    expectAnswer('POST /v1/images/edits', await call('/v1/images/edits', { method: 'POST', body: form }), 200);

    const json = { prompt: 'add a red hat', size: '256x256', image: `data:image/png;base64,${(await png()).toString('base64')}`, callback_url: hooks() };
    expectDocumented('POST /v1/images/edits', json);
    expectAnswer('POST /v1/images/edits', await call('/v1/images/edits', post(json)), 202);

    expectDocumented('POST /v1/images/edits', { prompt: 'add a red hat' }, false);
    expectAnswer('POST /v1/images/edits', await call('/v1/images/edits', post({ prompt: 'add a red hat' })), 400, 'missing_required_parameter');
  });

  it('refuses what the document refuses, in the documented error shapes', async () => {
    const refused: [unknown, number, string][] = [
      [{ prompt: 'p', n: 11 }, 400, 'invalid_value'],
      [{ prompt: 'p', colour: 'red' }, 400, 'unknown_parameter'],
      [{ n: 1 }, 400, 'missing_required_parameter'],
      [{ prompt: 'p', size: '333x333' }, 400, 'invalid_size'],
      [{ prompt: 'p', model: 'motion-1' }, 400, 'invalid_model'],
      [{ prompt: 'p', model: 'nope' }, 404, 'model_not_found'],
    ];
    for (const [body, status, code] of refused) {
      expectDocumented('POST /v1/images/generations', body, false);
      expectAnswer('POST /v1/images/generations', await call('/v1/images/generations', post(body)), status, code);
    }
    expectDocumented('POST /v1/videos', { prompt: 'p', seconds: 99 }, false);
    expectAnswer('POST /v1/videos', await call('/v1/videos', post({ prompt: 'p', seconds: 99 })), 400, 'invalid_duration');
    expectAnswer('GET /v1/videos', await call('/v1/videos?limit=0'), 400, 'invalid_value');
  });

  it('bodies the parsers refuse: not JSON nor multipart (415), too large (413), broken JSON (400)', async () => {
    const text = await call('/v1/videos', { method: 'POST', body: 'prompt=waves', headers: { 'content-type': 'text/plain' } });
    expectAnswer('POST /v1/videos', text, 415, 'unsupported_media_type');
    expectAnswer('POST /v1/videos', await call('/v1/videos', post({ prompt: 'x'.repeat(1_100_000) })), 413, 'request_too_large');
    const broken = await call('/v1/videos', { method: 'POST', body: '{"prompt":', headers: { 'content-type': 'application/json' } });
    expectAnswer('POST /v1/videos', broken, 400, 'invalid_json');
  });

  it('Idempotency-Key: a repeat is replayed, other parameters are a 409, a bad key a 400', async () => {
    const body = { prompt: 'a red kite', seconds: 1, size: '640x360' };
    const first = await call('/v1/videos', post(body, { 'idempotency-key': 'contract-kite' }));
    expectAnswer('POST /v1/videos', first, 200);
    const repeat = await call('/v1/videos', post(body, { 'idempotency-key': 'contract-kite' }));
    expectAnswer('POST /v1/videos', repeat, 200);
    expect({ id: repeat.json.id, replayed: repeat.headers.get('idempotent-replayed') }).toEqual({ id: first.json.id, replayed: 'true' });
    expectAnswer(
      'POST /v1/videos',
      await call('/v1/videos', post({ ...body, prompt: 'a blue kite' }, { 'idempotency-key': 'contract-kite' })),
      409,
      'idempotency_key_reused',
    );
    expectAnswer('POST /v1/videos', await call('/v1/videos', post(body, { 'idempotency-key': 'k'.repeat(256) })), 400, 'invalid_idempotency_key');
  });

  it('videos: JSON and multipart creation, reads while running and once completed, the list and the content', async () => {
    const request = { model: 'motion-1', prompt: 'waves rolling onto a beach', seconds: 1, size: '640x360', callback_url: hooks() };
    expectDocumented('POST /v1/videos', request);
    const created = await call('/v1/videos', post(request));
    expectAnswer('POST /v1/videos', created, 200);
    jobs.videoCompleted = created.json.id;
    expectAnswer('GET /v1/videos/{id}', await call(`/v1/videos/${jobs.videoCompleted}`), 200);

    const form = new FormData();
    for (const [name, value] of Object.entries({ prompt: 'a paper boat', seconds: '1', resolution: '360p', aspect_ratio: '9:16', generate_audio: 'true' }))
      form.set(name, value);
    expectAnswer('POST /v1/videos', await call('/v1/videos', { method: 'POST', body: form }), 200);

    const done = await whenStatus(`/v1/videos/${jobs.videoCompleted}`, 'completed', 60_000);
    expectAnswer('GET /v1/videos/{id}', done, 200);
    expectAnswer('GET /v1/videos', await call('/v1/videos?limit=3&order=asc'), 200);
    expectAnswer('GET /v1/videos/{id}/content', await call(`/v1/videos/${jobs.videoCompleted}/content`), 200);
    expectAnswer('GET /v1/videos/{id}/content', await call(`/v1/videos/${jobs.videoCompleted}/content?variant=audio`), 400, 'invalid_value');
    expectAnswer('GET /v1/videos/{id}', await call('/v1/videos/video_nope'), 404, 'not_found');
    expectAnswer('GET /v1/videos/{id}/content', await call('/v1/videos/video_nope/content'), 404, 'not_found');
  });

  it('a failed video reads as failed, and its content is 409 video_not_ready', async () => {
    const created = await call('/v1/videos', post({ prompt: 'something forbidden', seconds: 1, size: '640x360', callback_url: hooks() }));
    expectAnswer('POST /v1/videos', created, 200);
    jobs.videoFailed = created.json.id;
    const failed = await whenStatus(`/v1/videos/${jobs.videoFailed}`, 'failed');
    expectAnswer('GET /v1/videos/{id}', failed, 200);
    expectAnswer('GET /v1/videos/{id}/content', await call(`/v1/videos/${jobs.videoFailed}/content`), 409, 'video_not_ready');
  });

  it('remix and delete: a remix of a completed video, refusals of running and unknown ones, and a deletion', async () => {
    const remixBody = { prompt: 'waves at night, in a storm', callback_url: hooks() };
    expectDocumented('POST /v1/videos/{id}/remix', remixBody);
    expectDocumented('POST /v1/videos/{id}/remix', { prompt: 'p', seconds: 4 }, false);
    const remix = await call(`/v1/videos/${jobs.videoCompleted}/remix`, post(remixBody));
    expectAnswer('POST /v1/videos/{id}/remix', remix, 200);
    expect(remix.json.remixed_from_video_id).toBe(jobs.videoCompleted);
    expectAnswer('POST /v1/videos/{id}/remix', await call(`/v1/videos/${jobs.videoFailed}/remix`, post({ prompt: 'again' })), 409, 'video_not_ready');
    expectAnswer('POST /v1/videos/{id}/remix', await call('/v1/videos/video_nope/remix', post({ prompt: 'again' })), 404, 'not_found');
    expectAnswer('POST /v1/videos/{id}/remix', await call(`/v1/videos/${jobs.videoCompleted}/remix`, post({})), 400, 'missing_required_parameter');

    // Still queued or running: not deletable yet. Then deleted once it has completed.
    expectAnswer('DELETE /v1/videos/{id}', await call(`/v1/videos/${remix.json.id}`, { method: 'DELETE' }), 409, 'video_in_progress');
    await whenStatus(`/v1/videos/${remix.json.id}`, 'completed', 60_000);
    expectAnswer('DELETE /v1/videos/{id}', await call(`/v1/videos/${remix.json.id}`, { method: 'DELETE' }), 200);
    expectAnswer('DELETE /v1/videos/{id}', await call(`/v1/videos/${remix.json.id}`, { method: 'DELETE' }), 404, 'not_found');
  });

  it('the Callbacks API: list, detail with attempts, retry, recovery, and their errors', async () => {
    const id = await h.messageIdOf(jobs.imageCompleted);
    await h.settled(id, ['delivered']);
    expectAnswer('GET /v1/callbacks', await call('/v1/callbacks?limit=5'), 200);
    expectAnswer('GET /v1/callbacks', await call('/v1/callbacks?status=lost'), 400, 'invalid_value');
    const detail = await call(`/v1/callbacks/${id}`);
    expectAnswer('GET /v1/callbacks/{id}', detail, 200);
    expect(detail.json.attempts.length).toBeGreaterThan(0);
    expectAnswer('GET /v1/callbacks/{id}', await call('/v1/callbacks/msg_nope'), 404, 'not_found');
    expectAnswer('POST /v1/callbacks/{id}/retry', await call(`/v1/callbacks/${id}/retry`, { method: 'POST' }), 202);
    expectAnswer('POST /v1/callbacks/{id}/retry', await call('/v1/callbacks/msg_nope/retry', { method: 'POST' }), 404, 'not_found');

    const recovery = { since: Math.floor(Date.now() / 1000) - 3600 };
    expectDocumented('POST /v1/callbacks/recover', recovery);
    expectAnswer('POST /v1/callbacks/recover', await call('/v1/callbacks/recover', post(recovery)), 202);
    expectDocumented('POST /v1/callbacks/recover', {}, false);
    expectAnswer('POST /v1/callbacks/recover', await call('/v1/callbacks/recover', post({})), 400, 'missing_required_parameter');
    const text = await call('/v1/callbacks/recover', { method: 'POST', body: 'since=1', headers: { 'content-type': 'text/plain' } });
    expectAnswer('POST /v1/callbacks/recover', text, 415, 'unsupported_media_type');
  });

  it('the public webhook keys: 404 before asymmetric signing is on and for an unknown workspace, then the keys without an API key', async () => {
    const ws = await h.stack.createWorkspace('v1a-contract');
    expectAnswer('GET /v1/webhook-keys/{workspace_id}', await get(`/v1/webhook-keys/${ws.workspaceId}`), 404, 'not_found');
    expectAnswer('GET /v1/webhook-keys/{workspace_id}', await get('/v1/webhook-keys/ws_nope'), 404, 'not_found');
    expect((await h.admin(['enable-asymmetric-signing', '--workspace', ws.workspaceId])).code).toBe(0);
    const one = await get(`/v1/webhook-keys/${ws.workspaceId}`);
    expectAnswer('GET /v1/webhook-keys/{workspace_id}', one, 200);
    expect(one.headers.get('x-ratelimit-limit-requests')).toBeNull();
    expect((await h.admin(['rotate-signing-key', '--workspace', ws.workspaceId])).code).toBe(0);
    const two = await get(`/v1/webhook-keys/${ws.workspaceId}`);
    expectAnswer('GET /v1/webhook-keys/{workspace_id}', two, 200);
    expect((two.json as { data: unknown[] }).data).toHaveLength(2);
  });

  it('the audit events: the changes the admin CLI made above, a page at a time, and 400 for an unknown action or cursor', async () => {
    const ws = await h.stack.createWorkspace('audit-contract');
    expect((await h.admin(['rotate-secret', '--workspace', ws.workspaceId])).code).toBe(0);
    const audited = api(h.stack, ws.apiKey);
    const page = await audited('/v1/audit-events?limit=1');
    expectAnswer('GET /v1/audit-events', page, 200);
    expectAnswer('GET /v1/audit-events', await audited(`/v1/audit-events?after=${(page.json as { last_id: string }).last_id}`), 200);
    expectAnswer('GET /v1/audit-events', await audited('/v1/audit-events?action=nothing.happened'), 400, 'invalid_value');
    expectAnswer('GET /v1/audit-events', await audited('/v1/audit-events?after=aud_nope'), 400, 'invalid_value');
  });

  it('webhook endpoints: create, list, read, change, test, delete, a callback to one listed by endpoint_id, and their errors', async () => {
    const ws = await h.stack.createWorkspace('endpoints-contract');
    const endpoints = api(h.stack, ws.apiKey);
    const body = { url: h.receiver.url('/hooks'), events: ['image.completed'], description: 'contract' };
    expectDocumented('POST /v1/webhook-endpoints', body);
    const created = await endpoints('/v1/webhook-endpoints', post(body));
    expectAnswer('POST /v1/webhook-endpoints', created, 201);
    const id = (created.json as { id: string }).id;
    expectDocumented('POST /v1/webhook-endpoints', { url: h.receiver.url('/hooks'), events: ['image.started'] }, false);
    expectAnswer(
      'POST /v1/webhook-endpoints',
      await endpoints('/v1/webhook-endpoints', post({ url: h.receiver.url('/x'), events: ['image.started'] })),
      400,
      'invalid_value',
    );
    expectAnswer('POST /v1/webhook-endpoints', await endpoints('/v1/webhook-endpoints', post({ url: 'http://127.0.0.1/x' })), 400, 'invalid_callback_url');
    const text = await endpoints('/v1/webhook-endpoints', { method: 'POST', body: 'url=x', headers: { 'content-type': 'text/plain' } });
    expectAnswer('POST /v1/webhook-endpoints', text, 415, 'unsupported_media_type');
    expectAnswer('GET /v1/webhook-endpoints', await endpoints('/v1/webhook-endpoints'), 200);
    expectAnswer('GET /v1/webhook-endpoints/{id}', await endpoints(`/v1/webhook-endpoints/${id}`), 200);
    expectAnswer('GET /v1/webhook-endpoints/{id}', await endpoints('/v1/webhook-endpoints/we_nope'), 404, 'not_found');
    expectDocumented('PATCH /v1/webhook-endpoints/{id}', { enabled: false });
    expectAnswer('PATCH /v1/webhook-endpoints/{id}', await endpoints(`/v1/webhook-endpoints/${id}`, { method: 'PATCH', json: { enabled: false } }), 200);
    expectAnswer('PATCH /v1/webhook-endpoints/{id}', await endpoints(`/v1/webhook-endpoints/${id}`, { method: 'PATCH', json: { enabled: true } }), 200);
    expectAnswer(
      'PATCH /v1/webhook-endpoints/{id}',
      await endpoints(`/v1/webhook-endpoints/${id}`, { method: 'PATCH', json: { events: [] } }),
      400,
      'invalid_value',
    );
    expectAnswer('PATCH /v1/webhook-endpoints/{id}', await endpoints('/v1/webhook-endpoints/we_nope', { method: 'PATCH', json: {} }), 404, 'not_found');
    expectAnswer('POST /v1/webhook-endpoints/{id}/test', await endpoints(`/v1/webhook-endpoints/${id}/test`, { method: 'POST' }), 200);
    expectAnswer('POST /v1/webhook-endpoints/{id}/test', await endpoints(`/v1/webhook-endpoints/${id}/test`, post({ type: 'nope' })), 400, 'invalid_value');
    expectAnswer('POST /v1/webhook-endpoints/{id}/test', await endpoints('/v1/webhook-endpoints/we_nope/test', { method: 'POST' }), 404, 'not_found');

    // A job without callback_url: its only callback is the endpoint's, listed by endpoint_id.
    const sync = await endpoints('/v1/images/generations', post({ model: 'pixel-1', prompt: 'an endpoint sample', size: '256x256' }));
    expect(sync.status).toBe(200);
    const listed = await eventually(
      async () => {
        const res = await endpoints(`/v1/callbacks?endpoint_id=${id}`);
        return (res.json as { data: { status: string }[] }).data[0]?.status === 'delivered' ? res : undefined;
      },
      30_000,
      'the endpoint callback to be delivered',
    );
    expectAnswer('GET /v1/callbacks', listed, 200);
    expect((listed.json as { data: { endpoint_id: string }[] }).data[0]!.endpoint_id).toBe(id);

    expectAnswer('DELETE /v1/webhook-endpoints/{id}', await endpoints(`/v1/webhook-endpoints/${id}`, { method: 'DELETE' }), 200);
    expectAnswer('DELETE /v1/webhook-endpoints/{id}', await endpoints(`/v1/webhook-endpoints/${id}`, { method: 'DELETE' }), 404, 'not_found');
  });

  it('the relay listener: 426 without the WebSocket upgrade, 401 without a key', async () => {
    expectAnswer('GET /v1/webhook-relay/listen', await call('/v1/webhook-relay/listen'), 426, 'upgrade_required');
    expectAnswer('GET /v1/webhook-relay/listen', await get('/v1/webhook-relay/listen'), 401, 'missing_api_key');
  });

  it('429 with Retry-After and the rate-limit headers once a workspace is over its limit', async () => {
    const ws = await h.stack.createWorkspace('limited');
    const lowered = await h.admin(['set-limits', '--workspace', ws.workspaceId, '--read-per-minute', '1']);
    expect(lowered.code).toBe(0);
    const limited = api(h.stack, ws.apiKey);
    expectAnswer('GET /v1/videos', await limited('/v1/videos'), 200);
    expectAnswer('GET /v1/videos', await limited('/v1/videos'), 429, 'rate_limit_exceeded');
  });
});

describe('callbacks as the receiver gets them', () => {
  it('match the webhooks section for all four events, and verify with the workspace secret', async () => {
    const expected = new Map([
      [jobs.imageCompleted, 'image.completed'],
      [jobs.imageFailed, 'image.failed'],
      [jobs.videoCompleted, 'video.completed'],
      [jobs.videoFailed, 'video.failed'],
    ]);
    const received = await eventually(
      () => {
        const first = new Map<string, ReceivedRequest>();
        for (const request of h.receiver.requestsTo('/hooks')) {
          const { data } = JSON.parse(request.body) as { data: { id: string } };
          if (expected.has(data.id) && !first.has(data.id)) first.set(data.id, request);
        }
        return first.size === expected.size ? first : undefined;
      },
      30_000,
      'the four callbacks',
    );
    for (const [jobId, type] of expected) {
      const request = received.get(jobId)!;
      expect((JSON.parse(request.body) as { type: string }).type).toBe(type);
      contract.checkWebhook(type, request);
      expect(() => verify(request.body, request.headers, h.workspace.signingSecret)).not.toThrow();
    }
  });
});

describe('coverage', () => {
  // Reads what the tests above checked, so it runs last and with them (not alone with -t).
  it('every documented operation that exists on this branch was driven above', () => {
    const missed = contract.operations().filter((op) => !contract.checked.has(op));
    expect(missed).toEqual([]);
  });
});
