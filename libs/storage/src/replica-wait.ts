import type { Redis } from 'ioredis';

/** How long what a primary said of its replicas is trusted before it is asked again. */
const REPLICAS_SEEN_FOR_MS = 1_000;

/**
 * Redis replicates asynchronously: a write the primary has acknowledged can still vanish with it in
 * a failover. With `REDIS_WAIT_REPLICAS` = N, the writes a client or a receiver is about to be told
 * of (a job's acceptance, a job's finish and charge) are held until N replicas have them (`WAIT`),
 * for at most `REDIS_WAIT_TIMEOUT_MS`. This narrows the window; it does not make Redis a consensus
 * store: a write that N replicas have not confirmed in time still goes ahead, counted by
 * `onShort`, because refusing it would leave the client told "no" of a job that runs and is charged.
 *
 * While the primary has fewer than N replicas in sync (just promoted, its replicas still copying
 * its data; a replica down), no wait could be confirmed: the write goes ahead at once, counted the
 * same way. `WAIT` blocks its whole connection, and the gateway's is shared by every request: each
 * acceptance waiting out its timeout there held every other command (readiness probes included)
 * behind it for seconds after each failover.
 *
 * `WAIT` counts the writes sent on its own connection, so it is sent on the connection that wrote.
 */
export class ReplicaWait {
  /**
   * What each connection's primary said (or is being asked) of its replicas in sync, and when;
   * forgotten when the connection is made again. The question is shared: the acceptances of one
   * moment send one INFO between them.
   */
  private readonly seen = new WeakMap<Redis, { inSync: Promise<number>; at: number }>();
  private readonly followed = new WeakSet<Redis>();

  constructor(
    readonly replicas: number,
    private readonly timeoutMs: number,
    private readonly onShort: (acknowledged: number) => void = () => undefined,
  ) {}

  /** Resolves once `replicas` replicas have every write sent so far on `redis`, or the timeout passed, or none could. */
  async after(redis: Redis): Promise<void> {
    if (this.replicas === 0) return;
    const inSync = await this.replicasInSync(redis);
    if (inSync < this.replicas) return this.onShort(inSync);
    const acknowledged = await redis.wait(this.replicas, this.timeoutMs);
    if (acknowledged < this.replicas) this.onShort(acknowledged);
  }

  /** Replicas whose link to the connection's primary is up (`state=online`), as the primary said at most a second ago. */
  private replicasInSync(redis: Redis): Promise<number> {
    const known = this.seen.get(redis);
    if (known && Date.now() - known.at < REPLICAS_SEEN_FOR_MS) return known.inSync;
    if (!this.followed.has(redis)) {
      this.followed.add(redis);
      redis.on('ready', () => this.seen.delete(redis));
    }
    // An INFO that fails counts as enough: WAIT then fails or times out as it would have.
    const inSync = redis.info('replication').then(
      (info) => (info.match(/^slave\d+:.*\bstate=online\b/gm) ?? []).length,
      () => this.replicas,
    );
    this.seen.set(redis, { inSync, at: Date.now() });
    return inSync;
  }
}

/** No waiting: the primary's acknowledgement is the answer (`REDIS_WAIT_REPLICAS=0`). */
export const NO_REPLICA_WAIT = new ReplicaWait(0, 0);
