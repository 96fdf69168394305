import { classify, Forwarder, forwardedHeaders } from './forwarder';
import { closedPort, LocalHandler } from './test-support/local-handler';

let handler: LocalHandler;
beforeEach(async () => (handler = await LocalHandler.start()));
afterEach(() => handler.stop());

const delivery = { id: 'dlv_1', headers: { 'content-type': 'application/json', 'webhook-id': 'msg_1' }, body: '{}', timeout_ms: 5_000 };

describe('Forwarder', () => {
  it('counts the status line and headers as they came', async () => {
    handler.behaviour = (req, res) => {
      req.socket.write('HTTP/1.1 200 OK\r\nX-One: 1\r\nContent-Length: 2\r\n\r\nok');
      req.socket.end();
      res.detachSocket(req.socket);
    };
    const result = await new Forwarder(handler.url()).forward(delivery);
    expect(result).toMatchObject({ status: 200, excerpt: 'ok', headers_bytes: 'HTTP/1.1 200 OK\r\nX-One: 1\r\nContent-Length: 2\r\n\r\n'.length });
  });

  it('times a name that is looked up', async () => {
    const result = await new Forwarder(new URL(`http://localhost:${handler.port}/webhooks`)).forward(delivery);
    // localhost may come back as ::1 first, where nothing listens: then the result is refused, still after a lookup.
    expect(result.timing.dns_ms).toEqual(expect.any(Number));
  });

  it('says dns for a name that does not resolve', async () => {
    const result = await new Forwarder(new URL('http://no-such-host.invalid/webhooks')).forward(delivery);
    expect(result).toMatchObject({ status: null, error: 'dns', error_detail: expect.stringMatching(/^(ENOTFOUND|EAI_AGAIN)$/) });
  });

  it('drops the exchange when the listener stops', async () => {
    handler.behaviour = () => undefined;
    const stopping = new AbortController();
    const forwarding = new Forwarder(handler.url()).forward(delivery, stopping.signal);
    await handler.received(1);
    stopping.abort();
    expect(await forwarding).toMatchObject({ status: null, error: 'reset', error_detail: 'the listener stopped' });
  });

  it('refuses nothing on a closed port but says refused', async () => {
    const result = await new Forwarder(new URL(`http://127.0.0.1:${await closedPort()}/`)).forward(delivery);
    expect(result).toMatchObject({ status: null, error: 'refused', timing: { dns_ms: null, connect_ms: null, tls_ms: null, first_byte_ms: null } });
  });
});

describe('forwardedHeaders', () => {
  it('keeps the signed headers and drops those of the hop and those Node cannot send', () => {
    expect(
      forwardedHeaders({
        'Webhook-Id': 'msg_1',
        'webhook-timestamp': '1',
        'webhook-signature': 'v1,x',
        'content-type': 'application/json',
        'user-agent': 'ua',
        host: 'receiver.example',
        'content-length': '5',
        connection: 'close',
        'transfer-encoding': 'chunked',
        'bad name': 'x',
        'x-bad-value': 'a\r\nb',
      }),
    ).toEqual({ 'webhook-id': 'msg_1', 'webhook-timestamp': '1', 'webhook-signature': 'v1,x', 'content-type': 'application/json', 'user-agent': 'ua' });
  });
});

describe('classify', () => {
  it.each([
    ['ECONNREFUSED', 'refused'],
    ['ECONNRESET', 'reset'],
    ['EPIPE', 'reset'],
    ['ENOTFOUND', 'dns'],
    ['EAI_AGAIN', 'dns'],
    ['DEPTH_ZERO_SELF_SIGNED_CERT', 'tls'],
    ['ERR_TLS_CERT_ALTNAME_INVALID', 'tls'],
    ['ERR_SSL_WRONG_VERSION_NUMBER', 'tls'],
    ['HPE_INVALID_CONSTANT', 'reset'],
    ['ETIMEDOUT', 'timeout'],
  ])('%s is %s', (code, error) => {
    expect(classify(Object.assign(new Error('x'), { code }))).toEqual({ error, detail: code });
  });

  it('calls an error without a code a reset and keeps its message', () => {
    expect(classify(new Error('socket hang up'))).toEqual({ error: 'reset', detail: 'socket hang up' });
  });
});
