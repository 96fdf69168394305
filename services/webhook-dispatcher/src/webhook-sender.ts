import { Agent as HttpAgent, type ClientRequest } from 'node:http';
import { Agent as HttpsAgent } from 'node:https';
import { BlockList, isIP, type Socket } from 'node:net';
import { performance } from 'node:perf_hooks';
import { createSecureContext, rootCertificates } from 'node:tls';
import { pinnedLookup, type CheckedTarget, type LookupCallback } from '@media/callback-guard';
import { classifyTransportError, parseRetryAfter, type Exchange } from '@media/callbacks';
import type { AttemptTiming } from '@media/domain';
import type { Got, Request as GotRequest } from 'got' with { 'resolution-mode': 'import' };
import { AgentPool, type AgentLease, type AgentPoolLimits } from './agent-pool';
import { PROXY_ERROR, remoteAddressOf, TunnelHttpAgent, TunnelHttpsAgent, type EgressProxy } from './egress-proxy';

/** How long past its timeout an exchange may run before it is ended regardless (got's own timer should have ended it). */
const DEADLINE_SLACK_MS = 1_000;

/** Bytes of a response body read at most; the rest is never downloaded. */
export const RESPONSE_READ_CAP_BYTES = 4096;
/** Characters of the body kept in the attempt log. */
export const RESPONSE_EXCERPT_CHARS = 512;
/**
 * Bytes of a response's status line and headers read at most; a larger head is cut as soon as it
 * passes this (`http_error`). Set here rather than left to Node's process-wide
 * `--max-http-header-size`, so no start-up flag can widen what a receiver may make us buffer.
 */
export const RESPONSE_HEAD_CAP_BYTES = 16 * 1024;

export interface WebhookSenderOptions {
  /** Time the whole exchange may take, connect to last body byte read (WEBHOOK_TIMEOUT_MS). */
  timeoutMs: number;
  /** Extra CA certificates (PEM) to trust beside Node's bundled roots (CALLBACK_CA_FILE). */
  extraCaPem?: string;
  /** Connection reuse limits, each defaulting to DEFAULT_AGENT_POOL_LIMITS. */
  pool?: Partial<AgentPoolLimits>;
  /** A forward proxy every connection is tunnelled through (CALLBACK_EGRESS_PROXY); none by default. */
  proxy?: EgressProxy;
}

/** Errors of a reused socket, before any answer, that mean the server closed it while it was idle. */
const STALE_SOCKET_CODES = new Set(['ECONNRESET', 'EPIPE']);
/** The code of the error with which an exchange on a socket to an unchecked address is stopped. */
const UNCHECKED_ADDRESS = 'ERR_UNCHECKED_ADDRESS';

/** One POST on one connection; {@link WebhookSender.send} may make two for one attempt. */
interface PostResult {
  exchange: Omit<Exchange, 'sentMs' | 'durationMs'>;
  /** It failed before any answer on a pooled socket, most likely one the server had closed. */
  staleSocket: boolean;
}

/**
 * POSTs one signed callback with got, under the delivery rules of design section 4: only to the
 * addresses the guard checked (pinned lookup, no proxy), redirects never followed, one deadline for
 * the whole exchange, no automatic retries (the ladder is ours), and at most
 * {@link RESPONSE_READ_CAP_BYTES} of the answer read.
 *
 * Connections are kept alive and reused, but only for attempts whose check yielded the same
 * addresses (see {@link AgentPool}): a fresh TCP and TLS handshake per callback capped throughput
 * at the rate connections can be opened.
 */
export class WebhookSender {
  readonly #got: Got;
  readonly #pool: AgentPool;
  readonly #fresh: { http: HttpAgent; https: HttpsAgent };
  readonly #timeoutMs: number;
  readonly #now: () => number;
  #closed = false;

  /** got 14 is ESM-only and this package is CommonJS, so got is loaded with a dynamic import. */
  static async create(options: WebhookSenderOptions, now: () => number = Date.now): Promise<WebhookSender> {
    const { got } = await import('got');
    return new WebhookSender(got, options, now);
  }

