import { useEffect, useState } from 'preact/hooks';

/** Absolute times in the viewer's own zone (the browser's), with the zone named so nobody guesses. */
const ABSOLUTE: Intl.DateTimeFormatOptions = {
  month: 'short',
  day: 'numeric',
  hour: '2-digit',
  minute: '2-digit',
  second: '2-digit',
  timeZoneName: 'short',
};
const absolute = new Intl.DateTimeFormat(undefined, ABSOLUTE);
const absoluteWithYear = new Intl.DateTimeFormat(undefined, { ...ABSOLUTE, year: 'numeric' });
const relative = new Intl.RelativeTimeFormat('en', { numeric: 'auto', style: 'short' });

/** The year only when it is not this one: shorter columns for the common case. */
export function formatAbsolute(unixSeconds: number): string {
  const date = new Date(unixSeconds * 1000);
  return (date.getFullYear() === new Date().getFullYear() ? absolute : absoluteWithYear).format(date);
}

/** "in 4 min", "3 min ago", "now": the unit grows with the distance. */
export function formatRelative(unixSeconds: number, nowMs: number): string {
  const diff = unixSeconds - nowMs / 1000;
  const abs = Math.abs(diff);
  if (abs < 5) return 'now';
  if (abs < 60) return relative.format(Math.round(diff), 'second');
  if (abs < 3600) return relative.format(Math.round(diff / 60), 'minute');
  // Hours up to two days: "in 24 hr" says more than "tomorrow" about when a secret stops signing.
  if (abs < 2 * 86400) return relative.format(Math.round(diff / 3600), 'hour');
  return relative.format(Math.round(diff / 86400), 'day');
}

/** The current time, re-read every `everyMs` so relative times stay true on a page left open. */
export function useNow(everyMs = 5_000): number {
  const [now, setNow] = useState(() => Date.now());
  useEffect(() => {
    const timer = setInterval(() => setNow(Date.now()), everyMs);
    return () => clearInterval(timer);
  }, [everyMs]);
  return now;
}

export function formatMoney(amount: number | null | undefined): string {
  if (amount === null || amount === undefined) return '—';
  return `$${amount.toFixed(amount !== 0 && Math.abs(amount) < 0.01 ? 4 : 2)}`;
}

export function formatDuration(ms: number | null | undefined): string {
  if (ms === null || ms === undefined) return '—';
  return ms < 1000 ? `${Math.round(ms)} ms` : `${(ms / 1000).toFixed(ms < 10_000 ? 2 : 1)} s`;
}
