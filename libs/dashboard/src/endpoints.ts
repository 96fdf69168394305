import type { Role } from '@media/accounts';
import { can } from '@media/accounts';
import { type CallbackAdmin, MAX_ENDPOINTS_PER_WORKSPACE, presentCallback, presentWebhookEndpoint, type WebhookEndpoints } from '@media/callbacks';
import { EVENT_TYPES } from '@media/domain';
import type { EndpointDeliveries, EndpointList } from './contract';
import { isFailing, lastAttempt } from './requests';

/** How many of an endpoint's latest callbacks its page shows, and its failure rate is taken over. */
export const RECENT_DELIVERIES = 20;

/**
 * The Webhook endpoints page's reads. The changes go straight to {@link WebhookEndpoints} from the
 * router (it checks them and records them in the audit); this only puts together what the page shows.
 */
export class EndpointsView {
  constructor(
    private readonly deps: {
      endpoints: Pick<WebhookEndpoints, 'list' | 'get'>;
      callbackAdmin: Pick<CallbackAdmin, 'list' | 'lastAttempts'>;
    },
  ) {}

  async list(workspaceId: string, role: Role): Promise<EndpointList> {
    const endpoints = await this.deps.endpoints.list(workspaceId);
    return {
      data: endpoints.map(presentWebhookEndpoint),
      event_types: EVENT_TYPES,
      max_endpoints: MAX_ENDPOINTS_PER_WORKSPACE,
      can_manage: can(role, 'manage_endpoints'),
    };
  }

  /**
   * The endpoint's latest callbacks (one index page: the callbacks' index by endpoint), each with
   * its latest attempt, and the share of the ended ones that failed.
   *
   * @throws EndpointNotFoundError for an id that is not one of the workspace's endpoints
   */
  async deliveries(workspaceId: string, endpointId: string): Promise<EndpointDeliveries> {
    await this.deps.endpoints.get(workspaceId, endpointId);
    const page = await this.deps.callbackAdmin.list(workspaceId, { endpointId, limit: RECENT_DELIVERIES });
    const last = await this.deps.callbackAdmin.lastAttempts(page.callbacks);
    const data = page.callbacks.map((cb) => {
      const attempt = last.get(cb.id);
      return { ...presentCallback(cb), last_attempt: attempt ? lastAttempt(attempt) : null, failing: isFailing(cb) };
    });
    const ended = data.filter((d) => d.status !== 'pending').length;
    const failed = data.filter((d) => d.status === 'failed').length;
    return {
      endpoint_id: endpointId,
      limit: RECENT_DELIVERIES,
      data,
      has_more: page.hasMore,
      ended,
      failed,
      failure_rate: ended === 0 ? null : failed / ended,
      pending: data.length - ended,
      failing: data.filter((d) => d.failing).length,
    };
  }
}
