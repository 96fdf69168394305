import { lookup } from 'node:dns/promises';

/** One address a host name resolved to. */
export interface ResolvedAddress {
  /** An IP literal, without brackets. */
  address: string;
  family: 4 | 6;
}

/** Resolves every A and AAAA record of a host. */
export type HostResolver = (hostname: string) => Promise<ResolvedAddress[]>;

/**
 * Resolves through the operating system (`getaddrinfo`), so `/etc/hosts` and the system search
 * configuration apply exactly as they would for an ordinary connection: a guard that consulted a
 * different source than the socket would check one address and let the socket use another.
 *
 * Lookup errors (`ENOTFOUND`, `EAI_AGAIN`, ...) are thrown unchanged; the guard turns them into an
 * `unresolvable` rejection and keeps the original as its `cause`.
 */
export const systemResolver: HostResolver = async (hostname) => {
  // `all` because every address must be checked, not just the first; `verbatim` keeps the
  // resolver's order so the dispatcher dials in the order the system would have.
  const records = await lookup(hostname, { all: true, verbatim: true });
  return records.map(({ address, family }) => ({ address, family: family === 6 ? 6 : 4 }));
};
