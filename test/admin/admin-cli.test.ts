import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { createAccounts } from '@media/accounts';
import { StoreKeys, WorkspaceRepository } from '@media/storage';
import { REDIS_URL } from '../support/stack';

const run = promisify(execFile);
const prefix = `test-${randomBytes(6).toString('hex')}`;
const redis = new Redis(REDIS_URL);
const admin = async (...args: string[]) => {
  const { stdout } = await run(process.execPath, [join(__dirname, '../../tools/admin/dist/main.js'), ...args], {
    env: { PATH: process.env.PATH, REDIS_URL, KEY_PREFIX: prefix, SECRET_ROTATION_OVERLAP_SECONDS: '3600' },
  });
  return JSON.parse(stdout);
};

const accounts = () => createAccounts({ keyPrefix: prefix, secretRotationOverlapSeconds: 3600 }, redis);

afterAll(async () => {
  const keys = await redis.keys(`${prefix}:*`);
  if (keys.length > 0) await redis.del(...keys);
  redis.disconnect();
});

it('create-workspace prints the workspace, its key, its secret and the owner’s dashboard login', async () => {
  const out = await admin('create-workspace', '--name', 'Acme Corp');
  expect(out).toMatchObject({
    workspace_id: expect.stringMatching(/^ws_/),
    api_key: expect.stringMatching(/^sk_/),
    signing_secret: expect.stringMatching(/^whsec_/),
    dashboard: { email: 'owner@acme-corp.local', password: expect.any(String), role: 'owner' },
  });
  const workspaces = new WorkspaceRepository(redis, new StoreKeys(prefix));
  expect(await workspaces.findByApiKey(out.api_key)).toBe(out.workspace_id);
  const signed = await accounts().signIn(out.dashboard.email, out.dashboard.password, '127.0.0.1');
  expect(signed.session).toMatchObject({ role: 'owner', workspace: { id: out.workspace_id } });
});

it('rotate-secret prints the new secret and when the previous one stops signing', async () => {
  const ws = await admin('create-workspace', '--name', 'rot');
  const before = Date.now();
  const out = await admin('rotate-secret', '--workspace', ws.workspace_id);
  expect(out.signing_secret).toMatch(/^whsec_/);
  expect(out.signing_secret).not.toBe(ws.signing_secret);
  const ends = Date.parse(out.previous_secret_expires_at);
  expect(ends).toBeGreaterThanOrEqual(before + 3_600_000 - 1_000);
  expect(ends).toBeLessThanOrEqual(Date.now() + 3_600_000);
  const secrets = await new WorkspaceRepository(redis, new StoreKeys(prefix)).activeSecrets(ws.workspace_id);
  expect(secrets).toEqual([out.signing_secret, ws.signing_secret]);
});

it('enable-asymmetric-signing prints the public key (the same one when run again); rotate-signing-key keeps the previous one for the overlap', async () => {
  const ws = await admin('create-workspace', '--name', 'ed');
  await expect(admin('rotate-signing-key', '--workspace', ws.workspace_id)).rejects.toMatchObject({
    code: 2,
    stderr: expect.stringContaining('turn asymmetric signing on first'),
  });
  await expect(admin('enable-asymmetric-signing', '--workspace', 'ws_nope')).rejects.toMatchObject({
    code: 2,
    stderr: expect.stringContaining('No workspace ws_nope'),
  });
  const on = await admin('enable-asymmetric-signing', '--workspace', ws.workspace_id);
  expect(on).toEqual({
    workspace_id: ws.workspace_id,
    public_key: expect.stringMatching(/^whpk_[A-Za-z0-9+/]{43}=$/),
    enabled_now: true,
    public_keys: [{ public_key: on.public_key, created_at: expect.stringMatching(/Z$/), expires_at: null }],
  });
  expect(await admin('enable-asymmetric-signing', '--workspace', ws.workspace_id)).toEqual({ ...on, enabled_now: false });

  const before = Date.now();
  const rotated = await admin('rotate-signing-key', '--workspace', ws.workspace_id);
  expect(rotated.public_key).not.toBe(on.public_key);
  const ends = Date.parse(rotated.previous_key_expires_at);
  expect(ends).toBeGreaterThanOrEqual(before + 3_600_000 - 1_000);
  expect(ends).toBeLessThanOrEqual(Date.now() + 3_600_000);
  expect(rotated.public_keys.map((k: { public_key: string }) => k.public_key)).toEqual([rotated.public_key, on.public_key]);
  // The HMAC secret is left alone.
  expect(await new WorkspaceRepository(redis, new StoreKeys(prefix)).activeSecrets(ws.workspace_id)).toEqual([ws.signing_secret]);
});

