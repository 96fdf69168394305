// How a deferred attempt waits and is woken, with the dispatcher's classes in process and no worker
// on the deliveries queue, so what the service queued stays there to be looked at. The destination
// has one slot, held by the test in another attempt's name.
import { randomBytes } from 'node:crypto';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { bullPrefix, createLogger, loadConfig } from '@media/common';
import { jobIds } from '@media/queues';
import { attemptKey, CallbackRepository, destinationOf, QUIET_SIGNAL } from '@media/callbacks';
import { createAccounts } from '@media/accounts';
import { JobRepository } from '@media/jobs';
import { createCallbackService, type CallbackServiceHandle } from '../../services/webhook-dispatcher/src/wiring';
import { deleteKeysUnder, REDIS_URL } from '../support/stack';
import { makeTestPki, type TestPki } from './support/pki';
import { finishedImageJob } from './support/finished-job';
import { TestReceiver } from './support/receiver';
import { allKeys } from '../support/store-keys';

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
  workspaceId = (await createAccounts({ keyPrefix: prefix, secretRotationOverlapSeconds: 86_400 }, redis).createWorkspace('deferral', 'owner@deferral.test'))
    .workspace.id;
  const config = loadConfig({
    KEY_PREFIX: prefix,
    CALLBACK_CA_FILE: pki.caFile,
    CALLBACK_ALLOWED_CIDRS: '127.0.0.0/8',
    WEBHOOK_TIMEOUT_MS: '3000',
    CALLBACK_DESTINATION_MAX_IN_FLIGHT: '1',
  });
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

async function finishedJob(path: string): Promise<string> {
  const job = finishedImageJob(workspaceId, receiver.url(path));
  await jobs.create(job);
  return job.id;
}

/** Takes the destination's one slot in the name of an attempt elsewhere. */
const occupy = async (leaseId: string) => {
  const now = Date.now();
  const answer = await handle.destinations.acquire({
    destination: destinationOf(receiver.url('/')),
    workspaceId,
    leaseId,
    parkAs: `${leaseId}.d1`,
    dueMs: now,
    nowMs: now,
  });
  expect(answer.granted).toBe(true);
};

it('defers attempt 1 as a delayed delivery job of its own when the destination is full, shows when it will be made, and wakes it when the slot comes back', async () => {
  await occupy('elsewhere.1');
  const callback = (await handle.service.onJobFinished(await finishedJob('/deferred'), 'now'))[0]!;
  expect(receiver.requestsTo('/deferred')).toHaveLength(0);
  const first = (await deliveries.getJob(jobIds.deferral(jobIds.delivery(callback.id, 1, 'scheduled'), 1)))!;
  expect(first.data).toEqual({ messageId: callback.id, attempt: 1, trigger: 'scheduled', deferrals: 1 });
  expect(await first.isDelayed()).toBe(true);
  const record = (await store.get(callback.id))!;
  expect(record).toMatchObject({ state: 'pending', attempt_count: 0 });
  // next_attempt_at: when its turn comes at the latest (the holder's lease runs out).
  expect(record.next_attempt_ms!).toBeGreaterThan(Date.now() + 3_000);

  // The holder ends: its slot is handed to the deferred attempt, whose job becomes runnable now.
  await handle.service['giveBack'](destinationOf(receiver.url('/')), workspaceId, 'elsewhere.1', QUIET_SIGNAL);
  expect(await first.isWaiting()).toBe(true);
  // Run as the queue would: the slot is held in its name, so it is made.
  expect(await handle.service.deliver(first.data, first.id!)).toMatchObject({ ladder_attempt: 1, status: 200 });
  expect(receiver.requestsTo('/deferred')).toHaveLength(1);
});

it('honours a slot handed to an attempt before its delayed job existed', async () => {
  await occupy('elsewhere.2');
  const jobId = await finishedJob('/early');
  const callback = (await handle.service.onJobFinished(jobId, 'queued'))[0]!;
  const leaseId = jobIds.delivery(callback.id, 1, 'scheduled');
  const parkAs = jobIds.deferral(leaseId, 1);
  // Parked (as an attempt is just before its delayed job is added)…
  const now = Date.now();
  expect((await handle.destinations.acquire({ destination: destinationOf(callback.url), workspaceId, leaseId, parkAs, dueMs: now, nowMs: now })).granted).toBe(
    false,
  );
  // …and woken before that job exists: the slot stays reserved in its name, not given away.
  await handle.service['giveBack'](destinationOf(callback.url), workspaceId, 'elsewhere.2', QUIET_SIGNAL);
  expect(await handle.destinations.holds(destinationOf(callback.url), parkAs)).toBe(true);
  expect(await handle.service.deliver({ messageId: callback.id, attempt: 1, trigger: 'scheduled', deferrals: 1 }, parkAs)).toMatchObject({
    ladder_attempt: 1,
    status: 200,
  });
});

