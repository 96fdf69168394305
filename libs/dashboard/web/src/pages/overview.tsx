import type { ComponentChildren } from 'preact';
import { useEffect } from 'preact/hooks';
import { Link, useLocation, useSearch } from 'wouter-preact';
import type { Overview, OverviewDestination, OverviewPoint, OverviewWindow, RecoveryPreview } from '../api';
import { TimeChart } from '../chart';
import { formatDuration, formatMoney } from '../time';
import { CountThenRetry, EmptyRow, ErrorBanner, failureWords, plural, Time, useApp, useLoad } from '../ui';

const WINDOWS: { value: OverviewWindow; label: string; words: string }[] = [
  { value: '1h', label: 'Last hour', words: 'in the last hour' },
  { value: '24h', label: 'Last 24 hours', words: 'in the last 24 hours' },
  { value: '7d', label: 'Last 7 days', words: 'in the last 7 days' },
];

const count = (n: number) => n.toLocaleString('en');
const percent = (rate: number | null) => (rate === null ? '—' : `${(Math.floor(rate * 1000) / 10).toLocaleString('en')} %`);
/** A stretch of time in the unit that reads best: the ladder takes seconds in a demo and hours in production. */
const span = (seconds: number) =>
  seconds >= 3_600 ? `${(seconds / 3_600).toFixed(1)} hours` : seconds >= 60 ? plural(Math.round(seconds / 60), 'minute') : plural(seconds, 'second');
const latency = (ms: number | null, cap: number) => (ms === null ? '—' : `${ms >= cap ? '≥ ' : ''}${formatDuration(ms)}`);

/**
 * The dashboard's first page: in ten seconds, is delivery healthy, since when not, and where it
 * fails. Everything here is read from aggregates (one call), refreshed every 30 s while visible.
 */
export function OverviewPage() {
  const { api } = useApp();
  const search = useSearch();
  const [, navigate] = useLocation();
  const requested = new URLSearchParams(search).get('window');
  const window = (WINDOWS.some((w) => w.value === requested) ? requested : '1h') as OverviewWindow;
  const { data, error, loading, reload } = useLoad(() => api.overview(window), [window]);

  useEffect(() => {
    const timer = setInterval(() => {
      if (document.visibilityState === 'visible') void reload();
    }, 30_000);
    // A tab brought back after a while shows figures of now, not of when it was hidden.
    const onVisible = () => {
      if (document.visibilityState === 'visible') void reload();
    };
    document.addEventListener('visibilitychange', onVisible);
    return () => {
      clearInterval(timer);
      document.removeEventListener('visibilitychange', onVisible);
    };
  }, [reload]);

  const words = WINDOWS.find((w) => w.value === window)!.words;
  return (
    <>
      <div class="page-head">
        <h1>Overview</h1>
        <div class="btn-row">
          <div class="segmented" role="group" aria-label="Time window">
            {WINDOWS.map((w) => (
              <button
                key={w.value}
                type="button"
                class={w.value === window ? 'btn seg active' : 'btn seg'}
                aria-pressed={w.value === window}
                onClick={() => navigate(w.value === '1h' ? '/overview' : `/overview?window=${w.value}`)}
              >
                {w.label}
              </button>
            ))}
          </div>
          <button type="button" class="btn" onClick={() => void reload()} disabled={loading}>
            {loading ? 'Refreshing…' : 'Refresh'}
          </button>
        </div>
      </div>
      <ErrorBanner error={error} />
      {data ? <OverviewBody data={data} words={words} onRecovered={() => void reload()} /> : loading ? <p class="muted">Loading…</p> : null}
    </>
  );
}

