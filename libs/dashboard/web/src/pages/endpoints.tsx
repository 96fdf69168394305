import { useEffect, useState } from 'preact/hooks';
import { Link } from 'wouter-preact';
import type { EndpointDeliveries, EndpointTestResult, EventType, WebhookEndpointObject } from '../api';
import { formatDuration } from '../time';
import { ConfirmButton, EmptyRow, ERROR_WORDS, ErrorBanner, Notice, plural, StateBadge, Time, useApp, useLoad } from '../ui';
import { RelayListenersSection, RelayTag } from './relay-listeners';

/** How often the page reads the endpoints and listeners again while it is visible: delivery may disable one meanwhile, a listener come or go. */
const REFRESH_MS = 15_000;

/** An endpoint's condition, worst first: what its badge, its colour and its place on the page follow. */
type Condition = 'disabled_failing' | 'endpoint_failing' | 'turned_off' | 'enabled';

function conditionOf(e: WebhookEndpointObject): Condition {
  if (!e.enabled) return e.disabled_reason === 'failing' ? 'disabled_failing' : 'turned_off';
  return e.failing_since !== null ? 'endpoint_failing' : 'enabled';
}

const RANK: Record<Condition, number> = { disabled_failing: 0, endpoint_failing: 1, turned_off: 2, enabled: 3 };
const TONE: Record<Condition, string> = { disabled_failing: 'bad', endpoint_failing: 'bad', turned_off: 'off', enabled: 'ok' };

/**
 * An endpoint's last error in words: the dispatcher keeps it as `<error class>: <detail>`
 * ("http_error: HTTP 503", "refused: connect ECONNREFUSED …"). Shown as text whatever it holds.
 */
export function lastErrorWords(message: string): string {
  const match = /^([a-z_]+)(?::\s*([\s\S]*))?$/.exec(message);
  const words = match ? ERROR_WORDS[match[1]!] : undefined;
  if (!match || !words) return message;
  const detail = match[2]?.trim() ?? '';
  if (match[1] === 'http_error') return detail || words;
  return detail ? `${words} (${detail})` : words;
}

/**
 * The workspace's webhook endpoints, the worst first: a disabled or failing endpoint is at the top,
 * in red, with since when and its last error in words; the headline counts them. Owners and admins
 * add, change, test, turn off and on, and delete endpoints here; members read. Everything a user or
 * a receiver wrote (URL, description, last error, response) is shown as text.
 */
export function EndpointsPage() {
  const { api } = useApp();
  const [tick, setTick] = useState(0);
  const { data, error, reload } = useLoad(() => api.endpoints(), [tick]);
  const relay = useLoad(() => api.relayListeners(), [tick]);
  const relayUrl = relay.data?.relay_url ?? null;
  const [note, setNote] = useState<string | null>(null);

  useEffect(() => {
    const timer = setInterval(() => {
      if (document.visibilityState === 'visible') setTick((n) => n + 1);
    }, REFRESH_MS);
    return () => clearInterval(timer);
  }, []);

  const endpoints = [...(data?.data ?? [])].sort((a, b) => RANK[conditionOf(a)] - RANK[conditionOf(b)] || a.created_at - b.created_at);
  const canManage = data?.can_manage ?? false;
  const changed = (words: string | null) => {
    setNote(words);
    void reload();
  };

  return (
    <>
      <h1>Webhook endpoints</h1>
      <p class="muted">
        Every job end of a subscribed event is sent to each enabled endpoint as its own callback (its own <code>msg_</code> id and retries), besides a request’s
        own <code>callback_url</code>. Signed with the workspace’s signing secret.
      </p>
      <ErrorBanner error={error} />
      {note ? <Notice>{note}</Notice> : null}
      {data ? <Headline endpoints={endpoints} /> : null}
      {data && endpoints.length === 0 ? (
        <section class="card">
          <p class="muted" data-testid="no-endpoints">
            No endpoints yet. {canManage ? 'Add one below to receive every job end of the events it subscribes to.' : ''}
          </p>
        </section>
      ) : null}
      {endpoints.map((e) => (
        <EndpointCard
          key={e.id}
          endpoint={e}
          relay={relayUrl !== null && e.url === relayUrl}
          eventTypes={data?.event_types ?? []}
          canManage={canManage}
          tick={tick}
          onChanged={changed}
        />
      ))}
      {data && canManage ? (
        endpoints.length < data.max_endpoints ? (
          <AddEndpoint eventTypes={data.event_types} onAdded={(e) => changed(`Endpoint ${e.id} added: it receives the next job end of its events.`)} />
        ) : (
          <p class="muted">The workspace has its {data.max_endpoints} endpoints: delete one to add another.</p>
        )
      ) : null}
      {data && !canManage ? <p class="muted">Only owners and admins add, change, test and delete endpoints.</p> : null}
      <RelayListenersSection data={relay.data} error={relay.error} />
    </>
  );
}

