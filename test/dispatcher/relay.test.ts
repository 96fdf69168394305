// The relay's server side over its wire protocol: the real gateway, generator and dispatcher
// (in-process), real Redis, and WebSocket listeners speaking the protocol the way `media-callbacks
// listen` does (the CLI itself is driven end to end in test/cli). Who may listen, how many, what a
// relay URL may be given by, what an attempt through the relay records, and what happens without a
// listener, with a slow handler, and when the key is revoked.
import { once } from 'node:events';
import WebSocket from 'ws';
import { Webhook } from 'standardwebhooks';
import { callbackIdFor } from '@media/domain';
import { CLOSE_KEY_REVOKED, RELAY_REFRESH_MS, type DeliveryFrame, type ReadyFrame, type ResultFrame } from '@media/callbacks';
import { expectApiError } from '../support/http';
import { api, eventually } from '../support/stack';
import { DispatcherHarness } from './support/harness';

let h: DispatcherHarness;
let call: ReturnType<typeof api>;
/** Wrong keys one address may send a minute; the last test goes past it (and leaves loopback refused for that minute). */
const AUTH_FAILURES = 6;
const open: WebSocket[] = [];

/** How a listener's handler answers each delivery (by default a 200). */
type Handler = (frame: DeliveryFrame) => Omit<ResultFrame, 'type' | 'id'> | 'silent';
const ok = (_frame?: DeliveryFrame): Omit<ResultFrame, 'type' | 'id'> => ({
  status: 200,
  error: null,
  error_detail: null,
  excerpt: 'ok',
  headers_bytes: 40,
  duration_ms: 3,
  timing: { dns_ms: null, connect_ms: 1, tls_ms: null, first_byte_ms: 2 },
});

interface Listener {
  socket: WebSocket;
  ready: ReadyFrame;
  deliveries: DeliveryFrame[];
  handler: Handler;
}

/** Connects as the CLI does; resolves on its ready frame. */
async function listen(apiKey: string, query = '', handler: Handler = ok): Promise<Listener> {
  const socket = new WebSocket(`${h.stack.baseUrl.replace('http', 'ws')}/v1/webhook-relay/listen${query}`, { headers: { authorization: `Bearer ${apiKey}` } });
  open.push(socket);
  const listener = { socket, deliveries: [] as DeliveryFrame[], handler } as Listener;
  const [raw] = (await once(socket, 'message')) as [Buffer];
  listener.ready = JSON.parse(raw.toString()) as ReadyFrame;
  socket.on('message', (data: Buffer) => {
    const frame = JSON.parse(data.toString()) as DeliveryFrame;
    listener.deliveries.push(frame);
    const answer = listener.handler(frame);
    if (answer !== 'silent') socket.send(JSON.stringify({ type: 'result', id: frame.id, ...answer }));
  });
  return listener;
}

/** The HTTP answer that refused an upgrade. */
async function refusal(apiKey: string | undefined, query = ''): Promise<{ status: number; headers: Record<string, string>; json: any; text: string }> {
  const socket = new WebSocket(`${h.stack.baseUrl.replace('http', 'ws')}/v1/webhook-relay/listen${query}`, {
    headers: apiKey ? { authorization: `Bearer ${apiKey}` } : {},
  });
  // Ended below, once its answer is read: that end is not a failure of the test.
  socket.on('error', () => undefined);
  const [, res] = (await once(socket, 'unexpected-response')) as [unknown, import('node:http').IncomingMessage];
  let text = '';
  for await (const chunk of res) text += chunk;
  socket.terminate();
  return { status: res.statusCode!, headers: res.headers as Record<string, string>, json: JSON.parse(text), text };
}

async function closeAll(): Promise<void> {
  await Promise.all(
    open.splice(0).map(async (socket) => {
      if (socket.readyState === WebSocket.CLOSED) return;
      const closed = once(socket, 'close');
      socket.close();
      await closed;
    }),
  );
  // The gateway drops each from the directory when it sees the close.
  await eventually(async () => ((await h.stack.redis.keys(`${h.stack.prefix}*relay-listeners`)).length === 0 ? true : undefined), 10_000, 'listeners gone');
}

beforeAll(async () => {
  h = await DispatcherHarness.start(
    { WEBHOOK_RETRY_SCHEDULE: '300ms,300ms,300ms,300ms,300ms', WEBHOOK_TIMEOUT_MS: '2000', AUTH_FAILURES_PER_ADDRESS_PER_MINUTE: String(AUTH_FAILURES) },
    { inProcess: true },
  );
  call = api(h.stack, h.workspace.apiKey);
});

afterEach(closeAll);

afterAll(async () => {
  await h?.stop();
});

