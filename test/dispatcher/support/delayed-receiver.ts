import { once } from 'node:events';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { createServer, type Server } from 'node:https';
import type { Socket } from 'node:net';
import type { TestPki } from './pki';

/** How a {@link DelayedReceiver} answers: a status after a pause, or never. */
export type DelayedReply = { status: number; afterMs: number } | 'hang';

export interface DelayedRequest {
  path: string;
  headers: Record<string, string>;
  body: string;
  receivedMs: number;
  /** When the answer was written (Unix ms); undefined while it is pending or if it never comes. */
  answeredMs?: number;
}

/**
 * An HTTPS receiver on 127.0.0.1 whose answers can take their time, for drain tests that need an
 * attempt to be in flight when a signal arrives. (TestReceiver answers synchronously or never.)
 */
export class DelayedReceiver {
  readonly requests: DelayedRequest[] = [];
  private readonly sockets = new Set<Socket>();
  private readonly timers = new Set<NodeJS.Timeout>();
  private readonly replies = new Map<string, (n: number, request: DelayedRequest) => DelayedReply>();

  private constructor(
    private readonly server: Server,
    readonly port: number,
  ) {}

  static async start(pki: TestPki): Promise<DelayedReceiver> {
    const server = createServer({ cert: pki.cert, key: pki.key });
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    const receiver = new DelayedReceiver(server, (server.address() as { port: number }).port);
    server.on('connection', (socket: Socket) => {
      receiver.sockets.add(socket);
      socket.once('close', () => receiver.sockets.delete(socket));
    });
    server.on('request', (req, res) => void receiver.handle(req, res));
    return receiver;
  }

  url(path: string): string {
    return `https://localhost:${this.port}${path}`;
  }

  /** Sets how the `n`th request (1-based) to `path` is answered; unscripted paths get 200 at once. */
  reply(path: string, decide: (n: number, request: DelayedRequest) => DelayedReply): void {
    this.replies.set(path, decide);
  }

  requestsTo(path: string): DelayedRequest[] {
    return this.requests.filter((r) => r.path === path);
  }

  async stop(): Promise<void> {
    for (const timer of this.timers) clearTimeout(timer);
    for (const socket of this.sockets) socket.destroy();
    this.server.close();
    await once(this.server, 'close');
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const receivedMs = Date.now();
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const path = req.url ?? '/';
    const headers: Record<string, string> = {};
    for (const [name, value] of Object.entries(req.headers)) if (value !== undefined) headers[name] = Array.isArray(value) ? value.join(', ') : value;
    const request: DelayedRequest = { path, headers, body: Buffer.concat(chunks).toString('utf8'), receivedMs };
    this.requests.push(request);
    const reply = (this.replies.get(path) ?? (() => ({ status: 200, afterMs: 0 })))(this.requestsTo(path).length, request);
    if (reply === 'hang') return;
    const timer = setTimeout(() => {
      this.timers.delete(timer);
      if (res.destroyed) return;
      request.answeredMs = Date.now();
      res.writeHead(reply.status, { 'content-type': 'text/plain' });
      res.end('ok');
    }, reply.afterMs);
    this.timers.add(timer);
  }
}
