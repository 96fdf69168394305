import { createReadStream } from 'node:fs';
import { rm } from 'node:fs/promises';
import { Agent as HttpAgent } from 'node:http';
import { Agent as HttpsAgent } from 'node:https';
import type { Readable } from 'node:stream';
import {
  DeleteObjectCommand,
  GetObjectCommand,
  HeadObjectCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  S3Client,
  type S3ClientConfig,
} from '@aws-sdk/client-s3';
import { Upload } from '@aws-sdk/lib-storage';
import { checkBlobKey, type BlobStore, type BlobStream } from './blob-store';
import { BlobNotFoundError, BlobStoreUnavailableError } from './errors';
import { contentTypeOfKey } from './media-types';

export interface S3BlobStoreOptions {
  bucket: string;
  /** Unset: the SDK's own chain (`AWS_REGION`, the profile), or `us-east-1` when an endpoint is given. */
  region?: string;
  /** An S3-compatible server (MinIO, Ceph, R2, …); unset: AWS S3 itself. */
  endpoint?: string;
  /** `http://endpoint/bucket/key` instead of `http://bucket.endpoint/key` (most self-hosted servers). */
  forcePathStyle?: boolean;
  /** Fixed credentials (tests); unset: the SDK's default chain (environment, profile, workload role). */
  credentials?: { accessKeyId: string; secretAccessKey: string };
  /** Part size of the multipart upload of {@link S3BlobStore.putFile}, at least 5 MiB. */
  partSize?: number;
  /** How long connecting to the store may take before the call fails as unavailable. */
  connectTimeoutMs?: number;
  /** How long an open connection may stay silent (no bytes either way) before it is given up. */
  idleTimeoutMs?: number;
}

const MIB = 1024 * 1024;
/** Parts uploaded at once by putFile: its memory is about partSize × this, whatever the video's size. */
const UPLOAD_QUEUE_SIZE = 2;
/**
 * Downloads hold a connection for as long as a client takes to read them, so the SDK's default of
 * 50 sockets would make the 51st concurrent download wait for one.
 */
const MAX_SOCKETS = 512;

/**
 * Blobs as objects in an S3-compatible bucket, one object per key. Objects carry their content type
 * (from the key's extension), so the bucket is readable by other tools as it is.
 *
 * Errors are the store's contract, not the SDK's: a missing object is {@link BlobNotFoundError}, a
 * store that cannot be reached or cannot serve now is {@link BlobStoreUnavailableError} (after the
 * SDK's own retries), anything else (access denied, no such bucket) is passed on as the SDK's error:
 * a misconfiguration that no retry fixes.
 */
export class S3BlobStore implements BlobStore {
  private readonly client: S3Client;
  private readonly bucket: string;
  private readonly partSize: number;
  private closed = false;

  constructor(options: S3BlobStoreOptions) {
    this.bucket = options.bucket;
    this.partSize = Math.max(options.partSize ?? 8 * MIB, 5 * MIB);
    const config: S3ClientConfig = {
      region: options.region ?? (options.endpoint ? 'us-east-1' : undefined),
      endpoint: options.endpoint,
      forcePathStyle: options.forcePathStyle,
      credentials: options.credentials,
      requestHandler: {
        connectionTimeout: options.connectTimeoutMs ?? 5_000,
        requestTimeout: options.idleTimeoutMs ?? 30_000,
        httpAgent: new HttpAgent({ keepAlive: true, maxSockets: MAX_SOCKETS }),
        httpsAgent: new HttpsAgent({ keepAlive: true, maxSockets: MAX_SOCKETS }),
      },
    };
    if (options.endpoint) {
      // Checksums only where S3 demands them: several S3-compatible servers still refuse (or store
      // verbatim) the CRC trailers that the SDK adds to every upload by default since early 2025.
      // On AWS itself the default stays, and with it the end-to-end integrity check.
      config.requestChecksumCalculation = 'WHEN_REQUIRED';
      config.responseChecksumValidation = 'WHEN_REQUIRED';
    }
    this.client = new S3Client(config);
  }

  async put(key: string, bytes: Buffer): Promise<void> {
    const command = new PutObjectCommand({
      Bucket: this.bucket,
      Key: checkBlobKey(key),
      Body: bytes,
      ContentLength: bytes.length,
      ContentType: contentTypeOfKey(key),
    });
    await this.call(key, () => this.client.send(command));
  }

  async putFile(key: string, localPath: string): Promise<void> {
    checkBlobKey(key);
    // A file smaller than one part goes up in one PutObject, a larger one as a multipart upload;
    // either way it is read as a stream, one part in memory per slot of the queue.
    const body = createReadStream(localPath);
    const upload = new Upload({
      client: this.client,
      params: { Bucket: this.bucket, Key: key, Body: body, ContentType: contentTypeOfKey(key) },
      partSize: this.partSize,
      queueSize: UPLOAD_QUEUE_SIZE,
      leavePartsOnError: false,
    });
    try {
      await this.call(key, () => upload.done());
    } finally {
      // A failed upload may leave the file half read: its handle must not outlive the attempt.
      body.destroy();
    }
    await rm(localPath, { force: true });
  }

