import { EXCERPT_BYTES } from './forwarder';
import { DEFAULT_TUNING, Listener, type ListenerTuning } from './listener';
import { CLOSE_KEY_REVOKED, CLOSE_TOO_MANY_LISTENERS } from './protocol';
import type { ListenSettings } from './settings';
import { eventually } from './test-support/eventually';
import { apiError, FakeGateway } from './test-support/fake-gateway';
import { closedPort, LocalHandler } from './test-support/local-handler';
import { FastClock, Lines } from './test-support/recorders';

const API_KEY = 'sk_test_key_never_printed';

let gateway: FakeGateway;
let handler: LocalHandler;
const listeners: Listener[] = [];

beforeEach(async () => {
  gateway = await FakeGateway.start();
  handler = await LocalHandler.start();
});

afterEach(async () => {
  await Promise.all(listeners.splice(0).map((listener) => listener.stop()));
  await gateway.stop();
  await handler.stop();
});

interface Started {
  listener: Listener;
  lines: Lines;
  clock: FastClock;
  /** The exit status, once run() ended. */
  exit: Promise<number>;
}

/**
 * A listener against the fake gateway. Its clock runs 100 times as fast, so the real backoff and
 * silence limits (500 ms, 60 s) pass in 5 ms and 600 ms; random 0.5 puts each delay at 3/4 of its step.
 */
function listen(settings: Partial<ListenSettings> = {}, tuning: Partial<ListenerTuning> = {}): Started {
  const lines = new Lines();
  const clock = new FastClock(100);
  const listener = new Listener(
    {
      forwardTo: handler.url(),
      events: [],
      printSecret: false,
      apiKey: API_KEY,
      baseUrl: new URL(gateway.url),
      proxy: {},
      ...settings,
    },
    { output: lines, clock, random: () => 0.5, tuning },
  );
  listeners.push(listener);
  return { listener, lines, clock, exit: listener.run() };
}

/** The delays the listener slept between attempts (the silence watchdog's are left out). */
function backoffDelays(clock: FastClock): number[] {
  return clock.delays.filter((ms) => ms !== DEFAULT_TUNING.idleTimeoutMs);
}

