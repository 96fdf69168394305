import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { FailureCounter, SessionRepository } from './session-store';
import { WorkspaceRepository } from './workspace-store';
import { SIGN_IN_LIMITS, WorkspaceAccounts } from './accounts';
import { AUDIT_ACTIONS, AuditLog, presentAuditEvent, type AuditActor, type AuditRecord } from './audit';
import { allKeys } from '../../../test/support/store-keys';

const redis = new Redis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379');
const keys = allKeys(`test-${randomBytes(6).toString('hex')}`);
let clock = Date.now();
const RETENTION_SECONDS = 3_600;
const audit = new AuditLog(redis, keys, RETENTION_SECONDS, () => clock);
const accounts = new WorkspaceAccounts({
  workspaces: new WorkspaceRepository(redis, keys),
  sessions: new SessionRepository(redis, keys),
  failures: new FailureCounter(redis, keys, SIGN_IN_LIMITS),
  rotationOverlapSeconds: 86_400,
  audit,
  scrypt: { N: 2 ** 10, r: 8, p: 1, keylen: 32 },
  now: () => clock,
});

afterAll(async () => {
  const found = (await Promise.all(keys.patterns.map((pattern) => redis.keys(pattern)))).flat();
  if (found.length > 0) await redis.del(...found);
  redis.disconnect();
});

const all = async (workspaceId: string): Promise<AuditRecord[]> => (await audit.list(workspaceId, { limit: 100 })).events;

describe('the audit of a workspace', () => {
  it('records every change to members, API keys, signing secrets and keys, with who made it, and no secret', async () => {
    // A millisecond between changes, so that their order is their time's.
    const tick = <T>(change: () => Promise<T>): Promise<T> => ((clock += 1), change());
    const created = await tick(() => accounts.createWorkspace('audited', 'owner@audit.test'));
    const ws = created.workspace.id;
    const alice: AuditActor = { type: 'member', email: 'owner@audit.test' };
    const member = await tick(() => accounts.addMember(ws, 'Bob@Audit.test', 'member', alice));
    await tick(() => accounts.setRole(ws, 'bob@audit.test', 'admin', alice));
    const key = await tick(() => accounts.createApiKey(ws, alice));
    await tick(() => accounts.revokeApiKey(ws, key.id, alice));
    const rotated = await tick(() => accounts.rotateSecret(ws, alice));
    await tick(() => accounts.endOverlap(ws, alice));
    const enabled = await tick(() => accounts.enableAsymmetricSigning(ws));
    // Turning it on again changes nothing, and records nothing.
    await tick(() => accounts.enableAsymmetricSigning(ws));
    await tick(() => accounts.rotateSigningKey(ws));
    await tick(() => accounts.removeMember(ws, 'bob@audit.test', alice));

    const events = await all(ws);
    expect(events.map((e) => [e.action, e.actor, e.target.type, e.target.id])).toEqual(
      [
        ['workspace.created', { type: 'operator' }, 'workspace', ws],
        ['member.added', alice, 'member', 'bob@audit.test'],
        ['member.role_changed', alice, 'member', 'bob@audit.test'],
        ['api_key.created', alice, 'api_key', key.id],
        ['api_key.revoked', alice, 'api_key', key.id],
        ['signing_secret.rotated', alice, 'signing_secret', ws],
        ['signing_secret.overlap_ended', alice, 'signing_secret', ws],
        ['signing_key.enabled', { type: 'operator' }, 'signing_key', ws],
        ['signing_key.rotated', { type: 'operator' }, 'signing_key', ws],
        ['member.removed', alice, 'member', 'bob@audit.test'],
      ].reverse(),
    );
    expect(events.find((e) => e.action === 'member.role_changed')?.target.role).toBe('admin');
    expect(events.find((e) => e.action === 'api_key.created')?.target.prefix).toBe(key.prefix);

    // No credential anywhere in what is stored or shown: not the keys, secrets or password minted
    // along the way, nor any string shaped like one.
    const stored = JSON.stringify(await Promise.all(events.map((e) => redis.get(keys.auditEvent(e.id)))));
    const shown = JSON.stringify(events.map(presentAuditEvent));
    for (const text of [stored, shown]) {
      for (const secret of [created.apiKey, created.signingSecret, created.owner.password, member.password, key.key, rotated.current.secret]) {
        expect(text).not.toContain(secret);
      }
      expect(text).not.toMatch(/sk_[A-Za-z0-9_-]{20}|whsec_|whsk_|scrypt\$/);
    }
    expect(enabled.enabled_now).toBe(true);
  });

  it('shows events as the API object, newest first, a page at a time, and only the asked-for actions', async () => {
    clock += 1;
    const { workspace } = await accounts.createWorkspace('paged', 'owner@paged.test');
    for (let i = 0; i < 5; i++) {
      clock += 1_000;
      await accounts.createApiKey(workspace.id);
    }
    clock += 1_000;
    await accounts.rotateSecret(workspace.id);
    const first = await audit.list(workspace.id, { limit: 2 });
    expect(first.hasMore).toBe(true);
    expect(first.events.map((e) => e.action)).toEqual(['signing_secret.rotated', 'api_key.created']);
    const second = await audit.list(workspace.id, { limit: 10, after: first.events[1]!.id });
    expect(second.events.map((e) => e.action)).toEqual(['api_key.created', 'api_key.created', 'api_key.created', 'api_key.created', 'workspace.created']);
    expect(second.hasMore).toBe(false);
    const keysOnly = await audit.list(workspace.id, { limit: 3, actions: ['api_key.created'] });
    expect([keysOnly.events.length, keysOnly.hasMore]).toEqual([3, true]);
    const rest = await audit.list(workspace.id, { limit: 3, actions: ['api_key.created'], after: keysOnly.events[2]!.id });
    expect([rest.events.length, rest.hasMore]).toEqual([2, false]);
    expect((await audit.list(workspace.id, { limit: 3, after: 'aud_unknown' })).cursorFound).toBe(false);

    const object = presentAuditEvent(first.events[0]!);
    expect(object).toEqual({
      object: 'audit_event',
      id: expect.stringMatching(/^aud_/),
      action: 'signing_secret.rotated',
      actor: { type: 'operator' },
      target: { type: 'signing_secret', id: workspace.id, overlap_seconds: 86_400 },
      created_at: Math.floor(clock / 1000),
    });
  });

  it('keeps events for the retention period only, and one workspace never sees another’s', async () => {
    const a = (await accounts.createWorkspace('old', 'owner@old.test')).workspace.id;
    const b = (await accounts.createWorkspace('other', 'owner@other.test')).workspace.id;
    clock += RETENTION_SECONDS * 1000 + 1;
    await accounts.createApiKey(a);
    expect((await all(a)).map((e) => e.action)).toEqual(['api_key.created']);
    expect(await redis.zcard(keys.workspaceAudit(a))).toBe(1);
    expect(await redis.ttl(keys.auditEvent((await all(a))[0]!.id))).toBeGreaterThan(RETENTION_SECONDS - 5);
    // b's creation is past its retention and no event came since: nothing to show.
    expect(await all(b)).toEqual([]);
    expect((await all(a)).every((e) => e.workspace_id === a)).toBe(true);
  });

  it('names every action the code records', () => {
    expect(new Set(AUDIT_ACTIONS).size).toBe(AUDIT_ACTIONS.length);
    expect(AUDIT_ACTIONS).toEqual(
      expect.arrayContaining(['member.added', 'api_key.revoked', 'signing_secret.rotated', 'signing_key.enabled', 'webhook_endpoint.disabled']),
    );
  });
});
