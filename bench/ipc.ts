/**
 * The child side of the bench's helper processes (bench/receiver.ts, bench/bare-express.ts):
 * answers `{ rid, cmd, ... }` messages from bench/support.ts's HelperProcess. Kept free of heavy
 * imports so that a helper starts fast and loads nothing it does not use.
 */

/** Serves `{ rid, cmd }` messages in a helper child. */
export function serveHelper(handlers: Record<string, (msg: Record<string, unknown>) => unknown>): void {
  process.on('message', (msg: Record<string, unknown> & { rid: number; cmd: string }) => {
    void (async () => {
      try {
        const handler = handlers[msg.cmd];
        if (!handler) throw new Error(`unknown command ${msg.cmd}`);
        process.send!({ rid: msg.rid, result: (await handler(msg)) ?? null });
      } catch (err) {
        process.send!({ rid: msg.rid, error: err instanceof Error ? err.message : String(err) });
      }
    })();
  });
  // The parent going away ends the helper.
  process.on('disconnect', () => process.exit(0));
  // Stopped by the bench (SIGTERM): exit normally, so that a CPU profile (BENCH_CPU_PROF) is written.
  process.on('SIGTERM', () => process.exit(0));
}

/** One request the receiver saw. */
export interface Arrival {
  /** `webhook-id` */
  id: string;
  /** `data.id` of the envelope: the job. */
  jobId: string;
  /** The envelope's `timestamp`: the job's end (finished_ms). */
  eventMs: number;
  /** When Node emitted 'request' (the request head had arrived). */
  receivedMs: number;
  status: number;
}

export interface ReceiverStats {
  requests: number;
  connections: number;
  /** TLS connections whose session was resumed (no certificate signature). */
  resumedSessions: number;
  /** Requests to `/hang…` held open now. */
  hanging: number;
}
