import type { Redis } from 'ioredis';

/**
 * Redis replicates asynchronously: a write the primary has acknowledged can still vanish with it in
 * a failover. With `REDIS_WAIT_REPLICAS` = N, the writes a client or a receiver is about to be told
 * of (a job's acceptance, a job's finish and charge) are held until N replicas have them (`WAIT`),
 * for at most `REDIS_WAIT_TIMEOUT_MS`. This narrows the window; it does not make Redis a consensus
 * store: a write that N replicas have not confirmed in time still goes ahead, counted by
 * `onShort`, because refusing it would leave the client told "no" of a job that runs and is charged.
 *
 * `WAIT` counts the writes sent on its own connection, so it is sent on the connection that wrote.
 */
export class ReplicaWait {
  constructor(
    readonly replicas: number,
    private readonly timeoutMs: number,
    private readonly onShort: (acknowledged: number) => void = () => undefined,
  ) {}

  /** Resolves once `replicas` replicas have every write sent so far on `redis`, or the timeout passed. */
  async after(redis: Redis): Promise<void> {
    if (this.replicas === 0) return;
    const acknowledged = await redis.wait(this.replicas, this.timeoutMs);
    if (acknowledged < this.replicas) this.onShort(acknowledged);
  }
}

/** No waiting: the primary's acknowledgement is the answer (`REDIS_WAIT_REPLICAS=0`). */
export const NO_REPLICA_WAIT = new ReplicaWait(0, 0);
