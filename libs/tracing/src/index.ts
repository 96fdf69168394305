/**
 * One trace per job, across the three services: the HTTP request that created it, its waits in the
 * queues, the generation, the finish and every callback attempt. The W3C `traceparent` of the
 * creating request is kept with the job (and its callback), so every later step, in any process and
 * after any retry, continues that trace. An API call starts that trace itself: the caller's own
 * trace context is only linked to (see {@link startSpanForRequest}).
 *
 * Exported over OTLP/HTTP to `OTEL_EXPORTER_OTLP_ENDPOINT` (the SDK reads the other standard
 * `OTEL_*` variables itself). Without an endpoint nothing is installed: the API's calls are no-ops,
 * no `traceparent` is stored, and the hot path pays nothing but those calls.
 */
import {
  context,
  INVALID_SPAN_CONTEXT,
  propagation,
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  trace,
  type Attributes,
  type Context,
  type Link,
  type Span,
} from '@opentelemetry/api';

export { ROOT_CONTEXT, SpanKind, SpanStatusCode, type Attributes, type Context, type Link, type Span };

export interface Tracing {
  readonly enabled: boolean;
  /** Sends what is buffered and stops; call once, at shutdown. */
  shutdown(): Promise<void>;
}

let enabled = false;

/**
 * Installs the SDK for this process when an OTLP endpoint is configured; otherwise leaves the
 * no-op API in place, and the SDK is not even loaded (loading it takes a quarter of a second and
 * tens of MB). `service` is `service.name` unless `OTEL_SERVICE_NAME` says
 * otherwise.
 */
export async function startTracing(service: string, settings: { endpoint: string | undefined; scheduleDelayMs: number }): Promise<Tracing> {
  if (!settings.endpoint) return { enabled: false, shutdown: async () => undefined };
  const { installSdk } = await import('./sdk.js');
  const provider = installSdk(process.env.OTEL_SERVICE_NAME || service, settings.scheduleDelayMs);
  enabled = true;
  return {
    enabled: true,
    shutdown: async () => {
      await provider.shutdown();
      enabled = false;
    },
  };
}

/** The context active here (inside {@link inSpan}, its span's). */
export const activeContext = (): Context => context.active();

/** Whether spans are being recorded in this process. */
export const tracingEnabled = (): boolean => enabled;

const tracer = () => trace.getTracer('media-callbacks');

/** The `traceparent` of the active span, to keep with a job; undefined when tracing is off. */
export function activeTraceparent(): string | undefined {
  if (!enabled) return undefined;
  const carrier: Record<string, string> = {};
  propagation.inject(context.active(), carrier);
  return carrier.traceparent;
}

/** The context a job's later steps continue: the span its `traceparent` names, or none. */
export function jobContext(traceparent: string | undefined): Context {
  return enabled && traceparent ? propagation.extract(ROOT_CONTEXT, { traceparent }) : ROOT_CONTEXT;
}

/** The context an incoming HTTP request carries (its `traceparent` and `tracestate` headers), or none. */
export function requestContext(headers: Record<string, string | string[] | undefined>): Context {
  return enabled ? propagation.extract(ROOT_CONTEXT, headers) : ROOT_CONTEXT;
}

/** Runs `work` with `parent` active, so log lines and spans inside it belong to that trace. */
export function withContext<T>(parent: Context, work: () => T): T {
  return enabled ? context.with(parent, work) : work();
}

/**
 * Runs `work` in a new span under `parent` (and with it active); an error thrown marks the span
 * failed with the error's class and is thrown on.
 */
export async function inSpan<T>(
  name: string,
  options: { kind?: SpanKind; attributes?: Attributes; links?: Link[] },
  parent: Context,
  work: (span: Span) => Promise<T>,
): Promise<T> {
  if (!enabled) return work(trace.wrapSpanContext(INVALID_SPAN_CONTEXT));
  const span = tracer().startSpan(name, options, parent);
  try {
    return await context.with(trace.setSpan(parent, span), () => work(span));
  } catch (err) {
    span.setStatus({ code: SpanStatusCode.ERROR, message: err instanceof Error ? err.message : String(err) });
    span.setAttribute('error.type', err instanceof Error ? err.constructor.name : 'Error');
    throw err;
  } finally {
    span.end();
  }
}

/**
 * A SERVER span for an incoming request, and the context that makes it the parent of what the request
 * does. Unless `trustIncoming`, the span starts a new root trace and only links to the caller's span
 * context (`incoming`, see {@link requestContext}), without its `tracestate`: a caller of the public
 * API must not choose the trace id its jobs are logged and shown under, switch off the sampling of
 * their whole life with the sampled flag, or put its `tracestate` into every span we export.
 * `trustIncoming` (a proxy in front that sets these headers itself) continues `incoming` instead.
 */
export function startSpanForRequest(
  name: string,
  incoming: Context,
  attributes: Attributes,
  options: { trustIncoming: boolean },
): { span: Span; context: Context } {
  const parent = options.trustIncoming ? incoming : ROOT_CONTEXT;
  const links = options.trustIncoming ? [] : linksToSpanOf(incoming);
  const span = tracer().startSpan(name, { kind: SpanKind.SERVER, attributes, links }, parent);
  return { span, context: trace.setSpan(parent, span) };
}

/** A span for something already measured (a wait in a queue, an HTTP exchange): its times are given. */
export function recordSpan(
  name: string,
  options: { kind?: SpanKind; attributes?: Attributes; links?: Link[]; startMs: number; endMs: number; failed?: string },
  parent: Context,
): void {
  if (!enabled) return;
  const span = tracer().startSpan(name, { kind: options.kind, attributes: options.attributes, links: options.links, startTime: options.startMs }, parent);
  if (options.failed) span.setStatus({ code: SpanStatusCode.ERROR, message: options.failed });
  span.end(Math.max(options.startMs, options.endMs));
}

/** A link to the span a `traceparent` names (a manual retry points at the job's trace this way). */
export function linkTo(traceparent: string | undefined): Link[] {
  return linksToSpanOf(jobContext(traceparent));
}

/** A link to the span of `parent`, when it names a valid one; its `tracestate` is left out, being another's. */
function linksToSpanOf(parent: Context): Link[] {
  const spanContext = trace.getSpanContext(parent);
  if (!spanContext || !trace.isSpanContextValid(spanContext)) return [];
  const { traceId, spanId, traceFlags, isRemote } = spanContext;
  return [{ context: { traceId, spanId, traceFlags, isRemote } }];
}
