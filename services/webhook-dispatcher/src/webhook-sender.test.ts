import { once } from 'node:events';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { createServer, type Server } from 'node:https';
import type { Socket } from 'node:net';
import type { TLSSocket } from 'node:tls';
import { CallbackUrlGuard, type CheckedTarget } from '@media/callback-guard';
import { makeTestPki, type TestPki } from '../../../test/dispatcher/support/pki';
import { WebhookSender } from './webhook-sender';
import type { Exchange } from '@media/callbacks';

/**
 * WebhookSender in process against real HTTPS servers on loopback addresses: connection reuse
 * keyed by the checked addresses, the retry after a stale pooled socket, and isolation between
 * receivers. 127.0.0.2 is loopback on Linux like 127.0.0.1, so two servers on the same port stand
 * for one name whose DNS answer changes.
 */

/** What a server saw of one request. */
interface Arrival {
  path: string;
  /** Which TLS connection (1-based, in order of acceptance) carried it. */
  connection: number;
  /** Its 1-based position on that connection. */
  onConnection: number;
  localAddress: string | undefined;
  sessionReused: boolean;
}

type Handler = (req: IncomingMessage, res: ServerResponse, arrival: Arrival) => void;

const answerOk: Handler = (_req, res) => res.end('ok');

/** An HTTPS server on one loopback address that counts connections and notes every request. */
class LoopbackServer {
  tcpConnections = 0;
  tlsConnections = 0;
  readonly arrivals: Arrival[] = [];
  /** Connections (by number) the server has seen close. */
  readonly closed = new Set<number>();
  handler: Handler = answerOk;
  readonly #sockets = new Set<Socket>();
  readonly #numbers = new WeakMap<Socket, { connection: number; requests: number }>();

  private constructor(
    readonly server: Server,
    readonly host: string,
    readonly port: number,
  ) {}

