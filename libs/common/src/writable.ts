import { randomBytes } from 'node:crypto';
import { mkdir, rm, stat, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';

/**
 * A directory this process must write to (its scratch directory, the fs blob store's MEDIA_DIR) is
 * missing and cannot be made, or is read-only. Thrown at start-up, so that the process exits with
 * one clear line instead of reporting ready and failing every job that needs the directory later.
 */
export class UnwritableDirectoryError extends Error {
  constructor(
    readonly dir: string,
    readonly purpose: string,
    readonly remedy: string,
    options?: ErrorOptions,
  ) {
    const cause = options?.cause as NodeJS.ErrnoException | undefined;
    super(`cannot write to ${purpose} ${dir} (${cause?.message ?? String(cause)}): ${remedy}`, options);
    this.name = 'UnwritableDirectoryError';
  }
}

/**
 * Makes `dir` (and its parents) when missing, then writes and removes a small file in it: the
 * permission bits alone do not tell (root ignores them; a read-only mount or a full volume does not
 * show in them). Rejects with {@link UnwritableDirectoryError}.
 */
export async function assertWritableDirectory(dir: string, purpose: string, remedy: string): Promise<void> {
  const probe = join(dir, `.write-check-${process.pid}-${randomBytes(4).toString('hex')}`);
  try {
    await makeDirectory(dir);
    await writeFile(probe, '');
    await rm(probe, { force: true });
  } catch (err) {
    throw new UnwritableDirectoryError(dir, purpose, remedy, { cause: err });
  }
}

/**
 * `mkdir -p`, one level at a time: Node's recursive mkdir reports a read-only parent as ENOENT (the
 * misleading error of a generator with a read-only /tmp), where a single mkdir reports EROFS or EACCES.
 */
async function makeDirectory(dir: string): Promise<void> {
  const exists = await stat(dir).then(
    (s) => s.isDirectory(),
    (err: NodeJS.ErrnoException) => (err.code === 'ENOENT' ? undefined : Promise.reject(err)),
  );
  if (exists !== undefined) {
    if (!exists) await mkdir(dir); // EEXIST or ENOTDIR: the path is taken by a file
    return;
  }
  const parent = dirname(dir);
  if (parent !== dir) await makeDirectory(parent);
  await mkdir(dir).catch((err: NodeJS.ErrnoException) => (err.code === 'EEXIST' ? undefined : Promise.reject(err)));
}
