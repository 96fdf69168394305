import { Agent as HttpAgent, request, type AgentOptions } from 'node:http';
import { Agent as HttpsAgent, type AgentOptions as HttpsAgentOptions } from 'node:https';
import { isIP, type LookupFunction, type Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { connect as tlsConnect, type ConnectionOptions } from 'node:tls';

/** The error code of an exchange the egress proxy failed: unreachable, or it refused the tunnel. */
export const PROXY_ERROR = 'ERR_EGRESS_PROXY';

/** Where a tunnelled socket really goes: the checked address named in the CONNECT, not the proxy's. */
const TUNNELLED_TO = Symbol('tunnelled to');

/** The address a socket reaches: the far end of its tunnel, or its own peer. */
export function remoteAddressOf(socket: Socket): string | undefined {
  return (socket as Socket & { [TUNNELLED_TO]?: string })[TUNNELLED_TO] ?? socket.remoteAddress;
}

/** The forward proxy every callback goes through (`CALLBACK_EGRESS_PROXY`): `http://host:port`. */
export interface EgressProxy {
  host: string;
  port: number;
  /** How long the proxy may take to open a tunnel; the exchange's own deadline also applies. */
  timeoutMs: number;
}

type ConnectOptions = ConnectionOptions & { host?: string; port?: number | string; lookup?: LookupFunction; servername?: string };
type Created = (err: Error | null, socket: Duplex) => void;

/**
 * Opens `CONNECT <checked ip>:<port>` through the proxy. The address comes from the attempt's
 * pinned lookup (the URL guard's answer), never the host name, so the proxy cannot be led to
 * resolve the name to another address; TLS is then made end to end with the receiver, over the
 * tunnel, checking its certificate for the host name as without a proxy.
 */
function openTunnel(proxy: EgressProxy, options: ConnectOptions, done: (err: Error | null, socket?: Socket, address?: string) => void): void {
  const host = String(options.host ?? '');
  const port = Number(options.port);
  const withAddress = (address: string) => {
    const authority = isIP(address) === 6 ? `[${address}]:${port}` : `${address}:${port}`;
    const connecting = request({ host: proxy.host, port: proxy.port, method: 'CONNECT', path: authority, headers: { host: authority }, agent: false });
    const fail = (message: string, cause?: unknown) => done(Object.assign(new Error(`egress proxy: ${message}`), { code: PROXY_ERROR, cause }));
    connecting.setTimeout(proxy.timeoutMs, () =>
      connecting.destroy(Object.assign(new Error('egress proxy did not open the tunnel in time'), { code: 'ETIMEDOUT' })),
    );
    connecting.once('connect', (res, socket) => {
      connecting.setTimeout(0);
      if (res.statusCode !== 200) {
        socket.destroy();
        fail(`CONNECT ${authority} answered ${res.statusCode}`);
        return;
      }
      (socket as Socket & { [TUNNELLED_TO]?: string })[TUNNELLED_TO] = address;
      done(null, socket, address);
    });
    connecting.once('error', (err: NodeJS.ErrnoException) => (err.code === 'ETIMEDOUT' ? done(err) : fail(err.message, err)));
    connecting.end();
  };
  if (isIP(host) || !options.lookup) return withAddress(host);
  options.lookup(host, { all: false }, (err, address) => (err ? done(err) : withAddress(String(address))));
}

/** An https agent whose connections are TLS over a CONNECT tunnel. */
export class TunnelHttpsAgent extends HttpsAgent {
  constructor(
    private readonly proxy: EgressProxy,
    options: HttpsAgentOptions,
  ) {
    super(options);
  }

  override createConnection(options: ConnectOptions, created?: Created): undefined {
    openTunnel(this.proxy, options, (err, socket, address) => {
      if (err || !socket) return created?.(err ?? new Error('egress proxy: no socket'), undefined as never);
      const tls = tlsConnect({ ...options, socket, servername: options.servername ?? String(options.host) });
      (tls as Socket & { [TUNNELLED_TO]?: string })[TUNNELLED_TO] = address;
      created?.(null, tls);
    });
    return undefined;
  }
}

/** An http agent (development only: `CALLBACK_ALLOW_HTTP`) whose connections are CONNECT tunnels. */
export class TunnelHttpAgent extends HttpAgent {
  constructor(
    private readonly proxy: EgressProxy,
    options: AgentOptions,
  ) {
    super(options);
  }

  override createConnection(options: ConnectOptions, created?: Created): undefined {
    openTunnel(this.proxy, options, (err, socket) => created?.(err, socket as Duplex));
    return undefined;
  }
}

/** Parses `CALLBACK_EGRESS_PROXY` (validated in config) into the proxy's address. */
export function egressProxyOf(url: string | undefined, timeoutMs: number): EgressProxy | undefined {
  if (!url) return undefined;
  const parsed = new URL(url);
  return { host: parsed.hostname.replace(/^\[|\]$/g, ''), port: Number(parsed.port) || 80, timeoutMs };
}