it('gives a slot handed to an attempt that no longer needs it to the next in line', async () => {
  receiver.script('/done', () => ({ status: 200 }));
  const callback = (await handle.service.onJobFinished(await finishedJob('/done'), 'now'))[0]!;
  expect(await store.get(callback.id)).toMatchObject({ state: 'delivered' });
  const destination = destinationOf(callback.url);
  // A stale repeat of attempt 1 holding a slot in its name: it finds the callback delivered.
  const now = Date.now();
  const leaseId = jobIds.delivery(callback.id, 1, 'scheduled');
  expect((await handle.destinations.acquire({ destination, workspaceId, leaseId, parkAs: `${leaseId}.d1`, dueMs: now, nowMs: now })).granted).toBe(true);
  expect(await handle.service.deliver({ messageId: callback.id, attempt: 1, trigger: 'scheduled' }, leaseId)).toBeUndefined();
  expect(await handle.destinations.holds(destination, leaseId)).toBe(false);
});

it('records a deferred manual attempt under the id it was requested with, where the dashboard looks for it', async () => {
  receiver.script('/manual', () => ({ status: 200 }));
  const callback = (await handle.service.onJobFinished(await finishedJob('/manual'), 'queued'))[0]!;
  await occupy('elsewhere.3');
  const requestId = jobIds.delivery(callback.id, 1, 'manual');
  expect(await handle.service.deliver({ messageId: callback.id, attempt: 1, trigger: 'manual' }, requestId)).toBeUndefined();
  const deferred = (await deliveries.getJob(jobIds.deferral(requestId, 1)))!;
  await handle.service['giveBack'](destinationOf(callback.url), workspaceId, 'elsewhere.3', QUIET_SIGNAL);
  expect(await handle.service.deliver(deferred.data, deferred.id!)).toMatchObject({ trigger: 'manual', status: 200 });
  expect(await store.attempt(callback.id, attemptKey('manual', 0, requestId))).toMatchObject({ status: 200 });
});

it("keeps a recovery's attempts on their workspace's pace when the destination is full, instead of in its line, so they never all go at once", async () => {
  receiver.script('/recovered', () => ({ status: 200 }));
  const callbacks = [];
  for (let i = 0; i < 3; i++) callbacks.push((await handle.service.onJobFinished(await finishedJob('/recovered'), 'queued'))[0]!);
  await occupy('elsewhere.4');
  const destination = destinationOf(callbacks[0]!.url);
  const started = Date.now();
  const requests = callbacks.map((callback) => jobIds.recoveryDelivery(callback.id, 'rcv_pacetest'));
  for (const [i, callback] of callbacks.entries()) {
    expect(await handle.service.deliver({ messageId: callback.id, attempt: 0, trigger: 'manual' }, requests[i]!)).toBeUndefined();
  }
  // Not in the destination's line, so a slot coming back cannot hand them all a slot together...
  expect(await redis.zrange(keys.destinationParked(destination.id), 0, -1)).toEqual([]);
  // ...but each on a later turn of the pace (5 a second): a turn apart, the first not before the next turn.
  const due = await Promise.all(
    requests.map(async (id) => {
      const job = (await deliveries.getJob(jobIds.deferral(id, 1)))!;
      expect(job.data).toMatchObject({ trigger: 'manual', deferrals: 1 });
      return job.timestamp + job.delay;
    }),
  );
  const turnMs = 1000 / 5;
  expect(due[0]! - started).toBeGreaterThanOrEqual(turnMs - 50);
  for (let i = 1; i < due.length; i++) expect(due[i]! - due[i - 1]!).toBeGreaterThanOrEqual(turnMs - 50);
  // When its turn comes and a slot is free, it goes, recorded under the recovery's id.
  await handle.service['giveBack'](destination, workspaceId, 'elsewhere.4', QUIET_SIGNAL);
  const first = (await deliveries.getJob(jobIds.deferral(requests[0]!, 1)))!;
  expect(await handle.service.deliver(first.data, first.id!)).toMatchObject({ trigger: 'manual', status: 200 });
  expect(await store.attempt(callbacks[0]!.id, attemptKey('manual', 0, requests[0]!))).toMatchObject({ status: 200 });

  // After three waits on the pace it takes its place in the destination's line like any other
  // attempt: the line is served first, so a destination that stays busy would never leave it a slot.
  await occupy('elsewhere.5');
  const fourthTry = jobIds.deferral(requests[1]!, 3);
  expect(await handle.service.deliver({ messageId: callbacks[1]!.id, attempt: 0, trigger: 'manual', deferrals: 3 }, fourthTry)).toBeUndefined();
  expect(await redis.zrange(keys.destinationParked(destination.id), 0, -1)).toEqual([jobIds.deferral(requests[1]!, 4)]);
  await handle.service['giveBack'](destination, workspaceId, 'elsewhere.5', QUIET_SIGNAL);
});
