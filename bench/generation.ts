/**
 * Generation timings through the real gateway and generator on this machine: a synchronous
 * 1024x1024 image, and a 4 s 720p video with audio from POST to `completed`.
 * Run with `npm run bench` (it starts its own services under a private key prefix and cleans up).
 */
import { api, eventually, TestStack } from '../test/support/stack';

const ROUNDS = 5;

function summary(samples: number[]): string {
  const sorted = [...samples].sort((a, b) => a - b);
  const pick = (q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
  return `min ${sorted[0].toFixed(0)} ms, p50 ${pick(0.5).toFixed(0)} ms, max ${sorted.at(-1)!.toFixed(0)} ms (n=${samples.length})`;
}

export async function benchGeneration(): Promise<void> {
  const stack = await TestStack.start(['api-gateway', 'generator']);
  try {
    const ws = await stack.createWorkspace('bench');
    const call = api(stack, ws.apiKey);
    const image: number[] = [];
    for (let i = 0; i < ROUNDS; i++) {
      const start = performance.now();
      const res = await call('/v1/images/generations', { method: 'POST', json: { prompt: `bench ${i}`, size: '1024x1024' } });
      if (res.status !== 200) throw new Error(`image: ${res.status} ${res.text}`);
      image.push(performance.now() - start);
    }
    const video: number[] = [];
    for (let i = 0; i < ROUNDS; i++) {
      const start = performance.now();
      const res = await call('/v1/videos', { method: 'POST', json: { prompt: `bench ${i}`, seconds: 4, size: '1280x720', generate_audio: true } });
      if (res.status !== 200) throw new Error(`video: ${res.status} ${res.text}`);
      await eventually(async () => {
        const job = await stack.jobs.get(res.json.id);
        if (job?.status === 'failed') throw new Error('video failed');
        return job?.status === 'completed' ? true : undefined;
      }, 120_000, 'video');
      video.push(performance.now() - start);
    }
    console.log('generation (sync image = request to response; video = POST to completed record)');
    console.log(`  image 1024x1024 png        ${summary(image)}`);
    console.log(`  video 4 s 1280x720 + audio ${summary(video)}`);
  } finally {
    await stack.stop();
  }
}

if (require.main === module) {
  benchGeneration().catch((err) => {
    console.error(err);
    process.exit(1);
  });
}
