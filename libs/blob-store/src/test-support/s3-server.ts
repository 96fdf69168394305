import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
// Typed by ./s3rver.d.ts: the package ships no types.
import S3rver from '@20minutes/s3rver';
import { S3BlobStore } from '../s3-blob-store';

/** s3rver checks SigV4 signatures against this one fixed key pair. */
export const S3_TEST_CREDENTIALS = { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' } as const;
export const S3_TEST_REGION = 'us-east-1';

/**
 * A real S3 API over HTTP on loopback, in the test's own process, with one bucket; its objects live
 * in a temporary directory. `stop()` and `start()` again on the same port and data play an outage.
 */
export class S3TestServer {
  private server: S3rver | undefined;
  private port = 0;

  private constructor(
    readonly bucket: string,
    private readonly directory: string,
  ) {}

  static async start(bucket = 'media-test'): Promise<S3TestServer> {
    const server = new S3TestServer(bucket, await mkdtemp(join(tmpdir(), 's3rver-')));
    await server.start();
    return server;
  }

  get endpoint(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  /** The settings a service needs to use this server (credentials through the SDK's default chain). */
  get env(): Record<string, string> {
    return {
      BLOB_STORE: 's3',
      S3_BUCKET: this.bucket,
      S3_REGION: S3_TEST_REGION,
      S3_ENDPOINT: this.endpoint,
      S3_FORCE_PATH_STYLE: 'true',
      AWS_ACCESS_KEY_ID: S3_TEST_CREDENTIALS.accessKeyId,
      AWS_SECRET_ACCESS_KEY: S3_TEST_CREDENTIALS.secretAccessKey,
    };
  }

  /** A client store on this server's bucket; close it when done. */
  store(options: { partSize?: number; connectTimeoutMs?: number } = {}): S3BlobStore {
    return new S3BlobStore({
      bucket: this.bucket,
      region: S3_TEST_REGION,
      endpoint: this.endpoint,
      forcePathStyle: true,
      credentials: { ...S3_TEST_CREDENTIALS },
      ...options,
    });
  }

  async start(): Promise<void> {
    if (this.server) return;
    const server = new S3rver({
      address: '127.0.0.1',
      port: this.port,
      silent: true,
      directory: this.directory,
      configureBuckets: [{ name: this.bucket }],
      // Kept between stop and start, so that an outage loses nothing.
      resetOnClose: false,
    });
    // s3rver's SigV4 check builds the canonical URI of a bucket-level request without the trailing
    // slash that AWS SDK v3 signs (`/bucket/`), so ListObjectsV2 would always be refused as
    // SignatureDoesNotMatch, while real S3 accepts it. Only for those requests, and only on this
    // request's view of the app, is the signature mismatch let through; every object request (put,
    // get, head, delete) is still checked.
    const bucketRoot = `/${this.bucket}/`;
    server.middleware.unshift((ctx, next) => {
      if (ctx.method === 'GET' && ctx.path === bucketRoot) ctx.app = Object.create(ctx.app, { allowMismatchedSignatures: { value: true } }) as object;
      return next();
    });
    const address = await server.run();
    this.port = address.port;
    this.server = server;
  }

  /** Closes the port at once, dropping open connections (keep-alive sockets of the services included). */
  async stop(): Promise<void> {
    const server = this.server;
    this.server = undefined;
    if (!server) return;
    const closed = server.close();
    server.httpServer?.closeAllConnections();
    await closed;
  }

  async destroy(): Promise<void> {
    await this.stop();
    await rm(this.directory, { recursive: true, force: true });
  }
}
