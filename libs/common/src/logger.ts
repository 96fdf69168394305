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

/** JSON lines on stdout; callers add `request_id` / `job_id` through child loggers. */
export function createLogger(service: string, level = 'info'): Logger {
  return winston.createLogger({
    level,
    defaultMeta: { service },
    format: winston.format.combine(redact(), traceId(), winston.format.timestamp(), winston.format.json()),
    transports: [new StdoutTransport()],
  });
}