describe('connecting', () => {
  it('opens the relay with the API key and prints where callbacks go', async () => {
    const { lines } = listen();
    const ready = await lines.waitFor(/^Ready\./);
    expect(ready).toBe(`Ready. Callbacks to ${gateway.url}/v1/webhook-relay/rly_testtoken of workspace ws_test are forwarded to ${handler.url().href}.`);
    const [{ request }] = gateway.upgrades;
    expect(request.url).toBe('/v1/webhook-relay/listen');
    expect(request.headers.authorization).toBe(`Bearer ${API_KEY}`);
    expect(request.headers['user-agent']).toMatch(/^media-callbacks\/\d+\.\d+\.\d+ node\//);
    expect(lines.all.join('\n')).not.toContain(API_KEY);
  });

  it('asks for the --events and prints them', async () => {
    const { lines } = listen({ events: ['video.completed', 'image.failed'] });
    const ready = await lines.waitFor(/^Ready\./);
    expect(new URL(gateway.upgrades[0].request.url ?? '', 'http://x').searchParams.get('events')).toBe('video.completed,image.failed');
    expect(ready).toContain(' and video.completed, image.failed events of workspace ws_test ');
  });

  it('asks for the signing secret with --print-secret and prints it on a line of its own', async () => {
    const { lines } = listen({ printSecret: true });
    await lines.waitFor(/^Ready\./);
    expect(new URL(gateway.upgrades[0].request.url ?? '', 'http://x').searchParams.get('reveal_secret')).toBe('1');
    await eventually(() => expect(lines.stdout).toContain('whsec_dGVzdHNlY3JldA=='));
  });

  it('does not ask for the secret without --print-secret', async () => {
    const { lines } = listen();
    await lines.waitFor(/^Ready\./);
    expect(gateway.upgrades[0].request.url).not.toContain('reveal_secret');
  });

  it('keeps a base URL path prefix in front of the relay path', async () => {
    const { lines } = listen({ baseUrl: new URL(`${gateway.url}/media/`) });
    await lines.waitFor(/^Ready\./);
    expect(gateway.upgrades[0].request.url).toBe('/media/v1/webhook-relay/listen');
  });
});

describe('forwarding', () => {
  it('POSTs the body with exactly its headers and sends back the answer', async () => {
    const { lines } = listen();
    const connection = await gateway.connection(0);
    await lines.waitFor(/^Ready\./);
    handler.behaviour = (_req, res) => res.writeHead(202, { 'content-type': 'application/json', 'x-handler': 'yes' }).end('{"ok":true}');
    const body = '{"type":"image.completed","data":{"id":"img_1","prompt":"caf\u00e9 \u2615"}}';
    const delivery = connection.deliver({
      id: 'dlv_1',
      webhook_id: 'msg_abc',
      body,
      headers: {
        'content-type': 'application/json',
        'user-agent': 'MediaCallbacks/1.0',
        'webhook-id': 'msg_abc',
        'webhook-timestamp': '1764387601',
        'webhook-signature': 'v1,abc= v1,def=',
        // The dispatcher's own hop: not the forward's.
        host: 'receiver.example',
        'content-length': '999',
        connection: 'keep-alive',
      },
    });

    const result = await connection.result('dlv_1');
    const [received] = await handler.received(1);
    expect(received.method).toBe('POST');
    expect(received.url).toBe('/webhooks');
    expect(received.body).toBe(body);
    expect(received.headers).toMatchObject({
      'content-type': 'application/json',
      'user-agent': 'MediaCallbacks/1.0',
      'webhook-id': 'msg_abc',
      'webhook-timestamp': '1764387601',
      'webhook-signature': 'v1,abc= v1,def=',
      host: `127.0.0.1:${handler.port}`,
      'content-length': String(Buffer.byteLength(body)),
    });
    expect(Object.keys(received.headers).sort()).toEqual(
      ['connection', 'content-length', 'content-type', 'host', 'user-agent', 'webhook-id', 'webhook-signature', 'webhook-timestamp'].sort(),
    );
    expect(received.headers.connection).not.toBe('keep-alive');

    expect(result).toEqual({
      type: 'result',
      id: delivery.id,
      status: 202,
      error: null,
      error_detail: null,
      excerpt: '{"ok":true}',
      headers_bytes: expect.any(Number),
      duration_ms: expect.any(Number),
      // An IP address is not looked up; plain HTTP has no TLS.
      timing: { dns_ms: null, connect_ms: expect.any(Number), tls_ms: null, first_byte_ms: expect.any(Number) },
    });
    expect(result.headers_bytes).toBeGreaterThan('HTTP/1.1 202 Accepted\r\nx-handler: yes\r\n\r\n'.length);
    expect(await lines.waitFor(/msg_abc/)).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z {2}image\.completed {2}msg_abc {2}202 {2}\d+ ms$/);
  });

  it('keeps at most 1 KiB of the answer and reports a status that is not 2xx as an answer', async () => {
    const { lines } = listen();
    const connection = await gateway.connection(0);
    await lines.waitFor(/^Ready\./);
    handler.behaviour = (_req, res) => res.writeHead(500).end('x'.repeat(200_000));
    connection.deliver({ id: 'dlv_big' });
    const result = await connection.result('dlv_big');
    expect(result).toMatchObject({ status: 500, error: null });
    expect(result.excerpt).toBe('x'.repeat(EXCERPT_BYTES));
  });

  it('does not follow a redirect: the 3xx is the answer', async () => {
    const { lines } = listen();
    const connection = await gateway.connection(0);
    await lines.waitFor(/^Ready\./);
    handler.behaviour = (_req, res) => res.writeHead(307, { location: '/elsewhere' }).end();
    connection.deliver({ id: 'dlv_redirect' });
    expect(await connection.result('dlv_redirect')).toMatchObject({ status: 307, error: null });
    expect(handler.requests.map((r) => r.url)).toEqual(['/webhooks']);
  });

  it('cuts a slow handler at timeout_ms: error timeout', async () => {
    const { lines } = listen();
    const connection = await gateway.connection(0);
    await lines.waitFor(/^Ready\./);
    handler.behaviour = () => undefined;
    connection.deliver({ id: 'dlv_slow', webhook_id: 'msg_slow', timeout_ms: 300 });
    const result = await connection.result('dlv_slow');
    expect(result).toMatchObject({ status: null, error: 'timeout', excerpt: '' });
    expect(result.duration_ms).toBeGreaterThanOrEqual(295);
    expect(result.duration_ms).toBeLessThan(3_000);
    expect(await lines.waitFor(/msg_slow/)).toMatch(/ {2}msg_slow {2}timeout {2}\d+ ms$/);
  });

  it('reports a port nobody listens on as refused', async () => {
    const { lines } = listen({ forwardTo: new URL(`http://127.0.0.1:${await closedPort()}/webhooks`) });
    const connection = await gateway.connection(0);
    await lines.waitFor(/^Ready\./);
    connection.deliver({ id: 'dlv_refused', webhook_id: 'msg_refused' });
    expect(await connection.result('dlv_refused')).toMatchObject({ status: null, error: 'refused', error_detail: 'ECONNREFUSED' });
    expect(await lines.waitFor(/msg_refused/)).toMatch(/ {2}refused {2}\d+ ms$/);
  });

  it('reports a handler that drops the connection as reset', async () => {
    const { lines } = listen();
    const connection = await gateway.connection(0);
    await lines.waitFor(/^Ready\./);
    handler.behaviour = (req) => req.socket.destroy();
    connection.deliver({ id: 'dlv_reset' });
    expect(await connection.result('dlv_reset')).toMatchObject({ status: null, error: 'reset', error_detail: 'ECONNRESET' });
  });

  it('forwards deliveries concurrently', async () => {
    const { lines } = listen();
    const connection = await gateway.connection(0);
    await lines.waitFor(/^Ready\./);
    // Nobody is answered before all three have arrived: one at a time would time out.
    const waiting: (() => void)[] = [];
    handler.behaviour = (_req, res, received) => {
      waiting.push(() => res.writeHead(200).end(`done ${received.headers['webhook-id']}`));
      if (waiting.length === 3) for (const answer of waiting) answer();
    };
    const ids = ['dlv_a', 'dlv_b', 'dlv_c'];
    for (const id of ids) connection.deliver({ id, webhook_id: `msg_${id}`, timeout_ms: 5_000 });
    const results = await Promise.all(ids.map((id) => connection.result(id)));
    expect(results.map((r) => [r.status, r.excerpt])).toEqual(ids.map((id) => [200, `done msg_${id}`]));
  });

  it('ignores frames it does not know and says so for frames that are not JSON', async () => {
    const { lines } = listen();
    const connection = await gateway.connection(0);
    await lines.waitFor(/^Ready\./);
    connection.socket.send(JSON.stringify({ type: 'notice', text: 'from a newer gateway' }));
    connection.socket.send('not json');
    await lines.waitFor(/not JSON/);
    connection.deliver({ id: 'dlv_after' });
    expect(await connection.result('dlv_after')).toMatchObject({ status: 200 });
  });
});

