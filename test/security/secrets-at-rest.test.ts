// Signing secrets, ed25519 signing keys and the link-signing key at rest, as an attacker with a copy of Redis (a backup,
// an RDB file, a replica) would read them. Records written before encryption was turned on (a
// workspace's plain secret, a plain link key) keep working; the services seal the link key on
// first read, `reencrypt-secrets` seals every workspace's secrets, and a rotation writes sealed.
// Afterwards a dump of the whole Redis holds no `whsec_`, no secret's bytes, no `whsk_` nor an
// ed25519 secret key's bytes, and no link key, while deliveries (v1 and v1a) still verify, and
// the dashboard and the admin CLI still show the secrets.
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { SecretBox } from '@media/storage';
import { WorkspaceRepository } from '@media/accounts';
import { generateKeyPair, publicKeyOf, verify } from '@media/callback-signing';
import { DispatcherHarness } from '../dispatcher/support/harness';
import { DashboardClient } from '../dashboard/support/api-client';
import { adminJson } from '../admin/support/admin-cli';
import { freePort, redisAnswers } from '../support/basics';
import { allKeys } from '../support/store-keys';

const KEY = randomBytes(32).toString('base64');
const PLAIN_LINK_KEY = randomBytes(32).toString('base64url');

let dir: string;
let port: number;
let server: ChildProcess;
let redis: Redis;
let h: DispatcherHarness;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'secrets-at-rest-'));
  port = await freePort();
  // Uncompressed RDB strings: a secret in the dump can be found by a plain search.
  server = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--dir', dir, '--save', '', '--appendonly', 'no', '--rdbcompression', 'no'], {
    stdio: 'ignore',
  });
  await redisAnswers({ port }, 'the private redis-server');
  redis = new Redis(port, '127.0.0.1');
}, 30_000);

afterAll(async () => {
  await h?.stop();
  redis?.disconnect();
  const exited = once(server, 'exit');
  server.kill('SIGKILL');
  await exited;
  rmSync(dir, { recursive: true, force: true });
});

// The admin CLI's main in this process, with the environment its process would get
// (test/admin/admin-cli.test.ts runs each command as the built CLI): what it writes to the store is
// what this test reads.
const admin = (env: Record<string, string>, ...args: string[]) =>
  adminJson(args, { PATH: process.env.PATH, REDIS_URL: `redis://127.0.0.1:${port}`, KEY_PREFIX: h.stack.prefix, ...env });

