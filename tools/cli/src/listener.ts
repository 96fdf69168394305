import { readFileSync } from 'node:fs';
import type { IncomingMessage } from 'node:http';
import type { Socket } from 'node:net';
import { join } from 'node:path';
import WebSocket, { type ClientOptions } from 'ws';
import { Backoff } from './backoff';
import { Forwarder } from './forwarder';
import { deliveryLine, seconds, systemClock, type Clock, type Output } from './output';
import { CLOSE_KEY_REVOKED, CLOSE_TOO_MANY_LISTENERS, type DeliveryFrame, type ReadyFrame } from './protocol';
import { openTunnel, overTunnel, proxyFor, redactProxy } from './proxy';
import { relayListenUrl, type ListenSettings } from './settings';

/** Makes the WebSocket to the gateway (tests wrap ws's to add a CA or watch the options). */
export type WebSocketFactory = (url: string, options: ClientOptions) => WebSocket;

/** The timings of the connection's life; the defaults suit a person's terminal. */
export interface ListenerTuning {
  /** The first reconnect's delay (before jitter); it doubles with each failure in a row. */
  initialBackoffMs: number;
  /** The longest delay between two attempts. */
  maxBackoffMs: number;
  /** A connection ready for this long was a good one: the backoff starts over after it. */
  stableAfterMs: number;
  /** No frame, ping or pong for this long: the connection is dead (the gateway pings well within it). */
  idleTimeoutMs: number;
  /** How long the opening handshake may take, the proxy's tunnel included. */
  handshakeTimeoutMs: number;
  /** How long a clean close may wait for the gateway's close frame. */
  closeTimeoutMs: number;
  /** The longest `Retry-After` obeyed. */
  maxRetryAfterMs: number;
}

export const DEFAULT_TUNING: ListenerTuning = {
  initialBackoffMs: 500,
  maxBackoffMs: 30_000,
  stableAfterMs: 30_000,
  idleTimeoutMs: 60_000,
  handshakeTimeoutMs: 15_000,
  closeTimeoutMs: 2_000,
  maxRetryAfterMs: 300_000,
};

/** What the listener talks through; each has a default for a real terminal. */
export interface ListenerDeps {
  output: Output;
  clock?: Clock;
  webSocket?: WebSocketFactory;
  forwarder?: Forwarder;
  /** [0, 1), for the backoff's jitter. */
  random?: () => number;
  tuning?: Partial<ListenerTuning>;
}

/** Exit statuses of {@link Listener.run}. */
export const EXIT_STOPPED = 0;
export const EXIT_REFUSED = 1;
export const EXIT_USAGE = 2;

/** How one connection ended. */
type Ending =
  /** The gateway answered the upgrade with an HTTP error. */
  | { kind: 'refused'; status: number; code: string | null; message: string; retryAfterMs: number | null; location: string | null }
  /** No connection: the network, TLS, the proxy, or the handshake's deadline. */
  | { kind: 'failed'; error: Error }
  /** An open connection closed; `readyMs` is how long it was ready (null: never). */
  | { kind: 'closed'; code: number; reason: string; readyMs: number | null; idle: boolean };

/** One connection's state, for the frames that arrive on it. */
interface Session {
  socket: WebSocket;
  readyAt: number | null;
  /** The ready frame's `timeout_ms`, for a delivery frame that does not carry its own. */
  timeoutMs: number;
}

const USER_AGENT = `media-callbacks/${packageVersion()} node/${process.versions.node}`;

/**
 * `media-callbacks listen`: one WebSocket to the gateway's relay, kept open (reconnecting with
 * backoff) until {@link stop}; every delivery on it is forwarded to the local handler and its
 * answer sent back as the attempt's record.
 */
export class Listener {
  private readonly output: Output;
  private readonly clock: Clock;
  private readonly webSocket: WebSocketFactory;
  private readonly forwarder: Forwarder;
  private readonly tuning: ListenerTuning;
  private readonly backoff: Backoff;
  /** Aborts the forwards in flight when the listener stops. */
  private readonly stopping = new AbortController();
  private session: Session | undefined;
  private wake: (() => void) | undefined;
  private running: Promise<number> | undefined;
  private everReady = false;
  private printedSecret: string | undefined;