  static async start(pki: TestPki, host: string, port = 0): Promise<LoopbackServer> {
    const server = createServer({ cert: pki.cert, key: pki.key });
    server.listen(port, host);
    await Promise.race([once(server, 'listening'), once(server, 'error').then(([error]) => Promise.reject(error))]);
    const started = new LoopbackServer(server, host, (server.address() as { port: number }).port);
    server.on('connection', (socket: Socket) => {
      started.tcpConnections++;
      started.#sockets.add(socket);
      socket.once('close', () => started.#sockets.delete(socket));
    });
    server.on('secureConnection', (socket: TLSSocket) => {
      const connection = ++started.tlsConnections;
      started.#numbers.set(socket, { connection, requests: 0 });
      socket.once('close', () => started.closed.add(connection));
    });
    server.on('request', (req: IncomingMessage, res: ServerResponse) => {
      const socket = req.socket as TLSSocket;
      const numbers = started.#numbers.get(socket)!;
      const arrival: Arrival = {
        path: req.url ?? '/',
        connection: numbers.connection,
        onConnection: ++numbers.requests,
        localAddress: socket.localAddress,
        sessionReused: socket.isSessionReused(),
      };
      started.arrivals.push(arrival);
      // The body is read before answering, as a real receiver would (and so the client can reuse).
      req.resume();
      req.once('end', () => started.handler(req, res, arrival));
    });
    return started;
  }

  async stop(): Promise<void> {
    for (const socket of this.#sockets) socket.destroy();
    this.server.close();
    await once(this.server, 'close');
  }
}

/** A second server on `host` with the same port as `first`, retried on another port if taken there. */
async function pairOn(pki: TestPki, hosts: [string, string]): Promise<[LoopbackServer, LoopbackServer]> {
  for (let tries = 0; ; tries++) {
    const first = await LoopbackServer.start(pki, hosts[0]);
    try {
      return [first, await LoopbackServer.start(pki, hosts[1], first.port)];
    } catch (error) {
      await first.stop();
      if ((error as NodeJS.ErrnoException).code !== 'EADDRINUSE' || tries >= 5) throw error;
    }
  }
}

async function eventually(check: () => boolean, what: string, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

let pki: TestPki;
/** The current DNS answer for every name the guard resolves. */
let answer: string[] = ['127.0.0.1'];
const guard = new CallbackUrlGuard({ allowHttp: false, allowedCidrs: ['127.0.0.0/8'] }, async () => answer.map((address) => ({ address, family: 4 as const })));
const servers: LoopbackServer[] = [];
const senders: WebhookSender[] = [];

beforeAll(() => {
  pki = makeTestPki(['hooks.test']);
});

afterEach(async () => {
  for (const sender of senders.splice(0)) sender.close();
  for (const server of servers.splice(0)) await server.stop();
  answer = ['127.0.0.1'];
});

afterAll(() => pki?.cleanup());

/** A sender trusting the test CA; idle sockets are kept long so reuse does not depend on speed. */
async function sender(options: { timeoutMs?: number; socketIdleMs?: number } = {}): Promise<WebhookSender> {
  const created = await WebhookSender.create({
    timeoutMs: options.timeoutMs ?? 10_000,
    extraCaPem: pki.caPem,
    pool: { socketIdleMs: options.socketIdleMs ?? 60_000 },
  });
  senders.push(created);
  return created;
}

async function serve(host = '127.0.0.1'): Promise<LoopbackServer> {
  const server = await LoopbackServer.start(pki, host);
  servers.push(server);
  return server;
}

/** Checks `https://hooks.test:<port><path>` against the current answer, as every attempt does. */
const target = (port: number, path = '/hook'): Promise<CheckedTarget> => guard.check(`https://hooks.test:${port}${path}`);

const post = (via: WebhookSender, to: CheckedTarget): Promise<Exchange> =>
  via.send(to, Buffer.from('{"type":"image.completed"}'), { 'content-type': 'application/json', 'webhook-id': 'msg_test' });

describe('connection reuse', () => {
  it('sends consecutive attempts to the same checked address over one TLS connection', async () => {
    const server = await serve();
    const webhooks = await sender();

    const exchanges: Exchange[] = [];
    for (let i = 0; i < 5; i++) exchanges.push(await post(webhooks, await target(server.port)));

    expect(exchanges.map((e) => [e.status, e.transportError, e.address])).toEqual(Array(5).fill([200, null, '127.0.0.1']));
    expect(server.tcpConnections).toBe(1);
    expect(server.tlsConnections).toBe(1);
    expect(server.arrivals.map((a) => [a.connection, a.onConnection])).toEqual([
      [1, 1],
      [1, 2],
      [1, 3],
      [1, 4],
      [1, 5],
    ]);
    // The first attempt dialled and shook hands; the others did neither, and say so.
    expect(exchanges[0].timing).toMatchObject({ connect_ms: expect.any(Number), tls_ms: expect.any(Number) });
    for (const exchange of exchanges.slice(1)) {
      expect(exchange.timing).toMatchObject({ dns_ms: null, connect_ms: null, tls_ms: null, first_byte_ms: expect.any(Number) });
    }
  });

  it('never reuses a connection for an attempt whose check resolved to another address (DNS rebinding)', async () => {
    const [one, two] = await pairOn(pki, ['127.0.0.1', '127.0.0.2']);
    servers.push(one, two);
    const webhooks = await sender();

    answer = ['127.0.0.1'];
    expect(await post(webhooks, await target(one.port))).toMatchObject({ status: 200, address: '127.0.0.1' });

    // Same name, same port, a socket to 127.0.0.1 idle in the pool: the new answer must win.
    answer = ['127.0.0.2'];
    const rebound = await post(webhooks, await target(one.port));
    expect(rebound).toMatchObject({ status: 200, transportError: null, address: '127.0.0.2' });
    expect(two.tlsConnections).toBe(1);
    expect(two.arrivals).toEqual([expect.objectContaining({ connection: 1, onConnection: 1, localAddress: '127.0.0.2' })]);
    expect(one.arrivals).toHaveLength(1);

    // An answer naming both is yet another set of checked addresses: no socket to either is reused.
    answer = ['127.0.0.1', '127.0.0.2'];
    expect(await post(webhooks, await target(one.port))).toMatchObject({ status: 200 });
    expect(one.tlsConnections + two.tlsConnections).toBe(3);
    expect([...one.arrivals, ...two.arrivals].filter((a) => a.onConnection > 1)).toEqual([]);

    // Back to the first answer: the connection checked-for-127.0.0.1 may serve it again.
    answer = ['127.0.0.1'];
    expect(await post(webhooks, await target(one.port))).toMatchObject({ status: 200, address: '127.0.0.1' });
    expect(one.arrivals.at(-1)).toMatchObject({ connection: 1, onConnection: 2 });
    // Nothing checked for one address ever arrived at the other.
    expect(one.arrivals.every((a) => a.localAddress === '127.0.0.1')).toBe(true);
    expect(two.arrivals.every((a) => a.localAddress === '127.0.0.2')).toBe(true);
  });

  it('resumes the TLS session on a new connection when the previous one could not be kept', async () => {
    const server = await serve();
    server.handler = (_req, res) => res.writeHead(200, { connection: 'close' }).end('ok');
    const webhooks = await sender();

    expect(await post(webhooks, await target(server.port))).toMatchObject({ status: 200 });
    expect(await post(webhooks, await target(server.port))).toMatchObject({ status: 200 });

    expect(server.tlsConnections).toBe(2);
    expect(server.arrivals.map((a) => a.sessionReused)).toEqual([false, true]);
  });

  it('does not let the idle timeout of pooled sockets cut an answer that is slow to come', async () => {
    const server = await serve();
    const webhooks = await sender({ socketIdleMs: 100 });
    server.handler = (_req, res, arrival) => (arrival === server.arrivals[0] ? res.end('ok') : void setTimeout(() => res.end('late'), 500));

    expect(await post(webhooks, await target(server.port))).toMatchObject({ status: 200 });
    // On the pooled socket or a new one (if it idled out), the socket timeout is the agent's 100 ms,
    // and the answer 500 ms later is still awaited in full.
    expect(await post(webhooks, await target(server.port))).toMatchObject({ status: 200, transportError: null });
  });

  it('destroys its connections on close()', async () => {
    const server = await serve();
    const webhooks = await sender();
    expect(await post(webhooks, await target(server.port))).toMatchObject({ status: 200 });
    expect(server.closed.size).toBe(0);

    webhooks.close();
    webhooks.close();
    await eventually(() => server.closed.has(1), 'the pooled connection to close');
  });
});

describe('a pooled socket the server has closed', () => {
  /** As when the server's keep-alive timeout fires just as the next request goes out on the socket. */
  const dropKeptAliveConnections: Handler = (req, res, arrival) => {
    if (arrival.onConnection > 1) req.socket.destroy();
    else res.end('ok');
  };

  it('is not a failed attempt: the request goes again, once, on a new connection', async () => {
    const server = await serve();
    server.handler = dropKeptAliveConnections;
    const webhooks = await sender();

    expect(await post(webhooks, await target(server.port))).toMatchObject({ status: 200 });
    const second = await post(webhooks, await target(server.port));

    expect(second).toMatchObject({ status: 200, transportError: null, transportDetail: null, address: '127.0.0.1', excerpt: 'ok' });
    // The reused connection carried it first (and was dropped), then a new one.
    expect(server.arrivals.map((a) => [a.connection, a.onConnection])).toEqual([
      [1, 1],
      [1, 2],
      [2, 1],
    ]);
    expect(server.tlsConnections).toBe(2);
    // The retry is a fresh connection with a full exchange, so its timings are real.
    expect(second.timing).toMatchObject({ connect_ms: expect.any(Number), tls_ms: expect.any(Number) });
  });

  it('is retried only once: a receiver that also drops the new connection is a reset', async () => {
    const server = await serve();
    server.handler = (req, res, arrival) => (arrival.connection === 1 && arrival.onConnection === 1 ? res.end('ok') : req.socket.destroy());
    const webhooks = await sender();

    expect(await post(webhooks, await target(server.port))).toMatchObject({ status: 200 });
    expect(await post(webhooks, await target(server.port))).toMatchObject({ status: null, transportError: 'reset', address: '127.0.0.1' });
    expect(server.arrivals).toHaveLength(3);
  });

  it('is told apart from a reset on a new connection, which is not retried', async () => {
    const server = await serve();
    server.handler = (req) => req.socket.destroy();
    const webhooks = await sender();

    expect(await post(webhooks, await target(server.port))).toMatchObject({ status: null, transportError: 'reset', address: '127.0.0.1' });
    expect(server.arrivals).toHaveLength(1);
  });
});

describe('a slow receiver', () => {
  it('holds no socket another receiver needs, and its own attempts do not queue behind each other', async () => {
    const slow = await serve('127.0.0.2');
    slow.handler = () => undefined; // never answers
    const fast = await serve('127.0.0.1');
    const webhooks = await sender({ timeoutMs: 30_000 });

    answer = ['127.0.0.2'];
    const slowTarget = await target(slow.port, '/slow');
    let slowSettled = 0;
    const hung = Array.from({ length: 20 }, () => post(webhooks, slowTarget).finally(() => slowSettled++));
    // All twenty are at the slow receiver at once: no per-receiver cap queues them.
    await eventually(() => slow.arrivals.length === 20, 'twenty requests at the slow receiver');

    answer = ['127.0.0.1'];
    expect(await post(webhooks, await target(fast.port, '/fast'))).toMatchObject({ status: 200, address: '127.0.0.1' });
    expect(slowSettled).toBe(0);

    await slow.stop();
    servers.splice(servers.indexOf(slow), 1);
    expect((await Promise.all(hung)).every((e) => e.status === null && e.transportError === 'reset')).toBe(true);
  });
});

describe('Retry-After', () => {
  it('is read from the answer, in seconds or as a date, and is null when the receiver does not send it', async () => {
    const server = await serve();
    const webhooks = await sender();
    const inTwoMinutes = new Date(Date.now() + 120_000).toUTCString();
    const answers = [{ 'retry-after': '30' }, { 'retry-after': inTwoMinutes }, {}];
    server.handler = (_req, res) => res.writeHead(429, answers[server.arrivals.length - 1]).end();

    const exchanges: Exchange[] = [];
    for (let i = 0; i < answers.length; i++) exchanges.push(await post(webhooks, await target(server.port)));

    expect(exchanges.map((e) => e.status)).toEqual([429, 429, 429]);
    expect(exchanges[0]!.retryAfterMs).toBe(30_000);
    // Whole seconds on the wire, and the exchange itself took a moment.
    expect(exchanges[1]!.retryAfterMs).toBeGreaterThan(115_000);
    expect(exchanges[1]!.retryAfterMs).toBeLessThanOrEqual(120_000);
    expect(exchanges[2]!.retryAfterMs).toBeNull();
  });
});
