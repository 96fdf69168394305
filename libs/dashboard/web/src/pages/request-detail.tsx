import { useEffect, useRef, useState } from 'preact/hooks';
import { Link } from 'wouter-preact';
import type { CallbackAttemptObject, RequestCallback, RequestDetail } from '../api';
import { holdWords } from './destinations';
import { RELAY_LABEL, RelayTag } from './relay-listeners';
import { formatDuration, formatMoney } from '../time';
import { ERROR_WORDS, ErrorBanner, Notice, SafeLink, StateBadge, Time, useApp, useLoad } from '../ui';

/** How long the page watches for the attempt a retry queued; it normally lands within a second or two. */
const RETRY_WATCH_MS = 30_000;
const RETRY_POLL_MS = 750;

export function RequestDetailPage({ id }: { id: string }) {
  const { api, now } = useApp();
  const { data, error, loading, reload } = useLoad(() => api.request(id), [id]);

  // While a callback is on its ladder, its next attempt will land by itself: follow it.
  const pending = data?.callbacks.some((c) => c.callback.status === 'pending') ?? false;
  useEffect(() => {
    if (!pending) return;
    const timer = setInterval(() => {
      if (document.visibilityState === 'visible') void reload();
    }, 5_000);
    return () => clearInterval(timer);
  }, [pending, reload]);

  const finished = data?.row.status === 'completed' || data?.row.status === 'failed';
  return (
    <>
      <p class="crumbs">
        <Link href="/requests">← Requests</Link>
      </p>
      <div class="page-head">
        <h1>
          Request <span class="mono">{id}</span>
        </h1>
        <button type="button" class="btn" onClick={() => void reload()} disabled={loading}>
          {loading ? 'Refreshing…' : 'Refresh'}
        </button>
      </div>
      <ErrorBanner error={error} />
      {data ? (
        <>
          {data.callbacks.length > 1 ? <CallbacksSummary detail={data} now={now} /> : null}
          {data.callbacks.length === 0 ? (
            <section class="card" aria-labelledby="cb-title">
              <h2 id="cb-title">Callback</h2>
              <p class="muted">
                {!finished
                  ? 'Callbacks are made when the job ends: to its callback_url, and to each webhook endpoint subscribed to its event.'
                  : 'No callback: this request gave no callback_url, and no webhook endpoint was subscribed to its event when it ended.'}
              </p>
            </section>
          ) : null}
          {data.callbacks.map((c) => (
            <CallbackCard key={c.callback.id} entry={c} detail={data} now={now} reload={reload} />
          ))}
          <JobSection detail={data} now={now} />
        </>
      ) : null}
    </>
  );
}

/**
 * Which of the request's destinations a callback is: its own callback_url (`own`), an endpoint, or
 * the relay because a connected `media-callbacks listen` subscribed to the event (`subscription`).
 */
function sourceOf(entry: RequestCallback, detail: RequestDetail): 'own' | 'endpoint' | 'subscription' {
  if (entry.callback.endpoint_id !== null) return 'endpoint';
  return entry.relay && entry.callback.url !== detail.row.callback_url ? 'subscription' : 'own';
}

/** Where a callback went, in words: the request's own callback_url, an endpoint by its description, or the relay. */
function destinationName(entry: RequestCallback, detail: RequestDetail): string {
  const { callback, endpoint } = entry;
  const source = sourceOf(entry, detail);
  if (source === 'subscription') return `The ${RELAY_LABEL}`;
  if (source === 'own') return 'The request’s callback_url';
  if (!endpoint) return `Endpoint ${callback.endpoint_id} (deleted)`;
  return `Endpoint ${endpoint.description || endpoint.id}`;
}

