// The listeners on developers' machines (`media-callbacks listen`) on the dashboard, on the three
// real services (in-process) with WebSocket listeners speaking the relay's protocol as the CLI does,
// in real Chromium at 1280 and 390 px: the Webhook endpoints page shows the workspace's relay URL
// and each connected listener (since when, its key's prefix, its events), and the command to start
// one when none is; a member reads them through the API, never another workspace's and never a key;
// callbacks that went through the relay are marked as such on the request's page and the endpoint's card.
import { once } from 'node:events';
import type { Browser, Page } from 'playwright-core';
import WebSocket from 'ws';
import { callbackIdFor } from '@media/domain';
import type { DeliveryFrame, ReadyFrame } from '@media/callbacks';
import { eventually } from '../support/stack';
import { DispatcherHarness } from '../dispatcher/support/harness';
import { DashboardClient } from './support/api-client';
import { DESKTOP, launchChromium, newSession, PHONE, screenshot, signIn } from './support/browser';

jest.setTimeout(180_000);

const COMMAND = 'npx media-callbacks listen --forward-to http://localhost:3000/webhooks';

let h: DispatcherHarness;
let browser: Browser;
let owner: DashboardClient;
let memberClient: DashboardClient;
const member = { email: '', password: '' };
/** A second API key of the workspace, made on the dashboard: the listeners connect with it. */
let apiKey: { id: string; prefix: string; key: string };
let relayUrl: string;
/** A request that ended with a callback to its own callback_url, one to an endpoint at the relay URL, and one to a listener's subscription. */
let job: string;
let relayEndpoint: string;
const open: WebSocket[] = [];

/** Connects as `media-callbacks listen` does, answering each delivery 200; resolves on the ready frame. */
async function listen(key: string, query = ''): Promise<{ socket: WebSocket; ready: ReadyFrame }> {
  const socket = new WebSocket(`${h.stack.baseUrl.replace('http', 'ws')}/v1/webhook-relay/listen${query}`, { headers: { authorization: `Bearer ${key}` } });
  open.push(socket);
  const [raw] = (await once(socket, 'message')) as [Buffer];
  const ready = JSON.parse(raw.toString()) as ReadyFrame;
  socket.on('message', (data: Buffer) => {
    const frame = JSON.parse(data.toString()) as DeliveryFrame;
    const timing = { dns_ms: null, connect_ms: 1, tls_ms: null, first_byte_ms: 2 };
    socket.send(
      JSON.stringify({ type: 'result', id: frame.id, status: 200, error: null, error_detail: null, excerpt: 'ok', headers_bytes: 40, duration_ms: 3, timing }),
    );
  });
  return { socket, ready };
}

/** Closes the listener and waits until the gateway has dropped it from the directory. */
async function hangUp(client: DashboardClient, socket: WebSocket): Promise<void> {
  const closed = once(socket, 'close');
  socket.close();
  await closed;
  await eventually(
    async () => (((await client.call('GET', '/relay-listeners')).json.data as unknown[]).length === 0 ? true : undefined),
    10_000,
    'no listener',
  );
}

beforeAll(async () => {
  const launching = launchChromium();
  try {
    h = await DispatcherHarness.start({ WEBHOOK_TIMEOUT_MS: '2000' }, { inProcess: true });
    owner = await DashboardClient.signedIn(h.stack.baseUrl, h.workspace.owner.email, h.workspace.owner.password);
    const made = await owner.call('POST', '/members', { json: { email: 'member@relay.test', role: 'member' } });
    expect(made.status).toBe(201);
    Object.assign(member, { email: made.json.email, password: made.json.password });
    memberClient = await DashboardClient.signedIn(h.stack.baseUrl, member.email, member.password);
    const key = await owner.call('POST', '/keys');
    expect(key.status).toBe(201);
    apiKey = { id: key.json.id, prefix: key.json.prefix, key: key.json.key };

    // A listener subscribed to image.completed, and an endpoint at the relay URL, when a job ends with its own callback_url.
    const first = await listen(apiKey.key, '?events=image.completed');
    relayUrl = first.ready.relay_url;
    const endpoint = await owner.call('POST', '/endpoints', { json: { url: relayUrl, events: ['image.completed'], description: 'Laptop' } });
    expect(endpoint.status).toBe(201);
    relayEndpoint = endpoint.json.id;
    job = await h.jobs.image(h.receiver.url('/own'), 'a relayed lighthouse');
    for (const id of [
      callbackIdFor(job, 'image.completed'),
      callbackIdFor(job, 'image.completed', relayEndpoint),
      callbackIdFor(job, 'image.completed', 'relay'),
    ])
      await h.settled(id, ['delivered']);
    await hangUp(owner, first.socket);
  } finally {
    browser = await launching;
  }
});

