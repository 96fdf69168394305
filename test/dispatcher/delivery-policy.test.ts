import { randomBytes } from 'node:crypto';
import { UnrecoverableError } from 'bullmq';
import { Redis } from 'ioredis';
import { CallbackUrlGuard, type HostResolver } from '@media/callback-guard';
import { createLogger, loadConfig } from '@media/common';
import { jobIds } from '@media/queues';
import { createAccounts } from '@media/accounts';
import { CallbackRepository, EndpointRepository } from '@media/callbacks';
import { JobRepository } from '@media/jobs';
import { createCallbackService, type CallbackServiceHandle } from '../../services/webhook-dispatcher/src/wiring';
import { deleteKeysUnder, freePort, REDIS_URL } from '../support/stack';
import { finishedImageJob } from './support/finished-job';
import { makeTestPki, type TestPki } from './support/pki';
import { TestReceiver } from './support/receiver';
import { allKeys } from '../support/store-keys';

/**
 * Delivery-time address policy, with the dispatcher's own classes in process so the resolver can
 * be scripted: DNS rebinding, pinning to the checked address, and TLS trust.
 */
const prefix = `test-${randomBytes(6).toString('hex')}`;
const redis = new Redis(REDIS_URL, { maxRetriesPerRequest: null });
const keys = allKeys(prefix);
const jobs = new JobRepository(redis, keys);
const store = new CallbackRepository(redis, keys);
let pki: TestPki;
let strangerPki: TestPki;
let receiver: TestReceiver;
let stranger: TestReceiver;
let workspaceId: string;
const handles: CallbackServiceHandle[] = [];

beforeAll(async () => {
  pki = makeTestPki(['rebind.test', 'pinned.test']);
  strangerPki = makeTestPki();
  receiver = await TestReceiver.start(pki);
  stranger = await TestReceiver.start(strangerPki);
  workspaceId = (await createAccounts({ keyPrefix: prefix, secretRotationOverlapSeconds: 86_400 }, redis).createWorkspace('policy', 'owner@policy.test'))
    .workspace.id;
});

afterAll(async () => {
  for (const handle of handles) await handle.close();
  await deleteKeysUnder(redis, prefix);
  redis.disconnect();
  await receiver?.stop();
  await stranger?.stop();
  pki?.cleanup();
  strangerPki?.cleanup();
});

async function service(allowedCidrs: string, resolver?: HostResolver, allowedEndpoints = '') {
  const config = loadConfig({
    KEY_PREFIX: prefix,
    CALLBACK_CA_FILE: pki.caFile,
    CALLBACK_ALLOWED_CIDRS: allowedCidrs,
    CALLBACK_ALLOWED_ENDPOINTS: allowedEndpoints,
    WEBHOOK_TIMEOUT_MS: '3000',
  });
  const handle = await createCallbackService(config, redis, createLogger('test', 'error'), { resolver });
  handles.push(handle);
  return handle.service;
}

/** A completed image job with a callback, stored as the generator leaves it. */
async function finishedJob(callbackUrl: string): Promise<string> {
  const job = finishedImageJob(workspaceId, callbackUrl);
  await jobs.create(job);
  return job.id;
}

/** Answers each name from a script of successive answers; counts the questions. */
function scriptedResolver(answers: string[][]): HostResolver & { calls: number } {
  const resolve = async () => {
    const answer = answers[Math.min(resolve.calls, answers.length - 1)];
    resolve.calls++;
    return answer.map((address) => ({ address, family: address.includes(':') ? (6 as const) : (4 as const) }));
  };
  resolve.calls = 0;
  return resolve;
}

