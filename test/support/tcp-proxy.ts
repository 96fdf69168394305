import { createConnection, createServer, type Server, type Socket } from 'node:net';

/**
 * A TCP proxy on loopback in front of one port. It can hold new connections (accepted, but nothing
 * they send reaches the target until {@link release}) and it can cut the network between its
 * clients and the target ({@link cut}): nothing passes either way on any connection, old or new,
 * and nothing is closed, as when a link or a switch fails; {@link heal} delivers what was sent in
 * the meantime, in order, as TCP does once its retransmissions get through.
 */
export class TcpProxy {
  private holding = false;
  private cutOff = false;
  private readonly held: Socket[] = [];
  private readonly open = new Set<Socket>();
  /** Bytes (or a close, as null) sent across the cut, each with where it goes, in the order they were sent. */
  private readonly stranded: { to: Socket; chunk: Buffer | null }[] = [];

  private constructor(
    private readonly server: Server,
    private readonly targetPort: number,
  ) {}

  static async start(targetPort: number, port = 0): Promise<TcpProxy> {
    const server = createServer();
    const proxy = new TcpProxy(server, targetPort);
    server.on('connection', (socket) => proxy.accept(socket));
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, '127.0.0.1', resolve);
    });
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
    if (this.cutOff) return;
    for (const socket of this.held.splice(0)) this.forward(socket);
  }

  /** Stops every byte either way; new connections are accepted and wait, as they would for a SYN-ACK. */
  cut(): void {
    this.cutOff = true;
  }

  /** Joins the network again: what was sent across the cut arrives, then traffic flows as before. */
  heal(): void {
    this.cutOff = false;
    for (const { to, chunk } of this.stranded.splice(0)) {
      if (to.destroyed) continue;
      if (chunk) to.write(chunk);
      else to.destroy();
    }
    if (!this.holding) for (const socket of this.held.splice(0)) this.forward(socket);
  }

  async close(): Promise<void> {
    for (const socket of this.open) socket.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private accept(socket: Socket): void {
    this.open.add(socket);
    socket.on('close', () => this.open.delete(socket));
    socket.on('error', () => socket.destroy());
    if (!this.holding && !this.cutOff) return this.forward(socket);
    socket.pause();
    this.held.push(socket);
  }

  private forward(socket: Socket): void {
    const upstream = createConnection(this.targetPort, '127.0.0.1');
    this.open.add(upstream);
    upstream.on('close', () => this.open.delete(upstream));
    upstream.on('error', () => socket.destroy());
    // A side that closes during a cut is not seen closing by the other until the network heals.
    socket.on('close', () => this.pass(upstream, null));
    upstream.on('close', () => this.pass(socket, null));
    this.relay(socket, upstream);
    this.relay(upstream, socket);
    socket.resume();
  }

  private relay(from: Socket, to: Socket): void {
    from.on('data', (chunk: Buffer) => this.pass(to, chunk));
  }

  private pass(to: Socket, chunk: Buffer | null): void {
    if (this.cutOff) this.stranded.push({ to, chunk });
    else if (chunk) to.write(chunk);
    else to.destroy();
  }
}
