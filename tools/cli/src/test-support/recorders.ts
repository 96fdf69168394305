import type { Clock, Output } from '../output';
import { eventually } from './eventually';

/** An {@link Output} that keeps its lines. */
export class Lines implements Output {
  readonly stdout: string[] = [];
  readonly stderr: string[] = [];
  /** Both streams, in the order written. */
  readonly all: string[] = [];

  out(line: string): void {
    this.stdout.push(line);
    this.all.push(line);
  }

  err(line: string): void {
    this.stderr.push(line);
    this.all.push(line);
  }

  /** The first line (of either stream) that matches, once one does. */
  async waitFor(pattern: RegExp, timeoutMs?: number): Promise<string> {
    return eventually(() => {
      const line = this.all.find((l) => pattern.test(l));
      if (line === undefined) throw new Error(`no line matches ${pattern}; lines so far:\n${this.all.join('\n')}`);
      return line;
    }, timeoutMs);
  }

  /** How many lines match. */
  count(pattern: RegExp): number {
    return this.all.filter((l) => pattern.test(l)).length;
  }
}

/**
 * A clock whose time runs `speed` times as fast as the real one: the listener asks for its
 * real delays (500 ms of backoff, 60 s of silence) and they pass in a fraction of that. Keeps
 * every delay asked for, so tests read the backoff's choices.
 */
export class FastClock implements Clock {
  readonly delays: number[] = [];
  private readonly startedReal = Date.now();

  constructor(private readonly speed: number) {}

  now(): number {
    return this.startedReal + (Date.now() - this.startedReal) * this.speed;
  }

  setTimer(callback: () => void, ms: number): () => void {
    this.delays.push(ms);
    const timer = setTimeout(callback, ms / this.speed);
    return () => clearTimeout(timer);
  }
}
