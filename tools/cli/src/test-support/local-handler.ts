import { once } from 'node:events';
import { createServer as createHttpServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { Socket } from 'node:net';
import { eventually } from './eventually';

export interface ReceivedRequest {
  method: string;
  url: string;
  headers: IncomingMessage['headers'];
  body: string;
}

/** How the handler answers one request; the default says 200 `handled`. */
export type Behaviour = (req: IncomingMessage, res: ServerResponse, received: ReceivedRequest) => void;

/** The developer's webhook handler: a real HTTP(S) server on 127.0.0.1 that keeps what it was sent. */
export class LocalHandler {
  readonly requests: ReceivedRequest[] = [];
  behaviour: Behaviour = (_req, res) => res.writeHead(200, { 'content-type': 'text/plain' }).end('handled');
  private readonly sockets = new Set<Socket>();

  private constructor(
    private readonly server: Server,
    private readonly scheme: 'http' | 'https',
  ) {}

  static async start(options: { tls?: { cert: string; key: string } } = {}): Promise<LocalHandler> {
    const server = options.tls ? createHttpsServer(options.tls) : createHttpServer();
    const handler = new LocalHandler(server, options.tls ? 'https' : 'http');
    server.on(options.tls ? 'secureConnection' : 'connection', (socket: Socket) => {
      handler.sockets.add(socket);
      socket.once('close', () => handler.sockets.delete(socket));
    });
    server.on('request', (req: IncomingMessage, res: ServerResponse) => {
      const chunks: Buffer[] = [];
      req.on('data', (chunk: Buffer) => chunks.push(chunk));
      req.on('end', () => {
        const received = { method: req.method ?? '', url: req.url ?? '', headers: req.headers, body: Buffer.concat(chunks).toString('utf8') };
        handler.requests.push(received);
        handler.behaviour(req, res, received);
      });
    });
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    return handler;
  }

  get port(): number {
    return (this.server.address() as { port: number }).port;
  }

  /** The `--forward-to` URL. */
  url(path = '/webhooks'): URL {
    return new URL(`${this.scheme}://127.0.0.1:${this.port}${path}`);
  }

  async received(count: number): Promise<ReceivedRequest[]> {
    await eventually(() => {
      if (this.requests.length < count) throw new Error(`${this.requests.length} of ${count} requests so far`);
    });
    return this.requests;
  }

  async stop(): Promise<void> {
    for (const socket of this.sockets) socket.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}

/** A loopback port nothing listens on (it was free a moment ago). */
export async function closedPort(): Promise<number> {
  const server = createHttpServer();
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}
