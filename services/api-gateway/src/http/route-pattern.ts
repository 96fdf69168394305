import type { IncomingMessage } from 'node:http';

const MATCHED = Symbol('matched route pattern');

type Tracked = IncomingMessage & { [MATCHED]?: () => string | undefined };

/**
 * The Express route pattern a request matched (`/v1/videos/:id`), for the access log and the request
 * metrics alike; undefined while no route (or only a regular-expression route) has matched. Express
 * sets `req.route` when a route matches, while `req.baseUrl` is still the mount path of the router
 * that owns it; by the time the response ends an error may have unwound the routers and reset
 * `baseUrl`, so the pair is caught at that moment through an accessor. Call it before Express sees
 * the request; a second call returns the first one's reader.
 */
export function matchedRoute(req: IncomingMessage): () => string | undefined {
  const tracked = req as Tracked;
  if (tracked[MATCHED]) return tracked[MATCHED];
  let pattern: string | undefined;
  let route: unknown;
  Object.defineProperty(req, 'route', {
    configurable: true,
    enumerable: true,
    get: () => route,
    set(value: { path?: unknown } | undefined) {
      route = value;
      if (value && typeof value.path === 'string')
        // Express matches mount paths case-insensitively; the pattern must not take the request's spelling.
        pattern = `${((req as { baseUrl?: string }).baseUrl ?? '').toLowerCase()}${value.path}`;
    },
  });
  const read = () => pattern;
  Object.defineProperty(req, MATCHED, { value: read });
  return read;
}

/**
 * The path the client asked for, whatever router the request is in now (`req.path` is relative to
 * the router's mount path), and without its query, which can carry tokens (a download link's
 * signature).
 */
export function requestPath(req: IncomingMessage & { originalUrl?: string }): string {
  const url = req.originalUrl ?? req.url ?? '';
  const query = url.indexOf('?');
  return query < 0 ? url : url.slice(0, query);
}
