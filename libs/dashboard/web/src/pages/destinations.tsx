import { useEffect } from 'preact/hooks';
import type { DestinationRow } from '../api';
import { ErrorBanner, StateBadge, Time, useApp, useLoad } from '../ui';

const attempts = (n: number) => `${n} attempt${n === 1 ? '' : 's'}`;

/**
 * Whether, and why, this workspace's callbacks to a receiver are held back, in the words an
 * engineer acts on: whose doing it is (its own slowness, or the host's) and what happens next.
 */
export function holdWords(row: DestinationRow): string {
  switch (row.held_back_because) {
    case 'own_slowness':
      return `Your callbacks here timed out or answered late, so at most ${attempts(row.limit)} of yours run at once; the rest wait their turn. Other workspaces at this host keep their pace.`;
    case 'host_back_pressure':
      return 'The host asked every sender to slow down (429, 502, 504 or Retry-After): fewer attempts run at once, and yours wait their turn.';
    case 'host_slow':
      return 'The host is slow for every sender: fewer attempts run at once until it answers fast again, and yours wait their turn.';
    case 'host_busy':
      return `Every slot you may use at this host is taken (${attempts(row.limit)} at once): yours wait their turn, round robin with other senders.`;
    default:
      break;
  }
  switch (row.state) {
    case 'slow':
      return row.slow_until !== null
        ? `Your callbacks here were slow lately: at most ${attempts(row.limit)} of yours run at once until the time shown.`
        : 'The host was slow for every sender lately: fewer attempts run at once until the time shown.';
    case 'throttled':
      return 'The host asked us to slow down (429, 502, 504 or Retry-After): fewer attempts run at once until the time shown.';
    default:
      return 'Callbacks go out as soon as they are due.';
  }
}

/** Whether the receiver accepts this workspace's callbacks, in words beside the badge (which says it for an unknown one). */
function healthWords(row: DestinationRow): string {
  if (row.health === 'failing') return `${attempts(row.failures_in_row)} failed in a row`;
  if (row.health === 'ok') return 'The latest attempt was accepted';
  return '';
}

const HEALTH_BADGE: Record<DestinationRow['health'], string> = { ok: 'accepting', failing: 'rejecting', unknown: 'unanswered' };

/** Held back first, then failing, then the rest. */
const rank = (row: DestinationRow) => (row.state === 'saturated' ? 0 : row.health === 'failing' ? 1 : row.state !== 'ok' ? 2 : 3);

/**
 * The receivers this workspace's callbacks went to lately and how each is doing, worst first: where
 * to look when callbacks are late. Shown below the Requests list, folded unless some are held back. Two things apart, each in its own column: whether
 * callbacks are held back (and whose doing that is), and whether the receiver accepts them, so a
 * receiver that fails every callback never reads as healthy. Refreshed while visible.
 */
export function DestinationsPanel() {
  const { api, now } = useApp();
  const { data, error, reload } = useLoad(() => api.destinations(), []);
  useEffect(() => {
    const timer = setInterval(() => {
      if (document.visibilityState === 'visible') void reload();
    }, 10_000);
    return () => clearInterval(timer);
  }, [reload]);

  const rows = [...(data?.data ?? [])].sort((a, b) => rank(a) - rank(b));
  if (!error && rows.length === 0) return null;
  const held = rows.filter((row) => row.state !== 'ok').length;
  const failing = rows.filter((row) => row.health === 'failing').length;
  const receivers = (n: number) => `${n} receiver${n === 1 ? '' : 's'}`;
  return (
    <section class="card" aria-labelledby="dest-title">
      <h2 id="dest-title">Callback destinations</h2>
      <ErrorBanner error={error} />
      {/* Below the list, which is what the page is opened for; open by itself only when callbacks are held back. */}
      <details open={held > 0}>
        <summary class="muted">
          {held === 0
            ? `None of the ${receivers(rows.length)} your callbacks went to lately holds any back: they go out when due.`
            : `${held} of ${receivers(rows.length)} your callbacks went to lately ${held === 1 ? 'holds' : 'hold'} callbacks back.`}{' '}
          {failing === 0 ? 'None is failing them.' : `${failing} ${failing === 1 ? 'is' : 'are'} failing them.`}
        </summary>
        <div class="table-wrap">
          <table class="table table-stack">
            <caption class="sr-only">Callback destinations, the ones holding callbacks back first, then the failing ones</caption>
            <thead>
              <tr>
                <th scope="col">Receiver</th>
                <th scope="col">Sending</th>
                <th scope="col">Accepting</th>
                <th scope="col" class="num">
                  Yours at once
                </th>
                <th scope="col">Until</th>
              </tr>
            </thead>
            <tbody>
              {rows.map((row) => (
                <tr key={row.origin} data-state={row.state} data-health={row.health} data-reason={row.held_back_because ?? ''}>
                  <td data-label="Receiver">
                    <div class="mono break">{row.origin}</div>
                    <div class="muted small">{holdWords(row)}</div>
                  </td>
                  <td data-label="Sending">
                    <StateBadge state={row.state === 'ok' ? 'sending' : row.state} />
                  </td>
                  <td data-label="Accepting">
                    <StateBadge state={HEALTH_BADGE[row.health]} />
                    {row.health === 'unknown' ? null : (
                      <div class="muted small">
                        {healthWords(row)}
                        {row.health === 'failing' ? (
                          <>
                            , last <Time at={row.last_failure_at} now={now} inline />
                          </>
                        ) : null}
                      </div>
                    )}
                  </td>
                  <td class="num" data-label="Yours at once">
                    {row.in_flight} of {row.limit}
                    {row.waiting > 0 ? <div class="muted small">{row.waiting} waiting</div> : null}
                  </td>
                  <td data-label="Until">
                    <Time at={row.throttled_until ?? row.slow_until ?? row.host_slow_until} now={now} empty="—" />
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      </details>
    </section>
  );
}
