import { once } from 'node:events';
import { createServer, type IncomingMessage } from 'node:http';
import type { Socket } from 'node:net';
import { Listener, type ListenerTuning } from '../../tools/cli/src/listener';
import type { ProxySettings } from '../../tools/cli/src/proxy';
import { eventually } from '../../tools/cli/src/test-support/eventually';
import { FakeGateway } from '../../tools/cli/src/test-support/fake-gateway';
import { LocalHandler } from '../../tools/cli/src/test-support/local-handler';
import { FastClock, Lines } from '../../tools/cli/src/test-support/recorders';
import { ConnectProxy } from '../support/connect-proxy';

// The connection to the gateway through an HTTP CONNECT proxy (HTTP_PROXY, NO_PROXY), and the
// forward to the local handler beside it, which never takes the proxy.

let gateway: FakeGateway;
let handler: LocalHandler;
let proxy: ConnectProxy;
const listeners: Listener[] = [];

beforeEach(async () => {
  gateway = await FakeGateway.start();
  handler = await LocalHandler.start();
  proxy = await ConnectProxy.start('127.0.0.2');
});

afterEach(async () => {
  await Promise.all(listeners.splice(0).map((listener) => listener.stop()));
  await Promise.all([gateway.stop(), handler.stop(), proxy.stop()]);
});

function listen(settings: ProxySettings, tuning: Partial<ListenerTuning> = {}): { lines: Lines; clock: FastClock; listener: Listener; exit: Promise<number> } {
  const lines = new Lines();
  const clock = new FastClock(100);
  const listener = new Listener(
    { forwardTo: handler.url(), events: [], printSecret: false, apiKey: 'sk_test', baseUrl: new URL(gateway.url), proxy: settings },
    { output: lines, clock, random: () => 0.5, tuning },
  );
  listeners.push(listener);
  return { lines, clock, listener, exit: listener.run() };
}

it('tunnels the WebSocket through HTTP_PROXY, and forwards to the handler directly', async () => {
  const { lines } = listen({ httpProxy: proxy.url, httpsProxy: 'http://127.0.0.2:9' });
  expect(await lines.waitFor(/^Connecting/)).toBe(`Connecting to ws://127.0.0.1:${gateway.port}/v1/webhook-relay/listen through the proxy ${proxy.url}…`);
  const connection = await gateway.connection(0);
  await lines.waitFor(/^Ready\./);
  expect(proxy.targets).toEqual([`127.0.0.1:${gateway.port}`]);
  // The gateway sees the proxy's address, not the listener's.
  expect(connection.request.socket.remoteAddress).toBe('127.0.0.2');
  expect(connection.request.headers.authorization).toBe('Bearer sk_test');

  connection.deliver({ id: 'dlv_1' });
  expect(await connection.result('dlv_1')).toMatchObject({ status: 200, error: null });
  expect(handler.requests).toHaveLength(1);
  expect(proxy.targets).toHaveLength(1);
});

it('connects directly to a gateway NO_PROXY names', async () => {
  const { lines } = listen({ httpProxy: proxy.url, noProxy: 'localhost,127.0.0.1' });
  expect(await lines.waitFor(/^Connecting/)).not.toContain('proxy');
  await lines.waitFor(/^Ready\./);
  expect(proxy.targets).toEqual([]);
});

it('retries when the proxy refuses the tunnel, then connects once it opens it', async () => {
  proxy.mode = { kind: 'refuse' };
  const { lines } = listen({ httpProxy: proxy.url });
  await lines.waitFor(
    new RegExp(`^Cannot connect to ${gateway.url}: proxy ${proxy.url}: CONNECT 127\\.0\\.0\\.1:${gateway.port} answered 403 Forbidden; retrying in`),
  );
  proxy.mode = { kind: 'open' };
  await lines.waitFor(/^Ready\./);
  expect(proxy.targets.length).toBeGreaterThan(1);
});

it('gives a proxy that does not open the tunnel the handshake timeout, then retries', async () => {
  proxy.mode = { kind: 'slow', delayMs: 60_000 };
  const { lines } = listen({ httpProxy: proxy.url }, { handshakeTimeoutMs: 300 });
  await lines.waitFor(new RegExp(`proxy ${proxy.url}: no tunnel to 127\\.0\\.0\\.1:${gateway.port} within 300 ms; retrying in`));
});

it('stops at once while the proxy holds the tunnel', async () => {
  proxy.mode = { kind: 'slow', delayMs: 60_000 };
  const { listener, exit } = listen({ httpProxy: proxy.url });
  await eventually(() => expect(proxy.targets).toHaveLength(1));
  const stopping = Date.now();
  await listener.stop();
  expect(await exit).toBe(0);
  expect(Date.now() - stopping).toBeLessThan(1_000);
  expect(gateway.upgrades).toHaveLength(0);
});

it("sends the proxy URL's credentials as Proxy-Authorization and never prints them", async () => {
  // A proxy that wants other credentials: 407 to every CONNECT.
  const asked: IncomingMessage[] = [];
  const strict = createServer();
  strict.on('connect', (req: IncomingMessage, socket: Socket) => {
    asked.push(req);
    socket.end('HTTP/1.1 407 Proxy Authentication Required\r\n\r\n');
  });
  strict.listen(0, '127.0.0.2');
  await once(strict, 'listening');
  try {
    const url = `http://dev%40corp:p%3Ass@127.0.0.2:${(strict.address() as { port: number }).port}`;
    const { lines } = listen({ httpProxy: url });
    await lines.waitFor(/answered 407 Proxy Authentication Required; retrying in/);
    expect(asked[0].headers['proxy-authorization']).toBe(`Basic ${Buffer.from('dev@corp:p:ss').toString('base64')}`);
    expect(asked[0].url).toBe(`127.0.0.1:${gateway.port}`);
    expect(lines.all.join('\n')).not.toMatch(/p%3Ass|p:ss|dev/);
  } finally {
    strict.closeAllConnections();
    await new Promise((resolve) => strict.close(resolve));
  }
});
