import sharp from 'sharp';
import { expectApiError } from '../support/http';
import { api, eventually, readBody, TestStack, type TestWorkspace } from '../support/stack';

/**
 * Design section 2, "Dependency outage", for the S3 store: while the bucket's server is unreachable
 * the gateway answers 503 `service_unavailable` with `Retry-After` (never a 500 nor a 404), and a
 * generation job that cannot store its result is retried by BullMQ until the store is back.
 */
let stack: TestStack;
let ws: TestWorkspace;
let call: ReturnType<typeof api>;

beforeAll(async () => {
  stack = await TestStack.start(['api-gateway', 'generator'], { GENERATION_ATTEMPTS: '5' }, { blobStore: 's3', inProcess: true });
  ws = await stack.createWorkspace('blob-outage');
  call = api(stack, ws.apiKey);
});

afterAll(async () => {
  await stack?.stop();
});

function expectUnavailable(res: Awaited<ReturnType<typeof call>>): void {
  expectApiError(res, 503, { type: 'api_error', code: 'service_unavailable', param: null });
  const retryAfter = Number(res.headers.get('retry-after'));
  expect(retryAfter).toBeGreaterThanOrEqual(1);
  expect(retryAfter).toBeLessThanOrEqual(60);
}

it('answers 503 with Retry-After for downloads and uploads while S3 is down, and serves them again after', async () => {
  const made = await call('/v1/images/generations', { method: 'POST', json: { prompt: 'before the outage', size: '256x256' } });
  expect(made.status).toBe(200);
  const url: string = made.json.data[0].url;

  await stack.s3!.stop();
  try {
    const link = await fetch(url);
    expectUnavailable({ status: link.status, headers: link.headers, ...(await readBody(link)) });
    const png = await sharp({ create: { width: 32, height: 32, channels: 3, background: '#123456' } })
      .png()
      .toBuffer();
    const edit = await call('/v1/images/edits', { method: 'POST', json: { prompt: 'x', image: `data:image/png;base64,${png.toString('base64')}` } });
    expectUnavailable(edit);
    // The refused upload holds no place under the workspace's cap of waiting jobs.
    expect(await stack.jobs.unfinishedCount(ws.workspaceId)).toBe(0);
    expect((await fetch(`${stack.baseUrl}/healthz`)).status).toBe(200);
  } finally {
    await stack.s3!.start();
  }
  const again = await fetch(url);
  expect([again.status, again.headers.get('content-type')]).toEqual([200, 'image/png']);
});

it('retries a generation whose result cannot be stored, and completes it once S3 is back', async () => {
  const generator = stack.service('generator');
  await stack.s3!.stop();
  let id: string;
  try {
    const created = await call('/v1/videos', { method: 'POST', json: { prompt: 'stored later', seconds: 1, size: '640x360' } });
    expect(created.status).toBe(200);
    id = created.json.id;
    await eventually(() => (generator.hasLog((l) => l.message === 'generation error' && l.job_id === id) ? true : undefined), 20_000, 'a failed attempt');
  } finally {
    await stack.s3!.start();
  }
  const video = await eventually(
    async () => {
      const res = await call(`/v1/videos/${id}`);
      if (res.json.status === 'failed') throw new Error(JSON.stringify(res.json.error));
      return res.json.status === 'completed' ? res.json : undefined;
    },
    20_000,
    'the video to complete',
  );
  expect(video.progress).toBe(100);
  const content = await fetch(`${stack.baseUrl}/v1/videos/${id}/content`, { headers: { authorization: `Bearer ${ws.apiKey}` } });
  expect([content.status, content.headers.get('content-type')]).toEqual([200, 'video/mp4']);
  expect((await content.arrayBuffer()).byteLength).toBeGreaterThan(1_000);
  expect(await stack.jobs.ledger(ws.workspaceId)).toEqual(expect.arrayContaining([expect.objectContaining({ job_id: id })]));
});
