import type { CallbackUrlRejectedError } from '@media/callback-guard';
import type { AttemptErrorClass } from '@media/domain';

/** What one exchange (see `Exchange` in ./exchange) came to: null when delivered, else the attempt's error class. */
export function errorOf(exchange: { status: number | null; transportError: AttemptErrorClass | null }): AttemptErrorClass | null {
  // No status and no transport error would be a stream that ended without an answer: not delivered.
  return exchange.transportError ?? (exchange.status === null ? 'reset' : classifyStatus(exchange.status));
}

/** What an HTTP status means for a delivery: null (delivered) for 2xx, else why it failed. */
export function classifyStatus(status: number): AttemptErrorClass | null {
  if (status >= 200 && status < 300) return null;
  // Redirects are never followed (spec 4.6.3): following one would reach a host nobody checked.
  if (status >= 300 && status < 400) return 'redirect';
  return 'http_error';
}

const DNS = new Set(['ENOTFOUND', 'EAI_AGAIN', 'EAI_FAIL', 'EAI_NODATA', 'EAI_NONAME']);
// Nothing accepted the connection: refused outright, or no route to the host.
const REFUSED = new Set(['ECONNREFUSED', 'EHOSTUNREACH', 'ENETUNREACH', 'EHOSTDOWN', 'ENETDOWN', 'EADDRNOTAVAIL']);
const RESET = new Set(['ECONNRESET', 'EPIPE', 'ECONNABORTED', 'ERR_STREAM_PREMATURE_CLOSE']);
// OpenSSL's certificate verification codes, as Node reports them.
const TLS = new Set([
  'EPROTO',
  'CERT_HAS_EXPIRED',
  'CERT_NOT_YET_VALID',
  'CERT_REVOKED',
  'CERT_UNTRUSTED',
  'CERT_REJECTED',
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'SELF_SIGNED_CERT_IN_CHAIN',
  'UNABLE_TO_GET_ISSUER_CERT',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'INVALID_CA',
  'HOSTNAME_MISMATCH',
]);

/**
 * The error class of a transport failure (got's RequestError or the Node error beneath it): no
 * answer in time, a name that did not resolve, a connection refused or cut, or a TLS failure.
 * Anything else ended the exchange without a usable answer and is counted as a reset.
 */
export function classifyTransportError(err: unknown): AttemptErrorClass {
  const { name, code } = (err ?? {}) as { name?: unknown; code?: unknown };
  if (name === 'TimeoutError' || code === 'ETIMEDOUT') return 'timeout';
  if (typeof code === 'string') {
    if (DNS.has(code)) return 'dns';
    if (REFUSED.has(code)) return 'refused';
    if (RESET.has(code)) return 'reset';
    if (TLS.has(code) || code.startsWith('ERR_TLS_') || code.startsWith('ERR_SSL_')) return 'tls';
    // llhttp could not parse what came back: the receiver answered, but not with HTTP.
    if (code.startsWith('HPE_')) return 'http_error';
  }
  return 'reset';
}

/** A URL refused at delivery time: a name that no longer resolves is `dns`, anything else `blocked_address`. */
export function classifyRejection(err: CallbackUrlRejectedError): AttemptErrorClass {
  return err.reason === 'unresolvable' ? 'dns' : 'blocked_address';
}
