import { useEffect, useState } from 'preact/hooks';
import { Link, useLocation, useSearch } from 'wouter-preact';
import type { CallbackStatus, JobKind, RequestRow } from '../api';
import { formatMoney } from '../time';
import { EmptyRow, ErrorBanner, StateBadge, Time, useApp, useLoad } from '../ui';
import { DestinationsPanel } from './destinations';

const PAGE_SIZE = 25;

/** Every image and video request, newest first, with its callback. Filters live in the URL, so a view can be shared. */
export function RequestsPage() {
  const { api, now } = useApp();
  const search = useSearch();
  const [, navigate] = useLocation();
  const params = new URLSearchParams(search);
  const kind = (params.get('kind') ?? '') as JobKind | '';
  const callbackStatus = (params.get('callback_status') ?? '') as CallbackStatus | '';
  const destination = params.get('destination') ?? '';
  const q = params.get('q') ?? '';
  const after = params.get('after') ?? '';
  const [qInput, setQInput] = useState(q);
  useEffect(() => setQInput(q), [q]);
  const [destinationInput, setDestinationInput] = useState(destination);
  useEffect(() => setDestinationInput(destination), [destination]);

  const { data, error, loading, reload } = useLoad(
    () => api.requests({ kind, callback_status: callbackStatus, destination, q, after, limit: PAGE_SIZE }),
    [kind, callbackStatus, destination, q, after],
  );

  // A callback on its ladder changes by itself: keep the first page fresh while someone watches it.
  useEffect(() => {
    if (after) return;
    const timer = setInterval(() => {
      if (document.visibilityState === 'visible') void reload();
    }, 10_000);
    return () => clearInterval(timer);
  }, [reload, after]);

  function go(next: Record<string, string>) {
    const merged = new URLSearchParams({ kind, callback_status: callbackStatus, destination, q, ...next });
    for (const [k, v] of [...merged.entries()]) if (!v) merged.delete(k);
    const s = merged.toString();
    navigate(`/requests${s ? `?${s}` : ''}`);
  }

  const rows = data?.data ?? [];
  return (
    <>
      <div class="page-head">
        <h1>Requests</h1>
        <button type="button" class="btn" onClick={() => void reload()} disabled={loading}>
          {loading ? 'Refreshing…' : 'Refresh'}
        </button>
      </div>
      {after || q || destination ? null : <DestinationsPanel />}
      <form
        class="filters"
        role="search"
        onSubmit={(e) => {
          e.preventDefault();
          go({ q: qInput.trim(), destination: destinationInput.trim() });
        }}
      >
        <div class="field">
          <label for="f-callback">Callback state</label>
          <select id="f-callback" value={callbackStatus} onChange={(e) => go({ callback_status: e.currentTarget.value })}>
            <option value="">Any</option>
            <option value="pending">Pending</option>
            <option value="delivered">Delivered</option>
            <option value="failed">Failed</option>
          </select>
        </div>
        <div class="field">
          <label for="f-kind">Kind</label>
          <select id="f-kind" value={kind} onChange={(e) => go({ kind: e.currentTarget.value })}>
            <option value="">Images and videos</option>
            <option value="image">Images</option>
            <option value="video">Videos</option>
          </select>
        </div>
        <div class="field field-grow">
          <label for="f-destination">Destination</label>
          <input
            id="f-destination"
            type="text"
            inputMode="url"
            placeholder="https://host:port"
            value={destinationInput}
            onInput={(e) => setDestinationInput(e.currentTarget.value)}
          />
        </div>
        <div class="field field-grow">
          <label for="f-q">Find by id</label>
          <input id="f-q" type="search" placeholder="req_…, video_… or msg_…" value={qInput} onInput={(e) => setQInput(e.currentTarget.value)} />
        </div>
        <button type="submit" class="btn btn-primary">
          Search
        </button>
        {kind || callbackStatus || destination || q ? (
          <button type="button" class="btn" onClick={() => navigate('/requests')}>
            Clear filters
          </button>
        ) : null}
      </form>
      <ErrorBanner error={error} />
      <div class="table-wrap">
        <table class="table" aria-busy={loading}>
          <caption class="sr-only">Requests, newest first</caption>
          <thead>
            <tr>
              <th scope="col">Request</th>
              <th scope="col">Status</th>
              <th scope="col" class="num">
                Cost
              </th>
              <th scope="col">Created</th>
              <th scope="col">Callback</th>
              <th scope="col" class="num">
                Attempts
              </th>
              <th scope="col">Next attempt</th>
            </tr>
          </thead>
          <tbody>
            {rows.map((row) => (
              <Row key={row.id} row={row} now={now} />
            ))}
            {!loading && rows.length === 0 ? (
              <EmptyRow columns={7}>
                {data?.next_after
                  ? 'None among the latest callbacks looked through: try Older.'
                  : kind || callbackStatus || destination || q
                    ? 'No request matches these filters.'
                    : 'No requests yet.'}
              </EmptyRow>
            ) : null}
          </tbody>
        </table>
      </div>
      <nav class="pager" aria-label="Pages">
        {after ? (
          <button type="button" class="btn" onClick={() => go({ after: '' })}>
            ← Newest
          </button>
        ) : null}
        {data?.has_more && (data.next_after || rows.length > 0) ? (
          <button type="button" class="btn" onClick={() => go({ after: data.next_after ?? rows[rows.length - 1]!.id })}>
            Older →
          </button>
        ) : null}
      </nav>
    </>
  );
}

function Row({ row, now }: { row: RequestRow; now: number }) {
  const cb = row.callback;
  return (
    <tr>
      <td>
        <Link href={`/requests/${encodeURIComponent(row.id)}`} class="mono">
          {row.id}
        </Link>
        <div class="prompt" title={row.prompt}>
          {row.kind === 'video' ? 'Video' : 'Image'} · {row.model} · {row.prompt}
        </div>
      </td>
      <td>
        <StateBadge state={row.status} />
      </td>
      <td class="num">{formatMoney(row.cost)}</td>
      <td>
        <Time at={row.created_at} now={now} />
      </td>
      <td>
        {cb ? (
          <>
            <StateBadge state={cb.status} />
            <div class="dest mono" title={cb.url}>
              {cb.url}
            </div>
          </>
        ) : row.callback_url ? (
          <>
            <span class="muted">Not sent yet</span>
            <div class="dest mono" title={row.callback_url}>
              {row.callback_url}
            </div>
          </>
        ) : (
          <span class="muted">None requested</span>
        )}
      </td>
      <td class="num">{cb ? cb.attempt_count : '—'}</td>
      <td>{cb ? <Time at={cb.next_attempt_at} now={now} empty={cb.status === 'pending' ? 'Being sent' : 'None scheduled'} /> : '—'}</td>
    </tr>
  );
}
