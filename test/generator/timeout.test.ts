import { chargesFor, finishedEvent, watchVideo, startGeneratorStack, type GeneratorStack } from './helpers';

// A generation that outlives GENERATION_TIMEOUT_MS is stopped and, on its last attempt, ends
// `failed` with generation_failed and no charge.
describe('generator: timeout', () => {
  let t: GeneratorStack;

  beforeAll(async () => {
    t = await startGeneratorStack('timeout', { GENERATION_TIMEOUT_MS: '1000', GENERATION_ATTEMPTS: '1' });
  });

  afterAll(async () => {
    await t?.close();
  });

  it('fails a 20 s 1920x1080 video that cannot be made within 1 s with generation_failed, uncharged', async () => {
    const created = await t.call('/v1/videos', {
      method: 'POST',
      json: { model: 'motion-1', prompt: 'a very long voyage', seconds: 20, size: '1920x1080', generate_audio: true },
    });
    expect(created.status).toBe(200);
    const id: string = created.json.id;

    const { video } = await watchVideo(t.call, id, 20_000);
    expect(video).toMatchObject({ status: 'failed', cost: null, url: null, error: { code: 'generation_failed' } });
    expect(video.progress).toBeLessThan(100);

    const record = await t.stack.jobs.get(id);
    expect(record).toMatchObject({ status: 'failed', cost: null, error: { code: 'generation_failed' } });
    // Cut off near the limit, not after the ~10 s a full encode of this video takes.
    expect(record!.finished_ms! - record!.created_ms).toBeLessThan(6_000);
    expect(await chargesFor(t.stack, t.ws.workspaceId, id)).toEqual([]);

    const content = await t.call(`/v1/videos/${id}/content`);
    expect(content.status).toBe(409);
    expect((await finishedEvent(t.events, id)).data).toEqual({ jobId: id, workspaceId: t.ws.workspaceId });
  });
});
