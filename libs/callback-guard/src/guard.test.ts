import { once } from 'node:events';
import { createServer, type AddressInfo } from 'node:net';
import { CallbackUrlGuard, CallbackUrlRejectedError, type CallbackUrlPolicy, type RejectionReason } from './index';
import { fakeResolver } from './test-support/fake-resolver';

const strict: CallbackUrlPolicy = { allowHttp: false, allowedCidrs: [] };
const local: CallbackUrlPolicy = { allowHttp: false, allowedCidrs: ['127.0.0.0/8', '::1/128'] };

const dns = () =>
  fakeResolver({
    'hooks.example.com': ['93.184.215.14', '2606:4700::1111'],
    'mixed.example.com': ['93.184.215.14', '10.0.0.7'],
    'mapped.example.com': ['::ffff:10.0.0.1'],
    'loop.example.com': ['127.0.0.1'],
    'empty.example.com': [],
    // A hostile resolver answer for a reserved name: it must never be consulted.
    localhost: ['93.184.215.14'],
  });

async function rejection(promise: Promise<unknown>): Promise<CallbackUrlRejectedError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  if (!(error instanceof CallbackUrlRejectedError)) throw new Error(`expected CallbackUrlRejectedError, got ${String(error)}`);
  return error;
}

async function expectRejected(promise: Promise<unknown>, reason: RejectionReason, message?: string | RegExp) {
  const error = await rejection(promise);
  expect(error.reason).toBe(reason);
  expect(error.name).toBe('CallbackUrlRejectedError');
  if (message !== undefined) expect(error.message).toMatch(message);
  return error;
}

