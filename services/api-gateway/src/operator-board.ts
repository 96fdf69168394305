import { timingSafeEqual, createHash } from 'node:crypto';
import { createBullBoard } from '@bull-board/api';
import { BullMQAdapter } from '@bull-board/api/bullMQAdapter';
import { ExpressAdapter } from '@bull-board/express';
import { Queue } from 'bullmq';
import type { Express, RequestHandler } from 'express';
import type { Redis } from 'ioredis';
import { bullPrefix, logRedisErrors, QUEUE_NAMES, type Logger } from '@media/common';

export const BOARD_PATH = '/queues';

export interface OperatorCredentials {
  username: string;
  password: string;
}

/** Compares in constant time; hashing first makes the lengths equal, so length leaks nothing either. */
function same(a: string, b: string): boolean {
  const digest = (s: string) => createHash('sha256').update(s).digest();
  return timingSafeEqual(digest(a), digest(b));
}

/** Wrong operator credentials one address may send per window before it must wait for the window's end. */
export const OPERATOR_FAILURES_PER_ADDRESS = 10;
const OPERATOR_WINDOW_MS = 15 * 60_000;
/** Addresses remembered at most; the oldest is forgotten first, so a flood of addresses cannot grow the map. */
const OPERATOR_ADDRESSES_KEPT = 10_000;

/**
 * Failed operator sign-ins per client address, in this process. The board is on the ops port of one
 * pod, reached by port-forward or from inside the cluster, so a count per process is the count per
 * listener a guesser faces; nothing is shared with the API's limits.
 */
class OperatorFailures {
  private readonly windows = new Map<string, { count: number; startMs: number }>();

  /** Ms until the address may try again; 0 when it may now. */
  waitMs(address: string, nowMs: number): number {
    const w = this.windows.get(address);
    if (!w || nowMs - w.startMs >= OPERATOR_WINDOW_MS) return 0;
    return w.count >= OPERATOR_FAILURES_PER_ADDRESS ? w.startMs + OPERATOR_WINDOW_MS - nowMs : 0;
  }

  fail(address: string, nowMs: number): void {
    const w = this.windows.get(address);
    this.windows.delete(address);
    const next = w && nowMs - w.startMs < OPERATOR_WINDOW_MS ? { count: w.count + 1, startMs: w.startMs } : { count: 1, startMs: nowMs };
    if (this.windows.size >= OPERATOR_ADDRESSES_KEPT) this.windows.delete(this.windows.keys().next().value!);
    this.windows.set(address, next);
  }
}

/**
 * HTTP Basic for operators: a separate identity from workspace API keys, which must never open the
 * board. After {@link OPERATOR_FAILURES_PER_ADDRESS} wrong tries from one address in 15 minutes,
 * that address gets `429` with `Retry-After` (the right password included) until the window ends.
 */
export function requireOperator(credentials: OperatorCredentials, now: () => number = Date.now): RequestHandler {
  const failures = new OperatorFailures();
  return (req, res, next) => {
    const address = req.socket.remoteAddress ?? 'unknown';
    const waitMs = failures.waitMs(address, now());
    if (waitMs > 0) {
      res
        .set('retry-after', String(Math.ceil(waitMs / 1000)))
        .status(429)
        .json({ error: 'too many wrong operator credentials from this address' });
      return;
    }
    const match = /^Basic ([A-Za-z0-9+/=]+)$/.exec(req.headers.authorization ?? '');
    const decoded = match ? Buffer.from(match[1], 'base64').toString('utf8') : '';
    const colon = decoded.indexOf(':');
    // Both halves are always compared, so a wrong user name takes as long as a wrong password.
    const userOk = same(colon < 0 ? '' : decoded.slice(0, colon), credentials.username);
    const passOk = same(colon < 0 ? '' : decoded.slice(colon + 1), credentials.password);
    if (match && colon >= 0 && userOk && passOk) {
      next();
      return;
    }
    // A request without credentials is the browser asking for them, not a guess.
    if (match) failures.fail(address, now());
    res.set('www-authenticate', 'Basic realm="operators", charset="UTF-8"').status(401).json({ error: 'operator credentials required' });
  };
}

/**
 * Bull Board (the BullMQ project's UI) for every queue of the catalogue, behind operator Basic
 * auth, on the ops port. Returns the close for its queue handles.
 */
export function mountOperatorBoard(
  app: Express,
  opts: { connection: Redis; keyPrefix: string; credentials: OperatorCredentials; logger: Logger },
): () => Promise<void> {
  const queues = QUEUE_NAMES.map((name) => {
    const queue = new Queue(name, { connection: opts.connection, prefix: bullPrefix(opts.keyPrefix, name) });
    logRedisErrors(queue, opts.logger, `board:${name}`);
    return queue;
  });
  const adapter = new ExpressAdapter();
  adapter.setBasePath(BOARD_PATH);
  createBullBoard({ queues: queues.map((q) => new BullMQAdapter(q)), serverAdapter: adapter });
  app.use(BOARD_PATH, requireOperator(opts.credentials), adapter.getRouter());
  return async () => {
    await Promise.all(queues.map((q) => q.close()));
  };
}
