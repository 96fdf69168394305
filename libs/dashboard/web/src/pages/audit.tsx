import { useState } from 'preact/hooks';
import type { AuditAction, AuditEventObject } from '../api';
import { EmptyRow, ErrorBanner, Time, useApp, useLoad } from '../ui';

/** What each action says in a sentence's words (the page shows the action's name beside it). */
const ACTION_WORDS: Record<AuditAction, string> = {
  'workspace.created': 'Workspace created',
  'member.added': 'Member added',
  'member.role_changed': 'Role changed',
  'member.removed': 'Member removed',
  'api_key.created': 'API key created',
  'api_key.revoked': 'API key revoked',
  'signing_secret.rotated': 'Signing secret rotated',
  'signing_secret.overlap_ended': 'Old signing secret stopped',
  'signing_key.enabled': 'Asymmetric signing turned on',
  'signing_key.rotated': 'Signing key rotated',
  'webhook_endpoint.created': 'Endpoint created',
  'webhook_endpoint.updated': 'Endpoint changed',
  'webhook_endpoint.deleted': 'Endpoint deleted',
  'webhook_endpoint.disabled': 'Endpoint disabled',
  'webhook_endpoint.enabled': 'Endpoint enabled',
};

function who(event: AuditEventObject): string {
  switch (event.actor.type) {
    case 'member':
      return event.actor.email;
    case 'api_key':
      return `API key ${event.actor.id}`;
    case 'operator':
      return 'Operator (admin CLI)';
    case 'system':
      return 'The service';
  }
}

/** What the target became, as `key: value` pairs (a role, a key's prefix); ids and types are shown apart. */
function details(event: AuditEventObject): string {
  return Object.entries(event.target)
    .filter(([key]) => key !== 'type' && key !== 'id')
    .map(([key, value]) => `${key.replace(/_/g, ' ')}: ${Array.isArray(value) ? value.join(', ') : String(value)}`)
    .join('; ');
}

/**
 * Who changed what in the workspace, newest first: members, API keys, signing secrets and keys,
 * endpoints. Owners and admins see it (the server refuses members); the filter keeps one action.
 * Everything shown is text: an e-mail or a name a user typed is never markup.
 */
export function AuditPage() {
  const { api, now } = useApp();
  const [action, setAction] = useState<AuditAction | ''>('');
  const [more, setMore] = useState<AuditEventObject[]>([]);
  const [moreError, setMoreError] = useState<unknown>(null);
  const [hasMore, setHasMore] = useState<boolean | null>(null);
  const { data, error } = useLoad(async () => {
    setMore([]);
    setHasMore(null);
    return api.audit(action ? [action] : []);
  }, [action]);
  const events = [...(data?.data ?? []), ...more];
  const moreLeft = hasMore ?? data?.has_more ?? false;

  async function loadMore() {
    setMoreError(null);
    try {
      const page = await api.audit(action ? [action] : [], events.at(-1)?.id);
      setMore((shown) => [...shown, ...page.data]);
      setHasMore(page.has_more);
    } catch (err) {
      setMoreError(err);
    }
  }

  return (
    <>
      <h1>Audit</h1>
      <p class="muted">Who changed the workspace’s members, API keys, signing secrets and endpoints, newest first. No secret is ever kept here.</p>
      <ErrorBanner error={error} />
      <ErrorBanner error={moreError} />
      <section class="card">
        <div class="section-head">
          <div class="field">
            <label for="f-action">Action</label>
            <select id="f-action" value={action} onChange={(e) => setAction(e.currentTarget.value as AuditAction | '')}>
              <option value="">Every action</option>
              {(data?.actions ?? []).map((a) => (
                <option key={a} value={a}>
                  {ACTION_WORDS[a]}
                </option>
              ))}
            </select>
          </div>
        </div>
        <div class="table-wrap">
          <table class="table table-stack" data-testid="audit-table">
            <thead>
              <tr>
                <th scope="col">When</th>
                <th scope="col">Who</th>
                <th scope="col">What</th>
                <th scope="col">Target</th>
              </tr>
            </thead>
            <tbody>
              {events.length === 0 && data ? <EmptyRow columns={4}>{action ? 'No event of this kind.' : 'No change recorded yet.'}</EmptyRow> : null}
              {events.map((e) => (
                <tr key={e.id} data-id={e.id} data-action={e.action}>
                  <td data-label="When">
                    <Time at={e.created_at} now={now} />
                  </td>
                  <td data-label="Who" class="wrap-any">
                    {who(e)}
                  </td>
                  <td data-label="What">
                    {ACTION_WORDS[e.action]} <span class="muted">({e.action})</span>
                  </td>
                  <td data-label="Target" class="wrap-any">
                    {e.target.id}
                    {details(e) ? <div class="muted">{details(e)}</div> : null}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
        {moreLeft ? (
          <button type="button" class="btn" onClick={() => void loadMore()}>
            Show older events
          </button>
        ) : null}
      </section>
    </>
  );
}
