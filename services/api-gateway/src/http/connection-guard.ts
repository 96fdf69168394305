import type { Server } from 'node:http';
import type { Socket } from 'node:net';
import express from 'express';
import type { Logger } from '@media/common';

/** A cap that keeps being hit is logged once per this long, with how many times it was hit meanwhile. */
const LOG_EVERY_MS = 10_000;

/**
 * Logs a cap being hit at most once per {@link LOG_EVERY_MS} per cap and key, so that a flood of
 * refusals is seen without flooding the log.
 */
export class CapLog {
  private readonly last = new Map<string, { atMs: number; since: number }>();

  constructor(
    private readonly logger: Logger,
    private readonly now: () => number = Date.now,
  ) {}

  hit(message: string, key: string, fields: Record<string, unknown>): void {
    const id = `${message}\n${key}`;
    const seen = this.last.get(id);
    const now = this.now();
    if (seen && now - seen.atMs < LOG_EVERY_MS) {
      seen.since++;
      return;
    }
    if (this.last.size >= 10_000) this.last.clear();
    this.last.set(id, { atMs: now, since: 0 });
    this.logger.warn(message, { ...fields, ...(seen ? { refused_since_last_line: seen.since } : {}) });
  }
}

export interface ConnectionLimits {
  /** HTTP_MAX_CONNECTIONS: connections at once, every client together. */
  maxConnections: number;
  /** HTTP_MAX_CONNECTIONS_PER_ADDRESS: connections at once from one client address. */
  maxConnectionsPerAddress: number;
  /** HTTP_HEADERS_TIMEOUT_MS: how long a connection may take to send a request's headers. */
  headersTimeoutMs: number;
  /** TRUST_PROXY: the proxies, which carry many clients on their connections, are not held to the per-address cap. */
  trustProxy: boolean | number | string[];
}

/**
 * What one client can hold of the gateway's public port: at most `maxConnectionsPerAddress`
 * connections (a trusted proxy's excepted), all clients at most `maxConnections` (below the
 * process's file-descriptor limit, so that the process can still open files and reach Redis), and a
 * connection that sends no request headers is closed once `headersTimeoutMs` have passed, checked
 * every second (Node's default waits a minute, checked every 30 s). A refused connection is closed
 * at once, without an answer: it has sent nothing to answer. Each cap hit is logged.
 */
export function guardConnections(server: Server, limits: ConnectionLimits, logger: Logger, capLog = new CapLog(logger)): void {
  server.maxConnections = limits.maxConnections;
  server.headersTimeout = limits.headersTimeoutMs;
  server.on('drop', (data?: { remoteAddress?: string }) =>
    capLog.hit('connection refused: the gateway holds HTTP_MAX_CONNECTIONS already', 'all', {
      client_address: data?.remoteAddress,
      max_connections: limits.maxConnections,
    }),
  );
  const trusted = express().set('trust proxy', limits.trustProxy).get('trust proxy fn') as (address: string, hop: number) => boolean;
  const perAddress = new Map<string, number>();
  server.on('connection', (socket: Socket) => {
    const address = socket.remoteAddress;
    if (address === undefined || trusted(address, 0)) return;
    const held = (perAddress.get(address) ?? 0) + 1;
    if (held > limits.maxConnectionsPerAddress) {
      socket.destroy();
      capLog.hit('connection refused: one client address holds HTTP_MAX_CONNECTIONS_PER_ADDRESS already', address, {
        client_address: address,
        max_connections_per_address: limits.maxConnectionsPerAddress,
      });
      return;
    }
    perAddress.set(address, held);
    socket.once('close', () => {
      const left = (perAddress.get(address) ?? 1) - 1;
      if (left <= 0) perAddress.delete(address);
      else perAddress.set(address, left);
    });
  });
}
