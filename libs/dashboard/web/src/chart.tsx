/**
 * A small time chart in inline SVG: stacked bars and lines over time slots (minutes to days), sized
 * to its container. Hand-written rather than a chart library: the pages need a few charts of one kind, the CSP allows
 * no inline styles (colours come from classes in styles.css; SVG attributes are not styles), and
 * every number must also be on the page as text, in the table below each chart, for screen
 * readers, keyboards and anyone who cannot tell the colours apart.
 */
import type { ComponentChildren } from 'preact';
import { useEffect, useRef, useState } from 'preact/hooks';

export type Tone = 'ok' | 'bad' | 'wait' | 'info';

export interface Series<P> {
  label: string;
  kind: 'bar' | 'line';
  tone: Tone;
  /** Bars: hatched instead of solid. Lines: dashed instead of solid. So no two series differ by colour alone. */
  alt?: boolean;
  value: (point: P) => number | null;
  /** How a value reads in the table and on the axis. */
  format: (value: number) => string;
}

export interface TimeChartProps<P extends { at: number }> {
  /** Names the figure for assistive technology and the test ids (`chart-<id>`). */
  id: string;
  title: string;
  /** One sentence that says what the chart shows now; it is the image's accessible name. */
  summary: string;
  points: P[];
  stepSeconds: number;
  series: Series<P>[];
  /** `log` spreads milliseconds to hours over one axis (latencies). */
  scale?: 'linear' | 'log';
  /** A fixed top of the axis (e.g. 100 % for a rate); otherwise from the data. */
  max?: number;
  /** Extra columns of the table behind the chart. */
  extraColumns?: { label: string; value: (point: P) => string }[];
  footer?: ComponentChildren;
}

const HEIGHT = 170;
const PAD = { left: 52, right: 10, top: 10, bottom: 24 };

