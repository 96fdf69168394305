import { once } from 'node:events';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import { connect, type Socket } from 'node:net';
import WebSocket from 'ws';
import { Forwarder } from '../../tools/cli/src/forwarder';
import { Listener } from '../../tools/cli/src/listener';
import type { ProxySettings } from '../../tools/cli/src/proxy';
import { FakeGateway } from '../../tools/cli/src/test-support/fake-gateway';
import { LocalHandler } from '../../tools/cli/src/test-support/local-handler';
import { FastClock, Lines } from '../../tools/cli/src/test-support/recorders';
import { ConnectProxy } from '../support/connect-proxy';
import { makeTestPki, type TestPki } from '../dispatcher/support/pki';

// A gateway and a handler on https (a throwaway CA): wss directly and through HTTPS_PROXY, with
// the gateway's certificate checked end to end over the tunnel, and the forward's TLS timed.

let pki: TestPki;
let gateway: FakeGateway;
let handler: LocalHandler;
let proxy: ConnectProxy;
const listeners: Listener[] = [];

beforeAll(() => (pki = makeTestPki(['gateway.test'])));
afterAll(() => pki.cleanup());

beforeEach(async () => {
  gateway = await FakeGateway.start({ tls: { cert: pki.cert, key: pki.key } });
  handler = await LocalHandler.start({ tls: { cert: pki.cert, key: pki.key } });
  proxy = await ConnectProxy.start('127.0.0.2');
});

afterEach(async () => {
  await Promise.all(listeners.splice(0).map((listener) => listener.stop()));
  await Promise.all([gateway.stop(), handler.stop(), proxy.stop()]);
});

function listen(settings: { proxy?: ProxySettings; gatewayCa?: string; handlerCa?: string; baseUrl?: string }): Lines {
  const lines = new Lines();
  const listener = new Listener(
    {
      forwardTo: handler.url(),
      events: [],
      printSecret: false,
      apiKey: 'sk_test',
      baseUrl: new URL(settings.baseUrl ?? gateway.url),
      proxy: settings.proxy ?? {},
    },
    {
      output: lines,
      clock: new FastClock(100),
      random: () => 0.5,
      // As NODE_EXTRA_CA_CERTS would for the process.
      webSocket: (url, options) => new WebSocket(url, { ...options, ca: settings.gatewayCa }),
      forwarder: new Forwarder(handler.url(), { ca: settings.handlerCa }),
    },
  );
  listeners.push(listener);
  void listener.run();
  return lines;
}

it('connects to a wss gateway through HTTPS_PROXY, TLS end to end, and times the forward over https', async () => {
  const lines = listen({ proxy: { httpsProxy: proxy.url, httpProxy: 'http://127.0.0.2:9' }, gatewayCa: pki.caPem, handlerCa: pki.caPem });
  expect(await lines.waitFor(/^Connecting/)).toBe(`Connecting to wss://127.0.0.1:${gateway.port}/v1/webhook-relay/listen through the proxy ${proxy.url}…`);
  const connection = await gateway.connection(0);
  await lines.waitFor(/^Ready\./);
  expect(proxy.targets).toEqual([`127.0.0.1:${gateway.port}`]);

  connection.deliver({ id: 'dlv_tls' });
  const result = await connection.result('dlv_tls');
  expect(result).toMatchObject({ status: 200, error: null, excerpt: 'handled' });
  expect(result.timing).toEqual({ dns_ms: null, connect_ms: expect.any(Number), tls_ms: expect.any(Number), first_byte_ms: expect.any(Number) });
  expect(proxy.targets).toHaveLength(1);
});

describe('a gateway known by a name only the proxy resolves', () => {
  // A proxy at a network's edge resolves names the developer's machine cannot: this one sends every
  // tunnel to 127.0.0.1, whatever name it is asked for.
  let edge: Server;
  let edgeUrl: string;
  const asked: string[] = [];

  beforeEach(async () => {
    asked.length = 0;
    edge = createServer();
    edge.on('connect', (req: IncomingMessage, client: Socket) => {
      asked.push(req.url ?? '');
      const port = Number(/:(\d+)$/.exec(req.url ?? '')?.[1]);
      const upstream = connect(port, '127.0.0.1', () => {
        client.write('HTTP/1.1 200 Connection Established\r\n\r\n');
        upstream.pipe(client);
        client.pipe(upstream);
      });
      upstream.on('error', () => client.destroy());
      client.on('error', () => upstream.destroy());
    });
    edge.listen(0, '127.0.0.2');
    await once(edge, 'listening');
    edgeUrl = `http://127.0.0.2:${(edge.address() as { port: number }).port}`;
  });

  afterEach(async () => {
    edge.closeAllConnections();
    await new Promise((resolve) => edge.close(resolve));
  });

  it('tunnels to the name and checks the certificate for it', async () => {
    const lines = listen({ proxy: { httpsProxy: edgeUrl }, gatewayCa: pki.caPem, baseUrl: `https://gateway.test:${gateway.port}` });
    await lines.waitFor(/^Ready\./);
    expect(asked).toEqual([`gateway.test:${gateway.port}`]);
  });

  it('refuses a certificate that is not for the name', async () => {
    const lines = listen({ proxy: { httpsProxy: edgeUrl }, gatewayCa: pki.caPem, baseUrl: `https://other.test:${gateway.port}` });
    await lines.waitFor(/^Cannot connect to https:\/\/other\.test:\d+: Hostname\/IP does not match certificate's altnames.*; retrying in/);
    expect(asked[0]).toBe(`other.test:${gateway.port}`);
    expect(gateway.connections).toHaveLength(0);
  });
});

it('refuses a gateway whose certificate it does not trust, and retries', async () => {
  const lines = listen({});
  await lines.waitFor(/^Cannot connect to https:\/\/127\.0\.0\.1:\d+: .*certificate.*; retrying in/);
  expect(gateway.connections).toHaveLength(0);
});

it('reports a handler whose certificate it does not trust as tls', async () => {
  const lines = listen({ gatewayCa: pki.caPem });
  const connection = await gateway.connection(0);
  await lines.waitFor(/^Ready\./);
  connection.deliver({ id: 'dlv_untrusted' });
  expect(await connection.result('dlv_untrusted')).toMatchObject({ status: null, error: 'tls', error_detail: expect.any(String) });
  expect(handler.requests).toHaveLength(0);
});
