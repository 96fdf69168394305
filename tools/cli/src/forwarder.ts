import { request as httpRequest, validateHeaderName, validateHeaderValue, type IncomingMessage, type OutgoingHttpHeaders } from 'node:http';
import { request as httpsRequest } from 'node:https';
import type { Socket } from 'node:net';
import { performance } from 'node:perf_hooks';
import type { DeliveryFrame, ForwardError, ResultFrame } from './protocol';

/** How much of the handler's answer is kept as the excerpt; the rest is not read. */
export const EXCERPT_BYTES = 1024;

/**
 * Headers that describe one hop rather than the message: the forward makes its own (its own
 * connection, host and length), so these from the dispatcher's request are dropped.
 */
const HOP_BY_HOP = new Set([
  'host',
  'content-length',
  'connection',
  'keep-alive',
  'proxy-connection',
  'proxy-authorization',
  'proxy-authenticate',
  'transfer-encoding',
  'te',
  'trailer',
  'upgrade',
]);

export interface ForwarderOptions {
  /** Extra certificate authorities for an https handler (besides Node's and NODE_EXTRA_CA_CERTS). */
  ca?: string | Buffer | Array<string | Buffer>;
}

/**
 * POSTs deliveries to the developer's handler and describes the answer as a {@link ResultFrame}.
 * Each delivery gets a connection of its own, never a proxy (the handler is on this machine or
 * its network), so every exchange has its connect (and TLS) timed.
 */
export class Forwarder {
  constructor(
    readonly target: URL,
    private readonly options: ForwarderOptions = {},
  ) {}

  /**
   * Forwards one delivery. Never rejects: a failure is the result's `error`. The deadline is the
   * delivery's `timeout_ms` for the whole exchange, up to the end of the excerpt; `signal` drops
   * the exchange (the listener is stopping) and the result then says `reset`.
   */
  forward(delivery: Pick<DeliveryFrame, 'id' | 'headers' | 'body' | 'timeout_ms'>, signal?: AbortSignal): Promise<ResultFrame> {
    const started = performance.now();
    const marks: { lookup?: number; connect?: number; secure?: number; sent?: number; response?: number } = {};
    const body = Buffer.from(delivery.body, 'utf8');
    const headers: OutgoingHttpHeaders = { ...forwardedHeaders(delivery.headers), 'content-length': String(body.length) };
    const secure = this.target.protocol === 'https:';
    const send = secure ? httpsRequest : httpRequest;

    return new Promise<ResultFrame>((resolve) => {
      let settled = false;
      const settle = (answer: { status: number; excerpt: string; headersBytes: number } | { error: ForwardError; detail: string; excerpt?: string }) => {
        if (settled) return;
        settled = true;
        clearTimeout(deadline);
        signal?.removeEventListener('abort', onAbort);
        // What is left of the answer is not needed: the connection goes with it.
        request.destroy();
        const ended = performance.now();
        const since = (from: number | undefined, to: number | undefined) => (from === undefined || to === undefined ? null : Math.round(to - from));
        const connectedAt = marks.secure ?? marks.connect;
        resolve({
          type: 'result',
          id: delivery.id,
          status: 'status' in answer ? answer.status : null,
          error: 'error' in answer ? answer.error : null,
          error_detail: 'error' in answer ? answer.detail : null,
          excerpt: answer.excerpt ?? '',
          headers_bytes: 'headersBytes' in answer ? answer.headersBytes : 0,
          duration_ms: Math.round(ended - started),
          timing: {
            dns_ms: since(started, marks.lookup),
            connect_ms: since(marks.lookup ?? started, marks.connect),
            tls_ms: since(marks.connect, marks.secure),
            // As got measures it: from the end of the upload to the answer's head.
            first_byte_ms: since(marks.sent ?? connectedAt, marks.response),
          },
        });
      };

      const request = send({
        protocol: this.target.protocol,
        hostname: this.target.hostname.replace(/^\[|\]$/g, ''),
        port: this.target.port || undefined,
        path: `${this.target.pathname}${this.target.search}`,
        method: 'POST',
        headers,
        agent: false,
        ca: this.options.ca,
      });
      const chunks: Buffer[] = [];
      let kept = 0;

      const timeoutMs = delivery.timeout_ms;
      const deadline = setTimeout(() => settle({ error: 'timeout', detail: `no full answer within ${timeoutMs} ms`, excerpt: excerptOf(chunks) }), timeoutMs);
      const onAbort = () => settle({ error: 'reset', detail: 'the listener stopped' });
      if (signal?.aborted) onAbort();
      signal?.addEventListener('abort', onAbort, { once: true });

      request.once('socket', (socket: Socket) => {
        socket.once('lookup', () => (marks.lookup = performance.now()));
        socket.once('connect', () => (marks.connect = performance.now()));
        socket.once('secureConnect', () => (marks.secure = performance.now()));
      });
      request.once('finish', () => (marks.sent = performance.now()));
      request.once('response', (res: IncomingMessage) => {
        marks.response = performance.now();
        const status = res.statusCode ?? 0;
        const headersBytes = headBytes(res);
        const answered = () => settle({ status, excerpt: excerptOf(chunks), headersBytes });
        res.on('data', (chunk: Buffer) => {
          if (kept < EXCERPT_BYTES) {
            chunks.push(chunk);
            kept += chunk.length;
          }
          if (kept >= EXCERPT_BYTES) answered();
        });
        res.once('end', answered);
        res.once('error', (err: NodeJS.ErrnoException) => settle({ ...classify(err), excerpt: excerptOf(chunks) }));
      });
      request.once('error', (err: NodeJS.ErrnoException) => settle({ ...classify(err), excerpt: excerptOf(chunks) }));
      request.end(body);
    });
  }
}

