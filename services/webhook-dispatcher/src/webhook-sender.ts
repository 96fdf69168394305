import { Agent as HttpAgent, type ClientRequest } from 'node:http';
import { Agent as HttpsAgent } from 'node:https';
import { isIP, type Socket } from 'node:net';
import { createSecureContext, rootCertificates } from 'node:tls';
import { pinnedLookup, type CheckedTarget } from '@media/callback-guard';
import type { AttemptErrorClass, AttemptTiming } from '@media/storage';
import type { Got, Request as GotRequest } from 'got' with { 'resolution-mode': 'import' };
import { classifyTransportError } from './classify';

/** Bytes of a response body read at most; the rest is never downloaded. */
export const RESPONSE_READ_CAP_BYTES = 4096;
/** Characters of the body kept in the attempt log. */
export const RESPONSE_EXCERPT_CHARS = 512;

export interface WebhookSenderOptions {
  /** Time the whole exchange may take, connect to last body byte read (WEBHOOK_TIMEOUT_MS). */
  timeoutMs: number;
  /** Extra CA certificates (PEM) to trust beside Node's bundled roots (CALLBACK_CA_FILE). */
  extraCaPem?: string;
}

/** What came of one POST. */
export interface Exchange {
  /** Unix ms when the request started. */
  sentMs: number;
  durationMs: number;
  /** The receiver's status, when an answer arrived. */
  status: number | null;
  /** Set when the exchange failed below HTTP: timeout, refused, reset, TLS... */
  transportError: AttemptErrorClass | null;
  transportDetail: string | null;
  /** The IP the socket went to (or was about to), or null when nothing was dialled. */
  address: string | null;
  excerpt: string;
  /** Phase timings as got measured them; absent when no request was made. */
  timing?: AttemptTiming;
}

/**
 * POSTs one signed callback with got, under the delivery rules of design section 4: only to the
 * addresses the guard checked (pinned lookup, no proxy), redirects never followed, one deadline for
 * the whole exchange, no automatic retries (the ladder is ours), and at most
 * {@link RESPONSE_READ_CAP_BYTES} of the answer read.
 */
export class WebhookSender {
  readonly #got: Got;
  readonly #agents: { http: HttpAgent; https: HttpsAgent };
  readonly #now: () => number;

  /** got 14 is ESM-only and this package is CommonJS, so got is loaded with a dynamic import. */
  static async create(options: WebhookSenderOptions, now: () => number = Date.now): Promise<WebhookSender> {
    const { got } = await import('got');
    return new WebhookSender(got, options, now);
  }

  private constructor(got: Got, options: WebhookSenderOptions, now: () => number) {
    this.#now = now;
    // Fresh connections only: a pooled socket was opened to an address checked for an earlier
    // attempt, and every attempt must go to the address checked for it. Agents of our own also keep
    // any process-wide agent configuration (proxies, keep-alive) out of callback traffic.
    // The extra CA goes into one secure context built once, beside (not instead of) the bundled
    // roots; giving `ca` per request would rebuild the whole root store on every connection.
    const secureContext = options.extraCaPem ? createSecureContext({ ca: [...rootCertificates, options.extraCaPem] }) : undefined;
    this.#agents = {
      http: new HttpAgent({ keepAlive: false }),
      https: new HttpsAgent({ keepAlive: false, ...(secureContext ? { secureContext } : {}) }),
    };
    // got reads no proxy settings from the environment (it has no proxy support at all), and
    // Node 20's http module does not either, so nothing here can be routed through a proxy.
    this.#got = got.extend({
      followRedirect: false,
      throwHttpErrors: false,
      retry: { limit: 0 },
      // Raw bytes for the excerpt, and no accept-encoding header for receivers to act on.
      decompress: false,
      http2: false,
      timeout: { request: options.timeoutMs },
      agent: this.#agents,
    });
  }

  /**
   * Sends `body` with `headers` to `target`. Never throws for a failed exchange: the outcome
   * (status or transport error) is the result, to be recorded as an attempt.
   */
  send(target: CheckedTarget, body: Buffer, headers: Record<string, string>): Promise<Exchange> {
    const sentMs = this.#now();
    // Node dials an IP-literal host without a lookup, so the lookup below never names it.
    let address: string | null = isIP(target.hostname) ? target.hostname : null;
    const lookup = pinnedLookup(target);
    // Note the first address handed to the socket, so a connection that fails still names it.
    const recordingLookup = (hostname: string, options: unknown, callback: (...args: any[]) => void) =>
      lookup(hostname, options, (err: Error | null, result?: string | { address: string }[], family?: number) => {
        if (!err && address === null) address = Array.isArray(result) ? (result[0]?.address ?? null) : (result ?? null);
        callback(err, result, family);
      });

    return new Promise<Exchange>((resolve) => {
      let status: number | null = null;
      const chunks: Buffer[] = [];
      let received = 0;
      let settled = false;
      const stream = this.#got.stream(target.url, {
        method: 'POST',
        body,
        headers,
        dnsLookup: recordingLookup as never,
      });
      const finish = (error: unknown) => {
        if (settled) return;
        settled = true;
        // Past the cap, or after an error, the rest of the answer is not wanted.
        stream.destroy();
        // The answer is its status line: a body that then stalls or breaks does not undo a 2xx
        // received in time (spec 3: "any 2xx response within 15 s").
        const transportError = error === undefined || status !== null ? null : classifyTransportError(error);
        resolve({
          sentMs,
          durationMs: this.#now() - sentMs,
          status,
          transportError,
          transportDetail: error === undefined ? null : describe(error),
          address,
          excerpt: Buffer.concat(chunks).toString('utf8').slice(0, RESPONSE_EXCERPT_CHARS),
          timing: phasesOf(stream.timings),
        });
      };
      stream.on('request', (request: ClientRequest) => {
        request.once('socket', (socket: Socket) => {
          // With several checked addresses the socket may settle on another one than first offered.
          socket.once('connect', () => (address = socket.remoteAddress ?? address));
        });
      });
      stream.on('response', (response: { statusCode: number }) => {
        status = response.statusCode;
      });
      stream.on('data', (chunk: Buffer) => {
        if (received < RESPONSE_READ_CAP_BYTES) chunks.push(chunk.subarray(0, RESPONSE_READ_CAP_BYTES - received));
        received += chunk.length;
        if (received >= RESPONSE_READ_CAP_BYTES) finish(undefined);
      });
      stream.on('end', () => finish(undefined));
      stream.on('error', (error: unknown) => finish(error));
    });
  }

  /** Closes idle sockets; in-flight exchanges end on their own deadline. */
  close(): void {
    this.#agents.http.destroy();
    this.#agents.https.destroy();
  }
}

/**
 * got's phase timings (`timings.phases`, from @szmarczak/http-timer), each present only once the
 * phase completed. `dns` is near 0: the lookup is the pinned answer of the URL guard, which already
 * resolved the host, and it is missing altogether for an IP-literal host (no lookup happens).
 */
function phasesOf(timings: GotRequest['timings']): AttemptTiming | undefined {
  if (!timings) return undefined;
  const ms = (value: number | undefined) => (value === undefined ? null : Math.round(value));
  const { dns, tcp, tls, firstByte } = timings.phases;
  return { dns_ms: ms(dns), connect_ms: ms(tcp), tls_ms: ms(tls), first_byte_ms: ms(firstByte) };
}

function describe(error: unknown): string {
  const { code, message } = error as { code?: unknown; message?: unknown };
  const text = `${typeof code === 'string' ? `${code}: ` : ''}${typeof message === 'string' ? message : String(error)}`;
  return text.slice(0, 300);
}