/** Every callback of the request at a glance, each linking to its own section below. */
function CallbacksSummary({ detail, now }: { detail: RequestDetail; now: number }) {
  const { callbacks } = detail;
  return (
    <section class="card" aria-labelledby="cbs-title">
      <h2 id="cbs-title">Callbacks ({callbacks.length})</h2>
      <p class="muted small">
        One per destination: the request’s own callback_url, each webhook endpoint subscribed to the event, and the relay when a connected{' '}
        <code>media-callbacks listen</code> subscribed to it. Each has its own retries.
      </p>
      <div class="table-wrap">
        <table class="table table-stack" data-testid="callbacks-summary">
          <thead>
            <tr>
              <th scope="col">Destination</th>
              <th scope="col">State</th>
              <th scope="col" class="num">
                Attempts
              </th>
              <th scope="col">Next attempt</th>
            </tr>
          </thead>
          <tbody>
            {callbacks.map((c) => {
              const failing = c.callback.status === 'pending' && c.callback.attempt_count > 0;
              return (
                <tr key={c.callback.id} data-id={c.callback.id} class={failing || c.callback.status === 'failed' ? 'row-failing' : undefined}>
                  <td data-label="Destination" class="wrap-any">
                    <a href={`#cb-${c.callback.id}`}>{destinationName(c, detail)}</a>
                    <div class="mono small muted">{c.callback.url}</div>
                    {c.relay && sourceOf(c, detail) !== 'subscription' ? <RelayTag /> : null}
                  </td>
                  <td data-label="State">
                    <StateBadge state={failing ? 'failing' : c.callback.status} />
                  </td>
                  <td data-label="Attempts" class="num">
                    {c.callback.attempt_count}
                  </td>
                  <td data-label="Next attempt">
                    <Time at={c.callback.next_attempt_at} now={now} empty={c.callback.status === 'pending' ? 'Being sent now' : 'None scheduled'} />
                  </td>
                </tr>
              );
            })}
          </tbody>
        </table>
      </div>
    </section>
  );
}

/** One callback, its attempts and its Retry: after a retry the page polls until the new attempt is recorded. */
function CallbackCard({
  entry,
  detail,
  now,
  reload,
}: {
  entry: RequestCallback;
  detail: RequestDetail;
  now: number;
  reload: () => Promise<RequestDetail | undefined>;
}) {
  const { api } = useApp();
  const { callback } = entry;
  const [retryNote, setRetryNote] = useState<string | null>(null);
  const [retryError, setRetryError] = useState<unknown>(null);
  const [retrying, setRetrying] = useState(false);
  const watching = useRef<number | null>(null);
  const titleId = `cb-title-${callback.id}`;

  useEffect(() => () => void (watching.current !== null && clearTimeout(watching.current)), []);

  async function retry() {
    setRetrying(true);
    setRetryError(null);
    const before = callback.attempts.length;
    try {
      await api.retryCallback(callback.id);
      setRetryNote('Retry queued: waiting for the attempt…');
    } catch (err) {
      setRetryError(err);
      setRetrying(false);
      return;
    }
    // Poll the detail until the new attempt appears (no reload of the page), for a bounded time.
    const deadline = Date.now() + RETRY_WATCH_MS;
    const poll = async () => {
      const fresh = await reload();
      const attempts = fresh?.callbacks.find((c) => c.callback.id === callback.id)?.callback.attempts ?? [];
      if (attempts.length > before) {
        const newest = latest(attempts);
        setRetryNote(`Attempt ${newest.number} made: ${outcomeWords(newest)}.`);
        setRetrying(false);
        watching.current = null;
      } else if (Date.now() > deadline) {
        setRetryNote('The retry is queued but no attempt has been recorded yet. Refresh in a moment.');
        setRetrying(false);
        watching.current = null;
      } else {
        watching.current = window.setTimeout(() => void poll(), RETRY_POLL_MS);
      }
    };
    watching.current = window.setTimeout(() => void poll(), RETRY_POLL_MS);
  }

  return (
    <section class="card" id={`cb-${callback.id}`} aria-labelledby={titleId} data-testid="callback" data-id={callback.id}>
      <div class="section-head">
        <h2 id={titleId} class="wrap-any">
          {detail.callbacks.length > 1 || sourceOf(entry, detail) !== 'own' ? `Callback · ${destinationName(entry, detail)}` : 'Callback'}
        </h2>
        <button type="button" class="btn btn-primary" disabled={retrying} onClick={() => void retry()}>
          {retrying ? 'Retrying…' : 'Retry callback'}
        </button>
      </div>
      <ErrorBanner error={retryError} />
      {retryNote ? <Notice>{retryNote}</Notice> : null}
      <CallbackSection entry={entry} source={sourceOf(entry, detail)} now={now} />
    </section>
  );
}