  constructor(
    private readonly settings: ListenSettings,
    deps: ListenerDeps,
  ) {
    this.output = deps.output;
    this.clock = deps.clock ?? systemClock;
    this.webSocket = deps.webSocket ?? ((url, options) => new WebSocket(url, options));
    this.forwarder = deps.forwarder ?? new Forwarder(settings.forwardTo);
    this.tuning = { ...DEFAULT_TUNING, ...deps.tuning };
    this.backoff = new Backoff({ initialMs: this.tuning.initialBackoffMs, maxMs: this.tuning.maxBackoffMs, random: deps.random ?? Math.random });
  }

  /** Connects and keeps connected; resolves with the process's exit status (0 once {@link stop}ped). */
  run(): Promise<number> {
    this.running ??= this.loop();
    return this.running;
  }

  /** Closes the connection cleanly and ends {@link run} with 0; safe to call twice, and before `run`. */
  async stop(): Promise<void> {
    if (!this.stopping.signal.aborted) {
      this.stopping.abort();
      this.wake?.();
      const socket = this.session?.socket;
      if (socket?.readyState === WebSocket.OPEN) {
        socket.close(1000, 'listener stopped');
        const cancel = this.clock.setTimer(() => socket.terminate(), this.tuning.closeTimeoutMs);
        socket.once('close', cancel);
      } else {
        socket?.terminate();
      }
    }
    await this.running;
  }

  private get stopped(): boolean {
    return this.stopping.signal.aborted;
  }

  private async loop(): Promise<number> {
    const url = relayListenUrl(this.settings);
    let proxy: URL | undefined;
    try {
      proxy = proxyFor(url, this.settings.proxy);
    } catch (err) {
      this.output.err(`${(err as Error).message}.`);
      return EXIT_USAGE;
    }
    this.output.err(`Connecting to ${url.origin}${url.pathname}${proxy ? ` through the proxy ${redactProxy(proxy)}` : ''}…`);
    while (!this.stopped) {
      const ending = await this.connect(url, proxy);
      if (this.stopped) break;
      const next = this.afterEnding(ending);
      if (typeof next === 'number') return next;
      await this.sleep(next.delayMs);
    }
    return EXIT_STOPPED;
  }

  /** What to do after a connection ended: exit with a status, or wait and connect again (each prints its one line). */
  private afterEnding(ending: Ending): number | { delayMs: number } {
    const again = (what: string, atLeastMs = 0) => {
      const delayMs = Math.max(this.backoff.next(), Math.min(atLeastMs, this.tuning.maxRetryAfterMs));
      this.output.err(`${what}; ${ending.kind === 'closed' ? 'reconnecting' : 'retrying'} in ${seconds(delayMs)}.`);
      return { delayMs };
    };
    switch (ending.kind) {
      case 'refused': {
        const { status, code, message } = ending;
        const said = `${message} (${status}${code ? ` ${code}` : ''})`;
        if (status === 401 || status === 403) {
          this.output.err(`The gateway refused the API key: ${said}. Check MEDIA_API_KEY or --api-key.`);
          return EXIT_REFUSED;
        }
        if (status === 400) {
          this.output.err(`The gateway refused the request: ${said}.`);
          return EXIT_USAGE;
        }
        if (status === 429) return again(`Refused for now: ${said}`, ending.retryAfterMs ?? 0);
        if (status === 408 || status >= 500) return again(`The gateway is unavailable: ${said}`, ending.retryAfterMs ?? 0);
        if (status >= 300 && status < 400) {
          this.output.err(`The gateway redirected the connection to ${ending.location ?? 'another address'} (${status}); give that as --base-url.`);
          return EXIT_REFUSED;
        }
        this.output.err(`The gateway answered: ${said}. Is ${this.settings.baseUrl.origin} the API's address (--base-url, MEDIA_BASE_URL)?`);
        return EXIT_REFUSED;
      }
      case 'failed':
        return again(`Cannot connect to ${this.settings.baseUrl.origin}: ${describeError(ending.error)}`);
      case 'closed': {
        const { code, reason } = ending;
        const why = `${code}${reason ? `: ${reason}` : ''}`;
        if (code === CLOSE_KEY_REVOKED) {
          this.output.err(`The gateway closed the connection: the API key was revoked (${why}).`);
          return EXIT_REFUSED;
        }
        if (ending.readyMs !== null && ending.readyMs >= this.tuning.stableAfterMs) this.backoff.reset();
        if (ending.idle) return again(`No word from the gateway for ${seconds(this.tuning.idleTimeoutMs)}: the connection is dead`);
        if (code === CLOSE_TOO_MANY_LISTENERS) return again(`The workspace has its most listeners connected (${why})`);
        return again(`Disconnected (${why})`);
      }
    }
  }

