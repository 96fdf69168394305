import type { HostResolver } from '../resolver';

/** A HostResolver backed by a fixed table that records every name it was asked for. */
export type FakeResolver = HostResolver & { calls: string[] };

/**
 * Names missing from `table` fail like getaddrinfo does, so tests never depend on real DNS.
 */
export function fakeResolver(table: Record<string, string[]>): FakeResolver {
  const calls: string[] = [];
  const resolve = async (hostname: string) => {
    calls.push(hostname);
    const addresses = table[hostname];
    if (addresses === undefined) {
      throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' });
    }
    return addresses.map((address) => ({ address, family: address.includes(':') ? (6 as const) : (4 as const) }));
  };
  return Object.assign(resolve, { calls });
}