afterEach(async () => {
  for (const socket of open.splice(0)) socket.terminate();
});

afterAll(async () => {
  await browser?.close();
  await h?.stop();
});

describe('the relay listeners API of the dashboard', () => {
  it('shows a member each connected listener with its key’s id and prefix and its events, never the key, and none once it is gone', async () => {
    const before = await memberClient.call('GET', '/relay-listeners');
    expect(before.status).toBe(200);
    expect(before.json).toEqual({ relay_url: relayUrl, data: [], max_listeners: 5 });

    const startedAt = Math.floor(Date.now() / 1000);
    const { socket, ready } = await listen(apiKey.key, '?events=video.failed,video.completed');
    const answer = await memberClient.call('GET', '/relay-listeners');
    expect(answer.json).toEqual({
      relay_url: relayUrl,
      data: [
        {
          session_id: ready.session_id,
          connected_at: expect.any(Number),
          last_seen_at: expect.any(Number),
          api_key: { id: apiKey.id, prefix: apiKey.prefix, revoked: false },
          events: ['video.completed', 'video.failed'],
        },
      ],
      max_listeners: 5,
    });
    expect(answer.json.data[0].connected_at).toBeGreaterThanOrEqual(startedAt - 1);
    expect(answer.json.data[0].connected_at).toBeLessThanOrEqual(Math.ceil(Date.now() / 1000));
    expect(answer.text).not.toContain(apiKey.key);
    expect(answer.text).not.toContain(h.workspace.apiKey);
    expect(answer.headers.get('cache-control')).toBe('no-store');

    await hangUp(memberClient, socket);
    expect((await memberClient.call('GET', '/relay-listeners')).json).toEqual({ relay_url: relayUrl, data: [], max_listeners: 5 });
    expect((await new DashboardClient(h.stack.baseUrl).call('GET', '/relay-listeners')).status).toBe(401);
  });

  it('never shows another workspace’s listeners or relay URL', async () => {
    const other = await h.stack.createWorkspace('relay-elsewhere');
    const stranger = await DashboardClient.signedIn(h.stack.baseUrl, other.owner.email, other.owner.password);
    const mine = await listen(apiKey.key);
    expect((await stranger.call('GET', '/relay-listeners')).json).toEqual({ relay_url: null, data: [], max_listeners: 5 });

    const theirs = await listen(other.apiKey, '?events=image.failed');
    expect(theirs.ready.relay_url).not.toBe(relayUrl);
    const seenByThem = (await stranger.call('GET', '/relay-listeners')).json;
    expect(seenByThem.relay_url).toBe(theirs.ready.relay_url);
    expect(seenByThem.data.map((l: { session_id: string }) => l.session_id)).toEqual([theirs.ready.session_id]);
    const seenByUs = (await owner.call('GET', '/relay-listeners')).json;
    expect(seenByUs.relay_url).toBe(relayUrl);
    expect(seenByUs.data.map((l: { session_id: string }) => l.session_id)).toEqual([mine.ready.session_id]);
    await hangUp(stranger, theirs.socket);
    await hangUp(owner, mine.socket);
  });

  it('marks a request’s callbacks that went through the relay, and tells the listener’s subscription from its own callback_url', async () => {
    const detail = await memberClient.call('GET', `/requests/${job}`);
    expect(detail.status).toBe(200);
    const callbacks = detail.json.callbacks as { callback: { url: string; endpoint_id: string | null; status: string }; relay: boolean }[];
    expect(callbacks.map((c) => [c.callback.endpoint_id, c.callback.url, c.relay, c.callback.status])).toEqual([
      [null, h.receiver.url('/own'), false, 'delivered'],
      [relayEndpoint, relayUrl, true, 'delivered'],
      [null, relayUrl, true, 'delivered'],
    ]);
  });
});

