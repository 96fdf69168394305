import { readFileSync, renameSync, rmSync, writeFileSync, mkdirSync } from 'node:fs';
import { dirname } from 'node:path';

/** What `var/npm-start.pid` records about the launcher that wrote it. */
export interface RunningStack {
  pid: number;
  /** The repository it runs from. */
  root: string;
  /** Ports it holds, as far as they are known yet (`api`, `ops`, `receiver`). */
  ports: Record<string, number>;
  started_at: string;
}

/** Thrown by {@link StackPidFile.claim}: the message is the whole story, printed as it is. */
export class AnotherStackRunningError extends Error {
  override readonly name = 'AnotherStackRunningError';
  constructor(readonly running: Pick<RunningStack, 'pid' | 'root' | 'ports'>) {
    const ports = Object.entries(running.ports)
      .map(([name, port]) => `${name} ${port}`)
      .join(', ');
    super(
      `another npm start (pid ${running.pid}) is running from ${running.root}${ports ? ` (ports: ${ports})` : ''}; ` +
        `stop it with \`kill ${running.pid}\` (or Ctrl-C in its terminal), then run npm start again`,
    );
  }
}

/** True when `pid` is alive and, where /proc can tell, is an `npm start` launcher rather than a reused pid. */
export function isLauncher(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch (err) {
    // EPERM: alive, only not this user's to signal.
    if ((err as NodeJS.ErrnoException).code !== 'EPERM') return false;
  }
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes('local-stack');
  } catch {
    return true;
  }
}

/**
 * `var/npm-start.pid`: one launcher per state directory. A second `npm start` on the same one is
 * told which process holds it before it touches a port, rather than failing on the first port
 * with a hint to change that port. The file is removed on a clean stop; one left by a launcher
 * that was killed names a dead pid and is simply replaced.
 */
export class StackPidFile {
  #mine: RunningStack | undefined;

  constructor(
    readonly path: string,
    private readonly alive: (pid: number) => boolean = isLauncher,
  ) {}

  /** Records this process as the stack's launcher, unless another live launcher already is. */
  claim(root: string): void {
    const other = this.#read();
    if (other && other.pid !== process.pid && this.alive(other.pid)) throw new AnotherStackRunningError(other);
    this.#mine = { pid: process.pid, root, ports: {}, started_at: new Date().toISOString() };
    this.#write(this.#mine);
  }

  /** Adds the ports once they are known. */
  recordPorts(ports: Record<string, number>): void {
    if (!this.#mine) return;
    this.#mine = { ...this.#mine, ports: { ...this.#mine.ports, ...ports } };
    this.#write(this.#mine);
  }

  /** Removes the file if it is still this process's; safe to call twice, and synchronous for exit paths. */
  release(): void {
    if (!this.#mine) return;
    this.#mine = undefined;
    if (this.#read()?.pid === process.pid) rmSync(this.path, { force: true });
  }

  #read(): RunningStack | undefined {
    try {
      const parsed = JSON.parse(readFileSync(this.path, 'utf8')) as RunningStack;
      return Number.isInteger(parsed.pid) && parsed.pid > 0 ? parsed : undefined;
    } catch {
      // Missing, or torn by a crash mid-write (the write below is a rename, so only by hand).
      return undefined;
    }
  }

  #write(stack: RunningStack): void {
    mkdirSync(dirname(this.path), { recursive: true });
    const next = `${this.path}.${process.pid}.tmp`;
    writeFileSync(next, `${JSON.stringify(stack)}\n`);
    renameSync(next, this.path);
  }
}
