import { createServer, type Server } from 'node:http';
import { connect, type Socket } from 'node:net';

/**
 * A forward proxy that takes HTTP CONNECT, as Smokescreen or Squid does, on a loopback address of
 * the test's choosing. It keeps every CONNECT target it was asked for; `mode` makes it answer
 * normally, refuse (403), or hold the CONNECT unanswered for a while (a slow proxy).
 */
export class ConnectProxy {
  readonly targets: string[] = [];
  mode: { kind: 'open' } | { kind: 'refuse' } | { kind: 'slow'; delayMs: number } = { kind: 'open' };
  private server: Server | undefined;
  private readonly sockets = new Set<Socket>();

  private constructor(
    readonly host: string,
    private port: number,
  ) {}

  static async start(host = '127.0.0.2'): Promise<ConnectProxy> {
    const proxy = new ConnectProxy(host, 0);
    await proxy.listen();
    return proxy;
  }

  get url(): string {
    return `http://${this.host}:${this.port}`;
  }

  /** Listens again on the same address and port (after {@link stop}). */
  async listen(): Promise<void> {
    const server = createServer((_req, res) => res.writeHead(405).end());
    // Every connection, from its first byte: one whose CONNECT has not come yet would otherwise keep
    // stop() waiting for it (server.close waits for open connections).
    server.on('connection', (socket: Socket) => {
      this.sockets.add(socket);
      socket.on('close', () => this.sockets.delete(socket));
    });
    server.on('connect', (req, client: Socket, head: Buffer) => {
      // `client` is the connection tracked above.
      client.on('error', () => undefined);
      const target = req.url ?? '';
      this.targets.push(target);
      const mode = this.mode;
      if (mode.kind === 'refuse') {
        client.end('HTTP/1.1 403 Forbidden\r\n\r\n');
        return;
      }
      const open = () => {
        const [, host, port] = /^\[?([^\]]+)\]?:(\d+)$/.exec(target) ?? [];
        // Out from the proxy's own address, as an egress proxy with a published source address does:
        // the receiver then sees that address as its peer.
        const upstream = connect({ port: Number(port), host, localAddress: this.host }, () => {
          client.write('HTTP/1.1 200 Connection Established\r\n\r\n');
          if (head.length > 0) upstream.write(head);
          upstream.pipe(client);
          client.pipe(upstream);
        });
        this.sockets.add(upstream);
        upstream.on('close', () => this.sockets.delete(upstream));
        upstream.on('error', () => client.destroy());
        client.on('close', () => upstream.destroy());
      };
      if (mode.kind === 'slow') setTimeout(open, mode.delayMs).unref();
      else open();
    });
    await new Promise<void>((resolve) => server.listen(this.port, this.host, resolve));
    this.port = (server.address() as { port: number }).port;
    this.server = server;
  }

  /** Cuts every open tunnel (a proxy restart), so the next attempt asks for a new one. */
  cutTunnels(): void {
    for (const socket of this.sockets) socket.destroy();
  }

  /** Stops listening and cuts every tunnel: the proxy is down. */
  async stop(): Promise<void> {
    for (const socket of this.sockets) socket.destroy();
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
    this.server = undefined;
  }
}