/** The page's first line: what is wrong, counted, or that nothing is. */
function Headline({ endpoints }: { endpoints: WebhookEndpointObject[] }) {
  if (endpoints.length === 0) return null;
  const count = (c: Condition) => endpoints.filter((e) => conditionOf(e) === c).length;
  const disabled = count('disabled_failing');
  const failing = count('endpoint_failing');
  const off = count('turned_off');
  const parts: string[] = [];
  if (disabled > 0) parts.push(`${plural(disabled, 'endpoint')} disabled because every attempt failed: no new event goes to it until it is enabled again`);
  if (failing > 0) parts.push(`${plural(failing, 'endpoint')} failing every attempt`);
  if (off > 0) parts.push(`${plural(off, 'endpoint')} turned off`);
  const bad = disabled + failing > 0;
  const words = parts.length === 0 ? `${plural(endpoints.length, 'endpoint')}, all enabled, none failing.` : `${parts.join('; ')}.`;
  return (
    <p class={`headline ${bad ? 'headline-bad' : 'headline-ok'}`} role="status" data-testid="endpoints-headline">
      <span aria-hidden="true">{bad ? '✕ ' : off > 0 ? '· ' : '✓ '}</span>
      {words}
    </p>
  );
}

function EndpointCard({
  endpoint: e,
  relay,
  eventTypes,
  canManage,
  tick,
  onChanged,
}: {
  endpoint: WebhookEndpointObject;
  /** Its URL is the workspace's relay URL: its callbacks go down a `media-callbacks listen` connection. */
  relay: boolean;
  eventTypes: readonly EventType[];
  canManage: boolean;
  tick: number;
  onChanged: (note: string | null) => void;
}) {
  const { api, now } = useApp();
  const [editing, setEditing] = useState(false);
  const [error, setError] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);
  const condition = conditionOf(e);
  const titleId = `title-${e.id}`;

  async function act(what: () => Promise<unknown>, note: string) {
    setBusy(true);
    setError(null);
    try {
      await what();
      onChanged(note);
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  }

  return (
    <article class={`card endpoint endpoint-${TONE[condition]}`} aria-labelledby={titleId} data-testid="endpoint" data-id={e.id} data-condition={condition}>
      <div class="endpoint-head">
        <StateBadge state={condition} />
        <h2 class="mono endpoint-url" id={titleId}>
          {e.url}
        </h2>
        {relay ? <RelayTag /> : null}
      </div>
      {e.description ? <p class="endpoint-desc">{e.description}</p> : null}
      {relay ? (
        <p class="small muted" data-testid="endpoint-relay-note">
          The workspace’s relay URL: its callbacks go to the listeners on developers’ machines below, not over the network; with none connected, an attempt
          fails as relay offline.
        </p>
      ) : null}
      <StatusLine endpoint={e} condition={condition} now={now} />
      <ErrorBanner error={error} />

      {editing ? (
        <EndpointForm
          eventTypes={eventTypes}
          initial={e}
          submitLabel="Save changes"
          onCancel={() => setEditing(false)}
          onSubmit={async (input) => {
            await api.updateEndpoint(e.id, input);
            setEditing(false);
            onChanged(`Endpoint ${e.id} saved.`);
          }}
        />
      ) : (
        <dl class="fields fields-wide">
          <dt>Events</dt>
          <dd>
            <ul class="chips" aria-label="Events">
              {e.events.map((t) => (
                <li key={t} class="chip mono">
                  {t}
                </li>
              ))}
            </ul>
          </dd>
          <dt>Id</dt>
          <dd class="mono">{e.id}</dd>
          <dt>Created</dt>
          <dd>
            <Time at={e.created_at} now={now} />
          </dd>
          <dt>Changed</dt>
          <dd>
            <Time at={e.updated_at} now={now} />
          </dd>
        </dl>
      )}

      {canManage && !editing ? (
        <div class="btn-row">
          {e.enabled ? (
            <ConfirmButton
              label="Disable"
              confirmLabel="Disable now"
              question="Stop sending new events to this endpoint? Callbacks already made finish their retries."
              onConfirm={() => act(() => api.updateEndpoint(e.id, { enabled: false }), `Endpoint ${e.id} turned off.`)}
            />
          ) : (
            <button
              type="button"
              class="btn btn-primary"
              disabled={busy}
              onClick={() =>
                void act(() => api.updateEndpoint(e.id, { enabled: true }), `Endpoint ${e.id} enabled: it receives the next job end of its events.`)
              }
            >
              Enable
            </button>
          )}
          <button type="button" class="btn" onClick={() => setEditing(true)}>
            Edit
          </button>
          <ConfirmButton
            label="Delete"
            confirmLabel="Delete now"
            question="Delete this endpoint? No new event goes to it; callbacks already made finish their retries."
            onConfirm={() => act(() => api.deleteEndpoint(e.id), `Endpoint ${e.id} deleted.`)}
          />
        </div>
      ) : null}
      {canManage && !editing ? <TestEvent endpoint={e} /> : null}

      <h3>Recent deliveries</h3>
      <Deliveries endpointId={e.id} tick={tick} />
    </article>
  );
}

