import { useEffect, useState } from 'preact/hooks';
import { Link, useLocation, useSearch } from 'wouter-preact';
import type { CallbackFilter, FilteredRecoveryPreview, JobKind, RecoveryFilters, RequestList, RequestRow } from '../api';
import { formatAbsolute, formatMoney, formatRelative } from '../time';
import { CountThenRetry, EmptyRow, ErrorBanner, plural, StateBadge, Time, useApp, useFollowingState, useLoad } from '../ui';
import { DestinationsPanel } from './destinations';

const PAGE_SIZE = 25;

/** `datetime-local` values are the viewer's local time, minute precision; the URL keeps Unix seconds. */
function toLocalInput(unixSeconds: string): string {
  if (!unixSeconds) return '';
  const d = new Date(Number(unixSeconds) * 1000);
  if (Number.isNaN(d.getTime())) return '';
  const two = (n: number) => String(n).padStart(2, '0');
  return `${d.getFullYear()}-${two(d.getMonth() + 1)}-${two(d.getDate())}T${two(d.getHours())}:${two(d.getMinutes())}`;
}

function fromLocalInput(value: string): string {
  if (!value) return '';
  const ms = new Date(value).getTime();
  return Number.isNaN(ms) ? '' : String(Math.floor(ms / 1000));
}

