import { useState } from 'preact/hooks';
import { Link } from 'wouter-preact';
import { TimeChart } from '../chart';
import { formatMoney } from '../time';
import { EmptyRow, ErrorBanner, plural, Time, useApp, useLoad } from '../ui';

const count = (n: number) => n.toLocaleString('en', { maximumFractionDigits: 1 });

export function UsagePage() {
  const { api, now } = useApp();
  const [days, setDays] = useState(30);
  const { data, error } = useLoad(() => api.usage(days), [days]);
  // A day is a chart point from its UTC midnight.
  const points = (data?.days ?? []).map((d) => ({ ...d, at: Date.parse(`${d.date}T00:00:00Z`) / 1000 }));
  const jobs = points.reduce((sum, d) => sum + d.count, 0);
  const busiest = points.reduce<(typeof points)[number] | undefined>((best, d) => (d.count > 0 && (!best || d.count > best.count) ? d : best), undefined);
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
            <h2 id="days-title">Jobs and charges per day</h2>
            <p class="muted small">UTC days. Each completed job is charged once; the numbers behind each chart are in the table under it.</p>
            <div class="chart-grid">
              <TimeChart
                id="usage-jobs"
                title="Jobs charged per day"
                summary={`${plural(jobs, 'job')} charged over the ${plural(points.length, 'day')}, ${busiest ? `most on ${busiest.date} (${busiest.count})` : 'none on any day'}.`}
                points={points}
                stepSeconds={86_400}
                series={[{ label: 'Jobs charged', kind: 'bar', tone: 'info', value: (p) => p.count, format: count }]}
              />
              <TimeChart
                id="usage-amount"
                title="Amount charged per day"
                summary={`${formatMoney(data.total)} charged over the ${plural(points.length, 'day')}.`}
                points={points}
                stepSeconds={86_400}
                series={[{ label: 'Charged (USD)', kind: 'bar', tone: 'ok', value: (p) => p.amount, format: formatMoney }]}
              />
            </div>
          </section>
          <section class="card" aria-labelledby="ledger-title">
            <h2 id="ledger-title">Ledger entries</h2>
            <div class="table-wrap">
              <table class="table table-stack">
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
                      <td data-label="Charged">
                        <Time at={e.created_at} now={now} />
                      </td>
                      <td data-label="Request">
                        <Link href={`/requests/${encodeURIComponent(e.job_id)}`} class="mono">
                          {e.job_id}
                        </Link>
                      </td>
                      <td data-label="Model">{e.model}</td>
                      <td class="num" data-label="Amount">
                        {formatMoney(e.amount)}
                      </td>
                    </tr>
                  ))}
                  {data.entries.length === 0 ? <EmptyRow columns={4}>No ledger entries in this period.</EmptyRow> : null}
                </tbody>
              </table>
            </div>
          </section>
        </>
      ) : null}
    </>
  );
}