function OverviewBody({ data, words, onRecovered }: { data: Overview; words: string; onRecovered: () => void }) {
  const { now } = useApp();
  const t = data.totals;
  const cap = data.latency_cap_ms;
  const delivered = t.delivered + t.recovered;
  return (
    <>
      <Headline data={data} words={words} />
      <dl class="tiles" aria-label={`Callbacks ${words}`}>
        <Tile tone="ok" label="Delivered" value={count(delivered)} testId="tile-delivered">
          {t.recovered ? `${count(t.recovered)} of them after failing` : `callbacks ${words}`}
        </Tile>
        <Tile tone="bad" label="Failed" value={count(t.failed)} testId="tile-failed">
          callbacks that ran out of attempts {words}
          {t.recovered ? ', including any that a retry delivered since' : ''}
        </Tile>
        <Tile tone="wait" label="Pending now" value={count(t.pending)} testId="tile-pending">
          on their retry ladder
        </Tile>
        <Tile
          tone={t.first_attempt_success_rate === null || t.first_attempt_success_rate >= 0.95 ? 'ok' : 'bad'}
          label="First-attempt success"
          value={percent(t.first_attempt_success_rate)}
          testId="tile-first"
        >
          {t.first_attempts ? `${count(t.first_attempts_delivered)} of ${plural(t.first_attempts, 'first attempt')}` : 'no first attempt yet'}
        </Tile>
        <Tile tone="info" label="Delivery latency" value={`p50 ${latency(t.latency_p50_ms, cap)}`} testId="tile-latency">
          p95 {latency(t.latency_p95_ms, cap)}, from the job’s end to the delivery
          {t.recovered ? ', retries by hand included' : ''}
        </Tile>
        <Tile tone={t.failed_attempts ? 'bad' : 'ok'} label="Failed attempts" value={count(t.failed_attempts)} testId="tile-attempts">
          of {plural(t.attempts, 'attempt')}
        </Tile>
      </dl>
      <p class="muted small" data-testid="overview-as-of">
        As of <Time at={data.generated_at} now={now} inline />. Counted as things happened: callbacks deleted since with their job stay counted here, so the
        lists can show fewer.
      </p>

      <Destinations data={data} words={words} onRecovered={onRecovered} />
      <div class="chart-grid">
        <section class="card">
          <TimeChart<OverviewPoint>
            id="callbacks"
            title="Callbacks delivered, failed and pending"
            summary={`Callbacks ${words}: ${count(delivered)} delivered, ${count(t.failed)} failed; ${count(t.pending)} pending now.`}
            points={data.series}
            stepSeconds={data.step_seconds}
            series={[
              { label: 'Delivered', kind: 'bar', tone: 'ok', value: (p) => p.delivered + p.recovered, format: count },
              { label: 'Failed', kind: 'bar', tone: 'bad', alt: true, value: (p) => p.failed, format: count },
              { label: 'Pending (at the end)', kind: 'line', tone: 'wait', alt: true, value: (p) => p.pending, format: count },
            ]}
            extraColumns={[
              { label: 'Of which after failing', value: (p) => count(p.recovered) },
              { label: 'Created', value: (p) => count(p.created) },
            ]}
          />
        </section>
        <section class="card">
          <TimeChart<OverviewPoint>
            id="first-attempt"
            title="First-attempt success rate"
            summary={`First-attempt success ${words}: ${percent(t.first_attempt_success_rate)} (${count(t.first_attempts_delivered)} of ${plural(t.first_attempts, 'first attempt')}).`}
            points={data.series}
            stepSeconds={data.step_seconds}
            max={100}
            series={[
              {
                label: 'Delivered at the first attempt',
                kind: 'line',
                tone: 'info',
                value: (p) => (p.first_attempt_success_rate === null ? null : p.first_attempt_success_rate * 100),
                format: (v) => `${Math.round(v * 10) / 10} %`,
              },
            ]}
            extraColumns={[
              { label: 'First attempts', value: (p) => count(p.first_attempts) },
              { label: 'Delivered at once', value: (p) => count(p.first_attempts_delivered) },
            ]}
          />
        </section>
        <section class="card">
          <TimeChart<OverviewPoint>
            id="latency"
            title="Delivery latency from the job’s end"
            summary={`Delivery latency ${words}: p50 ${latency(t.latency_p50_ms, cap)}, p95 ${latency(t.latency_p95_ms, cap)}.`}
            points={data.series}
            stepSeconds={data.step_seconds}
            scale="log"
            series={[
              { label: 'p50', kind: 'line', tone: 'info', value: (p) => p.latency_p50_ms, format: (v) => latency(v, cap) },
              { label: 'p95', kind: 'line', tone: 'bad', alt: true, value: (p) => p.latency_p95_ms, format: (v) => latency(v, cap) },
            ]}
            extraColumns={[{ label: 'Deliveries', value: (p) => count(p.delivered + p.recovered) }]}
            footer={<p class="muted small">Estimated from a fixed histogram, to within its bucket (log-spaced, 5 ms to 12 h).</p>}
          />
        </section>
        <Jobs data={data} />
      </div>
    </>
  );
}

