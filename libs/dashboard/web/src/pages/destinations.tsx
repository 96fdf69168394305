import { useEffect } from 'preact/hooks';
import type { DestinationRow } from '../api';
import { ErrorBanner, StateBadge, Time, useApp, useLoad } from '../ui';

/** What a state means for the callbacks going there, in the words an engineer acts on. */
const MEANING: Record<DestinationRow['state'], string> = {
  ok: 'Callbacks go out as soon as they are due.',
  slow: 'Its attempts time out or answer late: fewer run at once, so later ones wait for a slot.',
  throttled: 'It asked us to slow down (429, 502, 504 or Retry-After): fewer attempts run at once.',
  saturated: 'Every slot is in use: further attempts wait for one, and their next attempt time shows when.',
};

const ORDER: Record<DestinationRow['state'], number> = { saturated: 0, throttled: 1, slow: 2, ok: 3 };

/**
 * The receivers this workspace's callbacks went to lately and how each is doing, worst first: the
 * first thing to look at when callbacks are late. Refreshed while visible.
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

  const rows = [...(data?.data ?? [])].sort((a, b) => ORDER[a.state] - ORDER[b.state]);
  if (!error && rows.length === 0) return null;
  const troubled = rows.filter((row) => row.state !== 'ok').length;
  return (
    <section class="card" aria-labelledby="dest-title">
      <h2 id="dest-title">Callback destinations</h2>
      <p class="muted">
        {troubled === 0
          ? rows.length === 1
            ? 'The receiver your callbacks went to lately holds none back: they go out when due (whether it accepts them is on the Overview).'
            : `None of the ${rows.length} receivers your callbacks went to lately holds any back: they go out when due (whether they are accepted is on the Overview).`
          : `${troubled} of ${rows.length} receiver${rows.length === 1 ? '' : 's'} your callbacks went to lately ${troubled === 1 ? 'holds' : 'hold'} callbacks back.`}
      </p>
      <ErrorBanner error={error} />
      <div class="table-wrap">
        <table class="table">
          <caption class="sr-only">Callback destinations, the ones holding callbacks back first</caption>
          <thead>
            <tr>
              <th scope="col">Receiver</th>
              <th scope="col">State</th>
              <th scope="col" class="num">
                Attempts at once
              </th>
              <th scope="col">Until</th>
            </tr>
          </thead>
          <tbody>
            {rows.map((row) => (
              <tr key={row.origin} data-state={row.state}>
                <td>
                  <div class="mono break">{row.origin}</div>
                  <div class="muted small">{MEANING[row.state]}</div>
                </td>
                <td>
                  <StateBadge state={row.state} />
                </td>
                <td class="num">{row.limit}</td>
                <td>
                  <Time at={row.throttled_until ?? row.slow_until} now={now} empty="—" />
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </section>
  );
}
