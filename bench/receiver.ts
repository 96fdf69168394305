/**
 * The bench's webhook receiver, a child process of bench/run.ts (forked, driven over IPC): HTTPS on
 * 127.0.0.1 with the certificate it is given. `/hook…` answers 204, `/fail…` answers 500, `/hang…`
 * is read and never answered (one workspace's callbacks hanging at a host another's go to); every
 * answered request's arrival is noted at Node's 'request' event (the request head is in), with the envelope's
 * `timestamp` (the job's end) and `data.id` read from the body. Its own process, so that its TLS
 * and parsing work is not shared with whatever client the bench is measuring.
 */
import { once } from 'node:events';
import { createServer, type Server } from 'node:https';
import type { TLSSocket } from 'node:tls';
import { serveHelper, type Arrival, type ReceiverStats } from './ipc';

let server: Server | undefined;
let credentials: { cert: string; key: string } | undefined;
let arrivals: Arrival[] = [];
let seen = new Set<string>();
let stats: ReceiverStats = { requests: 0, connections: 0, resumedSessions: 0, hanging: 0 };
let sample: { body: string; headers: Record<string, string> } | null = null;

function listen(cert: string, key: string): Promise<number> {
  credentials = { cert, key };
  server = serve();
  return once(server, 'listening').then(() => (server!.address() as { port: number }).port);
}

/**
 * `count` more listening ports, each its own origin (one per workspace, as tenants have receivers of
 * their own); the same answers, arrivals and counters.
 */
async function listenMore(count: number): Promise<number[]> {
  const ports = [];
  for (let i = 0; i < count; i++) {
    const more = serve();
    await once(more, 'listening');
    ports.push((more.address() as { port: number }).port);
  }
  return ports;
}

function serve(): Server {
  const { cert, key } = credentials!;
  const server = createServer({ cert, key }, (req, res) => {
    const receivedMs = Date.now();
    stats.requests++;
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      if ((req.url ?? '').startsWith('/hang')) {
        // Held open until the sender gives up (its timeout): not an arrival.
        stats.hanging++;
        res.once('close', () => stats.hanging--);
        return;
      }
      const body = Buffer.concat(chunks).toString('utf8');
      const id = String(req.headers['webhook-id'] ?? '');
      const failing = (req.url ?? '').startsWith('/fail');
      const status = failing ? 500 : 204;
      // Repeats (the peer loops send one body over and over; at-least-once redeliveries) keep the first arrival.
      if (!seen.has(id)) {
        seen.add(id);
        let eventMs = Number.NaN;
        let jobId = '';
        try {
          const envelope = JSON.parse(body) as { timestamp?: string; data?: { id?: string } };
          eventMs = Date.parse(envelope.timestamp ?? '');
          jobId = envelope.data?.id ?? '';
        } catch {
          // not an envelope: kept with NaN times
        }
        arrivals.push({ id, jobId, eventMs, receivedMs, status });
      }
      sample = { body, headers: Object.fromEntries(Object.entries(req.headers).map(([k, v]) => [k, String(v)])) };
      if (failing) res.writeHead(500, { 'content-type': 'text/plain' }).end('bench receiver: failing on purpose');
      else res.writeHead(204).end();
    });
  });
  server.on('secureConnection', (socket: TLSSocket) => {
    stats.connections++;
    if (socket.isSessionReused()) stats.resumedSessions++;
  });
  server.listen(0, '127.0.0.1');
  return server;
}

serveHelper({
  ping: () => true,
  listen: (msg) => listen(String(msg.cert), String(msg.key)),
  listenMore: (msg) => listenMore(Number(msg.count)),
  reset: () => {
    arrivals = [];
    seen = new Set();
    stats = { requests: 0, connections: 0, resumedSessions: 0, hanging: stats.hanging };
  },
  stats: () => stats,
  unique: () => seen.size,
  arrivals: () => arrivals,
  sample: () => sample,
});
