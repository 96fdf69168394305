import { randomBytes, timingSafeEqual } from 'node:crypto';
import type { Redis } from 'ioredis';
import type { Logger } from '@media/common';
import { newId, type EventType } from '@media/domain';
import type { StoreKeys } from '@media/storage';
import type { Exchange } from './exchange';
import { CallbackKeys } from './keys';
import { storeScript } from './lua';
import { CLOSE_KEY_REVOKED, RELAY_PATH_PREFIX, type DeliveryFrame, type ResultFrame } from './relay-protocol';

/** Most listeners one workspace may have connected at once. */
export const MAX_RELAY_LISTENERS = 5;
/** How often a gateway refreshes its listeners in the directory and checks their keys. */
export const RELAY_REFRESH_MS = 5_000;
/** A listener not refreshed for this long is taken for gone (its gateway died). */
export const RELAY_LISTENER_STALE_MS = 4 * RELAY_REFRESH_MS;
/** How long a dispatcher waits for the listener's gateway to take a delivery before calling the relay offline. */
export const RELAY_ACCEPT_MS = 2_000;

const ADD_LISTENER = storeScript('relay-listener-add');
const TOUCH_LISTENERS = storeScript('relay-listener-touch');

/** A relay URL's token: 32 random characters after its prefix. */
const TOKEN = /^rly_[0-9a-z]{32}$/;

/** One connected `media-callbacks listen`, as the directory keeps it. */
export interface RelayListenerRecord {
  /** `rls_…`: one connection. */
  session_id: string;
  workspace_id: string;
  /** The id of the API key it connected with (never the key). */
  key_id: string;
  /** The event types it receives without a `callback_url`, as a temporary endpoint. */
  events: EventType[];
  since_ms: number;
  /** When its gateway last said it was still connected. */
  seen_ms: number;
  /** The gateway process holding its connection: where its deliveries are published. */
  gateway_id: string;
}

/**
 * The relay's directory in Redis: each workspace's relay token (the secret part of its relay URL,
 * `https://<PUBLIC_BASE_URL host>/webhook-relay/rly_…`) and its connected listeners. The token is
 * made at the workspace's first listener and kept, so a URL given as a job's `callback_url` still
 * reaches the developer after they reconnect.
 */
export class RelayDirectory {
  private readonly callbackKeys: CallbackKeys;
  private readonly origin: string;

  constructor(
    private readonly redis: Redis,
    keys: StoreKeys,
    /** PUBLIC_BASE_URL: relay URLs are on the gateway's public address. */
    publicBaseUrl: string,
  ) {
    this.callbackKeys = new CallbackKeys(keys);
    this.origin = new URL(publicBaseUrl).origin;
  }

  /** The workspace's relay URL, making its token if it has none yet. */
  async relayUrl(workspaceId: string): Promise<string> {
    const key = this.callbackKeys.workspaceRelayToken(workspaceId);
    await this.redis.set(key, `rly_${randomToken()}`, 'NX');
    return this.urlOf((await this.redis.get(key))!);
  }

  /** The workspace's relay URL if it has one (it had a listener once). */
  async existingRelayUrl(workspaceId: string): Promise<string | undefined> {
    const token = await this.redis.get(this.callbackKeys.workspaceRelayToken(workspaceId));
    return token ? this.urlOf(token) : undefined;
  }

  /** The token of a relay URL of this service, or undefined for any other URL. */
  tokenOf(url: string): string | undefined {
    let parsed: URL;
    try {
      parsed = new URL(url);
    } catch {
      return undefined;
    }
    if (parsed.origin !== this.origin || !parsed.pathname.startsWith(RELAY_PATH_PREFIX)) return undefined;
    const token = parsed.pathname.slice(RELAY_PATH_PREFIX.length);
    return TOKEN.test(token) && parsed.search === '' ? token : '';
  }

  /** Whether `url` is a relay URL of this service at all (the workspace it belongs to aside). */
  isRelayUrl(url: string): boolean {
    return this.tokenOf(url) !== undefined;
  }

  /** Whether `url` is this workspace's own relay URL (compared in constant time: the token is a secret). */
  async ownsRelayUrl(workspaceId: string, url: string): Promise<boolean> {
    const token = this.tokenOf(url);
    if (!token) return false;
    const own = await this.redis.get(this.callbackKeys.workspaceRelayToken(workspaceId));
    return own !== null && own.length === token.length && timingSafeEqual(Buffer.from(own), Buffer.from(token));
  }

  /** Registers a listener; false when its workspace has its most connected already. */
  async addListener(record: RelayListenerRecord, max = MAX_RELAY_LISTENERS): Promise<boolean> {
    const added = await ADD_LISTENER.run(
      this.redis,
      [this.callbackKeys.workspaceRelayListeners(record.workspace_id)],
      [record.session_id, JSON.stringify(record), max, record.seen_ms, RELAY_LISTENER_STALE_MS],
    );
    return added === 1;
  }

