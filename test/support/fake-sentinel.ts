import { createServer, type Server, type Socket } from 'node:net';

type Address = { host: string; port: number };

/** One RESP command (an array of bulk strings) off the front of `buffer`; undefined until it has all arrived. */
function takeCommand(buffer: Buffer): { args: string[]; rest: Buffer } | undefined {
  let at = 0;
  const line = () => {
    const end = buffer.indexOf('\r\n', at);
    if (end < 0) return undefined;
    const text = buffer.toString('utf8', at, end);
    at = end + 2;
    return text;
  };
  const header = line();
  if (header === undefined) return undefined;
  if (!header.startsWith('*')) return { args: header.trim().split(/\s+/), rest: buffer.subarray(at) };
  const args: string[] = [];
  for (let n = Number(header.slice(1)); n > 0; n--) {
    const size = line();
    if (size === undefined) return undefined;
    const length = Number(size.slice(1));
    if (buffer.length < at + length + 2) return undefined;
    args.push(buffer.toString('utf8', at, at + length));
    at += length + 2;
  }
  return { args, rest: buffer.subarray(at) };
}

const bulk = (text: string) => `$${Buffer.byteLength(text)}\r\n${text}\r\n`;
const array = (items: (string | number)[]) => `*${items.length}\r\n${items.map((i) => (typeof i === 'number' ? `:${i}\r\n` : bulk(i))).join('')}`;
const globToRegExp = (glob: string) => new RegExp(`^${glob.replace(/[.+?^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '.*')}$`);

/**
 * A Sentinel of the test's own, speaking as much of the protocol as ioredis uses: it names the
 * primary the test sets (`SENTINEL get-master-addr-by-name`), knows no other Sentinels, and
 * publishes to its subscribers what the test tells it to. With it a test plays what real Sentinels
 * do only now and then: one that has not heard of a promotion yet, the steps of a failover one by one.
 */
export class FakeSentinel {
  private readonly subscribers = new Set<{ socket: Socket; channels: Set<string>; patterns: Set<string> }>();
  private readonly sockets = new Set<Socket>();
  /** Lookups asked so far. */
  lookups = 0;
  /** How long a lookup waits for its answer, as from a Sentinel that is slow to answer. */
  lookupDelayMs = 0;

  private constructor(
    private readonly server: Server,
    public primary: Address,
  ) {}

  static async start(primary: Address): Promise<FakeSentinel> {
    const server = createServer();
    const sentinel = new FakeSentinel(server, primary);
    server.on('connection', (socket) => sentinel.serve(socket));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    return sentinel;
  }

  get port(): number {
    return (this.server.address() as { port: number }).port;
  }

  /** Sends `message` on `channel` to every subscriber of it or of a pattern matching it. */
  publish(channel: string, message: string): void {
    for (const { socket, channels, patterns } of this.subscribers) {
      if (channels.has(channel)) socket.write(array(['message', channel, message]));
      for (const pattern of patterns) if (globToRegExp(pattern).test(channel)) socket.write(array(['pmessage', pattern, channel, message]));
    }
  }

  async close(): Promise<void> {
    for (const socket of this.sockets) socket.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private serve(socket: Socket): void {
    this.sockets.add(socket);
    const subscriber = { socket, channels: new Set<string>(), patterns: new Set<string>() };
    socket.on('close', () => {
      this.sockets.delete(socket);
      this.subscribers.delete(subscriber);
    });
    socket.on('error', () => socket.destroy());
    let buffer: Buffer = Buffer.alloc(0);
    // Answers leave in the order the commands came, a slow lookup holding back those behind it.
    let answered = Promise.resolve();
    socket.on('data', (chunk: Buffer) => {
      buffer = Buffer.concat([buffer, chunk]);
      for (let command = takeCommand(buffer); command; command = takeCommand(buffer)) {
        buffer = command.rest;
        const args = command.args;
        const lookup = args[0]?.toLowerCase() === 'sentinel' && args[1]?.toLowerCase() === 'get-master-addr-by-name';
        if (lookup) this.lookups++;
        const delayMs = lookup ? this.lookupDelayMs : 0;
        answered = answered.then(async () => {
          if (delayMs > 0) await new Promise((resolve) => setTimeout(resolve, delayMs));
          if (!socket.destroyed) socket.write(this.answer(args, subscriber));
        });
      }
    });
  }

  private answer(args: string[], subscriber: { channels: Set<string>; patterns: Set<string>; socket: Socket }): string {
    const [name = '', ...rest] = args;
    switch (name.toLowerCase()) {
      case 'sentinel':
        if (rest[0]?.toLowerCase() === 'get-master-addr-by-name') {
          return array([this.primary.host, String(this.primary.port)]);
        }
        return array([]);
      case 'subscribe':
      case 'psubscribe': {
        const into = name.toLowerCase() === 'subscribe' ? subscriber.channels : subscriber.patterns;
        this.subscribers.add(subscriber);
        return rest
          .map((channel) => {
            into.add(channel);
            return array([name.toLowerCase(), channel, subscriber.channels.size + subscriber.patterns.size]);
          })
          .join('');
      }
      case 'ping':
        return '+PONG\r\n';
      default:
        return '+OK\r\n';
    }
  }
}
