import { createServer, type Server } from 'node:http';
import { isIP, type AddressInfo } from 'node:net';
import express, { type Express, type RequestHandler } from 'express';
import type { Registry } from 'prom-client';
import type { Logger } from './logger';
import type { Readiness } from './store-reachability';

/** One check behind /healthz; the probe fails when any is unhealthy. */
export interface HealthCheck {
  healthy: boolean;
  reason?: string;
}

export interface OpsServerOptions {
  port: number;
  /**
   * Bind address (OPS_HOST). Required, so that no caller listens on every interface by omission:
   * loopback outside Kubernetes, `0.0.0.0` in a pod, where the kubelet and Prometheus reach the pod IP.
   */
  host: string;
  /**
   * Host names (OPS_ALLOWED_HOSTS, lower-case) a request may name in its `Host` header besides IP
   * addresses and `localhost`; see {@link allowServedHosts}.
   */
  allowedHosts: readonly string[];
  logger: Logger;
  registry: Registry;
  /** Readiness: not ready while the service cannot do its work (Redis unreachable, draining), with why. */
  isReady: () => Promise<Readiness>;
  /** Liveness: the service's workers; empty for the gateway, whose liveness is "the process answers". */
  health?: () => Promise<HealthCheck[]>;
  /** Extra operator routes (Bull Board on the gateway), mounted before the 404. */
  mount?: (app: Express) => void;
}

export interface OpsServer {
  readonly port: number;
  close(): Promise<void>;
}

/**
 * The operations port of every service: `/healthz` (liveness), `/readyz` (readiness) and
 * `/metrics` (Prometheus text format). It is a separate listener from any public port, so metrics
 * and operator tools are never reachable through the Ingress, and it keeps answering while the
 * public side drains (a probe failing mid-drain would get the pod killed early).
 */
export async function startOpsServer(opts: OpsServerOptions): Promise<OpsServer> {
  const app = express();
  app.disable('x-powered-by');
  app.use(allowServedHosts(opts.allowedHosts, opts.logger));
  app.get('/healthz', async (_req, res) => {
    const checks = opts.health ? await opts.health() : [];
    const healthy = checks.every((c) => c.healthy);
    if (!healthy) opts.logger.warn('liveness failing', { checks: checks.filter((c) => !c.healthy) });
    res.status(healthy ? 200 : 503).json({ status: healthy ? 'ok' : 'wedged', checks });
  });
  app.get('/readyz', async (_req, res) => {
    const readiness = await opts.isReady().catch((): Readiness => ({ ready: false, status: 'redis unreachable' }));
    const { ready, ...body } = readiness;
    res.status(ready ? 200 : 503).json(body);
  });
  app.get('/metrics', async (_req, res) => {
    res.type(opts.registry.contentType).send(await opts.registry.metrics());
  });
  opts.mount?.(app);
  app.use((_req, res) => {
    res.status(404).json({ error: 'not found' });
  });

  const server: Server = createServer(app);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port, opts.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const port = (server.address() as AddressInfo).port;
  opts.logger.info('ops server listening', { ops_port: port, ops_host: opts.host });
  let closing: Promise<void> | undefined;
  return {
    port,
    close: () => {
      closing ??= new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
      return closing;
    },
  };
}

/** Longest `Host` value quoted in a log line: the header is the client's to fill. */
const LOGGED_HOST_CHARS = 120;

/**
 * The host of a `Host` header (`name`, `name:port`, `10.0.0.7:9464`, `[::1]:9464`), lower-case and
 * without a trailing dot; undefined for anything else (empty, a bare IPv6 address, user info).
 */
function hostOf(header: string | undefined): string | undefined {
  const match = /^(?:\[([0-9A-Fa-f:.]+)\]|([^:[\]@/\s]+))(?::\d{1,5})?$/.exec(header ?? '');
  if (!match) return undefined;
  if (match[1] !== undefined) return isIP(match[1]) === 6 ? match[1].toLowerCase() : undefined;
  return match[2]!.toLowerCase().replace(/\.$/, '');
}

/**
 * Refuses, with `421 Misdirected Request`, every request whose `Host` is not an IP address (any
 * port), `localhost`, or one of `allowedHosts`. The port answers without credentials (`/metrics`
 * names callback destinations), so a page that points a name of its own at this address (DNS
 * rebinding) would otherwise read it as same-origin; such a request carries that name as its Host.
 * The kubelet's probes and Prometheus's pod scrapes name the pod's address; `kubectl port-forward`
 * and `npm start` name loopback.
 */
function allowServedHosts(allowedHosts: readonly string[], logger: Logger): RequestHandler {
  const names = new Set(['localhost', ...allowedHosts]);
  return (req, res, next) => {
    const host = hostOf(req.headers.host);
    if (host !== undefined && (isIP(host) !== 0 || names.has(host))) {
      next();
      return;
    }
    // Never the query or other headers: the board's credentials travel in them.
    logger.warn('ops request refused: host not allowed', {
      host: (req.headers.host ?? '').slice(0, LOGGED_HOST_CHARS),
      method: req.method,
      path: req.path,
      client: req.socket.remoteAddress,
    });
    res.status(421).json({ error: 'host not allowed: the operations port answers IP addresses, localhost and the names in OPS_ALLOWED_HOSTS' });
  };
}
