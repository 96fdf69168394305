import { isAllowedAddress } from './index';

describe('isAllowedAddress', () => {
  it.each([
    '93.184.215.14',
    '1.1.1.1',
    // Just outside the private, CGNAT and benchmarking blocks.
    '9.255.255.255',
    '11.0.0.1',
    '100.63.255.255',
    '100.128.0.1',
    '172.15.255.255',
    '172.32.0.1',
    '192.167.255.255',
    '192.169.0.1',
    '198.17.255.255',
    '198.20.0.1',
    '223.255.255.254',
    '2606:4700::1111',
    '2a00:1450:4001:830::200e',
  ])('accepts public unicast %s', (address) => {
    expect(isAllowedAddress(address, [])).toBe(true);
  });

  it.each([
    ['0.0.0.0', 'unspecified'],
    ['0.1.2.3', 'this network'],
    ['10.0.0.1', 'private 10/8'],
    ['10.255.255.255', 'private 10/8'],
    ['100.64.0.1', 'CGNAT'],
    ['100.127.255.254', 'CGNAT'],
    ['127.0.0.1', 'loopback'],
    ['127.255.255.254', 'loopback'],
    ['169.254.169.254', 'link-local (cloud metadata)'],
    ['172.16.0.1', 'private 172.16/12'],
    ['172.31.255.255', 'private 172.16/12'],
    ['192.0.0.8', 'IETF protocol assignments'],
    ['192.0.2.1', 'documentation TEST-NET-1'],
    ['192.88.99.1', '6to4 relay anycast'],
    ['192.168.1.1', 'private 192.168/16'],
    ['198.18.0.1', 'benchmarking'],
    ['198.19.255.255', 'benchmarking'],
    ['198.51.100.7', 'documentation TEST-NET-2'],
    ['203.0.113.9', 'documentation TEST-NET-3'],
    ['224.0.0.1', 'multicast'],
    ['239.255.255.250', 'multicast'],
    ['240.0.0.1', 'reserved 240/4'],
    ['255.255.255.255', 'broadcast'],
  ])('refuses IPv4 %s (%s)', (address) => {
    expect(isAllowedAddress(address, [])).toBe(false);
  });

  it.each([
    ['::', 'unspecified'],
    ['::1', 'loopback'],
    ['fe80::1', 'link-local'],
    ['fe80::1%eth0', 'link-local with zone'],
    ['fc00::1', 'unique-local'],
    ['fd12:3456:789a::1', 'unique-local'],
    ['fec0::1', 'site-local'],
    ['ff02::1', 'multicast'],
    ['ff0e::1', 'multicast'],
    ['::ffff:127.0.0.1', 'IPv4-mapped loopback'],
    ['::ffff:7f00:1', 'IPv4-mapped loopback, hex'],
    ['::ffff:10.0.0.1', 'IPv4-mapped private'],
    ['::ffff:169.254.169.254', 'IPv4-mapped link-local'],
    ['::127.0.0.1', 'IPv4-compatible loopback'],
    ['::a00:1', 'IPv4-compatible private'],
    ['::5db8:d70e', 'IPv4-compatible (deprecated) even when public'],
    ['64:ff9b::7f00:1', 'NAT64 of 127.0.0.1'],
    ['64:ff9b::10.0.0.1', 'NAT64 of 10.0.0.1'],
    ['64:ff9b::a9fe:a9fe', 'NAT64 of 169.254.169.254'],
    ['64:ff9b:1::a00:1', 'local-use NAT64'],
    ['2002:a00:1::1', '6to4 of 10.0.0.1'],
    ['2002:7f00:1::1', '6to4 of 127.0.0.1'],
    ['2002:5db8:d70e::1', '6to4 (deprecated) even when public'],
    ['2001:0:4136:e378:8000:63bf:3fff:fdd2', 'Teredo'],
    ['2001:db8::1', 'documentation'],
    ['2001:2::1', 'benchmarking'],
    ['100::1', 'discard-only'],
    ['5f00::1', 'segment routing'],
  ])('refuses IPv6 %s (%s)', (address) => {
    expect(isAllowedAddress(address, [])).toBe(false);
  });

  it('judges IPv4-mapped and well-known NAT64 addresses by the public IPv4 they embed', () => {
    expect(isAllowedAddress('::ffff:93.184.215.14', [])).toBe(true);
    expect(isAllowedAddress('64:ff9b::93.184.215.14', [])).toBe(true);
  });

  it.each(['', 'example.com', '[::1]', '1.2.3.4.5', '127.0.0.1/8'])('refuses %p, which is not an IP literal', (address) => {
    expect(isAllowedAddress(address, ['0.0.0.0/0', '::/0'])).toBe(false);
  });

  describe('allowedCidrs', () => {
    const local = ['127.0.0.0/8', '::1/128'];

    it('exempts addresses inside an allowed range', () => {
      expect(isAllowedAddress('127.0.0.1', local)).toBe(true);
      expect(isAllowedAddress('127.1.2.3', local)).toBe(true);
      expect(isAllowedAddress('::1', local)).toBe(true);
    });

    it('exempts an IPv4-mapped address when its IPv4 is allowed', () => {
      expect(isAllowedAddress('::ffff:127.0.0.1', ['127.0.0.0/8'])).toBe(true);
    });

    it('exempts nothing outside the allowed ranges', () => {
      expect(isAllowedAddress('10.0.0.1', local)).toBe(false);
      expect(isAllowedAddress('::2', local)).toBe(false);
      expect(isAllowedAddress('127.0.0.1', ['::1/128'])).toBe(false);
    });

    it.each(['10.0.0.0/33', 'not-a-cidr', '127.0.0.1', ''])('throws on invalid CIDR %p', (cidr) => {
      expect(() => isAllowedAddress('93.184.215.14', [cidr])).toThrow(`allowedCidrs entry ${JSON.stringify(cidr)} is not a valid CIDR`);
    });
  });
});
