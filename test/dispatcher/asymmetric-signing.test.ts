// Asymmetric `v1a` signatures end to end, with the real services: a workspace turns them on through
// the admin CLI, its public key is fetched from GET /v1/webhook-keys/{id} without an API key, and
// real deliveries to an HTTPS receiver on loopback carry `v1` and `v1a` entries. The `v1a` entry is
// verified by code that shares nothing with ours (node:crypto fed the raw key bytes from the
// endpoint, and @noble/ed25519), and the verifiers receivers already run (standardwebhooks, svix,
// openai) still accept the `v1` entry of the same delivery. A key rotation gives two public keys
// and two `v1a` entries, each verifying under its own key.
import { createPublicKey, verify as cryptoVerify } from 'node:crypto';
import OpenAI from 'openai';
import { Webhook } from 'standardwebhooks';
import { verify } from '@media/callback-signing';
import { expectApiError } from '../support/http';
import { readBody } from '../support/stack';
import { DashboardClient } from '../dashboard/support/api-client';
import { DispatcherHarness } from './support/harness';
import type { ReceivedRequest } from './support/receiver';

let h: DispatcherHarness;

beforeAll(async () => {
  h = await DispatcherHarness.start({}, { inProcess: true });
  h.receiver.script('/v1a', () => ({ status: 204 }));
  h.receiver.script('/v1a-test', () => ({ status: 204 }));
});

afterAll(async () => {
  await h?.stop();
});

interface WebhookKey {
  object: string;
  public_key: string;
  created_at: number;
  expires_at: number | null;
}

/** The public keys as a receiver fetches them: no API key, nothing but the workspace id. */
async function publicKeys(workspaceId: string): Promise<{ status: number; headers: Headers; json: { object: string; data: WebhookKey[] } }> {
  const res = await fetch(`${h.stack.baseUrl}/v1/webhook-keys/${encodeURIComponent(workspaceId)}`);
  return { status: res.status, headers: res.headers, ...(await readBody(res)) } as never;
}

async function cli(...args: string[]): Promise<Record<string, unknown>> {
  const run = await h.admin(args);
  expect({ code: run.code, stderr: run.stderr }).toEqual({ code: 0, stderr: '' });
  return JSON.parse(run.stdout) as Record<string, unknown>;
}

/** The delivery of a new image job's callback, as the receiver got it. */
async function delivery(): Promise<ReceivedRequest> {
  const jobId = await h.jobs.image(h.receiver.url('/v1a'));
  await h.settled(await h.messageIdOf(jobId), ['delivered']);
  return h.receiver.requestsTo('/v1a').find((r) => (JSON.parse(r.body) as { data: { id: string } }).data.id === jobId)!;
}

const entries = (request: ReceivedRequest, version: string) =>
  request.headers['webhook-signature']
    .split(' ')
    .filter((e) => e.startsWith(`${version},`))
    .map((e) => Buffer.from(e.slice(version.length + 1), 'base64'));

/** What a receiver with nothing but node:crypto does: the raw 32 bytes after `whpk_`, as an OKP JWK. */
function nodeVerifies(publicKey: string, request: ReceivedRequest, signature: Buffer): boolean {
  const raw = Buffer.from(publicKey.slice('whpk_'.length), 'base64');
  expect(raw).toHaveLength(32);
  const key = createPublicKey({ key: { kty: 'OKP', crv: 'Ed25519', x: raw.toString('base64url') }, format: 'jwk' });
  const signed = Buffer.from(`${request.headers['webhook-id']}.${request.headers['webhook-timestamp']}.${request.body}`, 'utf8');
  return cryptoVerify(null, signed, key, signature);
}

it('a workspace without asymmetric signing has no public keys (404 like an unknown one) and its deliveries carry v1 only', async () => {
  const off = await publicKeys(h.workspace.workspaceId);
  expectApiError(off, 404, { code: 'not_found' });
  const unknown = await publicKeys('ws_doesnotexist');
  expectApiError(unknown, 404, { code: 'not_found' });
  // The same answer either way, but for the id it names: nobody learns which workspaces exist.
  expect(off.json).toEqual(JSON.parse(JSON.stringify(unknown.json).replaceAll('ws_doesnotexist', h.workspace.workspaceId)));
  expectApiError(await publicKeys('ws:x:secrets'), 404, { code: 'not_found' });

  const request = await delivery();
  expect(request.headers['webhook-signature']).toMatch(/^v1,[A-Za-z0-9+/]+=*$/);
});