  /** Marks a workspace's listeners as still connected. */
  async touch(workspaceId: string, sessionIds: string[], nowMs: number): Promise<void> {
    if (sessionIds.length === 0) return;
    await TOUCH_LISTENERS.run(this.redis, [this.callbackKeys.workspaceRelayListeners(workspaceId)], [nowMs, ...sessionIds]);
  }

  async removeListener(workspaceId: string, sessionId: string): Promise<void> {
    await this.redis.hdel(this.callbackKeys.workspaceRelayListeners(workspaceId), sessionId);
  }

  /** The workspace's listeners still connected, oldest first. */
  async listeners(workspaceId: string, nowMs = Date.now()): Promise<RelayListenerRecord[]> {
    const raw = await this.redis.hvals(this.callbackKeys.workspaceRelayListeners(workspaceId));
    return raw
      .map((r) => JSON.parse(r) as RelayListenerRecord)
      .filter((l) => nowMs - l.seen_ms <= RELAY_LISTENER_STALE_MS)
      .sort((a, b) => a.since_ms - b.since_ms);
  }

  private urlOf(token: string): string {
    return `${this.origin}${RELAY_PATH_PREFIX}${token}`;
  }
}

const ALPHABET = '0123456789abcdefghijklmnopqrstuvwxyz';

/** 32 characters of a 36-letter alphabet from the CSPRNG: about 165 bits, never guessed. */
function randomToken(): string {
  const bytes = randomBytes(32);
  let out = '';
  for (const byte of bytes) out += ALPHABET[byte % ALPHABET.length];
  return out;
}

/**
 * One Pub/Sub channel, on a connection of its own (a subscribed connection takes no other command)
 * made at its first use, so a process that never relays holds none.
 */
class ChannelSubscription {
  private subscriber: Redis | undefined;
  private subscribed: Promise<void> | undefined;

  constructor(
    private readonly connect: () => Redis,
    private readonly channel: string,
    private readonly onMessage: (message: string) => void,
  ) {}

  /** Subscribes once; later calls wait for the same subscription. */
  start(): Promise<void> {
    this.subscribed ??= (async () => {
      const subscriber = (this.subscriber = this.connect());
      subscriber.on('message', (from: string, message: string) => {
        if (from === this.channel) this.onMessage(message);
      });
      await subscriber.subscribe(this.channel);
    })();
    return this.subscribed;
  }

  async close(): Promise<void> {
    const subscriber = this.subscriber;
    if (subscriber) await subscriber.quit().catch(() => subscriber.disconnect());
  }
}

/** A delivery on its way from a dispatcher to the gateway holding the listener. */
interface RelayRequest {
  id: string;
  session_id: string;
  reply_to: string;
  frame: DeliveryFrame;
}

/** What the gateway says back: it took the delivery, or what came of it. */
type RelayReply = { id: string; kind: 'accepted' } | { id: string; kind: 'offline'; detail: string } | { id: string; kind: 'result'; result: ResultFrame };

/**
 * The dispatcher's side of the relay: a callback to a relay URL is not sent over the network by the
 * dispatcher at all. It is published to the gateway holding one of the workspace's listeners, which
 * passes it down the listener's WebSocket; the developer's machine POSTs it to their handler and the
 * answer comes back the same way. Its outcome is an {@link Exchange} like any other attempt's.
 */
export class RelaySender {
  private readonly callbackKeys: CallbackKeys;
  private readonly replyChannel: string;
  private readonly pending = new Map<string, (reply: RelayReply) => void>();
  private readonly replies: ChannelSubscription;

  constructor(
    private readonly deps: {
      redis: Redis;
      /** Makes a connection of its own for the reply channel, at the first relayed attempt. */
      subscriber: () => Redis;
      keys: StoreKeys;
      directory: RelayDirectory;
      logger: Logger;
      now?: () => number;
    },
  ) {
    this.callbackKeys = new CallbackKeys(deps.keys);
    this.replyChannel = this.callbackKeys.relayReplyChannel(newId('dsp'));
    this.replies = new ChannelSubscription(deps.subscriber, this.replyChannel, (message) => {
      try {
        const reply = JSON.parse(message) as RelayReply;
        this.pending.get(reply.id)?.(reply);
      } catch (err) {
        this.deps.logger.warn('relay reply unreadable', { error: String(err) });
      }
    });
  }

  /** Whether the URL is a relay URL: such a callback goes through {@link send}, never over the network. */
  handles(url: string): boolean {
    return this.deps.directory.isRelayUrl(url);
  }

