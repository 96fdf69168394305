import { once } from 'node:events';
import { createServer as createTcpServer, type Server as TcpServer, type Socket } from 'node:net';
import { createServer as createTlsServer, type TLSSocket } from 'node:tls';
import { CallbackUrlGuard } from '@media/callback-guard';
import { makeTestPki, type TestPki } from '../../../test/dispatcher/support/pki';
import { errorOf, type Exchange } from '@media/callbacks';
import { RESPONSE_READ_CAP_BYTES, WebhookSender } from './webhook-sender';

/**
 * Receivers that try to hold an attempt past its deadline, as raw servers on loopback writing bytes
 * by hand: every one is cut at WEBHOOK_TIMEOUT_MS at the latest (or at once, where a cap is hit
 * first), recorded with the error class that says what happened, and leaves no socket open.
 */

const TIMEOUT_MS = 1_500;
/** How late past the deadline an exchange may end on a busy machine: the check is that it ends. */
const GRACE_MS = 1_500;

type Behaviour = (socket: Socket) => void;

/** A 101 head: Node hands such a connection away from the request instead of answering it. */
const SWITCH = 'HTTP/1.1 101 Switching Protocols\r\nupgrade: websocket\r\nconnection: Upgrade\r\n\r\n';

let pki: TestPki;
const servers: TcpServer[] = [];
const sockets = new Set<Socket>();
const timers = new Set<NodeJS.Timeout>();
const guard = new CallbackUrlGuard({ allowHttp: false, allowedCidrs: ['127.0.0.0/8'] }, async () => [{ address: '127.0.0.1', family: 4 as const }]);
let sender: WebhookSender;

beforeAll(async () => {
  pki = makeTestPki(['hooks.test']);
  sender = await WebhookSender.create({ timeoutMs: TIMEOUT_MS, extraCaPem: pki.caPem });
});

afterEach(async () => {
  for (const timer of timers) clearInterval(timer);
  timers.clear();
  for (const socket of sockets) socket.destroy();
  for (const server of servers.splice(0)) {
    server.close();
    await once(server, 'close');
  }
});

afterAll(() => {
  sender?.close();
  pki?.cleanup();
});

/** Every `ms`, until the socket closes. */
function every(socket: Socket, ms: number, tick: () => void): void {
  const timer = setInterval(() => (socket.destroyed ? clearInterval(timer) : tick()), ms);
  timers.add(timer);
}

/** A server that speaks TLS properly and then behaves as told, once the request head has arrived. */
async function tlsReceiver(behave: Behaviour): Promise<number> {
  const server = createTlsServer({ cert: pki.cert, key: pki.key }, (socket: TLSSocket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
    socket.on('error', () => undefined);
    let head = '';
    const onData = (chunk: Buffer) => {
      head += chunk.toString('latin1');
      if (!head.includes('\r\n\r\n')) return;
      socket.off('data', onData);
      behave(socket);
    };
    socket.on('data', onData);
  });
  return listen(server);
}

/**
 * A plain TCP server that accepts and never answers (a TLS client waits for a ServerHello that never
 * comes). Unless `reads`, it does not even read the ClientHello: the kernel's buffers take it, so
 * the sender sees no difference, and the socket is read only afterwards, by {@link socketsClosed}.
 */
async function tcpReceiver(reads: boolean): Promise<number> {
  return listen(
    createTcpServer({ pauseOnConnect: !reads }, (socket) => {
      sockets.add(socket);
      socket.once('close', () => sockets.delete(socket));
      socket.on('error', () => undefined);
      if (reads) socket.resume();
    }),
  );
}

async function listen(server: TcpServer): Promise<number> {
  servers.push(server);
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return (server.address() as { port: number }).port;
}

async function post(port: number): Promise<Exchange> {
  const target = await guard.check(`https://hooks.test:${port}/hook`);
  return sender.send(target, Buffer.from('{"type":"image.completed"}'), { 'content-type': 'application/json', 'webhook-id': 'msg_hostile' });
}

/** The server side of every connection of the exchange is closed by now (the sender let go). */
async function socketsClosed(): Promise<void> {
  // A server socket learns of the sender's close only by reading; the exchange is over, so read.
  for (const socket of sockets) socket.resume();
  const deadline = Date.now() + 5_000;
  while ([...sockets].some((s) => !s.destroyed)) {
    if (Date.now() > deadline) throw new Error('the sender left a connection open');
    await new Promise((r) => setTimeout(r, 20));
  }
}

const cutAtDeadline = (exchange: Exchange) => {
  expect(exchange.durationMs).toBeGreaterThanOrEqual(TIMEOUT_MS - 50);
  expect(exchange.durationMs).toBeLessThan(TIMEOUT_MS + GRACE_MS);
};