it('add-member prints credentials that sign in; remove-member removes; the last owner stays', async () => {
  const ws = await admin('create-workspace', '--name', 'team');
  const out = await admin('add-member', '--workspace', ws.workspace_id, '--email', 'Dev@Team.test', '--role', 'admin');
  expect(out).toEqual({ workspace_id: ws.workspace_id, dashboard: { email: 'dev@team.test', password: expect.any(String), role: 'admin' } });
  const signed = await accounts().signIn('dev@team.test', out.dashboard.password, '127.0.0.1');
  expect(signed.session).toMatchObject({ role: 'admin', workspace: { id: ws.workspace_id } });
  expect(await admin('remove-member', '--workspace', ws.workspace_id, '--email', 'dev@team.test')).toEqual({
    workspace_id: ws.workspace_id,
    removed: 'dev@team.test',
  });
  expect(await accounts().resume(signed.token)).toBeUndefined();
  await expect(admin('remove-member', '--workspace', ws.workspace_id, '--email', ws.dashboard.email)).rejects.toMatchObject({
    code: 2,
    stderr: expect.stringContaining('last owner'),
  });
  await expect(admin('add-member', '--workspace', ws.workspace_id, '--email', 'x@team.test', '--role', 'boss')).rejects.toMatchObject({ code: 2 });
});

it('says plainly that it cannot reach Redis, with no stack trace', async () => {
  const refused = run(process.execPath, [join(__dirname, '../../tools/admin/dist/main.js'), 'list-keys', '--workspace', 'ws_x'], {
    env: { PATH: process.env.PATH, REDIS_URL: 'redis://:hunter2@127.0.0.1:1', KEY_PREFIX: prefix },
  });
  await expect(refused).rejects.toMatchObject({ code: 1, stderr: expect.stringMatching(/^admin: cannot reach Redis .*ECONNREFUSED 127\.0\.0\.1:1\n$/) });
  await refused.catch((err: { stderr: string }) => {
    expect(err.stderr).not.toMatch(/at |ioredis|hunter2/);
  });
});

it('says so within seconds when a Redis Cluster or the Sentinels cannot be reached, whose clients would retry for good', async () => {
  const cli = join(__dirname, '../../tools/admin/dist/main.js');
  for (const settings of [{ REDIS_CLUSTER_NODES: '127.0.0.1:1' }, { REDIS_SENTINELS: '127.0.0.1:1', REDIS_SENTINEL_NAME: 'mymaster' }]) {
    const refused = run(process.execPath, [cli, 'list-keys', '--workspace', 'ws_x'], {
      env: { PATH: process.env.PATH, KEY_PREFIX: prefix, ...settings },
      timeout: 30_000,
    });
    await expect(refused).rejects.toMatchObject({ code: 1, stderr: expect.stringMatching(/^admin: cannot reach Redis [^\n]*\n$/) });
  }
});

it('says that there is no link-signing key yet, on a deployment no service has started on, instead of calling it sealed', async () => {
  const fresh = `${prefix}-fresh`;
  const { stdout } = await run(process.execPath, [join(__dirname, '../../tools/admin/dist/main.js'), 'reencrypt-secrets'], {
    env: { PATH: process.env.PATH, REDIS_URL, KEY_PREFIX: fresh, SECRETS_ENCRYPTION_KEYS: randomBytes(32).toString('base64') },
  });
  expect(JSON.parse(stdout)).toEqual({ workspaces: 0, workspaces_resealed: 0, link_signing_key: 'none yet' });
});

it('refuses a ledger of a workspace that does not exist, as every other command does', async () => {
  await expect(admin('ledger', '--workspace', 'ws_nope')).rejects.toMatchObject({ code: 2, stderr: expect.stringContaining('No workspace ws_nope.') });
});

it('refuses a flag the command does not take, or one given twice, rather than ignoring it', async () => {
  const ws = await admin('create-workspace', '--name', 'flags');
  await expect(admin('set-limits', '--workspace', ws.workspace_id, '--max-waiting-job', '2')).rejects.toMatchObject({
    code: 2,
    stderr: expect.stringMatching(/^unknown flag --max-waiting-job\nusage: admin set-limits --workspace ID/),
  });
  await expect(admin('rotate-secret', '--workspace', ws.workspace_id, '--workspace', 'ws_other')).rejects.toMatchObject({
    code: 2,
    stderr: expect.stringContaining('--workspace is given twice'),
  });
});

it('makes a workspace with a long name, whose owner address stays an address', async () => {
  const out = await admin('create-workspace', '--name', 'Long '.repeat(60));
  expect(out.dashboard.email).toBe(`owner@${'long-'.repeat(12)}lon.local`);
});

it('exits 2 with usage on bad input', async () => {
  await expect(admin('rotate-secret')).rejects.toMatchObject({ code: 2, stderr: expect.stringContaining('--workspace is required') });
  await expect(admin('frobnicate')).rejects.toMatchObject({ code: 2, stderr: expect.stringContaining('usage') });
  // Command names are looked up among the commands only, never on Object.prototype.
  for (const name of ['constructor', '__proto__', 'toString', 'hasOwnProperty']) {
    await expect(admin(name)).rejects.toMatchObject({ code: 2, stderr: expect.stringContaining('usage') });
  }
});
