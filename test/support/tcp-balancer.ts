import { createConnection, createServer, type Server, type Socket } from 'node:net';

/**
 * A round-robin TCP load balancer on loopback in front of several ports, as a platform puts one in
 * front of gateway replicas: each new connection goes to the next backend that accepts it (one that
 * refuses is skipped), and it says which backend each open connection went to.
 */
export class TcpBalancer {
  private next = 0;
  /** Each client connection open now, with the backend port it was joined to. */
  readonly open = new Map<Socket, number>();

  private constructor(
    private readonly server: Server,
    private readonly backends: number[],
  ) {}

  static async start(backends: number[]): Promise<TcpBalancer> {
    const server = createServer();
    const balancer = new TcpBalancer(server, backends);
    server.on('connection', (client) => balancer.accept(client));
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(0, '127.0.0.1', resolve);
    });
    return balancer;
  }

  get port(): number {
    return (this.server.address() as { port: number }).port;
  }

  /** The backend ports of the connections open now. */
  backendsInUse(): number[] {
    return [...this.open.values()];
  }

  async stop(): Promise<void> {
    for (const socket of this.open.keys()) socket.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private accept(client: Socket, tried = 0): void {
    client.pause();
    if (tried >= this.backends.length) {
      client.destroy();
      return;
    }
    const port = this.backends[this.next++ % this.backends.length]!;
    const backend = createConnection({ host: '127.0.0.1', port });
    let connected = false;
    // A backend that is down is skipped; one that fails later ends its client's connection (below).
    backend.once('error', () => {
      if (!connected) this.accept(client, tried + 1);
    });
    backend.once('connect', () => {
      connected = true;
      this.open.set(client, port);
      client.pipe(backend).pipe(client);
      client.resume();
      const close = () => {
        this.open.delete(client);
        client.destroy();
        backend.destroy();
      };
      client.once('close', close);
      backend.once('close', close);
      client.on('error', close);
      backend.on('error', close);
    });
  }
}