describe('the relay', () => {
  it('delivers a callback to the relay URL through a listener, signed as any callback, and records the handler’s answer', async () => {
    const listener = await listen(h.workspace.apiKey, '?reveal_secret=1');
    expect(listener.ready).toMatchObject({
      type: 'ready',
      session_id: expect.stringMatching(/^rls_/),
      workspace_id: h.workspace.workspaceId,
      relay_url: expect.stringMatching(new RegExp(`^${h.stack.baseUrl}/webhook-relay/rly_[0-9a-z]{32}$`)),
      events: [],
      timeout_ms: 2000,
      signing_secret: h.workspace.signingSecret,
    });
    const jobId = await h.jobs.image(listener.ready.relay_url, 'relayed');
    const { callback, attempts } = await h.settled(callbackIdFor(jobId, 'image.completed'), ['delivered']);
    expect(callback).toMatchObject({ url: listener.ready.relay_url, state: 'delivered', attempt_count: 1 });
    expect(attempts).toEqual([
      expect.objectContaining({
        status: 200,
        error: null,
        excerpt: 'ok',
        address: null,
        timing: { dns_ms: null, connect_ms: 1, tls_ms: null, first_byte_ms: 2 },
      }),
    ]);
    const [frame] = listener.deliveries;
    expect(frame).toMatchObject({ type: 'delivery', webhook_id: callback.id, event_type: 'image.completed', timeout_ms: 2000 });
    expect(new Webhook(h.workspace.signingSecret).verify(frame!.body, frame!.headers)).toMatchObject({ type: 'image.completed', data: { id: jobId } });
    // The URL stays the workspace's across connections.
    const again = await listen(h.workspace.apiKey);
    expect(again.ready.relay_url).toBe(listener.ready.relay_url);
  });

  it('sends the events a listener subscribed to, without a callback_url, and a 500 gets the ladder’s next attempt', async () => {
    let answers = 0;
    const listener = await listen(h.workspace.apiKey, '?events=video.completed', (frame) => {
      answers++;
      return answers === 1
        ? {
            status: 500,
            error: null,
            error_detail: null,
            excerpt: 'boom',
            headers_bytes: 40,
            duration_ms: 2,
            timing: { dns_ms: null, connect_ms: null, tls_ms: null, first_byte_ms: 2 },
          }
        : ok(frame);
    });
    expect(listener.ready.events).toEqual(['video.completed']);
    const video = await call('/v1/videos', { method: 'POST', json: { model: 'motion-1', prompt: 'relayed waves', seconds: 1, size: '640x360' } });
    expect(video.status).toBe(200);
    const messageId = callbackIdFor(video.json.id, 'video.completed', 'relay');
    const { attempts } = await h.settled(messageId, ['delivered']);
    expect(attempts.map((a) => [a.status, a.error])).toEqual([
      [500, 'http_error'],
      [200, null],
    ]);
    expect(listener.deliveries.map((d) => d.webhook_id)).toEqual([messageId, messageId]);
    // Listed among the job's callbacks.
    expect((await call(`/v1/callbacks?job_id=${video.json.id}`)).json.data).toEqual([
      expect.objectContaining({ id: messageId, url: listener.ready.relay_url, endpoint_id: null }),
    ]);
  });

  it('records relay_offline when no listener is connected, and the ladder delivers once one is back', async () => {
    const first = await listen(h.workspace.apiKey);
    const relayUrl = first.ready.relay_url;
    await closeAll();
    const jobId = await h.jobs.image(relayUrl, 'nobody listening');
    const messageId = callbackIdFor(jobId, 'image.completed');
    const [offline] = await h.attempts(messageId, 1);
    expect(offline).toMatchObject({ status: null, error: 'relay_offline', error_detail: 'no media-callbacks listener is connected' });
    const back = await listen(h.workspace.apiKey);
    const { attempts } = await h.settled(messageId, ['delivered']);
    expect(attempts.at(-1)).toMatchObject({ status: 200, error: null });
    expect(back.deliveries.map((d) => d.webhook_id)).toContain(messageId);
  });

  it('cuts a slow handler at the timeout, and the listener’s late answer changes nothing', async () => {
    let late: DeliveryFrame | undefined;
    const listener = await listen(h.workspace.apiKey, '', (frame) => {
      late = frame;
      return 'silent';
    });
    const jobId = await h.jobs.image(listener.ready.relay_url, 'a slow handler');
    const messageId = callbackIdFor(jobId, 'image.completed');
    const [attempt] = await h.attempts(messageId, 1);
    expect(attempt).toMatchObject({ status: null, error: 'timeout' });
    expect(attempt!.duration_ms).toBeGreaterThanOrEqual(1_900);
    expect(attempt!.duration_ms).toBeLessThan(4_000);
    listener.socket.send(JSON.stringify({ type: 'result', id: late!.id, ...ok(late!) }));
    const attempts = await h.callbacks.attempts(messageId);
    expect(attempts[0]).toMatchObject({ error: 'timeout' });
  });

  it('refuses a relay URL of another workspace, or one that names no relay, as a callback_url', async () => {
    const mine = await listen(h.workspace.apiKey);
    const other = await h.stack.createWorkspace('relay-other');
    const theirs = api(h.stack, other.apiKey);
    const json = { model: 'pixel-1', prompt: 'x', size: '256x256', callback_url: mine.ready.relay_url };
    expectApiError(await theirs('/v1/images/generations', { method: 'POST', json }), 400, { param: 'callback_url', code: 'invalid_callback_url' });
    const guessed = `${h.stack.baseUrl}/webhook-relay/rly_${'a'.repeat(32)}`;
    expectApiError(await call('/v1/images/generations', { method: 'POST', json: { ...json, callback_url: guessed } }), 400, { code: 'invalid_callback_url' });
    expect((await call('/v1/images/generations', { method: 'POST', json })).status).toBe(202);
  });

  it('takes the workspace’s own relay URL as a webhook endpoint, and sends its test event through the listener', async () => {
    const listener = await listen(h.workspace.apiKey);
    const other = await h.stack.createWorkspace('relay-endpoint-other');
    const refused = await api(h.stack, other.apiKey)('/v1/webhook-endpoints', { method: 'POST', json: { url: listener.ready.relay_url } });
    expectApiError(refused, 400, { param: 'url', code: 'invalid_callback_url' });
    const created = await call('/v1/webhook-endpoints', { method: 'POST', json: { url: listener.ready.relay_url, events: ['image.failed'] } });
    expect(created.status).toBe(201);
    try {
      const test = await call(`/v1/webhook-endpoints/${created.json.id}/test`, { method: 'POST' });
      expect(test.json).toMatchObject({ type: 'image.failed', delivered: true, status_code: 200, address: null, response_excerpt: 'ok' });
      expect(listener.deliveries.map((d) => d.webhook_id)).toContain(test.json.webhook_id);
    } finally {
      await call(`/v1/webhook-endpoints/${created.json.id}`, { method: 'DELETE' });
    }
  });

  it('refuses a sixth listener with 429, a missing or wrong key with 401 and an unknown event with 400, before the upgrade', async () => {
    for (let i = 0; i < 5; i++) await listen(h.workspace.apiKey);
    const sixth = await refusal(h.workspace.apiKey);
    expectApiError({ ...sixth, headers: new Headers(sixth.headers) }, 429, { code: 'too_many_listeners' });
    expect(sixth.headers['retry-after']).toBe('5');
    const none = await refusal(undefined);
    expectApiError({ ...none, headers: new Headers(none.headers) }, 401, { code: 'missing_api_key' });
    const wrong = await refusal('sk_wrong');
    expectApiError({ ...wrong, headers: new Headers(wrong.headers) }, 401, { code: 'invalid_api_key' });
    const other = await h.stack.createWorkspace('relay-five');
    // Another workspace has places of its own.
    await listen(other.apiKey);
    await closeAll();
    const unknown = await refusal(h.workspace.apiKey, '?events=video.started');
    expectApiError({ ...unknown, headers: new Headers(unknown.headers) }, 400, { param: 'events', code: 'invalid_value' });
  });

  it('ends the sessions of a revoked key', async () => {
    const key = await h.stack.accounts.createApiKey(h.workspace.workspaceId);
    const listener = await listen(key.key);
    const closed = once(listener.socket, 'close') as Promise<[number, Buffer]>;
    await h.stack.accounts.revokeApiKey(h.workspace.workspaceId, key.id);
    const [code] = await Promise.race([closed, new Promise<never>((_, reject) => setTimeout(() => reject(new Error('not closed')), 4 * RELAY_REFRESH_MS))]);
    expect(code).toBe(CLOSE_KEY_REVOKED);
  });

  // Last: it leaves this machine's address refused for the rest of the minute.
  it('counts wrong keys with the API’s failed-authentication throttle: past the bound even a valid key is refused 429', async () => {
    let refused: Awaited<ReturnType<typeof refusal>> | undefined;
    for (let i = 0; i <= AUTH_FAILURES + 1 && !refused; i++) {
      const answer = await refusal(`sk_wrong_${i}`);
      if (answer.status === 429) refused = answer;
      else expect(answer.status).toBe(401);
    }
    expectApiError({ ...refused!, headers: new Headers(refused!.headers) }, 429, { code: 'too_many_failed_authentications' });
    const valid = await refusal(h.workspace.apiKey);
    expectApiError({ ...valid, headers: new Headers(valid.headers) }, 429, { code: 'too_many_failed_authentications' });
    expect(Number(valid.headers['retry-after'])).toBeGreaterThan(0);
  });
});
