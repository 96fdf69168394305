import { once } from 'node:events';
import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from 'node:http';
import { createServer, type Server } from 'node:https';
import type { Socket } from 'node:net';
import type { TestPki } from './pki';

/** How the receiver answers one request. */
export type Reply =
  /** Answer, after `afterMs` when given (an attempt in flight while something else happens). */
  | { status: number; body?: string; headers?: Record<string, string>; afterMs?: number }
  /** Drop the connection without an answer. */
  | 'reset'
  /** Never answer (until the receiver stops). */
  | 'hang'
  /** Send `200` and the start of a body, then never finish it. */
  | 'stall-body';

/** Decides the reply to the `n`th request (1-based) to a path. */
export type Script = (n: number, request: ReceivedRequest) => Reply;

export interface ReceivedRequest {
  path: string;
  method: string;
  /** Lower-case names; a repeated header is joined with ", ". */
  headers: Record<string, string>;
  /** The raw body as received, for signature checks. */
  body: string;
  /** When the request head arrived (Unix ms). */
  receivedMs: number;
  /** When the answer was written (Unix ms); undefined while it is pending or when none came. */
  answeredMs?: number;
  remoteAddress: string | undefined;
}

/** A real HTTPS webhook receiver on 127.0.0.1 with a scripted answer per path. */
export class TestReceiver {
  readonly requests: ReceivedRequest[] = [];
  /** TCP connections accepted, whether or not a request followed. */
  connections = 0;
  /** Requests whose exchange is open now: received, and neither answered in full nor cut off. */
  inFlight = 0;
  /** The most requests open at once since the receiver started (or since `resetMaxInFlight`). */
  maxInFlight = 0;
  private readonly scripts = new Map<string, Script>();
  private readonly prefixScripts: Array<[string, Script]> = [];
  private readonly sockets = new Set<Socket>();
  private readonly timers = new Set<NodeJS.Timeout>();

  private constructor(
    private readonly server: Server,
    readonly port: number,
  ) {}

  static async start(pki: TestPki): Promise<TestReceiver> {
    const server = createServer({ cert: pki.cert, key: pki.key });
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    const receiver = new TestReceiver(server, (server.address() as { port: number }).port);
    server.on('connection', (socket: Socket) => {
      receiver.connections++;
      receiver.sockets.add(socket);
      socket.once('close', () => receiver.sockets.delete(socket));
    });
    server.on('request', (req, res) => void receiver.handle(req, res));
    return receiver;
  }

  /** `https://localhost:<port><path>`: the name exercises the certificate and the loopback policy. */
  url(path: string): string {
    return `https://localhost:${this.port}${path}`;
  }

  script(path: string, script: Script): void {
    this.scripts.set(path, script);
  }

  /** Answers every path that starts with `prefix` (and has no script of its own) this way. */
  scriptUnder(prefix: string, script: Script): void {
    this.prefixScripts.push([prefix, script]);
  }

  /** Requests to paths that start with `prefix`. */
  requestsUnder(prefix: string): ReceivedRequest[] {
    return this.requests.filter((r) => r.path.startsWith(prefix));
  }

  requestsTo(path: string): ReceivedRequest[] {
    return this.requests.filter((r) => r.path === path);
  }

  resetMaxInFlight(): void {
    this.maxInFlight = this.inFlight;
  }

  async stop(): Promise<void> {
    for (const timer of this.timers) clearTimeout(timer);
    for (const socket of this.sockets) socket.destroy();
    this.server.close();
    await once(this.server, 'close');
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const receivedMs = Date.now();
    this.inFlight++;
    this.maxInFlight = Math.max(this.maxInFlight, this.inFlight);
    // Over when the answer is written (its sender may send the next request the moment it reads it,
    // before this response's 'close' is seen here), or when the sender gives up on the connection.
    let over = false;
    const end = () => {
      if (!over) this.inFlight--;
      over = true;
    };
    res.once('close', end);
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const path = req.url ?? '/';
    const request: ReceivedRequest = {
      path,
      method: req.method ?? '',
      headers: flatten(req.headers),
      body: Buffer.concat(chunks).toString('utf8'),
      receivedMs,
      remoteAddress: req.socket.remoteAddress,
    };
    this.requests.push(request);
    const n = this.requestsTo(path).length;
    const script: Script =
      this.scripts.get(path) ?? this.prefixScripts.find(([prefix]) => path.startsWith(prefix))?.[1] ?? (() => ({ status: 200, body: 'ok' }));
    const reply = script(n, request);
    if (reply === 'hang') return;
    if (reply === 'stall-body') {
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.write('partial');
      return;
    }
    if (reply === 'reset') {
      req.socket.destroy();
      return;
    }
    const answer = () => {
      if (res.destroyed) return;
      request.answeredMs = Date.now();
      end();
      res.writeHead(reply.status, { 'content-type': 'text/plain', ...reply.headers });
      res.end(reply.body ?? '');
    };
    if (!reply.afterMs) return answer();
    const timer = setTimeout(() => {
      this.timers.delete(timer);
      answer();
    }, reply.afterMs);
    this.timers.add(timer);
  }
}

function flatten(headers: IncomingHttpHeaders): Record<string, string> {
  const flat: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers)) {
    if (value !== undefined) flat[name] = Array.isArray(value) ? value.join(', ') : value;
  }
  return flat;
}
