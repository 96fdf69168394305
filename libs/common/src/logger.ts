import { performance } from 'node:perf_hooks';
import { context, isSpanContextValid, trace } from '@opentelemetry/api';
import winston from 'winston';

export type Logger = winston.Logger;

/** Header and field names that must never reach a log line. */
const SECRET_FIELDS = /authorization|api_?key|secret|password|signature|token/i;

const redact = winston.format((info) => {
  for (const key of Object.keys(info)) {
    if (SECRET_FIELDS.test(key)) info[key] = '[redacted]';
  }
  return info;
});

/**
 * The trace a line belongs to (the job's, while a job is being worked on), so that logs and traces
 * join up. Without tracing there is no active context and nothing is added.
 */
const traceId = winston.format((info) => {
  const span = trace.getSpanContext(context.active());
  if (span && isSpanContextValid(span)) info.trace_id = span.traceId;
  return info;
});

/** Services that hold signing secrets say loudly at start-up when those are stored unsealed. */
export function warnIfSecretsUnsealed(config: { secretsEncryptionKeys: readonly Buffer[] }, logger: Logger): void {
  if (config.secretsEncryptionKeys.length > 0) return;
  logger.warn('SECRETS STORED UNSEALED: set SECRETS_ENCRYPTION_KEYS in production');
}

/** Services that check callback URLs say loudly at start-up when the development relaxations are on. */
export function warnIfCallbackChecksRelaxed(
  config: { callbackAllowHttp: boolean; callbackAllowedCidrs: string[]; callbackAllowedEndpoints: string[] },
  logger: Logger,
): void {
  if (!config.callbackAllowHttp && config.callbackAllowedCidrs.length === 0 && config.callbackAllowedEndpoints.length === 0) return;
  logger.warn('CALLBACK URL CHECKS RELAXED: for development and tests only', {
    allow_http: config.callbackAllowHttp,
    allowed_cidrs: config.callbackAllowedCidrs,
    allowed_endpoints: config.callbackAllowedEndpoints,
  });
}

/** winston's (triple-beam's) keys for the rendered line and the bare level. */
const MESSAGE = Symbol.for('message');
const LEVEL = Symbol.for('level');
/** Lines at these levels go out at once (with everything before them), e.g. just before a crash point kills the process. */
const URGENT_LEVELS = new Set(['error', 'warn']);
/** Writes of buffered lines are at least this far apart (at most 50 a second). */
const MIN_WRITE_GAP_MS = 20;
/** Buffered lines are written at once past this many characters. */
const MAX_PENDING_CHARS = 64 * 1024;

/**
 * The process's stdout, written at most every {@link MIN_WRITE_GAP_MS} rather than once per line.
 * Each write to the pipe is a system call that wakes the reader: at 1,000 callbacks/s the
 * dispatcher's two info lines per callback took more of its time than rendering and signing. A
 * line after a quiet spell goes out at the end of the current turn of the event loop; under
 * load, lines wait up to the gap and share a write. Order is kept; warnings and errors are
 * written at once with everything before them (a crash point logs one and then kills the
 * process), and whatever is pending is written on exit. A SIGKILL loses at most the info lines of
 * the last gap.
 */
class BatchedStdout {
  private pending = '';
  private scheduled = false;
  private hooked = false;
  private lastWriteMs = -Infinity;

  write(line: string, urgent: boolean): void {
    this.pending += line;
    if (urgent || this.pending.length >= MAX_PENDING_CHARS) {
      this.flush();
      return;
    }
    if (!this.hooked) {
      this.hooked = true;
      process.once('exit', this.flush);
    }
    if (this.scheduled) return;
    this.scheduled = true;
    const waitMs = this.lastWriteMs + MIN_WRITE_GAP_MS - performance.now();
    // unref'd: pending lines must not keep a process alive that is otherwise done (the exit hook writes them).
    if (waitMs <= 0) setImmediate(this.flush).unref();
    else setTimeout(this.flush, waitMs).unref();
  }