describe('refusals', () => {
  it('exits 1 on a 401 with the API error message, without retrying', async () => {
    gateway.refusals.push({ status: 401, body: apiError('Invalid API key provided.', 'authentication_error', 'invalid_api_key') });
    const { lines, exit } = listen();
    expect(await exit).toBe(1);
    expect(gateway.upgrades).toHaveLength(1);
    expect(lines.stderr.at(-1)).toBe('The gateway refused the API key: Invalid API key provided. (401 invalid_api_key). Check MEDIA_API_KEY or --api-key.');
    expect(lines.all.join('\n')).not.toContain(API_KEY);
  });

  it('exits 2 on a 400 (an event type the gateway does not know)', async () => {
    gateway.refusals.push({ status: 400, body: apiError('Unknown event type "video.started".', 'invalid_request_error', 'invalid_value') });
    const { lines, exit } = listen();
    expect(await exit).toBe(2);
    expect(gateway.upgrades).toHaveLength(1);
    expect(lines.stderr.at(-1)).toBe('The gateway refused the request: Unknown event type "video.started". (400 invalid_value).');
  });

  it('retries a 429 with growing delays, then connects', async () => {
    const tooMany = { status: 429, body: apiError('The workspace has 5 listeners connected already.', 'rate_limit_error', 'too_many_listeners') };
    gateway.refusals.push(tooMany, tooMany, tooMany);
    const { lines, clock } = listen();
    await lines.waitFor(/^Ready\./);
    expect(gateway.upgrades).toHaveLength(4);
    // 3/4 of 500, 1000, 2000 ms (random 0.5).
    expect(backoffDelays(clock)).toEqual([375, 750, 1500]);
    expect(lines.count(/^Refused for now: The workspace has 5 listeners connected already\. \(429 too_many_listeners\); retrying in/)).toBe(3);
  });

  it('waits at least the Retry-After of a 429', async () => {
    gateway.refusals.push({ status: 429, body: apiError('Too many listeners.', 'rate_limit_error', 'too_many_listeners'), headers: { 'retry-after': '7' } });
    const { lines, clock } = listen();
    await lines.waitFor(/^Ready\./);
    expect(backoffDelays(clock)).toEqual([7_000]);
    expect(lines.stderr).toContain('Refused for now: Too many listeners. (429 too_many_listeners); retrying in 7.0 s.');
  });

  it('retries a 503 and a gateway that is not there yet', async () => {
    gateway.refusals.push({ status: 503, body: apiError('Starting.', 'api_error', 'unavailable') });
    const { lines } = listen();
    await lines.waitFor(/^Ready\./);
    expect(lines.stderr).toContain('The gateway is unavailable: Starting. (503 unavailable); retrying in 0.4 s.');

    const nobody = listen({ baseUrl: new URL(`http://127.0.0.1:${await closedPort()}`) });
    await nobody.lines.waitFor(/Cannot connect to .*ECONNREFUSED.*; retrying in 0\.4 s\.$/);
    await nobody.lines.waitFor(/Cannot connect to .*; retrying in 0\.8 s\.$/);
  });

  it('exits 1 on a 404: the base URL is not a gateway', async () => {
    gateway.refusals.push({ status: 404, body: '<html>Not Found</html>' });
    const { lines, exit } = listen();
    expect(await exit).toBe(1);
    expect(lines.stderr.at(-1)).toBe(`The gateway answered: <html>Not Found</html> (404). Is ${gateway.url} the API's address (--base-url, MEDIA_BASE_URL)?`);
  });
});

