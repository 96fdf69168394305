import { createConnection, createServer, type Server, type Socket } from 'node:net';

/**
 * A TCP proxy on loopback in front of one port, which can hold new connections: accepted, but
 * nothing they send reaches the target until {@link release}. Connections made before the hold
 * go on as they were. It puts a client in the middle of a request at a moment a test chooses.
 */
export class TcpProxy {
  private holding = false;
  private readonly held: Socket[] = [];
  private readonly open = new Set<Socket>();

  private constructor(
    private readonly server: Server,
    private readonly targetPort: number,
  ) {}

  static async start(targetPort: number): Promise<TcpProxy> {
    const server = createServer();
    const proxy = new TcpProxy(server, targetPort);
    server.on('connection', (socket) => proxy.accept(socket));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    return proxy;
  }

  get port(): number {
    return (this.server.address() as { port: number }).port;
  }

  /** Connections accepted during the hold, waiting for {@link release}. */
  get heldConnections(): number {
    return this.held.length;
  }

  hold(): void {
    this.holding = true;
  }

  release(): void {
    this.holding = false;
    for (const socket of this.held.splice(0)) this.forward(socket);
  }

  async close(): Promise<void> {
    for (const socket of this.open) socket.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private accept(socket: Socket): void {
    this.open.add(socket);
    socket.on('close', () => this.open.delete(socket));
    socket.on('error', () => socket.destroy());
    if (!this.holding) return this.forward(socket);
    socket.pause();
    this.held.push(socket);
  }

  private forward(socket: Socket): void {
    const upstream = createConnection(this.targetPort, '127.0.0.1');
    upstream.on('error', () => socket.destroy());
    socket.on('close', () => upstream.destroy());
    upstream.on('close', () => socket.destroy());
    socket.pipe(upstream);
    upstream.pipe(socket);
    socket.resume();
  }
}