/** Why the endpoint is off, or that it is failing, and the last error: the words on-call acts on. */
function StatusLine({ endpoint: e, condition, now }: { endpoint: WebhookEndpointObject; condition: Condition; now: number }) {
  const lastError = e.last_error ? (
    <>
      last error <q class="wrap-any">{lastErrorWords(e.last_error.message)}</q> <Time at={e.last_error.at} now={now} inline />
    </>
  ) : null;
  switch (condition) {
    case 'disabled_failing':
      return (
        <div class="banner banner-error endpoint-status" data-testid="endpoint-status">
          Disabled: every attempt failed since <Time at={e.failing_since} now={now} inline empty="it was first tried" />
          {lastError ? <>; {lastError}</> : null}. No new event is sent to it until it is enabled again.
        </div>
      );
    case 'endpoint_failing':
      return (
        <div class="banner banner-error endpoint-status" data-testid="endpoint-status">
          Failing: every attempt since <Time at={e.failing_since} now={now} inline /> failed{lastError ? <>; {lastError}</> : null}. If none is accepted for
          long enough, the endpoint is disabled.
        </div>
      );
    case 'turned_off':
      return (
        <div class="banner banner-info endpoint-status" data-testid="endpoint-status">
          Turned off <Time at={e.updated_at} now={now} inline />: no new event is sent to it.
          {e.failing_since !== null && lastError ? <> Its attempts were failing; {lastError}.</> : null}
        </div>
      );
    case 'enabled':
      return lastError ? (
        <p class="small muted" data-testid="endpoint-status">
          Accepting (the latest attempt was accepted); {lastError}.
        </p>
      ) : null;
  }
}