  /** One attempt through a listener of the workspace: its answer, `relay_offline` when none took it, `timeout` past `timeoutMs`. */
  async send(workspaceId: string, url: string, frame: Omit<DeliveryFrame, 'type' | 'id' | 'timeout_ms'>, timeoutMs: number): Promise<Exchange> {
    const now = this.deps.now ?? Date.now;
    const sentMs = now();
    const failed = (error: 'relay_offline' | 'timeout', detail: string): Exchange => ({
      sentMs,
      durationMs: now() - sentMs,
      status: null,
      transportError: error,
      transportDetail: detail,
      address: null,
      excerpt: '',
      retryAfterMs: null,
    });
    const [owned, listeners] = await Promise.all([this.deps.directory.ownsRelayUrl(workspaceId, url), this.deps.directory.listeners(workspaceId, sentMs)]);
    if (!owned) return failed('relay_offline', 'not a relay URL of this workspace');
    if (listeners.length === 0) return failed('relay_offline', 'no media-callbacks listener is connected');
    await this.replies.start();
    // The newest: a developer who restarted the CLI has the old one's entry go stale meanwhile.
    const listener = listeners.at(-1)!;
    const request: RelayRequest = {
      id: newId('rdl'),
      session_id: listener.session_id,
      reply_to: this.replyChannel,
      frame: { type: 'delivery', id: '', ...frame, timeout_ms: timeoutMs },
    };
    request.frame.id = request.id;
    const replies: RelayReply[] = [];
    let wake: (() => void) | undefined;
    this.pending.set(request.id, (reply) => {
      replies.push(reply);
      wake?.();
    });
    const next = (deadlineMs: number) =>
      new Promise<RelayReply | undefined>((resolve) => {
        const ready = replies.shift();
        if (ready) return resolve(ready);
        const timer = setTimeout(() => resolve(undefined), Math.max(0, deadlineMs - now()));
        wake = () => {
          clearTimeout(timer);
          wake = undefined;
          resolve(replies.shift());
        };
      });
    try {
      await this.deps.redis.publish(this.callbackKeys.relayGatewayChannel(listener.gateway_id), JSON.stringify(request));
      const first = await next(sentMs + Math.min(RELAY_ACCEPT_MS, timeoutMs));
      if (!first) return failed('relay_offline', "the listener's gateway did not take the delivery");
      if (first.kind === 'offline') return failed('relay_offline', first.detail);
      const last = first.kind === 'result' ? first : await next(sentMs + timeoutMs);
      if (!last) return failed('timeout', `no answer from the local handler within ${timeoutMs} ms`);
      if (last.kind === 'offline') return failed('relay_offline', last.detail);
      if (last.kind !== 'result') return failed('relay_offline', 'the relay answered out of order');
      const result = last.result;
      return {
        sentMs,
        durationMs: Math.min(now() - sentMs, timeoutMs),
        status: result.status,
        transportError: result.error,
        transportDetail: result.error_detail,
        address: null,
        excerpt: result.excerpt,
        timing: result.timing,
        retryAfterMs: null,
      };
    } finally {
      this.pending.delete(request.id);
    }
  }

  close(): Promise<void> {
    return this.replies.close();
  }
}

/** A listener's connection as the hub sees it; the gateway's WebSocket code makes one per CLI. */
export interface RelaySession {
  readonly record: RelayListenerRecord;
  /** The API key it connected with, held in memory only, to check that it still authenticates. */
  readonly apiKey: string;
  send(frame: DeliveryFrame): void;
  /** Ends the connection with a WebSocket close code. */
  close(code: number, reason: string): void;
}

/**
 * The gateway's side of the relay: the listeners connected to this process, the deliveries
 * dispatchers publish for them (on this gateway's own channel), and their answers, published back
 * to the dispatcher waiting on each. It refreshes its listeners in the directory and checks their
 * keys every {@link RELAY_REFRESH_MS}: a revoked key ends its sessions.
 */
export class RelayHub {
  readonly gatewayId = newId('gw');
  private readonly callbackKeys: CallbackKeys;
  private readonly sessions = new Map<string, RelaySession>();
  /** Deliveries passed to a listener and not yet answered: where the answer goes. */
  private readonly inFlight = new Map<string, { replyTo: string; sessionId: string; timer: NodeJS.Timeout }>();
  private readonly deliveries: ChannelSubscription;
  private started: Promise<void> | undefined;
  private refresher: NodeJS.Timeout | undefined;

  constructor(
    private readonly deps: {
      redis: Redis;
      /** Makes a connection of its own for this gateway's channel, at the first listener. */
      subscriber: () => Redis;
      keys: StoreKeys;
      directory: RelayDirectory;
      logger: Logger;
      /** Whether the API key a listener connected with still authenticates it. */
      keyStillValid: (session: RelaySession) => Promise<boolean>;
      /** WEBHOOK_TIMEOUT_MS: after it an unanswered delivery is forgotten (the dispatcher has given up). */
      timeoutMs: number;
      refreshMs?: number;
      now?: () => number;
    },
  ) {
    this.callbackKeys = new CallbackKeys(deps.keys);
    this.deliveries = new ChannelSubscription(
      deps.subscriber,
      this.callbackKeys.relayGatewayChannel(this.gatewayId),
      (message) => void this.onDelivery(message),
    );
  }

