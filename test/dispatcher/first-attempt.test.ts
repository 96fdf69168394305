import { randomBytes } from 'node:crypto';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { bullPrefix, createLogger, loadConfig } from '@media/common';
import { jobIds } from '@media/queues';
import { createAccounts } from '@media/accounts';
import { CallbackRepository, destinationOf } from '@media/callbacks';
import { JobRepository } from '@media/jobs';
import { createCallbackService, type CallbackServiceHandle } from '../../services/webhook-dispatcher/src/wiring';
import { deleteKeysUnder, REDIS_URL } from '../support/stack';
import { makeTestPki, type TestPki } from './support/pki';
import { finishedImageJob } from './support/finished-job';
import { TestReceiver } from './support/receiver';
import { shardOfId } from '@media/domain';
import { allKeys } from '../support/store-keys';

/**
 * Attempt 1 is made by the job-finished event's own handler (one queue between a job's end and its
 * first POST), with the dispatcher's classes in process and no worker on the deliveries queue, so
 * what the handler queued stays there to be looked at.
 */
const prefix = `test-${randomBytes(6).toString('hex')}`;
const redis = new Redis(REDIS_URL, { maxRetriesPerRequest: null });
const keys = allKeys(prefix);
const jobs = new JobRepository(redis, keys);
const store = new CallbackRepository(redis, keys);
const deliveries = new Queue('callback-deliveries', { connection: redis, prefix: bullPrefix(prefix, 'callback-deliveries') });
let pki: TestPki;
let receiver: TestReceiver;
let handle: CallbackServiceHandle;
let workspaceId: string;

beforeAll(async () => {
  pki = makeTestPki();
  receiver = await TestReceiver.start(pki);
  workspaceId = (await createAccounts({ keyPrefix: prefix, secretRotationOverlapSeconds: 86_400 }, redis).createWorkspace('first', 'owner@first.test'))
    .workspace.id;
  const config = loadConfig({ KEY_PREFIX: prefix, CALLBACK_CA_FILE: pki.caFile, CALLBACK_ALLOWED_CIDRS: '127.0.0.0/8', WEBHOOK_TIMEOUT_MS: '3000' });
  handle = await createCallbackService(config, redis, createLogger('test', 'error'));
});

afterAll(async () => {
  await handle?.close();
  await deliveries.close();
  await deleteKeysUnder(redis, prefix);
  redis.disconnect();
  await receiver?.stop();
  pki?.cleanup();
});

async function finishedJob(path: string, workspace = workspaceId): Promise<string> {
  const job = finishedImageJob(workspace, receiver.url(path));
  await jobs.create(job);
  return job.id;
}

const queued = async (messageId: string, attempt: number) => deliveries.getJob(jobIds.delivery(messageId, attempt, 'scheduled'));

it('delivers attempt 1 from the event itself: nothing goes through the deliveries queue', async () => {
  const callback = (await handle.service.onJobFinished(await finishedJob('/now'), 'now'))[0]!;
  expect(receiver.requestsTo('/now')).toHaveLength(1);
  expect(receiver.requestsTo('/now')[0]!.headers['webhook-id']).toBe(callback.id);
  expect(await store.get(callback.id)).toMatchObject({ state: 'delivered', attempt_count: 1, ladder_attempt: 1 });
  expect(await queued(callback.id, 1)).toBeUndefined();
  expect(await queued(callback.id, 2)).toBeUndefined();
});

