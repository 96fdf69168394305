import crypto, { randomBytes, scryptSync } from 'node:crypto';
import { Redis } from 'ioredis';
import { FailureCounter, SessionRepository } from './session-store';
import { hashApiKey, WorkspaceRepository } from './workspace-store';
import { SecretBox } from '@media/storage';
import { publicKeyOf, signatureHeader, signatureHeaderWith } from '@media/callback-signing';
import { SIGN_IN_LIMITS, WorkspaceAccounts } from './accounts';
import { AsymmetricSigningOffError, InvalidCredentialsError, LastOwnerError, MemberExistsError, MemberNotFoundError, SignInThrottledError } from './errors';
import { hashPassword, SCRYPT_PARAMS, verifyPassword } from './passwords';
import { can } from './permissions';
import { AuditLog } from './audit';
import { allKeys } from '../../../test/support/store-keys';

const redis = new Redis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379');
const keys = allKeys(`test-${randomBytes(6).toString('hex')}`);
const workspaces = new WorkspaceRepository(redis, keys);
let clock = Date.now();
const audit = new AuditLog(redis, keys, 86_400, () => clock);
/**
 * scrypt at 1/32 of production's N: the same code path (one scrypt per sign-in, shared salts, the
 * decoy) for about a millisecond a hash instead of tens, since most tests here sign in dozens of
 * times. That production uses SCRYPT_PARAMS is checked on its own, below.
 */
const CHEAP_SCRYPT = { N: 2 ** 10, r: 8, p: 1, keylen: 32 };
const accounts = new WorkspaceAccounts({
  workspaces,
  sessions: new SessionRepository(redis, keys),
  failures: new FailureCounter(redis, keys, SIGN_IN_LIMITS),
  rotationOverlapSeconds: 86_400,
  audit,
  scrypt: CHEAP_SCRYPT,
  now: () => clock,
});

afterAll(async () => {
  const found = (await Promise.all(keys.patterns.map((pattern) => redis.keys(pattern)))).flat();
  if (found.length > 0) await redis.del(...found);
  redis.disconnect();
});

