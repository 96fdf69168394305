import type { ApiKeyInfo } from '@media/accounts';
import type { RelayListenerRecord } from '@media/callbacks';
import { RelayListenersView } from './relay-listeners';

const key = (id: string, prefix: string): ApiKeyInfo => ({ id, prefix, hash: `hash-${id}`, created_ms: 1_000, last_used_ms: null });

const listener = (n: number, keyId: string, events: RelayListenerRecord['events'] = []): RelayListenerRecord => ({
  session_id: `rls_${n}`,
  workspace_id: 'ws_1',
  key_id: keyId,
  events,
  since_ms: n * 1_000 + 999,
  seen_ms: n * 1_000 + 4_500,
  gateway_id: 'gw_1',
});

function view(opts: { relayUrl?: string; listeners: RelayListenerRecord[]; keys: ApiKeyInfo[] }) {
  const asked: string[] = [];
  const relays = {
    existingRelayUrl: async (ws: string) => {
      asked.push(ws);
      return opts.relayUrl;
    },
    listeners: async (ws: string) => {
      asked.push(ws);
      return opts.listeners;
    },
  };
  const accounts = {
    apiKeys: async (ws: string) => {
      asked.push(ws);
      return opts.keys;
    },
  };
  return { view: new RelayListenersView({ relays, accounts }), asked };
}

describe('RelayListenersView', () => {
  it('names each listener by its key’s id and prefix, in seconds, and asks only about the workspace', async () => {
    const { view: v, asked } = view({
      relayUrl: 'https://api.example.com/v1/webhook-relay/rly_abc',
      listeners: [listener(1, 'key_a', ['video.completed', 'video.failed']), listener(2, 'key_b')],
      keys: [key('key_a', 'sk_AbC1…'), key('key_b', 'sk_XyZ9…')],
    });
    expect(await v.list('ws_1')).toEqual({
      relay_url: 'https://api.example.com/v1/webhook-relay/rly_abc',
      data: [
        {
          session_id: 'rls_1',
          connected_at: 1,
          last_seen_at: 5,
          api_key: { id: 'key_a', prefix: 'sk_AbC1…', revoked: false },
          events: ['video.completed', 'video.failed'],
        },
        { session_id: 'rls_2', connected_at: 2, last_seen_at: 6, api_key: { id: 'key_b', prefix: 'sk_XyZ9…', revoked: false }, events: [] },
      ],
      max_listeners: 5,
    });
    expect(new Set(asked)).toEqual(new Set(['ws_1']));
  });

  it('shows a listener whose key is gone as revoked, without a prefix', async () => {
    const { view: v } = view({
      relayUrl: 'https://api.example.com/v1/webhook-relay/rly_abc',
      listeners: [listener(1, 'key_gone')],
      keys: [key('key_a', 'sk_AbC1…')],
    });
    expect((await v.list('ws_1')).data[0]!.api_key).toEqual({ id: 'key_gone', prefix: null, revoked: true });
  });

  it('answers a null relay URL and no listener for a workspace that never had one', async () => {
    const { view: v } = view({ listeners: [], keys: [key('key_a', 'sk_AbC1…')] });
    expect(await v.list('ws_1')).toEqual({ relay_url: null, data: [], max_listeners: 5 });
  });

  it('never lists a record of another workspace', async () => {
    const { view: v } = view({ listeners: [{ ...listener(1, 'key_a'), workspace_id: 'ws_2' }], keys: [key('key_a', 'sk_AbC1…')] });
    expect((await v.list('ws_1')).data).toEqual([]);
  });
});
