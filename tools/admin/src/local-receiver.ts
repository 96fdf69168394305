import { once } from 'node:events';
import { createServer, get, type Server } from 'node:https';
import type { AddressInfo, Socket } from 'node:net';
import express from 'express';
import { createExampleReceiver, type CallbackEvent, type WebhookSecretLookup } from '@media/callback-signing';
import { AnotherStackRunningError } from './stack-pid-file';

/** One POST to `/webhooks`, as `GET /webhooks` shows it. */
export interface ReceivedDelivery {
  webhook_id: string | null;
  received_at: string;
  /** What the receiver answered: 200 once the signature verified, 400 when it did not. */
  status: number;
  verified: boolean;
  /** A `webhook-id` that had already arrived (a manual retry, or a retry after a lost answer). */
  duplicate: boolean;
  /** The request's headers as sent (`webhook-id`, `webhook-timestamp`, `webhook-signature`, `user-agent`, …). */
  headers: Record<string, string | string[] | undefined>;
  /** The verified envelope; null when the signature did not verify. */
  event: CallbackEvent | null;
}

export interface LocalReceiverOptions {
  /** 0 picks a free port. */
  port: number;
  /**
   * The workspace signing secret(s) that deliveries must be signed with, or a lookup asked on every
   * delivery (so a rotation needs no restart).
   */
  secret: string | string[] | WebhookSecretLookup;
  /** Which `npm start` runs it: answered at `GET /local-stack`, so that a second one can say who holds the port. */
  owner: { pid: number; root: string };
  tls: { cert: string; key: string };
  /** One line per delivery. */
  log: (line: string) => void;
}

export interface LocalReceiver {
  readonly port: number;
  /** The `callback_url` that reaches it: `localhost` is the name its certificate and the URL guard both know. */
  readonly callbackUrl: string;
  close(): Promise<void>;
}

const IDENTITY_PATH = '/local-stack';

/**
 * The `npm start` whose receiver answers on 127.0.0.1:`port`, if that is what holds the port. Its
 * certificate comes from another stack's CA, so it is not checked: nothing is sent but this GET.
 */
function whoHolds(port: number): Promise<{ pid: number; root: string } | undefined> {
  return new Promise((done) => {
    const req = get({ host: '127.0.0.1', port, path: IDENTITY_PATH, rejectUnauthorized: false, timeout: 2_000 }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (body = (body + chunk).slice(0, 4_096)));
      res.on('end', () => {
        try {
          const answer = JSON.parse(body) as { object?: unknown; pid?: unknown; root?: unknown };
          done(
            answer.object === 'local_stack' && Number.isInteger(answer.pid) && typeof answer.root === 'string'
              ? { pid: answer.pid as number, root: answer.root }
              : undefined,
          );
        } catch {
          done(undefined);
        }
      });
      res.on('error', () => done(undefined));
    });
    req.on('timeout', () => req.destroy());
    req.on('error', () => done(undefined));
  });
}

// Enough to look back over a walk-through; a long-running stack must not grow without bound.
const KEPT_DELIVERIES = 50;

/**
 * The receiver `npm start` runs so that a newcomer's first callback has somewhere real to go: HTTPS
 * on 127.0.0.1 only, verifying with the demo workspace's secret through the example receiver that
 * clients are shown, so what it accepts is what a client's receiver would accept.
 */
export async function startLocalReceiver(options: LocalReceiverOptions): Promise<LocalReceiver> {
  const deliveries: ReceivedDelivery[] = [];
  const app = express();
  app.disable('x-powered-by');

  // Recorded when the answer is sent, so rejected deliveries show up too; the example receiver
  // replaces `req.body` by the envelope only when the signature verified.
  app.post('/webhooks', (req, res, next) => {
    res.once('finish', () => {
      const webhookId = req.get('webhook-id') ?? null;
      const verified = res.statusCode === 200;
      const duplicate = verified && deliveries.some((d) => d.verified && d.webhook_id === webhookId);
      if (res.statusCode === 400) options.log(`rejected a delivery (400): its signature did not verify with the demo workspace's secrets`);
      deliveries.unshift({
        webhook_id: webhookId,
        received_at: new Date().toISOString(),
        status: res.statusCode,
        verified,
        duplicate,
        headers: req.headers,
        event: verified ? (req.body as CallbackEvent) : null,
      });
      deliveries.length = Math.min(deliveries.length, KEPT_DELIVERIES);
    });
    next();
  });
  app.use(
    createExampleReceiver({
      secret: options.secret,
      logger: { info: (line) => options.log(`${line} (signature verified)`), error: (line) => options.log(line) },
    }),
  );
  app.get('/webhooks', (req, res) => {
    const limit = Number(req.query.limit);
    res.json({ object: 'list', data: Number.isInteger(limit) && limit > 0 ? deliveries.slice(0, limit) : deliveries });
  });
  app.get(IDENTITY_PATH, (_req, res) => {
    res.json({ object: 'local_stack', pid: options.owner.pid, root: options.owner.root });
  });
  // A destination that never accepts, to watch the retry ladder and the Callbacks API at work.
  app.post('/fail', (_req, res) => {
    res.status(503).json({ error: 'this local receiver path always answers 503' });
  });
  // The secrets could not be read (the store is away and none was read before), or the body was too
  // large: one line rather than Express's stack trace, and a status that has the sender try again.
  app.use(((err: Error & { status?: number }, _req, res, _next) => {
    const status = err.status && err.status >= 400 && err.status < 500 ? err.status : 503;
    options.log(`could not take a delivery (${status}): ${err.message}`);
    res.status(status).json({ error: err.message });
  }) as express.ErrorRequestHandler);

  const server: Server = createServer({ cert: options.tls.cert, key: options.tls.key }, app);
  const sockets = new Set<Socket>();
  server.on('connection', (socket: Socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve, reject) => {
    const failed = (err: NodeJS.ErrnoException) => {
      const holder = err.code === 'EADDRINUSE' ? whoHolds(options.port) : Promise.resolve(undefined);
      void holder.then((running) =>
        reject(
          running
            ? new AnotherStackRunningError({ ...running, ports: { receiver: options.port } })
            : new Error(
                `the local callback receiver cannot listen on 127.0.0.1:${options.port} (${err.message}); set LOCAL_RECEIVER_PORT, or LOCAL_RECEIVER=off`,
              ),
        ),
      );
    };
    server.once('error', failed);
    server.listen(options.port, '127.0.0.1', () => {
      server.off('error', failed);
      resolve();
    });
  });
  const { port } = server.address() as AddressInfo;
  return {
    port,
    callbackUrl: `https://localhost:${port}/webhooks`,
    close: async () => {
      // The dispatcher keeps connections alive between attempts; close() alone would wait for them.
      for (const socket of sockets) socket.destroy();
      server.close();
      await once(server, 'close');
    },
  };
}