  /** One connection, from the upgrade request (after the proxy's tunnel, if any) to its close. */
  private async connect(url: URL, proxy: URL | undefined): Promise<Ending> {
    let tunnel: Socket | undefined;
    if (proxy) {
      try {
        tunnel = await openTunnel(proxy, url, { timeoutMs: this.tuning.handshakeTimeoutMs, signal: this.stopping.signal });
      } catch (err) {
        return { kind: 'failed', error: err as Error };
      }
      if (this.stopped) {
        tunnel.destroy();
        return { kind: 'failed', error: new Error('stopped') };
      }
    }
    return new Promise<Ending>((resolve) => {
      let settled = false;
      let opened = false;
      let idle = false;
      let error: Error | undefined;
      let cancelWatchdog = () => {};
      const settle = (ending: Ending) => {
        if (settled) return;
        settled = true;
        cancelWatchdog();
        tunnel?.destroy();
        if (this.session === session) this.session = undefined;
        resolve(ending);
      };
      const socket = this.webSocket(url.href, {
        headers: { authorization: `Bearer ${this.settings.apiKey}`, 'user-agent': USER_AGENT },
        handshakeTimeout: this.tuning.handshakeTimeoutMs,
        followRedirects: false,
        // ws's type names net's function; ws calls it with its request options and takes the socket it returns.
        createConnection: tunnel ? (overTunnel(tunnel, url.protocol === 'wss:') as unknown as ClientOptions['createConnection']) : undefined,
      });
      const session: Session = { socket, readyAt: null, timeoutMs: DEFAULT_TIMEOUT_MS };
      this.session = session;
      // Anything from the gateway shows the connection is alive; silence past the limit means it is not.
      const alive = () => {
        cancelWatchdog();
        cancelWatchdog = this.clock.setTimer(() => {
          idle = true;
          socket.terminate();
        }, this.tuning.idleTimeoutMs);
      };

      socket.on('unexpected-response', (_request, response: IncomingMessage) => {
        void readRefusal(response, this.clock.now()).then((refusal) => {
          settle(refusal);
          socket.terminate();
        });
      });
      socket.on('open', () => {
        opened = true;
        alive();
      });
      socket.on('message', (data, isBinary) => {
        alive();
        if (!isBinary) this.onFrame(session, data.toString());
      });
      socket.on('ping', alive);
      socket.on('pong', alive);
      socket.on('error', (err) => (error ??= err));
      socket.on('close', (code, reason) => {
        if (opened) {
          const readyMs = session.readyAt === null ? null : this.clock.now() - session.readyAt;
          settle({ kind: 'closed', code, reason: reason.toString(), readyMs, idle });
        } else {
          settle({ kind: 'failed', error: error ?? new Error(`closed before the upgrade (${code})`) });
        }
      });
    });
  }

  private onFrame(session: Session, text: string): void {
    let frame: unknown;
    try {
      frame = JSON.parse(text);
    } catch {
      this.output.err('Ignored a frame from the gateway that is not JSON.');
      return;
    }
    if (typeof frame !== 'object' || frame === null) return;
    const { type } = frame as { type?: unknown };
    if (type === 'ready') this.onReady(session, frame as ReadyFrame);
    else if (type === 'delivery') this.onDelivery(session, frame as DeliveryFrame);
    // Any other type is from a newer gateway, for a newer CLI.
  }

