import { once } from 'node:events';
import { createReadStream } from 'node:fs';
import { mkdir, rename, rm, stat, writeFile, readFile, copyFile } from 'node:fs/promises';
import { dirname, join, resolve, sep } from 'node:path';
import type { Readable } from 'node:stream';

/** Where media bytes live. The filesystem store is the default; an S3-compatible one can replace it. */
export interface BlobStore {
  put(key: string, bytes: Buffer): Promise<void>;
  /** Moves a finished local file into the store (videos are encoded to a temp file first). */
  putFile(key: string, localPath: string): Promise<void>;
  get(key: string): Promise<Buffer>;
  /** Size in bytes, or undefined when the blob does not exist. */
  size(key: string): Promise<number | undefined>;
  /** A stream of the blob, once it is open; rejects when the blob cannot be read. */
  open(key: string): Promise<Readable>;
  remove(key: string): Promise<void>;
}

const SAFE_KEY = /^[A-Za-z0-9_-]+(\/[A-Za-z0-9_.-]+)*$/;

/** Blobs as files under one directory (a shared volume when services run on several hosts). */
export class FileBlobStore implements BlobStore {
  private readonly root: string;

  constructor(dir: string) {
    this.root = resolve(dir);
  }

  async put(key: string, bytes: Buffer): Promise<void> {
    const path = this.pathOf(key);
    await mkdir(dirname(path), { recursive: true });
    // Write then rename so a reader never sees half a file.
    const tmp = `${path}.${process.pid}.${Date.now()}.part`;
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
      await copyFile(localPath, `${path}.part`);
      await rename(`${path}.part`, path);
      await rm(localPath, { force: true });
    }
  }

  get(key: string): Promise<Buffer> {
    return readFile(this.pathOf(key));
  }

  async size(key: string): Promise<number | undefined> {
    try {
      return (await stat(this.pathOf(key))).size;
    } catch {
      return undefined;
    }
  }

  async open(key: string): Promise<Readable> {
    const stream = createReadStream(this.pathOf(key));
    // Wait for the file to open, so a missing blob is an error for the caller, not a broken response.
    await once(stream, 'ready');
    return stream;
  }

  async remove(key: string): Promise<void> {
    await rm(this.pathOf(key), { force: true });
  }

  /** Keys come from our own records, but a link key is user-supplied text: refuse any escape. */
  private pathOf(key: string): string {
    if (!isValidBlobKey(key)) throw new Error('invalid blob key');
    const path = join(this.root, key);
    if (!path.startsWith(this.root + sep)) throw new Error('invalid blob key');
    return path;
  }
}

export const isValidBlobKey = (key: string): boolean =>
  SAFE_KEY.test(key) && !key.split('/').some((part) => part === '..' || part === '.');
