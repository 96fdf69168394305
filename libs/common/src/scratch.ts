import { mkdirSync, mkdtempSync } from 'node:fs';
import { readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * Where a process keeps its temporary files (uploads being received, a video's frames): a directory
 * of its own under the system's temp directory, named after the process (`<pid>-<random>`). A process
 * killed outright (SIGKILL, the OOM killer) removes nothing; the next one to start on the same disk
 * (in Kubernetes, the pod's emptyDir, which outlives its containers' restarts) finds what the dead
 * one left by its name and removes it ({@link sweepStaleScratch}).
 */
const ROOT = join(tmpdir(), 'media-scratch');
let own: string | undefined;

/** This process's scratch directory, made on first use. */
export function scratchDir(): string {
  if (own === undefined) {
    mkdirSync(ROOT, { recursive: true });
    own = mkdtempSync(join(ROOT, `${process.pid}-`));
  }
  return own;
}

/**
 * Removes the scratch directories of processes that are gone, and returns how many; run at start-up.
 * A directory named after this very pid is a dead process's too (a container's first process has
 * the same pid after every restart), unless it is this process's own.
 */
export async function sweepStaleScratch(): Promise<number> {
  const names = await readdir(ROOT).catch(() => [] as string[]);
  let removed = 0;
  for (const name of names) {
    const pid = Number(/^(\d+)-/.exec(name)?.[1]);
    const path = join(ROOT, name);
    if (!pid || path === own || (pid !== process.pid && alive(pid))) continue;
    await rm(path, { recursive: true, force: true });
    removed++;
  }
  return removed;
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    // EPERM: it exists, under another user.
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}
