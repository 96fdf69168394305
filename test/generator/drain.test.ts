import { eventually } from '../support/stack';
import {
  chargesFor,
  decodesCleanly,
  expectedVideoCost,
  ffmpegChildren,
  finishedEvent,
  getBytes,
  isRunning,
  logged,
  loggedOnceThere,
  probe,
  queueJobsFor,
  watchVideo,
  startEncodingVideo,
  startGeneratorStack,
  type GeneratorStack,
} from './helpers';

// SIGTERM means "stop taking work, finish what is running, then exit 0". The drain deadline here is
// far longer than the encode below needs even on a loaded machine.
describe('generator: SIGTERM drain', () => {
  let t: GeneratorStack;

  beforeAll(async () => {
    t = await startGeneratorStack('drain', { SHUTDOWN_TIMEOUT_MS: '60000' });
  });

  afterAll(async () => {
    await t?.close();
  });

  it('finishes the running video before exiting with code 0', async () => {
    // Fixed seed: an encode of about 3 s on one core, so it is still running when SIGTERM arrives.
    const { id } = await startEncodingVideo(t, 7, 6);
    // The job must still be running when the drain begins, or this test proves nothing.
    expect((await t.stack.jobs.get(id))?.status).toBe('in_progress');
    const generator = t.stack.service('generator');
    expect(await generator.kill('SIGTERM')).toBe(0);

    // Everything is in place by the time the process is gone: no polling needed.
    const done = await t.stack.jobs.get(id);
    expect(done).toMatchObject({ status: 'completed', error: null, progress: 100 });
    expect(await chargesFor(t.stack, t.ws.workspaceId, id)).toHaveLength(1);
    expect(await t.generation.getJobState(id)).toBe('completed');
    expect((await finishedEvent(t.events, id, 0)).data).toEqual({ jobId: id, workspaceId: t.ws.workspaceId });

    const messages = generator.lines.map((l) => l.message);
    const draining = messages.indexOf('draining');
    expect(draining).toBeGreaterThanOrEqual(0);
    expect(logged(generator.lines, 'job completed', id)).toBe(1);
    expect(messages.findIndex((m, i) => m === 'job completed' && generator.lines[i].job_id === id)).toBeGreaterThan(draining);
    expect(messages.at(-1)).toBe('stopped');

    const content = await getBytes(t.stack, t.ws.apiKey, `/v1/videos/${id}/content`);
    expect(content.status).toBe(200);
    const info = await probe(content.bytes);
    expect(info.streams.find((s) => s.codec_type === 'video')).toMatchObject({ codec_name: 'h264', width: 1280, height: 720 });
    expect(Number(info.format.duration)).toBeGreaterThan(5.8);
    expect(await decodesCleanly(content.bytes)).toBe('');
  });

  it('exits 0 at once when idle, and leaves later work queued for the next worker', async () => {
    const generator = await t.stack.startService('generator');
    const started = Date.now();
    expect(await generator.kill('SIGTERM')).toBe(0);
    expect(Date.now() - started).toBeLessThan(5_000);
    expect(generator.lines.map((l) => l.message)).toEqual(expect.arrayContaining(['draining', 'stopped']));

    // With the generator gone, a new video waits in the queue untouched.
    const created = await t.call('/v1/videos', { method: 'POST', json: { prompt: 'waits for a worker', seconds: 1, size: '640x360' } });
    expect(created.status).toBe(200);
    // Fair scheduling queues generation jobs with a priority: they wait in BullMQ's prioritized set.
    expect(await t.generation.getJobState(created.json.id)).toBe('prioritized');
    expect((await t.stack.jobs.get(created.json.id))?.status).toBe('queued');
  });

  it('stops waiting at SHUTDOWN_TIMEOUT_MS: exits promptly, takes its encoder down, and the next generator finishes the job once', async () => {
    // Only the generators started from here on get the short drain deadline.
    t.stack.env = { ...t.stack.env, SHUTDOWN_TIMEOUT_MS: '1000' };
    const generator = await t.stack.startService('generator');
    // An 8 s 720p video (about two seconds of encoding on two cores) whose ffmpeg is stopped
    // (SIGSTOP) as soon as it appears: the encode cannot end before the 1 s deadline however fast
    // the machine, and the next generator's encode of the same job stays short. A stopped process
    // still dies of SIGKILL, what the generator sends its encoders at the deadline, and of nothing
    // else here (it shares the Jest worker's process group, which is never orphaned).
    const created = await t.call('/v1/videos', {
      method: 'POST',
      json: { model: 'motion-1', prompt: 'a slow paper boat', seed: 5, seconds: 8, size: '1280x720', generate_audio: true },
    });
    expect(created.status).toBe(200);
    const id: string = created.json.id;
    const encoders = await eventually(
      async () => {
        const found = await ffmpegChildren(generator.pid!);
        for (const pid of found) process.kill(pid, 'SIGSTOP');
        return found.length > 0 ? found : undefined;
      },
      15_000,
      'the generator to start ffmpeg',
    );
    try {
      expect((await t.stack.jobs.get(id))?.status).toBe('in_progress');

      let exitCode: number | null | undefined;
      void generator.kill('SIGTERM').then((code) => (exitCode = code));
      // The 1 s deadline plus closing connections; the encode itself cannot go on, so without the
      // deadline it would never exit. Waited for well below the stack's own deadline (10 s), with room
      // for a busy machine.
      await eventually(() => (exitCode !== undefined ? true : undefined), 7_000, 'the generator to exit at its 1 s drain deadline');
      expect(exitCode).toBe(0);
      expect((await t.stack.jobs.get(id))?.status).toBe('in_progress');
      expect(await chargesFor(t.stack, t.ws.workspaceId, id)).toEqual([]);
      // An abandoned encode must not outlive its worker, burning CPU for a result nobody will store.
      await eventually(async () => ((await Promise.all(encoders.map(isRunning))).some(Boolean) ? undefined : true), 5_000, 'the abandoned ffmpeg to stop');
    } finally {
      // When the generator failed to take its encoder down, the stopped ffmpeg would wait for ever.
      for (const pid of encoders) if (await isRunning(pid)) process.kill(pid, 'SIGKILL');
    }

    // BullMQ hands the abandoned job on once its lock lapses (JOB_LOCK_MS=3000).
    const next = await t.stack.startService('generator');
    const { video } = await watchVideo(t.call, id, 30_000);
    expect(video.status).toBe('completed');
    expect(video.cost).toBeCloseTo(expectedVideoCost(8, true), 9);
    expect(await chargesFor(t.stack, t.ws.workspaceId, id)).toHaveLength(1);
    expect(await loggedOnceThere([generator.lines, next.lines], 'job completed', id)).toBe(1);
    expect((await finishedEvent(t.events, id)).data).toEqual({ jobId: id, workspaceId: t.ws.workspaceId });
    expect(await queueJobsFor(t.events, id)).toHaveLength(1);
  });
});