/** The endpoint's latest callbacks and the share of the ended ones that failed. */
function Deliveries({ endpointId, tick }: { endpointId: string; tick: number }) {
  const { api, now } = useApp();
  const { data, error } = useLoad(() => api.endpointDeliveries(endpointId), [endpointId, tick]);
  return (
    <>
      <ErrorBanner error={error} />
      {data ? <RateLine deliveries={data} /> : null}
      <div class="table-wrap">
        <table class="table table-stack" data-testid="deliveries">
          <thead>
            <tr>
              <th scope="col">Created</th>
              <th scope="col">Event</th>
              <th scope="col">State</th>
              <th scope="col" class="num">
                Attempts
              </th>
              <th scope="col">Last attempt</th>
              <th scope="col">Request</th>
            </tr>
          </thead>
          <tbody>
            {data && data.data.length === 0 ? <EmptyRow columns={6}>No callback yet: one is made when a job ends with one of its events.</EmptyRow> : null}
            {(data?.data ?? []).map((d) => (
              <tr
                key={d.id}
                data-id={d.id}
                data-state={d.failing ? 'failing' : d.status}
                class={d.failing || d.status === 'failed' ? 'row-failing' : undefined}
              >
                <td data-label="Created">
                  <Time at={d.created_at} now={now} />
                </td>
                <td data-label="Event" class="nowrap">
                  <span class="mono">{d.type}</span>
                </td>
                <td data-label="State">
                  <StateBadge state={d.failing ? 'failing' : d.status} />
                </td>
                <td data-label="Attempts" class="num">
                  {d.attempt_count}
                </td>
                <td data-label="Last attempt">
                  {d.last_attempt ? (
                    <>
                      <span class={d.last_attempt.error ? 'result-bad' : 'result-ok'}>{d.last_attempt.result}</span>{' '}
                      <Time at={d.last_attempt.sent_at} now={now} inline />
                    </>
                  ) : (
                    <span class="muted">None yet</span>
                  )}
                </td>
                <td data-label="Request">
                  <Link href={`/requests/${encodeURIComponent(d.job_id)}`} class="mono">
                    {d.job_id}
                  </Link>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </>
  );
}

function RateLine({ deliveries: d }: { deliveries: EndpointDeliveries }) {
  if (d.data.length === 0) return null;
  const share = d.failure_rate === null ? null : Math.round(d.failure_rate * 100);
  return (
    <p class="rate" data-testid="failure-rate">
      Of its latest {plural(d.data.length, 'callback')}:{' '}
      {share === null ? (
        <span class="muted">none has ended yet</span>
      ) : (
        <>
          <strong class={d.failed > 0 ? 'result-bad' : 'result-ok'}>{share}% failed</strong> ({d.failed} of {d.ended} that ended)
        </>
      )}
      {d.pending > 0 ? `; ${d.pending} still on their retry ladder${d.failing > 0 ? `, ${d.failing} of them failing so far` : ''}` : ''}.
    </p>
  );
}

/** Sends a signed sample of one of the endpoint's events and shows the receiver's answer. */
function TestEvent({ endpoint }: { endpoint: WebhookEndpointObject }) {
  const { api } = useApp();
  const [type, setType] = useState<EventType>(endpoint.events[0]!);
  const [busy, setBusy] = useState(false);
  const [result, setResult] = useState<EndpointTestResult | null>(null);
  const [error, setError] = useState<unknown>(null);
  const selectId = `test-type-${endpoint.id}`;
  const chosen = endpoint.events.includes(type) ? type : endpoint.events[0]!;
  return (
    <div class="endpoint-test-wrap">
      <form
        class="endpoint-test"
        onSubmit={async (ev) => {
          ev.preventDefault();
          setBusy(true);
          setError(null);
          setResult(null);
          try {
            setResult(await api.testEndpoint(endpoint.id, chosen));
          } catch (err) {
            setError(err);
          } finally {
            setBusy(false);
          }
        }}
      >
        <div class="field">
          <label for={selectId}>Test event</label>
          <select id={selectId} value={chosen} onChange={(ev) => setType(ev.currentTarget.value as EventType)}>
            {endpoint.events.map((t) => (
              <option key={t} value={t}>
                {t}
              </option>
            ))}
          </select>
        </div>
        <button type="submit" class="btn" disabled={busy}>
          {busy ? 'Sending…' : 'Send test event'}
        </button>
      </form>
      <ErrorBanner error={error} />
      {result ? (
        <div class="test-result" role="status" data-testid="test-result">
          <dl class="fields">
            <dt>Answer</dt>
            <dd>
              <StateBadge state={result.delivered ? 'delivered' : 'failed'} />{' '}
              {result.status_code !== null ? `HTTP ${result.status_code}` : result.error ? (ERROR_WORDS[result.error] ?? result.error) : ''} in{' '}
              {formatDuration(result.duration_ms)}
            </dd>
            <dt>Event</dt>
            <dd class="mono">
              {result.type} · {result.webhook_id}
            </dd>
            <dt>Address</dt>
            <dd class="mono">{result.address ?? '—'}</dd>
            <dt>Response excerpt</dt>
            <dd>{result.response_excerpt ? <pre class="excerpt">{result.response_excerpt}</pre> : <span class="muted">(empty)</span>}</dd>
          </dl>
        </div>
      ) : null}
    </div>
  );
}

interface EndpointFields {
  url: string;
  events: EventType[];
  description: string;
}

/** The fields of a new endpoint, or of one being changed in place. */
function EndpointForm({
  eventTypes,
  initial,
  submitLabel,
  onSubmit,
  onCancel,
}: {
  eventTypes: readonly EventType[];
  initial: EndpointFields;
  submitLabel: string;
  onSubmit: (fields: EndpointFields) => Promise<void>;
  onCancel?: () => void;
}) {
  const [url, setUrl] = useState(initial.url);
  const [events, setEvents] = useState<EventType[]>(initial.events);
  const [description, setDescription] = useState(initial.description);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>(null);
  const prefix = (initial as Partial<WebhookEndpointObject>).id ?? 'new';
  return (
    <form
      class="stack-form"
      onSubmit={async (ev) => {
        ev.preventDefault();
        if (events.length === 0) {
          setError(new Error('Choose at least one event.'));
          return;
        }
        setBusy(true);
        setError(null);
        try {
          // In the catalogue's order, as the server stores them.
          await onSubmit({ url: url.trim(), events: eventTypes.filter((t) => events.includes(t)), description });
        } catch (err) {
          setError(err);
        } finally {
          setBusy(false);
        }
      }}
    >
      <div class="field">
        <label for={`${prefix}-url`}>URL</label>
        <input
          id={`${prefix}-url`}
          type="url"
          required
          maxLength={2048}
          placeholder="https://example.com/webhooks"
          value={url}
          onInput={(ev) => setUrl(ev.currentTarget.value)}
        />
      </div>
      <fieldset class="checks">
        <legend>Events</legend>
        {eventTypes.map((t) => (
          <label key={t} class="mono">
            <input
              type="checkbox"
              checked={events.includes(t)}
              onChange={(ev) => setEvents(ev.currentTarget.checked ? [...events, t] : events.filter((x) => x !== t))}
            />
            {t}
          </label>
        ))}
      </fieldset>
      <div class="field">
        <label for={`${prefix}-description`}>Description (optional)</label>
        <input
          id={`${prefix}-description`}
          type="text"
          maxLength={500}
          placeholder="Who runs the receiver, what it is for"
          value={description}
          onInput={(ev) => setDescription(ev.currentTarget.value)}
        />
      </div>
      <ErrorBanner error={error} />
      <div class="btn-row">
        <button type="submit" class="btn btn-primary" disabled={busy}>
          {busy ? 'Saving…' : submitLabel}
        </button>
        {onCancel ? (
          <button type="button" class="btn" onClick={onCancel}>
            Cancel
          </button>
        ) : null}
      </div>
    </form>
  );
}

function AddEndpoint({ eventTypes, onAdded }: { eventTypes: readonly EventType[]; onAdded: (e: WebhookEndpointObject) => void }) {
  const { api } = useApp();
  // A new form after each addition, so its fields start empty again.
  const [generation, setGeneration] = useState(0);
  return (
    <section class="card" aria-labelledby="add-endpoint-title">
      <h2 id="add-endpoint-title">Add an endpoint</h2>
      <p class="muted small">The URL follows the rules of a request’s callback_url (https, a public address). It receives every event ticked below.</p>
      <EndpointForm
        key={generation}
        eventTypes={eventTypes}
        initial={{ url: '', events: [...eventTypes], description: '' }}
        submitLabel="Add endpoint"
        onSubmit={async (fields) => {
          const created = await api.createEndpoint(fields);
          setGeneration((n) => n + 1);
          onAdded(created);
        }}
      />
    </section>
  );
}
