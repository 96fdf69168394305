import { once } from 'node:events';
import { createServer as createHttpServer, type IncomingMessage, type Server } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { Socket } from 'node:net';
import { WebSocketServer, type WebSocket } from 'ws';
import type { DeliveryFrame, ReadyFrame, ResultFrame } from '../protocol';
import { eventually } from './eventually';

/** An answer to an upgrade request before it is upgraded, as the gateway refuses one. */
export interface Refusal {
  status: number;
  /** JSON-encoded unless a string. */
  body?: unknown;
  headers?: Record<string, string>;
}

/** The API's error shape, as the gateway refuses an upgrade with it. */
export function apiError(message: string, type: string, code: string): { error: { message: string; type: string; param: null; code: string } } {
  return { error: { message, type, param: null, code } };
}

/**
 * The gateway's side of the relay protocol (protocol.ts) on a loopback address: a real ws
 * WebSocketServer behind an HTTP (or HTTPS) server that can first refuse upgrades with HTTP
 * answers. Each accepted connection gets a ready frame at once unless `sendReady` is off.
 */
export class FakeGateway {
  /** Every upgrade request, refused or not, in order. */
  readonly upgrades: { request: IncomingMessage; atMs: number }[] = [];
  /** Answers for the next upgrade requests, first one first; once empty, upgrades are accepted. */
  readonly refusals: Refusal[] = [];
  readonly connections: GatewayConnection[] = [];
  sendReady = true;
  /** Fields of the ready frames sent (over the defaults). */
  ready: Partial<ReadyFrame> = {};
  private readonly wss = new WebSocketServer({ noServer: true });
  private readonly sockets = new Set<Socket>();

  private constructor(
    private readonly server: Server,
    readonly scheme: 'http' | 'https',
  ) {}

  static async start(options: { tls?: { cert: string; key: string }; host?: string } = {}): Promise<FakeGateway> {
    const server = options.tls ? createHttpsServer(options.tls) : createHttpServer();
    const gateway = new FakeGateway(server, options.tls ? 'https' : 'http');
    server.on('request', (_req, res) => res.writeHead(404).end());
    server.on('connection', (socket: Socket) => {
      gateway.sockets.add(socket);
      socket.once('close', () => gateway.sockets.delete(socket));
    });
    server.on('secureConnection', (socket: Socket) => {
      gateway.sockets.add(socket);
      socket.once('close', () => gateway.sockets.delete(socket));
    });
    server.on('upgrade', (request: IncomingMessage, socket: Socket, head: Buffer) => gateway.onUpgrade(request, socket, head));
    server.listen(0, options.host ?? '127.0.0.1');
    await once(server, 'listening');
    return gateway;
  }

  get port(): number {
    return (this.server.address() as { port: number }).port;
  }

  /** The base URL a listener is given (`--base-url`). */
  get url(): string {
    return `${this.scheme}://127.0.0.1:${this.port}`;
  }

  /** The n-th accepted connection (0-based), once it is there. */
  async connection(index: number, timeoutMs?: number): Promise<GatewayConnection> {
    await eventually(() => expectTrue(this.connections.length > index, `connection ${index}`), timeoutMs);
    return this.connections[index];
  }

  async stop(): Promise<void> {
    for (const connection of this.connections) connection.socket.terminate();
    for (const socket of this.sockets) socket.destroy();
    this.wss.close();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private onUpgrade(request: IncomingMessage, socket: Socket, head: Buffer): void {
    this.upgrades.push({ request, atMs: Date.now() });
    const refusal = this.refusals.shift();
    if (refusal) {
      const body = typeof refusal.body === 'string' ? refusal.body : JSON.stringify(refusal.body ?? {});
      const headers = { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(body)), connection: 'close', ...refusal.headers };
      const head = Object.entries(headers)
        .map(([name, value]) => `${name}: ${value}\r\n`)
        .join('');
      socket.end(`HTTP/1.1 ${refusal.status} Refused\r\n${head}\r\n${body}`);
      return;
    }
    this.wss.handleUpgrade(request, socket, head, (ws) => {
      const connection = new GatewayConnection(ws, request, this.connections.length);
      this.connections.push(connection);
      if (this.sendReady) connection.sendReady(this.readyFrame(request, connection.index));
    });
  }

  private readyFrame(request: IncomingMessage, index: number): ReadyFrame {
    const query = new URL(request.url ?? '/', 'http://gateway').searchParams;
    const events = query.get('events');
    return {
      type: 'ready',
      session_id: `rls_test${index}`,
      workspace_id: 'ws_test',
      relay_url: `${this.url}/v1/webhook-relay/rly_testtoken`,
      events: events ? events.split(',') : [],
      timeout_ms: 15_000,
      ...(query.get('reveal_secret') === '1' ? { signing_secret: 'whsec_dGVzdHNlY3JldA==' } : {}),
      ...this.ready,
    };
  }
}

/** One accepted listener connection. */
export class GatewayConnection {
  /** The result frames received, in order. */
  readonly results: ResultFrame[] = [];
  /** Every text frame received (results and anything else). */
  readonly frames: unknown[] = [];
  closed: { code: number; reason: string } | undefined;

  constructor(
    readonly socket: WebSocket,
    readonly request: IncomingMessage,
    readonly index: number,
  ) {
    socket.on('message', (data) => {
      const frame = JSON.parse(data.toString()) as { type?: string };
      this.frames.push(frame);
      if (frame.type === 'result') this.results.push(frame as ResultFrame);
    });
    socket.on('close', (code, reason) => (this.closed = { code, reason: reason.toString() }));
  }

  sendReady(frame: ReadyFrame): void {
    this.socket.send(JSON.stringify(frame));
  }

  /** Sends a delivery frame (defaults for whatever is not given) and returns it. */
  deliver(fields: Partial<DeliveryFrame> = {}): DeliveryFrame {
    const id = fields.id ?? `dlv_${Math.random().toString(36).slice(2)}`;
    const webhookId = fields.webhook_id ?? `msg_${id}`;
    const body = fields.body ?? JSON.stringify({ type: fields.event_type ?? 'image.completed', data: { id: 'img_1' } });
    const frame: DeliveryFrame = {
      type: 'delivery',
      id,
      webhook_id: webhookId,
      event_type: 'image.completed',
      headers: {
        'content-type': 'application/json',
        'user-agent': 'MediaCallbacks/1.0 (+https://docs.example)',
        'webhook-id': webhookId,
        'webhook-timestamp': '1764387601',
        'webhook-signature': 'v1,K5oZfzN95Z9UVu1EsfQmfVNQhnkZ2pj9o9NDN/H/pI4=',
      },
      body,
      timeout_ms: 15_000,
      ...fields,
    };
    this.socket.send(JSON.stringify(frame));
    return frame;
  }

  /** The result frame for a delivery, once it came. */
  async result(id: string, timeoutMs?: number): Promise<ResultFrame> {
    await eventually(
      () =>
        expectTrue(
          this.results.some((r) => r.id === id),
          `result for ${id}`,
        ),
      timeoutMs,
    );
    return this.results.find((r) => r.id === id) as ResultFrame;
  }

  async waitClosed(): Promise<{ code: number; reason: string }> {
    await eventually(() => expectTrue(this.closed !== undefined, 'the connection closed'));
    return this.closed as { code: number; reason: string };
  }
}

function expectTrue(condition: boolean, what: string): void {
  if (!condition) throw new Error(`still waiting for ${what}`);
}
