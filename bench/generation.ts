/**
 * Generation timings through the real gateway and generator (separate processes from dist/), one
 * request at a time: a synchronous 1024x1024 image (request to response), and a 4 s 1280x720 video
 * with audio (POST to the `completed` record). No peer: context for the other figures.
 */
import { JobRepository, StoreKeys } from '@media/storage';
import { BenchStack, createWorkspace, dropPrefix, envNumber, newPrefix, percentile, serviceEnv, waitUntil, type BenchContext } from './support';

export interface Timing {
  n: number;
  minMs: number;
  p50Ms: number;
  maxMs: number;
}

export interface GenerationResult {
  image: Timing;
  video: Timing;
}

const timing = (samples: number[]): Timing => {
  const sorted = [...samples].sort((a, b) => a - b);
  return { n: sorted.length, minMs: sorted[0] ?? Number.NaN, p50Ms: percentile(sorted, 50), maxMs: sorted.at(-1) ?? Number.NaN };
};

export async function benchGeneration(ctx: BenchContext): Promise<GenerationResult> {
  const ROUNDS = Math.max(1, envNumber('BENCH_GENERATION_ROUNDS', 5));
  const { redis, pki } = ctx;
  const prefix = newPrefix('generation');
  const { apiKey } = await createWorkspace(redis, prefix);
  const jobs = new JobRepository(redis, new StoreKeys(prefix));
  const stack = await BenchStack.start(prefix, ['api-gateway', 'generator'], await serviceEnv(prefix, pki));
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
    const image: number[] = [];
    for (let i = 0; i < ROUNDS; i++) {
      const start = performance.now();
      await post('/v1/images/generations', { prompt: `bench ${i}`, size: '1024x1024' });
      image.push(performance.now() - start);
    }
    const video: number[] = [];
    for (let i = 0; i < ROUNDS; i++) {
      const start = performance.now();
      const { id } = await post('/v1/videos', { prompt: `bench ${i}`, seconds: 4, size: '1280x720', generate_audio: true });
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
    }
    return { image: timing(image), video: timing(video) };
  } finally {
    await stack.stop();
    await dropPrefix(redis, prefix);
  }
}
