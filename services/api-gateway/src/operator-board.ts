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

/** HTTP Basic for operators: a separate identity from workspace API keys, which must never open the board. */
export function requireOperator(credentials: OperatorCredentials): RequestHandler {
  return (req, res, next) => {
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