/** Every image and video request, newest first, with its callback. Filters live in the URL, so a view can be shared. */
export function RequestsPage() {
  const { api, now } = useApp();
  const search = useSearch();
  const [, navigate] = useLocation();
  const params = new URLSearchParams(search);
  const kind = (params.get('kind') ?? '') as JobKind | '';
  const callbackStatus = (params.get('callback_status') ?? '') as CallbackFilter | '';
  const destination = params.get('destination') ?? '';
  const createdAfter = params.get('created_after') ?? '';
  const createdBefore = params.get('created_before') ?? '';
  const q = params.get('q') ?? '';
  const after = params.get('after') ?? '';
  // The fields follow the address (back and forward, a cleared filter), and keep what is typed meanwhile.
  const [qInput, setQInput] = useFollowingState(q);
  const [destinationInput, setDestinationInput] = useFollowingState(destination);
  const [fromInput, setFromInput] = useFollowingState(toLocalInput(createdAfter));
  const [toInput, setToInput] = useFollowingState(toLocalInput(createdBefore));

  const { data, error, loading, reload } = useLoad(
    () =>
      api.requests({
        kind,
        callback_status: callbackStatus,
        destination,
        created_after: createdAfter ? Number(createdAfter) : undefined,
        created_before: createdBefore ? Number(createdBefore) : undefined,
        q,
        after,
        limit: PAGE_SIZE,
      }),
    [kind, callbackStatus, destination, createdAfter, createdBefore, q, after],
  );

  // A callback on its ladder changes by itself: keep the first page fresh while someone watches it,
  // every 2 s for a while after a bulk retry began (its attempts go out a few a second), else every 10 s.
  const [retryingUntil, setRetryingUntil] = useState(0);
  useEffect(() => {
    if (after) return;
    const fast = Date.now() < retryingUntil;
    const timer = setInterval(
      () => {
        if (document.visibilityState === 'visible') void reload();
        if (fast && Date.now() >= retryingUntil) setRetryingUntil(0);
      },
      fast ? 2_000 : 10_000,
    );
    return () => clearInterval(timer);
  }, [reload, after, retryingUntil]);

  const current = { kind, callback_status: callbackStatus, destination, created_after: createdAfter, created_before: createdBefore, q };
  function go(next: Record<string, string>) {
    const merged = new URLSearchParams({ ...current, ...next });
    for (const [k, v] of [...merged.entries()]) if (!v) merged.delete(k);
    const s = merged.toString();
    navigate(`/requests${s ? `?${s}` : ''}`);
  }

  const filtered = Object.values(current).some((v) => v !== '');
  const rows = data?.data ?? [];
  return (
    <>
      <div class="page-head">
        <h1>Requests</h1>
        <button type="button" class="btn" onClick={() => void reload()} disabled={loading}>
          {loading ? 'Refreshing…' : 'Refresh'}
        </button>
      </div>
      <form
        class="filters"
        role="search"
        aria-label="Filter requests"
        onSubmit={(e) => {
          e.preventDefault();
          go({ q: qInput.trim(), destination: destinationInput.trim(), created_after: fromLocalInput(fromInput), created_before: fromLocalInput(toInput) });
        }}
      >
        <div class="field">
          <label for="f-callback">Callback state</label>
          <select id="f-callback" value={callbackStatus} onChange={(e) => go({ callback_status: e.currentTarget.value })}>
            <option value="">Any</option>
            <option value="pending">Pending</option>
            <option value="failing">Failing, still retrying</option>
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
        <div class="field">
          <label for="f-from">Callback created from</label>
          <input id="f-from" type="datetime-local" value={fromInput} onInput={(e) => setFromInput(e.currentTarget.value)} />
        </div>
        <div class="field">
          <label for="f-to">Callback created before</label>
          <input id="f-to" type="datetime-local" value={toInput} onInput={(e) => setToInput(e.currentTarget.value)} />
        </div>
        <div class="field field-grow">
          <label for="f-q">Search</label>
          <input
            id="f-q"
            type="search"
            placeholder="An id, or words of a prompt or destination"
            aria-describedby="f-q-help"
            value={qInput}
            onInput={(e) => setQInput(e.currentTarget.value)}
          />
          <span id="f-q-help" class="muted small">
            Ids are found however old; words are looked for in the newest 1,000 requests.
          </span>
        </div>
        <div class="btn-row">
          <button type="submit" class="btn btn-primary">
            Search
          </button>
          {filtered ? (
            <button type="button" class="btn" onClick={() => navigate('/requests')}>
              Clear filters
            </button>
          ) : null}
        </div>
      </form>
      <SearchNote data={data} q={q} />
      {!q && (callbackStatus === '' || callbackStatus === 'failed') ? (
        <RecoverMatching
          key={`${kind}|${destination}|${createdAfter}|${createdBefore}`}
          filters={{
            ...(destination ? { destination } : {}),
            ...(kind ? { kind } : {}),
            ...(createdAfter ? { created_after: Number(createdAfter) } : {}),
            ...(createdBefore ? { created_before: Number(createdBefore) } : {}),
          }}
          onDone={(count, ratePerSecond) => {
            void reload();
            // Until the last of them has had time to go out, and a little after.
            if (count > 0) setRetryingUntil(Date.now() + Math.min(10 * 60_000, (count / ratePerSecond) * 1000 + 10_000));
          }}
        />
      ) : null}
      <ErrorBanner error={error} />
      <div class="table-wrap">
        <table class="table table-stack requests" aria-busy={loading}>
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
              <th scope="col">Last attempt</th>
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
                  : filtered
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
      {after || filtered ? null : <DestinationsPanel />}
    </>
  );
}

/** A word search reads a bounded window: the page says how far it looked, so a miss is not taken for "never happened". */
function SearchNote({ data, q }: { data: RequestList | undefined; q: string }) {
  if (!q || !data?.search) return null;
  const { window, looked_through: lookedThrough, complete } = data.search;
  return (
    <p class="muted" role="status" data-testid="search-note">
      {complete
        ? `Searched all ${plural(lookedThrough, 'request')} of this workspace for “${q}”.`
        : `Words are looked for in the newest ${plural(window, 'request')} only; older ones are not searched (find them by id).`}
    </p>
  );
}

