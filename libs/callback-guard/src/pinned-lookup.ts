import type { LookupAddress } from 'node:dns';
import type { CheckedTarget } from './guard';
import type { ResolvedAddress } from './resolver';

interface LookupRequest {
  family: 0 | 4 | 6;
  all: boolean;
  order: 'verbatim' | 'ipv4first' | 'ipv6first';
}

/**
 * What a lookup calls back with: one address and its family, or (`all`) every address; typed as
 * Node's `LookupFunction` has it, though a failure, as in `dns.lookup`, calls back with the error alone.
 */
export type LookupCallback = (err: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void;

/**
 * A `dns.lookup`-compatible function (the shape got's `dnsLookup` option and http.Agent `lookup`
 * accept, including the `{all:true}` callback form) that answers only with the checked addresses of
 * `target` and never queries DNS, so the connection goes to the address that was checked.
 *
 * TLS is unaffected: the client still sends the URL's host name for SNI and certificate checks.
 * A lookup for any other name fails with `ENOTFOUND` rather than falling back to DNS, so a client
 * that wanders off (a redirect, a proxy) cannot reach an unchecked host.
 *
 * @param target - the result of {@link CallbackUrlGuard.check} for this attempt
 */
export function pinnedLookup(target: CheckedTarget): (hostname: string, options: unknown, callback: LookupCallback) => void {
  const pinnedName = comparableName(target.hostname);
  // Copied so that later changes to `target` cannot alter what this attempt dials.
  const pinned: readonly ResolvedAddress[] = target.addresses.map(({ address, family }) => ({ address, family }));

  return (hostname: string, options: unknown, callback?: LookupCallback): void => {
    // Node's own callers also use the two-argument form lookup(hostname, callback).
    const done = typeof options === 'function' ? (options as LookupCallback) : callback;
    if (typeof done !== 'function') throw new TypeError('pinnedLookup: callback must be a function');
    const request = readOptions(typeof options === 'function' ? undefined : options);

    const answer = comparableName(hostname) === pinnedName ? ordered(pinned, request) : [];
    // dns.lookup never calls back synchronously, and net relies on that to attach its listeners first.
    process.nextTick(() => {
      if (answer.length === 0) {
        (done as (err: NodeJS.ErrnoException) => void)(notFound(hostname, target.hostname));
      } else if (request.all) {
        done(
          null,
          answer.map(({ address, family }) => ({ address, family })),
        );
      } else {
        done(null, answer[0]!.address, answer[0]!.family);
      }
    });
  };
}

function readOptions(options: unknown): LookupRequest {
  if (typeof options === 'number') return { family: asFamily(options), all: false, order: 'verbatim' };
  if (options === null || typeof options !== 'object') return { family: 0, all: false, order: 'verbatim' };
  const { family, all, order, verbatim } = options as Record<string, unknown>;
  const byOrder = order === 'ipv4first' || order === 'ipv6first' ? order : verbatim === false ? 'ipv4first' : 'verbatim';
  return { family: asFamily(family), all: all === true, order: byOrder };
}

function asFamily(family: unknown): 0 | 4 | 6 {
  if (family === 4 || family === 'IPv4') return 4;
  if (family === 6 || family === 'IPv6') return 6;
  return 0;
}

function ordered(addresses: readonly ResolvedAddress[], request: LookupRequest): ResolvedAddress[] {
  const matching = addresses.filter(({ family }) => request.family === 0 || family === request.family);
  if (request.order === 'verbatim') return matching;
  const first = request.order === 'ipv4first' ? 4 : 6;
  // Array.prototype.sort is stable, so the checked order is kept within each family.
  return matching.sort((a, b) => Number(b.family === first) - Number(a.family === first));
}

function comparableName(hostname: string): string {
  const lower = hostname.toLowerCase();
  return lower.endsWith('.') ? lower.slice(0, -1) : lower;
}

function notFound(hostname: string, pinnedTo: string): NodeJS.ErrnoException {
  // Shaped like a getaddrinfo failure so HTTP clients and error classifiers treat it as a DNS error.
  const error: NodeJS.ErrnoException = new Error(`getaddrinfo ENOTFOUND ${hostname} (lookup is pinned to the checked addresses of ${pinnedTo})`);
  error.code = 'ENOTFOUND';
  error.syscall = 'getaddrinfo';
  (error as NodeJS.ErrnoException & { hostname: string }).hostname = hostname;
  return error;
}