  async get(key: string): Promise<Buffer> {
    return this.call(key, async () => {
      const object = await this.client.send(new GetObjectCommand({ Bucket: this.bucket, Key: checkBlobKey(key) }));
      const bytes = await object.Body!.transformToByteArray();
      return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    });
  }

  async size(key: string): Promise<number | undefined> {
    try {
      const head = await this.call(key, () => this.client.send(new HeadObjectCommand({ Bucket: this.bucket, Key: checkBlobKey(key) })));
      return head.ContentLength ?? 0;
    } catch (err) {
      if (err instanceof BlobNotFoundError) return undefined;
      throw err;
    }
  }

  async open(key: string): Promise<BlobStream> {
    // One GET: its headers give size and type, its body is the stream (no HEAD first).
    const object = await this.call(key, () => this.client.send(new GetObjectCommand({ Bucket: this.bucket, Key: checkBlobKey(key) })));
    return {
      body: object.Body as Readable,
      size: object.ContentLength ?? 0,
      // From our own table, never the object's metadata: whatever else wrote to a shared bucket
      // must not choose how the gateway's origin (the dashboard's too) serves it, e.g. as text/html.
      contentType: contentTypeOfKey(key),
    };
  }

  async remove(key: string): Promise<void> {
    await this.call(key, () => this.client.send(new DeleteObjectCommand({ Bucket: this.bucket, Key: checkBlobKey(key) })));
  }

  async removeAll(prefix: string): Promise<number> {
    const folder = `${checkBlobKey(prefix)}/`;
    let removed = 0;
    let token: string | undefined;
    do {
      const page = await this.call(folder, () => this.client.send(new ListObjectsV2Command({ Bucket: this.bucket, Prefix: folder, ContinuationToken: token })));
      // One DeleteObject per key rather than DeleteObjects: a job holds a handful of blobs, and the
      // batch call needs a Content-MD5 that several S3-compatible servers check differently.
      const keys = (page.Contents ?? []).flatMap((object) => (object.Key ? [object.Key] : []));
      await Promise.all(keys.map((key) => this.call(key, () => this.client.send(new DeleteObjectCommand({ Bucket: this.bucket, Key: key })))));
      removed += keys.length;
      token = page.IsTruncated ? page.NextContinuationToken : undefined;
    } while (token);
    return removed;
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.client.destroy();
  }

  private async call<T>(key: string, run: () => Promise<T>): Promise<T> {
    try {
      return await run();
    } catch (err) {
      throw translateS3Error(err, key);
    }
  }
}

/** Error names of a missing object: `NoSuchKey` from GET, a bare `NotFound` from HEAD (which has no body). */
const MISSING = new Set(['NoSuchKey', 'NotFound']);

/** S3's names for "cannot serve now", and the SDK's for a call that timed out. */
const UNAVAILABLE = new Set([
  'TimeoutError',
  'RequestTimeout',
  'RequestTimeoutException',
  'SlowDown',
  'ServiceUnavailable',
  'InternalError',
  'Throttling',
  'ThrottlingException',
  'TooManyRequestsException',
  'RequestThrottled',
  'ServiceUnavailableException',
]);

/** Socket errors of a store that went away or never answered. */
const NETWORK_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ECONNABORTED', 'ETIMEDOUT', 'EPIPE', 'EHOSTUNREACH', 'ENETUNREACH', 'ENOTFOUND', 'EAI_AGAIN']);

/** The same codes in a message, for an error the SDK re-wrapped with its message only. */
const NETWORK_MESSAGE = new RegExp(`\\b(${[...NETWORK_CODES].join('|')})\\b`);

interface ErrorLike {
  name?: unknown;
  message?: unknown;
  code?: unknown;
  cause?: unknown;
  $metadata?: { httpStatusCode?: number };
}

/**
 * The store's error for an SDK error: see {@link S3BlobStore}. Read by shape, not `instanceof`: the
 * SDK wraps what it does not recognise as an `Error` of its own realm.
 */
export function translateS3Error(err: unknown, key: string): unknown {
  if (typeof err !== 'object' || err === null) return err;
  const { name, message } = err as ErrorLike;
  if (typeof name === 'string' && MISSING.has(name)) return new BlobNotFoundError(key, { cause: err });
  if (isUnavailable(err)) return new BlobStoreUnavailableError(`S3 store unavailable: ${String(name)}: ${String(message)}`, { cause: err });
  return err;
}

function isUnavailable(err: unknown, depth = 0): boolean {
  if (typeof err !== 'object' || err === null || depth > 3) return false;
  const { name, message, code, cause, $metadata } = err as ErrorLike;
  const status = $metadata?.httpStatusCode;
  if (status !== undefined && (status >= 500 || status === 429 || status === 408)) return true;
  if (typeof name === 'string' && UNAVAILABLE.has(name)) return true;
  if (typeof code === 'string' && NETWORK_CODES.has(code)) return true;
  if (typeof message === 'string' && NETWORK_MESSAGE.test(message)) return true;
  return isUnavailable(cause, depth + 1);
}
