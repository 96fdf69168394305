import { isIP } from 'node:net';
import { isAllowedEndpoint, isAllowedIp, parseAllowedCidrs, parseAllowedEndpoints, parseIp, type Cidr, type Endpoint, type IpAddress } from './address-policy';
import { CallbackUrlRejectedError } from './errors';
import { systemResolver, type HostResolver, type ResolvedAddress } from './resolver';

/** What a deployment permits beyond the public-https default. */
export interface CallbackUrlPolicy {
  /** Accept `http:` as well as `https:`. For local development only; the spec requires https. */
  allowHttp: boolean;
  /** Non-public ranges to accept anyway, e.g. `["127.0.0.0/8", "::1/128"]`, whatever the port. */
  allowedCidrs: string[];
  /**
   * Non-public address and port pairs to accept anyway, e.g. `["127.0.0.1:9443"]` for one local
   * receiver: the URL's port (443 or 80 when it names none) must be that port, and the address (the
   * literal, or every address the name resolves to) exactly that address. Nothing else on the host
   * is exempted, not even the same address on another port or the IPv4-mapped spelling of it.
   */
  allowedEndpoints?: string[];
}

/** A callback URL that passed every rule, with the exact addresses that were checked. */
export interface CheckedTarget {
  /** The parsed, WHATWG-normalised URL. */
  url: URL;
  /** The host to send (SNI, `Host`), without IPv6 brackets. */
  hostname: string;
  /** Every address the host resolved to, all checked; never empty. Dial only these. */
  addresses: ResolvedAddress[];
}

// Long enough for any real endpoint; the cap keeps stored jobs and log lines bounded.
const MAX_URL_LENGTH = 2048;

// Addresses whose verdicts are kept: a few callback hosts' addresses each, far below this; past it the
// kept ones are dropped and judged again.
const MAX_VERDICTS = 4096;

// RFC 6761 reserves these names for loopback. They are answered here, not by the resolver, because
// /etc/hosts or a search domain could map them elsewhere and the answer must not depend on that.
const LOOPBACK_NAME_ADDRESSES: readonly ResolvedAddress[] = [
  { address: '127.0.0.1', family: 4 },
  { address: '::1', family: 6 },
];

/**
 * Decides whether a webhook `callback_url` may be called, so the service cannot be used to reach
 * its own network (SSRF).
 *
 * Call {@link CallbackUrlGuard.check} when accepting a job (reject with 400) and again before every
 * delivery attempt, then connect with {@link pinnedLookup} so the socket goes to an address that
 * was checked: a second DNS query could return a different answer (DNS rebinding).
 *
 * @example
 * ```ts
 * const guard = new CallbackUrlGuard({ allowHttp: false, allowedCidrs: [] });
 * const target = await guard.check(job.callbackUrl);
 * await got.post(target.url, { dnsLookup: pinnedLookup(target), followRedirect: false });
 * ```
 */
export class CallbackUrlGuard {
  readonly #allowHttp: boolean;
  readonly #allowed: readonly Cidr[];
  readonly #endpoints: readonly Endpoint[];
  readonly #resolve: HostResolver;
  /** Verdicts on addresses already judged (see #verdictOf), by port and address as given. */
  readonly #verdicts = new Map<string, Readonly<ResolvedAddress> | null>();

  /**
   * @param policy - exemptions from the public-https default
   * @param resolver - how names are resolved; defaults to {@link systemResolver}
   * @throws Error when an allowedCidrs entry is not a valid CIDR, or an allowedEndpoints entry not an IP and port
   */
  constructor(policy: CallbackUrlPolicy, resolver: HostResolver = systemResolver) {
    this.#allowHttp = policy.allowHttp;
    this.#allowed = parseAllowedCidrs(policy.allowedCidrs);
    this.#endpoints = parseAllowedEndpoints(policy.allowedEndpoints ?? []);
    this.#resolve = resolver;
  }

  /**
   * Throws CallbackUrlRejectedError, or returns the target with every resolved address checked.
   *
   * IP literals, in any spelling WHATWG `URL` accepts (`2130706433`, `0x7f.1`, `0177.0.0.1`), are
   * checked as the address they normalise to, without resolving. A name is refused if resolution
   * fails, yields nothing, or yields even one address that is not allowed.
   *
   * @param rawUrl - the `callback_url` as the client sent it
   * @throws CallbackUrlRejectedError with the reason of the first rule that failed
   */
  async check(rawUrl: string): Promise<CheckedTarget> {
    const url = this.#parse(rawUrl);
    // WHATWG keeps the brackets in `hostname`; sockets, SNI and the allowlist want the bare address.
    const hostname = url.hostname.replace(/^\[(.*)\]$/, '$1');
    // The port is what an endpoint exemption is about; WHATWG leaves it empty for the scheme's default.
    const port = url.port === '' ? (url.protocol === 'https:' ? 443 : 80) : Number(url.port);
    const addresses = await this.#addressesOf(hostname, port);
    return { url, hostname, addresses };
  }

