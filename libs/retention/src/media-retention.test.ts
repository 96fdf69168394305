import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { createLogger } from '@media/common';
import { callbackIdFor, type CallbackRecord, type ImageJob, type JobRecord, shardOfId, type VideoJob } from '@media/domain';
import { FileBlobStore, type BlobStore } from '@media/blob-store';
import { CallbackRepository } from '@media/callbacks';
import { IdempotencyRepository, idempotencyKeyHash, JobRepository } from '@media/jobs';
import { S3TestServer } from '../../blob-store/src/test-support/s3-server';
import { MediaRetention, removeJob } from './media-retention';
import { allKeys } from '../../../test/support/store-keys';

// Real Redis, real blob stores (a directory, and an S3 server on loopback over HTTP), a real BullMQ
// queue for the job-finished events. The clock is the test's, so "a week later" is one assignment.

const redis = new Redis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379', { maxRetriesPerRequest: null });
const logger = createLogger('test', 'error');
const HOUR = 3_600_000;

let s3: S3TestServer;
let dir: string;

beforeAll(async () => {
  s3 = await S3TestServer.start();
  dir = await mkdtemp(join(tmpdir(), 'retention-test-'));
});

afterAll(async () => {
  await s3?.destroy();
  await rm(dir, { recursive: true, force: true });
  redis.disconnect();
});