describe('the listeners on the Webhook endpoints page in a real browser', () => {
  it.each([
    ['1280 px', DESKTOP],
    ['390 px', PHONE],
  ])('at %s shows the relay URL and the connected listener, and the command to start one once it is gone', async (_label, viewport) => {
    const { socket, ready } = await listen(apiKey.key, '?events=image.completed,video.completed');
    const { context, page, problems } = await newSession(browser, h.stack.baseUrl, viewport);
    try {
      await signIn(page, member.email, member.password);
      await page.goto('/dashboard/endpoints');
      const section = page.getByRole('region', { name: 'Listeners on developers’ machines (media-callbacks listen)' });
      const row = section.locator(`[data-testid="listener"][data-id="${ready.session_id}"]`);
      await row.waitFor();
      expect(await section.getByTestId('relay-url').textContent()).toBe(relayUrl);
      expect(await row.getByTestId('listener-key').innerText()).toContain(apiKey.prefix);
      expect(await row.getByTestId('listener-key').innerText()).toContain(apiKey.id);
      expect(await row.locator('.chip').allTextContents()).toEqual(['video.completed', 'image.completed']);
      expect(await row.locator('time').count()).toBe(1);
      expect(await section.innerText()).not.toContain(apiKey.key);
      // The endpoint at the relay URL says where its callbacks go.
      const card = page.locator(`[data-testid="endpoint"][data-id="${relayEndpoint}"]`);
      expect(await card.getByTestId('relay-tag').innerText()).toBe('relay (media-callbacks listen)');
      await card.getByTestId('failure-rate').waitFor();
      await expectFits(page, viewport.width);
      await screenshot(page, viewport === DESKTOP ? 'relay-listeners.png' : 'relay-listeners-390.png', { fullPage: true });

      await hangUp(owner, socket);
      await page.reload();
      await section.getByTestId('no-listener').waitFor();
      expect(await section.locator('[data-testid="listener"]').count()).toBe(0);
      expect(await section.getByTestId('listen-command').textContent()).toBe(COMMAND);
      expect(await section.getByTestId('relay-url').textContent()).toBe(relayUrl);
      await expectFits(page, viewport.width);
      await screenshot(page, viewport === DESKTOP ? 'relay-listeners-none.png' : 'relay-listeners-none-390.png', { fullPage: true });
      expect(problems.errors).toEqual([]);
    } finally {
      await context.close();
    }
  });

  it.each([
    ['1280 px', DESKTOP],
    ['390 px', PHONE],
  ])('at %s marks the request’s callbacks that went through the relay', async (_label, viewport) => {
    const { context, page, problems } = await newSession(browser, h.stack.baseUrl, viewport);
    try {
      await signIn(page, h.workspace.owner.email, h.workspace.owner.password);
      await page.goto(`/dashboard/requests/${job}`);
      await page.getByTestId('callbacks-summary').waitFor();
      const cards = page.locator('[data-testid="callback"]');
      expect(await cards.count()).toBe(3);
      expect(await cards.nth(0).getByTestId('callback-endpoint').innerText()).toBe('The request’s own callback_url');
      expect(await cards.nth(0).getByTestId('callback-relay').count()).toBe(0);
      expect(await cards.nth(1).getByTestId('callback-endpoint').innerText()).toContain(`${relayEndpoint} · Laptop`);
      expect(await cards.nth(1).getByTestId('callback-relay').innerText()).toContain('relay (media-callbacks listen)');
      expect(await cards.nth(2).getByRole('heading', { level: 2 }).innerText()).toBe('Callback · The relay (media-callbacks listen)');
      expect(await cards.nth(2).getByTestId('callback-endpoint').innerText()).toBe(
        'The relay (media-callbacks listen): a connected listener subscribed to image.completed',
      );
      expect(await cards.nth(2).getByTestId('callback-relay').innerText()).toContain('relay (media-callbacks listen)');
      await expectFits(page, viewport.width);
      await screenshot(page, viewport === DESKTOP ? 'request-detail-relay.png' : 'request-detail-relay-390.png', { fullPage: true });
      expect(problems.errors).toEqual([]);
    } finally {
      await context.close();
    }
  });
});

async function expectFits(page: Page, width: number): Promise<void> {
  expect(await page.evaluate('document.documentElement.scrollWidth')).toBeLessThanOrEqual(width);
}