  /** Takes a connected listener; false (and nothing registered) when its workspace has its most. */
  async register(session: RelaySession): Promise<boolean> {
    await this.start();
    if (!(await this.deps.directory.addListener(session.record))) return false;
    this.sessions.set(session.record.session_id, session);
    return true;
  }

  /** A listener's connection closed: it takes no more deliveries, and those it had fail at once as offline. */
  async unregister(sessionId: string): Promise<void> {
    const session = this.sessions.get(sessionId);
    if (!session) return;
    this.sessions.delete(sessionId);
    for (const [id, flight] of this.inFlight) {
      if (flight.sessionId === sessionId) await this.reply(id, { id, kind: 'offline', detail: 'the listener disconnected before its handler answered' });
    }
    await this.deps.directory.removeListener(session.record.workspace_id, sessionId).catch((err: unknown) => {
      this.deps.logger.warn('relay listener not removed; it lapses by itself', { session_id: sessionId, error: String(err) });
    });
  }

  /** A result frame from a listener: passed to the dispatcher waiting on it. */
  async onResult(sessionId: string, result: ResultFrame): Promise<void> {
    const flight = this.inFlight.get(result.id);
    // Another listener's delivery, or one answered too late: the dispatcher has moved on.
    if (!flight || flight.sessionId !== sessionId) return;
    await this.reply(result.id, { id: result.id, kind: 'result', result });
  }

  /** How many listeners this gateway holds. */
  get size(): number {
    return this.sessions.size;
  }

  /** Ends every connection (the CLIs reconnect, through the load balancer, to another gateway). */
  async close(): Promise<void> {
    if (this.refresher) clearInterval(this.refresher);
    for (const session of [...this.sessions.values()]) {
      session.close(1001, 'gateway shutting down');
      await this.unregister(session.record.session_id);
    }
    await this.deliveries.close();
  }

  private start(): Promise<void> {
    this.started ??= (async () => {
      await this.deliveries.start();
      this.refresher = setInterval(() => void this.refresh(), this.deps.refreshMs ?? RELAY_REFRESH_MS);
      this.refresher.unref();
    })();
    return this.started;
  }

  private async onDelivery(message: string): Promise<void> {
    let request: RelayRequest;
    try {
      request = JSON.parse(message) as RelayRequest;
    } catch {
      return;
    }
    const session = this.sessions.get(request.session_id);
    if (!session) {
      await this.reply(request.id, { id: request.id, kind: 'offline', detail: 'the listener disconnected' }, request.reply_to);
      return;
    }
    // Forgotten a little after the dispatcher stops waiting, answered or not.
    const timer = setTimeout(() => this.inFlight.delete(request.id), this.deps.timeoutMs + RELAY_ACCEPT_MS);
    timer.unref();
    this.inFlight.set(request.id, { replyTo: request.reply_to, sessionId: request.session_id, timer });
    await this.reply(request.id, { id: request.id, kind: 'accepted' }, request.reply_to, false);
    session.send(request.frame);
  }

  private async reply(id: string, reply: RelayReply, replyTo?: string, last = true): Promise<void> {
    const flight = this.inFlight.get(id);
    const to = replyTo ?? flight?.replyTo;
    if (last && flight) {
      clearTimeout(flight.timer);
      this.inFlight.delete(id);
    }
    if (!to) return;
    await this.deps.redis.publish(to, JSON.stringify(reply)).catch((err: unknown) => {
      this.deps.logger.warn('relay reply not sent; the dispatcher records a timeout', { error: String(err) });
    });
  }

  private async refresh(): Promise<void> {
    const now = (this.deps.now ?? Date.now)();
    const byWorkspace = new Map<string, string[]>();
    for (const session of this.sessions.values()) {
      const ids = byWorkspace.get(session.record.workspace_id) ?? [];
      ids.push(session.record.session_id);
      byWorkspace.set(session.record.workspace_id, ids);
    }
    await Promise.all(
      [...byWorkspace].map(([workspaceId, ids]) =>
        this.deps.directory.touch(workspaceId, ids, now).catch((err: unknown) => {
          this.deps.logger.warn('relay listeners not refreshed', { workspace_id: workspaceId, error: String(err) });
        }),
      ),
    );
    for (const session of [...this.sessions.values()]) {
      const valid = await this.deps.keyStillValid(session).catch(() => true);
      if (valid) continue;
      session.close(CLOSE_KEY_REVOKED, 'the API key was revoked');
      await this.unregister(session.record.session_id);
    }
  }
}
