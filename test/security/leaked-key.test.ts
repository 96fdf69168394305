// An attacker holding a leaked API key floods the workspace's API buckets; the owner must still be
// able to revoke that key, from the dashboard (whose limits are per member, apart from the API's)
// and from the admin CLI (straight to Redis), and the key must stop working. Real gateway (in-process),
// real Redis, the built CLI.
import { spawn } from 'node:child_process';
import { resolve } from 'node:path';
import { api, eventually, TestStack, type TestWorkspace } from '../support/stack';
import { expectApiError } from '../support/http';
import { finished } from '../support/process';
import { DashboardClient } from '../dashboard/support/api-client';

const ROOT = resolve(__dirname, '../..');
const CREATE_PER_MINUTE = 5;

let stack: TestStack;
let ws: TestWorkspace;
let owner: DashboardClient;

beforeAll(async () => {
  stack = await TestStack.start(
    ['api-gateway'],
    {
      RATE_LIMIT_CREATE_PER_MINUTE: String(CREATE_PER_MINUTE),
      RATE_LIMIT_READ_PER_MINUTE: String(CREATE_PER_MINUTE),
    },
    { inProcess: true },
  );
  ws = await stack.createWorkspace('leaky');
  owner = await DashboardClient.signedIn(stack.baseUrl, ws.owner.email, ws.owner.password);
}, 60_000);

afterAll(async () => {
  await stack?.stop();
});

const admin = (args: string[]) => finished(spawn(process.execPath, [resolve(ROOT, 'tools/admin/dist/main.js'), ...args], { env: stack.env }));

/** Invalid creation calls and reads with the key until both of the workspace's API buckets answer 429. */
async function flood(key: string): Promise<void> {
  const call = api(stack, key);
  let limited = { create: false, read: false };
  for (let i = 0; i < 4 * CREATE_PER_MINUTE && !(limited.create && limited.read); i++) {
    const created = await call('/v1/images/generations', { method: 'POST', json: { prompt: '' } });
    const read = await call('/v1/images');
    limited = { create: limited.create || created.status === 429, read: limited.read || read.status === 429 };
  }
  expect(limited).toEqual({ create: true, read: true });
}

it('lets the owner revoke a leaked key from the dashboard while the key keeps the workspace’s API buckets full', async () => {
  const { json: created } = await owner.call('POST', '/keys');
  const leaked = created.key as string;
  await flood(leaked);
  // The owner's own calls through the dashboard are not held back by the API's buckets.
  const keys = await owner.call('GET', '/keys');
  expect(keys.status).toBe(200);
  expect(keys.json.api_keys.map((k: { id: string }) => k.id)).toContain(created.id);
  expect((await owner.call('DELETE', `/keys/${created.id}`)).status).toBe(204);
  expectApiError(await api(stack, leaked)('/v1/images'), 401, { type: 'authentication_error' });
});

it('lists and revokes a leaked key from the admin CLI however busy the API is', async () => {
  const { json: created } = await owner.call('POST', '/keys');
  const leaked = created.key as string;
  await flood(leaked);
  const listed = await admin(['list-keys', '--workspace', ws.workspaceId]);
  expect(listed.code).toBe(0);
  const { api_keys: keys } = JSON.parse(listed.stdout) as { api_keys: { id: string; prefix: string; created_at: string; last_used_at: string | null }[] };
  const entry = keys.find((k) => k.id === created.id)!;
  expect(entry).toMatchObject({ prefix: created.prefix, created_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT/) });
  // Its last use was recorded: the flood above.
  expect(entry.last_used_at).not.toBeNull();
  expect(JSON.stringify(keys)).not.toContain(leaked);

  const revoked = await admin(['revoke-key', '--workspace', ws.workspaceId, '--key-id', created.id]);
  expect([revoked.code, JSON.parse(revoked.stdout)]).toEqual([0, { workspace_id: ws.workspaceId, revoked: created.id }]);
  // A gateway trusts a key it looked up for API_KEY_CACHE_MS (2 s) at most.
  await eventually(async () => ((await api(stack, leaked)('/v1/images')).status === 401 ? true : undefined), 10_000, 'the revoked key to be refused');
  const again = await admin(['revoke-key', '--workspace', ws.workspaceId, '--key-id', created.id]);
  expect(again.code).not.toBe(0);
  expect(again.stderr).toMatch(created.id);
});