  private constructor(got: Got, options: WebhookSenderOptions, now: () => number) {
    this.#now = now;
    this.#timeoutMs = options.timeoutMs;
    // The extra CA goes into one secure context built once, beside (not instead of) the bundled
    // roots; giving `ca` per request would rebuild the whole root store on every connection. Every
    // agent shares it, which is why the CA is not part of the pool key.
    const secureContext = options.extraCaPem ? createSecureContext({ ca: [...rootCertificates, options.extraCaPem] }) : undefined;
    // Agents that never pool, for what must go on a new connection: the retry after a stale pooled
    // socket, and sends after close(). Agents of our own (these and the pool's) also keep any
    // process-wide agent configuration (proxies, keep-alive) out of callback traffic.
    const fresh = { keepAlive: false, ...(secureContext ? { secureContext } : {}) };
    this.#fresh = options.proxy
      ? { http: new TunnelHttpAgent(options.proxy, { keepAlive: false }), https: new TunnelHttpsAgent(options.proxy, fresh) }
      : { http: new HttpAgent({ keepAlive: false }), https: new HttpsAgent(fresh) };
    this.#pool = new AgentPool(this.#fresh, secureContext, options.pool, undefined, options.proxy);
    // got reads no proxy settings from the environment (it has no proxy support at all), and
    // Node's http module applies HTTP_PROXY (with NODE_USE_ENV_PROXY) only to its global agents,
    // never to agents made here, so nothing here can be routed through a proxy.
    this.#got = got.extend({
      followRedirect: false,
      throwHttpErrors: false,
      retry: { limit: 0 },
      // Raw bytes for the excerpt, and no accept-encoding header for receivers to act on.
      decompress: false,
      http2: false,
      timeout: { request: options.timeoutMs },
      maxHeaderSize: RESPONSE_HEAD_CAP_BYTES,
      agent: this.#fresh,
    });
  }

  /**
   * Sends `body` with `headers` to `target`. Never throws for a failed exchange: the outcome
   * (status or transport error) is the result, to be recorded as an attempt.
   */
  async send(target: CheckedTarget, body: Buffer, headers: Record<string, string>): Promise<Exchange> {
    const sentMs = this.#now();
    // On the monotonic clock: `now` may be a test's fake wall clock.
    const deadline = performance.now() + this.#timeoutMs;
    const lease: AgentLease | undefined = this.#closed ? undefined : this.#pool.acquire(target);
    try {
      let result = await this.#post(target, body, headers, lease?.agents ?? this.#fresh, this.#timeoutMs);
      const remainingMs = Math.floor(deadline - performance.now());
      if (result.staleSocket && remainingMs > 0) {
        // A server may close an idle keep-alive socket just as we reuse it; that says nothing about
        // the receiver, so it must not count as a failed attempt. Sent again once, on a new
        // connection (a second pooled one could be just as stale), within the same deadline.
        // Receivers de-duplicate by webhook-id should the first copy have arrived after all.
        result = await this.#post(target, body, headers, this.#fresh, remainingMs);
      }
      return { sentMs, durationMs: this.#now() - sentMs, ...result.exchange };
    } finally {
      lease?.release();
    }
  }

  /**
   * Destroys every agent and their sockets, pooled or in use; call it once in-flight sends are
   * over. Safe to call twice; a send after it uses a new connection that is not kept.
   */
  close(): void {
    this.#closed = true;
    this.#pool.destroy();
    this.#fresh.http.destroy();
    this.#fresh.https.destroy();
  }

  #post(
    target: CheckedTarget,
    body: Buffer,
    headers: Record<string, string>,
    agents: { http: HttpAgent; https: HttpsAgent },
    timeoutMs: number,
  ): Promise<PostResult> {
    // Node dials an IP-literal host without a lookup, so the lookup below never names it.
    let address: string | null = isIP(target.hostname) ? target.hostname : null;
    let reused = false;
    const lookup = pinnedLookup(target);
    // Note the first address handed to the socket, so a connection that fails still names it.
    const recordingLookup = (hostname: string, options: unknown, callback: LookupCallback) =>
      lookup(hostname, options, (err, result, family) => {
        if (!err && address === null) address = Array.isArray(result) ? (result[0]?.address ?? null) : (result ?? null);
        callback(err, result, family);
      });

    return new Promise<PostResult>((resolve) => {
      let status: number | null = null;
      let retryAfterMs: number | null = null;
      const chunks: Buffer[] = [];
      let received = 0;
      let settled = false;
      const stream = this.#got.stream(target.url, {
        method: 'POST',
        body,
        headers,
        dnsLookup: recordingLookup as never,
        agent: agents,
        timeout: { request: timeoutMs },
      });
      // got's own request timeout does not cover every way an exchange can stall (an upgraded
      // connection is handed away from it): past this, the attempt ends as a timeout whatever the
      // receiver did, so no receiver can hold a worker longer than the timeout says.
      const deadline = setTimeout(
        () => finish(Object.assign(new Error(`no answer within ${timeoutMs} ms`), { name: 'TimeoutError' })),
        timeoutMs + DEADLINE_SLACK_MS,
      );
      const finish = (error: unknown) => {
        if (settled) return;
        settled = true;
        clearTimeout(deadline);
        // Past the cap, or after an error, the rest of the answer is not wanted. (After a complete
        // answer the socket is already back in the pool, and this does not touch it.)
        stream.destroy();
        const code = codeOf(error);
        // The answer is its status line: a body that then stalls or breaks does not undo a 2xx
        // received in time (spec 3: "any 2xx response within 15 s").
        const transportError =
          error === undefined || status !== null
            ? null
            : code === UNCHECKED_ADDRESS
              ? 'blocked_address'
              : code === PROXY_ERROR
                ? 'proxy'
                : classifyTransportError(error);
        resolve({
          staleSocket: reused && status === null && code !== undefined && STALE_SOCKET_CODES.has(code),
          exchange: {
            status,
            transportError,
            transportDetail: error === undefined ? null : describe(error),
            address,
            excerpt: Buffer.concat(chunks).toString('utf8').slice(0, RESPONSE_EXCERPT_CHARS),
            timing: phasesOf(stream.timings, reused),
            retryAfterMs,
          },
        });
      };
      stream.on('request', (request: ClientRequest) => {
        // 101 Switching Protocols: Node hands the connection to 'upgrade' listeners instead of
        // answering, and without one the exchange never ends. It is an answer, and not a 2xx.
        request.once('upgrade', (response: { statusCode?: number }, socket: Socket) => {
          socket.destroy();
          status = response.statusCode ?? 101;
          finish(undefined);
        });
        request.once('socket', (socket: Socket) => {
          if (request.reusedSocket) {
            // No lookup or connect happens on a pooled socket: it names its own address (through a
            // proxy, the far end of its tunnel).
            reused = true;
            address = remoteAddressOf(socket) ?? null;
            // The pool key makes this impossible; checked anyway because a mistake there would
            // silently send callbacks to an address nobody checked (SSRF), and it costs little.
            if (!isCheckedAddress(target, address)) {
              request.destroy(Object.assign(new Error(`pooled socket to unchecked address ${address}`), { code: UNCHECKED_ADDRESS }));
            }
            return;
          }
          // With several checked addresses the socket may settle on another one than first offered.
          socket.once('connect', () => (address = remoteAddressOf(socket) ?? address));
        });
      });
      stream.on('response', (response: { statusCode: number; headers: Record<string, string | string[] | undefined> }) => {
        status = response.statusCode;
        const retryAfter = response.headers['retry-after'];
        // The real clock, not `now`: an HTTP-date is on the receiver's wall clock, never a test's fake one.
        retryAfterMs = parseRetryAfter(Array.isArray(retryAfter) ? retryAfter[0] : retryAfter, Date.now());
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
}

/** Whether `address` is one of the target's checked addresses, compared as addresses, not text. */
function isCheckedAddress(target: CheckedTarget, address: string | null): boolean {
  const family = address === null ? 0 : isIP(address);
  if (family === 0) return false;
  // The same text is the same address: the answer for every reused socket, without building a
  // BlockList per request (about 8 µs each). Other spellings of one address are compared below.
  if (target.addresses.some((entry) => entry.address === address)) return true;
  const checked = new BlockList();
  for (const entry of target.addresses) checked.addAddress(entry.address, entry.family === 6 ? 'ipv6' : 'ipv4');
  return checked.check(address!, family === 6 ? 'ipv6' : 'ipv4');
}

function codeOf(error: unknown): string | undefined {
  const code = (error as { code?: unknown } | undefined)?.code;
  return typeof code === 'string' ? code : undefined;
}

/**
 * got's phase timings (`timings.phases`, from @szmarczak/http-timer), each present only once the
 * phase completed. `dns` is near 0: the lookup is the pinned answer of the URL guard, which already
 * resolved the host, and it is missing altogether for an IP-literal host (no lookup happens).
 * On a reused socket no lookup, connect or handshake happened: http-timer reports them as about
 * 0 ms, which would read as measured, so they are null.
 */
function phasesOf(timings: GotRequest['timings'], reusedSocket: boolean): AttemptTiming | undefined {
  if (!timings) return undefined;
  const ms = (value: number | undefined) => (value === undefined || reusedSocket ? null : Math.round(value));
  const { dns, tcp, tls, firstByte } = timings.phases;
  return { dns_ms: ms(dns), connect_ms: ms(tcp), tls_ms: ms(tls), first_byte_ms: firstByte === undefined ? null : Math.round(firstByte) };
}

function describe(error: unknown): string {
  const { code, message } = error as { code?: unknown; message?: unknown };
  const text = `${typeof code === 'string' ? `${code}: ` : ''}${typeof message === 'string' ? message : String(error)}`;
  return text.slice(0, 300);
}
