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
  const records = await withTimeout(lookup(hostname, { all: true, verbatim: true }), RESOLVE_TIMEOUT_MS, hostname);
  return records.map(({ address, family }) => ({ address, family: family === 6 ? 6 : 4 }));
};

/**
 * A slow name server must not hold an API request, or a delivery slot, for long: past this the
 * name counts as unresolvable. getaddrinfo cannot be cancelled; its answer is simply not awaited.
 */
export const RESOLVE_TIMEOUT_MS = 5_000;

function withTimeout<T>(work: Promise<T>, ms: number, hostname: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(Object.assign(new Error(`lookup of ${hostname} timed out`), { code: 'ETIMEOUT' })), ms);
  });
  return Promise.race([work, timeout]).finally(() => clearTimeout(timer));
}
