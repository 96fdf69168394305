import { Redis, SentinelConnector, type SentinelConnectionOptions } from 'ioredis';

type ErrorEmitter = Parameters<SentinelConnector['connect']>[0];
type NetStream = Awaited<ReturnType<SentinelConnector['connect']>>;
type Address = { host: string; port: number };
type Endpoint = { host?: string; port?: number };

/** The channel on which every Sentinel announces a promotion: `<name> <old-ip> <old-port> <new-ip> <new-port>`. */
const SWITCH_MASTER = '+switch-master';
/**
 * The leader of a failover has picked the replica to promote and is about to make it a primary:
 * `slave <ip>:<port> <ip> <port> @ <name> <primary-ip> <primary-port>`. Published before the
 * replica is told (Sentinel sends `REPLICAOF NO ONE` on its next tick).
 */
const SELECTED_REPLICA = '+selected-slave';
/** The picked replica now says it is a primary (same shape as {@link SELECTED_REPLICA}). */
const PROMOTED_REPLICA = '+promoted-slave';
/** A failover given up before any replica was promoted (`-failover-abort-not-elected`, `…-no-good-slave`, …). */
const FAILOVER_ABORTED = '-failover-abort-*';
/**
 * How long the Sentinels are still listened to after a connection closed without a new lookup:
 * longer than ioredis's longest reconnect delay (2 s), so a client that reconnects keeps its
 * subscriptions, and one that ended lets go of them soon after.
 */
const WATCH_AFTER_CLOSE_MS = 10_000;
/**
 * Longest wait, from a failover's start to its replica being promoted, for a connection held off
 * the old primary; and longest time the promoted replica is connected to directly without the
 * announcement. Past either, lookups go on as without a failover. Sentinel checks the replica every
 * second during a failover, so a promotion is seen in about one.
 */
const PROMOTION_HOLD_MS = 10_000;
/**
 * For this long after a promotion was announced, a Sentinel that still names another node is
 * taken to be one that has not heard of it yet (Sentinels learn of a promotion from each other,
 * every two seconds), and the next one is asked.
 */
const STALE_ANSWER_WINDOW_MS = 30_000;

/** Told of every promotion the Sentinels announce for the monitored primary: the node now primary. */
export type PromotionListener = (primary: { host: string; port: number }) => void;

/** Client options this connector reads besides ioredis's own; ioredis passes them on to every duplicate. */
export interface FollowingSentinelOptions {
  onPromotion?: PromotionListener;
}

/** Where a connection behind Sentinels is, and where the Sentinels say the primary is (`host:port`). */
export interface SentinelPlacement {
  /** The node this connection is on or connecting to, as the Sentinels named it; undefined before the first. */
  connectedTo: string | undefined;
  /** The primary the Sentinels named last: the latest promotion announced, or the latest lookup. */
  named: string | undefined;
}

const addressOf = ({ host, port }: Address) => `${host}:${port}`;

/**
 * ioredis's connector for a primary behind Sentinels, following the promotions they announce
 * without ever ending its client, and keeping its writes off a primary being replaced.
 *
 * - ioredis's own `failoverDetector` disconnects the connector when a promotion is announced; if
 *   the client was at that moment asking the Sentinels where the primary is (as every client is
 *   while it reconnects after its primary died), the lookup in flight fails with "Connection is
 *   closed" and ioredis marks the client ended: every command fails from then on. Here an
 *   announcement (`+switch-master`) closes the connection to any node but the one promoted, and
 *   makes a lookup in flight look again.
 * - Sentinels learn of a promotion from the one that made it, seconds later. Until then they name
 *   the old primary, which, when it is alive (an operator's failover, a partition that heals), still
 *   takes writes that the new primary will never have. A lookup answered with a node other than the
 *   one announced last (within {@link STALE_ANSWER_WINDOW_MS}) asks the next Sentinel instead.
 * - From the moment the failover's leader picks a replica (`+selected-slave`) until that replica is
 *   a primary (`+promoted-slave`), a connection to the old primary is closed and a new one waits:
 *   writes in that time would reach a primary that its replicas are leaving. Once promoted, the
 *   replica is connected to directly, before the other Sentinels name it.
 *
 * Given as the `Connector` option, it is carried into every `duplicate()` (BullMQ's blocking
 * connections included).
 */
