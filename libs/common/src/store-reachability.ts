import type { Redis } from 'ioredis';
import type { Logger } from './logger';
import { storeAnswers } from './redis';
import { sentinelPlacement } from './sentinel-connector';

/**
 * How long a service may be without its store before it says so in its log: longer than a
 * promotion takes (every service was back within seconds of the Sentinels' announcement in the
 * failover soak), so the line means something is wrong, not that a failover is under way.
 */
export const STORE_UNREACHABLE_LOG_AFTER_MS = 15_000;
const CHECK_EVERY_MS = 1_000;

/** What `/readyz` answers: ready or not, and when not, why (the connection's node and the Sentinels'). */
export interface Readiness {
  ready: boolean;
  /** `ready`, or what stops the service: `redis unreachable`, `draining`, `starting`. */
  status: string;
  redis?: {
    /** The node the service's connection is on or connecting to (Sentinels only). */
    connected_to?: string | null;
    /** The primary the Sentinels named last (Sentinels only). */
    sentinels_name?: string | null;
    /** Since when the store has not answered, in ms. */
    unreachable_ms: number;
  };
}

/**
 * Whether a service can reach its store, asked by `/readyz` and every second on its own. Behind
 * Sentinels, the service's connection must also be on the node the Sentinels name as primary: a
 * connection left on an old primary (alive after an operator's failover, or back from a partition)
 * answers, but what it writes is lost when that node becomes a replica. After
 * {@link STORE_UNREACHABLE_LOG_AFTER_MS} without it, one error line says which node the service is
 * on and which the Sentinels name; one line more when it is back.
 */
export class StoreReachability {
  private unreachableSince: number | undefined;
  private told = false;
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly redis: Redis,
    private readonly keyPrefix: string,
    private readonly logger: Logger,
    private readonly logAfterMs = STORE_UNREACHABLE_LOG_AFTER_MS,
  ) {}

  start(): void {
    this.timer ??= setInterval(() => void this.check().catch(() => undefined), CHECK_EVERY_MS).unref();
  }

  stop(): void {
    clearInterval(this.timer);
    this.timer = undefined;
  }

  async check(): Promise<Readiness> {
    const answers = await storeAnswers(this.redis, this.keyPrefix);
    const placement = sentinelPlacement(this.redis);
    const onNamed = !placement?.named || placement.connectedTo === placement.named;
    const now = Date.now();
    if (answers && onNamed) {
      if (this.told)
        this.logger.warn('redis reachable again', { unreachable_ms: now - this.unreachableSince!, ...(placement ? { primary: placement.named } : {}) });
      this.unreachableSince = undefined;
      this.told = false;
      return { ready: true, status: 'ready' };
    }
    this.unreachableSince ??= now;
    const redis: NonNullable<Readiness['redis']> = {
      ...(placement ? { connected_to: placement.connectedTo ?? null, sentinels_name: placement.named ?? null } : {}),
      unreachable_ms: now - this.unreachableSince,
    };
    if (!this.told && redis.unreachable_ms >= this.logAfterMs) {
      this.told = true;
      // connected_to and sentinels_name say which node the service is on and which it should be on.
      this.logger.error(placement ? 'redis primary unreachable: not on the primary the Sentinels name, or it does not answer' : 'redis unreachable', redis);
    }
    return { ready: false, status: 'redis unreachable', redis };
  }
}

/** Not ready yet: the service has not reached its store once, or its workers are not started. */
export const STARTING: Readiness = { ready: false, status: 'starting' };
/** Not ready any more: the service is finishing its work before it stops. */
export const DRAINING: Readiness = { ready: false, status: 'draining' };
