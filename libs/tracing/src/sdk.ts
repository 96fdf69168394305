import { context, propagation, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { BatchSpanProcessor, TracerProvider } from '@opentelemetry/sdk-trace';

/**
 * The OpenTelemetry SDK behind the API's globals: spans in the async context, W3C `traceparent`
 * propagation, and a batch exporter over OTLP/HTTP. Loaded only by a process that exports traces.
 */
export function installSdk(serviceName: string, scheduleDelayMs: number): { shutdown(): Promise<void> } {
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  propagation.setGlobalPropagator(new W3CTraceContextPropagator());
  const provider = new TracerProvider({
    resource: resourceFromAttributes({ 'service.name': serviceName }),
    // The exporter reads OTEL_EXPORTER_OTLP_ENDPOINT (and the per-signal and header variables).
    spanProcessors: [new BatchSpanProcessor({ exporter: new OTLPTraceExporter(), scheduledDelayMillis: scheduleDelayMs })],
  });
  trace.setGlobalTracerProvider(provider);
  return provider;
}
