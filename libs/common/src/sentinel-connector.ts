import { Redis, SentinelConnector, type SentinelConnectionOptions } from 'ioredis';

type ErrorEmitter = Parameters<SentinelConnector['connect']>[0];
type NetStream = Awaited<ReturnType<SentinelConnector['connect']>>;

/** The channel on which every Sentinel announces a promotion: `<name> <old-ip> <old-port> <new-ip> <new-port>`. */
const SWITCH_MASTER = '+switch-master';
/**
 * How long the Sentinels are still listened to after a connection closed without a new lookup:
 * longer than ioredis's longest reconnect delay (2 s), so a client that reconnects keeps its
 * subscriptions, and one that ended lets go of them soon after.
 */
const WATCH_AFTER_CLOSE_MS = 10_000;

/** Told of every promotion the Sentinels announce for the monitored primary: the node now primary. */
export type PromotionListener = (primary: { host: string; port: number }) => void;

/** Client options this connector reads besides ioredis's own; ioredis passes them on to every duplicate. */
export interface FollowingSentinelOptions {
  onPromotion?: PromotionListener;
}

/**
 * ioredis's connector for a primary behind Sentinels, following the promotions they announce
 * (`+switch-master`) without ever ending its client.
 *
 * ioredis's own `failoverDetector` disconnects the connector when the announcement comes; if the
 * client was at that moment asking the Sentinels where the primary is (as every client is while it
 * reconnects after its primary died), the lookup in flight fails with "Connection is closed" and
 * ioredis marks the client ended: every command fails from then on, and nothing reconnects it. With a
 * dozen connections per stack, one of them was lost in about one failover in ten.
 *
 * Here an announcement closes the connection to any node but the one promoted, and makes a lookup in
 * flight look again (its answer may name the old primary). Given as the `Connector` option, it is
 * carried into every `duplicate()` (BullMQ's blocking connections included).
 */
export class FollowingSentinelConnector extends SentinelConnector {
  private looking = false;
  private promotedWhileLooking = false;
  private watchers: Redis[] = [];
  private unwatchTimer: NodeJS.Timeout | undefined;

  private readonly onPromotion: PromotionListener | undefined;

  /** ioredis passes a client's whole options (those of a Sentinel connection among them). */
  constructor(options: unknown) {
    super(options as SentinelConnectionOptions);
    this.onPromotion = (options as FollowingSentinelOptions).onPromotion;
  }

  override async connect(emit: ErrorEmitter): Promise<NetStream> {
    this.watch();
    for (;;) {
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
      if (!this.promotedWhileLooking) {
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
    this.unwatch();
    super.disconnect();
  }

  private promoted(host: string, port: number): void {
    if (this.looking) {
      this.promotedWhileLooking = true;
      return;
    }
    const stream = this.stream as NetStream | undefined;
    if (!stream || stream.destroyed) return;
    // Each Sentinel announces the same promotion, some seconds apart: a connection already made to
    // the promoted node stays. (Sentinels that announce host names make this a reconnect per
    // announcement; a stale answer from a Sentinel yet to hear of the promotion is left by its own.)
    if (stream.remotePort === port && stream.remoteAddress === host) return;
    stream.destroy();
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
      watcher.on('message', (_channel: string, message: string) => {
        const [master, , , host, port] = message.split(' ');
        if (master !== name || !host || !port) return;
        this.promoted(host, Number(port));
        try {
          this.onPromotion?.({ host, port: Number(port) });
        } catch {
          // Telling of the promotion must not stop its being followed.
        }
      });
      watcher.subscribe(SWITCH_MASTER).catch(() => undefined);
      this.watchers.push(watcher);
    }
  }

  private unwatch(): void {
    clearTimeout(this.unwatchTimer);
    for (const watcher of this.watchers) watcher.disconnect();
    this.watchers = [];
  }
}