it('refuses a host that rebinds to loopback after acceptance: blocked_address, and no connection is made', async () => {
  const resolver = scriptedResolver([['93.184.215.14'], ['127.0.0.1']]);
  const url = `https://rebind.test:${receiver.port}/hook`;
  // Acceptance (what the gateway checks) sees a public address.
  await expect(new CallbackUrlGuard({ allowHttp: false, allowedCidrs: [] }, resolver).check(url)).resolves.toMatchObject({
    addresses: [{ address: '93.184.215.14', family: 4 }],
  });
  const callbacks = await service('', resolver);
  const callback = (await callbacks.onJobFinished(await finishedJob(url)))[0]!;
  const attempt = await callbacks.deliver({ messageId: callback.id, attempt: 1, trigger: 'scheduled' }, jobIds.delivery(callback.id, 1, 'scheduled'));

  expect(attempt).toMatchObject({ ladder_attempt: 1, status: null, error: 'blocked_address', address: null });
  // The attempt log is the workspace's to read: it names the rule, not the internal address.
  expect(attempt!.error_detail).toMatch(/^private_address: .*non-public address$/);
  expect(resolver.calls).toBe(2);
  expect(receiver.connections).toBe(0);
  // A refused address is a failed attempt like any other: the ladder goes on.
  const after = (await store.get(callback.id))!;
  expect(after).toMatchObject({ state: 'pending', ladder_attempt: 1 });
  expect(after.next_attempt_ms).not.toBeNull();
});

it("checks a webhook endpoint's URL again at every attempt: one that rebinds to loopback after its creation is blocked_address", async () => {
  const resolver = scriptedResolver([['93.184.215.14'], ['127.0.0.1']]);
  const url = `https://rebind.test:${receiver.port}/endpoint`;
  // Creation (what the API checks) sees a public address.
  await expect(new CallbackUrlGuard({ allowHttp: false, allowedCidrs: [] }, resolver).check(url)).resolves.toBeDefined();
  const endpoint = (await new EndpointRepository(redis, keys).create(
    workspaceId,
    { url, events: ['image.completed'], description: '', enabled: true },
    Date.now(),
  ))!;
  const job = finishedImageJob(workspaceId, '');
  await jobs.create({ ...job, callback_url: null });
  const before = receiver.connections;

  const [callback, ...more] = await (await service('', resolver)).onJobFinished(job.id, 'now');
  expect(more).toEqual([]);
  expect(callback).toMatchObject({ endpoint_id: endpoint.id, url });
  const attempts = await store.attempts(callback!.id);
  expect(attempts).toEqual([expect.objectContaining({ ladder_attempt: 1, status: null, error: 'blocked_address', address: null })]);
  expect(receiver.connections).toBe(before);
  expect(await store.get(callback!.id)).toMatchObject({ state: 'pending', ladder_attempt: 1 });
});

it('connects to the address it checked, for a name the system resolver does not know', async () => {
  const resolver = scriptedResolver([['127.0.0.1']]);
  const callbacks = await service('127.0.0.0/8', resolver);
  const callback = (await callbacks.onJobFinished(await finishedJob(`https://pinned.test:${receiver.port}/pinned`)))[0]!;
  const attempt = await callbacks.deliver({ messageId: callback.id, attempt: 1, trigger: 'scheduled' }, jobIds.delivery(callback.id, 1, 'scheduled'));

  expect(attempt).toMatchObject({ status: 200, error: null, address: '127.0.0.1' });
  const [request] = receiver.requestsTo('/pinned');
  // The name still goes out as Host (and SNI); only the dialled address is pinned.
  expect(request.headers.host).toBe(`pinned.test:${receiver.port}`);
  expect(resolver.calls).toBe(1);
});

it('with an endpoint exemption, delivers to that address and port only, checked again at each attempt', async () => {
  // Names resolve to the exempted address once (localhost and literals are never resolved), then to another loopback address.
  const resolver = scriptedResolver([['127.0.0.1'], ['127.0.0.2']]);
  const callbacks = await service('', resolver, `127.0.0.1:${receiver.port}`);
  const deliver = async (url: string) => {
    const callback = (await callbacks.onJobFinished(await finishedJob(url)))[0]!;
    return callbacks.deliver({ messageId: callback.id, attempt: 1, trigger: 'scheduled' }, jobIds.delivery(callback.id, 1, 'scheduled'));
  };

  expect(await deliver(`https://localhost:${receiver.port}/endpoint`)).toMatchObject({ status: 200, error: null, address: '127.0.0.1' });
  expect(await deliver(`https://pinned.test:${receiver.port}/endpoint`)).toMatchObject({ status: 200, error: null, address: '127.0.0.1' });
  // The same address on another port: refused before any connection.
  expect(await deliver(`https://localhost:${stranger.port}/endpoint`)).toMatchObject({ status: null, error: 'blocked_address', address: null });
  expect(await deliver(`https://127.0.0.1:${stranger.port}/endpoint`)).toMatchObject({ status: null, error: 'blocked_address', address: null });
  // The exempted port, but the name now resolves elsewhere on loopback.
  expect(await deliver(`https://rebind.test:${receiver.port}/endpoint`)).toMatchObject({ status: null, error: 'blocked_address', address: null });
  expect(receiver.requestsTo('/endpoint')).toHaveLength(2);
  expect(stranger.requests).toHaveLength(0);
  expect(resolver.calls).toBe(2);
});

