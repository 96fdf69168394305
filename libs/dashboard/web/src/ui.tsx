/** Small building blocks shared by the pages. Everything here renders text nodes, never HTML. */
import type { ComponentChildren } from 'preact';
import { createContext } from 'preact';
import { useCallback, useContext, useEffect, useRef, useState } from 'preact/hooks';
import { ApiError, type DashboardApi, type SessionInfo } from './api';
import { ATTEMPT_ERROR_WORDS } from '../../src/contract';
import { formatAbsolute, formatRelative } from './time';

/**
 * State a form field edits, starting from `value` and following it when `value` changes (the list
 * was read again, the address changed). Only on a change: an effect that also ran after the first
 * render would, on a slow machine, undo what was typed or chosen before it ran.
 */
export function useFollowingState<T>(value: T): [T, (next: T) => void] {
  const [state, setState] = useState(value);
  const followed = useRef(value);
  useEffect(() => {
    if (Object.is(followed.current, value)) return;
    followed.current = value;
    setState(value);
  }, [value]);
  return [state, setState];
}

export interface AppContextValue {
  api: DashboardApi;
  session: SessionInfo;
  now: number;
}
export const AppContext = createContext<AppContextValue | null>(null);
export function useApp(): AppContextValue {
  const value = useContext(AppContext);
  if (!value) throw new Error('useApp outside the signed-in app');
  return value;
}

/** A time as "Mar 3, 14:02:11 CET" with "3 min ago" beside it; the machine-readable value in `datetime`. */
export function Time({ at, now, empty = '—', inline = false }: { at: number | null | undefined; now: number; empty?: string; inline?: boolean }) {
  if (at === null || at === undefined) return <span class="muted">{empty}</span>;
  const iso = new Date(at * 1000).toISOString();
  return (
    <time dateTime={iso} title={iso} class={inline ? 'time time-inline' : 'time'}>
      <span class="time-rel">{formatRelative(at, now)}</span>
      <span class="time-abs">{formatAbsolute(at)}</span>
    </time>
  );
}

const STATE_WORDS: Record<string, string> = {
  pending: 'Pending',
  delivered: 'Delivered',
  failed: 'Failed',
  failing: 'Failing, retrying',
  queued: 'Queued',
  in_progress: 'In progress',
  completed: 'Completed',
  none: 'No callback',
  ok: 'Not holding back',
  sending: 'Not holding back',
  accepting: 'Accepting',
  rejecting: 'Failing',
  unanswered: 'No answer yet',
  slow: 'Slow',
  throttled: 'Throttled',
  saturated: 'Saturated',
  enabled: 'Enabled',
  endpoint_failing: 'Enabled, failing',
  turned_off: 'Turned off',
  disabled_failing: 'Disabled: failing',
};

/** A state in colour AND words (and a shape), so it reads without colour vision too. */
export function StateBadge({ state }: { state: string }) {
  const icon =
    state === 'delivered' || state === 'completed' || state === 'ok' || state === 'accepting' || state === 'enabled'
      ? '✓'
      : state === 'failed' || state === 'rejecting' || state === 'disabled_failing'
        ? '✕'
        : state === 'saturated' || state === 'failing' || state === 'endpoint_failing'
          ? '!'
          : state === 'none' || state === 'unanswered' || state === 'turned_off'
            ? '·'
            : state === 'sending'
              ? '→'
              : '◷';
  return (
    <span class={`badge badge-${state}`}>
      <span aria-hidden="true">{icon} </span>
      {STATE_WORDS[state] ?? state}
    </span>
  );
}

/** An attempt's error class in words: the server's list of them, so the list, the detail and the Overview agree. */
export const ERROR_WORDS = ATTEMPT_ERROR_WORDS;

/** A failed attempt in words: its HTTP status when the receiver answered one, else its error class. */
export function failureWords(error: string | null, status: number | null): string {
  if (status !== null) return error === 'redirect' ? `redirect (HTTP ${status}, not followed)` : `HTTP ${status}`;
  return error ? (ERROR_WORDS[error] ?? error) : 'failed';
}

/** A server error as the page shows it: its message, and its code for a bug report. */
export function ErrorBanner({ error }: { error: unknown }) {
  if (!error) return null;
  const message = error instanceof Error ? error.message : String(error);
  const code = error instanceof ApiError ? error.code : null;
  return (
    <div class="banner banner-error" role="alert">
      <strong>Error: </strong>
      {message}
      {code ? <span class="muted"> ({code})</span> : null}
    </div>
  );
}

export function Notice({ children }: { children: ComponentChildren }) {
  return (
    <div class="banner banner-info" role="status">
      {children}
    </div>
  );
}

