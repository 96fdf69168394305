import OpenAI from 'openai';
import { api, BLOB_STORES, eventually, TestStack } from '../support/stack';
import { shardOfId } from '@media/domain';

// `DELETE /v1/videos/{id}` (the SDK's `videos.delete`): the video's media and record go at once,
// its charge stays; a video that is still being made cannot be deleted.
describe.each(BLOB_STORES)('deleting a video (%s blob store)', (blobStore) => {
  let stack: TestStack;
  let client: OpenAI;
  let call: ReturnType<typeof api>;
  let workspaceId: string;

  beforeAll(async () => {
    // No generator at first: a video stays queued until one starts.
    stack = await TestStack.start(['api-gateway'], {}, { blobStore, inProcess: true });
    const ws = await stack.createWorkspace('delete');
    workspaceId = ws.workspaceId;
    client = new OpenAI({ apiKey: ws.apiKey, baseURL: `${stack.baseUrl}/v1`, maxRetries: 0 });
    call = api(stack, ws.apiKey);
  });

  afterAll(async () => {
    await stack?.stop();
  });

  it('refuses a video in progress, deletes a finished one with its content, and keeps its charge', async () => {
    const created = await client.videos.create({ model: 'motion-1' as never, prompt: 'a lighthouse at dusk', seconds: '1' as never, size: '640x360' as never });
    const early = await call(`/v1/videos/${created.id}`, { method: 'DELETE' });
    expect(early.status).toBe(409);
    expect(early.json.error).toMatchObject({ type: 'invalid_request_error', code: 'video_in_progress' });

    await stack.startService('generator');
    const done = await eventually(
      async () => {
        const video = await client.videos.retrieve(created.id);
        return video.status === 'completed' ? video : undefined;
      },
      30_000,
      'the video to complete',
    );
    const link = (await call(`/v1/videos/${created.id}`)).json.url as string;
    expect((await fetch(link)).status).toBe(200);
    const stored = (await stack.jobs.get(created.id))!;
    expect(stored.kind === 'video' && (await stack.blobs.size(stored.output!))).toBeGreaterThan(0);

    // Another workspace cannot see it, let alone delete it.
    const other = await stack.createWorkspace('other');
    expect((await api(stack, other.apiKey)(`/v1/videos/${created.id}`, { method: 'DELETE' })).status).toBe(404);

    expect(await client.videos.delete(done.id)).toEqual({ id: done.id, object: 'video.deleted', deleted: true });
    expect((await call(`/v1/videos/${created.id}`)).status).toBe(404);
    expect((await call(`/v1/videos/${created.id}/content`)).status).toBe(404);
    expect((await call('/v1/videos')).json.data.map((v: { id: string }) => v.id)).not.toContain(created.id);
    // A link minted before the delete no longer finds the file.
    expect((await fetch(link)).status).toBe(404);
    expect(stored.kind === 'video' && (await stack.blobs.size(stored.output!))).toBeUndefined();
    expect(await stack.redis.zscore(stack.keys.jobExpiry(shardOfId(created.id)), created.id)).toBeNull();
    expect((await stack.jobs.ledger(workspaceId)).map((e) => e.job_id)).toContain(created.id);

    const again = await call(`/v1/videos/${created.id}`, { method: 'DELETE' });
    expect(again.status).toBe(404);
    expect(again.json.error).toMatchObject({ type: 'not_found_error' });
  });

  it('answers deletes of one video sent at once with one deletion; the others find it gone', async () => {
    const created = await client.videos.create({ model: 'motion-1' as never, prompt: 'a kite at noon', seconds: '1' as never, size: '640x360' as never });
    await eventually(async () => ((await client.videos.retrieve(created.id)).status === 'completed' ? true : undefined), 30_000, 'the video to complete');
    const answers = await Promise.all(Array.from({ length: 6 }, () => call(`/v1/videos/${created.id}`, { method: 'DELETE' })));
    expect(answers.map((res) => res.status).sort()).toEqual([200, 404, 404, 404, 404, 404]);
    for (const res of answers.filter((r) => r.status === 404)) expect(res.json.error).toMatchObject({ type: 'not_found_error', code: 'not_found' });
  });

  it("lets the SDK's auto-pagination delete every video it pages through", async () => {
    // Each page's cursor is the last video of the page before, which the loop has just deleted.
    const ws = await stack.createWorkspace('cleaner');
    const sdk = new OpenAI({ apiKey: ws.apiKey, baseURL: `${stack.baseUrl}/v1`, maxRetries: 0 });
    const made: string[] = [];
    for (let i = 0; i < 5; i++) {
      made.push((await sdk.videos.create({ model: 'motion-1' as never, prompt: `tide ${i}`, seconds: '1' as never, size: '640x360' as never })).id);
    }
    for (const id of made) {
      await eventually(async () => ((await sdk.videos.retrieve(id)).status === 'completed' ? true : undefined), 60_000, 'the videos to complete');
    }
    const deleted: string[] = [];
    for await (const video of sdk.videos.list({ limit: 2 })) {
      await sdk.videos.delete(video.id);
      deleted.push(video.id);
    }
    expect(deleted).toEqual([...made].reverse());
    expect((await sdk.videos.list()).data).toEqual([]);

    // The place of a deleted video is remembered for a while, and only by its own list.
    const images = await api(stack, ws.apiKey)(`/v1/images?after=${made[0]}`);
    expect([images.status, images.json.error?.param]).toEqual([400, 'after']);
    const removed = stack.keys.removedFrom(stack.keys.workspaceVideos(ws.workspaceId));
    expect(await stack.redis.zcard(removed)).toBe(5);
    expect(await stack.redis.pttl(removed)).toBeGreaterThan(50 * 60_000);
  });
});
