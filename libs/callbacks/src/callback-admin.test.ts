import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import type { JobQueue } from '@media/common';
import { CallbackRepository, StoreKeys, type CallbackRecord } from '@media/storage';
import { CallbackAdmin, RECOVERY_ATTEMPTS_PER_SECOND } from './callback-admin';

const redis = new Redis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379');
const keys = new StoreKeys(`test-${randomBytes(6).toString('hex')}`);
const callbacks = new CallbackRepository(redis, keys);

afterAll(async () => {
  const found = (await Promise.all(keys.patterns.map((pattern) => redis.keys(pattern)))).flat();
  if (found.length > 0) await redis.del(...found);
  redis.disconnect();
});

/** The deliveries queue as the admin uses it: what it was asked to queue. */
function fakeQueue() {
  const added: { messageId: string; jobId: string; delay: number }[] = [];
  const queue: Pick<JobQueue<'callback-deliveries'>, 'add' | 'addBulk'> = {
    add: async () => undefined,
    addBulk: async (jobs) => {
      for (const job of jobs)
        added.push({ messageId: (job.payload as { messageId: string }).messageId, jobId: String(job.opts?.jobId), delay: Number(job.opts?.delay) });
    },
  };
  return { added, ...queue };
}

async function failedCallback(ws: string, url: string, createdMs: number, type: CallbackRecord['type'] = 'image.completed'): Promise<CallbackRecord> {
  const id = `msg_${randomBytes(8).toString('hex')}`;
  const { callback } = await callbacks.create({
    id,
    workspace_id: ws,
    job_id: `req_${id}`,
    type,
    url,
    event_ms: createdMs,
    created_ms: createdMs,
    state: 'pending',
    attempt_count: 0,
    ladder_attempt: 0,
    next_attempt_ms: null,
    delivered_ms: null,
    last_attempt_ms: null,
  });
  return (await callbacks.giveUp(callback, createdMs + 1))!;
}

describe('CallbackAdmin recovery to one destination', () => {
  it('retries only the failed callbacks sent to that origin, whatever their path or query, and counts them the same before', async () => {
    const ws = `ws_${randomBytes(6).toString('hex')}`;
    const now = Date.now();
    const down = [
      await failedCallback(ws, 'https://down.example.test/hooks?token=a', now - 3_000),
      await failedCallback(ws, 'https://down.example.test:443/other', now - 2_000),
    ];
    await failedCallback(ws, 'https://up.example.test/hooks', now - 2_500);
    await failedCallback(ws, 'https://down.example.test:8443/hooks', now - 1_500);
    await failedCallback(`${ws}_other`, 'https://down.example.test/hooks', now - 1_000);

    const queue = fakeQueue();
    const admin = new CallbackAdmin({ callbacks, deliveries: queue, now: () => now });
    const window = { sinceMs: 0, origin: 'https://down.example.test:443' };
    expect(await admin.previewRecovery(ws, window)).toEqual({
      sinceMs: 0,
      untilMs: now,
      origin: 'https://down.example.test:443',
      count: 2,
      ratePerSecond: RECOVERY_ATTEMPTS_PER_SECOND,
    });
    expect(queue.added).toEqual([]);

    const recovery = await admin.recover(ws, window);
    expect(recovery).toMatchObject({ origin: 'https://down.example.test:443', count: 2 });
    expect(queue.added.map((a) => a.messageId)).toEqual(down.map((cb) => cb.id));
    // Oldest first, at the recovery's pace.
    expect(queue.added[1]!.delay - queue.added[0]!.delay).toBe(1000 / RECOVERY_ATTEMPTS_PER_SECOND);

    // Without an origin: every failed callback of the workspace.
    expect((await admin.previewRecovery(ws, { sinceMs: 0 })).count).toBe(4);
  });
});

describe('CallbackAdmin recovery of one kind of job', () => {
  it('retries only the failed callbacks of that kind, within the window and to the destination when given', async () => {
    const ws = `ws_${randomBytes(6).toString('hex')}`;
    const now = Date.now();
    const videos = [
      await failedCallback(ws, 'https://down.example.test/hooks', now - 3_000, 'video.completed'),
      await failedCallback(ws, 'https://down.example.test/hooks', now - 2_000, 'video.failed'),
    ];
    await failedCallback(ws, 'https://down.example.test/hooks', now - 2_500, 'image.completed');
    await failedCallback(ws, 'https://up.example.test/hooks', now - 1_000, 'video.completed');

    const queue = fakeQueue();
    const admin = new CallbackAdmin({ callbacks, deliveries: queue, now: () => now });
    expect((await admin.previewRecovery(ws, { sinceMs: 0, kind: 'video' })).count).toBe(3);
    expect((await admin.previewRecovery(ws, { sinceMs: 0, kind: 'image' })).count).toBe(1);
    expect((await admin.previewRecovery(ws, { sinceMs: now - 2_500, kind: 'video', origin: 'https://down.example.test:443' })).count).toBe(1);
    const recovery = await admin.recover(ws, { sinceMs: 0, kind: 'video', origin: 'https://down.example.test:443' });
    expect(recovery.count).toBe(2);
    expect(queue.added.map((a) => a.messageId)).toEqual(videos.map((cb) => cb.id));
  });
});
