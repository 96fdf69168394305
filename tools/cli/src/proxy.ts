import { request as httpRequest, type ClientRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { BlockList, isIP, type Socket } from 'node:net';
import { connect as tlsConnect, type ConnectionOptions } from 'node:tls';

/** The standard proxy variables, read once (lower case first, as curl reads them). */
export interface ProxySettings {
  /** For `ws://` gateways (`http_proxy`, `HTTP_PROXY`). */
  httpProxy?: string;
  /** For `wss://` gateways (`https_proxy`, `HTTPS_PROXY`). */
  httpsProxy?: string;
  /** Hosts reached directly (`no_proxy`, `NO_PROXY`). */
  noProxy?: string;
}

/** The error code of a connection the proxy failed: it refused the tunnel, or did not answer in time. */
export const PROXY_ERROR = 'ERR_PROXY_CONNECT';

export function proxySettingsFrom(env: Readonly<Record<string, string | undefined>>): ProxySettings {
  const pick = (name: string) => env[name.toLowerCase()] || env[name] || undefined;
  return { httpProxy: pick('HTTP_PROXY'), httpsProxy: pick('HTTPS_PROXY'), noProxy: pick('NO_PROXY') };
}

/**
 * The proxy to reach `target` through, or undefined to connect directly: `HTTPS_PROXY` for wss and
 * https, `HTTP_PROXY` for ws and http, unless `NO_PROXY` names the host. A proxy given without a
 * scheme is taken as `http://`.
 */
export function proxyFor(target: URL, settings: ProxySettings): URL | undefined {
  const secure = target.protocol === 'wss:' || target.protocol === 'https:';
  const configured = secure ? settings.httpsProxy : settings.httpProxy;
  if (!configured) return undefined;
  if (bypassesProxy(target, settings.noProxy ?? '')) return undefined;
  const proxy = new URL(/^[a-z][a-z0-9+.-]*:\/\//i.test(configured) ? configured : `http://${configured}`);
  if (proxy.protocol !== 'http:' && proxy.protocol !== 'https:') {
    throw new Error(`${secure ? 'HTTPS_PROXY' : 'HTTP_PROXY'} must be an http:// or https:// proxy, got ${redactProxy(proxy)}`);
  }
  return proxy;
}

/**
 * Whether `NO_PROXY` names the target: `*` (every host), a host name (itself and its subdomains;
 * a leading `.` or `*.` is allowed), an IP address, a CIDR block, each optionally with `:port`.
 */
export function bypassesProxy(target: URL, noProxy: string): boolean {
  const host = bareHost(target.hostname).toLowerCase();
  const port = Number(target.port) || defaultPort(target.protocol);
  for (const raw of noProxy.split(/[\s,]+/)) {
    const entry = raw.trim().toLowerCase();
    if (entry === '') continue;
    if (entry === '*') return true;
    const { name, port: entryPort } = splitPort(entry);
    if (entryPort !== undefined && entryPort !== port) continue;
    if (name.includes('/')) {
      if (inCidr(host, name)) return true;
      continue;
    }
    const domain = name.replace(/^\*?\./, '');
    if (isIP(domain)) {
      if (isIP(host) && sameAddress(host, domain)) return true;
      continue;
    }
    if (host === domain || host.endsWith(`.${domain}`)) return true;
  }
  return false;
}

/** The proxy's address without its credentials, for messages. */
export function redactProxy(proxy: URL): string {
  return `${proxy.protocol}//${proxy.host}`;
}

/**
 * Opens `CONNECT host:port` through an HTTP proxy and resolves with the tunnel, ready for the
 * WebSocket's upgrade request (see {@link overTunnel}). The proxy resolves the name (a proxy at a
 * company's edge is often the only one that can). Rejects with {@link PROXY_ERROR} when the proxy
 * answers anything but 200 or says nothing for `timeoutMs`; `signal` abandons the attempt.
 */
export function openTunnel(proxy: URL, target: URL, options: { timeoutMs: number; signal?: AbortSignal }): Promise<Socket> {
  const host = bareHost(target.hostname);
  const authority = `${isIP(host) === 6 ? `[${host}]` : host}:${Number(target.port) || defaultPort(target.protocol)}`;
  const headers: Record<string, string> = { host: authority };
  if (proxy.username || proxy.password) {
    const credentials = `${decodeURIComponent(proxy.username)}:${decodeURIComponent(proxy.password)}`;
    headers['proxy-authorization'] = `Basic ${Buffer.from(credentials).toString('base64')}`;
  }
  const send = proxy.protocol === 'https:' ? httpsRequest : httpRequest;
  return new Promise<Socket>((resolve, reject) => {
    const fail = (message: string, cause?: unknown) =>
      reject(Object.assign(new Error(`proxy ${redactProxy(proxy)}: ${message}`), { code: PROXY_ERROR, cause }));
    const connecting: ClientRequest = send({
      host: bareHost(proxy.hostname),
      port: Number(proxy.port) || defaultPort(proxy.protocol),
      method: 'CONNECT',
      path: authority,
      headers,
      agent: false,
      signal: options.signal,
    });
    const deadline = setTimeout(() => {
      fail(`no tunnel to ${authority} within ${options.timeoutMs} ms`);
      connecting.destroy();
    }, options.timeoutMs);
    connecting.once('connect', (res: IncomingMessage, socket: Socket, head: Buffer) => {
      clearTimeout(deadline);
      if (res.statusCode !== 200) {
        socket.destroy();
        fail(`CONNECT ${authority} answered ${res.statusCode}${res.statusMessage ? ` ${res.statusMessage}` : ''}`);
        return;
      }
      if (head.length > 0) socket.unshift(head);
      resolve(socket);
    });
    connecting.once('error', (err: NodeJS.ErrnoException) => {
      clearTimeout(deadline);
      fail(err.name === 'AbortError' ? 'abandoned' : (err.code ?? err.message), err);
    });
    connecting.end();
  });
}

/**
 * ws's `createConnection` for a connection over an open tunnel: the tunnel itself for `ws://`, and
 * for `wss://` TLS over it, made end to end with the gateway and checking its certificate for the
 * gateway's name as without a proxy (ws hands over its TLS options: `ca`, `rejectUnauthorized`, …).
 */
export function overTunnel(tunnel: Socket, secure: boolean): (options: ConnectionOptions & { host?: string; path?: string | null }) => Socket {
  return (options) => {
    if (!secure) return tunnel;
    // `path` is the request's; to tls.connect it would name a Unix socket.
    const { path, ...tlsOptions } = options;
    const host = bareHost(String(options.host ?? ''));
    return tlsConnect({ ...tlsOptions, socket: tunnel, servername: options.servername ?? (isIP(host) ? undefined : host) });
  };
}

function splitPort(entry: string): { name: string; port?: number } {
  const bracketed = /^\[([^\]]+)\](?::(\d+))?$/.exec(entry);
  if (bracketed) return { name: bracketed[1], port: bracketed[2] === undefined ? undefined : Number(bracketed[2]) };
  // An IPv6 address (or CIDR) has several colons and no port unless bracketed.
  const withPort = /^([^:]+):(\d+)$/.exec(entry);
  return withPort ? { name: withPort[1], port: Number(withPort[2]) } : { name: entry };
}

function inCidr(host: string, cidr: string): boolean {
  const family = isIP(host);
  const [network, bits] = cidr.split('/');
  const networkFamily = isIP(network);
  if (family === 0 || networkFamily !== family || !/^\d+$/.test(bits)) return false;
  const list = new BlockList();
  try {
    list.addSubnet(network, Number(bits), family === 6 ? 'ipv6' : 'ipv4');
  } catch {
    return false;
  }
  return list.check(host, family === 6 ? 'ipv6' : 'ipv4');
}

function sameAddress(a: string, b: string): boolean {
  const family = isIP(a);
  if (family !== isIP(b)) return false;
  const list = new BlockList();
  list.addAddress(b, family === 6 ? 'ipv6' : 'ipv4');
  return list.check(a, family === 6 ? 'ipv6' : 'ipv4');
}

function bareHost(hostname: string): string {
  return hostname.replace(/^\[|\]$/g, '');
}

function defaultPort(protocol: string): number {
  return protocol === 'https:' || protocol === 'wss:' ? 443 : 80;
}
