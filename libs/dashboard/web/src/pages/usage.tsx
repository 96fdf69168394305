import { useState } from 'preact/hooks';
import { Link } from 'wouter-preact';
import { formatMoney } from '../time';
import { EmptyRow, ErrorBanner, Time, useApp, useLoad } from '../ui';

export function UsagePage() {
  const { api, now } = useApp();
  const [days, setDays] = useState(30);
  const { data, error } = useLoad(() => api.usage(days), [days]);
  const max = Math.max(0, ...(data?.days ?? []).map((d) => d.amount));
  return (
    <>
      <div class="page-head">
        <h1>Usage</h1>
        <div class="field field-inline">
          <label for="u-days">Period</label>
          <select id="u-days" value={String(days)} onChange={(e) => setDays(Number(e.currentTarget.value))}>
            <option value="7">Last 7 days</option>
            <option value="30">Last 30 days</option>
            <option value="90">Last 90 days</option>
          </select>
        </div>
      </div>
      <p class="muted">Only completed jobs are charged; failed jobs never are.</p>
      <ErrorBanner error={error} />
      {data ? (
        <>
          <p class="total">
            Total: <strong>{formatMoney(data.total)}</strong> <span class="muted">({data.currency.toUpperCase()})</span>
          </p>
          <section class="card" aria-labelledby="days-title">
            <h2 id="days-title">Charges per day</h2>
            <table class="table">
              <thead>
                <tr>
                  <th scope="col">Day</th>
                  <th scope="col" class="num">
                    Jobs charged
                  </th>
                  <th scope="col" class="num">
                    Amount
                  </th>
                  <th scope="col">
                    <span class="sr-only">Share of the busiest day</span>
                  </th>
                </tr>
              </thead>
              <tbody>
                {data.days.map((d) => (
                  <tr key={d.date}>
                    <td>{d.date}</td>
                    <td class="num">{d.count}</td>
                    <td class="num">{formatMoney(d.amount)}</td>
                    <td class="bar-cell">
                      {/* A <meter> rather than a styled width: the CSP allows no inline styles. */}
                      <meter min={0} max={max || 1} value={d.amount} aria-hidden="true" />
                    </td>
                  </tr>
                ))}
                {data.days.length === 0 ? <EmptyRow columns={4}>No charges in this period.</EmptyRow> : null}
              </tbody>
            </table>
          </section>
          <section class="card" aria-labelledby="ledger-title">
            <h2 id="ledger-title">Ledger entries</h2>
            <table class="table">
              <thead>
                <tr>
                  <th scope="col">Charged</th>
                  <th scope="col">Request</th>
                  <th scope="col">Model</th>
                  <th scope="col" class="num">
                    Amount
                  </th>
                </tr>
              </thead>
              <tbody>
                {data.entries.map((e) => (
                  <tr key={`${e.job_id}-${e.created_at}`}>
                    <td>
                      <Time at={e.created_at} now={now} />
                    </td>
                    <td>
                      <Link href={`/requests/${encodeURIComponent(e.job_id)}`} class="mono">
                        {e.job_id}
                      </Link>
                    </td>
                    <td>{e.model}</td>
                    <td class="num">{formatMoney(e.amount)}</td>
                  </tr>
                ))}
                {data.entries.length === 0 ? <EmptyRow columns={4}>No ledger entries in this period.</EmptyRow> : null}
              </tbody>
            </table>
          </section>
        </>
      ) : null}
    </>
  );
}