/** The one sentence to read first. */
function Headline({ data, words }: { data: Overview; words: string }) {
  const t = data.totals;
  const worst = data.destinations[0];
  if (t.attempts === 0 && t.pending === 0)
    return (
      <p class="headline" data-testid="headline">
        No callback was attempted {words}, and none is pending.
      </p>
    );
  if (t.failed_attempts === 0 && t.failed === 0)
    return (
      <p class="headline headline-ok" data-testid="headline">
        <span aria-hidden="true">✓ </span>Every attempt {words} delivered: {plural(t.attempts, 'attempt')}, none failed.
      </p>
    );
  const first = data.series.find((p) => p.failed_attempts > 0 || p.failed > 0);
  const since = first ? ` (the first at ${sinceWords(first.at, data.step_seconds)})` : '';
  return (
    <p class="headline headline-bad" data-testid="headline">
      <span aria-hidden="true">✕ </span>
      {plural(t.failed_attempts, 'attempt')} failed {words}
      {since}
      {t.failed ? `, and ${plural(t.failed, 'callback')} ran out of attempts` : ''}.
      {worst ? ` Most failures: ${worst.origin} (${plural(worst.failed_attempts, 'attempt')}, last ${failureWords(worst.last_error, worst.last_status)}).` : ''}
    </p>
  );
}

// With the zone named (and the day, past an hour's window): "01:43 AM" read in another zone is a guess.
const clock = new Intl.DateTimeFormat(undefined, { hour: '2-digit', minute: '2-digit', timeZoneName: 'short' });
const dayClock = new Intl.DateTimeFormat(undefined, { weekday: 'short', hour: '2-digit', minute: '2-digit', timeZoneName: 'short' });

/** When the first failure of the window was, to the point's precision (a minute, a quarter hour, an hour). */
function sinceWords(at: number, stepSeconds: number): string {
  return (stepSeconds >= 900 ? dayClock : clock).format(new Date(at * 1000));
}

function Tile({ tone, label, value, testId, children }: { tone: string; label: string; value: string; testId: string; children: ComponentChildren }) {
  return (
    <div class={`tile tile-${tone}`} data-testid={testId}>
      <dt>{label}</dt>
      <dd>
        <span class="tile-value">{value}</span>
        <span class="tile-note">{children}</span>
      </dd>
    </div>
  );
}

