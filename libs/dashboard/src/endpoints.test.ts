import type { CallbackListQuery, WebhookEndpointRecord } from '@media/callbacks';
import { EndpointNotFoundError } from '@media/callbacks';
import type { CallbackAttempt, CallbackRecord, CallbackState } from '@media/domain';
import { EndpointsView, RECENT_DELIVERIES } from './endpoints';

const endpoint: WebhookEndpointRecord = {
  id: 'we_1',
  workspace_id: 'ws_1',
  url: 'https://hooks.example.com/in',
  events: ['image.completed'],
  description: '',
  enabled: true,
  disabled_reason: null,
  created_ms: 1_000,
  updated_ms: 1_000,
  failing_since_ms: null,
  last_error: null,
  last_error_ms: null,
};

function callback(n: number, state: CallbackState, attempts: number): CallbackRecord {
  return {
    id: `msg_${n}`,
    workspace_id: 'ws_1',
    job_id: `req_${n}`,
    type: 'image.completed',
    url: endpoint.url,
    endpoint_id: endpoint.id,
    event_ms: n * 1000,
    created_ms: n * 1000,
    state,
    attempt_count: attempts,
    next_attempt_ms: state === 'pending' ? n * 1000 + 60_000 : null,
    delivered_ms: state === 'delivered' ? n * 1000 + 500 : null,
  } as CallbackRecord;
}

describe('EndpointsView.deliveries', () => {
  it("reads the endpoint's latest callbacks from its index and takes the failure rate over the ended ones", async () => {
    const callbacks = [
      callback(6, 'pending', 2),
      callback(5, 'pending', 0),
      callback(4, 'failed', 6),
      callback(3, 'delivered', 1),
      callback(2, 'delivered', 3),
      callback(1, 'delivered', 1),
    ];
    const queries: CallbackListQuery[] = [];
    const view = new EndpointsView({
      endpoints: { list: async () => [endpoint], get: async () => endpoint },
      callbackAdmin: {
        list: async (_ws, q) => {
          queries.push(q);
          return { callbacks, hasMore: true, cursorFound: true };
        },
        lastAttempts: async (cbs) =>
          new Map(
            cbs
              .filter((cb) => cb.attempt_count > 0)
              .map((cb) => [cb.id, { sent_ms: 7_000, trigger: 'scheduled', status: 500, error: 'http_error' } as CallbackAttempt]),
          ),
      },
    });
    const answer = await view.deliveries('ws_1', 'we_1');
    expect(queries).toEqual([{ endpointId: 'we_1', limit: RECENT_DELIVERIES }]);
    expect(answer).toMatchObject({ endpoint_id: 'we_1', has_more: true, ended: 4, failed: 1, failure_rate: 0.25, pending: 2, failing: 1 });
    expect(answer.data.map((d) => [d.id, d.failing])).toEqual([
      ['msg_6', true],
      ['msg_5', false],
      ['msg_4', false],
      ['msg_3', false],
      ['msg_2', false],
      ['msg_1', false],
    ]);
    expect(answer.data[0]).toMatchObject({ endpoint_id: 'we_1', job_id: 'req_6', last_attempt: { result: '500 Internal Server Error', sent_at: 7 } });
    expect(answer.data[1]!.last_attempt).toBeNull();
  });

  it('has no failure rate before a callback has ended, and refuses an endpoint the workspace does not have', async () => {
    const view = new EndpointsView({
      endpoints: {
        list: async () => [],
        get: async (_ws, id) => {
          if (id !== 'we_1') throw new EndpointNotFoundError(id);
          return endpoint;
        },
      },
      callbackAdmin: { list: async () => ({ callbacks: [callback(1, 'pending', 0)], hasMore: false, cursorFound: true }), lastAttempts: async () => new Map() },
    });
    expect(await view.deliveries('ws_1', 'we_1')).toMatchObject({ ended: 0, failed: 0, failure_rate: null, pending: 1, failing: 0 });
    await expect(view.deliveries('ws_1', 'we_other')).rejects.toBeInstanceOf(EndpointNotFoundError);
  });
});
