// Callbacks through an egress proxy (CALLBACK_EGRESS_PROXY), as receivers that allow only known
// addresses need: the proxy listens on 127.0.0.2 and the receiver on 127.0.0.1, so the test can
// tell the proxy's address from the receiver's. The URL guard runs first and the CONNECT names
// the checked IP, never the host name; the recorded address is the receiver's; TLS stays end to
// end (the receiver's certificate is checked against the test CA as without a proxy). A proxy
// that is down fails the attempt as `proxy`, retried on the ladder; a slow one counts against the
// attempt's deadline.
import { DispatcherHarness } from './support/harness';
import { ConnectProxy } from '../support/connect-proxy';

const TIMEOUT_MS = 1_500;

let proxy: ConnectProxy;
let h: DispatcherHarness;

beforeAll(async () => {
  proxy = await ConnectProxy.start('127.0.0.2');
  h = await DispatcherHarness.start(
    {
      CALLBACK_EGRESS_PROXY: proxy.url,
      WEBHOOK_TIMEOUT_MS: String(TIMEOUT_MS),
      WEBHOOK_RETRY_SCHEDULE: '300ms,300ms,300ms,300ms,300ms',
    },
    { inProcess: true },
  );
}, 60_000);

afterAll(async () => {
  await h?.stop();
  await proxy?.stop();
});

beforeEach(() => {
  // Kept-alive tunnels from the test before would carry the next attempt without a new CONNECT.
  proxy.cutTunnels();
  proxy.mode = { kind: 'open' };
  proxy.targets.length = 0;
});

it('delivers through the proxy: CONNECT names the checked address, the attempt records the receiver’s', async () => {
  h.receiver.script('/via-proxy', () => ({ status: 200 }));
  const jobId = await h.jobs.image(h.receiver.url('/via-proxy'));
  const { callback, attempts } = await h.settled(await h.messageIdOf(jobId), ['delivered']);
  expect(callback.state).toBe('delivered');
  expect(attempts[0]).toMatchObject({ status: 200, error: null, address: '127.0.0.1' });
  // The host was localhost; the proxy was given the address the guard checked, never the name.
  const port = new URL(h.receiver.url('/via-proxy')).port;
  expect(proxy.targets).toContain(`127.0.0.1:${port}`);
  expect(proxy.targets.some((t) => t.startsWith('localhost'))).toBe(false);
  // The receiver saw the proxy's address as its peer: the socket went through the proxy.
  const received = h.receiver.requestsTo('/via-proxy');
  expect(received.at(-1)?.remoteAddress).toMatch(/127\.0\.0\.2$/);
  console.log(
    `through the proxy: attempt recorded address ${attempts[0].address}, CONNECT targets ${JSON.stringify(proxy.targets)}, receiver's peer ${received.at(-1)?.remoteAddress}`,
  );
}, 30_000);

it('fails an attempt as `proxy` while the proxy is down, and delivers on the ladder once it is back', async () => {
  h.receiver.script('/proxy-down', () => ({ status: 200 }));
  await proxy.stop();
  const jobId = await h.jobs.image(h.receiver.url('/proxy-down'));
  const messageId = await h.messageIdOf(jobId);
  const [first] = await h.attempts(messageId, 1);
  expect(first).toMatchObject({ status: null, error: 'proxy' });
  await proxy.listen();
  const { callback, attempts } = await h.settled(messageId, ['delivered'], 30_000);
  expect(callback.state).toBe('delivered');
  expect(attempts.at(-1)).toMatchObject({ status: 200, error: null, address: '127.0.0.1' });
}, 60_000);

it('counts a slow proxy against the attempt’s deadline: timeout, within the webhook timeout', async () => {
  h.receiver.script('/slow-proxy', () => ({ status: 200 }));
  proxy.mode = { kind: 'slow', delayMs: TIMEOUT_MS * 3 };
  const jobId = await h.jobs.image(h.receiver.url('/slow-proxy'));
  const [first] = await h.attempts(await h.messageIdOf(jobId), 1);
  expect(first).toMatchObject({ status: null, error: 'timeout' });
  expect(first.duration_ms).toBeLessThan(TIMEOUT_MS + 1_000);
}, 30_000);

it('fails as `proxy` when the proxy refuses the tunnel', async () => {
  h.receiver.script('/refused', () => ({ status: 200 }));
  proxy.mode = { kind: 'refuse' };
  const jobId = await h.jobs.image(h.receiver.url('/refused'));
  const [first] = await h.attempts(await h.messageIdOf(jobId), 1);
  expect(first).toMatchObject({ status: null, error: 'proxy' });
}, 30_000);