export class FollowingSentinelConnector extends SentinelConnector {
  private looking = false;
  private promotedWhileLooking = false;
  private watchers: Redis[] = [];
  private unwatchTimer: NodeJS.Timeout | undefined;
  /** The latest promotion announced, and when it was heard. */
  private announced: { primary: string; at: number } | undefined;
  /** A failover under way: the primary being replaced, the replica picked, whether it is a primary yet. */
  private promoting: { from: string; to: Address; promoted: boolean; until: number } | undefined;
  /** Wakes a connection waiting for a promotion (see {@link awaitPromotion}). */
  private wake: (() => void) | undefined;
  /** The primary as the Sentinels named it last: the latest announcement or accepted answer. */
  private lastNamed: string | undefined;
  /** The node the latest lookup gave (a Sentinel's answer, or the replica just promoted). */
  private resolvedTo: string | undefined;
  private connectedTo: string | undefined;
  /** Set by {@link disconnect}: a connection waiting for a promotion gives up instead of coming back. */
  private closed = false;

  private readonly onPromotion: PromotionListener | undefined;

  /** ioredis passes a client's whole options (those of a Sentinel connection among them). */
  constructor(options: unknown) {
    super(options as SentinelConnectionOptions);
    this.onPromotion = (options as FollowingSentinelOptions).onPromotion;
    // ioredis asks each Sentinel through its own (private) resolve(), and goes on to the next
    // Sentinel when one answers nothing: the one place to refuse a stale answer, or to name the
    // replica just promoted without asking.
    const self = this as unknown as { resolve: (endpoint: Endpoint) => Promise<Address | null> };
    const resolve = self.resolve.bind(this);
    self.resolve = async (endpoint) => {
      const promoted = this.promotedReplica();
      if (promoted) {
        this.resolvedTo = addressOf(promoted);
        return { ...promoted };
      }
      const answer = await resolve(endpoint);
      if (!answer) return answer;
      const named = addressOf(answer);
      if (this.announced && this.announced.primary !== named && Date.now() - this.announced.at < STALE_ANSWER_WINDOW_MS) return null;
      this.lastNamed = named;
      this.resolvedTo = named;
      return answer;
    };
  }

  /** Where this connection is and where the Sentinels say the primary is; readiness compares the two. */
  placement(): SentinelPlacement {
    const promoted = this.promotedReplica();
    return { connectedTo: this.connectedTo, named: promoted ? addressOf(promoted) : this.lastNamed };
  }

  override async connect(emit: ErrorEmitter): Promise<NetStream> {
    this.closed = false;
    this.watch();
    for (;;) {
      await this.awaitPromotion();
      // As ioredis's own connector fails a connect its client closed meanwhile.
      if (this.closed) throw new Error('Connection is closed.');
      this.looking = true;
      this.promotedWhileLooking = false;
      let stream: NetStream;
      try {
        stream = await super.connect(emit);
      } catch (err) {
        // Closed by its client (or no Sentinel answers and retrying is off): the client ends.
        this.unwatch();
        throw err;
      } finally {
        this.looking = false;
      }
      // The next lookup starts at the Sentinel that answered this one (ioredis's detector did this
      // too), rather than going round them all and through any that is down.
      this.sentinelIterator.reset(true);
      if (!this.promotedWhileLooking && !this.unwanted(this.resolvedTo)) {
        this.connectedTo = this.resolvedTo;
        stream.once('close', () => {
          clearTimeout(this.unwatchTimer);
          this.unwatchTimer = setTimeout(() => this.unwatch(), WATCH_AFTER_CLOSE_MS).unref();
        });
        return stream;
      }
      stream.destroy();
    }
  }

  override disconnect(): void {
    this.closed = true;
    this.unwatch();
    this.wake?.();
    super.disconnect();
  }

  /** The replica a failover under way has promoted, until the announcement or the hold's end. */
  private promotedReplica(): Address | undefined {
    const promoting = this.promoting;
    return promoting?.promoted && Date.now() < promoting.until ? promoting.to : undefined;
  }

  /**
   * True for a lookup's node that a failover under way says not to stay on: the old primary while
   * its replica is not yet promoted, any other node once it is.
   */
  private unwanted(address: string | undefined): boolean {
    const promoting = this.promoting;
    if (!promoting || Date.now() >= promoting.until) return false;
    return promoting.promoted ? address !== addressOf(promoting.to) : address === promoting.from;
  }

  /** Resolves once no failover is between picking a replica and promoting it (or the hold ran out, or the client closed). */
  private async awaitPromotion(): Promise<void> {
    while (!this.closed && this.promoting && !this.promoting.promoted && Date.now() < this.promoting.until) {
      await new Promise<void>((resolve) => {
        // Never what keeps a process alive: a client that stops waits for nothing.
        const timer = setTimeout(resolve, this.promoting!.until - Date.now()).unref();
        this.wake = () => {
          clearTimeout(timer);
          resolve();
        };
      });
      this.wake = undefined;
    }
  }