function JobSection({ detail, now }: { detail: RequestDetail; now: number }) {
  const { row, job } = detail;
  const links = outputLinks(job);
  const jobError = job.error && typeof job.error === 'object' ? (job.error as Record<string, unknown>) : null;
  return (
    <section class="card" aria-labelledby="job-title">
      <h2 id="job-title">Job</h2>
      <dl class="fields">
        <dt>Kind · model</dt>
        <dd>
          {row.kind === 'video' ? 'Video' : 'Image'} · {row.model}
        </dd>
        <dt>Status</dt>
        <dd>
          <StateBadge state={row.status} />
        </dd>
        <dt>Cost</dt>
        <dd>{formatMoney(row.cost)}</dd>
        <dt>Created</dt>
        <dd>
          <Time at={row.created_at} now={now} />
        </dd>
        <dt>Completed</dt>
        <dd>
          <Time at={typeof job.completed_at === 'number' ? job.completed_at : null} now={now} />
        </dd>
        <dt>Prompt</dt>
        <dd class="prompt-full">{row.prompt}</dd>
        {detail.trace_id ? (
          <>
            <dt>Trace</dt>
            <dd>
              <code>{detail.trace_id}</code>
            </dd>
          </>
        ) : null}
        {jobError ? (
          <>
            <dt>Error</dt>
            <dd class="text-failed">{String(jobError.message ?? JSON.stringify(jobError))}</dd>
          </>
        ) : null}
        <dt>Output</dt>
        <dd>
          {links.length === 0 ? (
            <span class="muted">No output</span>
          ) : (
            <ul class="links">
              {links.map((href, i) => (
                <li key={href}>
                  <SafeLink href={href}>{links.length > 1 ? `Output ${i + 1}` : 'Download output'}</SafeLink>
                </li>
              ))}
            </ul>
          )}
          {typeof job.url_expires_at === 'number' ? (
            <div class="muted small">
              Links expire <Time at={job.url_expires_at} now={now} inline />
            </div>
          ) : null}
        </dd>
      </dl>
      <details class="raw">
        <summary>All fields as the API returns them</summary>
        <pre>{JSON.stringify(job, null, 2)}</pre>
      </details>
    </section>
  );
}

function CallbackSection({ entry, source, now }: { entry: RequestCallback; source: ReturnType<typeof sourceOf>; now: number }) {
  const { callback, destination, endpoint } = entry;
  const attempts = [...callback.attempts].sort((a, b) => b.number - a.number || b.sent_at - a.sent_at);
  return (
    <>
      <dl class="fields fields-wide">
        <dt>State</dt>
        <dd>
          <StateBadge state={callback.status} />
        </dd>
        <dt>Destination</dt>
        <dd>
          <span class="mono break">{callback.url}</span>
          {entry.relay ? (
            <div class="small" data-testid="callback-relay">
              <RelayTag /> not sent over the network: passed to a <Link href="/endpoints">listener on a developer’s machine</Link>, whose handler’s answer is
              the attempt’s.
            </div>
          ) : null}
        </dd>
        <dt>Sent to</dt>
        <dd data-testid="callback-endpoint">
          {source === 'subscription' ? (
            `The ${RELAY_LABEL}: a connected listener subscribed to ${callback.type}`
          ) : source === 'own' ? (
            'The request’s own callback_url'
          ) : endpoint ? (
            <>
              <Link href="/endpoints">Endpoint</Link> <span class="mono">{endpoint.id}</span>
              {endpoint.description ? <span class="wrap-any"> · {endpoint.description}</span> : null}
              {endpoint.enabled ? null : <span class="muted"> (turned off)</span>}
            </>
          ) : (
            <>
              Endpoint <span class="mono">{callback.endpoint_id}</span> <span class="muted">(deleted since)</span>
            </>
          )}
        </dd>
        <dt>Event</dt>
        <dd class="mono">
          {callback.type} · {callback.id}
        </dd>
        <dt>Attempts</dt>
        <dd>{callback.attempt_count}</dd>
        <dt>Next attempt</dt>
        <dd data-testid="next-attempt">
          <Time at={callback.next_attempt_at} now={now} empty={callback.status === 'pending' ? 'Being sent now' : 'None scheduled'} />
          {destination && destination.state !== 'ok' ? (
            <div class="muted small" data-testid="destination-note">
              <StateBadge state={destination.state} /> {destination.origin}: {holdWords(destination)}
            </div>
          ) : null}
        </dd>
        <dt>Delivered</dt>
        <dd>
          <Time at={callback.delivered_at} now={now} empty="Not delivered" />
        </dd>
      </dl>
      <h3>Attempts, newest first</h3>
      {attempts.length === 0 ? (
        <p class="muted">No attempt yet.</p>
      ) : (
        <div class="table-wrap">
          <table class="table table-stack attempts">
            <thead>
              <tr>
                <th scope="col" class="num">
                  #
                </th>
                <th scope="col">Trigger</th>
                <th scope="col">Sent</th>
                <th scope="col">Result</th>
                <th scope="col" class="num">
                  Duration
                </th>
                <th scope="col">Timing</th>
                <th scope="col">Address</th>
                <th scope="col">Response excerpt</th>
              </tr>
            </thead>
            <tbody>
              {attempts.map((a) => (
                <AttemptRow key={`${a.number}-${a.trigger}-${a.sent_at}`} attempt={a} now={now} />
              ))}
            </tbody>
          </table>
        </div>
      )}
    </>
  );
}