/** The delivery's headers as the dispatcher signed them, less those of its own hop and any Node would refuse to send. */
export function forwardedHeaders(headers: Record<string, string>): Record<string, string> {
  const kept: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers)) {
    const lower = name.toLowerCase();
    if (HOP_BY_HOP.has(lower) || typeof value !== 'string') continue;
    try {
      validateHeaderName(lower);
      validateHeaderValue(lower, value);
    } catch {
      continue;
    }
    kept[lower] = value;
  }
  return kept;
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
 * A transport failure in the attempt log's words (the dispatcher classifies its own the same
 * way). An answer that was not HTTP, or anything else that ended the exchange without one, counts
 * as a reset; `error_detail` keeps Node's code.
 */
export function classify(err: NodeJS.ErrnoException): { error: ForwardError; detail: string } {
  const code = typeof err.code === 'string' ? err.code : undefined;
  const detail = code ?? err.message;
  if (code === undefined) return { error: 'reset', detail };
  if (DNS.has(code)) return { error: 'dns', detail };
  if (REFUSED.has(code)) return { error: 'refused', detail };
  if (RESET.has(code)) return { error: 'reset', detail };
  if (code === 'ETIMEDOUT') return { error: 'timeout', detail };
  if (TLS.has(code) || code.startsWith('ERR_TLS_') || code.startsWith('ERR_SSL_')) return { error: 'tls', detail };
  return { error: 'reset', detail };
}

function excerptOf(chunks: Buffer[]): string {
  return Buffer.concat(chunks).subarray(0, EXCERPT_BYTES).toString('utf8');
}

/** Bytes of the status line and header lines as they came (Node keeps the names' and values' own spelling in rawHeaders). */
function headBytes(res: IncomingMessage): number {
  let bytes = Buffer.byteLength(`HTTP/${res.httpVersion} ${res.statusCode} ${res.statusMessage ?? ''}\r\n`, 'latin1');
  for (let i = 0; i + 1 < res.rawHeaders.length; i += 2) bytes += Buffer.byteLength(`${res.rawHeaders[i]}: ${res.rawHeaders[i + 1]}\r\n`, 'latin1');
  return bytes + 2;
}
