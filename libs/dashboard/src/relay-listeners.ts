import type { WorkspaceAccounts } from '@media/accounts';
import { MAX_RELAY_LISTENERS, type RelayDirectory } from '@media/callbacks';
import type { RelayListeners } from './contract';

const seconds = (ms: number) => Math.floor(ms / 1000);

/**
 * The Webhook endpoints page's listeners on developers' machines (`media-callbacks listen`): the
 * relay's directory names each by the id of the API key it connected with, and the workspace's
 * keys give that id the prefix a person recognises. The key itself is never at hand here.
 */
export class RelayListenersView {
  constructor(
    private readonly deps: {
      relays: Pick<RelayDirectory, 'listeners' | 'existingRelayUrl'>;
      accounts: Pick<WorkspaceAccounts, 'apiKeys'>;
      now?: () => number;
    },
  ) {}

  async list(workspaceId: string): Promise<RelayListeners> {
    const [relayUrl, listeners, keys] = await Promise.all([
      this.deps.relays.existingRelayUrl(workspaceId),
      this.deps.relays.listeners(workspaceId, (this.deps.now ?? Date.now)()),
      this.deps.accounts.apiKeys(workspaceId),
    ]);
    const prefixes = new Map(keys.map((k) => [k.id, k.prefix]));
    return {
      relay_url: relayUrl ?? null,
      data: listeners
        // The directory is the workspace's own; a record naming another workspace would be a bug, never shown.
        .filter((l) => l.workspace_id === workspaceId)
        .map((l) => {
          const prefix = prefixes.get(l.key_id);
          return {
            session_id: l.session_id,
            connected_at: seconds(l.since_ms),
            last_seen_at: seconds(l.seen_ms),
            api_key: { id: l.key_id, prefix: prefix ?? null, revoked: prefix === undefined },
            events: l.events,
          };
        }),
      max_listeners: MAX_RELAY_LISTENERS,
    };
  }
}
