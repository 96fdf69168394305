import type { Queue } from 'bullmq';
import { api, eventually, TestStack, type TestWorkspace } from '../support/stack';
import {
  bullQueue,
  chargesFor,
  decodesCleanly,
  expectedVideoCost,
  ffmpegChildren,
  finishedEvent,
  getBytes,
  isRunning,
  logged,
  probe,
  queueJobsFor,
  watchVideo,
  type Call,
} from './helpers';

// SIGTERM means "stop taking work, finish what is running, then exit 0" (SHUTDOWN_TIMEOUT_MS is 10 s
// in tests, far more than the encode below needs).
describe('generator: SIGTERM drain', () => {
  let stack: TestStack;
  let ws: TestWorkspace;
  let call: Call;
  let events: Queue;
  let generation: Queue;

  beforeAll(async () => {
    stack = await TestStack.start(['api-gateway', 'generator']);
    ws = await stack.createWorkspace('drain');
    call = api(stack, ws.apiKey);
    events = bullQueue(stack, 'job-events');
    generation = bullQueue(stack, 'generation');
  });

  afterAll(async () => {
    await events?.close();
    await generation?.close();
    await stack?.stop();
  });

  it('finishes the running video before exiting with code 0', async () => {
    const created = await call('/v1/videos', {
      method: 'POST',
      // Fixed seed: an encode of about 2 s on one core, reporting progress every ~0.5 s.
      json: { model: 'motion-1', prompt: 'a slow paper boat', seed: 7, seconds: 4, size: '1280x720', generate_audio: true },
    });
    expect(created.status).toBe(200);
    const id: string = created.json.id;

    await eventually(
      async () => {
        const job = await stack.jobs.get(id);
        return job?.kind === 'video' && job.progress > 0 ? job : undefined;
      },
      15_000,
      'progress > 0 in the store',
    );
    // The job must still be running when the drain begins, or this test proves nothing.
    expect((await stack.jobs.get(id))?.status).toBe('in_progress');
    const generator = stack.service('generator');
    expect(await generator.kill('SIGTERM')).toBe(0);

    // Everything is in place by the time the process is gone: no polling needed.
    const done = await stack.jobs.get(id);
    expect(done).toMatchObject({ status: 'completed', error: null, progress: 100 });
    expect(await chargesFor(stack, ws.workspaceId, id)).toHaveLength(1);
    expect(await generation.getJobState(id)).toBe('completed');
    expect((await finishedEvent(events, id, 0)).data).toEqual({ jobId: id });

    const messages = generator.lines.map((l) => l.message);
    const draining = messages.indexOf('draining');
    expect(draining).toBeGreaterThanOrEqual(0);
    expect(logged(generator.lines, 'job completed', id)).toBe(1);
    expect(messages.findIndex((m, i) => m === 'job completed' && generator.lines[i].job_id === id)).toBeGreaterThan(draining);
    expect(messages.at(-1)).toBe('stopped');

    const content = await getBytes(stack, ws.apiKey, `/v1/videos/${id}/content`);
    expect(content.status).toBe(200);
    const info = await probe(content.bytes);
    expect(info.streams.find((s) => s.codec_type === 'video')).toMatchObject({ codec_name: 'h264', width: 1280, height: 720 });
    expect(Number(info.format.duration)).toBeGreaterThan(3.8);
    expect(await decodesCleanly(content.bytes)).toBe('');
  });

  it('exits 0 at once when idle, and leaves later work queued for the next worker', async () => {
    const generator = await stack.startService('generator');
    const started = Date.now();
    expect(await generator.kill('SIGTERM')).toBe(0);
    expect(Date.now() - started).toBeLessThan(5_000);
    expect(generator.lines.map((l) => l.message)).toEqual(expect.arrayContaining(['draining', 'stopped']));

    // With the generator gone, a new video waits in the queue untouched.
    const created = await call('/v1/videos', { method: 'POST', json: { prompt: 'waits for a worker', seconds: 1, size: '640x360' } });
    expect(created.status).toBe(200);
    expect(await generation.getJobState(created.json.id)).toBe('waiting');
    expect((await stack.jobs.get(created.json.id))?.status).toBe('queued');
  });

  it('stops waiting at SHUTDOWN_TIMEOUT_MS: exits promptly, takes its encoder down, and the next generator finishes the job once', async () => {
    // Only the generators started from here on get the short drain deadline.
    stack.env = { ...stack.env, SHUTDOWN_TIMEOUT_MS: '1000' };
    const generator = await stack.startService('generator');
    const created = await call('/v1/videos', {
      method: 'POST',
      // Fixed seed: an encode of about 5 s on one core, far past the 1 s deadline.
      json: { model: 'motion-1', prompt: 'a slow paper boat', seed: 5, seconds: 12, size: '1280x720', generate_audio: true },
    });
    expect(created.status).toBe(200);
    const id: string = created.json.id;
    await eventually(
      async () => {
        const job = await stack.jobs.get(id);
        return job?.kind === 'video' && job.progress > 0 ? job : undefined;
      },
      15_000,
      'progress > 0 in the store',
    );
    expect((await stack.jobs.get(id))?.status).toBe('in_progress');
    const encoders = await ffmpegChildren(generator.pid!);
    expect(encoders.length).toBeGreaterThan(0);

    let exitCode: number | null | undefined;
    void generator.kill('SIGTERM').then((code) => (exitCode = code));
    // 1 s deadline plus closing connections; the encode itself needs several more seconds.
    await eventually(() => (exitCode !== undefined ? true : undefined), 2_500, 'the generator to exit at its 1 s drain deadline');
    expect(exitCode).toBe(0);
    expect((await stack.jobs.get(id))?.status).toBe('in_progress');
    expect(await chargesFor(stack, ws.workspaceId, id)).toEqual([]);
    // An abandoned encode must not outlive its worker, burning CPU for a result nobody will store.
    await eventually(
      async () => ((await Promise.all(encoders.map(isRunning))).some(Boolean) ? undefined : true),
      2_000,
      'the abandoned ffmpeg to stop',
    );

    // BullMQ hands the abandoned job on once its lock lapses (JOB_LOCK_MS=3000).
    const next = await stack.startService('generator');
    const { video } = await watchVideo(call, id, 30_000);
    expect(video.status).toBe('completed');
    expect(video.cost).toBeCloseTo(expectedVideoCost(12, true), 9);
    expect(await chargesFor(stack, ws.workspaceId, id)).toHaveLength(1);
    expect(logged(generator.lines, 'job completed', id) + logged(next.lines, 'job completed', id)).toBe(1);
    expect((await finishedEvent(events, id)).data).toEqual({ jobId: id });
    expect(await queueJobsFor(events, id)).toHaveLength(1);
  });
});