function AttemptRow({ attempt, now }: { attempt: CallbackAttemptObject; now: number }) {
  const ok = attempt.status_code !== null && attempt.status_code >= 200 && attempt.status_code < 300 && !attempt.error;
  const t = attempt.timing;
  return (
    <tr class="attempt" data-attempt={attempt.number}>
      <td class="num" data-label="#">
        {attempt.number}
      </td>
      <td data-label="Trigger">{attempt.trigger}</td>
      <td data-label="Sent">
        <Time at={attempt.sent_at} now={now} />
      </td>
      <td data-label="Result">
        <span class={`badge ${ok ? 'badge-delivered' : 'badge-failed'}`}>{outcomeWords(attempt)}</span>
      </td>
      <td class="num" data-label="Duration">
        {formatDuration(attempt.duration_ms)}
      </td>
      <td class="small" data-label="Timing">
        {t ? (
          <>
            DNS {formatDuration(t.dns_ms)} · connect {formatDuration(t.connect_ms)} · TLS {formatDuration(t.tls_ms)} · first byte{' '}
            {formatDuration(t.first_byte_ms)}
          </>
        ) : (
          <span class="muted">not measured</span>
        )}
      </td>
      <td class="mono" data-label="Address">
        {attempt.address ?? '—'}
      </td>
      <td data-label="Response excerpt">
        {/* Attacker-controlled bytes: a text node in a <pre>, never HTML. */}
        {attempt.response_excerpt ? <pre class="excerpt">{attempt.response_excerpt}</pre> : <span class="muted">(empty)</span>}
      </td>
    </tr>
  );
}

function outcomeWords(a: CallbackAttemptObject): string {
  if (a.status_code !== null) {
    const ok = a.status_code >= 200 && a.status_code < 300;
    return `${ok ? 'OK' : 'Failed'} · HTTP ${a.status_code}`;
  }
  if (a.error) return `Failed · ${ERROR_WORDS[a.error] ?? a.error}`;
  return 'Failed';
}

function latest(attempts: CallbackAttemptObject[]): CallbackAttemptObject {
  return attempts.reduce((a, b) => (b.sent_at > a.sent_at || (b.sent_at === a.sent_at && b.number > a.number) ? b : a));
}

/** The job's download links: `url` on a video, `data[].url` on an image request. */
function outputLinks(job: Record<string, unknown>): string[] {
  const links: string[] = [];
  if (typeof job.url === 'string') links.push(job.url);
  if (Array.isArray(job.data)) for (const d of job.data) if (d && typeof d.url === 'string') links.push(d.url);
  return links;
}