it('schedules attempt 2 with a failed attempt 1, and a replayed event neither repeats attempt 1 nor adds a step', async () => {
  receiver.script('/fails', () => ({ status: 503 }));
  const jobId = await finishedJob('/fails');
  const callback = (await handle.service.onJobFinished(jobId, 'now'))[0]!;
  const after = (await store.get(callback.id))!;
  expect(after).toMatchObject({ state: 'pending', attempt_count: 1, ladder_attempt: 1 });
  // Attempt 2 waits on the deliveries queue's schedule, due when the record says; nothing is queued yet.
  const second = jobIds.delivery(callback.id, 2, 'scheduled');
  expect(Number(await redis.zscore(keys.callbackSchedule(shardOfId(callback.id)), second))).toBe(after.next_attempt_ms);
  expect(await queued(callback.id, 1)).toBeUndefined();
  expect(await queued(callback.id, 2)).toBeUndefined();

  for (const mode of ['now', 'queued'] as const) await handle.service.onJobFinished(jobId, mode);
  expect(receiver.requestsTo('/fails')).toHaveLength(1);
  // The slot the replay took beside the create went back: the destination has nothing in flight.
  expect(await redis.zcard(keys.destinationLeases(destinationOf(receiver.url('/fails')).id))).toBe(0);
  expect(await store.get(callback.id)).toMatchObject({ attempt_count: 1, ladder_attempt: 1, next_attempt_ms: after.next_attempt_ms });
  expect(await redis.zrangebyscore(keys.callbackSchedule(shardOfId(callback.id)), '-inf', '+inf')).toEqual([second]);
  expect(await deliveries.getJobCounts('waiting', 'delayed')).toEqual({ waiting: 0, delayed: 0 });
});

it("reads the workspace's endpoints beside the job when the event names its workspace, and goes by the job's own workspace whatever the event says", async () => {
  const jobId = await finishedJob('/named');
  const [named] = await handle.service.onJobFinished(jobId, 'now', undefined, workspaceId);
  expect(await store.get(named!.id)).toMatchObject({ state: 'delivered', workspace_id: workspaceId });
  const other = await finishedJob('/misnamed');
  const [misnamed] = await handle.service.onJobFinished(other, 'now', undefined, 'ws_someone_else');
  expect(await store.get(misnamed!.id)).toMatchObject({ state: 'delivered', workspace_id: workspaceId });
  expect(receiver.requestsTo('/named')).toHaveLength(1);
  expect(receiver.requestsTo('/misnamed')).toHaveLength(1);
});

it('makes a scheduled attempt once, however often its entry is promoted (two replicas, or a crash before the entry was removed)', async () => {
  receiver.script('/promoted', () => ({ status: 500 }));
  const callback = (await handle.service.onJobFinished(await finishedJob('/promoted'), 'now'))[0]!;
  const second = jobIds.delivery(callback.id, 2, 'scheduled');
  expect(await redis.zscore(keys.callbackSchedule(shardOfId(callback.id)), second)).not.toBeNull();
  // The first promotion's job ran to the end (and BullMQ removed it); the second finds it recorded.
  const request = { messageId: callback.id, attempt: 2, trigger: 'scheduled' as const };
  expect(await handle.service.deliver(request, second)).toMatchObject({ ladder_attempt: 2, status: 500 });
  expect(await handle.service.deliver(request, second)).toBeUndefined();
  expect(receiver.requestsTo('/promoted')).toHaveLength(2);
  expect(await store.get(callback.id)).toMatchObject({ attempt_count: 2, ladder_attempt: 2 });
  // Attempt 3 is on the schedule, once.
  expect(await redis.zscore(keys.callbackSchedule(shardOfId(callback.id)), jobIds.delivery(callback.id, 3, 'scheduled'))).not.toBeNull();
});

it('ends the callback as failed when attempt 1 can never be made, without failing the event', async () => {
  const jobId = await finishedJob('/no-secret');
  await redis.del(keys.workspaceSecrets(workspaceId));
  const callback = (await handle.service.onJobFinished(jobId, 'now'))[0]!;
  expect(await store.get(callback.id)).toMatchObject({ state: 'failed', attempt_count: 0 });
  expect(receiver.requestsTo('/no-secret')).toHaveLength(0);
});

it("sends attempt 1 through the deliveries queue for an event given up on before ('queued')", async () => {
  const other = (await createAccounts({ keyPrefix: prefix, secretRotationOverlapSeconds: 86_400 }, redis).createWorkspace('q', 'owner@q.test')).workspace.id;
  const callback = (await handle.service.onJobFinished(await finishedJob('/queued', other), 'queued'))[0]!;
  expect(await (await queued(callback.id, 1))?.isWaiting()).toBe(true);
  expect(receiver.requestsTo('/queued')).toHaveLength(0);
  expect(await store.get(callback.id)).toMatchObject({ state: 'pending', attempt_count: 0 });
});