function Jobs({ data }: { data: Overview }) {
  const max = Math.max(0, ...data.days.map((d) => d.jobs_completed + d.jobs_failed));
  const total = data.days.reduce((sum, d) => sum + d.charged, 0);
  return (
    <section class="card" aria-labelledby="jobs-title">
      <h2 id="jobs-title">Jobs and charges per day</h2>
      <p class="muted small">
        Last 7 days (UTC), whatever the window: {formatMoney(total)} charged. Only completed jobs are charged; <Link href="/usage">Usage</Link> has the ledger.
      </p>
      <div class="table-wrap">
        <table class="table table-compact table-stack" data-testid="table-jobs">
          <caption class="sr-only">Jobs finished and charged per UTC day, oldest first</caption>
          <thead>
            <tr>
              <th scope="col">Day</th>
              <th scope="col" class="num">
                Completed
              </th>
              <th scope="col" class="num">
                Failed
              </th>
              <th scope="col" class="num">
                Charged
              </th>
              <th scope="col" class="bar-head">
                <span class="sr-only">Jobs, as a share of the busiest day</span>
              </th>
            </tr>
          </thead>
          <tbody>
            {data.days.map((d) => (
              <tr key={d.date} data-date={d.date}>
                <th scope="row" class="nowrap">
                  {d.date}
                </th>
                <td class="num" data-label="Completed">
                  {count(d.jobs_completed)}
                </td>
                <td class="num" data-label="Failed">
                  {count(d.jobs_failed)}
                </td>
                <td class="num" data-label="Charged">
                  {formatMoney(d.charged)}
                </td>
                <td class="bar-cell">
                  <meter min={0} max={max || 1} value={d.jobs_completed + d.jobs_failed} aria-hidden="true" />
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </section>
  );
}

function Destinations({ data, words, onRecovered }: { data: Overview; words: string; onRecovered: () => void }) {
  const { now } = useApp();
  return (
    <section class="card" aria-labelledby="failing-title">
      <h2 id="failing-title">Destinations with the most failures</h2>
      <p class="muted small">
        Failed attempts {words} per receiver (origin). A failing callback stays on its retry ladder for six attempts over {span(data.ladder_seconds)} before it
        ends failed; a retry here sends each callback that already ended failed once more, 5 a second.
      </p>
      <div class="table-wrap">
        <table class="table table-stack" data-testid="table-destinations">
          <caption class="sr-only">Destinations with the most failed attempts {words}, most first</caption>
          <thead>
            <tr>
              <th scope="col">Destination</th>
              <th scope="col" class="num">
                Failed attempts
              </th>
              <th scope="col">Last failure</th>
              <th scope="col">
                <span class="sr-only">Actions</span>
              </th>
            </tr>
          </thead>
          <tbody>
            {data.destinations.map((d) => (
              <DestinationRow key={d.origin} d={d} now={now} onRecovered={onRecovered} />
            ))}
            {data.destinations.length === 0 ? <EmptyRow columns={4}>No failed attempt {words}.</EmptyRow> : null}
          </tbody>
        </table>
      </div>
      {data.other_destination_failures ? (
        <p class="muted small">And {plural(data.other_destination_failures, 'failed attempt')} to other destinations.</p>
      ) : null}
    </section>
  );
}

function DestinationRow({ d, now, onRecovered }: { d: OverviewDestination; now: number; onRecovered: () => void }) {
  return (
    <tr data-origin={d.origin}>
      <td>
        <div class="mono break">{d.origin}</div>
        <Link href={`/requests?destination=${encodeURIComponent(d.origin)}`} class="small">
          Requests to this destination
        </Link>
      </td>
      <td class="num" data-label="Failed attempts">
        <span class="text-failed">{count(d.failed_attempts)}</span>
      </td>
      <td data-label="Last failure">
        <span class="badge badge-failed">
          <span aria-hidden="true">✕ </span>
          {failureWords(d.last_error, d.last_status)}
        </span>
        <div>
          <Time at={d.last_failure_at} now={now} inline />
        </div>
      </td>
      <td class="actions-cell">
        <RetryDestination origin={d.origin} onDone={onRecovered} />
      </td>
    </tr>
  );
}

/** Retries the destination's failed callbacks, through the recovery scoped to one origin. */
function RetryDestination({ origin, onDone }: { origin: string; onDone: () => void }) {
  const { api } = useApp();
  const label = 'Retry all failed callbacks to this destination';
  return (
    <div class="retry-dest">
      <CountThenRetry<RecoveryPreview>
        label={label}
        buttonLabel={`${label}: ${origin}`}
        small
        count={() => api.previewRecovery(origin)}
        retry={() => api.recover(origin)}
        onDone={onDone}
        words={{
          noneLabel: `Retry to ${origin}`,
          none: () => 'No callback to this destination has ended failed: its failures are still on their retry ladder.',
          questionLabel: (p) => `Retry ${plural(p.count, 'failed callback')} to ${origin}?`,
          question: (p) => `Retry ${plural(p.count, 'failed callback')} to this destination? They go out ${p.rate_per_second} a second.`,
          startedNone: 'Nothing to retry: no callback to this destination has ended failed.',
          started: (s) => `Retrying ${plural(s.count, 'failed callback')} to this destination, ${s.rate_per_second} a second.`,
        }}
      />
    </div>
  );
}
