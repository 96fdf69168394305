import { createHash, randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { createWriteStream } from 'node:fs';
import { access, mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Readable } from 'node:stream';
import { GetObjectCommand, HeadObjectCommand, S3Client } from '@aws-sdk/client-s3';
import type { BlobStore } from './blob-store';
import { BlobNotFoundError, BlobStoreUnavailableError } from './errors';
import { FileBlobStore } from './file-blob-store';
import { S3BlobStore } from './s3-blob-store';
import { S3TestServer, S3_TEST_CREDENTIALS, S3_TEST_REGION } from './test-support/s3-server';

// One contract, two stores: every test below runs against the filesystem store and against the S3
// store talking real HTTP to an S3 server on loopback.

let s3: S3TestServer;
let work: string;

beforeAll(async () => {
  s3 = await S3TestServer.start();
  work = await mkdtemp(join(tmpdir(), 'blob-store-test-'));
});

afterAll(async () => {
  await s3?.destroy();
  if (work) await rm(work, { recursive: true, force: true });
});

async function readAll(stream: Readable): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

/** A file of `size` random bytes written in 1 MiB steps (never whole in memory), and its digest. */
async function bigFile(size: number): Promise<{ path: string; sha256: string }> {
  const path = join(work, `big-${randomBytes(4).toString('hex')}.mp4`);
  const hash = createHash('sha256');
  const out = createWriteStream(path);
  for (let left = size; left > 0; left -= 1024 * 1024) {
    const chunk = randomBytes(Math.min(left, 1024 * 1024));
    hash.update(chunk);
    if (!out.write(chunk)) await once(out, 'drain');
  }
  out.end();
  await once(out, 'finish');
  return { path, sha256: hash.digest('hex') };
}

const sha256 = (bytes: Buffer) => createHash('sha256').update(bytes).digest('hex');
const exists = (path: string) =>
  access(path).then(
    () => true,
    () => false,
  );

describe.each(['fs', 's3'] as const)('%s blob store', (kind) => {
  let store: BlobStore;
  const prefix = `ws_${randomBytes(4).toString('hex')}`;

  beforeAll(async () => {
    store = kind === 'fs' ? new FileBlobStore(await mkdtemp(join(work, 'fs-'))) : s3.store({ partSize: 5 * 1024 * 1024 });
  });

  afterAll(async () => {
    await store?.close();
    await store?.close();
  });

  it('puts, gets, sizes and removes a blob', async () => {
    const key = `${prefix}/job_1/0.png`;
    const bytes = randomBytes(3_000);
    await store.put(key, bytes);
    expect(await store.size(key)).toBe(3_000);
    expect((await store.get(key)).equals(bytes)).toBe(true);
    await store.put(key, Buffer.from('replaced'));
    expect((await store.get(key)).toString()).toBe('replaced');
    await store.remove(key);
    expect(await store.size(key)).toBeUndefined();
    await store.remove(key);
  });

  it("removes everything under a job's folder, and nothing beside it", async () => {
    const keys = [`${prefix}/req_9/input-0.png`, `${prefix}/req_9/mask.png`, `${prefix}/req_9/0.png`, `${prefix}/req_9/1.png`];
    const neighbours = [`${prefix}/req_90/0.png`, `${prefix}/req_8/0.png`];
    for (const key of [...keys, ...neighbours]) await store.put(key, Buffer.from(key));
    expect(await store.removeAll(`${prefix}/req_9`)).toBe(keys.length);
    for (const key of keys) expect(await store.size(key)).toBeUndefined();
    for (const key of neighbours) expect(await store.size(key)).toBe(key.length);
    // A repeat (a sweep re-run after a crash) finds nothing and is not an error.
    expect(await store.removeAll(`${prefix}/req_9`)).toBe(0);
    await expect(store.removeAll('../etc')).rejects.toThrow();
  });

  it('opens a blob as a stream with its size and content type, from the one media-type table', async () => {
    for (const [name, type] of [
      ['0.png', 'image/png'],
      ['1.jpg', 'image/jpeg'],
      ['2.webp', 'image/webp'],
      ['video.mp4', 'video/mp4'],
      ['x.__proto__', 'application/octet-stream'],
    ]) {
      const key = `${prefix}/job_2/${name}`;
      await store.put(key, Buffer.from(name));
      const blob = await store.open(key);
      expect([name, blob.contentType, blob.size]).toEqual([name, type, name.length]);
      expect((await readAll(blob.body)).toString()).toBe(name);
    }
  });

  it('moves a multi-MB local file into the store as a stream, and serves it back byte for byte', async () => {
    const size = 12 * 1024 * 1024 + 12_345; // over two 5 MiB parts, and a short last one
    const { path, sha256: digest } = await bigFile(size);
    const key = `${prefix}/video_1/video.mp4`;
    await store.putFile(key, path);
    expect(await exists(path)).toBe(false);
    expect(await store.size(key)).toBe(size);
    const blob = await store.open(key);
    expect([blob.size, blob.contentType]).toEqual([size, 'video/mp4']);
    expect(sha256(await readAll(blob.body))).toBe(digest);
    expect(sha256(await store.get(key))).toBe(digest);
  });

  it('reports a missing blob as BlobNotFoundError from get and open, and undefined from size', async () => {
    const key = `${prefix}/nothing/here.png`;
    await expect(store.get(key)).rejects.toBeInstanceOf(BlobNotFoundError);
    await expect(store.open(key)).rejects.toBeInstanceOf(BlobNotFoundError);
    expect(await store.size(key)).toBeUndefined();
  });

  it('refuses keys that could escape its namespace', async () => {
    for (const bad of ['../x', 'ws/../../etc/passwd', '/etc/passwd', 'a//b', '', 'a/./b']) {
      await expect(store.put(bad, Buffer.from('x'))).rejects.toThrow(/invalid blob key/);
      await expect(store.open(bad)).rejects.toThrow(/invalid blob key/);
    }
  });
});

describe('S3BlobStore', () => {
  it('stores each object with its content type, readable as such by any S3 client', async () => {
    const store = s3.store();
    const client = new S3Client({ region: S3_TEST_REGION, endpoint: s3.endpoint, forcePathStyle: true, credentials: { ...S3_TEST_CREDENTIALS } });
    try {
      await store.put('ws_ct/job/0.jpg', Buffer.from([0xff, 0xd8, 0xff, 0x00]));
      const file = join(work, 'small.mp4');
      await writeFile(file, Buffer.from('not really a video'));
      await store.putFile('ws_ct/video/video.mp4', file);
      const image = await client.send(new HeadObjectCommand({ Bucket: s3.bucket, Key: 'ws_ct/job/0.jpg' }));
      const video = await client.send(new GetObjectCommand({ Bucket: s3.bucket, Key: 'ws_ct/video/video.mp4' }));
      expect([image.ContentType, image.ContentLength]).toEqual(['image/jpeg', 4]);
      expect([video.ContentType, await video.Body!.transformToString()]).toEqual(['video/mp4', 'not really a video']);
    } finally {
      client.destroy();
      await store.close();
    }
  });

  it('reports a store that cannot be reached as BlobStoreUnavailableError, and works again once it is back', async () => {
    const server = await S3TestServer.start('outage');
    const store = server.store({ connectTimeoutMs: 1_000 });
    try {
      await store.put('ws_o/job/0.png', Buffer.from('before'));
      await server.stop();
      const file = join(work, 'during.mp4');
      await writeFile(file, Buffer.from('during'));
      for (const attempt of [
        store.get('ws_o/job/0.png'),
        store.open('ws_o/job/0.png'),
        store.size('ws_o/job/0.png'),
        store.put('ws_o/job/1.png', Buffer.from('x')),
        store.putFile('ws_o/job/v.mp4', file),
        store.remove('ws_o/job/0.png'),
      ]) {
        await expect(attempt).rejects.toBeInstanceOf(BlobStoreUnavailableError);
      }
      // A failed putFile leaves the local file for the next attempt.
      expect(await exists(file)).toBe(true);
      await server.start();
      expect((await store.get('ws_o/job/0.png')).toString()).toBe('before');
    } finally {
      await store.close();
      await server.destroy();
    }
  });

  it('passes on errors no retry can fix, such as a bucket that does not exist', async () => {
    const store = new S3BlobStore({
      bucket: 'no-such-bucket',
      region: S3_TEST_REGION,
      endpoint: s3.endpoint,
      forcePathStyle: true,
      credentials: { ...S3_TEST_CREDENTIALS },
    });
    try {
      const err = await store.get('ws/x/0.png').catch((e: unknown) => e);
      expect(err).toBeInstanceOf(Error);
      expect(err).not.toBeInstanceOf(BlobNotFoundError);
      expect(err).not.toBeInstanceOf(BlobStoreUnavailableError);
      expect((err as Error).name).toBe('NoSuchBucket');
    } finally {
      await store.close();
    }
  });
});

describe('FileBlobStore', () => {
  it('leaves no partial file behind a put', async () => {
    const dir = await mkdtemp(join(work, 'fs-'));
    const store = new FileBlobStore(dir);
    await store.put('ws_p/job/0.png', randomBytes(100_000));
    expect(await readdir(join(dir, 'ws_p/job'))).toEqual(['0.png']);
  });
});