it('keeps plain records working, seals them, and leaves nothing to read in a dump', async () => {
  // A workspace made as before encryption (the tests' own accounts seal nothing): its secret is plain.
  // The services run in this process: what they seal and what a dump holds are the same as a process's.
  h = await DispatcherHarness.start({ REDIS_URL: `redis://127.0.0.1:${port}`, SECRETS_ENCRYPTION_KEYS: KEY }, { inProcess: true });
  const prefix = h.stack.prefix;
  const plainSecret = h.workspace.signingSecret;
  expect(await redis.get(allKeys(prefix).workspaceSecrets(h.workspace.workspaceId))).toContain(plainSecret);

  // The plain secret still signs; the link key the first service made is sealed.
  h.receiver.script('/sealed', () => ({ status: 200 }));
  const first = await h.jobs.image(h.receiver.url('/sealed'));
  await h.settled(await h.messageIdOf(first), ['delivered']);
  const stored = h.receiver.requests.filter((r) => r.path === '/sealed');
  expect(verify(stored[0].body, stored[0].headers, plainSecret)).toMatchObject({ data: { id: first } });
  expect(await redis.get(allKeys(prefix).linkKey())).toMatch(/^enc1:/);
  // A link key stored plain, as before encryption.
  await redis.set(allKeys(prefix).linkKey(), PLAIN_LINK_KEY);
  // An ed25519 key pair stored plain, as before encryption (the tests' own repository seals nothing).
  const plainAccounts = new WorkspaceRepository(redis, allKeys(prefix));
  const plainPair = generateKeyPair();
  expect(
    await plainAccounts.addFirstSigningKey(h.workspace.workspaceId, {
      secret_key: plainPair.secretKey,
      public_key: plainPair.publicKey,
      created_ms: Date.now(),
      expires_ms: 0,
    }),
  ).toBe(true);
  expect(await redis.get(allKeys(prefix).workspaceSigningKeys(h.workspace.workspaceId))).toContain(plainPair.secretKey);

  // The admin command seals every workspace's secrets; a rotation writes sealed.
  const env = { SECRETS_ENCRYPTION_KEYS: KEY };
  expect(await admin(env, 'reencrypt-secrets')).toEqual({ workspaces: 1, workspaces_resealed: 1, link_signing_key: 'resealed' });
  expect(await admin(env, 'reencrypt-secrets')).toMatchObject({ workspaces_resealed: 0, link_signing_key: 'already sealed' });
  const rotated = await admin(env, 'rotate-secret', '--workspace', h.workspace.workspaceId);
  expect(rotated.signing_secret).toMatch(/^whsec_/);
  expect(await redis.get(allKeys(prefix).workspaceSigningKeys(h.workspace.workspaceId))).not.toContain(plainPair.secretKey);
  // The key pair rotated by the CLI: the new secret key is written sealed.
  const rotatedKey = await admin(env, 'rotate-signing-key', '--workspace', h.workspace.workspaceId);
  expect(rotatedKey.public_key).toMatch(/^whpk_/);
  const [newSecretKey, oldSecretKey] = (
    await new WorkspaceRepository(redis, allKeys(prefix), SecretBox.of([Buffer.from(KEY, 'base64')])).activeSigners(h.workspace.workspaceId)
  ).secretKeys;
  expect([publicKeyOf(newSecretKey), oldSecretKey]).toEqual([rotatedKey.public_key, plainPair.secretKey]);

  // Deliveries sign with both (the rotation overlap), and each verifies.
  const second = await h.jobs.image(h.receiver.url('/sealed'));
  await h.settled(await h.messageIdOf(second), ['delivered']);
  const last = h.receiver.requests.filter((r) => r.path === '/sealed').at(-1)!;
  expect(verify(last.body, last.headers, rotated.signing_secret)).toMatchObject({ data: { id: second } });
  expect(verify(last.body, last.headers, plainSecret)).toMatchObject({ data: { id: second } });
  // And with both ed25519 keys (v1a), each public key on its own.
  expect(last.headers['webhook-signature'].split(' ').filter((e) => e.startsWith('v1a,'))).toHaveLength(2);
  for (const publicKey of [rotatedKey.public_key, plainPair.publicKey])
    expect(verify(last.body, last.headers, publicKey)).toMatchObject({ data: { id: second } });

  // Those allowed still see them: the dashboard's Reveal, and the admin CLI.
  const dashboard = await DashboardClient.signedIn(h.stack.baseUrl, h.workspace.owner.email, h.workspace.owner.password);
  const revealed = await dashboard.call('POST', '/secrets/reveal');
  expect([revealed.status, revealed.json.current, revealed.json.previous]).toEqual([200, rotated.signing_secret, plainSecret]);

  // A dump of the whole Redis, as a backup would take it.
  await redis.save();
  const dump = readFileSync(join(dir, 'dump.rdb'));
  expect(dump.length).toBeGreaterThan(1000);
  // A list rewritten by a script went through Lua's cjson, which writes `/` as `\/`: look for both spellings.
  const holds = (text: string) => dump.includes(text) || dump.includes(text.replaceAll('/', '\\/'));
  for (const secret of [plainSecret, rotated.signing_secret]) {
    expect([secret, holds(secret.slice('whsec_'.length))]).toEqual([secret, false]);
  }
  expect(dump.includes('whsec_')).toBe(false);
  for (const secretKey of [plainPair.secretKey, newSecretKey]) {
    const raw = secretKey.slice('whsk_'.length);
    expect([secretKey, holds(raw), dump.includes(Buffer.from(raw, 'base64'))]).toEqual([secretKey, false, false]);
  }
  expect(dump.includes('whsk_')).toBe(false);
  // The public keys are there (they are public), so the search could have found the secret ones.
  expect(holds(rotatedKey.public_key)).toBe(true);
  expect(dump.includes(PLAIN_LINK_KEY)).toBe(false);
  // The workspace's record is there, so the search looked at the right dump.
  expect(dump.includes(h.workspace.workspaceId)).toBe(true);
}, 120_000);
