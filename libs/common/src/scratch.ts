import { mkdirSync } from 'node:fs';
import { readdir, rm } from 'node:fs/promises';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { assertWritableDirectory } from './writable';

/**
 * Where a process keeps its temporary files (uploads being received, a video's frames): a directory
 * of its own under the system's temp directory, named after the host and the process
 * (`<host>-<pid>-<random>`). A process killed outright (SIGKILL, the OOM killer) removes nothing;
 * the next one to start on the same disk and host (in Kubernetes, the pod's emptyDir, which outlives
 * its containers' restarts; a restarted container keeps its pod's host name) finds what the dead one
 * left by its name and removes it ({@link sweepStaleScratch}). Directories of other hosts are never
 * touched: their pids mean nothing here (two containers sharing a /tmp are both pid 1).
 */
export const SCRATCH_ROOT = join(tmpdir(), 'media-scratch');
const HOST = hostname().replace(/[^A-Za-z0-9.]/g, '_');
const own = join(SCRATCH_ROOT, `${HOST}-${process.pid}-${randomBytes(4).toString('hex')}`);

/** This process's scratch directory; made again if something (a tmp cleaner) removed it. */
export function scratchDir(): string {
  mkdirSync(own, { recursive: true });
  return own;
}

/**
 * Fails at start-up, with {@link UnwritableDirectoryError}, when this process cannot make and write
 * its scratch directory (a read-only or missing temp directory): otherwise the service reports ready
 * and fails the first upload or video that needs it.
 */
export async function checkScratchDir(): Promise<void> {
  await assertWritableDirectory(
    own,
    'the scratch directory',
    `the OS temp directory (TMPDIR, else /tmp) must be writable by this process; in a container with a read-only root, mount a writable volume at /tmp`,
  );
}

/**
 * Removes this process's scratch directory and everything in it; for the end of a clean shutdown,
 * once the work that wrote there has finished or been abandoned. A process that stops cleanly
 * leaves nothing for the next start's {@link sweepStaleScratch}, which is for processes that were killed.
 */
export async function removeScratchDir(): Promise<void> {
  // A few retries: an encoder stopped a moment ago may still be closing a file in there.
  await rm(own, { recursive: true, force: true, maxRetries: 3 });
}

/**
 * Removes the scratch directories that processes of this host left when they died, and returns how
 * many; run at start-up. One named after this very pid is a dead process's too (a container's first
 * process has the same pid after every restart), unless it is this process's own.
 */
export async function sweepStaleScratch(root = SCRATCH_ROOT): Promise<number> {
  const names = await readdir(root).catch(() => [] as string[]);
  let removed = 0;
  for (const name of names) {
    const match = /^(.+)-(\d+)-[0-9a-f]+$/.exec(name);
    if (!match || match[1] !== HOST) continue;
    const pid = Number(match[2]);
    const path = join(root, name);
    if (path === own || (pid !== process.pid && alive(pid))) continue;
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
