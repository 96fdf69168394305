import ipaddr from 'ipaddr.js';

export type IpAddress = ipaddr.IPv4 | ipaddr.IPv6;

/** A parsed `allowedCidrs` entry. */
export type Cidr = [IpAddress, number];

/** A parsed `allowedEndpoints` entry: one address and one port. */
export interface Endpoint {
  ip: IpAddress;
  port: number;
}

// IANA allocates global unicast only from 2000::/3; anything outside it that ipaddr.js still calls
// 'unicast' (IPv4-compatible ::a.b.c.d, the rest of ::/8, unassigned space) has no legitimate
// webhook receiver, so it is refused rather than enumerated.
const IPV6_GLOBAL_UNICAST: Cidr = ipaddr.parseCIDR('2000::/3');

// RFC 6052 forbids the well-known NAT64 prefix from carrying non-global IPv4 addresses, and on a
// DNS64 network every IPv4-only receiver resolves into it. Judging it by the IPv4 it embeds keeps
// those receivers reachable while 64:ff9b::10.0.0.1 is still refused as 10.0.0.1.
// The local-use prefix 64:ff9b:1::/48 (RFC 8215) has an operator-chosen layout and stays refused,
// as do 6to4 and Teredo: both are deprecated and route through relays the guard cannot see.
const NAT64_WELL_KNOWN: Cidr = ipaddr.parseCIDR('64:ff9b::/96');

/**
 * Parses policy CIDRs once so a typo in configuration fails at start-up, not on the first callback.
 *
 * @throws Error naming the first entry that is not a CIDR
 */
export function parseAllowedCidrs(cidrs: readonly string[]): Cidr[] {
  return cidrs.map((cidr) => {
    try {
      return ipaddr.parseCIDR(cidr);
    } catch {
      throw new Error(`callback URL policy: allowedCidrs entry ${JSON.stringify(cidr)} is not a valid CIDR ` + '(expected e.g. "127.0.0.0/8" or "::1/128")');
    }
  });
}

/**
 * Parses policy endpoints (`127.0.0.1:9443`, `[::1]:9443`) once, so a typo fails at start-up.
 *
 * @throws Error naming the first entry that is not an IP literal and a port
 */
export function parseAllowedEndpoints(endpoints: readonly string[]): Endpoint[] {
  return endpoints.map((entry) => {
    const match = /^(?:\[([0-9A-Fa-f:.]+)\]|([0-9.]+)):(\d{1,5})$/.exec(entry);
    const address = match?.[1] ?? match?.[2];
    const port = Number(match?.[3]);
    // Only the canonical dotted quad for IPv4: an entry means one address, spelt one way.
    const ip =
      address !== undefined && (match?.[1] !== undefined ? ipaddr.IPv6.isValid(address) : ipaddr.IPv4.isValidFourPartDecimal(address))
        ? ipaddr.parse(address)
        : undefined;
    if (ip === undefined || !(port >= 1 && port <= 65_535)) {
      throw new Error(
        `callback URL policy: allowedEndpoints entry ${JSON.stringify(entry)} is not an IP address and a port ` +
          '(expected e.g. "127.0.0.1:9443" or "[::1]:9443")',
      );
    }
    return { ip, port };
  });
}

/**
 * True when `ip` and `port` are exactly one of the endpoints. Unlike the ranges, an IPv4-mapped
 * address does not match its IPv4 here: an endpoint names one address and port, not a host.
 */
export function isAllowedEndpoint(ip: IpAddress, port: number, allowed: readonly Endpoint[]): boolean {
  return allowed.some((e) => e.port === port && e.ip.kind() === ip.kind() && e.ip.toNormalizedString() === ip.toNormalizedString());
}

/** Parses an IP literal; `undefined` for anything else, so callers fail closed. */
export function parseIp(address: string): IpAddress | undefined {
  return ipaddr.isValid(address) ? ipaddr.parse(address) : undefined;
}

/**
 * True when the address is public unicast (not loopback, private, link-local, CGNAT, multicast,
 * broadcast, reserved, unspecified, documentation/benchmarking, or an IPv6 form embedding such an
 * IPv4: IPv4-mapped ::ffff:0:0/96, IPv4-compatible, NAT64 64:ff9b::/96 and 64:ff9b:1::/48, 6to4
 * 2002::/16, Teredo 2001::/32, unique-local fc00::/7, site-local fec0::/10) or lies inside one of
 * allowedCidrs.
 *
 * An IPv4-mapped address is the same host as the IPv4 it maps, so it is judged (and matched against
 * allowedCidrs) as that IPv4. The well-known NAT64 prefix is judged by its embedded IPv4; 6to4,
 * Teredo, IPv4-compatible and local-use NAT64 addresses are refused whatever they embed. Anything
 * that is not an IP literal is refused.
 *
 * @param address - an IP literal without brackets, e.g. `"10.0.0.1"` or `"::1"`
 * @param allowedCidrs - exemptions such as `["127.0.0.0/8", "::1/128"]`
 * @throws Error when an allowedCidrs entry is not a valid CIDR
 */
export function isAllowedAddress(address: string, allowedCidrs: string[]): boolean {
  const ip = parseIp(address);
  return ip !== undefined && isAllowedIp(ip, parseAllowedCidrs(allowedCidrs));
}

/** {@link isAllowedAddress} for an already parsed address and policy. */
export function isAllowedIp(ip: IpAddress, allowed: readonly Cidr[]): boolean {
  return isPublicUnicast(ip) || inAllowlist(ip, allowed);
}

function isPublicUnicast(ip: IpAddress): boolean {
  if (ip.kind() === 'ipv4') return ip.range() === 'unicast';
  const v6 = ip as ipaddr.IPv6;
  if (v6.isIPv4MappedAddress()) return isPublicUnicast(v6.toIPv4Address());
  if (v6.match(NAT64_WELL_KNOWN)) return isPublicUnicast(ipaddr.fromByteArray(v6.toByteArray().slice(12)));
  // range() names every special block inside 2000::/3 (documentation, 6to4, Teredo, benchmarking...).
  return v6.range() === 'unicast' && v6.match(IPV6_GLOBAL_UNICAST);
}

function inAllowlist(ip: IpAddress, allowed: readonly Cidr[]): boolean {
  // An operator who allows 127.0.0.0/8 means the host, however the resolver spells it.
  const forms: IpAddress[] = [ip];
  if (ip.kind() === 'ipv6' && (ip as ipaddr.IPv6).isIPv4MappedAddress()) forms.push((ip as ipaddr.IPv6).toIPv4Address());
  // ipaddr.js throws when matching across families, hence the kind() filter.
  return forms.some((form) => allowed.some(([range, bits]) => range.kind() === form.kind() && form.match(range, bits)));
}
