import type { RequestHandler } from 'express';
import { requestContext, SpanStatusCode, startSpanForRequest, tracingEnabled, withContext } from '@media/tracing';

/**
 * A SERVER span for every API call (OpenTelemetry's HTTP semantic conventions), continuing the
 * caller's `traceparent` when it sends one, and active while the call is handled: a job created
 * here keeps this span's context, so the job's whole life is one trace under it. The path is
 * recorded without its query, and the route as Express matched it.
 */
export function traceRequests(): RequestHandler {
  return (req, res, next) => {
    if (!tracingEnabled()) return next();
    const { span, context } = startSpanForRequest(req.method, requestContext(req.headers), {
      'http.request.method': req.method,
      'url.path': req.originalUrl.split('?')[0],
      'url.scheme': req.protocol,
    });
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
