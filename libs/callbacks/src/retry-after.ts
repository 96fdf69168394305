/**
 * The most a `Retry-After` is read as. A sanity bound on what a receiver can make the reading say;
 * how long a destination is really throttled is the delivery policy's call (libs/domain
 * destinations), which may cap it lower.
 */
export const MAX_RETRY_AFTER_MS = 3_600_000;

const MONTHS = ['jan', 'feb', 'mar', 'apr', 'may', 'jun', 'jul', 'aug', 'sep', 'oct', 'nov', 'dec'];
const MONTH = `(${MONTHS.join('|')})`;
const TIME = '(\\d{2}):(\\d{2}):(\\d{2})';
// The three forms of an HTTP-date (RFC 9110 5.6.7), all in GMT. Date.parse is not used: it takes
// nearly any text for a date ("Nov 6" is 2001), and reads the asctime form, which has no zone, in
// the process's local time zone.
const IMF_FIXDATE = new RegExp(`^[a-z]{3}, (\\d{2}) ${MONTH} (\\d{4}) ${TIME} GMT$`, 'i');
const RFC850_DATE = new RegExp(`^[a-z]{6,9}, (\\d{2})-${MONTH}-(\\d{2}) ${TIME} GMT$`, 'i');
const ASCTIME_DATE = new RegExp(`^[a-z]{3} ${MONTH} ([ \\d]\\d) ${TIME} (\\d{4})$`, 'i');

/**
 * A receiver's `Retry-After` (RFC 9110 10.2.3: delay-seconds or an HTTP-date) as ms from `nowMs`:
 * null when absent or unreadable; a negative delay or a date already past is 0; at most
 * {@link MAX_RETRY_AFTER_MS}.
 */
export function parseRetryAfter(value: string | undefined, nowMs: number): number | null {
  if (value === undefined) return null;
  const text = value.trim();
  let ms: number | null;
  if (/^-?\d+$/.test(text)) ms = Number(text) * 1000;
  else {
    const date = parseHttpDate(text, nowMs);
    ms = date === null ? null : date - nowMs;
  }
  return ms === null ? null : Math.min(MAX_RETRY_AFTER_MS, Math.max(0, ms));
}

/** An HTTP-date in Unix ms, or null when `text` is none (or names a day that does not exist). */
function parseHttpDate(text: string, nowMs: number): number | null {
  let parts: [day: string, month: string, year: number, hh: string, mm: string, ss: string];
  let m: RegExpExecArray | null;
  if ((m = IMF_FIXDATE.exec(text))) parts = [m[1]!, m[2]!, Number(m[3]), m[4]!, m[5]!, m[6]!];
  else if ((m = ASCTIME_DATE.exec(text))) parts = [m[2]!, m[1]!, Number(m[6]), m[3]!, m[4]!, m[5]!];
  else if ((m = RFC850_DATE.exec(text))) {
    // A two-digit year more than 50 years ahead is in the past century (RFC 9110 5.6.7).
    let year = 2000 + Number(m[3]);
    if (year > new Date(nowMs).getUTCFullYear() + 50) year -= 100;
    parts = [m[1]!, m[2]!, year, m[4]!, m[5]!, m[6]!];
  } else return null;
  const [day, month, year, hh, mm, ss] = parts;
  const fields = [year, MONTHS.indexOf(month.toLowerCase()), Number(day), Number(hh), Number(mm), Number(ss)] as const;
  const ms = Date.UTC(...fields);
  const back = new Date(ms);
  // Date.UTC rolls 31 Feb over into March; such a date is not one.
  const real = [back.getUTCFullYear(), back.getUTCMonth(), back.getUTCDate(), back.getUTCHours(), back.getUTCMinutes(), back.getUTCSeconds()];
  return real.every((value, i) => value === fields[i]) ? ms : null;
}
