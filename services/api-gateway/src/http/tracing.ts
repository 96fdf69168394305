import type { RequestHandler } from 'express';
import { requestContext, SpanStatusCode, startSpanForRequest, tracingEnabled, withContext } from '@media/tracing';

/**
 * A SERVER span for every API call (OpenTelemetry's HTTP semantic conventions), active while the call
 * is handled: a job created here keeps this span's context, so the job's whole life is one trace
 * under it. The span starts a trace of its own and links to the caller's `traceparent` when one is
 * sent; with `trustIncoming` (OTEL_TRUST_INCOMING_TRACE_CONTEXT) it continues the caller's trace
 * instead. The path is recorded without its query, and the route as Express matched it.
 */
export function traceRequests(options: { trustIncoming: boolean }): RequestHandler {
  return (req, res, next) => {
    if (!tracingEnabled()) return next();
    const { span, context } = startSpanForRequest(
      req.method,
      requestContext(req.headers),
      {
        'http.request.method': req.method,
        'url.path': req.originalUrl.split('?')[0],
        'url.scheme': req.protocol,
      },
      options,
    );
    res.once('finish', () => {
      const route = req.route?.path ? `${req.baseUrl}${String(req.route.path)}` : undefined;
      if (route) {
        span.setAttribute('http.route', route);
        span.updateName(`${req.method} ${route}`);
      }
      span.setAttribute('http.response.status_code', res.statusCode);
      if (res.statusCode >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
      span.end();
    });
    withContext(context, next);
  };
}
