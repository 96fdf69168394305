/**
 * Generation timings through the real gateway and generator (separate processes from dist/), one
 * request at a time: a synchronous 1024x1024 image (request to response), and a 4 s 1280x720 video
 * with audio (POST to the `completed` record, which includes storing it), then its download through
 * the gateway (`/v1/videos/{id}/content`). The videos run once per blob store: the filesystem, and
 * S3 (an S3-compatible server on loopback, s3rver, as the tests use). No peer: context for the
 * other figures.
 */
import { JobRepository } from '@media/jobs';
import { S3TestServer } from '../libs/blob-store/src/test-support/s3-server';
import { BenchStack, createWorkspace, dropPrefix, envNumber, newPrefix, percentile, serviceEnv, waitUntil, type BenchContext } from './support';
import { allKeys } from '../test/support/store-keys';

export interface Timing {
  n: number;
  minMs: number;
  p50Ms: number;
  maxMs: number;
}

export interface VideoStoreResult {
  /** POST → completed (render, encode, store). */
  video: Timing;
  /** GET /v1/videos/{id}/content, request → last byte. */
  download: Timing;
  /** Size of one video. */
  bytes: number;
}

export interface GenerationResult {
  image: Timing;
  /** The filesystem store's video timing (the headline row). */
  video: Timing;
  stores: Record<'fs' | 's3', VideoStoreResult>;
}

const timing = (samples: number[]): Timing => {
  const sorted = [...samples].sort((a, b) => a - b);
  return { n: sorted.length, minMs: sorted[0] ?? Number.NaN, p50Ms: percentile(sorted, 50), maxMs: sorted.at(-1) ?? Number.NaN };
};

export async function benchGeneration(ctx: BenchContext): Promise<GenerationResult> {
  const ROUNDS = Math.max(1, envNumber('BENCH_GENERATION_ROUNDS', 5));
  const image = await run(ctx, 'fs', ROUNDS, true);
  const fs = await run(ctx, 'fs', ROUNDS, false);
  const s3 = await run(ctx, 's3', ROUNDS, false);
  return { image: image.image!, video: fs.video, stores: { fs, s3 } };
}

async function run(ctx: BenchContext, store: 'fs' | 's3', rounds: number, images: boolean): Promise<VideoStoreResult & { image?: Timing }> {
  const { redis, pki } = ctx;
  const prefix = newPrefix(`generation-${store}`);
  const { apiKey } = await createWorkspace(redis, prefix);
  const jobs = new JobRepository(redis, allKeys(prefix));
  const s3 = store === 's3' ? await S3TestServer.start('bench-media') : undefined;
  const stack = await BenchStack.start(prefix, ['api-gateway', 'generator'], await serviceEnv(prefix, pki, s3?.env));
  const post = async (path: string, json: unknown) => {
    const res = await fetch(`${stack.baseUrl}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${apiKey}` },
      body: JSON.stringify(json),
    });
    const text = await res.text();
    if (res.status !== 200) throw new Error(`${path} answered ${res.status}: ${text}`);
    return JSON.parse(text) as { id: string };
  };
  try {
    if (images) {
      const image: number[] = [];
      for (let i = 0; i < rounds; i++) {
        const start = performance.now();
        await post('/v1/images/generations', { prompt: `bench ${i}`, size: '1024x1024' });
        image.push(performance.now() - start);
      }
      return { image: timing(image), video: timing([]), download: timing([]), bytes: 0 };
    }
    const video: number[] = [];
    const download: number[] = [];
    let bytes = 0;
    for (let i = 0; i < rounds; i++) {
      const start = performance.now();
      const { id } = await post('/v1/videos', { prompt: `waves rolling onto a beach in a storm ${i}`, seconds: 4, size: '1280x720', generate_audio: true });
      let end = 0;
      await waitUntil(
        async () => {
          const job = await jobs.get(id);
          if (job?.status === 'failed') throw new Error(`video ${id} failed: ${JSON.stringify(job.error)}`);
          if (job?.status !== 'completed') return false;
          end = performance.now();
          return true;
        },
        120_000,
        `video ${id}`,
        20,
      );
      video.push(end - start);
      const fetchStart = performance.now();
      const res = await fetch(`${stack.baseUrl}/v1/videos/${id}/content`, { headers: { authorization: `Bearer ${apiKey}` } });
      const body = Buffer.from(await res.arrayBuffer());
      if (res.status !== 200 || body.subarray(4, 8).toString() !== 'ftyp') throw new Error(`content of ${id} answered ${res.status} (${body.length} bytes)`);
      download.push(performance.now() - fetchStart);
      bytes = body.length;
    }
    return { video: timing(video), download: timing(download), bytes };
  } finally {
    await stack.stop();
    await dropPrefix(redis, prefix);
    await s3?.destroy();
  }
}