it('fails TLS to a receiver whose certificate no trusted CA signed', async () => {
  const callbacks = await service('127.0.0.0/8');
  const callback = (await callbacks.onJobFinished(await finishedJob(`https://localhost:${stranger.port}/hook`)))[0]!;
  const attempt = await callbacks.deliver({ messageId: callback.id, attempt: 1, trigger: 'scheduled' }, jobIds.delivery(callback.id, 1, 'scheduled'));

  expect(attempt).toMatchObject({ status: null, error: 'tls', address: '127.0.0.1' });
  expect(stranger.requests).toHaveLength(0);
});

it('refuses a name that no longer resolves as a dns failure', async () => {
  const failing: HostResolver = async () => {
    throw Object.assign(new Error('getaddrinfo ENOTFOUND gone.test'), { code: 'ENOTFOUND' });
  };
  const callbacks = await service('', failing);
  const callback = (await callbacks.onJobFinished(await finishedJob('https://gone.test/hook')))[0]!;
  const attempt = await callbacks.deliver({ messageId: callback.id, attempt: 1, trigger: 'scheduled' }, jobIds.delivery(callback.id, 1, 'scheduled'));
  expect(attempt).toMatchObject({ status: null, error: 'dns', address: null });
});

it('records a connection nobody accepts as refused, naming the address it dialled', async () => {
  const port = await freePort();
  const callbacks = await service('127.0.0.0/8', scriptedResolver([['127.0.0.1']]));
  const callback = (await callbacks.onJobFinished(await finishedJob(`https://closed.test:${port}/hook`)))[0]!;
  const attempt = await callbacks.deliver({ messageId: callback.id, attempt: 1, trigger: 'scheduled' }, jobIds.delivery(callback.id, 1, 'scheduled'));
  expect(attempt).toMatchObject({ status: null, error: 'refused', address: '127.0.0.1' });
});

it('counts a 2xx as delivered even when the body that follows never finishes', async () => {
  receiver.script('/stall', () => 'stall-body');
  const callbacks = await service('127.0.0.0/8', scriptedResolver([['127.0.0.1']]));
  const callback = (await callbacks.onJobFinished(await finishedJob(`https://pinned.test:${receiver.port}/stall`)))[0]!;
  const attempt = await callbacks.deliver({ messageId: callback.id, attempt: 1, trigger: 'scheduled' }, jobIds.delivery(callback.id, 1, 'scheduled'));
  expect(attempt).toMatchObject({ status: 200, error: null });
  expect((await store.get(callback.id))!.state).toBe('delivered');
});

it('treats a job record the store cannot decode as permanent: no endless retries of its event or its attempts', async () => {
  const callbacks = await service('127.0.0.0/8');
  const url = `https://localhost:${receiver.port}/corrupt`;
  const delivering = await finishedJob(url);
  const callback = (await callbacks.onJobFinished(delivering))[0]!;
  await redis.set(keys.job(delivering), 'not json');
  await expect(
    callbacks.deliver({ messageId: callback.id, attempt: 1, trigger: 'scheduled' }, jobIds.delivery(callback.id, 1, 'scheduled')),
  ).rejects.toMatchObject({ name: 'UndeliverableCallbackError', code: 'undeliverable' });

  const announced = await finishedJob(url);
  await redis.set(keys.job(announced), 'not json');
  await expect(callbacks.onJobFinished(announced)).rejects.toBeInstanceOf(UnrecoverableError);
  expect(receiver.requestsTo('/corrupt')).toHaveLength(0);
});