export function TimeChart<P extends { at: number }>(props: TimeChartProps<P>) {
  const { id, title, summary, points, stepSeconds, series, scale = 'linear' } = props;
  const box = useRef<HTMLDivElement>(null);
  const [width, setWidth] = useState(640);
  useEffect(() => {
    const el = box.current;
    if (!el) return;
    const observer = new ResizeObserver(() => setWidth(Math.max(240, Math.floor(el.clientWidth))));
    observer.observe(el);
    return () => observer.disconnect();
  }, []);

  const plotW = width - PAD.left - PAD.right;
  const plotH = HEIGHT - PAD.top - PAD.bottom;
  const slotW = plotW / Math.max(1, points.length);
  const bars = series.filter((s) => s.kind === 'bar');
  const lines = series.filter((s) => s.kind === 'line');

  const stackTop = (p: P) => bars.reduce((sum, s) => sum + (s.value(p) ?? 0), 0);
  const values = points.flatMap((p) => [stackTop(p), ...lines.map((s) => s.value(p) ?? 0)]);
  const axis = scale === 'log' ? logAxis(values) : linearAxis(props.max ?? Math.max(0, ...values));
  const y = (v: number) => PAD.top + plotH - axis.fraction(v) * plotH;
  const x = (i: number) => PAD.left + i * slotW;
  const hatch = `hatch-${id}`;
  const format = series[0]?.format ?? String;

  return (
    <figure class="chart" data-testid={`chart-${id}`}>
      <figcaption class="chart-title">{title}</figcaption>
      <div class="chart-box" ref={box}>
        <svg width={width} height={HEIGHT} viewBox={`0 0 ${width} ${HEIGHT}`} role="img" aria-label={summary}>
          <defs>
            <pattern id={hatch} patternUnits="userSpaceOnUse" width="5" height="5" patternTransform="rotate(45)">
              <rect width="2.5" height="5" class="tone-bad fill" />
            </pattern>
          </defs>
          {axis.ticks.map((t) => (
            <g key={t}>
              <line x1={PAD.left} x2={width - PAD.right} y1={y(t)} y2={y(t)} class="grid" />
              <text x={PAD.left - 6} y={y(t) + 4} class="axis-label" text-anchor="end">
                {format(t)}
              </text>
            </g>
          ))}
          {points.map((p, i) => {
            let base = 0;
            return bars.map((s) => {
              const v = s.value(p) ?? 0;
              if (v <= 0) return null;
              const top = y(base + v);
              const bottom = y(base);
              base += v;
              const w = Math.max(1, slotW * 0.72);
              return s.alt ? (
                <rect
                  key={`${s.label}-${i}`}
                  x={x(i) + (slotW - w) / 2}
                  y={top}
                  width={w}
                  height={Math.max(1, bottom - top)}
                  fill={`url(#${hatch})`}
                  class={`bar-outline tone-${s.tone}`}
                />
              ) : (
                <rect key={`${s.label}-${i}`} x={x(i) + (slotW - w) / 2} y={top} width={w} height={Math.max(1, bottom - top)} class={`bar tone-${s.tone}`} />
              );
            });
          })}
          {lines.map((s) =>
            segments(points, s.value).map((segment, k) =>
              segment.length === 1 ? (
                <circle key={`${s.label}-${k}`} cx={x(segment[0]![0]) + slotW / 2} cy={y(segment[0]![1])} r="2.5" class={`dot tone-${s.tone}`} />
              ) : (
                <polyline
                  key={`${s.label}-${k}`}
                  points={segment.map(([i, v]) => `${(x(i) + slotW / 2).toFixed(1)},${y(v).toFixed(1)}`).join(' ')}
                  class={`line tone-${s.tone}${s.alt ? ' dashed' : ''}`}
                />
              ),
            ),
          )}
          <line x1={PAD.left} x2={width - PAD.right} y1={PAD.top + plotH} y2={PAD.top + plotH} class="baseline" />
          {xTicks(points.length).map((i) => (
            <text
              key={i}
              x={Math.min(width - PAD.right, Math.max(PAD.left, x(i) + slotW / 2))}
              y={HEIGHT - 6}
              class="axis-label"
              text-anchor={i === 0 ? 'start' : i === points.length - 1 ? 'end' : 'middle'}
            >
              {timeLabel(points[i]!.at, stepSeconds, false, i === points.length - 1)}
            </text>
          ))}
        </svg>
      </div>
      <ul class="legend" aria-label={`Legend of ${title}`}>
        {series.map((s) => (
          <li key={s.label}>
            <span class={`swatch swatch-${s.kind} tone-${s.tone}${s.alt ? ' alt' : ''}`} aria-hidden="true" />
            {s.label}
          </li>
        ))}
      </ul>
      {props.footer}
      <details class="numbers">
        <summary>Numbers behind this chart</summary>
        <div class="table-wrap">
          <table class="table table-compact table-stack" data-testid={`table-${id}`}>
            <caption class="sr-only">
              {title}, one row per {stepWords(stepSeconds)}, oldest first
            </caption>
            <thead>
              <tr>
                <th scope="col">From</th>
                {series.map((s) => (
                  <th scope="col" class="num" key={s.label}>
                    {s.label}
                  </th>
                ))}
                {(props.extraColumns ?? []).map((c) => (
                  <th scope="col" class="num" key={c.label}>
                    {c.label}
                  </th>
                ))}
              </tr>
            </thead>
            <tbody>
              {points.map((p) => (
                <tr key={p.at} data-at={p.at}>
                  <th scope="row" class="nowrap">
                    {timeLabel(p.at, stepSeconds, true)}
                  </th>
                  {series.map((s) => {
                    const v = s.value(p);
                    return (
                      <td class="num" key={s.label} data-label={s.label}>
                        {v === null ? '—' : s.format(v)}
                      </td>
                    );
                  })}
                  {(props.extraColumns ?? []).map((c) => (
                    <td class="num" key={c.label} data-label={c.label}>
                      {c.value(p)}
                    </td>
                  ))}
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      </details>
    </figure>
  );
}

interface Axis {
  ticks: number[];
  /** Where a value sits, 0 (bottom) to 1 (top). */
  fraction: (v: number) => number;
}

/** 0 to a round number at or above the largest value, with a tick halfway. */
function linearAxis(max: number): Axis {
  const top = niceCeil(max);
  return { ticks: [0, top / 2, top], fraction: (v) => Math.min(1, Math.max(0, v / top)) };
}

function niceCeil(v: number): number {
  // Below 1 only for amounts of money (a few cents a day): counts are whole, and rates pass their own top.
  if (v <= 0) return 1;
  const magnitude = 10 ** Math.floor(Math.log10(v));
  const step = [1, 2, 2.5, 5, 10].find((m) => m * magnitude >= v)!;
  return step * magnitude;
}

/** Powers of ten around the values (in ms: 1 ms … 10 h), so 5 ms and 2 h fit one axis. */
function logAxis(values: number[]): Axis {
  const positive = values.filter((v) => v > 0);
  const low = Math.floor(Math.log10(Math.max(1, Math.min(...(positive.length ? positive : [1])))));
  const high = Math.max(low + 1, Math.ceil(Math.log10(Math.max(10, ...positive))));
  const ticks = Array.from({ length: high - low + 1 }, (_, i) => 10 ** (low + i));
  const span = high - low;
  return {
    ticks: span > 4 ? ticks.filter((_, i) => i % 2 === 0 || i === ticks.length - 1) : ticks,
    fraction: (v) => (v <= 0 ? 0 : Math.min(1, Math.max(0, (Math.log10(v) - low) / span))),
  };
}

/** Runs of consecutive points that have a value: a line breaks where there is none. */
function segments<P>(points: P[], value: (p: P) => number | null): [number, number][][] {
  const runs: [number, number][][] = [];
  let run: [number, number][] = [];
  points.forEach((p, i) => {
    const v = value(p);
    if (v === null) {
      if (run.length) runs.push(run);
      run = [];
    } else {
      run.push([i, v]);
    }
  });
  if (run.length) runs.push(run);
  return runs;
}

function xTicks(n: number): number[] {
  if (n <= 1) return n === 1 ? [0] : [];
  return [...new Set([0, Math.floor((n - 1) / 2), n - 1])];
}

const clock = new Intl.DateTimeFormat(undefined, { hour: '2-digit', minute: '2-digit' });
const dayAndHour = new Intl.DateTimeFormat(undefined, { weekday: 'short', hour: '2-digit', minute: '2-digit' });
const clockZoned = new Intl.DateTimeFormat(undefined, { hour: '2-digit', minute: '2-digit', timeZoneName: 'short' });
const dayAndHourZoned = new Intl.DateTimeFormat(undefined, { weekday: 'short', hour: '2-digit', minute: '2-digit', timeZoneName: 'short' });
const withDay = new Intl.DateTimeFormat(undefined, { month: 'short', day: 'numeric', hour: '2-digit', minute: '2-digit', timeZoneName: 'short' });
// Days are UTC days (as the ledger sums them): named in UTC, or a day would carry the one before's name west of Greenwich.
const utcDay = new Intl.DateTimeFormat(undefined, { month: 'short', day: 'numeric', timeZone: 'UTC' });
const utcDate = new Intl.DateTimeFormat(undefined, { weekday: 'short', year: 'numeric', month: 'short', day: 'numeric', timeZone: 'UTC' });

/**
 * Axis labels short, the last one with the time zone (an on-call engineer in another zone than the
 * one who shared a screenshot reads the times right); table rows full (date, time and zone).
 */
function timeLabel(at: number, stepSeconds: number, full = false, zoned = false): string {
  const date = new Date(at * 1000);
  if (stepSeconds >= 86_400) return (full ? utcDate : utcDay).format(date) + (zoned && !full ? ' UTC' : '');
  if (full) return withDay.format(date);
  if (stepSeconds >= 3600) return (zoned ? dayAndHourZoned : dayAndHour).format(date);
  return (zoned ? clockZoned : clock).format(date);
}

function stepWords(stepSeconds: number): string {
  return stepSeconds >= 86_400 ? 'UTC day' : stepSeconds >= 3600 ? 'hour' : stepSeconds >= 900 ? 'quarter hour' : 'minute';
}
