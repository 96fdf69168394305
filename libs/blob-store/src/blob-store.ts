import type { Readable } from 'node:stream';
import { InvalidBlobKeyError } from './errors';

/** An open blob: its bytes as a stream, with what a response needs to describe them. */
export interface BlobStream {
  /** The bytes; the caller reads it to the end or destroys it (which releases the file or connection). */
  body: Readable;
  size: number;
  contentType: string;
}

/**
 * Where media bytes live, shared by the gateway (uploads in, downloads out) and the generator
 * (inputs in, results out). Keys look like `ws_…/job_…/0.png`: their extension names the content
 * type (see `MEDIA_TYPES`). Every method rejects with {@link BlobNotFoundError} for a missing blob
 * where that matters, and {@link BlobStoreUnavailableError} when the store cannot be reached.
 */
export interface BlobStore {
  /** Stores bytes held in memory (uploads, images), replacing any blob under the key. */
  put(key: string, bytes: Buffer): Promise<void>;
  /**
   * Moves a finished local file into the store (videos are encoded to a temp file first), reading
   * it as a stream: a video is never held in memory whole. The local file is gone afterwards.
   */
  putFile(key: string, localPath: string): Promise<void>;
  /** The whole blob in memory (input images, `b64_json` answers); {@link BlobNotFoundError} if missing. */
  get(key: string): Promise<Buffer>;
  /** Size in bytes, or undefined when the blob does not exist. */
  size(key: string): Promise<number | undefined>;
  /** The blob as a stream, once it is open; {@link BlobNotFoundError} if missing. */
  open(key: string): Promise<BlobStream>;
  /** Deletes the blob; removing a missing one is not an error. */
  remove(key: string): Promise<void>;
  /**
   * Deletes every blob whose key starts with `prefix/` (a job's folder: its uploads, its outputs, and
   * whatever a failed attempt left); answers how many there were. Repeating it is harmless.
   */
  removeAll(prefix: string): Promise<number>;
  /** Releases connections; safe to call twice. */
  close(): Promise<void>;
}

const SAFE_KEY = /^[A-Za-z0-9_-]+(\/[A-Za-z0-9_.-]+)*$/;

/** Whether a key stays inside the store's namespace: no `..`, `.`, empty or absolute parts. */
export const isValidBlobKey = (key: string): boolean => SAFE_KEY.test(key) && !key.split('/').some((part) => part === '..' || part === '.');

export function checkBlobKey(key: string): string {
  if (!isValidBlobKey(key)) throw new InvalidBlobKeyError();
  return key;
}
