import type { IncomingMessage, RequestListener, ServerResponse } from 'node:http';
import type { HttpMetrics } from '@media/common';

/** Requests that matched no route share one label, so scanners cannot grow the series without bound. */
export const UNMATCHED_ROUTE = 'unmatched';

/**
 * Measures every request the gateway answers, labelled by the Express route pattern
 * (`/v1/videos/:id`), not the raw path. Express sets `req.route` on the request object when a
 * route matches, while `req.baseUrl` is still the mount path of the router that owns it; by the
 * time the response ends an error may have unwound the routers and reset `baseUrl`, so the pair is
 * caught at that moment through an accessor, before Express sees the request.
 */
export function measureRequests(metrics: HttpMetrics, listener: RequestListener): RequestListener {
  return (req: IncomingMessage, res: ServerResponse) => {
    const startedAt = process.hrtime.bigint();
    let pattern = UNMATCHED_ROUTE;
    let route: unknown;
    Object.defineProperty(req, 'route', {
      configurable: true,
      enumerable: true,
      get: () => route,
      set(value: { path?: unknown } | undefined) {
        route = value;
        if (value && typeof value.path === 'string')
          // Express matches mount paths case-insensitively; the label must not take the request's spelling.
          pattern = `${((req as { baseUrl?: string }).baseUrl ?? '').toLowerCase()}${value.path}`;
      },
    });
    res.once('finish', () => {
      const seconds = Number(process.hrtime.bigint() - startedAt) / 1e9;
      metrics.request(pattern, req.method ?? 'UNKNOWN', res.statusCode, seconds);
    });
    listener(req, res);
  };
}
