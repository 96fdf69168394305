import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { createAccounts, WorkspaceRepository } from '@media/accounts';
import { CONFIG_KEYS } from '@media/common';
import { COMMANDS } from '../../tools/admin/src/admin';
import { REDIS_URL } from '../support/stack';
import { allKeys } from '../support/store-keys';
import { adminInProcess, adminJson } from './support/admin-cli';

// Each command runs at least once as the built CLI, a process (`admin`): its exit code and its output
// through the real binary. The rest call the same main in this process (`inProcess`), with the same
// environment, and read the same output and exit code.
const run = promisify(execFile);
const prefix = `test-${randomBytes(6).toString('hex')}`;
const redis = new Redis(REDIS_URL);
const ENV = { PATH: process.env.PATH, REDIS_URL, KEY_PREFIX: prefix, SECRET_ROTATION_OVERLAP_SECONDS: '3600' };
const admin = async (...args: string[]) => {
  const { stdout } = await run(process.execPath, [join(__dirname, '../../tools/admin/dist/main.js'), ...args], { env: ENV });
  return JSON.parse(stdout);
};
const inProcess = (...args: string[]) => adminJson(args, ENV);

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
  const workspaces = new WorkspaceRepository(redis, allKeys(prefix));
  expect(await workspaces.findByApiKey(out.api_key)).toBe(out.workspace_id);
  const signed = await accounts().signIn(out.dashboard.email, out.dashboard.password, '127.0.0.1');
  expect(signed.session).toMatchObject({ role: 'owner', workspace: { id: out.workspace_id } });
});

it('rotate-secret prints the new secret and when the previous one stops signing', async () => {
  const ws = await inProcess('create-workspace', '--name', 'rot');
  const before = Date.now();
  const out = await admin('rotate-secret', '--workspace', ws.workspace_id);
  expect(out.signing_secret).toMatch(/^whsec_/);
  expect(out.signing_secret).not.toBe(ws.signing_secret);
  const ends = Date.parse(out.previous_secret_expires_at);
  expect(ends).toBeGreaterThanOrEqual(before + 3_600_000 - 1_000);
  expect(ends).toBeLessThanOrEqual(Date.now() + 3_600_000);
  const secrets = await new WorkspaceRepository(redis, allKeys(prefix)).activeSecrets(ws.workspace_id);
  expect(secrets).toEqual([out.signing_secret, ws.signing_secret]);
});

