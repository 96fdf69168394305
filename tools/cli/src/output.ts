import type { DeliveryFrame, ResultFrame } from './protocol';

/**
 * Where the listener's lines go: `out` for what a developer reads while working (the ready line,
 * the secret, one line per delivery), `err` for the connection's troubles. One call, one line.
 */
export interface Output {
  out(line: string): void;
  err(line: string): void;
}

/** An {@link Output} onto two streams (the process's stdout and stderr). */
export function streamOutput(stdout: NodeJS.WritableStream, stderr: NodeJS.WritableStream): Output {
  return { out: (line) => void stdout.write(`${line}\n`), err: (line) => void stderr.write(`${line}\n`) };
}

/** Time, for the printed timestamps and the backoff's waits. */
export interface Clock {
  /** Milliseconds since the epoch. */
  now(): number;
  /** Runs `callback` after `ms`; the returned function cancels it. */
  setTimer(callback: () => void, ms: number): () => void;
}

export const systemClock: Clock = {
  now: () => Date.now(),
  setTimer: (callback, ms) => {
    const timer = setTimeout(callback, ms);
    return () => clearTimeout(timer);
  },
};

/** `2026-11-29T03:40:01.123Z  image.completed  msg_abc  200  14 ms`: when the delivery came, what, and how the handler answered. */
export function deliveryLine(receivedMs: number, delivery: Pick<DeliveryFrame, 'event_type' | 'webhook_id'>, result: ResultFrame, note?: string): string {
  const outcome = result.status !== null ? String(result.status) : (result.error ?? 'no answer');
  const line = [new Date(receivedMs).toISOString(), delivery.event_type, delivery.webhook_id, outcome, `${result.duration_ms} ms`].join('  ');
  return note ? `${line}  (${note})` : line;
}

/** `0.5 s`, `12 s`: a wait, for the reconnect lines. */
export function seconds(ms: number): string {
  return ms < 10_000 ? `${(ms / 1000).toFixed(1)} s` : `${Math.round(ms / 1000)} s`;
}