describe.each(['fs', 's3'] as const)('retention on the %s blob store', (kind) => {
  const prefix = `test-${randomBytes(6).toString('hex')}`;
  const keys = allKeys(prefix);
  const jobs = new JobRepository(redis, keys);
  const callbacks = new CallbackRepository(redis, keys);
  const idempotency = new IdempotencyRepository(redis, keys, 86_400);
  const ws = `ws_${randomBytes(4).toString('hex')}`;
  let blobs: BlobStore;
  let clock = Date.now();
  let retention: MediaRetention;

  beforeAll(async () => {
    blobs = kind === 'fs' ? new FileBlobStore(await mkdtemp(join(dir, 'fs-'))) : s3.store();
    retention = new MediaRetention({ jobs, callbacks, blobs, logger, callbackRetentionMs: 2 * HOUR, linkTtlMs: 24 * HOUR, now: () => clock });
  });

  afterAll(async () => {
    await blobs.close();
    const found = await redis.keys(`${prefix}:*`);
    if (found.length > 0) await redis.del(...found);
  });

  /** A finished job with its blobs, as the generator leaves it; `expires` is when retention ends. */
  async function finishedImage(id: string, opts: { expires: number; callback?: boolean; key?: string }): Promise<ImageJob> {
    const job: ImageJob = {
      id,
      kind: 'image',
      operation: 'edit',
      workspace_id: ws,
      model: 'pixel-1',
      prompt: 'p',
      seed: 1,
      status: 'in_progress',
      created_ms: clock - HOUR,
      finished_ms: null,
      cost: null,
      error: null,
      callback_url: opts.callback ? 'https://h.test/hook' : null,
      request_id: id,
      n: 2,
      size: '256x256',
      output_format: 'png',
      response_format: 'url',
      inputs: [`${ws}/${id}/input-0.png`],
      mask: null,
      outputs: [],
    };
    if (opts.key) {
      const entry = idempotency.entry(ws, opts.key, 'fp', id);
      job.idempotency_key_hash = idempotencyKeyHash(opts.key);
      expect(await jobs.admit(job, { maxWaitingDefault: 100, idempotency: entry })).toMatchObject({ outcome: 'stored' });
    } else {
      await jobs.create(job);
    }
    const outputs = [`${ws}/${id}/0.png`, `${ws}/${id}/1.png`];
    // A leftover of a failed attempt, named in no record, must go too.
    for (const key of [...job.inputs, ...outputs, `${ws}/${id}/2.png`]) await blobs.put(key, Buffer.from(key));
    const done = { ...job, status: 'completed' as const, finished_ms: clock, expires_ms: opts.expires, cost: 0.02, outputs };
    await jobs.finish(done, { job_id: id, workspace_id: ws, model: 'pixel-1', amount: 0.02, created_ms: clock });
    return done;
  }

  async function callbackFor(job: JobRecord, state: CallbackRecord['state']): Promise<CallbackRecord> {
    const { callback } = await callbacks.create({
      id: callbackIdFor(job.id, 'image.completed'),
      workspace_id: ws,
      job_id: job.id,
      type: 'image.completed',
      url: 'https://h.test/hook',
      event_ms: clock,
      created_ms: clock,
      state: 'pending',
      attempt_count: 0,
      ladder_attempt: 0,
      next_attempt_ms: clock,
      delivered_ms: null,
      last_attempt_ms: null,
    });
    if (state === 'pending') return callback;
    const attempt = {
      ladder_attempt: 1,
      trigger: 'scheduled' as const,
      sent_ms: clock,
      duration_ms: 5,
      status: state === 'delivered' ? 200 : 500,
      error: state === 'delivered' ? null : ('http_error' as const),
      error_detail: null,
      address: '203.0.113.9',
      excerpt: '',
    };
    // One failed attempt with no next one ends it as failed, as attempt 6 does.
    return (await callbacks.recordAttempt(callback, 'auto.1', attempt, null, clock)).callback;
  }

  const blobCount = async (job: JobRecord) =>
    (await Promise.all([...(job.kind === 'image' ? [...job.inputs, ...job.outputs] : [])].map((k) => blobs.size(k)))).filter((s) => s !== undefined).length;
  const listed = async (id: string) => (await redis.zscore(keys.workspaceImages(ws), id)) !== null;

  it('keeps a job until it expires, then removes its media, record, listing, expiry entry and key claim, and keeps its charge', async () => {
    const job = await finishedImage(`req_${kind}a`, { expires: clock + 7 * 24 * HOUR, key: `key-${kind}` });
    const claim = keys.idempotency(ws, job.idempotency_key_hash!);
    expect(await redis.exists(claim)).toBe(1);

    expect(await retention.sweep()).toMatchObject({ jobsRemoved: 0, complete: true });
    expect(await jobs.get(job.id)).toBeDefined();
    expect(await blobCount(job)).toBe(3);

    clock += 7 * 24 * HOUR;
    expect(await retention.sweep()).toMatchObject({ jobsRemoved: 1, blobsRemoved: 4, complete: true });
    expect(await jobs.get(job.id)).toBeUndefined();
    expect(await blobCount(job)).toBe(0);
    expect(await blobs.size(`${ws}/${job.id}/2.png`)).toBeUndefined();
    expect(await listed(job.id)).toBe(false);
    expect(await redis.zscore(keys.jobExpiry(shardOfId(job.id)), job.id)).toBeNull();
    expect(await redis.exists(claim)).toBe(0);
    expect((await jobs.ledger(ws)).map((e) => e.job_id)).toContain(job.id);
    // Again: nothing to do, nothing fails.
    expect(await retention.sweep()).toMatchObject({ jobsRemoved: 0, blobsRemoved: 0, complete: true });
  });

  it('holds a due job while its callback is not yet made or pending, moving its expires_at too, and removes it with its callback after', async () => {
    const job = await finishedImage(`req_${kind}b`, { expires: clock + HOUR, callback: true });
    // Finished with a callback_url: awaiting its callback until the dispatcher creates it.
    expect(await jobs.awaitsCallback(job.id)).toBe(true);
    clock += HOUR;
    expect(await retention.sweep()).toMatchObject({ jobsRemoved: 0, jobsHeld: 1 });
    // Held for the links of the attempts to come (their TTL) and an hour, in the record and the index alike.
    const heldUntil = clock + 25 * HOUR;
    expect(Number(await redis.zscore(keys.jobExpiry(shardOfId(job.id)), job.id))).toBe(heldUntil);
    expect((await jobs.get(job.id))?.expires_ms).toBe(heldUntil);

    // The dispatcher handled the event: the callback is on its ladder.
    const callback = await callbackFor(job, 'pending');
    expect(await jobs.awaitsCallback(job.id)).toBe(false);
    clock = heldUntil;
    expect(await retention.sweep()).toMatchObject({ jobsRemoved: 0, jobsHeld: 1 });
    expect(await blobCount(job)).toBe(3);

    // Delivered: the job goes at the next look, and its callback with it (it could not be retried).
    await callbacks.recordAttempt(
      callback,
      'auto.1',
      {
        ladder_attempt: 1,
        trigger: 'scheduled',
        sent_ms: clock,
        duration_ms: 3,
        status: 204,
        error: null,
        error_detail: null,
        address: '203.0.113.9',
        excerpt: '',
      },
      null,
      clock,
    );
    clock += 25 * HOUR;
    expect(await retention.sweep()).toMatchObject({ jobsRemoved: 1, callbacksRemoved: 1 });
    expect(await jobs.get(job.id)).toBeUndefined();
    expect(await callbacks.get(callback.id)).toBeUndefined();
    for (const index of [keys.workspaceCallbacks(ws), keys.workspaceCallbacksInState(ws, 'delivered'), keys.endedCallbacks(shardOfId(callback.id))]) {
      expect(await redis.zscore(index, callback.id)).toBeNull();
    }
  });

  it('goes on past an item that fails, and looks at that one again later', async () => {
    const broken = await finishedImage(`req_${kind}g`, { expires: clock + 1 });
    const fine = await finishedImage(`req_${kind}h`, { expires: clock + 1 });
    const reported: unknown[] = [];
    const failing = new MediaRetention({
      jobs,
      callbacks,
      logger,
      callbackRetentionMs: 2 * HOUR,
      linkTtlMs: 24 * HOUR,
      now: () => clock,
      metrics: { swept: (counts) => reported.push(counts) },
      blobs: { removeAll: (folder) => (folder.endsWith(broken.id) ? Promise.reject(new Error('AccessDenied')) : blobs.removeAll(folder)) },
    });
    clock += 2;
    expect(await failing.due()).toEqual({ jobs: 2, callbacks: 0 });
    expect(await failing.sweep()).toMatchObject({ jobsRemoved: 1, errors: 1, complete: true });
    expect(reported).toEqual([expect.objectContaining({ jobsRemoved: 1, blobsRemoved: 4, errors: 1 })]);
    // Moved on an hour: not due, so not counted as behind.
    expect(await failing.due()).toEqual({ jobs: 0, callbacks: 0 });
    expect(await jobs.get(fine.id)).toBeUndefined();
    expect(await jobs.get(broken.id)).toBeDefined();
    expect(Number(await redis.zscore(keys.jobExpiry(shardOfId(broken.id)), broken.id))).toBe(clock + HOUR);
    clock += HOUR;
    expect(await retention.sweep()).toMatchObject({ jobsRemoved: 1, errors: 0 });
  });

  it('leaves a callback whose record cannot be read, and looks at it again a day later', async () => {
    const id = 'msg_corrupt1';
    await redis.set(keys.callback(id), '{not json');
    await redis.zadd(keys.endedCallbacks(shardOfId(id)), clock - 3 * HOUR, id);
    expect(await retention.sweep()).toMatchObject({ callbacksRemoved: 0, errors: 1, complete: true });
    expect(await redis.get(keys.callback(id))).toBe('{not json');
    // Due again a day from now, not at every sweep in between.
    expect(Number(await redis.zscore(keys.endedCallbacks(shardOfId(id)), id))).toBe(clock + 24 * HOUR - 2 * HOUR);
    expect(await retention.sweep()).toMatchObject({ errors: 0 });
    await redis.del(keys.callback(id));
    await redis.zrem(keys.endedCallbacks(shardOfId(id)), id);
  });

  it('removes an ended callback with its attempts and every index entry only after its retention, counted from its last attempt', async () => {
    const job = await finishedImage(`req_${kind}c`, { expires: clock + 100 * HOUR, callback: true });
    const failed = await callbackFor(job, 'failed');
    const indexes = [keys.workspaceCallbacks(ws), keys.workspaceCallbacksOfType(ws, 'image.completed'), keys.workspaceCallbacksInState(ws, 'failed')];
    for (const index of indexes) expect(await redis.zscore(index, failed.id)).not.toBeNull();
    expect(await redis.exists(keys.callbackAttempts(failed.id))).toBe(1);

    clock += HOUR;
    // Someone retried it by hand an hour later: its retention starts again from then.
    await callbacks.recordAttempt(
      failed,
      'manual.1',
      {
        ladder_attempt: null,
        trigger: 'manual',
        sent_ms: clock,
        duration_ms: 3,
        status: 500,
        error: 'http_error',
        error_detail: null,
        address: '203.0.113.9',
        excerpt: '',
      },
      null,
      clock,
    );
    clock += HOUR + 1;
    expect(await retention.sweep()).toMatchObject({ callbacksRemoved: 0 });
    clock += HOUR;
    expect(await retention.sweep()).toMatchObject({ callbacksRemoved: 1 });
    expect(await callbacks.get(failed.id)).toBeUndefined();
    expect(await redis.exists(keys.callbackAttempts(failed.id))).toBe(0);
    for (const index of [...indexes, keys.endedCallbacks(shardOfId(failed.id))]) expect(await redis.zscore(index, failed.id)).toBeNull();
  });

  it('never lists a pending callback as ended, and sweeps a backlog larger than one batch', async () => {
    const pending = await callbackFor(await finishedImage(`req_${kind}d`, { expires: clock + 1_000 * HOUR, callback: true }), 'pending');
    expect(await redis.zscore(keys.endedCallbacks(shardOfId(pending.id)), pending.id)).toBeNull();
    // Batches of 10 here: 23 jobs are three of them (on S3 every job's media is four objects).
    const batched = new MediaRetention({
      jobs,
      callbacks,
      blobs,
      logger,
      callbackRetentionMs: 2 * HOUR,
      linkTtlMs: 24 * HOUR,
      now: () => clock,
      batchSize: 10,
    });
    const many = await Promise.all(Array.from({ length: 23 }, (_, i) => finishedImage(`req_${kind}e${i}`, { expires: clock + 1 })));
    clock += 2;
    const report = await batched.sweep();
    expect(report).toMatchObject({ jobsRemoved: 23, blobsRemoved: 23 * 4, complete: true });
    expect(await jobs.getMany(many.map((j) => j.id))).toEqual([]);
  });

  it("removes an edit's uploads whose gateway died before storing the job, and frees its place; keeps a stored job's", async () => {
    const lost = `req_${kind}lost`;
    await jobs.uploadsStarting({ id: lost, workspace_id: ws }, clock - 31 * 60_000);
    await redis.sadd(keys.workspaceUnfinished(ws), lost);
    for (const key of [`${ws}/${lost}/input-0.png`, `${ws}/${lost}/input-1.png`]) await blobs.put(key, Buffer.from(key));
    // One still being stored (a slow upload) and one whose job was stored: neither is touched.
    const slow = `req_${kind}slow`;
    await jobs.uploadsStarting({ id: slow, workspace_id: ws }, clock - 60_000);
    await blobs.put(`${ws}/${slow}/input-0.png`, Buffer.from('x'));
    const kept = await finishedImage(`req_${kind}kept`, { expires: clock + 1_000 * HOUR });
    expect(await redis.zscore(keys.uploading(shardOfId(kept.id)), `${ws}/${kept.id}`)).toBeNull();
    await jobs.uploadsStarting(kept, clock - 31 * 60_000); // a note that outlived its job's storing

    const report = await retention.sweep();
    expect(report).toMatchObject({ abandonedUploadsRemoved: 1, complete: true });
    expect(await blobs.removeAll(`${ws}/${lost}`)).toBe(0);
    expect(await redis.sismember(keys.workspaceUnfinished(ws), lost)).toBe(0);
    expect(await redis.zrange(keys.uploading(shardOfId(lost)), 0, -1)).toEqual([`${ws}/${slow}`]);
    expect(await blobs.removeAll(`${ws}/${slow}`)).toBe(1);
    expect((await jobs.get(kept.id))?.status).toBe('completed');
    expect(await blobs.removeAll(`${ws}/${kept.id}`)).toBeGreaterThan(0);
  });

  it('removes a video at once on request (DELETE), and a repeat after a crash finishes the job', async () => {
    const video: VideoJob = {
      id: `video_${kind}f`,
      kind: 'video',
      workspace_id: ws,
      model: 'motion-1',
      prompt: 'p',
      seed: 1,
      status: 'completed',
      created_ms: clock,
      finished_ms: clock,
      expires_ms: clock + 1_000 * HOUR,
      cost: 0.4,
      error: null,
      callback_url: null,
      request_id: 'req_v',
      seconds: 4,
      size: '1280x720',
      generate_audio: false,
      progress: 100,
      output: `${ws}/video_${kind}f/video.mp4`,
    };
    await jobs.create({ ...video, status: 'in_progress' });
    await jobs.finish(video, null);
    await blobs.put(video.output!, Buffer.from('mp4'));
    // The media went, then the process died before the records did.
    expect(await blobs.removeAll(`${ws}/${video.id}`)).toBe(1);
    expect(await jobs.get(video.id)).toBeDefined();
    expect(await removeJob({ jobs, callbacks, blobs }, video)).toEqual({ blobs: 0, callbacks: 0, record: true });
    expect(await jobs.get(video.id)).toBeUndefined();
    expect(await redis.zscore(keys.workspaceVideos(ws), video.id)).toBeNull();
    expect(await redis.zscore(keys.jobExpiry(shardOfId(video.id)), video.id)).toBeNull();
  });
});