describe('the connection', () => {
  it('reconnects when the gateway closes it, and forwards on the new one', async () => {
    const { lines, clock } = listen();
    const first = await gateway.connection(0);
    await lines.waitFor(/^Ready\./);
    first.socket.close(1012, 'gateway restarting');
    const second = await gateway.connection(1);
    await lines.waitFor(/^Reconnected; forwarding to/);
    expect(lines.stderr).toContain('Disconnected (1012: gateway restarting); reconnecting in 0.4 s.');
    expect(backoffDelays(clock)).toEqual([375]);
    second.deliver({ id: 'dlv_second' });
    expect(await second.result('dlv_second')).toMatchObject({ status: 200 });
    expect(lines.count(/^Ready\./)).toBe(1);
  });

  it('retries a close for too many listeners (4429)', async () => {
    const { lines } = listen();
    (await gateway.connection(0)).socket.close(CLOSE_TOO_MANY_LISTENERS, 'too_many_listeners');
    await gateway.connection(1);
    await lines.waitFor(/^The workspace has its most listeners connected \(4429: too_many_listeners\); reconnecting in/);
  });

  it('exits 1 when the gateway closes with 4401 (key revoked)', async () => {
    const { lines, exit } = listen();
    const connection = await gateway.connection(0);
    await lines.waitFor(/^Ready\./);
    connection.socket.close(CLOSE_KEY_REVOKED, 'api key revoked');
    expect(await exit).toBe(1);
    expect(lines.stderr.at(-1)).toBe('The gateway closed the connection: the API key was revoked (4401: api key revoked).');
    expect(gateway.upgrades).toHaveLength(1);
  });

  it('starts the backoff over after a connection that held', async () => {
    const unavailable = { status: 503, body: apiError('Starting.', 'api_error', 'unavailable') };
    gateway.refusals.push(unavailable, unavailable);
    // Silence is not what this is about: the watchdog is pushed out of the way.
    const { lines, clock } = listen({}, { stableAfterMs: 30_000, idleTimeoutMs: 600_000 });
    (await gateway.connection(0)).socket.close(1001, 'going away');
    await gateway.connection(1);
    // A connection that closed at once: the steps go on growing.
    expect(backoffDelays(clock).filter((ms) => ms !== 600_000)).toEqual([375, 750, 1500]);
    await lines.waitFor(/^Reconnected/);
    // 60 s of the clock's time later the connection has held: the next delay is the first one.
    await new Promise((resolve) => setTimeout(resolve, 600));
    (await gateway.connection(1)).socket.close(1001, 'going away');
    await gateway.connection(2);
    expect(backoffDelays(clock).filter((ms) => ms !== 600_000)).toEqual([375, 750, 1500, 375]);
  });

  it('takes silence for a dead connection and reconnects', async () => {
    const { lines } = listen();
    await gateway.connection(0);
    await lines.waitFor(/^Ready\./);
    // The gateway says nothing more (its pings stopped): after 60 s of the clock's time the listener gives up on it.
    await gateway.connection(1, 3_000);
    expect(lines.stderr).toContain('No word from the gateway for 60 s: the connection is dead; reconnecting in 0.4 s.');
  });

  it('keeps a connection the gateway pings', async () => {
    const { lines } = listen();
    const connection = await gateway.connection(0);
    await lines.waitFor(/^Ready\./);
    // 15 s of the clock's time between pings, for 2 minutes of it.
    const pinging = setInterval(() => connection.socket.ping(), 150);
    await new Promise((resolve) => setTimeout(resolve, 1_200));
    clearInterval(pinging);
    expect(gateway.connections).toHaveLength(1);
    expect(connection.closed).toBeUndefined();
  });

  it('closes cleanly when stopped, and stop() can be called twice', async () => {
    const { listener, lines, exit } = listen();
    const connection = await gateway.connection(0);
    await lines.waitFor(/^Ready\./);
    await Promise.all([listener.stop(), listener.stop()]);
    expect(await exit).toBe(0);
    expect(await connection.waitClosed()).toEqual({ code: 1000, reason: 'listener stopped' });
  });

  it('stops while waiting to retry', async () => {
    gateway.refusals.push({ status: 503, body: apiError('Starting.', 'api_error', 'unavailable') });
    const { listener, lines, exit } = listen({}, { initialBackoffMs: 60_000 });
    await lines.waitFor(/retrying in/);
    await listener.stop();
    expect(await exit).toBe(0);
    expect(gateway.upgrades).toHaveLength(1);
  });
});
