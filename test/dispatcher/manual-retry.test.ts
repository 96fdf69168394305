import { jobIds } from '@media/queues';
import { eventually } from '../support/stack';
import { DispatcherHarness } from './support/harness';
import { shardOfId } from '@media/domain';

/**
 * A manual retry in the middle of the ladder. The gaps are long so that the automatic attempt 2
 * is certainly still waiting when the manual attempt is made, however loaded the machine is.
 */
let h: DispatcherHarness;

beforeAll(async () => {
  h = await DispatcherHarness.start({ WEBHOOK_RETRY_SCHEDULE: '10m,10m,10m,10m,10m' }, { inProcess: true });
  h.receiver.script('/manual-cancels', (n) => (n === 1 ? { status: 503 } : { status: 200 }));
});

afterAll(async () => {
  await h?.stop();
});

describe('manual retry mid-ladder', () => {
  it('cancels the scheduled automatic attempt when a manual retry delivers mid-ladder', async () => {
    const jobId = await h.jobs.image(h.receiver.url('/manual-cancels'));
    const messageId = await h.messageIdOf(jobId);
    await h.attempts(messageId, 1);
    const deliveries = h.queue('callback-deliveries');
    try {
      const secondId = jobIds.delivery(messageId, 2, 'scheduled');
      const schedule = h.stack.keys.callbackSchedule(shardOfId(messageId));
      await eventually(async () => ((await h.stack.redis.zscore(schedule, secondId)) !== null ? true : undefined), 20_000, 'attempt 2 scheduled');
      const pending = (await h.callbacks.get(messageId))!;
      expect(pending).toMatchObject({ state: 'pending', ladder_attempt: 1 });
      expect(pending.next_attempt_ms).toBeGreaterThan(Date.now() - 1_000);

      const service = h.callbackAdmin();
      const request = await service.retryNow(h.workspace.workspaceId, messageId);
      await eventually(() => service.findManualAttempt(messageId, request.request_id), 20_000, 'manual attempt');

      const { callback } = await h.settled(messageId, ['delivered']);
      expect(callback).toMatchObject({ state: 'delivered', attempt_count: 2, ladder_attempt: 1, next_attempt_ms: null });
      expect(await h.stack.redis.zscore(schedule, secondId)).toBeNull();
      expect(await deliveries.getJob(secondId)).toBeUndefined();
      expect(h.receiver.requestsTo('/manual-cancels')).toHaveLength(2);
    } finally {
      await deliveries.close();
    }
  });
});

describe('a manual attempt queued twice', () => {
  it('is made once: the second run of its request finds it in the log and sends nothing', async () => {
    h.receiver.script('/manual-once', () => ({ status: 503 }));
    const jobId = await h.jobs.image(h.receiver.url('/manual-once'));
    const messageId = await h.messageIdOf(jobId);
    await h.attempts(messageId, 1);
    const service = h.callbackAdmin();
    const request = await service.retryNow(h.workspace.workspaceId, messageId);
    await eventually(() => service.findManualAttempt(messageId, request.request_id), 20_000, 'manual attempt');
    expect(h.receiver.requestsTo('/manual-once')).toHaveLength(2);

    // The same request again, as a repeat that took over its Idempotency-Key's claim would queue it.
    const deliveries = h.queue('callback-deliveries');
    try {
      await deliveries.add('deliver', { messageId, attempt: 2, trigger: 'manual' }, { jobId: request.request_id });
    } finally {
      await deliveries.close();
    }
    await h.deliveriesSettled();
    expect(h.receiver.requestsTo('/manual-once')).toHaveLength(2);
    expect((await h.callbacks.get(messageId))!.attempt_count).toBe(2);
  });
});

describe('one manual request run twice at once', () => {
  it('is sent once: the run that finds the other sending looks again later and sends nothing', async () => {
    // Attempt 1 fails; the manual attempt is answered only after 1.5 s, so both runs are in flight together.
    h.receiver.script('/manual-overlap', (n) => (n === 1 ? { status: 503 } : { status: 200, afterMs: 1_500 }));
    const jobId = await h.jobs.image(h.receiver.url('/manual-overlap'));
    const messageId = await h.messageIdOf(jobId);
    await h.attempts(messageId, 1);
    const requestId = jobIds.delivery(messageId, 2, 'manual');
    const deliveries = h.queue('callback-deliveries');
    try {
      // The request as a repeat of its Idempotency-Key queues it again, and a run of the same request
      // that had been deferred twice meanwhile (the first call's), both runnable at once.
      await deliveries.addBulk([
        { name: 'deliver', data: { messageId, attempt: 2, trigger: 'manual' }, opts: { jobId: requestId } },
        { name: 'deliver', data: { messageId, attempt: 2, trigger: 'manual', deferrals: 2 }, opts: { jobId: jobIds.deferral(requestId, 2) } },
      ]);
      await eventually(() => h.callbackAdmin().findManualAttempt(messageId, requestId), 20_000, 'manual attempt');
      await h.deliveriesSettled();
    } finally {
      await deliveries.close();
    }
    expect(h.receiver.requestsTo('/manual-overlap')).toHaveLength(2);
    expect(await h.callbacks.get(messageId)).toMatchObject({ state: 'delivered', attempt_count: 2 });
    expect(await h.callbacks.attempts(messageId)).toHaveLength(2);
  });
});

describe('a manual request held by a run that died', () => {
  it('is sent once the hold lapses: the other run goes on looking until then', async () => {
    h.receiver.script('/manual-orphaned', (n) => (n === 1 ? { status: 503 } : { status: 200 }));
    const jobId = await h.jobs.image(h.receiver.url('/manual-orphaned'));
    const messageId = await h.messageIdOf(jobId);
    await h.attempts(messageId, 1);
    const requestId = jobIds.delivery(messageId, 2, 'manual');
    // A run (`.d1`) took the hold and died before sending: nothing but the hold is left of it.
    await h.stack.redis.set(h.stack.keys.manualSendHold(messageId, requestId), jobIds.deferral(requestId, 1), 'PX', 2_500);
    const queuedMs = Date.now();
    const deliveries = h.queue('callback-deliveries');
    try {
      await deliveries.add('deliver', { messageId, attempt: 2, trigger: 'manual' }, { jobId: requestId });
      const attempt = await eventually(() => h.callbackAdmin().findManualAttempt(messageId, requestId), 20_000, 'manual attempt');
      expect(attempt.sent_ms).toBeGreaterThanOrEqual(queuedMs + 2_000);
      await h.deliveriesSettled();
    } finally {
      await deliveries.close();
    }
    expect(h.receiver.requestsTo('/manual-orphaned')).toHaveLength(2);
    expect(await h.callbacks.get(messageId)).toMatchObject({ state: 'delivered', attempt_count: 2 });
  });
});
