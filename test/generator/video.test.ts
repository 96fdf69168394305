import { api, BLOB_STORES, type TestWorkspace } from '../support/stack';
import {
  chargesFor,
  decodesCleanly,
  expectedVideoCost,
  finishedEvent,
  getBytes,
  isNonDecreasing,
  probe,
  queueJobsFor,
  watchVideo,
  type Call,
  startGeneratorStack,
  type GeneratorStack,
} from './helpers';

// Video generation end to end through the real gateway and generator: the created object, progress as a
// client polls it, the playable content, the charge and the durable job-finished event; on either blob store.
describe.each(BLOB_STORES)('generator: videos (%s blob store)', (blobStore) => {
  let t: GeneratorStack;

  beforeAll(async () => {
    t = await startGeneratorStack('videos', {}, { blobStore });
  });

  afterAll(async () => {
    await t?.close();
  });

  it('makes a 2 s 640x360 video with audio: queued object, progress to 100, playable h264/aac content, catalog cost, one charge, one event', async () => {
    const created = await t.call('/v1/videos', {
      method: 'POST',
      json: { model: 'motion-1', prompt: 'a paper boat on a pond', seconds: 2, size: '640x360', generate_audio: true },
    });
    expect(created.status).toBe(200);
    expect(created.json).toMatchObject({
      object: 'video',
      model: 'motion-1',
      status: 'queued',
      progress: 0,
      seconds: 2,
      size: '640x360',
      resolution: '360p',
      aspect_ratio: '16:9',
      generate_audio: true,
      completed_at: null,
      url: null,
      cost: null,
      error: null,
    });
    const id: string = created.json.id;
    expect(id).toMatch(/^video_/);

    const { video, progress } = await watchVideo(t.call, id);
    expect(video.status).toBe('completed');
    expect(progress[0]).toBeGreaterThanOrEqual(0);
    expect(isNonDecreasing(progress)).toBe(true);
    expect(progress.at(-1)).toBe(100);
    expect(video.error).toBeNull();
    expect(typeof video.completed_at).toBe('number');
    expect(video.url).toEqual(expect.stringContaining(t.stack.baseUrl));
    expect(video.cost).toBeCloseTo(expectedVideoCost(2, true), 9);
    expect(video.cost).toBeCloseTo(0.24, 9);

    const content = await getBytes(t.stack, t.ws.apiKey, `/v1/videos/${id}/content`);
    expect(content.status).toBe(200);
    expect(content.headers.get('content-type')).toBe('video/mp4');
    const info = await probe(content.bytes);
    const videoStream = info.streams.find((s) => s.codec_type === 'video');
    const audioStream = info.streams.find((s) => s.codec_type === 'audio');
    expect(videoStream).toMatchObject({ codec_name: 'h264', width: 640, height: 360 });
    expect(audioStream).toMatchObject({ codec_name: 'aac' });
    expect(Number(info.format.duration)).toBeGreaterThan(1.8);
    expect(Number(info.format.duration)).toBeLessThan(2.3);
    expect(await decodesCleanly(content.bytes)).toBe('');

    // The signed link serves the same bytes without an API key.
    const viaLink = await fetch(video.url);
    expect(viaLink.status).toBe(200);
    expect(Buffer.from(await viaLink.arrayBuffer()).equals(content.bytes)).toBe(true);

    const charges = await chargesFor(t.stack, t.ws.workspaceId, id);
    expect(charges).toHaveLength(1);
    expect(charges[0]).toMatchObject({ job_id: id, workspace_id: t.ws.workspaceId, model: 'motion-1' });
    expect(charges[0].amount).toBeCloseTo(video.cost, 9);

    const event = await finishedEvent(t.events, id);
    expect(event.name).toBe('job-finished');
    expect(event.data).toEqual({ jobId: id, workspaceId: t.ws.workspaceId });
    expect(await queueJobsFor(t.events, id)).toHaveLength(1);
  });

  it('reports intermediate progress for a 4 s 1280x720 video, never going backwards', async () => {
    const created = await t.call('/v1/videos', {
      method: 'POST',
      // A fixed seed keeps the encode long enough (about 2 s on one core) to be seen in motion.
      json: { model: 'motion-1', prompt: 'a slow paper boat', seed: 7, seconds: 4, size: '1280x720', generate_audio: true },
    });
    expect(created.status).toBe(200);
    expect(created.json.progress).toBe(0);
    const id: string = created.json.id;

    const { video, progress, statuses } = await watchVideo(t.call, id);
    expect(video.status).toBe('completed');
    expect(isNonDecreasing(progress)).toBe(true);
    expect(progress.at(-1)).toBe(100);
    expect(progress.some((p) => p > 0 && p < 100)).toBe(true);
    expect(statuses).toContain('in_progress');
    expect(statuses.indexOf('in_progress')).toBeLessThan(statuses.indexOf('completed'));
    expect(video.cost).toBeCloseTo(expectedVideoCost(4, true), 9);
    expect(await chargesFor(t.stack, t.ws.workspaceId, id)).toHaveLength(1);
  });

  describe('Idempotency-Key', () => {
    let other: TestWorkspace;
    let call2: Call;

    beforeAll(async () => {
      other = await t.stack.createWorkspace('idempotency');
      call2 = api(t.stack, other.apiKey);
    });

    const body = { model: 'motion-1', prompt: 'one boat only', seconds: 1, size: '640x360' };
    const post = (c: Call, key: string, json: object = body) => c('/v1/videos', { method: 'POST', json, headers: { 'idempotency-key': key } });

    it('returns the same video for the same key, with one job and one charge', async () => {
      const first = await post(call2, 'key-sequential');
      expect(first.status).toBe(200);
      const second = await post(call2, 'key-sequential');
      expect(second.status).toBe(200);
      expect(second.json.id).toBe(first.json.id);
      expect(second.headers.get('idempotent-replayed')).toBe('true');
      const id: string = first.json.id;

      const { video } = await watchVideo(call2, id);
      expect(video.status).toBe('completed');
      // A replay after completion still answers with the first (now finished) job and starts nothing.
      const third = await post(call2, 'key-sequential');
      expect(third.status).toBe(200);
      expect(third.json).toMatchObject({ id, status: 'completed' });

      // Two requests racing with one fresh key also get one job.
      const [a, b] = await Promise.all([post(call2, 'key-concurrent'), post(call2, 'key-concurrent')]);
      expect([a.status, b.status]).toEqual([200, 200]);
      expect(a.json.id).toBe(b.json.id);
      expect((await watchVideo(call2, a.json.id)).video.status).toBe('completed');

      const list = await call2('/v1/videos?limit=100');
      expect(list.json.data.map((v: { id: string }) => v.id).sort()).toEqual([id, a.json.id].sort());
      const ledger = await t.stack.jobs.ledger(other.workspaceId);
      expect(ledger.map((e) => e.job_id).sort()).toEqual([id, a.json.id].sort());
      expect(await queueJobsFor(t.generation, id)).toHaveLength(1);
      expect(await queueJobsFor(t.generation, a.json.id)).toHaveLength(1);
    });

    it('rejects the same key with a different body with 409 idempotency_key_reused and creates nothing', async () => {
      const first = await post(call2, 'key-reused');
      expect(first.status).toBe(200);
      const before = (await call2('/v1/videos?limit=100')).json.data.length;

      const reused = await post(call2, 'key-reused', { ...body, prompt: 'a different boat' });
      expect(reused.status).toBe(409);
      expect(reused.json.error).toMatchObject({ code: 'idempotency_key_reused' });
      expect((await call2('/v1/videos?limit=100')).json.data).toHaveLength(before);

      // Keys belong to a workspace: another workspace may use the same key for its own video.
      const elsewhere = await post(t.call, 'key-reused');
      expect(elsewhere.status).toBe(200);
      expect(elsewhere.json.id).not.toBe(first.json.id);
      await watchVideo(t.call, elsewhere.json.id);
      await watchVideo(call2, first.json.id);
    });
  });
});
