import type { Logger } from './logger';

/**
 * Named places between two writes where a test may have a service killed, to prove that a crash at
 * that exact line loses and duplicates nothing. Off unless `FAULT_CRASH_POINTS` names them; never
 * set in production.
 */
export type CrashPoint =
  /** gateway: an edit's Idempotency-Key is claimed, its uploads and job are not stored */
  | 'intake.claimed'
  /** gateway: the job record is stored, its queue entry is not */
  | 'intake.stored'
  /** gateway: the job is queued, its intake mark is not cleared */
  | 'intake.queued'
  /** generator: the outputs are written, the job is not finished */
  | 'generation.rendered'
  /** generator: finished and charged, the job-finished event is not queued */
  | 'generation.finished'
  /** dispatcher: the callback record exists, attempt 1 is not queued */
  | 'callback.created'
  /** dispatcher: the receiver answered, the attempt is not recorded */
  | 'delivery.sent'
  /** dispatcher: the attempt is recorded, the next one is not scheduled */
  | 'delivery.recorded';

export const CRASH_POINTS: readonly CrashPoint[] = [
  'intake.claimed',
  'intake.stored',
  'intake.queued',
  'generation.rendered',
  'generation.finished',
  'callback.created',
  'delivery.sent',
  'delivery.recorded',
];

/** Kills the process at the configured crash points; `crash` comes from main (it owns the process). */
export class FaultInjector {
  private readonly points: ReadonlySet<string>;

  constructor(
    points: readonly CrashPoint[],
    private readonly crash: (point: CrashPoint) => void,
  ) {
    this.points = new Set(points);
  }

  static none(): FaultInjector {
    return new FaultInjector([], () => undefined);
  }

  /** The services' injector: logs the point, then dies as a SIGKILL would leave it (no drain, no exit handlers). */
  static killing(points: readonly CrashPoint[], logger: Logger): FaultInjector {
    return new FaultInjector(points, (point) => {
      logger.warn('crash point reached', { point });
      process.kill(process.pid, 'SIGKILL');
    });
  }

  at(point: CrashPoint): void {
    if (this.points.has(point)) this.crash(point);
  }
}
