import type { IncomingMessage, RequestListener, ServerResponse } from 'node:http';
import type { HttpMetrics } from '@media/common';
import { matchedRoute } from './route-pattern';

/** Requests that matched no route share one label, so scanners cannot grow the series without bound. */
export const UNMATCHED_ROUTE = 'unmatched';

/**
 * Measures every request the gateway answers, labelled by the Express route pattern
 * (`/v1/videos/:id`, see {@link matchedRoute}), not the raw path.
 */
export function measureRequests(metrics: HttpMetrics, listener: RequestListener): RequestListener {
  return (req: IncomingMessage, res: ServerResponse) => {
    const startedAt = process.hrtime.bigint();
    const route = matchedRoute(req);
    res.once('finish', () => {
      const seconds = Number(process.hrtime.bigint() - startedAt) / 1e9;
      metrics.request(route() ?? UNMATCHED_ROUTE, req.method ?? 'UNKNOWN', res.statusCode, seconds);
    });
    listener(req, res);
  };
}