  readonly flush = (): void => {
    this.scheduled = false;
    if (this.pending === '') return;
    const text = this.pending;
    this.pending = '';
    this.lastWriteMs = performance.now();
    process.stdout.write(text);
  };
}

const stdout = new BatchedStdout();

/** winston's transport base class: winston exports it as `Transport`, which its typings leave out. */
const TransportStream = (winston as unknown as { Transport: typeof import('winston-transport') }).Transport;

/** winston's Console transport, minus one write(2) per line: see {@link BatchedStdout}. */
class StdoutTransport extends TransportStream {
  override log(info: Record<string | symbol, unknown>, next: () => void): void {
    stdout.write(`${String(info[MESSAGE])}\n`, URGENT_LEVELS.has(String(info[LEVEL])));
    next();
  }
}

/**
 * How a line is written (`LOG_FORMAT`): `json`, one object per line, for production and for any
 * program that reads the output; `pretty`, one short line per event, for a person at a terminal.
 */
export const LOG_FORMATS = ['json', 'pretty'] as const;
export type LogFormat = (typeof LOG_FORMATS)[number];

/**
 * The fields a pretty line shows after its message, in this order: what tells one request, job or
 * callback attempt from the next. The rest stay in the JSON format.
 */
const PRETTY_FIELDS = ['method', 'path', 'job_id', 'message_id', 'status', 'duration_ms', 'error'] as const;

/** ANSI colours of the levels, for a terminal. */
const LEVEL_COLOURS: Record<string, number> = { error: 31, warn: 33, info: 32, debug: 36 };
const LEVEL_WIDTH = 5;

const twoDigits = (n: number) => String(n).padStart(2, '0');

/** A value on one line: as it is when it is one plain word, else quoted with its line breaks escaped. */
function shownValue(value: unknown): string {
  const text = typeof value === 'string' ? value : JSON.stringify(value);
  return /^[^\s"]+$/.test(text) ? text : JSON.stringify(text);
}

/** `12:04:31 info  api-gateway request method=POST path=/v1/videos status=200 duration=12ms` */
function prettyLine(info: Record<string | symbol, unknown>, colour: boolean): string {
  const now = new Date();
  const time = `${twoDigits(now.getHours())}:${twoDigits(now.getMinutes())}:${twoDigits(now.getSeconds())}`;
  const level = String(info[LEVEL] ?? info.level);
  const padded = level.padEnd(LEVEL_WIDTH);
  const shownLevel = colour && LEVEL_COLOURS[level] ? `\x1b[${LEVEL_COLOURS[level]}m${padded}\x1b[39m` : padded;
  // A message with a line break (an error's text) stays on its line.
  const parts = [time, shownLevel, String(info.service ?? '-'), String(info.message).replace(/\r?\n/g, '\\n')];
  for (const key of PRETTY_FIELDS) {
    const value = info[key];
    if (value === undefined || value === null || value === '') continue;
    if (key === 'duration_ms' && typeof value === 'number') parts.push(`duration=${Math.round(value)}ms`);
    // An error may carry its stack: its first line names it, the JSON format has the rest.
    else if (key === 'error') parts.push(`error=${shownValue(String(value).split('\n')[0])}`);
    else parts.push(`${key}=${shownValue(value)}`);
  }
  return parts.join(' ');
}

/** One short human line per event; colours only when stdout is a terminal. Runs after {@link redact}. */
const pretty = winston.format((info) => {
  info[MESSAGE] = prettyLine(info, process.stdout.isTTY === true);
  return info;
});

/**
 * Lines on stdout in `format` (JSON unless told otherwise); callers add `request_id` / `job_id`
 * through child loggers. Secret fields are redacted in either format.
 */
export function createLogger(service: string, level = 'info', format: LogFormat = 'json'): Logger {
  return winston.createLogger({
    level,
    defaultMeta: { service },
    format: winston.format.combine(redact(), traceId(), winston.format.timestamp(), format === 'pretty' ? pretty() : winston.format.json()),
    transports: [new StdoutTransport()],
  });
}