  private onReady(session: Session, ready: ReadyFrame): void {
    session.readyAt = this.clock.now();
    session.timeoutMs = positive(ready.timeout_ms) ?? DEFAULT_TIMEOUT_MS;
    if (!this.everReady) {
      this.everReady = true;
      const events = Array.isArray(ready.events) && ready.events.length > 0 ? ` and ${ready.events.join(', ')} events` : '';
      this.output.out(`Ready. Callbacks to ${ready.relay_url}${events} of workspace ${ready.workspace_id} are forwarded to ${this.settings.forwardTo.href}.`);
    } else {
      this.output.err(`Reconnected; forwarding to ${this.settings.forwardTo.href} again.`);
    }
    if (!this.settings.printSecret) return;
    if (typeof ready.signing_secret === 'string' && ready.signing_secret !== '') {
      // Printed when it first comes and again when it has changed (the workspace rotated it).
      if (ready.signing_secret !== this.printedSecret) this.output.out(ready.signing_secret);
      this.printedSecret = ready.signing_secret;
    } else if (this.printedSecret === undefined) {
      this.output.err('The gateway sent no signing secret (--print-secret).');
      this.printedSecret = '';
    }
  }

  private onDelivery(session: Session, delivery: DeliveryFrame): void {
    const receivedAt = this.clock.now();
    if (typeof delivery.id !== 'string' || typeof delivery.body !== 'string' || typeof delivery.headers !== 'object' || delivery.headers === null) {
      this.output.err(`Ignored a delivery frame without id, headers or body${typeof delivery.id === 'string' ? ` (${delivery.id})` : ''}.`);
      return;
    }
    const timeoutMs = positive(delivery.timeout_ms) ?? session.timeoutMs;
    void this.forwarder.forward({ ...delivery, timeout_ms: timeoutMs }, this.stopping.signal).then((result) => {
      if (this.stopped) return;
      let note: string | undefined;
      if (session.socket.readyState === WebSocket.OPEN) session.socket.send(JSON.stringify(result));
      else note = 'not reported: the connection it came on has closed';
      this.output.out(deliveryLine(receivedAt, { event_type: String(delivery.event_type), webhook_id: String(delivery.webhook_id) }, result, note));
    });
  }

  private sleep(ms: number): Promise<void> {
    return new Promise<void>((resolve) => {
      const done = () => {
        cancel();
        this.wake = undefined;
        resolve();
      };
      const cancel = this.clock.setTimer(done, ms);
      this.wake = done;
    });
  }
}

/** The dispatcher's default (WEBHOOK_TIMEOUT_MS), for a delivery frame that does not say. */
const DEFAULT_TIMEOUT_MS = 15_000;

/** The gateway's refusal: its status, and the API's error (`{"error":{"message","code"}}`) when the body is one. */
async function readRefusal(response: IncomingMessage, nowMs: number): Promise<Ending & { kind: 'refused' }> {
  const chunks: Buffer[] = [];
  let size = 0;
  try {
    for await (const chunk of response as AsyncIterable<Buffer>) {
      chunks.push(chunk);
      size += chunk.length;
      if (size > 64 * 1024) break;
    }
  } catch {
    // A cut body leaves the status, which is what decides.
  }
  const status = response.statusCode ?? 0;
  const text = Buffer.concat(chunks).toString('utf8');
  let message = response.statusMessage || 'no message';
  let code: string | null = null;
  try {
    const body = JSON.parse(text) as { error?: { message?: unknown; code?: unknown } };
    if (typeof body.error?.message === 'string') message = body.error.message;
    if (typeof body.error?.code === 'string') code = body.error.code;
  } catch {
    if (text.trim() !== '' && text.length < 300) message = text.trim();
  }
  return {
    kind: 'refused',
    status,
    code,
    message,
    retryAfterMs: retryAfterMs(response.headers['retry-after'], nowMs),
    location: typeof response.headers.location === 'string' ? response.headers.location : null,
  };
}

/** `Retry-After` in seconds or as an HTTP date, in ms from now; null when absent or unreadable. */
function retryAfterMs(value: string | undefined, nowMs: number): number | null {
  if (value === undefined) return null;
  if (/^\d+$/.test(value.trim())) return Number(value.trim()) * 1000;
  const at = Date.parse(value);
  return Number.isNaN(at) ? null : Math.max(0, at - nowMs);
}

function describeError(err: Error): string {
  const code = (err as NodeJS.ErrnoException).code;
  // An AggregateError (every address of a name refused) has an empty message and the code.
  return err.message || code || err.name;
}

function positive(value: unknown): number | undefined {
  return typeof value === 'number' && Number.isFinite(value) && value > 0 ? value : undefined;
}

function packageVersion(): string {
  try {
    return (JSON.parse(readFileSync(join(__dirname, '..', 'package.json'), 'utf8')) as { version: string }).version;
  } catch {
    return 'unknown';
  }
}
