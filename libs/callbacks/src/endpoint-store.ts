import type { Redis } from 'ioredis';
import { newIdBeside } from '@media/domain';
import type { StoreKeys } from '@media/storage';
import { MAX_ENDPOINTS_PER_WORKSPACE, type WebhookEndpointRecord } from './endpoints';
import { CallbackKeys } from './keys';
import { storeScript } from './lua';

// lua/<name>.lua: each file's header gives the script's KEYS, ARGV and answers.
const CREATE = storeScript('endpoint-create');
const UPDATE = storeScript('endpoint-update');
const OUTCOME = storeScript('endpoint-outcome');

/** The fields a change may set (the store keeps ids, the workspace and the creation time). */
export type EndpointChange = Partial<Omit<WebhookEndpointRecord, 'id' | 'workspace_id' | 'created_ms' | 'updated_ms'>>;

/**
 * A workspace's webhook endpoints: one hash on the workspace's shard, read whole (ten at most) when
 * a job ends, so that fan-out costs one round trip whatever the workspace subscribed.
 */
export class EndpointRepository {
  private readonly callbackKeys: CallbackKeys;

  constructor(
    private readonly redis: Redis,
    keys: StoreKeys,
    private readonly maxPerWorkspace = MAX_ENDPOINTS_PER_WORKSPACE,
  ) {
    this.callbackKeys = new CallbackKeys(keys);
  }

  /** The workspace's endpoints, oldest first. */
  async list(workspaceId: string): Promise<WebhookEndpointRecord[]> {
    const raw = await this.redis.hvals(this.callbackKeys.workspaceEndpoints(workspaceId));
    return raw.map((r) => JSON.parse(r) as WebhookEndpointRecord).sort((a, b) => a.created_ms - b.created_ms || (a.id < b.id ? -1 : 1));
  }

  async get(workspaceId: string, id: string): Promise<WebhookEndpointRecord | undefined> {
    const raw = await this.redis.hget(this.callbackKeys.workspaceEndpoints(workspaceId), id);
    return raw ? (JSON.parse(raw) as WebhookEndpointRecord) : undefined;
  }

  /** Stores a new endpoint; undefined when the workspace has its most already. */
  async create(
    workspaceId: string,
    fields: Pick<WebhookEndpointRecord, 'url' | 'events' | 'description' | 'enabled'>,
    nowMs: number,
  ): Promise<WebhookEndpointRecord | undefined> {
    const record: WebhookEndpointRecord = {
      id: newIdBeside(workspaceId, 'we'),
      workspace_id: workspaceId,
      ...fields,
      disabled_reason: fields.enabled ? null : 'manual',
      created_ms: nowMs,
      updated_ms: nowMs,
      failing_since_ms: null,
      last_error: null,
      last_error_ms: null,
    };
    const added = await CREATE.run(this.redis, [this.callbackKeys.workspaceEndpoints(workspaceId)], [record.id, JSON.stringify(record), this.maxPerWorkspace]);
    return added === 1 ? record : undefined;
  }

  /** Sets `change` on the endpoint in one step; undefined when it does not exist. */
  async update(workspaceId: string, id: string, change: EndpointChange, nowMs: number): Promise<WebhookEndpointRecord | undefined> {
    const raw = (await UPDATE.run(this.redis, [this.callbackKeys.workspaceEndpoints(workspaceId)], [id, JSON.stringify(change), nowMs])) as string | null;
    return raw ? (JSON.parse(raw) as WebhookEndpointRecord) : undefined;
  }

  /** Removes the endpoint; its callbacks already made finish their ladders. False when there was none. */
  async delete(workspaceId: string, id: string): Promise<boolean> {
    return (await this.redis.hdel(this.callbackKeys.workspaceEndpoints(workspaceId), id)) === 1;
  }

  /**
   * Notes an attempt's outcome on its endpoint (see endpoint-outcome.lua). Returns the endpoint when
   * this attempt disabled it: every attempt had failed for `disableAfterMs`.
   */
  async noteOutcome(
    workspaceId: string,
    id: string,
    outcome: { delivered: boolean; atMs: number; error: string },
    disableAfterMs: number,
  ): Promise<WebhookEndpointRecord | undefined> {
    const raw = (await OUTCOME.run(
      this.redis,
      [this.callbackKeys.workspaceEndpoints(workspaceId)],
      [id, outcome.delivered ? '1' : '0', outcome.atMs, outcome.error, disableAfterMs],
    )) as string | null;
    return raw ? (JSON.parse(raw) as WebhookEndpointRecord) : undefined;
  }
}
