import type { JobRecord, LedgerEntry } from '@media/domain';
import { eventually } from '../support/stack';
import {
  chargesFor,
  decodesCleanly,
  expectedVideoCost,
  finishedEvent,
  getBytes,
  isNonDecreasing,
  logged,
  loggedOnceThere,
  probe,
  queueJobsFor,
  watchVideo,
  startEncodingVideo,
  startGeneratorStack,
  type GeneratorStack,
} from './helpers';

// A generator that dies at any point must leave every job finished exactly once: one completion, one
// charge, one job-finished event. JOB_LOCK_MS=3000 makes BullMQ hand a dead worker's job on after ~3 s.
describe('generator: crash safety', () => {
  let t: GeneratorStack;

  beforeAll(async () => {
    t = await startGeneratorStack('crash');
  });

  afterAll(async () => {
    await t?.close();
  });

  /** Waits until the BullMQ t.generation job with this queue id has completed (not merely ended). */
  const generationJobCompleted = (queueJobId: string) =>
    eventually(
      async () => {
        const state = await t.generation.getJobState(queueJobId);
        if (state === 'failed') throw new Error(`t.generation job ${queueJobId} failed`);
        return state === 'completed' ? state : undefined;
      },
      15_000,
      `t.generation job ${queueJobId} to complete`,
    );

  it('finishes a video exactly once after the generator is SIGKILLed mid-encode', async () => {
    // Fixed seed: an encode of about 3 s on one core, so there is time to kill it half way.
    const { id, partial } = await startEncodingVideo(t, 5, 8);
    const first = t.stack.service('generator');
    await first.kill('SIGKILL');
    const atKill = await t.stack.jobs.get(id);
    // The crash must really have interrupted the work, or this test proves nothing.
    expect(atKill).toMatchObject({ status: 'in_progress', cost: null });
    expect(await chargesFor(t.stack, t.ws.workspaceId, id)).toEqual([]);

    const second = await t.stack.startService('generator');
    const { video, progress } = await watchVideo(t.call, id, 30_000);
    expect(video.status).toBe('completed');
    expect(progress[0]).toBeGreaterThanOrEqual(partial.progress);
    expect(isNonDecreasing(progress)).toBe(true);
    expect(progress.at(-1)).toBe(100);
    expect(video.cost).toBeCloseTo(expectedVideoCost(8, true), 9);

    const charges = await chargesFor(t.stack, t.ws.workspaceId, id);
    expect(charges).toHaveLength(1);
    expect(charges[0].amount).toBeCloseTo(video.cost, 9);
    expect(await loggedOnceThere([first.lines, second.lines], 'job completed', id)).toBe(1);

    const content = await getBytes(t.stack, t.ws.apiKey, `/v1/videos/${id}/content`);
    expect(content.status).toBe(200);
    const info = await probe(content.bytes);
    expect(info.streams.find((s) => s.codec_type === 'video')).toMatchObject({ codec_name: 'h264', width: 1280, height: 720 });
    expect(info.streams.find((s) => s.codec_type === 'audio')).toMatchObject({ codec_name: 'aac' });
    expect(Number(info.format.duration)).toBeGreaterThan(7.8);
    expect(Number(info.format.duration)).toBeLessThan(8.3);
    expect(await decodesCleanly(content.bytes)).toBe('');

    expect((await finishedEvent(t.events, id)).data).toEqual({ jobId: id, workspaceId: t.ws.workspaceId });
    expect(await queueJobsFor(t.events, id)).toHaveLength(1);
    await generationJobCompleted(id);
  });

  it('re-announces a job that was completed and charged by a worker that died before queueing its event, without charging again', async () => {
    // The worker "dies" before it ever saw the queued job; the test then plays its last transaction.
    await t.stack.service('generator').kill('SIGKILL');
    const created = await t.call('/v1/videos', {
      method: 'POST',
      json: { model: 'motion-1', prompt: 'a boat that was already made', seconds: 1, size: '640x360' },
    });
    expect(created.status).toBe(200);
    const id: string = created.json.id;
    const queued = (await t.stack.jobs.get(id)) as JobRecord & { kind: 'video' };
    expect(queued.status).toBe('queued');

    const output = `${t.ws.workspaceId}/${id}/video.mp4`;
    const finishedMs = Date.now() - 1_000;
    const cost = expectedVideoCost(1, false);
    const done: JobRecord = { ...queued, status: 'completed', progress: 100, output, finished_ms: finishedMs, cost, error: null };
    const charge: LedgerEntry = { job_id: id, workspace_id: t.ws.workspaceId, model: 'motion-1', amount: cost, created_ms: finishedMs };
    expect(await t.stack.jobs.finish(done, charge)).toBe(true);
    expect(await queueJobsFor(t.events, id)).toEqual([]);

    // The t.generation work runs again: the original queue job, and a re-run under a fresh BullMQ id.
    await t.generation.add('generate-video', { jobId: id }, { jobId: `rerun-${id}` });
    const restarted = await t.stack.startService('generator');

    expect((await finishedEvent(t.events, id, 10_000)).data).toEqual({ jobId: id, workspaceId: t.ws.workspaceId });
    await generationJobCompleted(id);
    await generationJobCompleted(`rerun-${id}`);
    expect(await queueJobsFor(t.events, id)).toHaveLength(1);
    expect(await chargesFor(t.stack, t.ws.workspaceId, id)).toEqual([charge]);
    expect(await t.stack.jobs.get(id)).toEqual(done);
    expect(logged(restarted.lines, 'job completed', id)).toBe(0);
  });

  it('re-queues a lost event when the t.generation job of a completed video runs again, without charging again', async () => {
    const created = await t.call('/v1/videos', {
      method: 'POST',
      json: { model: 'motion-1', prompt: 'a boat whose event went missing', seconds: 1, size: '640x360' },
    });
    const id: string = created.json.id;
    const { video } = await watchVideo(t.call, id);
    expect(video.status).toBe('completed');
    const event = await finishedEvent(t.events, id);
    const record = await t.stack.jobs.get(id);
    const charges = await chargesFor(t.stack, t.ws.workspaceId, id);
    expect(charges).toHaveLength(1);
    await generationJobCompleted(id);

    // Lose the event (nothing consumes job-events here, so it is still waiting and can be removed).
    await event.remove();
    expect(await queueJobsFor(t.events, id)).toEqual([]);

    await t.generation.add('generate-video', { jobId: id }, { jobId: `rerun-${id}` });
    expect((await finishedEvent(t.events, id, 10_000)).data).toEqual({ jobId: id, workspaceId: t.ws.workspaceId });
    await generationJobCompleted(`rerun-${id}`);
    expect(await queueJobsFor(t.events, id)).toHaveLength(1);
    expect(await chargesFor(t.stack, t.ws.workspaceId, id)).toEqual(charges);
    expect(await t.stack.jobs.get(id)).toEqual(record);
    expect(await loggedOnceThere([t.stack.service('generator').lines], 'job completed', id)).toBe(1);
  });
});