describe('a receiver that stalls', () => {
  it.each([
    ['reads the ClientHello and never answers it', true],
    ['accepts the connection and never reads from it', false],
  ])('the TLS handshake (%s): timeout at the deadline', async (_how, reads) => {
    const exchange = await post(await tcpReceiver(reads));
    expect(exchange).toMatchObject({ status: null, transportError: 'timeout' });
    cutAtDeadline(exchange);
    await socketsClosed();
  });

  it('trickles its status line and headers one byte at a time: timeout at the deadline', async () => {
    const answer = 'HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\ncontent-length: 2\r\n\r\nok';
    const exchange = await post(
      await tlsReceiver((socket) => {
        let i = 0;
        every(socket, 100, () => socket.write(answer[i++ % answer.length]!));
      }),
    );
    expect(exchange).toMatchObject({ status: null, transportError: 'timeout' });
    cutAtDeadline(exchange);
    await socketsClosed();
  });

  it('answers with interim 1xx heads, one after another, and never a final one: timeout at the deadline', async () => {
    // Each 1xx is a head of its own, so the head cap never adds them up: only the deadline ends this.
    const exchange = await post(await tlsReceiver((socket) => every(socket, 5, () => socket.write('HTTP/1.1 102 Processing\r\n\r\n'))));
    expect(exchange).toMatchObject({ status: null, transportError: 'timeout' });
    cutAtDeadline(exchange);
    await socketsClosed();
  });

  it('answers 2xx in time and then trickles its body: delivered, and still cut at the deadline', async () => {
    const exchange = await post(
      await tlsReceiver((socket) => {
        socket.write('HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\ntransfer-encoding: chunked\r\n\r\n');
        every(socket, 100, () => socket.write('1\r\nx\r\n'));
      }),
    );
    expect(exchange).toMatchObject({ status: 200, transportError: null });
    cutAtDeadline(exchange);
    await socketsClosed();
  });
});

describe('a receiver that switches protocols', () => {
  it.each([
    ['and holds the connection', (socket: Socket) => socket.write(SWITCH)],
    ['and closes it', (socket: Socket) => socket.end(SWITCH)],
    ['and then answers 200 on it', (socket: Socket) => socket.write(`${SWITCH}HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok`)],
  ])('answers 101 %s: an answer that is not a 2xx, at once, and the connection let go', async (_how, behave) => {
    const exchange = await post(await tlsReceiver(behave));
    expect(exchange).toMatchObject({ status: 101, transportError: null });
    expect(errorOf(exchange)).toBe('http_error');
    expect(exchange.durationMs).toBeLessThan(TIMEOUT_MS);
    await socketsClosed();
  });
});

describe('a receiver that floods', () => {
  it.each([
    [200, null],
    [500, 'http_error'],
  ])('answers %i with an endless body: cut at the read cap at once, not at the deadline', async (status, error) => {
    const exchange = await post(
      await tlsReceiver((socket) => {
        socket.write(`HTTP/1.1 ${status} X\r\ncontent-type: text/plain\r\ntransfer-encoding: chunked\r\n\r\n`);
        const chunk = `4000\r\n${'y'.repeat(0x4000)}\r\n`;
        every(socket, 1, () => socket.write(chunk));
      }),
    );
    expect(exchange.status).toBe(status);
    expect(errorOf(exchange)).toBe(error);
    expect(exchange.excerpt).toMatch(/^y+$/);
    expect(exchange.excerpt.length).toBeLessThanOrEqual(RESPONSE_READ_CAP_BYTES);
    expect(exchange.durationMs).toBeLessThan(TIMEOUT_MS);
    await socketsClosed();
  });

  it('answers with a huge header block: cut when the head passes its cap, as an answer that is not acceptable HTTP', async () => {
    // 1 MiB of head in one go, and then silence: a client that buffered the whole of it (a process
    // started with a larger --max-http-header-size) would wait for the rest until the deadline.
    const line = `x-filler: ${'z'.repeat(4086)}\r\n`;
    const exchange = await post(await tlsReceiver((socket) => socket.write(`HTTP/1.1 200 OK\r\n${line.repeat(256)}`)));
    expect(exchange).toMatchObject({ status: null, transportError: 'http_error' });
    expect(exchange.transportDetail).toMatch(/HPE_HEADER_OVERFLOW/);
    expect(exchange.durationMs).toBeLessThan(TIMEOUT_MS);
    await socketsClosed();
  });

  it('trickles a huge header block: timeout at the deadline, whichever comes first', async () => {
    const exchange = await post(
      await tlsReceiver((socket) => {
        socket.write('HTTP/1.1 200 OK\r\n');
        every(socket, 50, () => socket.write(`x-filler: ${'z'.repeat(100)}\r\n`));
      }),
    );
    expect(exchange).toMatchObject({ status: null, transportError: 'timeout' });
    cutAtDeadline(exchange);
    await socketsClosed();
  });
});