/** Loads data with `load`; `reload` re-runs it (quietly: the old data stays on screen meanwhile). */
export function useLoad<T>(load: () => Promise<T>, deps: unknown[]) {
  const [data, setData] = useState<T | undefined>(undefined);
  const [error, setError] = useState<unknown>(null);
  const [loading, setLoading] = useState(true);
  const generation = useRef(0);
  const run = useCallback(async () => {
    const mine = ++generation.current;
    setLoading(true);
    try {
      const value = await load();
      if (mine === generation.current) {
        setData(value);
        setError(null);
      }
      return value;
    } catch (err) {
      if (mine === generation.current) setError(err);
      return undefined;
    } finally {
      if (mine === generation.current) setLoading(false);
    }
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, deps);
  useEffect(() => {
    void run();
  }, [run]);
  return { data, error, loading, reload: run };
}

/** "3 failed callbacks", "1 failed callback". */
export const plural = (n: number, one: string, many = `${one}s`) => `${n.toLocaleString('en')} ${n === 1 ? one : many}`;

/** What a bulk recovery counted before it is confirmed, and what it started. */
interface RecoveryCount {
  count: number;
  rate_per_second: number;
}

/**
 * A bulk retry of failed callbacks: counts first, then asks in place with the count in the question
 * (the count is what the person agrees to), then says what it started. The words name the set.
 */
export function CountThenRetry<P extends RecoveryCount>({
  label,
  buttonLabel = label,
  count,
  retry,
  onDone,
  words,
  small = false,
}: {
  label: string;
  /** The button's accessible name, when the label alone is ambiguous (one button per table row). */
  buttonLabel?: string;
  count: () => Promise<P>;
  retry: () => Promise<RecoveryCount>;
  /** Called once the retry has begun, with how many callbacks it retries and how many a second. */
  onDone: (count: number, ratePerSecond: number) => void;
  words: {
    /** The group's name and text when nothing has ended failed. */
    noneLabel: string;
    none: (preview: P) => string;
    /** The question, with the count and pace in it; `questionLabel` names the group. */
    question: (preview: P) => string;
    questionLabel: (preview: P) => string;
    started: (started: RecoveryCount) => string;
    startedNone: string;
  };
  small?: boolean;
}) {
  const [preview, setPreview] = useState<P | null>(null);
  const [result, setResult] = useState<string | null>(null);
  const [error, setError] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);
  const size = small ? ' btn-small' : '';

  async function ask() {
    setBusy(true);
    setError(null);
    setResult(null);
    try {
      setPreview(await count());
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  }

  async function confirm() {
    setBusy(true);
    try {
      const started = await retry();
      setResult(started.count === 0 ? words.startedNone : words.started(started));
      setPreview(null);
      onDone(started.count, started.rate_per_second);
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  }

  return (
    <>
      {preview === null ? (
        <button type="button" class={`btn${size}`} onClick={() => void ask()} disabled={busy} aria-label={buttonLabel}>
          {busy ? 'Counting…' : label}
        </button>
      ) : preview.count === 0 ? (
        <span class="confirm" role="group" aria-label={words.noneLabel}>
          <span>{words.none(preview)}</span>
          <button type="button" class="btn btn-small" onClick={() => setPreview(null)} ref={(el) => el?.focus()}>
            OK
          </button>
        </span>
      ) : (
        <span class="confirm" role="group" aria-label={words.questionLabel(preview)}>
          <span class="confirm-question" data-testid="recovery-question">
            {words.question(preview)}
          </span>
          <button type="button" class={`btn btn-primary${size}`} disabled={busy} ref={(el) => el?.focus()} onClick={() => void confirm()}>
            Retry {plural(preview.count, 'callback')}
          </button>
          <button type="button" class={`btn${size}`} onClick={() => setPreview(null)}>
            Cancel
          </button>
        </span>
      )}
      {result ? (
        <p class="small" role="status">
          {result}
        </p>
      ) : null}
      <ErrorBanner error={error} />
    </>
  );
}

/** A destructive action asks once more in place (no browser dialog): the second button does it. */
export function ConfirmButton({
  label,
  confirmLabel,
  question,
  onConfirm,
  danger = true,
}: {
  label: string;
  confirmLabel: string;
  question: string;
  onConfirm: () => Promise<void> | void;
  danger?: boolean;
}) {
  const [asking, setAsking] = useState(false);
  const [busy, setBusy] = useState(false);
  if (!asking) {
    return (
      <button type="button" class={danger ? 'btn btn-danger-outline' : 'btn'} onClick={() => setAsking(true)}>
        {label}
      </button>
    );
  }
  return (
    <span class="confirm" role="group" aria-label={question}>
      <span class="confirm-question">{question}</span>
      <button
        type="button"
        class={danger ? 'btn btn-danger' : 'btn btn-primary'}
        disabled={busy}
        ref={(el) => el?.focus()}
        onClick={async () => {
          setBusy(true);
          try {
            await onConfirm();
          } finally {
            setBusy(false);
            setAsking(false);
          }
        }}
      >
        {confirmLabel}
      </button>
      <button type="button" class="btn" onClick={() => setAsking(false)}>
        Cancel
      </button>
    </span>
  );
}

/** Copies text to the clipboard; where the page is not a secure context, selects it for Ctrl+C. */
export function CopyButton({ text, label = 'Copy' }: { text: string; label?: string }) {
  const [done, setDone] = useState<string | null>(null);
  return (
    <>
      <button
        type="button"
        class="btn btn-small"
        onClick={async () => {
          try {
            await navigator.clipboard.writeText(text);
            setDone('Copied');
          } catch {
            setDone('Select the text and press Ctrl+C');
          }
        }}
      >
        {label}
      </button>
      <span class="muted" role="status">
        {done ? ` ${done}` : ''}
      </span>
    </>
  );
}

/** An https/http link for a URL the server produced; anything else (javascript:, data:) stays text. */
export function SafeLink({ href, children }: { href: string; children?: ComponentChildren }) {
  let ok = false;
  try {
    ok = ['https:', 'http:'].includes(new URL(href, location.href).protocol);
  } catch {
    ok = false;
  }
  if (!ok) return <span class="mono">{href}</span>;
  return (
    <a href={href} rel="noopener noreferrer" target="_blank" class="mono">
      {children ?? href}
    </a>
  );
}

/** The one row of an empty table, spanning all its columns. */
export function EmptyRow({ columns, children }: { columns: number; children: ComponentChildren }) {
  return (
    <tr>
      <td colSpan={columns} class="empty">
        {children}
      </td>
    </tr>
  );
}