it('enable-asymmetric-signing prints the public key (the same one when run again); rotate-signing-key keeps the previous one for the overlap', async () => {
  const ws = await inProcess('create-workspace', '--name', 'ed');
  await expect(inProcess('rotate-signing-key', '--workspace', ws.workspace_id)).rejects.toMatchObject({
    code: 2,
    stderr: expect.stringContaining('turn asymmetric signing on first'),
  });
  await expect(inProcess('enable-asymmetric-signing', '--workspace', 'ws_nope')).rejects.toMatchObject({
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
  expect(await inProcess('enable-asymmetric-signing', '--workspace', ws.workspace_id)).toEqual({ ...on, enabled_now: false });

  const before = Date.now();
  const rotated = await admin('rotate-signing-key', '--workspace', ws.workspace_id);
  expect(rotated.public_key).not.toBe(on.public_key);
  const ends = Date.parse(rotated.previous_key_expires_at);
  expect(ends).toBeGreaterThanOrEqual(before + 3_600_000 - 1_000);
  expect(ends).toBeLessThanOrEqual(Date.now() + 3_600_000);
  expect(rotated.public_keys.map((k: { public_key: string }) => k.public_key)).toEqual([rotated.public_key, on.public_key]);
  // The HMAC secret is left alone.
  expect(await new WorkspaceRepository(redis, allKeys(prefix)).activeSecrets(ws.workspace_id)).toEqual([ws.signing_secret]);
});

it('add-member prints credentials that sign in; remove-member removes; the last owner stays', async () => {
  const ws = await inProcess('create-workspace', '--name', 'team');
  const out = await admin('add-member', '--workspace', ws.workspace_id, '--email', 'Dev@Team.test', '--role', 'admin');
  expect(out).toEqual({ workspace_id: ws.workspace_id, dashboard: { email: 'dev@team.test', password: expect.any(String), role: 'admin' } });
  const signed = await accounts().signIn('dev@team.test', out.dashboard.password, '127.0.0.1');
  expect(signed.session).toMatchObject({ role: 'admin', workspace: { id: ws.workspace_id } });
  expect(await admin('remove-member', '--workspace', ws.workspace_id, '--email', 'dev@team.test')).toEqual({
    workspace_id: ws.workspace_id,
    removed: 'dev@team.test',
  });
  expect(await accounts().resume(signed.token)).toBeUndefined();
  await expect(inProcess('remove-member', '--workspace', ws.workspace_id, '--email', ws.dashboard.email)).rejects.toMatchObject({
    code: 2,
    stderr: expect.stringContaining('last owner'),
  });
  await expect(inProcess('add-member', '--workspace', ws.workspace_id, '--email', 'x@team.test', '--role', 'boss')).rejects.toMatchObject({ code: 2 });
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
  // The two processes at once: each waits on its own unreachable Redis.
  const settings = [{ REDIS_CLUSTER_NODES: '127.0.0.1:1' }, { REDIS_SENTINELS: '127.0.0.1:1', REDIS_SENTINEL_NAME: 'mymaster' }];
  await Promise.all(
    settings.map(async (setting) => {
      const refused = run(process.execPath, [cli, 'list-keys', '--workspace', 'ws_x'], {
        env: { PATH: process.env.PATH, KEY_PREFIX: prefix, ...setting },
        timeout: 30_000,
      });
      await expect(refused).rejects.toMatchObject({ code: 1, stderr: expect.stringMatching(/^admin: cannot reach Redis [^\n]*\n$/) });
    }),
  );
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
  const ws = await inProcess('create-workspace', '--name', 'flags');
  await expect(admin('set-limits', '--workspace', ws.workspace_id, '--max-waiting-job', '2')).rejects.toMatchObject({
    code: 2,
    stderr: expect.stringMatching(/^unknown flag --max-waiting-job\nusage: admin set-limits --workspace ID/),
  });
  await expect(inProcess('rotate-secret', '--workspace', ws.workspace_id, '--workspace', 'ws_other')).rejects.toMatchObject({
    code: 2,
    stderr: expect.stringContaining('--workspace is given twice'),
  });
});

it('makes a workspace with a long name, whose owner address stays an address', async () => {
  const out = await inProcess('create-workspace', '--name', 'Long '.repeat(60));
  expect(out.dashboard.email).toBe(`owner@${'long-'.repeat(12)}lon.local`);
});

it('exits 2 with usage on bad input', async () => {
  await expect(inProcess('rotate-secret')).rejects.toMatchObject({ code: 2, stderr: expect.stringContaining('--workspace is required') });
  await expect(admin('frobnicate')).rejects.toMatchObject({
    code: 2,
    stdout: '',
    stderr: expect.stringMatching(/^unknown command "frobnicate"\n\nusage: npm run -s admin -- <command>[\s\S]*\n {2}create-workspace {2,}/),
  });
  await expect(inProcess()).rejects.toMatchObject({ code: 2, stdout: '', stderr: expect.stringMatching(/^no command given\n\nusage: /) });
  // Command names are looked up among the commands only, never on Object.prototype.
  for (const name of ['constructor', '__proto__', 'toString', 'hasOwnProperty']) {
    await expect(inProcess(name)).rejects.toMatchObject({ code: 2, stderr: expect.stringContaining('usage') });
  }
});

describe('--help', () => {
  /** The CLI run as a process with only PATH and `env`: exit code and both outputs, whatever the code. */
  const cliProcess = async (args: string[], env: Record<string, string> = {}) =>
    run(process.execPath, [join(__dirname, '../../tools/admin/dist/main.js'), ...args], { env: { PATH: process.env.PATH, ...env } }).then(
      ({ stdout, stderr }) => ({ code: 0, stdout, stderr }),
      (err: { code: number; stdout: string; stderr: string }) => ({ code: err.code, stdout: err.stdout, stderr: err.stderr }),
    );
  /** The same, the CLI's main called in this process. */
  const cliInProcess = (args: string[], env: Record<string, string> = {}) => adminInProcess(args, { PATH: process.env.PATH, ...env });
  /** Names like REDIS_URL in a text. */
  const settingsIn = (text: string) => [...new Set([...text.matchAll(/\b[A-Z][A-Z0-9]*_[A-Z0-9_]+\b/g)].map((m) => m[0]))];

  it.each([
    ['--help', cliProcess],
    ['-h', cliInProcess],
  ])('%s lists every command in one line each, and the settings they read, with exit code 0', async (flag, cli) => {
    // Help reads nothing: not even a configuration that a command would refuse.
    const { code, stdout, stderr } = await cli([flag], { KEY_PREFIX: '{two}{tags}' });
    expect({ code, stderr }).toEqual({ code: 0, stderr: '' });
    expect(stdout).toMatch(/^usage: npm run -s admin -- <command> \[options\]\n/);
    for (const [name, command] of Object.entries(COMMANDS))
      expect(stdout).toMatch(new RegExp(`^ {2}${name} +${escape(command.summary.split(' ').slice(0, 3).join(' '))}`, 'm'));
    const listed = stdout.split('\n').filter((line) => /^ {2}[a-z]/.test(line));
    expect(listed.map((line) => line.trim().split(' ')[0])).toEqual(Object.keys(COMMANDS));
    for (const setting of ['REDIS_URL', 'KEY_PREFIX', 'SECRETS_ENCRYPTION_KEYS']) expect(stdout).toMatch(new RegExp(`^ {2}${setting} {2,}\\S`, 'm'));
    expect(stdout).toContain('<command> --help');
    expect(settingsIn(stdout).filter((name) => !CONFIG_KEYS.includes(name))).toEqual([]);
  });

  it.each(Object.keys(COMMANDS))('%s --help and -h describe the command, its options and the settings it reads, and run nothing', async (name) => {
    const command = COMMANDS[name];
    // KEYS answers in no set order.
    const before = (await redis.keys(`${prefix}:*`)).sort();
    // Given with the command's flags too: help is all that happens.
    const variants = [
      [name, '--help'],
      [name, '--workspace', 'ws_help', '-h'],
    ];
    const runs = await Promise.all(variants.map((args) => cliInProcess(args, { REDIS_URL, KEY_PREFIX: prefix })));
    expect(runs[1]).toEqual(runs[0]);
    for (const [i, { code, stdout, stderr }] of runs.entries()) {
      expect({ args: variants[i], code, stderr }).toEqual({ args: variants[i], code: 0, stderr: '' });
      expect(stdout.startsWith(`usage: npm run -s admin -- ${command.usage}\n\n${command.description}\n\nOptions:\n`)).toBe(true);
      // Every flag the command takes is described; so is --help.
      for (const [, flag] of command.usage.matchAll(/--([a-z-]+)/g)) expect(stdout).toMatch(new RegExp(`^ {2}--${flag}\\b.* {2,}\\S`, 'm'));
      expect(stdout).toMatch(/^ {2}-h, --help +this help$/m);
      const settings = stdout.slice(stdout.indexOf('Settings (environment variables):'));
      for (const setting of ['REDIS_URL', 'KEY_PREFIX', ...command.settings]) expect(settings).toMatch(new RegExp(`^ {2}${setting} {2,}\\S`, 'm'));
      expect(settingsIn(settings).filter((setting) => !CONFIG_KEYS.includes(setting))).toEqual([]);
    }
    expect((await redis.keys(`${prefix}:*`)).sort()).toEqual(before);
  });

  it('names SECRETS_ENCRYPTION_KEYS for the commands that make or read a secret', () => {
    const sealing = Object.keys(COMMANDS).filter((name) => COMMANDS[name].settings.includes('SECRETS_ENCRYPTION_KEYS'));
    expect(sealing).toEqual(['create-workspace', 'rotate-secret', 'enable-asymmetric-signing', 'rotate-signing-key', 'reencrypt-secrets']);
  });
});

function escape(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