  /** Closes this connection (ioredis makes it again) unless `stays` says the node it is on may keep it. */
  private leave(stays: (connectedTo: string) => boolean): void {
    const stream = this.stream as NetStream | undefined;
    if (!stream || stream.destroyed || this.looking) return;
    if (this.connectedTo !== undefined && stays(this.connectedTo)) return;
    stream.destroy();
  }

  private switched(host: string, port: number): void {
    const primary = addressOf({ host, port });
    this.announced = { primary, at: Date.now() };
    this.lastNamed = primary;
    this.promoting = undefined;
    this.wake?.();
    if (this.looking) {
      this.promotedWhileLooking = true;
      return;
    }
    // Each Sentinel announces the same promotion, some seconds apart: a connection already made to
    // the promoted node stays.
    this.leave((connectedTo) => connectedTo === primary);
  }

  private failoverStep(channel: string, message: string): void {
    // `slave <ip>:<port> <ip> <port> @ <name> <primary-ip> <primary-port>`
    const [, , host, port, , master, fromHost, fromPort] = message.split(' ');
    if (master !== this.options.name || !host || !port) return;
    if (channel === SELECTED_REPLICA) {
      const from = addressOf({ host: fromHost ?? '', port: Number(fromPort) });
      this.promoting = { from, to: { host, port: Number(port) }, promoted: false, until: Date.now() + PROMOTION_HOLD_MS };
      this.leave((connectedTo) => connectedTo !== from);
    } else if (channel === PROMOTED_REPLICA && this.promoting && addressOf(this.promoting.to) === addressOf({ host, port: Number(port) })) {
      // Connected to it directly until the announcement, which comes once the other replicas follow.
      this.promoting.promoted = true;
      this.promoting.until = Date.now() + PROMOTION_HOLD_MS;
      this.wake?.();
      // A lookup in flight may have been answered with the old primary: it looks again.
      if (this.looking) this.promotedWhileLooking = true;
      const to = addressOf(this.promoting.to);
      this.leave((connectedTo) => connectedTo === to);
    }
  }

  private aborted(message: string): void {
    // `master <name> <ip> <port>`
    if (message.split(' ')[1] !== this.options.name) return;
    this.promoting = undefined;
    this.wake?.();
  }

  private watch(): void {
    clearTimeout(this.unwatchTimer);
    if (this.watchers.length > 0) return;
    const { sentinels = [], name, sentinelUsername, sentinelPassword, sentinelTLS } = this.options;
    for (const sentinel of sentinels) {
      const watcher = new Redis({
        host: sentinel.host,
        port: sentinel.port,
        username: sentinelUsername,
        password: sentinelPassword,
        tls: sentinelTLS,
        enableReadyCheck: false,
        maxRetriesPerRequest: null,
        retryStrategy: (times) => Math.min(times * 200, 2_000),
      });
      // A Sentinel that is down is one of several; the lookup reports what matters.
      watcher.on('error', () => undefined);
      // The subscription never keeps a process alive on its own.
      watcher.on('connect', () => watcher.stream.unref());
      watcher.on('message', (channel: string, message: string) => {
        if (channel !== SWITCH_MASTER) return this.failoverStep(channel, message);
        const [master, , , host, port] = message.split(' ');
        if (master !== name || !host || !port) return;
        this.switched(host, Number(port));
        try {
          this.onPromotion?.({ host, port: Number(port) });
        } catch {
          // Telling of the promotion must not stop its being followed.
        }
      });
      watcher.on('pmessage', (_pattern: string, _channel: string, message: string) => this.aborted(message));
      watcher.subscribe(SWITCH_MASTER, SELECTED_REPLICA, PROMOTED_REPLICA).catch(() => undefined);
      watcher.psubscribe(FAILOVER_ABORTED).catch(() => undefined);
      this.watchers.push(watcher);
    }
  }

  private unwatch(): void {
    clearTimeout(this.unwatchTimer);
    for (const watcher of this.watchers) watcher.disconnect();
    this.watchers = [];
  }
}

/** The placement of a connection made through {@link FollowingSentinelConnector}; undefined for any other. */
export function sentinelPlacement(redis: Redis): SentinelPlacement | undefined {
  const connector = (redis as unknown as { connector?: unknown }).connector;
  return connector instanceof FollowingSentinelConnector ? connector.placement() : undefined;
}
