import { Webhook } from 'standardwebhooks';
import { callbackIdFor } from '@media/domain';
import { Listener } from '../../tools/cli/src/listener';
import type { ListenSettings } from '../../tools/cli/src/settings';
import { closedPort, LocalHandler, type ReceivedRequest } from '../../tools/cli/src/test-support/local-handler';
import { Lines } from '../../tools/cli/src/test-support/recorders';
import { DispatcherHarness } from '../dispatcher/support/harness';
import { api } from '../support/stack';

// `media-callbacks listen` end to end: the CLI's listener against the real gateway, generator and
// dispatcher (in-process, real Redis), forwarding to a real handler on loopback. What a developer
// sees: the relay URL to give as callback_url, signed deliveries verifiable with the printed secret,
// the handler's answers as the callbacks' attempts, and the exits for a refused or revoked key.

let h: DispatcherHarness;
let handler: LocalHandler;
const listeners: Listener[] = [];

beforeAll(async () => {
  h = await DispatcherHarness.start({ WEBHOOK_RETRY_SCHEDULE: '300ms,300ms,300ms,300ms,300ms', WEBHOOK_TIMEOUT_MS: '2000' }, { inProcess: true });
  handler = await LocalHandler.start();
});

afterEach(async () => {
  await Promise.all(listeners.splice(0).map((listener) => listener.stop()));
  handler.requests.length = 0;
  handler.behaviour = (_req, res) => res.writeHead(200, { 'content-type': 'text/plain' }).end('handled');
});

afterAll(async () => {
  await handler?.stop();
  await h?.stop();
});

function listen(settings: Partial<ListenSettings> = {}): { lines: Lines; exit: Promise<number> } {
  const lines = new Lines();
  const listener = new Listener(
    { forwardTo: handler.url(), events: [], printSecret: false, apiKey: h.workspace.apiKey, baseUrl: new URL(h.stack.baseUrl), proxy: {}, ...settings },
    { output: lines, tuning: { initialBackoffMs: 50, maxBackoffMs: 200 } },
  );
  listeners.push(listener);
  return { lines, exit: listener.run() };
}

/** The relay URL from the ready line. */
async function relayUrlOf(lines: Lines): Promise<string> {
  const ready = await lines.waitFor(/^Ready\./, 15_000);
  return /^Ready\. Callbacks to (\S+) /.exec(ready)![1];
}

it('forwards a job’s callback sent to the relay URL, signed with the printed secret, and the answer is the attempt', async () => {
  const { lines } = listen({ printSecret: true });
  const relayUrl = await relayUrlOf(lines);
  expect(relayUrl).toMatch(new RegExp(`^${h.stack.baseUrl}/webhook-relay/rly_`));
  await eventuallyLine(lines, h.workspace.signingSecret);

  const jobId = await h.jobs.image(relayUrl, 'through the relay');
  const messageId = callbackIdFor(jobId, 'image.completed');
  const { callback, attempts } = await h.settled(messageId, ['delivered']);
  expect(callback).toMatchObject({ url: relayUrl, attempt_count: 1 });
  expect(attempts).toEqual([
    expect.objectContaining({
      status: 200,
      error: null,
      excerpt: 'handled',
      timing: { dns_ms: null, connect_ms: expect.any(Number), tls_ms: null, first_byte_ms: expect.any(Number) },
    }),
  ]);

  const [received] = handler.requests as [ReceivedRequest];
  expect(received.headers['webhook-id']).toBe(messageId);
  const signed = Object.fromEntries(Object.entries(received.headers).map(([name, value]) => [name, String(value)]));
  expect(new Webhook(h.workspace.signingSecret).verify(received.body, signed)).toMatchObject({ type: 'image.completed', data: { id: jobId } });
  expect(await lines.waitFor(new RegExp(messageId))).toMatch(new RegExp(`^\\S+Z {2}image\\.completed {2}${messageId} {2}200 {2}\\d+ ms$`));
});

it('receives the --events without a callback_url, and a 500 from the handler leaves the callback to its next attempt', async () => {
  let answers = 0;
  handler.behaviour = (_req, res) => (++answers === 1 ? res.writeHead(500).end('not yet') : res.writeHead(204).end());
  const { lines } = listen({ events: ['video.completed'] });
  expect(await lines.waitFor(/^Ready\./, 15_000)).toContain(' and video.completed events of workspace ');

  const video = await api(h.stack, h.workspace.apiKey)('/v1/videos', {
    method: 'POST',
    json: { model: 'motion-1', prompt: 'relayed', seconds: 1, size: '640x360' },
  });
  expect(video.status).toBe(200);
  const { attempts } = await h.settled(callbackIdFor(video.json.id, 'video.completed', 'relay'), ['delivered']);
  expect(attempts.map((a) => [a.status, a.error, a.excerpt])).toEqual([
    [500, 'http_error', 'not yet'],
    [204, null, ''],
  ]);
  expect(lines.count(/ {2}video\.completed {2}msg_\S+ {2}500 {2}/)).toBe(1);
});

it('records the handler’s timeout and refusal in the attempt log', async () => {
  handler.behaviour = () => undefined;
  const slowListener = listen();
  const relayUrl = await relayUrlOf(slowListener.lines);
  const slow = callbackIdFor(await h.jobs.image(relayUrl, 'slow handler'), 'image.completed');
  const [timedOut] = await h.attempts(slow, 1);
  expect(timedOut).toMatchObject({ status: null, error: 'timeout' });
  await Promise.all(listeners.splice(0).map((listener) => listener.stop()));

  const { lines } = listen({ forwardTo: new URL(`http://127.0.0.1:${await closedPort()}/webhooks`) });
  await lines.waitFor(/^Ready\./, 15_000);
  const refused = callbackIdFor(await h.jobs.image(relayUrl, 'no handler running'), 'image.completed');
  const [attempt] = await h.attempts(refused, 1);
  expect(attempt).toMatchObject({ status: null, error: 'refused', error_detail: 'ECONNREFUSED' });
});

it('exits 1 on a key the gateway does not know', async () => {
  const { lines, exit } = listen({ apiKey: 'sk_not_a_key' });
  expect(await exit).toBe(1);
  expect(lines.stderr.at(-1)).toBe('The gateway refused the API key: Incorrect API key provided. (401 invalid_api_key). Check MEDIA_API_KEY or --api-key.');
});

it('exits 1 when its key is revoked while it listens', async () => {
  const key = await h.stack.accounts.createApiKey(h.workspace.workspaceId);
  const { lines, exit } = listen({ apiKey: key.key });
  await lines.waitFor(/^Ready\./, 15_000);
  await h.stack.accounts.revokeApiKey(h.workspace.workspaceId, key.id);
  expect(await exit).toBe(1);
  expect(lines.stderr.at(-1)).toMatch(/^The gateway closed the connection: the API key was revoked \(4401/);
});

async function eventuallyLine(lines: Lines, text: string): Promise<void> {
  await lines.waitFor(new RegExp(`^${text.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')}$`));
}
