import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import sharp from 'sharp';
import { createLogger, loadConfig } from '@media/common';
import { createGateway } from '../../services/api-gateway/src/wiring';
import { DispatcherHarness } from '../dispatcher/support/harness';
import { DashboardClient } from '../dashboard/support/api-client';
import { expressRoutes } from '../support/openapi';
import { api, deleteKeysUnder, eventually, readBody, REDIS_URL } from '../support/stack';

/**
 * The gateway's access log against the real services: every route of the app, the public API and
 * the dashboard's, is called once (successfully, plus a few errors), and each answer's `request`
 * line must name the full path the client asked for (never its query) and the route pattern that
 * answered it. Express rewrites `req.path` inside a router, so a line that read it would say
 * `/generations` for `POST /v1/images/generations`.
 */
let h: DispatcherHarness;
let call: ReturnType<typeof api>;

interface Exchange {
  method: string;
  /** The path and query as sent. */
  sent: string;
  status: number;
  requestId: string;
  /** The route pattern the line must name; undefined when no route answered. */
  route: string | undefined;
}

const exchanges: Exchange[] = [];

/** Notes an answer for the log checks, after checking its status. */
function noted(method: string, sent: string, res: { status: number; headers: Headers; text: string }, status: number, route: string | undefined) {
  expect({ method, sent, status: res.status, body: res.status === status ? undefined : res.text }).toEqual({ method, sent, status, body: undefined });
  exchanges.push({ method, sent, status, requestId: res.headers.get('x-request-id')!, route });
}

/** A call with the workspace's API key. */
async function withKey(method: string, sent: string, status: number, route: string | undefined, init: RequestInit & { json?: unknown } = {}) {
  const res = await call(sent, { ...init, method });
  noted(method, sent, res, status, route);
  return res;
}

/** A call without credentials (the public routes: health, OpenAPI, download links, verification keys). */
async function open(method: string, sent: string, status: number, route: string | undefined) {
  const res = await fetch(`${h.stack.baseUrl}${sent}`, { method, redirect: 'manual' });
  const answer = { status: res.status, headers: res.headers, ...(await readBody(res)) };
  noted(method, sent, answer, status, route);
  return answer;
}

/** A dashboard API call with the signed-in browser's cookie (and CSRF token on writes). */
async function board(client: DashboardClient, method: string, path: string, status: number, route: string, json?: unknown) {
  const res = await client.call(method, path, json === undefined ? {} : { json });
  noted(method, `/dashboard/api${path}`, res, status, route);
  return res;
}

const whenStatus = (path: string, status: string) =>
  eventually(
    async () => {
      const res = await call(path);
      return res.json?.status === status ? res : undefined;
    },
    30_000,
    `${path} to be ${status}`,
  );

/** `GET /v1/videos/{id}`, as `expressRoutes` writes a route, from a logged pattern (`/v1/videos/:id`, `/v1/videos/`). */
const asOperation = (method: string, route: string) =>
  `${method} ${route.length > 1 ? route.replace(/\/$/, '') : route}`.replace(/[:*]([A-Za-z0-9_]+)/g, '{$1}');

beforeAll(async () => {
  h = await DispatcherHarness.start({}, { inProcess: true });
  call = api(h.stack, h.workspace.apiKey);
  h.receiver.script('/ok', () => ({ status: 200 }));
});

afterAll(async () => {
  await h?.stop();
});