describe('WorkspaceAccounts', () => {
  it('mints the first credentials and stores API keys only as hashes', async () => {
    const created = await accounts.createWorkspace('acme', 'Owner@Acme.test');
    expect(created.apiKey).toMatch(/^sk_[A-Za-z0-9_-]{43}$/);
    expect(created.signingSecret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(created.owner).toMatchObject({ email: 'owner@acme.test', role: 'owner' });
    expect(await workspaces.findByApiKey(created.apiKey)).toBe(created.workspace.id);
    expect(await workspaces.findByApiKey(`${created.apiKey}x`)).toBeUndefined();
    const everything = (await Promise.all(keys.patterns.map((pattern) => redis.keys(pattern)))).flat();
    for (const key of everything) {
      const type = await redis.type(key);
      const dump = JSON.stringify(
        type === 'hash'
          ? await redis.hgetall(key)
          : type === 'string'
            ? await redis.get(key)
            : type === 'zset'
              ? await redis.zrange(key, 0, -1)
              : await redis.smembers(key),
      );
      expect(dump).not.toContain(created.apiKey);
      expect(dump).not.toContain(created.owner.password);
    }
    expect(everything).toContain(keys.apiKey(hashApiKey(created.apiKey)));
  });

  it('hashes passwords with explicit scrypt parameters and still reads the older form', async () => {
    const hash = await hashPassword('correct horse');
    expect(hash).toMatch(/^scrypt\$32768\$8\$1\$/);
    expect(await verifyPassword('correct horse', hash)).toBe(true);
    expect(await verifyPassword('wrong', hash)).toBe(false);
    // The format written before the parameters were: scrypt$salt$hash with Node's defaults.
    const { scryptSync } = await import('node:crypto');
    const salt = randomBytes(16);
    expect(await verifyPassword('old', `scrypt$${salt.toString('base64')}$${scryptSync('old', salt, 32).toString('base64')}`)).toBe(true);
  });

  it('hashes members’ passwords, and checks an unknown e-mail against a decoy, with the production parameters unless told otherwise', async () => {
    expect(SCRYPT_PARAMS).toEqual({ N: 2 ** 15, r: 8, p: 1, keylen: 32 });
    const production = new WorkspaceAccounts({
      workspaces,
      sessions: new SessionRepository(redis, keys),
      failures: new FailureCounter(redis, keys, SIGN_IN_LIMITS),
      rotationOverlapSeconds: 86_400,
      audit,
      now: () => clock,
    });
    const { workspace, owner } = await production.createWorkspace('production-cost', 'owner@prod.test');
    const stored = (await workspaces.member(workspace.id, owner.email))!.password_hash;
    expect(stored).toMatch(/^scrypt\$32768\$8\$1\$/);
    expect(Buffer.from(stored.split('$')[5]!, 'base64')).toHaveLength(32);
    const scrypt = jest.spyOn(crypto, 'scrypt');
    let calls: unknown[][];
    try {
      const signed = await production.signIn(owner.email, owner.password, '10.6.0.1');
      expect(signed.session.workspace.id).toBe(workspace.id);
      await production.signOut(signed.token);
      await expect(production.signIn('nobody@prod.test', 'wrong password', '10.6.0.1')).rejects.toBeInstanceOf(InvalidCredentialsError);
      calls = [...scrypt.mock.calls];
    } finally {
      scrypt.mockRestore();
    }
    // The owner's sign-in, the decoy (made on first use; nothing here used production's before) and the unknown e-mail's sign-in.
    const options = calls.map(([, , keylen, opts]) => ({ keylen, ...(opts as object) }));
    expect(options).toHaveLength(3);
    for (const used of options) expect(used).toMatchObject({ keylen: 32, N: 2 ** 15, r: 8, p: 1 });
  });

  it('signs members in, resumes and ends sessions, and ends a member’s sessions when their role changes or they are removed', async () => {
    const { workspace, owner } = await accounts.createWorkspace('members', 'boss@m.test');
    const dev = await accounts.addMember(workspace.id, 'Dev@m.test', 'member');
    await expect(accounts.addMember(workspace.id, 'dev@m.test', 'admin')).rejects.toBeInstanceOf(MemberExistsError);
    const signed = await accounts.signIn('BOSS@m.test', owner.password, '10.0.0.1');
    expect(signed.session).toMatchObject({ email: 'boss@m.test', role: 'owner', workspace: { id: workspace.id } });
    expect(await redis.keys(`${keys.prefix}:session:*`)).not.toContainEqual(expect.stringContaining(signed.token));
    const devSession = await accounts.signIn('dev@m.test', dev.password, '10.0.0.1');
    expect(devSession.session.role).toBe('member');
    // A new role: the session opened under the old one ends; signed in again, the member has the new role.
    await accounts.setRole(workspace.id, 'dev@m.test', 'admin');
    expect(await accounts.resume(devSession.token)).toBeUndefined();
    const asAdmin = await accounts.signIn('dev@m.test', dev.password, '10.0.0.1');
    expect((await accounts.resume(asAdmin.token))?.role).toBe('admin');
    await accounts.removeMember(workspace.id, 'dev@m.test');
    expect(await accounts.resume(asAdmin.token)).toBeUndefined();
    await expect(accounts.signIn('dev@m.test', dev.password, '10.0.0.1')).rejects.toBeInstanceOf(InvalidCredentialsError);
    // The owner's session was never touched by any of it.
    expect((await accounts.resume(signed.token))?.role).toBe('owner');
    await accounts.signOut(signed.token);
    expect(await accounts.resume(signed.token)).toBeUndefined();
  });

  it('never revives a removed member’s session when the same e-mail is added again, and keeps nothing alive for a refused cookie', async () => {
    const { workspace } = await accounts.createWorkspace('readd', 'own@r.test');
    const first = await accounts.addMember(workspace.id, 'ex@r.test', 'member');
    const old = await accounts.signIn('ex@r.test', first.password, '10.0.0.2');
    await accounts.removeMember(workspace.id, 'ex@r.test');
    // Added again (the way to give someone a new password), with a higher role this time.
    const again = await accounts.addMember(workspace.id, 'ex@r.test', 'admin');
    expect(await accounts.resume(old.token)).toBeUndefined();
    // The refused session is gone, not refreshed: sending the cookie again finds nothing.
    expect(await redis.keys(`${keys.prefix}:session:*`)).toHaveLength(0);
    expect(await accounts.resume(old.token)).toBeUndefined();
    expect((await accounts.resume((await accounts.signIn('ex@r.test', again.password, '10.0.0.2')).token))?.role).toBe('admin');
  });

  it('signs an e-mail of several workspaces into the one whose password it gives; adding it again changes that workspace’s password only', async () => {
    const email = 'multi@w.test';
    const a = await accounts.createWorkspace('multi-a', email);
    const b = await accounts.createWorkspace('multi-b', 'boss-b@w.test');
    const c = await accounts.createWorkspace('multi-c', 'boss-c@w.test');
    const inB = await accounts.addMember(b.workspace.id, email, 'admin');
    const inC = await accounts.addMember(c.workspace.id, email, 'member');
    const expected: [string, string, string][] = [
      [a.owner.password, a.workspace.id, 'owner'],
      [inB.password, b.workspace.id, 'admin'],
      [inC.password, c.workspace.id, 'member'],
    ];
    for (const [password, workspaceId, role] of expected) {
      const { session } = await accounts.signIn(email, password, '10.4.0.1');
      expect([session.workspace.id, session.role]).toEqual([workspaceId, role]);
    }
    // One salt and one set of parameters for the three, so one scrypt checks them all; each its own password.
    const hashes = (await Promise.all([a, b, c].map((w) => workspaces.member(w.workspace.id, email)))).map((m) => m!.password_hash);
    expect(new Set(hashes.map((h) => h.split('$').slice(0, 5).join('$'))).size).toBe(1);
    expect(new Set(hashes).size).toBe(3);
    // B's admin gives the member a new password by adding them again: B's changes, A's and C's still open theirs.
    await accounts.removeMember(b.workspace.id, email);
    const again = await accounts.addMember(b.workspace.id, email, 'member');
    await expect(accounts.signIn(email, inB.password, '10.4.0.2')).rejects.toBeInstanceOf(InvalidCredentialsError);
    expect((await accounts.signIn(email, again.password, '10.4.0.2')).session.workspace.id).toBe(b.workspace.id);
    expect((await accounts.signIn(email, a.owner.password, '10.4.0.2')).session.workspace.id).toBe(a.workspace.id);
    expect((await accounts.signIn(email, inC.password, '10.4.0.2')).session.workspace.id).toBe(c.workspace.id);
  });

  it('still signs in with a hash stored in the older form, and a membership added after it shares its salt', async () => {
    const { workspace } = await accounts.createWorkspace('legacy', 'boss@legacy.test');
    const salt = randomBytes(16);
    // As an older version stored it: scrypt$salt$hash with Node's defaults, a salt of its own.
    await workspaces.addMember(workspace.id, {
      email: 'old@legacy.test',
      role: 'member',
      password_hash: `scrypt$${salt.toString('base64')}$${scryptSync('old password', salt, 32).toString('base64')}`,
      session_epoch: 'before',
    });
    expect((await accounts.signIn('old@legacy.test', 'old password', '10.4.1.1')).session.workspace.id).toBe(workspace.id);
    const other = await accounts.createWorkspace('legacy-2', 'boss2@legacy.test');
    const added = await accounts.addMember(other.workspace.id, 'old@legacy.test', 'admin');
    expect((await workspaces.member(other.workspace.id, 'old@legacy.test'))!.password_hash).toMatch(
      new RegExp(`^scrypt\\$16384\\$8\\$1\\$${salt.toString('base64').replace(/[+/]/g, '\\$&')}\\$`),
    );
    expect((await accounts.signIn('old@legacy.test', 'old password', '10.4.1.1')).session.workspace.id).toBe(workspace.id);
    expect((await accounts.signIn('old@legacy.test', added.password, '10.4.1.1')).session).toMatchObject({
      workspace: { id: other.workspace.id },
      role: 'admin',
    });
  });

  it('costs every sign-in one scrypt of the same parameters: an unknown e-mail, one of one workspace or of three are told apart by nothing', async () => {
    const emails = { unknown: 'nobody@cost.test', single: 'one@cost.test', triple: 'three@cost.test' };
    await accounts.createWorkspace('cost-one', emails.single);
    await accounts.createWorkspace('cost-three-a', emails.triple);
    for (const name of ['cost-three-b', 'cost-three-c']) {
      const { workspace } = await accounts.createWorkspace(name, `boss-${name}@cost.test`);
      await accounts.addMember(workspace.id, emails.triple, 'member');
    }
    const names = Object.keys(emails) as (keyof typeof emails)[];
    let address = 0;
    /** One wrong password, from an address of its own so the failure limits never step in. */
    const attempt = async (email: string): Promise<void> => {
      const outcome = await accounts.signIn(email, 'wrong password', `10.5.${address >> 8}.${address++ & 255}`).catch((e: unknown) => e);
      expect(outcome).toBeInstanceOf(InvalidCredentialsError);
    };
    // The decoy hash is made on first use: its own scrypt is not a sign-in's.
    for (const name of names) await attempt(emails[name]);

    // The cost of a sign-in is its scrypts: how many, and their work factors and key length (the
    // password's length aside, which the caller chose). Counted rather than timed, so that a busy
    // machine cannot make equal costs look unequal.
    const scrypt = jest.spyOn(crypto, 'scrypt');
    const costs: Record<string, string[]> = { unknown: [], single: [], triple: [] };
    try {
      for (let round = 0; round < 5; round++) {
        for (const name of names) {
          const before = scrypt.mock.calls.length;
          await attempt(emails[name]);
          costs[name]!.push(JSON.stringify(scrypt.mock.calls.slice(before).map(([, , keylen, options]) => ({ keylen, options }))));
        }
      }
    } finally {
      scrypt.mockRestore();
    }
    const one = costs.single![0]!;
    expect(JSON.parse(one)).toEqual([
      { keylen: CHEAP_SCRYPT.keylen, options: expect.objectContaining({ N: CHEAP_SCRYPT.N, r: CHEAP_SCRYPT.r, p: CHEAP_SCRYPT.p }) },
    ]);
    expect(costs).toEqual({ unknown: Array(5).fill(one), single: Array(5).fill(one), triple: Array(5).fill(one) });
  });

  it('ends a session a week after sign-in however active it was', async () => {
    const { owner } = await accounts.createWorkspace('lifetime', 'l@l.test');
    const signed = await accounts.signIn(owner.email, owner.password, '10.3.0.1');
    const start = clock;
    clock = start + 6 * 86_400_000;
    expect(await accounts.resume(signed.token)).toBeDefined();
    clock = start + 7 * 86_400_000 + 1;
    expect(await accounts.resume(signed.token)).toBeUndefined();
    clock = start;
  });

  it('never leaves a workspace without an owner', async () => {
    const { workspace } = await accounts.createWorkspace('owners', 'a@o.test');
    await expect(accounts.removeMember(workspace.id, 'a@o.test')).rejects.toBeInstanceOf(LastOwnerError);
    await expect(accounts.setRole(workspace.id, 'a@o.test', 'admin')).rejects.toBeInstanceOf(LastOwnerError);
    await expect(accounts.removeMember(workspace.id, 'nobody@o.test')).rejects.toBeInstanceOf(MemberNotFoundError);
    await accounts.addMember(workspace.id, 'b@o.test', 'owner');
    // Two owners demoting each other at once: the script lets exactly one through.
    const both = await Promise.allSettled([accounts.setRole(workspace.id, 'a@o.test', 'member'), accounts.setRole(workspace.id, 'b@o.test', 'member')]);
    expect(both.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
    expect((await accounts.members(workspace.id)).filter((m) => m.role === 'owner')).toHaveLength(1);
  });

  it('slows down failures for one e-mail from one address, the right password included there, and never keeps the owner out from another', async () => {
    const { owner } = await accounts.createWorkspace('throttle', 't@t.test');
    const start = clock;
    for (let i = 0; i < 5; i++) await expect(accounts.signIn(owner.email, 'wrong', '10.1.0.1')).rejects.toBeInstanceOf(InvalidCredentialsError);
    // The sixth from that address must wait a second, the right password too.
    const refused = await accounts.signIn(owner.email, owner.password, '10.1.0.1').catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(SignInThrottledError);
    expect((refused as SignInThrottledError).retryAfterSeconds).toBe(1);
    // From anywhere else the owner signs in at once.
    expect((await accounts.signIn(owner.email, owner.password, '10.1.9.9')).session.email).toBe(owner.email);
    // The wait doubles with each further failure, up to a minute.
    clock = start + 1_000;
    await expect(accounts.signIn(owner.email, 'wrong', '10.1.0.1')).rejects.toBeInstanceOf(InvalidCredentialsError);
    expect(((await accounts.signIn(owner.email, 'wrong', '10.1.0.1').catch((e: unknown) => e)) as SignInThrottledError).retryAfterSeconds).toBe(2);
    clock = start + 1_000 + 2_000;
    expect((await accounts.signIn(owner.email, owner.password, '10.1.0.1')).session.email).toBe(owner.email);
    // A success clears that address's count for the e-mail: five free failures again.
    for (let i = 0; i < 5; i++) await expect(accounts.signIn(owner.email, 'wrong', '10.1.0.1')).rejects.toBeInstanceOf(InvalidCredentialsError);
    clock = start;
  });

  it('lets five of a burst of parallel guesses from one address reach the password check, and limits an address over every e-mail', async () => {
    const { owner } = await accounts.createWorkspace('burst', 'b@b.test');
    const outcomes = await Promise.all(Array.from({ length: 40 }, () => accounts.signIn(owner.email, 'wrong', '10.2.0.1').catch((e: unknown) => e)));
    expect(outcomes.filter((e) => e instanceof InvalidCredentialsError)).toHaveLength(5);
    expect(outcomes.filter((e) => e instanceof SignInThrottledError)).toHaveLength(35);
    // Spraying many e-mails from one address: fifty failures, then nothing more from there this window.
    for (let i = 0; i < 50; i++) await expect(accounts.signIn(`nobody${i}@b.test`, 'wrong', '10.2.0.2')).rejects.toBeInstanceOf(InvalidCredentialsError);
    expect((await accounts.signIn(owner.email, owner.password, '10.2.0.2').catch((e: unknown) => e)) as SignInThrottledError).toBeInstanceOf(
      SignInThrottledError,
    );
    expect((await accounts.signIn(owner.email, owner.password, '10.2.0.3')).session.email).toBe(owner.email);
  });

  it('lists, creates and revokes API keys and records their use at most once a minute', async () => {
    const created = await accounts.createWorkspace('keys', 'k@k.test');
    const other = await accounts.createWorkspace('other', 'k@other.test');
    const made = await accounts.createApiKey(created.workspace.id);
    expect(made.key).toMatch(/^sk_/);
    expect(made.prefix).toBe(`${made.key.slice(0, 7)}…`);
    let listed = await accounts.apiKeys(created.workspace.id);
    expect(listed.map((k) => k.id)).toContain(made.id);
    expect(listed.every((k) => k.last_used_ms === null)).toBe(true);
    const t0 = clock;
    expect(await accounts.authenticateApiKey(made.key)).toBe(created.workspace.id);
    clock = t0 + 30_000;
    await accounts.authenticateApiKey(made.key);
    listed = await accounts.apiKeys(created.workspace.id);
    expect(listed.find((k) => k.id === made.id)?.last_used_ms).toBe(t0);
    clock = t0 + 61_000;
    await accounts.authenticateApiKey(made.key);
    expect((await accounts.apiKeys(created.workspace.id)).find((k) => k.id === made.id)?.last_used_ms).toBe(t0 + 61_000);
    await expect(accounts.revokeApiKey(other.workspace.id, made.id)).rejects.toThrow(/No API key/);
    await accounts.revokeApiKey(created.workspace.id, made.id);
    expect(await accounts.authenticateApiKey(made.key)).toBeUndefined();
    clock = Date.now();
  });

  it('trusts a looked-up key for the cache period only: a revocation elsewhere takes effect within it, here at once', async () => {
    const created = await accounts.createWorkspace('cached', 'c@cached.test');
    const cacheMs = 2_000;
    const cached = (): WorkspaceAccounts =>
      new WorkspaceAccounts({
        workspaces,
        sessions: new SessionRepository(redis, keys),
        failures: new FailureCounter(redis, keys, SIGN_IN_LIMITS),
        rotationOverlapSeconds: 86_400,
        audit,
        apiKeyCacheMs: cacheMs,
        scrypt: CHEAP_SCRYPT,
        now: () => clock,
      });
    const gateway = cached();
    const elsewhere = cached();
    const key = await gateway.createApiKey(created.workspace.id);
    const t0 = clock;
    expect(await gateway.authenticateApiKey(key.key)).toBe(created.workspace.id);
    expect(await elsewhere.authenticateApiKey(key.key)).toBe(created.workspace.id);
    // Revoked through `elsewhere` (another gateway, the admin CLI): `gateway` still trusts its lookup...
    await elsewhere.revokeApiKey(created.workspace.id, key.id);
    expect(await elsewhere.authenticateApiKey(key.key)).toBeUndefined();
    clock = t0 + cacheMs - 1;
    expect(await gateway.authenticateApiKey(key.key)).toBe(created.workspace.id);
    // ...until the bound, and not a millisecond later.
    clock = t0 + cacheMs;
    expect(await gateway.authenticateApiKey(key.key)).toBeUndefined();

    // Revoked through the same process: at once.
    const second = await gateway.createApiKey(created.workspace.id);
    expect(await gateway.authenticateApiKey(second.key)).toBe(created.workspace.id);
    await gateway.revokeApiKey(created.workspace.id, second.id);
    expect(await gateway.authenticateApiKey(second.key)).toBeUndefined();
    // An unknown key is never remembered: a key made meanwhile works at once.
    expect(await gateway.authenticateApiKey('sk_unknown')).toBeUndefined();
    clock = Date.now();
  });

  it('rotates the secret with an overlap, and ends the overlap', async () => {
    const created = await accounts.createWorkspace('rotate', 'o@r.test');
    const id = created.workspace.id;
    const rotated = await accounts.rotateSecret(id);
    expect(rotated.current.secret).not.toBe(created.signingSecret);
    expect(rotated.previous).toMatchObject({ secret: created.signingSecret, expires_ms: clock + 86_400_000 });
    expect(await workspaces.activeSecrets(id, clock + 1_000)).toEqual([rotated.current.secret, created.signingSecret]);
    expect(await workspaces.activeSecrets(id, clock + 86_400_001)).toEqual([rotated.current.secret]);
    const ended = await accounts.endOverlap(id);
    expect(ended).toEqual({ current: rotated.current, previous: null });
    expect(await workspaces.activeSecrets(id)).toEqual([rotated.current.secret]);
  });

  it('opens and decodes the signers once per stored value, and signs with a rotation or the end of an overlap at once', async () => {
    const created = await accounts.createWorkspace('signers', 'o@sg.test');
    const id = created.workspace.id;
    const first = await workspaces.activeSigners(id, clock);
    expect(first.secrets).toEqual([created.signingSecret]);
    const again = await workspaces.activeSigners(id, clock);
    expect(again.keys.secrets[0]).toBe(first.keys.secrets[0]);
    const rotated = await accounts.rotateSecret(id);
    const during = await workspaces.activeSigners(id, clock + 1_000);
    expect(during.secrets).toEqual([rotated.current.secret, created.signingSecret]);
    expect(during.keys.secrets).toHaveLength(2);
    // The header signed with the decoded keys is the one signed with the secrets themselves.
    expect(signatureHeaderWith(during.keys, 'msg_1', 1, 'body')).toBe(signatureHeader(during.secrets, 'msg_1', 1, 'body'));
    expect((await workspaces.activeSigners(id, clock + 86_400_001)).secrets).toEqual([rotated.current.secret]);
    await accounts.endOverlap(id);
    const ended = await workspaces.activeSigners(id, clock + 1_000);
    expect(ended.secrets).toEqual([rotated.current.secret]);
    expect(ended.keys.secrets).toHaveLength(1);
  });

  it('keeps exactly two secrets signing after two rotations in a row: the leaked first one stops at once', async () => {
    const created = await accounts.createWorkspace('rotate-twice', 'o@r2.test');
    const id = created.workspace.id;
    const first = await accounts.rotateSecret(id);
    const second = await accounts.rotateSecret(id);
    expect(second.previous?.secret).toBe(first.current.secret);
    expect(await workspaces.activeSecrets(id, clock + 1_000)).toEqual([second.current.secret, first.current.secret]);
  });

  it('turns asymmetric signing on once, keeping the first key pair when asked again', async () => {
    const { workspace } = await accounts.createWorkspace('ed25519', 'o@ed.test');
    expect(await accounts.publicSigningKeys(workspace.id)).toEqual([]);
    expect(await workspaces.activeSigners(workspace.id)).toMatchObject({ secretKeys: [] });
    await expect(accounts.rotateSigningKey(workspace.id)).rejects.toBeInstanceOf(AsymmetricSigningOffError);

    const first = await accounts.enableAsymmetricSigning(workspace.id);
    expect(first.enabled_now).toBe(true);
    expect(first.keys).toEqual([{ public_key: expect.stringMatching(/^whpk_[A-Za-z0-9+/]{43}=$/), created_ms: clock, expires_ms: 0 }]);
    const again = await accounts.enableAsymmetricSigning(workspace.id);
    expect(again).toEqual({ enabled_now: false, keys: first.keys });

    const { secretKeys } = await workspaces.activeSigners(workspace.id);
    expect(secretKeys).toHaveLength(1);
    expect(secretKeys[0]).toMatch(/^whsk_/);
    expect(publicKeyOf(secretKeys[0])).toBe(first.keys[0].public_key);
  });

  it('rotates the key pair with the secrets’ overlap: both sign until it ends, and the third rotation drops the first', async () => {
    const { workspace } = await accounts.createWorkspace('ed25519-rotate', 'o@edr.test');
    const id = workspace.id;
    const [first] = (await accounts.enableAsymmetricSigning(id)).keys;
    const rotated = await accounts.rotateSigningKey(id);
    expect(rotated).toHaveLength(2);
    expect(rotated[1]).toEqual({ ...first, expires_ms: clock + 86_400_000 });
    expect(rotated[0]).toMatchObject({ expires_ms: 0 });
    expect(rotated[0].public_key).not.toBe(first.public_key);
    const during = await workspaces.activeSigners(id, clock + 1_000);
    expect(during.secretKeys.map(publicKeyOf)).toEqual(rotated.map((k) => k.public_key));
    const after = await workspaces.activeSigners(id, clock + 86_400_001);
    expect(after.secretKeys.map(publicKeyOf)).toEqual([rotated[0].public_key]);
    expect((await workspaces.publicSigningKeys(id, clock + 86_400_001)).map((k) => k.public_key)).toEqual([rotated[0].public_key]);

    const again = await accounts.rotateSigningKey(id);
    expect(again.map((k) => k.public_key)).not.toContain(first.public_key);
    expect(again[1].public_key).toBe(rotated[0].public_key);
  });

  it('seals ed25519 secret keys at rest, opens them, and re-seals them under a newer key', async () => {
    const olderKey = randomBytes(32);
    const older = SecretBox.of([olderKey]);
    const sealing = new WorkspaceAccounts({
      workspaces: new WorkspaceRepository(redis, keys, older),
      sessions: new SessionRepository(redis, keys),
      failures: new FailureCounter(redis, keys, SIGN_IN_LIMITS),
      rotationOverlapSeconds: 86_400,
      audit,
      scrypt: CHEAP_SCRYPT,
      now: () => clock,
    });
    const { workspace } = await sealing.createWorkspace('sealed-keys', 'o@sk.test');
    const [key] = (await sealing.enableAsymmetricSigning(workspace.id)).keys;
    const stored = (await redis.get(keys.workspaceSigningKeys(workspace.id)))!;
    const sealedRepo = new WorkspaceRepository(redis, keys, older);
    const [secretKey] = (await sealedRepo.activeSigners(workspace.id)).secretKeys;
    expect(publicKeyOf(secretKey)).toBe(key.public_key);
    expect(stored).not.toContain('whsk_');
    expect(stored).not.toContain(secretKey.slice('whsk_'.length));
    expect(stored).toContain(key.public_key);

    // A newest key first: the re-seal rewrites the key pair too, and it opens under the new box alone afterwards.
    const newest = randomBytes(32);
    await expect(new WorkspaceRepository(redis, keys, SecretBox.of([newest])).activeSigners(workspace.id)).rejects.toThrow('does not hold');
    const rotatedBox = new WorkspaceRepository(redis, keys, SecretBox.of([newest, olderKey]));
    expect(await rotatedBox.resealSecrets(workspace.id)).toBe(true);
    expect(await rotatedBox.resealSecrets(workspace.id)).toBe(false);
    expect((await new WorkspaceRepository(redis, keys, SecretBox.of([newest])).activeSigners(workspace.id)).secretKeys).toEqual([secretKey]);
  });

  it('gives each role its permissions', () => {
    expect(['owner', 'admin', 'member'].map((r) => can(r as 'owner', 'rotate_secret'))).toEqual([true, true, false]);
    expect(['owner', 'admin', 'member'].map((r) => can(r as 'owner', 'end_overlap'))).toEqual([true, false, false]);
    expect(['owner', 'admin', 'member'].map((r) => can(r as 'owner', 'manage_members'))).toEqual([true, false, false]);
    expect(['owner', 'admin', 'member'].map((r) => can(r as 'owner', 'manage_keys'))).toEqual([true, true, false]);
  });
});
