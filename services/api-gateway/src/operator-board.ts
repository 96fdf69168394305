import { timingSafeEqual, createHash } from 'node:crypto';
import { createBullBoard } from '@bull-board/api';
import { BullMQAdapter } from '@bull-board/api/bullMQAdapter';
import { ExpressAdapter } from '@bull-board/express';
import { Queue } from 'bullmq';
import type { Express, RequestHandler } from 'express';
import type { Redis } from 'ioredis';
import { bullPrefix, logRedisErrors, type Logger } from '@media/common';
import { QUEUE_NAMES } from '@media/queues';

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

/** Methods that change nothing on the board: its GETs only read. */
const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/** Whether `origin` (`http://host:port`) is the origin of a request that came to `host` (its Host header). */
function isOwnOrigin(origin: string, host: string | undefined): boolean {
  if (!host || !URL.canParse(origin)) return false;
  const { protocol, host: originHost } = new URL(origin);
  if (protocol !== 'http:' && protocol !== 'https:') return false;
  // Read through URL as well, so that case and a default port compare alike on both sides.
  return URL.canParse(`${protocol}//${host}`) && new URL(`${protocol}//${host}`).host === originHost;
}

/**
 * Refuses (403) a state-changing request that a page of another site made the operator's browser
 * send. The browser adds its cached Basic credentials to any request to the board, a cross-site
 * `<form enctype=text/plain>` post included (no CORS preflight), so the credentials do not show the
 * operator meant it; the board, not ours to change, has no token of its own. Browsers say where a
 * request comes from: `Sec-Fetch-Site` must be `same-origin` or `none` (typed, bookmarked) and
 * `Origin` the board's own. A request with neither header is not a browser's (curl, a script), and
 * goes on to the credential check. Placed before that check, so a page cannot spend an address's
 * allowance of wrong tries either.
 */
export function requireSameOrigin(logger: Logger): RequestHandler {
  return (req, res, next) => {
    const site = req.headers['sec-fetch-site'];
    const origin = req.headers.origin;
    const siteOk = site === undefined || site === 'same-origin' || site === 'none';
    const originOk = origin === undefined || isOwnOrigin(origin, req.headers.host);
    if (SAFE_METHODS.has(req.method) || (siteOk && originOk)) {
      next();
      return;
    }
    logger.warn("board request refused: not from the board's own origin", {
      method: req.method,
      path: req.originalUrl.split('?')[0],
      origin: origin?.slice(0, 200),
      sec_fetch_site: typeof site === 'string' ? site.slice(0, 40) : undefined,
    });
    res.status(403).json({ error: "cross-site request refused: the board changes queues only for requests from the board's own origin" });
  };
}

/**
 * Bull Board (the BullMQ project's UI) for every queue of the catalogue, behind operator Basic
 * auth, on the ops port; state-changing requests only from the board's own pages (or a client
 * that is no browser). Returns the close for its queue handles.
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
  app.use(BOARD_PATH, requireSameOrigin(opts.logger), requireOperator(opts.credentials), adapter.getRouter());
  return async () => {
    await Promise.all(queues.map((q) => q.close()));
  };
}
