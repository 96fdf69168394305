import type { Redis } from 'ioredis';
import { newId } from '@media/domain';
import { readIndexPage, type StoreKeys } from '@media/storage';
import { AccountKeys } from './keys';

/**
 * Who made a change: a dashboard member (by e-mail), an API key (by its id), the operator's tools
 * (the admin CLI, `npm start`), or the service itself (an endpoint disabled after failing for days).
 */
export type AuditActor = { type: 'member'; email: string } | { type: 'api_key'; id: string } | { type: 'operator' } | { type: 'system' };

/** The admin CLI and the local stack: an operator with shell access, who has no role in the workspace. */
export const OPERATOR: AuditActor = { type: 'operator' };

/** Every kind of change the audit records. */
export const AUDIT_ACTIONS = [
  'workspace.created',
  'member.added',
  'member.role_changed',
  'member.removed',
  'api_key.created',
  'api_key.revoked',
  'signing_secret.rotated',
  'signing_secret.overlap_ended',
  'signing_key.enabled',
  'signing_key.rotated',
  'webhook_endpoint.created',
  'webhook_endpoint.updated',
  'webhook_endpoint.deleted',
  'webhook_endpoint.disabled',
  'webhook_endpoint.enabled',
] as const;
export type AuditAction = (typeof AUDIT_ACTIONS)[number];

/** A comma-separated list of actions (`member.added,api_key.revoked`, as the API and the dashboard take it), or the first name in it that is none. */
export function splitAuditActions(text: string): { actions: AuditAction[]; unknown?: string } {
  const names = text.split(',').map((name) => name.trim());
  const unknown = names.find((name) => !(AUDIT_ACTIONS as readonly string[]).includes(name));
  return unknown === undefined ? { actions: names as AuditAction[] } : { actions: [], unknown };
}

/**
 * What was changed: its kind, its id (a member's e-mail, a key's or an endpoint's id, the
 * workspace's id for its secrets), and a few words of what it became (a role, an endpoint's URL and
 * events, why it was disabled). Never a secret, a password or a key: only ids and public facts.
 */
export interface AuditTarget {
  type: 'workspace' | 'member' | 'api_key' | 'signing_secret' | 'signing_key' | 'webhook_endpoint';
  id: string;
  [detail: string]: string | number | boolean | string[] | null;
}

/** One change, as stored. */
export interface AuditRecord {
  id: string;
  workspace_id: string;
  action: AuditAction;
  actor: AuditActor;
  target: AuditTarget;
  created_ms: number;
}

/** The API's `audit_event` object (design section 3). */
export interface AuditEventObject {
  object: 'audit_event';
  id: string;
  action: AuditAction;
  actor: AuditActor;
  target: AuditTarget;
  created_at: number;
}

export const presentAuditEvent = (record: AuditRecord): AuditEventObject => ({
  object: 'audit_event',
  id: record.id,
  action: record.action,
  actor: record.actor,
  target: record.target,
  created_at: Math.floor(record.created_ms / 1000),
});

export interface AuditPage {
  events: AuditRecord[];
  hasMore: boolean;
  cursorFound: boolean;
}

export interface AuditQuery {
  limit: number;
  after?: string;
  /** Only events of these actions (none: all). */
  actions?: readonly AuditAction[];
}

/**
 * A workspace's audit: who changed what, kept for `AUDIT_RETENTION_SECONDS`. Each event is a record
 * that expires by itself and an entry in the workspace's index (a sorted set by time), trimmed of
 * what has expired at each new event; both on the `{store}` shard with the accounts they describe.
 * An event is written after its change has been made, so a change that fails leaves none.
 */
export class AuditLog {
  private readonly accountKeys: AccountKeys;

  constructor(
    private readonly redis: Redis,
    keys: StoreKeys,
    private readonly retentionSeconds: number,
    private readonly now: () => number = Date.now,
  ) {
    this.accountKeys = new AccountKeys(keys);
  }

  async record(workspaceId: string, action: AuditAction, actor: AuditActor, target: AuditTarget): Promise<AuditRecord> {
    const created_ms = this.now();
    const record: AuditRecord = { id: newId('aud'), workspace_id: workspaceId, action, actor, target, created_ms };
    const index = this.accountKeys.workspaceAudit(workspaceId);
    await this.redis
      .multi()
      .set(this.accountKeys.auditEvent(record.id), JSON.stringify(record), 'EX', this.retentionSeconds)
      .zadd(index, created_ms, record.id)
      .zremrangebyscore(index, '-inf', `(${created_ms - this.retentionSeconds * 1000}`)
      .expire(index, this.retentionSeconds)
      .exec();
    return record;
  }

  /**
   * The workspace's events, newest first, after the cursor. With `actions`, only those: the index
   * is read a page at a time until enough match (events are few; a workspace makes dozens a day).
   */
  async list(workspaceId: string, query: AuditQuery): Promise<AuditPage> {
    const wanted = query.actions && query.actions.length > 0 ? new Set(query.actions) : undefined;
    const events: AuditRecord[] = [];
    let after = query.after;
    for (;;) {
      const page = await readIndexPage(this.redis, this.accountKeys.workspaceAudit(workspaceId), {
        limit: wanted ? Math.max(query.limit, 100) : query.limit,
        after,
        order: 'desc',
        minScore: this.now() - this.retentionSeconds * 1000,
        cursorScoreKeys: [],
      });
      if (!page.cursorFound) return { events: [], hasMore: false, cursorFound: false };
      for (const record of await this.read(page.ids)) {
        if (!record || (wanted && !wanted.has(record.action))) continue;
        if (events.length === query.limit) return { events, hasMore: true, cursorFound: true };
        events.push(record);
      }
      if (!wanted || !page.hasMore) return { events, hasMore: page.hasMore, cursorFound: true };
      after = page.ids.at(-1);
    }
  }

  private async read(ids: string[]): Promise<(AuditRecord | undefined)[]> {
    if (ids.length === 0) return [];
    const raw = await this.redis.mget(ids.map((id) => this.accountKeys.auditEvent(id)));
    return raw.map((text) => (text ? (JSON.parse(text) as AuditRecord) : undefined));
  }
}
