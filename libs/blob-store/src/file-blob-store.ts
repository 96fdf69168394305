import { copyFile, mkdir, open, readdir, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import { randomBytes } from 'node:crypto';
import { dirname, join, resolve, sep } from 'node:path';
import { checkBlobKey, type BlobStore, type BlobStream } from './blob-store';
import { BlobNotFoundError, InvalidBlobKeyError } from './errors';
import { contentTypeOfKey } from './media-types';
import { assertWritableDirectory } from '@media/common';

/** Errors meaning "no such blob"; any other (EIO of a network volume, EACCES) is passed on. */
const isMissing = (err: unknown) => ['ENOENT', 'ENOTDIR'].includes((err as NodeJS.ErrnoException).code ?? '');

/**
 * A name of its own for each write of `path`: writers of the same blob (two runs of one job, on one
 * host or on several sharing the volume, in the same millisecond) must never share a temp file.
 */
const tempNameFor = (path: string) => `${path}.${randomBytes(8).toString('hex')}.part`;

/**
 * Blobs as files under one directory (a shared volume when services run on several hosts). The
 * content type is not stored: it follows from the key's extension.
 */
export class FileBlobStore implements BlobStore {
  private readonly root: string;

  constructor(dir: string) {
    this.root = resolve(dir);
  }

  /**
   * Fails with UnwritableDirectoryError when MEDIA_DIR cannot be made or written by this process; a
   * service runs it at start-up rather than fail its first job.
   */
  async checkWritable(): Promise<void> {
    await assertWritableDirectory(
      this.root,
      'MEDIA_DIR (the fs blob store)',
      'mount a volume there that this process (in the image, uid 1000) can write, or set BLOB_STORE=s3',
    );
  }

  async put(key: string, bytes: Buffer): Promise<void> {
    const path = this.pathOf(key);
    await mkdir(dirname(path), { recursive: true });
    // Write then rename so a reader never sees half a file.
    const tmp = tempNameFor(path);
    await writeFile(tmp, bytes);
    await rename(tmp, path);
  }

  async putFile(key: string, localPath: string): Promise<void> {
    const path = this.pathOf(key);
    await mkdir(dirname(path), { recursive: true });
    try {
      await rename(localPath, path);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EXDEV') throw err;
      const tmp = tempNameFor(path);
      await copyFile(localPath, tmp);
      await rename(tmp, path);
      await rm(localPath, { force: true });
    }
  }

  async get(key: string): Promise<Buffer> {
    try {
      return await readFile(this.pathOf(key));
    } catch (err) {
      throw isMissing(err) ? new BlobNotFoundError(key, { cause: err }) : err;
    }
  }

  async size(key: string): Promise<number | undefined> {
    try {
      return (await stat(this.pathOf(key))).size;
    } catch (err) {
      if (isMissing(err)) return undefined;
      throw err;
    }
  }

  async open(key: string): Promise<BlobStream> {
    const path = this.pathOf(key);
    let handle;
    try {
      handle = await open(path, 'r');
    } catch (err) {
      throw isMissing(err) ? new BlobNotFoundError(key, { cause: err }) : err;
    }
    try {
      // Size and bytes of the same open file, even if the key is replaced meanwhile.
      const { size } = await handle.stat();
      return { body: handle.createReadStream(), size, contentType: contentTypeOfKey(key) };
    } catch (err) {
      await handle.close();
      throw err;
    }
  }

  async remove(key: string): Promise<void> {
    await rm(this.pathOf(key), { force: true });
  }

  async removeAll(prefix: string): Promise<number> {
    const dir = this.pathOf(prefix);
    let count = 0;
    try {
      count = (await readdir(dir, { recursive: true, withFileTypes: true })).filter((entry) => entry.isFile()).length;
    } catch (err) {
      if (isMissing(err)) return 0;
      throw err;
    }
    await rm(dir, { recursive: true, force: true });
    return count;
  }

  async close(): Promise<void> {}

  /** Keys come from our own records, but a link key is user-supplied text: refuse any escape. */
  private pathOf(key: string): string {
    const path = join(this.root, checkBlobKey(key));
    if (!path.startsWith(this.root + sep)) throw new InvalidBlobKeyError();
    return path;
  }
}