describe('CallbackUrlGuard.check', () => {
  describe('accepts', () => {
    it('https to a public IPv4 literal without resolving', async () => {
      const resolver = dns();
      const target = await new CallbackUrlGuard(strict, resolver).check('https://93.184.215.14/hooks?x=1');
      expect(target.url.href).toBe('https://93.184.215.14/hooks?x=1');
      expect(target.hostname).toBe('93.184.215.14');
      expect(target.addresses).toEqual([{ address: '93.184.215.14', family: 4 }]);
      expect(resolver.calls).toEqual([]);
    });

    it('https to a public IPv6 literal, reporting the host without brackets', async () => {
      const resolver = dns();
      const target = await new CallbackUrlGuard(strict, resolver).check('https://[2606:4700:0:0:0:0:0:1111]:8443/cb');
      expect(target.hostname).toBe('2606:4700::1111');
      expect(target.addresses).toEqual([{ address: '2606:4700::1111', family: 6 }]);
      expect(resolver.calls).toEqual([]);
    });

    it('https to a name, returning every checked address', async () => {
      const resolver = dns();
      const target = await new CallbackUrlGuard(strict, resolver).check('https://Hooks.Example.com/cb');
      expect(target.hostname).toBe('hooks.example.com');
      expect(target.addresses).toEqual([
        { address: '93.184.215.14', family: 4 },
        { address: '2606:4700::1111', family: 6 },
      ]);
      expect(resolver.calls).toEqual(['hooks.example.com']);
    });

    it('a URL of exactly 2048 characters', async () => {
      const base = 'https://hooks.example.com/';
      const url = base + 'a'.repeat(2048 - base.length);
      await expect(new CallbackUrlGuard(strict, dns()).check(url)).resolves.toMatchObject({ hostname: 'hooks.example.com' });
    });
  });

  describe('scheme', () => {
    it('refuses http by default', async () => {
      await expectRejected(new CallbackUrlGuard(strict, dns()).check('http://hooks.example.com/'), 'scheme', /^callback_url must use https \(got http:\)$/);
    });

    it('accepts http when the policy allows it', async () => {
      const target = await new CallbackUrlGuard({ ...strict, allowHttp: true }, dns()).check('http://hooks.example.com/');
      expect(target.url.protocol).toBe('http:');
    });

    it.each([
      'ftp://hooks.example.com/',
      'javascript:alert(1)',
      'file:///etc/passwd',
      'ws://hooks.example.com/',
      'wss://hooks.example.com/',
      'gopher://hooks.example.com/',
      'data:text/plain,hi',
      'mailto:ops@example.com',
    ])('refuses %s even when http is allowed', async (url) => {
      const resolver = dns();
      await expectRejected(new CallbackUrlGuard({ ...strict, allowHttp: true }, resolver).check(url), 'scheme', /must use https or http/);
      expect(resolver.calls).toEqual([]);
    });
  });

  it.each(['https://user:pass@hooks.example.com/', 'https://user@hooks.example.com/', 'https://:pass@hooks.example.com/'])(
    'refuses credentials in %s',
    async (url) => {
      await expectRejected(new CallbackUrlGuard(strict, dns()).check(url), 'credentials', 'callback_url must not contain a username or password');
    },
  );

  describe('port', () => {
    it.each(['https://hooks.example.com:0/cb', 'https://hooks.example.com:00/cb', 'https://93.184.215.14:0/', 'https://[2606:4700::1111]:0/'])(
      'refuses port 0 in %s without resolving',
      async (url) => {
        const resolver = dns();
        await expectRejected(new CallbackUrlGuard(strict, resolver).check(url), 'port', 'callback_url port must be between 1 and 65535 (got 0)');
        expect(resolver.calls).toEqual([]);
      },
    );

    it('refuses port 0 whatever the exemptions: a range allowed, or an endpoint of the same address', async () => {
      const policy: CallbackUrlPolicy = { allowHttp: true, allowedCidrs: ['127.0.0.0/8', '::1/128'], allowedEndpoints: ['127.0.0.1:9443'] };
      for (const url of ['http://127.0.0.1:0/', 'https://localhost:0/', 'https://[::1]:0/']) {
        await expectRejected(new CallbackUrlGuard(policy, dns()).check(url), 'port');
      }
    });

    it('accepts ports 1 and 65535, and refuses 65536 as malformed', async () => {
      const guard = new CallbackUrlGuard(strict, dns());
      await expect(guard.check('https://hooks.example.com:1/')).resolves.toMatchObject({ url: { port: '1' } });
      await expect(guard.check('https://hooks.example.com:65535/')).resolves.toMatchObject({ url: { port: '65535' } });
      await expectRejected(guard.check('https://hooks.example.com:65536/'), 'malformed');
    });
  });

  describe('malformed', () => {
    it.each([
      '',
      'hooks.example.com/cb',
      '/relative/path',
      'https://',
      'https://exa mple.com/',
      'https://1.2.3.4.5/',
      'https://[::1/',
      'https://[fe80::1%25eth0]/',
    ])('refuses %p', async (url) => {
      await expectRejected(new CallbackUrlGuard(strict, dns()).check(url), 'malformed', 'callback_url is not a valid absolute URL');
    });

    it('refuses a URL longer than 2048 characters', async () => {
      const url = 'https://hooks.example.com/' + 'a'.repeat(2048);
      await expectRejected(new CallbackUrlGuard(strict, dns()).check(url), 'malformed', /at most 2048 characters/);
    });

    it('refuses a URL that normalisation lengthens past 2048 characters', async () => {
      const url = 'https://hooks.example.com/' + 'é'.repeat(1000);
      expect(url.length).toBeLessThanOrEqual(2048);
      await expectRejected(new CallbackUrlGuard(strict, dns()).check(url), 'malformed', /at most 2048 characters/);
    });
  });

  describe('IP literals', () => {
    it.each([
      '0.0.0.0',
      '10.1.2.3',
      '100.64.0.1',
      '127.0.0.1',
      '169.254.169.254',
      '172.16.0.1',
      '192.0.0.1',
      '192.0.2.1',
      '192.168.0.1',
      '198.18.0.1',
      '198.51.100.1',
      '203.0.113.1',
      '224.0.0.251',
      '240.0.0.1',
      '255.255.255.255',
    ])('refuses https://%s/ without resolving', async (address) => {
      const resolver = dns();
      await expectRejected(
        new CallbackUrlGuard(strict, resolver).check(`https://${address}/`),
        'private_address',
        `callback_url resolves to a non-public address (${address})`,
      );
      expect(resolver.calls).toEqual([]);
    });

    it.each([
      ['[::]', '::'],
      ['[::1]', '::1'],
      ['[fe80::1]', 'fe80::1'],
      ['[fd00::1]', 'fd00::1'],
      ['[fec0::1]', 'fec0::1'],
      ['[ff02::1]', 'ff02::1'],
      ['[::ffff:127.0.0.1]', '::ffff:7f00:1'],
      ['[::ffff:7f00:1]', '::ffff:7f00:1'],
      ['[::ffff:a9fe:a9fe]', '::ffff:a9fe:a9fe'],
      ['[::127.0.0.1]', '::7f00:1'],
      ['[64:ff9b::10.0.0.1]', '64:ff9b::a00:1'],
      ['[2002:a00:1::1]', '2002:a00:1::1'],
      ['[2001:0:4136:e378:8000:63bf:3fff:fdd2]', '2001:0:4136:e378:8000:63bf:3fff:fdd2'],
    ])('refuses https://%s/', async (host, shown) => {
      const resolver = dns();
      await expectRejected(
        new CallbackUrlGuard(strict, resolver).check(`https://${host}/`),
        'private_address',
        `callback_url resolves to a non-public address (${shown})`,
      );
      expect(resolver.calls).toEqual([]);
    });

    it.each([
      'http://2130706433/',
      'http://0x7f.1/',
      'http://0177.0.0.1/',
      'http://0x7f000001/',
      'http://127.1/',
      'http://0x7f.0.0.0x1/',
      'http://127.0.0.1./',
      'http://%31%32%37.0.0.1/',
    ])('refuses %s, which WHATWG URL normalises to 127.0.0.1', async (url) => {
      // The guard relies on this normalisation rather than parsing numeric hosts itself.
      expect(new URL(url).hostname).toBe('127.0.0.1');
      await expectRejected(
        new CallbackUrlGuard({ ...strict, allowHttp: true }, dns()).check(url),
        'private_address',
        'callback_url resolves to a non-public address (127.0.0.1)',
      );
    });
  });

  describe('names', () => {
    it('refuses a name with any non-public address, keeping the offending ones out of the message', async () => {
      const error = await expectRejected(new CallbackUrlGuard(strict, dns()).check('https://mixed.example.com/'), 'private_address');
      expect(error.message).toBe('callback_url host mixed.example.com resolves to a non-public address');
      expect(error.refusedAddresses).toEqual(['10.0.0.7']);
    });

    it('refuses a name resolving to an IPv4-mapped private address', async () => {
      const error = await expectRejected(new CallbackUrlGuard(strict, dns()).check('https://mapped.example.com/'), 'private_address');
      expect(error.refusedAddresses).toEqual(['::ffff:10.0.0.1']);
    });

    it('refuses a name that fails to resolve, keeping the resolver error as cause', async () => {
      const error = await expectRejected(
        new CallbackUrlGuard(strict, dns()).check('https://nowhere.example.com/'),
        'unresolvable',
        'callback_url host nowhere.example.com could not be resolved',
      );
      expect((error.cause as NodeJS.ErrnoException).code).toBe('ENOTFOUND');
    });

    it('refuses a name that resolves to nothing', async () => {
      await expectRejected(new CallbackUrlGuard(strict, dns()).check('https://empty.example.com/'), 'unresolvable', /has no addresses/);
    });

    it('refuses a resolver answer that is not an IP address', async () => {
      const resolver = async () => [{ address: 'evil.example.net', family: 4 as const }];
      const error = await expectRejected(new CallbackUrlGuard(strict, resolver).check('https://hooks.example.com/'), 'private_address');
      expect(error.refusedAddresses).toEqual(['evil.example.net']);
    });

    it('returns canonical, deduplicated addresses with the family taken from the address', async () => {
      const resolver = async () => [
        { address: '2606:4700:0:0:0:0:0:1111', family: 4 as const },
        { address: '2606:4700::1111', family: 6 as const },
      ];
      const target = await new CallbackUrlGuard(strict, resolver).check('https://hooks.example.com/');
      expect(target.addresses).toEqual([{ address: '2606:4700::1111', family: 6 }]);
    });

    it.each(['https://localhost/', 'https://LOCALHOST./', 'https://api.localhost:8443/', 'https://a.b.localhost/'])(
      'refuses %s without resolving',
      async (url) => {
        const resolver = dns();
        await expectRejected(new CallbackUrlGuard(strict, resolver).check(url), 'private_address', /is a loopback name$/);
        expect(resolver.calls).toEqual([]);
      },
    );

    it('resolves the name again on every check: an answer that turns private is refused the next time', async () => {
      const table: Record<string, string[]> = { 'hooks.example.com': ['93.184.215.14'] };
      const resolver = fakeResolver(table);
      const guard = new CallbackUrlGuard(strict, resolver);
      await expect(guard.check('https://hooks.example.com/')).resolves.toMatchObject({ addresses: [{ address: '93.184.215.14', family: 4 }] });
      table['hooks.example.com'] = ['10.0.0.7'];
      await expectRejected(guard.check('https://hooks.example.com/'), 'private_address');
      table['hooks.example.com'] = ['93.184.215.14'];
      const again = await guard.check('https://hooks.example.com/');
      expect(again.addresses).toEqual([{ address: '93.184.215.14', family: 4 }]);
      // Each check returns addresses of its own: changing one changes no later answer.
      again.addresses[0]!.address = '10.0.0.7';
      await expect(guard.check('https://hooks.example.com/')).resolves.toMatchObject({ addresses: [{ address: '93.184.215.14', family: 4 }] });
      expect(resolver.calls).toEqual(['hooks.example.com', 'hooks.example.com', 'hooks.example.com', 'hooks.example.com']);
    });

    it('does not treat names merely containing "localhost" as loopback', async () => {
      const resolver = fakeResolver({ 'localhost.example.com': ['93.184.215.14'] });
      await expect(new CallbackUrlGuard(strict, resolver).check('https://localhost.example.com/')).resolves.toMatchObject({
        addresses: [{ address: '93.184.215.14', family: 4 }],
      });
    });
  });

  describe('allowedCidrs', () => {
    it('exempts 127.0.0.0/8 and ::1 literals', async () => {
      const guard = new CallbackUrlGuard(local, dns());
      await expect(guard.check('https://127.0.0.1:8443/cb')).resolves.toMatchObject({ addresses: [{ address: '127.0.0.1', family: 4 }] });
      await expect(guard.check('https://127.42.0.1/cb')).resolves.toMatchObject({ addresses: [{ address: '127.42.0.1', family: 4 }] });
      await expect(guard.check('https://[::1]/cb')).resolves.toMatchObject({ hostname: '::1', addresses: [{ address: '::1', family: 6 }] });
      await expect(guard.check('https://[::ffff:127.0.0.1]/cb')).resolves.toMatchObject({ hostname: '::ffff:7f00:1' });
    });

    it('exempts a name resolving into an allowed range', async () => {
      await expect(new CallbackUrlGuard(local, dns()).check('https://loop.example.com/')).resolves.toMatchObject({
        addresses: [{ address: '127.0.0.1', family: 4 }],
      });
    });

    it('answers localhost with the allowed loopback addresses, still without resolving', async () => {
      const resolver = dns();
      await expect(new CallbackUrlGuard(local, resolver).check('https://localhost:3000/')).resolves.toMatchObject({
        addresses: [
          { address: '127.0.0.1', family: 4 },
          { address: '::1', family: 6 },
        ],
      });
      await expect(new CallbackUrlGuard({ ...strict, allowedCidrs: ['::1/128'] }, resolver).check('https://api.localhost/')).resolves.toMatchObject({
        addresses: [{ address: '::1', family: 6 }],
      });
      expect(resolver.calls).toEqual([]);
    });

    it('still refuses everything outside the allowed ranges', async () => {
      const guard = new CallbackUrlGuard(local, dns());
      await expectRejected(guard.check('https://10.0.0.1/'), 'private_address');
      await expectRejected(guard.check('https://[fe80::1]/'), 'private_address');
      const error = await expectRejected(guard.check('https://mixed.example.com/'), 'private_address');
      expect(error.refusedAddresses).toEqual(['10.0.0.7']);
    });

    it('throws at construction on an invalid CIDR', () => {
      expect(() => new CallbackUrlGuard({ allowHttp: false, allowedCidrs: ['127.0.0.0/8', '10.0.0.0/40'] }, dns())).toThrow(
        'allowedCidrs entry "10.0.0.0/40" is not a valid CIDR',
      );
    });
  });

  describe('allowedEndpoints', () => {
    // npm start's shape: one receiver on 127.0.0.1, reached as https://localhost:9443/webhooks.
    const receiver: CallbackUrlPolicy = { allowHttp: false, allowedCidrs: [], allowedEndpoints: ['127.0.0.1:9443'] };

    it("exempts the receiver's address and port, by address or by the loopback name, without resolving", async () => {
      const resolver = dns();
      const guard = new CallbackUrlGuard(receiver, resolver);
      await expect(guard.check('https://127.0.0.1:9443/webhooks')).resolves.toMatchObject({ addresses: [{ address: '127.0.0.1', family: 4 }] });
      // Only the exempted address is dialled for the name, never ::1.
      await expect(guard.check('https://localhost:9443/webhooks')).resolves.toMatchObject({
        hostname: 'localhost',
        addresses: [{ address: '127.0.0.1', family: 4 }],
      });
      expect(resolver.calls).toEqual([]);
      // A name is judged by what it resolves to, and still dialled only there.
      await expect(guard.check('https://loop.example.com:9443/')).resolves.toMatchObject({ addresses: [{ address: '127.0.0.1', family: 4 }] });
    });

    it('refuses the same address on any other port, the default port included', async () => {
      const guard = new CallbackUrlGuard(receiver, dns());
      // Judged at the exempted port first, so that a verdict kept for one port is not taken for another.
      await expect(guard.check('https://127.0.0.1:9443/')).resolves.toMatchObject({ addresses: [{ address: '127.0.0.1', family: 4 }] });
      await expectRejected(guard.check('https://127.0.0.1:9444/'), 'private_address', 'callback_url resolves to a non-public address (127.0.0.1)');
      await expectRejected(guard.check('https://127.0.0.1/'), 'private_address');
      await expectRejected(guard.check('https://localhost/'), 'private_address', /is a loopback name$/);
      await expectRejected(guard.check('https://localhost:6379/'), 'private_address', /is a loopback name$/);
      await expectRejected(guard.check('https://loop.example.com/'), 'private_address');
      // The port of an http URL without one is 80, not the endpoint's.
      await expectRejected(new CallbackUrlGuard({ ...receiver, allowHttp: true }, dns()).check('http://127.0.0.1/'), 'private_address');
    });

    it.each([
      ['https://2130706433/', '127.0.0.1'],
      ['https://2130706433:6379/', '127.0.0.1'],
      ['https://[::ffff:127.0.0.1]:9443/', '::ffff:7f00:1'],
      ['https://[::ffff:127.0.0.1]/', '::ffff:7f00:1'],
      ['https://127.0.0.2:9443/', '127.0.0.2'],
      ['https://[::1]:9443/', '::1'],
      ['https://0.0.0.0:9443/', '0.0.0.0'],
    ])('refuses %s: another address, or another port, than the one exempted', async (url, address) => {
      const error = await expectRejected(new CallbackUrlGuard(receiver, dns()).check(url), 'private_address');
      expect(error.message).toBe(`callback_url resolves to a non-public address (${address})`);
    });

    it('accepts another spelling of the exempted address itself: WHATWG makes 2130706433 into 127.0.0.1', async () => {
      // The same address and port, so the same receiver: nothing beyond it is reached.
      await expect(new CallbackUrlGuard(receiver, dns()).check('https://2130706433:9443/')).resolves.toMatchObject({
        url: { host: '127.0.0.1:9443' },
        addresses: [{ address: '127.0.0.1', family: 4 }],
      });
    });

    it('exempts an IPv4-mapped or another loopback address on that port only when that exact pair is listed', async () => {
      const guard = new CallbackUrlGuard({ ...receiver, allowedEndpoints: ['127.0.0.1:9443', '[::ffff:127.0.0.1]:9443', '127.0.0.2:9443'] }, dns());
      await expect(guard.check('https://[::ffff:127.0.0.1]:9443/')).resolves.toMatchObject({ addresses: [{ address: '::ffff:7f00:1', family: 6 }] });
      await expect(guard.check('https://127.0.0.2:9443/')).resolves.toMatchObject({ addresses: [{ address: '127.0.0.2', family: 4 }] });
      await expectRejected(guard.check('https://127.0.0.3:9443/'), 'private_address');
      await expectRejected(guard.check('https://127.0.0.2:9444/'), 'private_address');
    });

    it('refuses a name with one address outside the endpoint, as it does for ranges', async () => {
      const resolver = fakeResolver({ 'split.example.com': ['127.0.0.1', '127.0.0.2'] });
      const error = await expectRejected(new CallbackUrlGuard(receiver, resolver).check('https://split.example.com:9443/'), 'private_address');
      expect(error.refusedAddresses).toEqual(['127.0.0.2']);
    });

    it.each(['localhost:9443', '127.0.0.1', '127.0.0.0/8:9443', '2130706433:9443', '127.0.0.1:70000', '::1:9443'])(
      'throws at construction on %s, which is not an IP address and a port',
      (entry) => {
        expect(() => new CallbackUrlGuard({ ...receiver, allowedEndpoints: [entry] }, dns())).toThrow(
          `allowedEndpoints entry ${JSON.stringify(entry)} is not an IP address and a port`,
        );
      },
    );
  });

  it('refuses before any connection is made', async () => {
    const server = createServer((socket) => socket.destroy());
    let connections = 0;
    server.on('connection', () => {
      connections += 1;
    });
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    try {
      const { port } = server.address() as AddressInfo;
      const resolver = fakeResolver({ 'rebind.example.com': ['127.0.0.1'] });
      const guard = new CallbackUrlGuard({ allowHttp: true, allowedCidrs: [] }, resolver);
      await expectRejected(guard.check(`https://127.0.0.1:${port}/`), 'private_address');
      await expectRejected(guard.check(`http://rebind.example.com:${port}/`), 'private_address');
      expect(connections).toBe(0);
    } finally {
      server.close();
      await once(server, 'close');
    }
  });
});
