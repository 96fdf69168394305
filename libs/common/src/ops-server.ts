import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import express, { type Express } from 'express';
import type { Registry } from 'prom-client';
import type { Logger } from './logger';

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
  logger: Logger;
  registry: Registry;
  /** Readiness: false while the service cannot do its work (Redis unreachable). */
  isReady: () => Promise<boolean>;
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
  app.get('/healthz', async (_req, res) => {
    const checks = opts.health ? await opts.health() : [];
    const healthy = checks.every((c) => c.healthy);
    if (!healthy) opts.logger.warn('liveness failing', { checks: checks.filter((c) => !c.healthy) });
    res.status(healthy ? 200 : 503).json({ status: healthy ? 'ok' : 'wedged', checks });
  });
  app.get('/readyz', async (_req, res) => {
    const ok = await opts.isReady().catch(() => false);
    res.status(ok ? 200 : 503).json({ status: ok ? 'ready' : 'redis unreachable' });
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