/** The filters in words, for the question asked before a recovery. */
function filterWords(filters: RecoveryFilters): string {
  const parts: string[] = [];
  if (filters.kind) parts.push(filters.kind === 'image' ? 'of images' : 'of videos');
  if (filters.destination) parts.push(`to ${filters.destination}`);
  if (filters.created_after !== undefined) parts.push(`created from ${formatAbsolute(filters.created_after)}`);
  if (filters.created_before !== undefined) parts.push(`created before ${formatAbsolute(filters.created_before)}`);
  return parts.length ? parts.join(', ') : 'of this workspace, whatever their destination or time';
}

/**
 * Retrying the failed callbacks the filters list, through the recovery of `POST /v1/callbacks/recover`:
 * the count is asked for first and shown in the question; the attempts go out at the recovery's pace.
 */
function RecoverMatching({ filters, onDone }: { filters: RecoveryFilters; onDone: (count: number, ratePerSecond: number) => void }) {
  const { api } = useApp();
  return (
    <section class="recover-matching" aria-label="Recovery">
      <CountThenRetry<FilteredRecoveryPreview>
        label="Retry failed callbacks matching these filters"
        count={() => api.previewFilteredRecovery(filters)}
        retry={() => api.recoverFiltered(filters)}
        onDone={onDone}
        words={{
          noneLabel: 'Nothing to retry',
          none: (p) => `No failed callback ${filterWords(p.filters)}: failures still on their retry ladder are retried by it.`,
          questionLabel: (p) => `Retry ${plural(p.count, 'failed callback')}?`,
          question: (p) => `Retry ${plural(p.count, 'failed callback')} ${filterWords(p.filters)}? They go out ${p.rate_per_second} a second.`,
          startedNone: 'Nothing to retry: no callback matching these filters has ended failed.',
          started: (s) =>
            `Retrying ${plural(s.count, 'failed callback')} matching these filters, ${s.rate_per_second} a second. The list refreshes every 2 s as their attempts are made.`,
        }}
      />
    </section>
  );
}

function Row({ row, now }: { row: RequestRow; now: number }) {
  const cb = row.callback;
  const last = row.last_attempt;
  return (
    <tr class={row.failing ? 'row-failing' : undefined} data-failing={row.failing ? 'true' : undefined}>
      <td data-label="Request">
        <Link href={`/requests/${encodeURIComponent(row.id)}`} class="mono id-cut" title={row.id}>
          {row.id}
        </Link>
        <div class="prompt" title={`${row.kind === 'video' ? 'Video' : 'Image'} · ${row.model} · ${row.prompt}`}>
          {row.kind === 'video' ? 'Video' : 'Image'} · {row.model} · {row.prompt}
        </div>
      </td>
      <td data-label="Status">
        <StateBadge state={row.status} />
      </td>
      <td class="num" data-label="Cost">
        {formatMoney(row.cost)}
      </td>
      <td data-label="Created">
        <Time at={row.created_at} now={now} />
      </td>
      <td data-label="Callback">
        {cb ? (
          <>
            <StateBadge state={row.failing ? 'failing' : cb.status} />
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
      <td data-label="Last attempt" class="last-attempt">
        {last && cb ? (
          <>
            <span class={last.error === null ? 'result-ok' : 'result-bad'}>
              <span aria-hidden="true">{last.error === null ? '✓ ' : '✕ '}</span>
              {last.result}
            </span>
            <div class="muted small">
              {/* The count of every attempt, automatic and manual: the last one's number. */}
              attempt {cb.attempt_count}
              {last.trigger === 'manual' ? ' (manual)' : ''},{' '}
              <time dateTime={new Date(last.sent_at * 1000).toISOString()} title={formatAbsolute(last.sent_at)}>
                {formatRelative(last.sent_at, now)}
              </time>
            </div>
          </>
        ) : (
          <span class="muted">{cb ? 'Not tried yet' : '—'}</span>
        )}
      </td>
      <td data-label="Next attempt">
        {cb ? <Time at={cb.next_attempt_at} now={now} empty={cb.status === 'pending' ? 'Being sent' : 'None scheduled'} /> : '—'}
      </td>
    </tr>
  );
}