it('logs every answer with its full path, without the query, and the route pattern that answered', async () => {
  const ws = h.workspace;

  // Health and the OpenAPI document, on the app itself.
  await open('GET', '/healthz', 200, '/healthz');
  await open('GET', '/readyz', 200, '/readyz');
  await open('GET', '/v1/openapi.json', 200, '/v1/openapi.json');

  await withKey('GET', '/v1/models', 200, '/v1/models/');
  await withKey('GET', '/v1/models/pixel-1', 200, '/v1/models/:id');
  // Express matches paths case-insensitively: the line keeps the spelling sent, the pattern does not.
  await withKey('GET', '/V1/Models', 200, '/v1/models/');

  // Images: synchronous, with a callback, edits, list, one, and a download link (its signature is in the query).
  const sync = await withKey('POST', '/v1/images/generations', 200, '/v1/images/generations', {
    json: { model: 'pixel-1', prompt: 'a harbour', size: '256x256' },
  });
  const withCallback = await withKey('POST', '/v1/images/generations', 202, '/v1/images/generations', {
    json: { model: 'pixel-1', prompt: 'a lighthouse', size: '256x256', callback_url: h.receiver.url('/ok') },
  });
  const png = await sharp({ create: { width: 64, height: 64, channels: 4, background: '#3366ff' } })
    .png()
    .toBuffer();
  await withKey('POST', '/v1/images/edits', 200, '/v1/images/edits', {
    json: { prompt: 'bluer', size: '256x256', images: [{ image_url: `data:image/png;base64,${png.toString('base64')}` }] },
  });
  await withKey('GET', '/v1/images?limit=2', 200, '/v1/images/');
  const image = await withKey('GET', `/v1/images/${sync.json.id}`, 200, '/v1/images/:id');
  const link = new URL(image.json.data[0].url as string);
  expect(link.search).toMatch(/signature=/);
  await open('GET', `${link.pathname}${link.search}`, 200, '/v1/files/*key');

  // Videos: create, list, one, content, remix, delete.
  const video = await withKey('POST', '/v1/videos', 200, '/v1/videos/', {
    json: { model: 'motion-1', prompt: 'waves', seconds: 1, size: '640x360', callback_url: h.receiver.url('/ok') },
  });
  const videoId = video.json.id as string;
  await whenStatus(`/v1/videos/${videoId}`, 'completed');
  await withKey('GET', '/v1/videos?limit=5&order=desc', 200, '/v1/videos/');
  await withKey('GET', `/v1/videos/${videoId}`, 200, '/v1/videos/:id');
  await withKey('GET', `/v1/videos/${videoId}/content?variant=video`, 200, '/v1/videos/:id/content');
  await withKey('POST', `/v1/videos/${videoId}/remix`, 200, '/v1/videos/:id/remix', { json: { prompt: 'calmer waves' } });

  // Callbacks: list, one, retry, recover.
  const messageId = await h.messageIdOf(videoId);
  await h.settled(messageId, ['delivered']);
  await withKey('GET', `/v1/callbacks?job_id=${videoId}`, 200, '/v1/callbacks/');
  await withKey('GET', `/v1/callbacks/${messageId}`, 200, '/v1/callbacks/:id');
  await withKey('POST', `/v1/callbacks/${messageId}/retry`, 202, '/v1/callbacks/:id/retry');
  await withKey('POST', '/v1/callbacks/recover', 202, '/v1/callbacks/recover', { json: { since: Math.floor(Date.now() / 1000) - 3600 } });
  await withKey('DELETE', `/v1/videos/${videoId}`, 200, '/v1/videos/:id');

  // Who changed what: the audit.
  await withKey('GET', '/v1/audit-events?action=workspace.created', 200, '/v1/audit-events/');

  // The relay listener's path, asked without the WebSocket upgrade.
  await withKey('GET', '/v1/webhook-relay/listen', 426, '/v1/webhook-relay/listen');

  // The workspace's webhook endpoints.
  const endpoint = await withKey('POST', '/v1/webhook-endpoints', 201, '/v1/webhook-endpoints/', {
    json: { url: h.receiver.url('/logged'), events: ['video.failed'] },
  });
  const endpointId = endpoint.json.id as string;
  await withKey('GET', '/v1/webhook-endpoints', 200, '/v1/webhook-endpoints/');
  await withKey('GET', `/v1/webhook-endpoints/${endpointId}`, 200, '/v1/webhook-endpoints/:id');
  await withKey('PATCH', `/v1/webhook-endpoints/${endpointId}`, 200, '/v1/webhook-endpoints/:id', { json: { description: 'logged' } });
  await withKey('POST', `/v1/webhook-endpoints/${endpointId}/test`, 200, '/v1/webhook-endpoints/:id/test');
  await withKey('DELETE', `/v1/webhook-endpoints/${endpointId}`, 200, '/v1/webhook-endpoints/:id');

  // The dashboard: its page, and every call of its API.
  await open('GET', '/dashboard/', 200, '/dashboard/');
  const owner = new DashboardClient(h.stack.baseUrl);
  const signedIn = await board(owner, 'POST', '/session', 200, '/dashboard/api/session', { email: ws.owner.email, password: ws.owner.password });
  owner.csrf = signedIn.json.csrf_token as string;
  await board(owner, 'GET', '/session', 200, '/dashboard/api/session');
  await board(owner, 'GET', '/requests?limit=5', 200, '/dashboard/api/requests');
  await board(owner, 'GET', `/requests/${videoId}`, 404, '/dashboard/api/requests/:id');
  await board(owner, 'GET', `/requests/${sync.json.id}`, 200, '/dashboard/api/requests/:id');
  await board(owner, 'GET', '/requests/recovery?callback_status=failed', 200, '/dashboard/api/requests/recovery');
  await board(owner, 'POST', '/requests/recovery', 202, '/dashboard/api/requests/recovery', { callback_status: 'failed' });
  const imageMessage = await h.messageIdOf(withCallback.json.id as string);
  await h.settled(imageMessage, ['delivered']);
  await board(owner, 'POST', `/callbacks/${imageMessage}/retry`, 202, '/dashboard/api/callbacks/:id/retry');
  await board(owner, 'GET', '/overview?window=1h', 200, '/dashboard/api/overview');
  const destination = new URL(h.receiver.url('/')).origin;
  await board(owner, 'GET', `/callbacks/recover?destination=${encodeURIComponent(destination)}`, 200, '/dashboard/api/callbacks/recover');
  await board(owner, 'POST', '/callbacks/recover', 202, '/dashboard/api/callbacks/recover', { destination });
  await board(owner, 'GET', '/destinations', 200, '/dashboard/api/destinations');
  await board(owner, 'GET', '/usage?days=7', 200, '/dashboard/api/usage');
  await board(owner, 'GET', '/keys', 200, '/dashboard/api/keys');
  const boardEndpoint = await board(owner, 'POST', '/endpoints', 201, '/dashboard/api/endpoints', { url: h.receiver.url('/logged'), events: ['image.failed'] });
  const boardEndpointId = boardEndpoint.json.id as string;
  await board(owner, 'GET', '/endpoints', 200, '/dashboard/api/endpoints');
  await board(owner, 'GET', `/endpoints/${boardEndpointId}/deliveries`, 200, '/dashboard/api/endpoints/:id/deliveries');
  await board(owner, 'PATCH', `/endpoints/${boardEndpointId}`, 200, '/dashboard/api/endpoints/:id', { description: 'logged' });
  await board(owner, 'POST', `/endpoints/${boardEndpointId}/test`, 200, '/dashboard/api/endpoints/:id/test', {});
  await board(owner, 'DELETE', `/endpoints/${boardEndpointId}`, 204, '/dashboard/api/endpoints/:id');
  await board(owner, 'GET', '/relay-listeners', 200, '/dashboard/api/relay-listeners');
  const key = await board(owner, 'POST', '/keys', 201, '/dashboard/api/keys');
  await board(owner, 'DELETE', `/keys/${key.json.id}`, 204, '/dashboard/api/keys/:id');
  await board(owner, 'POST', '/secrets/reveal', 200, '/dashboard/api/secrets/reveal');
  await board(owner, 'POST', '/secrets/rotate', 200, '/dashboard/api/secrets/rotate');
  await board(owner, 'POST', '/secrets/end-overlap', 200, '/dashboard/api/secrets/end-overlap');
  await board(owner, 'POST', '/signing-keys/enable', 200, '/dashboard/api/signing-keys/enable');
  await board(owner, 'POST', '/signing-keys/rotate', 200, '/dashboard/api/signing-keys/rotate');
  await board(owner, 'POST', '/test-callback', 200, '/dashboard/api/test-callback', { url: h.receiver.url('/ok') });
  await board(owner, 'GET', '/members', 200, '/dashboard/api/members');
  await board(owner, 'GET', '/audit?action=api_key.created', 200, '/dashboard/api/audit');
  await board(owner, 'POST', '/members', 201, '/dashboard/api/members', { email: 'someone@access-log.test', role: 'member' });
  await board(owner, 'PATCH', '/members/someone@access-log.test', 200, '/dashboard/api/members/:email', { role: 'admin' });
  await board(owner, 'DELETE', '/members/someone@access-log.test', 204, '/dashboard/api/members/:email');
  await board(owner, 'DELETE', '/session', 204, '/dashboard/api/session');

  // The verification keys the dashboard just turned on, public.
  await open('GET', `/v1/webhook-keys/${ws.workspaceId}`, 200, '/v1/webhook-keys/:workspace_id');

  // Errors: one in a matched route, and paths that no route answers.
  await withKey('GET', '/v1/images/req_nothing_here', 404, '/v1/images/:id');
  await withKey('GET', '/v1/nothing-here?access_token=abc', 404, undefined);
  await open('GET', '/dashboard/api/nothing-here?token=abc', 401, undefined);

  const gateway = h.stack.service('api-gateway');
  const lineOf = (requestId: string) =>
    eventually(() => gateway.lines.find((l) => l.message === 'request' && l.request_id === requestId), 5_000, `the request line of ${requestId}`);
  const logged = [];
  for (const e of exchanges) {
    const line = await lineOf(e.requestId);
    logged.push({ method: line.method, path: line.path, route: line.route, status: line.status });
  }
  expect(logged).toEqual(exchanges.map((e) => ({ method: e.method, path: e.sent.split('?')[0], route: e.route, status: e.status })));
  // No line of the whole run carries a query (download links carry their signature in it).
  expect(gateway.lines.filter((l) => l.message === 'request' && String(l.path).includes('?'))).toEqual([]);

  // Every route the app registers was called above (the dashboard page's catch-all is a pattern-less regular expression).
  const prefix = `test-${randomBytes(6).toString('hex')}`;
  const redis = new Redis(REDIS_URL, { maxRetriesPerRequest: null });
  const app = await createGateway(loadConfig({ KEY_PREFIX: prefix, REDIS_URL }), redis, createLogger('test', 'error'));
  try {
    const called = new Set(exchanges.filter((e) => e.route !== undefined).map((e) => asOperation(e.method, e.route!)));
    const routes = expressRoutes(app.app).filter((r) => !r.includes('('));
    expect(routes.filter((r) => !called.has(r))).toEqual([]);
  } finally {
    await app.close();
    await deleteKeysUnder(redis, prefix);
    redis.disconnect();
  }
});