  #parse(rawUrl: string): URL {
    if (typeof rawUrl !== 'string' || rawUrl.length > MAX_URL_LENGTH) {
      throw new CallbackUrlRejectedError('malformed', `callback_url must be a URL of at most ${MAX_URL_LENGTH} characters`);
    }
    let url: URL;
    try {
      url = new URL(rawUrl);
    } catch {
      throw new CallbackUrlRejectedError('malformed', 'callback_url is not a valid absolute URL');
    }
    // Normalisation can percent-encode and so lengthen the URL; the cap applies to what is stored.
    if (url.href.length > MAX_URL_LENGTH) {
      throw new CallbackUrlRejectedError('malformed', `callback_url must be a URL of at most ${MAX_URL_LENGTH} characters`);
    }
    if (!(url.protocol === 'https:' || (this.#allowHttp && url.protocol === 'http:'))) {
      const allowed = this.#allowHttp ? 'https or http' : 'https';
      throw new CallbackUrlRejectedError('scheme', `callback_url must use ${allowed} (got ${url.protocol.slice(0, 32)})`);
    }
    // Userinfo would be sent as Basic auth to whoever answers and ends up in logs; secrets belong in
    // the signing key, not the URL.
    if (url.username !== '' || url.password !== '') {
      throw new CallbackUrlRejectedError('credentials', 'callback_url must not contain a username or password');
    }
    // WHATWG accepts port 0 (and spells 00 as 0), yet it is reserved: no receiver listens there, and
    // what a connection to it does depends on the operating system and proxy on the way.
    if (url.port === '0') {
      throw new CallbackUrlRejectedError('port', 'callback_url port must be between 1 and 65535 (got 0)');
    }
    return url;
  }

  async #addressesOf(hostname: string, port: number): Promise<ResolvedAddress[]> {
    const literalFamily = isIP(hostname);
    if (literalFamily !== 0) return this.#checked([{ address: hostname, family: literalFamily === 6 ? 6 : 4 }], null, port);

    if (isLoopbackName(hostname)) {
      const allowed = LOOPBACK_NAME_ADDRESSES.filter(({ address }) => this.#isAllowed(parseIp(address)!, port));
      if (allowed.length === 0) {
        throw new CallbackUrlRejectedError('private_address', `callback_url host ${hostname} is a loopback name`);
      }
      return allowed.map((entry) => ({ ...entry }));
    }

    let resolved: ResolvedAddress[];
    try {
      resolved = await this.#resolve(hostname);
    } catch (cause) {
      throw new CallbackUrlRejectedError('unresolvable', `callback_url host ${hostname} could not be resolved`, { cause });
    }
    if (resolved.length === 0) {
      throw new CallbackUrlRejectedError('unresolvable', `callback_url host ${hostname} has no addresses`);
    }
    return this.#checked(resolved, hostname, port);
  }

  /**
   * One address at one port: its canonical spelling and family when allowed, null when not. A pure
   * function of the address, the port and this guard's policy (no resolving), so verdicts are kept
   * (at most {@link MAX_VERDICTS}); the names are still resolved on every check.
   */
  #verdictOf(address: string, port: number): Readonly<ResolvedAddress> | null {
    const key = `${port} ${address}`;
    let verdict = this.#verdicts.get(key);
    if (verdict !== undefined) return verdict;
    const ip = parseIp(address);
    // Canonical spelling and a family taken from the address itself, not from the resolver's
    // claim, so what is dialled is byte-for-byte what was checked.
    verdict = ip === undefined || !this.#isAllowed(ip, port) ? null : { address: ip.toString(), family: ip.kind() === 'ipv6' ? 6 : 4 };
    if (this.#verdicts.size >= MAX_VERDICTS) this.#verdicts.clear();
    this.#verdicts.set(key, verdict);
    return verdict;
  }

  #isAllowed(ip: IpAddress, port: number): boolean {
    return isAllowedIp(ip, this.#allowed) || isAllowedEndpoint(ip, port, this.#endpoints);
  }

  /**
   * Refuses if any address is not allowed; returns the addresses in canonical spelling, deduplicated.
   * For a host name (not an IP literal) the message names no address, only the error's
   * `refusedAddresses` does.
   */
  #checked(candidates: readonly ResolvedAddress[], hostname: string | null, port: number): ResolvedAddress[] {
    const accepted = new Map<string, ResolvedAddress>();
    const refused: string[] = [];
    for (const { address } of candidates) {
      const verdict = this.#verdictOf(address, port);
      if (verdict === null) refused.push(address);
      else accepted.set(verdict.address, { ...verdict });
    }
    if (refused.length > 0) {
      const message =
        hostname === null
          ? `callback_url resolves to a non-public address (${refused.join(', ')})`
          : `callback_url host ${hostname} resolves to a non-public address`;
      throw new CallbackUrlRejectedError('private_address', message, { refusedAddresses: refused });
    }
    return [...accepted.values()];
  }
}

function isLoopbackName(hostname: string): boolean {
  // URL lower-cases the host but keeps a trailing dot, and "localhost." is the same name.
  const name = hostname.endsWith('.') ? hostname.slice(0, -1) : hostname;
  return name === 'localhost' || name.endsWith('.localhost');
}
