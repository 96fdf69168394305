import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import { request } from 'node:http';
import type { AddressInfo } from 'node:net';
import { CallbackUrlGuard, pinnedLookup, type CheckedTarget } from './index';
import { fakeResolver, type FakeResolver } from './test-support/fake-resolver';

type Lookup = ReturnType<typeof pinnedLookup>;

/** Calls the lookup and collects its callback arguments, noting whether it answered synchronously. */
function call(lookup: Lookup, hostname: string, options?: unknown): Promise<{ args: unknown[]; sync: boolean }> {
  return new Promise((resolve) => {
    let returned = false;
    const callback = (...args: unknown[]) => resolve({ args, sync: !returned });
    if (options === undefined) (lookup as (h: string, cb: typeof callback) => void)(hostname, callback);
    else lookup(hostname, options, callback);
    returned = true;
  });
}

describe('pinnedLookup', () => {
  let resolver: FakeResolver;
  let target: CheckedTarget;

  beforeEach(async () => {
    resolver = fakeResolver({ 'hooks.example.com': ['93.184.215.14', '2606:4700::1111'] });
    target = await new CallbackUrlGuard({ allowHttp: false, allowedCidrs: [] }, resolver).check('https://hooks.example.com/cb');
    expect(resolver.calls).toEqual(['hooks.example.com']);
  });

  afterEach(() => {
    // The guard resolved once; no lookup answer may have come from anywhere else.
    expect(resolver.calls).toEqual(['hooks.example.com']);
  });

  it('answers the single-address form with the first checked address, asynchronously', async () => {
    const { args, sync } = await call(pinnedLookup(target), 'hooks.example.com', {});
    expect(args).toEqual([null, '93.184.215.14', 4]);
    expect(sync).toBe(false);
  });

  it('answers the two-argument form lookup(hostname, callback)', async () => {
    expect((await call(pinnedLookup(target), 'hooks.example.com')).args).toEqual([null, '93.184.215.14', 4]);
  });

  it('answers the {all: true} form with every checked address in order', async () => {
    const { args } = await call(pinnedLookup(target), 'hooks.example.com', { all: true });
    expect(args).toEqual([
      null,
      [
        { address: '93.184.215.14', family: 4 },
        { address: '2606:4700::1111', family: 6 },
      ],
    ]);
  });

  it('honours the family option in number, object and string form', async () => {
    const lookup = pinnedLookup(target);
    expect((await call(lookup, 'hooks.example.com', 6)).args).toEqual([null, '2606:4700::1111', 6]);
    expect((await call(lookup, 'hooks.example.com', { family: 6 })).args).toEqual([null, '2606:4700::1111', 6]);
    expect((await call(lookup, 'hooks.example.com', { family: 'IPv4', all: true })).args).toEqual([null, [{ address: '93.184.215.14', family: 4 }]]);
  });

  it('honours ipv4first / ipv6first ordering', async () => {
    const v6first: CheckedTarget = {
      ...target,
      addresses: [
        { address: '2606:4700::1111', family: 6 },
        { address: '93.184.215.14', family: 4 },
      ],
    };
    expect((await call(pinnedLookup(v6first), 'hooks.example.com', { order: 'ipv4first' })).args).toEqual([null, '93.184.215.14', 4]);
    expect((await call(pinnedLookup(v6first), 'hooks.example.com', { verbatim: false })).args).toEqual([null, '93.184.215.14', 4]);
    expect((await call(pinnedLookup(target), 'hooks.example.com', { order: 'ipv6first' })).args).toEqual([null, '2606:4700::1111', 6]);
  });

  it('matches the host name case-insensitively and with a trailing dot', async () => {
    expect((await call(pinnedLookup(target), 'HOOKS.example.com.', {})).args).toEqual([null, '93.184.215.14', 4]);
  });

  it('fails with ENOTFOUND for any other host name instead of querying DNS', async () => {
    const { args } = await call(pinnedLookup(target), 'internal.example.com', { all: true });
    const error = args[0] as NodeJS.ErrnoException;
    expect(args).toHaveLength(1);
    expect(error.code).toBe('ENOTFOUND');
    expect(error.message).toContain('internal.example.com');
  });

  it('fails with ENOTFOUND when no checked address has the requested family', async () => {
    const v4only: CheckedTarget = { ...target, addresses: [{ address: '93.184.215.14', family: 4 }] };
    const { args } = await call(pinnedLookup(v4only), 'hooks.example.com', { family: 6 });
    expect((args[0] as NodeJS.ErrnoException).code).toBe('ENOTFOUND');
  });

  it('is not affected by later changes to the target or to earlier answers', async () => {
    const lookup = pinnedLookup(target);
    const first = (await call(lookup, 'hooks.example.com', { all: true })).args[1] as { address: string }[];
    first[0]!.address = '10.0.0.1';
    target.addresses[0]!.address = '10.0.0.2';
    expect((await call(lookup, 'hooks.example.com', {})).args).toEqual([null, '93.184.215.14', 4]);
  });
});

describe('pinnedLookup on a real socket', () => {
  let server: Server;
  let port: number;
  let remoteAddresses: string[];

  beforeEach(async () => {
    remoteAddresses = [];
    server = createServer((req, res) => {
      remoteAddresses.push(req.socket.remoteAddress ?? '');
      res.end(`hello ${req.headers.host}`);
    });
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    port = (server.address() as AddressInfo).port;
  });

  afterEach(async () => {
    server.close();
    await once(server, 'close');
  });

  it('makes http.request connect to the checked address for a name DNS does not know', async () => {
    // `.invalid` never resolves (RFC 6761), so a response proves the pinned answer was used.
    const resolver = fakeResolver({ 'receiver.invalid': ['127.0.0.1'] });
    const target = await new CallbackUrlGuard({ allowHttp: true, allowedCidrs: ['127.0.0.0/8'] }, resolver).check(`http://receiver.invalid:${port}/cb`);

    const req = request(target.url, { agent: false, lookup: pinnedLookup(target) });
    req.end();
    const [res] = (await once(req, 'response')) as [import('node:http').IncomingMessage];
    let body = '';
    for await (const chunk of res) body += String(chunk);

    expect(res.statusCode).toBe(200);
    // The Host header still carries the name; only the dialled address is pinned.
    expect(body).toBe(`hello receiver.invalid:${port}`);
    expect(remoteAddresses).toEqual(['127.0.0.1']);
    expect(resolver.calls).toEqual(['receiver.invalid']);
  });

  it("works as got's dnsLookup option", async () => {
    const { default: got } = await import('got');
    const resolver = fakeResolver({ 'receiver.invalid': ['127.0.0.1'] });
    const target = await new CallbackUrlGuard({ allowHttp: true, allowedCidrs: ['127.0.0.0/8'] }, resolver).check(`http://receiver.invalid:${port}/cb`);

    const body = await got(target.url, { dnsLookup: pinnedLookup(target), followRedirect: false, retry: { limit: 0 } }).text();

    expect(body).toBe(`hello receiver.invalid:${port}`);
    expect(remoteAddresses).toEqual(['127.0.0.1']);
    expect(resolver.calls).toEqual(['receiver.invalid']);
  });
});
