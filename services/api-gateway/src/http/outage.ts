import { BlobStoreUnavailableError } from '@media/blob-store';

/**
 * Whether an error means that Redis or the blob store could not be reached, rather than that a
 * command was wrong. The one place that knows how ioredis, BullMQ, a shared volume and the S3 store
 * report a connection failure: the error handler turns these into `503 service_unavailable` (design
 * section 2, "Dependency outage"), and start-up keeps retrying on them.
 */
export function isDependencyOutage(err: unknown, depth = 0): boolean {
  if (!(err instanceof Error) || depth > 4) return false;
  const { name, message } = err;
  const code = (err as NodeJS.ErrnoException).code;
  if (name === 'MaxRetriesPerRequestError' || name === 'ConnectionClosedError') return true;
  if (err instanceof BlobStoreUnavailableError) return true;
  if (code !== undefined && NETWORK_CODES.has(code)) return true;
  if (OUTAGE_MESSAGES.some((pattern) => pattern.test(message))) return true;
  // BullMQ and Node wrap the connection error they met.
  if (err instanceof AggregateError && err.errors.some((e) => isDependencyOutage(e, depth + 1))) return true;
  return isDependencyOutage(err.cause, depth + 1);
}

/** Socket errors of a connection that went away or never came up, and I/O errors of a network volume that did. */
const NETWORK_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EIO',
  'ESTALE',
  'ENOTCONN',
]);

const OUTAGE_MESSAGES = [
  /^Connection is closed\.?$/,
  // enableOfflineQueue: false, while disconnected
  /^Stream isn't writeable/,
  /^Command timed out/,
  /connect (ECONNREFUSED|ETIMEDOUT)/,
  // Replies of a Redis that is up but cannot serve: loading its AOF, in a failover, running a long script.
  /^(LOADING|MASTERDOWN|CLUSTERDOWN|TRYAGAIN|BUSY|READONLY) /,
];