it('turned on by the admin CLI (twice keeps the key), signs real deliveries with v1 and v1a, each verified independently', async () => {
  const enabled = await cli('enable-asymmetric-signing', '--workspace', h.workspace.workspaceId);
  expect(enabled).toMatchObject({ workspace_id: h.workspace.workspaceId, public_key: expect.stringMatching(/^whpk_[A-Za-z0-9+/]{43}=$/), enabled_now: true });
  const again = await cli('enable-asymmetric-signing', '--workspace', h.workspace.workspaceId);
  expect(again).toMatchObject({ public_key: enabled.public_key, enabled_now: false });

  const served = await publicKeys(h.workspace.workspaceId);
  expect(served.status).toBe(200);
  expect(served.headers.get('cache-control')).toBe('public, max-age=300');
  expect(served.json).toEqual({
    object: 'list',
    data: [{ object: 'webhook_key', public_key: enabled.public_key, created_at: expect.any(Number), expires_at: null }],
  });
  const publicKey = served.json.data[0].public_key;

  const request = await delivery();
  // The closing note quotes one real header.
  console.log(`webhook-signature of ${request.headers['webhook-id']}: ${request.headers['webhook-signature']}`);
  expect(request.headers['webhook-signature']).toMatch(/^v1,[A-Za-z0-9+/]{43}= v1a,[A-Za-z0-9+/]{86}==$/);
  const [signature] = entries(request, 'v1a');
  expect(signature).toHaveLength(64);

  // ed25519 from the raw key bytes the endpoint served: node:crypto, and @noble/ed25519.
  expect(nodeVerifies(publicKey, request, signature)).toBe(true);
  const ed = await import('@noble/ed25519');
  const signed = Buffer.from(`${request.headers['webhook-id']}.${request.headers['webhook-timestamp']}.${request.body}`, 'utf8');
  const raw = Buffer.from(publicKey.slice('whpk_'.length), 'base64');
  expect(await ed.verifyAsync(signature, signed, raw)).toBe(true);
  // The check is real: one byte of the body changed, and neither accepts.
  const altered = Buffer.from(signed.toString('utf8').replace('"status":"completed"', '"status":"completes"'));
  expect(altered.equals(signed)).toBe(false);
  expect(await ed.verifyAsync(signature, altered, raw)).toBe(false);
  expect(nodeVerifies(publicKey, { ...request, body: request.body.replace('"status":"completed"', '"status":"completes"') }, signature)).toBe(false);
  // Our receiver library, given the public key alone (it cannot sign).
  expect(verify(request.body, request.headers, publicKey)).toMatchObject({ type: 'image.completed' });

  // The verifiers receivers already run take the v1 entry of the very same delivery.
  const secret = h.workspace.signingSecret;
  const payload = JSON.parse(request.body) as unknown;
  expect(new Webhook(secret).verify(request.body, request.headers)).toEqual(payload);
  const { Webhook: Svix } = await import('svix');
  expect(() => new Svix(secret).verify(request.body, request.headers)).not.toThrow();
  await expect(new OpenAI({ apiKey: 'x', webhookSecret: secret }).webhooks.unwrap(request.body, request.headers)).resolves.toEqual(payload);
  expect(verify(request.body, request.headers, secret)).toEqual(payload);
});

it('signs the dashboard’s test callback with v1a too', async () => {
  const owner = await DashboardClient.signedIn(h.stack.baseUrl, h.workspace.owner.email, h.workspace.owner.password);
  const res = await owner.call('POST', '/test-callback', { json: { url: h.receiver.url('/v1a-test') } });
  expect(res.json).toMatchObject({ delivered: true });
  const [request] = h.receiver.requestsTo('/v1a-test');
  const [key] = (await publicKeys(h.workspace.workspaceId)).json.data;
  expect(entries(request, 'v1a')).toHaveLength(1);
  expect(nodeVerifies(key.public_key, request, entries(request, 'v1a')[0])).toBe(true);
});

it('rotates the key pair: two public keys and two v1a entries through the overlap, each verifying under its own key', async () => {
  const [before] = (await publicKeys(h.workspace.workspaceId)).json.data;
  const rotated = await cli('rotate-signing-key', '--workspace', h.workspace.workspaceId);
  expect(rotated.public_key).not.toBe(before.public_key);
  const overlapEnds = Date.parse(rotated.previous_key_expires_at as string);
  expect(overlapEnds).toBeGreaterThan(Date.now() + 86_000_000);

  const served = (await publicKeys(h.workspace.workspaceId)).json.data;
  expect(served.map((k) => [k.public_key, k.expires_at])).toEqual([
    [rotated.public_key, null],
    [before.public_key, Math.floor(overlapEnds / 1000)],
  ]);

  const request = await delivery();
  console.log(`webhook-signature during a key rotation: ${request.headers['webhook-signature']}`);
  const signatures = entries(request, 'v1a');
  expect(signatures).toHaveLength(2);
  // The current key signs the first entry, the previous one the second; neither verifies the other's.
  expect(served.map((k, i) => nodeVerifies(k.public_key, request, signatures[i]))).toEqual([true, true]);
  expect(served.map((k, i) => nodeVerifies(k.public_key, request, signatures[1 - i]))).toEqual([false, false]);
  // A receiver holding either public key accepts the delivery.
  for (const key of served) expect(verify(request.body, request.headers, key.public_key)).toMatchObject({ type: 'image.completed' });
  expect(entries(request, 'v1')).toHaveLength(1);
});
