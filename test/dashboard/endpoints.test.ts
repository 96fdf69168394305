// The Webhook endpoints page and its API, on the three real services (in-process) and an HTTPS
// receiver on 127.0.0.1, in real Chromium at 1280 and 390 px: an admin adds an endpoint, changes
// its events, sends it a test event, turns it off and on and deletes it, each change in the audit
// under the admin's name; a member reads the page without a form or a button and is refused at
// the write routes; a forged request without the CSRF token is refused; an endpoint whose every
// attempt fails is disabled and heads the page in red; a request's page lists all its callbacks,
// its own callback_url's and each endpoint's.
import type { Browser, Page } from 'playwright-core';
import { Webhook } from 'standardwebhooks';
import { eventually } from '../support/stack';
import { expectApiError } from '../support/http';
import { DispatcherHarness } from '../dispatcher/support/harness';
import { DashboardClient } from './support/api-client';
import { DESKTOP, launchChromium, newSession, PHONE, screenshot, signIn } from './support/browser';

jest.setTimeout(180_000);

/** What a person or a receiver wrote, which would be markup if the page rendered it as HTML. */
const HOSTILE_DESCRIPTION = '<i>Billing</i> receiver <img src=x>';
const HOSTILE_ANSWER = '<b>thanks</b><script>window.__pwned = 1</script>';

let h: DispatcherHarness;
let browser: Browser;
let owner: DashboardClient;
let adminClient: DashboardClient;
let memberClient: DashboardClient;
const admin = { email: '', password: '' };
const member = { email: '', password: '' };
/** Endpoints made in beforeAll: one that accepts, one whose every attempt fails (and so is disabled). */
let primary: { id: string; url: string };
let down: { id: string; url: string };
/** An image request with a callback_url of its own, ended while both endpoints were on. */
let job: string;

beforeAll(async () => {
  const launching = launchChromium();
  try {
    // Short gaps, so the failing endpoint's callback ends failed in seconds; an endpoint failing for
    // a second is disabled.
    h = await DispatcherHarness.start({ WEBHOOK_RETRY_SCHEDULE: '400ms,400ms,400ms,400ms,400ms', WEBHOOK_ENDPOINT_DISABLE_AFTER: '1s' }, { inProcess: true });
    h.receiver.script('/ep/down', () => ({ status: 503, body: 'upstream unavailable' }));
    h.receiver.scriptUnder('/ep/ui', () => ({ status: 200, body: HOSTILE_ANSWER }));
    owner = await DashboardClient.signedIn(h.stack.baseUrl, h.workspace.owner.email, h.workspace.owner.password);
    for (const [who, role] of [
      [admin, 'admin'],
      [member, 'member'],
    ] as const) {
      const made = await owner.call('POST', '/members', { json: { email: `${role}@endpoints.test`, role } });
      expect(made.status).toBe(201);
      Object.assign(who, { email: made.json.email, password: made.json.password });
    }
    adminClient = await DashboardClient.signedIn(h.stack.baseUrl, admin.email, admin.password);
    memberClient = await DashboardClient.signedIn(h.stack.baseUrl, member.email, member.password);

    // One after the other: the list, and a request's callbacks, put the older first.
    const first = await owner.call('POST', '/endpoints', {
      json: { url: h.receiver.url('/ep/primary'), events: ['image.completed'], description: 'Primary receiver' },
    });
    const second = await owner.call('POST', '/endpoints', { json: { url: h.receiver.url('/ep/down'), description: 'Analytics (old cluster)' } });
    expect([first.status, second.status]).toEqual([201, 201]);
    primary = { id: first.json.id, url: first.json.url };
    down = { id: second.json.id, url: second.json.url };
    job = await h.jobs.image(h.receiver.url('/own'), 'a lighthouse at dusk');
    // Every destination of the job has its callback: its own, the primary endpoint's, the failing one's.
    await eventually(
      async () => ((await h.callbacks.list(h.workspace.workspaceId, { jobId: job, limit: 20 })).callbacks.length === 3 ? true : undefined),
      30_000,
      'three callbacks',
    );
    await eventually(
      async () =>
        ((await owner.call('GET', '/endpoints')).json.data as { id: string; disabled_reason: string | null }[]).find((e) => e.id === down.id)
          ?.disabled_reason === 'failing' || undefined,
      30_000,
      'the failing endpoint disabled',
    );
    await eventually(
      async () => ((await owner.call('GET', `/endpoints/${down.id}/deliveries`)).json.failed === 1 ? true : undefined),
      30_000,
      'its callback failed',
    );
    await eventually(
      async () => ((await owner.call('GET', `/endpoints/${primary.id}/deliveries`)).json.ended === 1 ? true : undefined),
      30_000,
      'the primary delivered',
    );
  } finally {
    browser = await launching;
  }
});

afterAll(async () => {
  await browser?.close();
  await h?.stop();
});

const cardOf = (page: Page, url: string) => page.locator('[data-testid="endpoint"]', { has: page.getByRole('heading', { name: url, exact: true }) });

/** The workspace's audit events of endpoints, newest first. */
async function endpointAudit(): Promise<{ action: string; actor: { type: string; email?: string }; target: { id: string; [k: string]: unknown } }[]> {
  const res = await owner.call(
    'GET',
    `/audit?action=${['created', 'updated', 'deleted', 'disabled', 'enabled'].map((a) => `webhook_endpoint.${a}`).join(',')}`,
  );
  expect(res.status).toBe(200);
  return res.json.data;
}

async function csrfOf(page: Page): Promise<string> {
  const res = await page.request.get('/dashboard/api/session');
  return ((await res.json()) as { csrf_token: string }).csrf_token;
}

/** A member on the Webhook endpoints page at both widths: the worst endpoint first, in words; no form or button; writes refused. */
async function memberReadsThePage() {
  for (const viewport of [DESKTOP, PHONE]) {
    const { context, page, problems } = await newSession(browser, h.stack.baseUrl, viewport);
    try {
      await signIn(page, member.email, member.password);
      await page.goto('/dashboard/endpoints');
      const cards = page.locator('[data-testid="endpoint"]');
      await cards.nth(2).waitFor();
      expect(await cards.evaluateAll((els) => els.map((el) => el.getAttribute('data-condition')))).toEqual(['disabled_failing', 'turned_off', 'enabled']);
      const headline = await page.getByTestId('endpoints-headline').innerText();
      expect(headline).toContain('1 endpoint disabled because every attempt failed');
      expect(headline).toContain('1 endpoint turned off');
      const status = await cards.nth(0).getByTestId('endpoint-status').innerText();
      expect(status).toMatch(/^Disabled: every attempt failed since .+; last error “?HTTP 503”? .+\. No new event is sent to it until it is enabled again\.$/s);
      expect(await cards.nth(1).getByTestId('endpoint-status').innerText()).toContain('Turned off');
      // Its recent deliveries: the failed callback, with the request it belongs to one click away.
      await cards.nth(0).getByTestId('failure-rate').waitFor();
      expect(await cards.nth(0).getByTestId('failure-rate').innerText()).toContain('100% failed (1 of 1 that ended)');
      await cards.nth(2).getByTestId('failure-rate').waitFor();
      expect(await cards.nth(2).getByTestId('failure-rate').innerText()).toContain('0% failed (0 of 1 that ended)');
      const row = cards.nth(0).locator(`[data-testid="deliveries"] tbody tr[data-state="failed"]`);
      expect(await row.innerText()).toContain('503 Service Unavailable');
      // Read-only: no form, no button but signing out.
      for (const name of ['Add endpoint', 'Edit', 'Disable', 'Enable', 'Delete', 'Send test event'])
        expect(await page.getByRole('button', { name, exact: true }).count()).toBe(0);
      expect(await page.locator('main form, main input, main select').count()).toBe(0);
      await page.getByText('Only owners and admins add, change, test and delete endpoints.').waitFor();
      expect(await page.evaluate('document.documentElement.scrollWidth')).toBeLessThanOrEqual(viewport.width);
      if (viewport === PHONE) await screenshot(page, 'endpoints-390.png', { fullPage: true });

      // Forged with the member's own cookie and CSRF token: refused all the same.
      const token = await csrfOf(page);
      const forged = await page.request.patch(`/dashboard/api/endpoints/${down.id}`, { data: { enabled: true }, headers: { 'x-csrf-token': token } });
      expect(forged.status()).toBe(403);
      expect(((await forged.json()) as { error: { code: string } }).error.code).toBe('permission_denied');

      await row.getByRole('link', { name: job }).click();
      await page.waitForURL(new RegExp(`/dashboard/requests/${job}$`));
      await page.getByTestId('callbacks-summary').waitFor();
      expect(problems.errors).toEqual([]);
    } finally {
      await context.close();
    }
  }
}

describe('the endpoints API of the dashboard', () => {
  it('lists endpoints to every role, with what this member may do, and their deliveries with a failure rate', async () => {
    const asMember = await memberClient.call('GET', '/endpoints');
    expect(asMember.status).toBe(200);
    expect(asMember.json).toMatchObject({
      event_types: ['video.completed', 'video.failed', 'image.completed', 'image.failed'],
      max_endpoints: 10,
      can_manage: false,
    });
    expect(asMember.json.data.map((e: { id: string }) => e.id).sort()).toEqual([primary.id, down.id].sort());
    expect((await adminClient.call('GET', '/endpoints')).json.can_manage).toBe(true);
    expect((await owner.call('GET', '/endpoints')).json.can_manage).toBe(true);

    const failing = asMember.json.data.find((e: { id: string }) => e.id === down.id);
    expect(failing).toMatchObject({
      object: 'webhook_endpoint',
      enabled: false,
      disabled_reason: 'failing',
      failing_since: expect.any(Number),
      last_error: { message: expect.stringContaining('HTTP 503'), at: expect.any(Number) },
    });

    const deliveries = await memberClient.call('GET', `/endpoints/${down.id}/deliveries`);
    expect(deliveries.status).toBe(200);
    expect(deliveries.json).toMatchObject({ endpoint_id: down.id, limit: 20, ended: 1, failed: 1, failure_rate: 1, pending: 0, failing: 0, has_more: false });
    expect(deliveries.json.data).toEqual([
      expect.objectContaining({
        endpoint_id: down.id,
        job_id: job,
        status: 'failed',
        attempt_count: 6,
        last_attempt: expect.objectContaining({ result: '503 Service Unavailable', status_code: 503 }),
      }),
    ]);
    const ok = (await memberClient.call('GET', `/endpoints/${primary.id}/deliveries`)).json;
    expect(ok).toMatchObject({ ended: 1, failed: 0, failure_rate: 0 });
    expect(ok.data[0]).toMatchObject({ status: 'delivered', job_id: job, type: 'image.completed', last_attempt: { result: '200 OK' } });
  });

  it('refuses a member every change with 403, and a change without the CSRF token with 403 csrf_failed', async () => {
    const writes: [string, string, unknown][] = [
      ['POST', '/endpoints', { url: h.receiver.url('/ep/ui/member') }],
      ['PATCH', `/endpoints/${primary.id}`, { enabled: false }],
      ['DELETE', `/endpoints/${primary.id}`, undefined],
      ['POST', `/endpoints/${primary.id}/test`, {}],
    ];
    for (const [method, path, json] of writes) {
      expectApiError(await memberClient.call(method, path, { json }), 403, { type: 'permission_error', code: 'permission_denied' });
      expectApiError(await owner.call(method, path, { json, csrf: null }), 403, { code: 'csrf_failed' });
      expectApiError(await owner.call(method, path, { json, csrf: 'not-the-token' }), 403, { code: 'csrf_failed' });
      expectApiError(await new DashboardClient(h.stack.baseUrl).call(method, path, { json }), 401, { code: 'not_signed_in' });
    }
    // Nothing changed: the primary endpoint is on, and nobody's change was recorded.
    expect((await owner.call('GET', '/endpoints')).json.data.find((e: { id: string }) => e.id === primary.id).enabled).toBe(true);
    expect((await endpointAudit()).filter((e) => e.actor.type === 'member' && e.actor.email === member.email)).toEqual([]);
    expect(h.receiver.requestsUnder('/ep/ui/member')).toEqual([]);
  });

  it('answers a wrong change as the API does, and 404 for another workspace’s endpoint', async () => {
    expectApiError(await owner.call('POST', '/endpoints', { json: { url: 'https://10.1.2.3/hook' } }), 400, { code: 'invalid_callback_url', param: 'url' });
    expectApiError(await owner.call('POST', '/endpoints', { json: { events: ['image.completed'] } }), 400, {
      code: 'missing_required_parameter',
      param: 'url',
    });
    expectApiError(await owner.call('POST', '/endpoints', { json: { url: h.receiver.url('/ep/ui/x'), secret: 'x' } }), 400, {
      code: 'unknown_parameter',
      param: 'secret',
    });
    expectApiError(await owner.call('PATCH', `/endpoints/${primary.id}`, { json: { events: [] } }), 400, { code: 'invalid_value', param: 'events' });
    expectApiError(await owner.call('PATCH', `/endpoints/${primary.id}`, { json: { events: ['image.exploded'] } }), 400, { param: 'events' });
    expectApiError(await owner.call('POST', `/endpoints/${primary.id}/test`, { json: { type: 'image.exploded' } }), 400, { param: 'type' });
    expectApiError(await owner.call('PATCH', '/endpoints/we_missing', { json: { enabled: true } }), 404, { type: 'not_found_error' });

    const other = await h.stack.createWorkspace('elsewhere');
    const stranger = await DashboardClient.signedIn(h.stack.baseUrl, other.owner.email, other.owner.password);
    expect((await stranger.call('GET', '/endpoints')).json.data).toEqual([]);
    expectApiError(await stranger.call('GET', `/endpoints/${primary.id}/deliveries`), 404, { type: 'not_found_error' });
    expectApiError(await stranger.call('PATCH', `/endpoints/${primary.id}`, { json: { enabled: false } }), 404, { type: 'not_found_error' });
    expectApiError(await stranger.call('DELETE', `/endpoints/${primary.id}`), 404, { type: 'not_found_error' });
    expectApiError(await stranger.call('POST', `/endpoints/${primary.id}/test`), 404, { type: 'not_found_error' });
  });

  it('lists every callback of a request: its own callback_url’s first, then each endpoint’s, each naming its endpoint', async () => {
    const detail = await memberClient.call('GET', `/requests/${job}`);
    expect(detail.status).toBe(200);
    const callbacks = detail.json.callbacks as {
      callback: { endpoint_id: string | null; url: string; status: string; attempts: unknown[] };
      endpoint: { id: string } | null;
    }[];
    expect(callbacks.map((c) => [c.callback.endpoint_id, c.endpoint?.id ?? null, c.callback.status])).toEqual([
      [null, null, 'delivered'],
      [primary.id, primary.id, 'delivered'],
      [down.id, down.id, 'failed'],
    ]);
    expect(callbacks.map((c) => c.callback.url)).toEqual([h.receiver.url('/own'), primary.url, down.url]);
    expect(callbacks[1]!.endpoint).toEqual({ id: primary.id, url: primary.url, description: 'Primary receiver', enabled: true });
    expect(callbacks[2]!.callback.attempts).toHaveLength(6);
    // The Requests list keeps one row per request, with its own callback.
    const list = await memberClient.call('GET', '/requests?callback_status=delivered');
    expect(list.json.data.filter((r: { id: string }) => r.id === job)).toHaveLength(1);
    expect(list.json.data.find((r: { id: string }) => r.id === job).callback.endpoint_id).toBeNull();
    expect((await memberClient.call('GET', '/requests?callback_status=failed')).json.data.map((r: { id: string }) => r.id)).not.toContain(job);
  });
});

describe('the Webhook endpoints page in a real browser', () => {
  it.each([
    ['1280 px', DESKTOP],
    ['390 px', PHONE],
  ])('at %s an admin adds an endpoint, changes its events, tests it, turns it off and on and deletes it; each change is audited', async (_label, viewport) => {
    const { context, page, problems } = await newSession(browser, h.stack.baseUrl, viewport);
    const path = `/ep/ui/${viewport.width}`;
    const url = h.receiver.url(path);
    try {
      await signIn(page, admin.email, admin.password);
      await page.getByRole('navigation', { name: 'Sections' }).getByRole('link', { name: 'Endpoints' }).click();
      await page.getByRole('heading', { name: 'Webhook endpoints' }).waitFor();
      await cardOf(page, down.url).waitFor();

      // Add: every event is ticked to begin with; the video ones are unticked.
      const add = page.getByRole('region', { name: 'Add an endpoint' });
      await add.getByLabel('URL').fill(url);
      await add.getByRole('checkbox', { name: 'video.completed' }).uncheck();
      await add.getByRole('checkbox', { name: 'video.failed' }).uncheck();
      await add.getByLabel('Description (optional)').fill(HOSTILE_DESCRIPTION);
      await add.getByRole('button', { name: 'Add endpoint' }).click();
      const card = cardOf(page, url);
      await card.waitFor();
      expect(await card.locator('.chip').allTextContents()).toEqual(['image.completed', 'image.failed']);
      // The description is text: no element came of it.
      expect(await card.locator('.endpoint-desc').textContent()).toBe(HOSTILE_DESCRIPTION);
      expect(await page.locator('main i, main img').count()).toBe(0);
      expect(await add.getByLabel('URL').inputValue()).toBe('');
      const id = await card.getAttribute('data-id');
      expect(id).toMatch(/^we_/);

      // Change its events in place.
      await card.getByRole('button', { name: 'Edit', exact: true }).click();
      expect(await card.getByLabel('URL').inputValue()).toBe(url);
      await card.getByRole('checkbox', { name: 'image.failed' }).uncheck();
      await card.getByRole('button', { name: 'Save changes' }).click();
      await card.getByRole('button', { name: 'Edit', exact: true }).waitFor();
      await eventually(async () => ((await card.locator('.chip').count()) === 1 ? true : undefined), 5_000, 'one event left');
      expect(await card.locator('.chip').allTextContents()).toEqual(['image.completed']);

      // A signed test event, and the receiver's answer shown as text.
      await card.getByRole('button', { name: 'Send test event' }).click();
      const result = card.getByTestId('test-result');
      await result.waitFor({ timeout: 30_000 });
      expect(await result.innerText()).toContain('HTTP 200');
      expect(await result.locator('pre.excerpt').textContent()).toBe(HOSTILE_ANSWER);
      expect(await result.locator('b, script').count()).toBe(0);
      expect(await page.evaluate(() => (globalThis as unknown as { __pwned?: number }).__pwned)).toBeUndefined();
      const [sent] = h.receiver.requestsTo(path);
      const secret = (await owner.call('POST', '/secrets/reveal')).json.current;
      const payload = new Webhook(secret).verify(sent!.body, sent!.headers) as { type: string };
      expect(payload.type).toBe('image.completed');
      expect(await result.innerText()).toContain(sent!.headers['webhook-id']!);

      // Off after asking in place; on again in one click.
      await card.getByRole('button', { name: 'Disable', exact: true }).click();
      expect(await card.getAttribute('data-condition')).toBe('enabled');
      await card.getByRole('button', { name: 'Disable now' }).click();
      await page.locator(`[data-testid="endpoint"][data-id="${id}"][data-condition="turned_off"]`).waitFor();
      expect(await card.getByTestId('endpoint-status').innerText()).toContain('Turned off');
      await card.getByRole('button', { name: 'Enable', exact: true }).click();
      await page.locator(`[data-testid="endpoint"][data-id="${id}"][data-condition="enabled"]`).waitFor();

      expect(await page.evaluate('document.documentElement.scrollWidth')).toBeLessThanOrEqual(viewport.width);
      await screenshot(page, `endpoints-flow-${viewport.width}.png`, { fullPage: true });

      await card.getByRole('button', { name: 'Delete', exact: true }).click();
      await card.getByRole('button', { name: 'Delete now' }).click();
      await card.waitFor({ state: 'detached' });
      expect((await owner.call('GET', '/endpoints')).json.data.map((e: { id: string }) => e.id)).not.toContain(id);

      // Every change, newest first, made by the admin, naming the endpoint; the test event is no change.
      const audited = (await endpointAudit()).filter((e) => e.target.id === id);
      expect(audited.map((e) => e.action)).toEqual([
        'webhook_endpoint.deleted',
        'webhook_endpoint.enabled',
        'webhook_endpoint.disabled',
        'webhook_endpoint.updated',
        'webhook_endpoint.created',
      ]);
      for (const e of audited) expect(e.actor).toEqual({ type: 'member', email: admin.email });
      expect(audited[3]!.target).toMatchObject({ changed: ['events'], events: ['image.completed'] });
      expect(problems.errors).toEqual([]);
    } finally {
      await context.close();
    }
  });

  it('heads the page with the disabled endpoint, in red, with since when and its last error; a member sees no form or button', async () => {
    // A third endpoint, turned off by hand, beside the healthy and the disabled ones.
    const off = await owner.call('POST', '/endpoints', {
      json: { url: h.receiver.url('/ep/ui/paused'), events: ['video.completed'], description: 'Staging mirror' },
    });
    expect((await owner.call('PATCH', `/endpoints/${off.json.id}`, { json: { enabled: false } })).status).toBe(200);
    try {
      await memberReadsThePage();
    } finally {
      expect((await owner.call('DELETE', `/endpoints/${off.json.id}`)).status).toBe(204);
    }
  });

  it('refuses a forged change without the CSRF token from a signed-in owner’s browser', async () => {
    const { context, page } = await newSession(browser, h.stack.baseUrl);
    try {
      await signIn(page, h.workspace.owner.email, h.workspace.owner.password);
      for (const forged of [
        await page.request.post('/dashboard/api/endpoints', { data: { url: h.receiver.url('/ep/ui/forged') } }),
        await page.request.patch(`/dashboard/api/endpoints/${down.id}`, { data: { enabled: true } }),
        await page.request.delete(`/dashboard/api/endpoints/${primary.id}`),
        await page.request.post(`/dashboard/api/endpoints/${primary.id}/test`, { data: {} }),
      ]) {
        expect(forged.status()).toBe(403);
        expect(((await forged.json()) as { error: { code: string } }).error.code).toBe('csrf_failed');
      }
      const listed = (await owner.call('GET', '/endpoints')).json.data as { id: string; enabled: boolean }[];
      expect(listed.map((e) => [e.id, e.enabled]).sort()).toEqual(
        [
          [primary.id, true],
          [down.id, false],
        ].sort(),
      );
    } finally {
      await context.close();
    }
  });

  it('shows the owner the page and enables the disabled endpoint in one click', async () => {
    const { context, page, problems } = await newSession(browser, h.stack.baseUrl);
    try {
      await signIn(page, h.workspace.owner.email, h.workspace.owner.password);
      await page.goto('/dashboard/endpoints');
      const disabled = page.locator(`[data-testid="endpoint"][data-id="${down.id}"]`);
      await disabled.getByTestId('failure-rate').waitFor();
      await page.locator(`[data-testid="endpoint"][data-id="${primary.id}"]`).getByTestId('failure-rate').waitFor();
      await screenshot(page, 'endpoints.png', { fullPage: true });
      await disabled.getByRole('button', { name: 'Enable', exact: true }).click();
      await page.locator(`[data-testid="endpoint"][data-id="${down.id}"][data-condition="enabled"]`).waitFor();
      expect((await endpointAudit())[0]).toMatchObject({
        action: 'webhook_endpoint.enabled',
        actor: { type: 'member', email: h.workspace.owner.email },
        target: { id: down.id },
      });
      expect(problems.errors).toEqual([]);
    } finally {
      await context.close();
    }
  });
});

describe('the request page in a real browser', () => {
  it.each([
    ['1280 px', DESKTOP],
    ['390 px', PHONE],
  ])('at %s lists every callback of the request, each with where it went', async (_label, viewport) => {
    const { context, page, problems } = await newSession(browser, h.stack.baseUrl, viewport);
    try {
      await signIn(page, h.workspace.owner.email, h.workspace.owner.password);
      await page.goto(`/dashboard/requests/${job}`);
      const summary = page.getByTestId('callbacks-summary');
      await summary.waitFor();
      expect(await summary.locator('tbody tr').count()).toBe(3);
      const cards = page.locator('[data-testid="callback"]');
      expect(await cards.count()).toBe(3);
      expect(await cards.nth(0).getByTestId('callback-endpoint').innerText()).toBe('The request’s own callback_url');
      expect(await cards.nth(1).getByTestId('callback-endpoint').innerText()).toContain(`${primary.id} · Primary receiver`);
      expect(await cards.nth(2).getByTestId('callback-endpoint').innerText()).toContain(`${down.id} · Analytics (old cluster)`);
      expect(await cards.nth(2).locator('tr.attempt').count()).toBe(6);
      expect(await cards.nth(0).getByRole('heading', { level: 2 }).innerText()).toContain('The request’s callback_url');
      expect(await cards.nth(1).getByRole('heading', { level: 2 }).innerText()).toContain('Endpoint Primary receiver');
      for (let i = 0; i < 3; i++) await cards.nth(i).getByRole('button', { name: 'Retry callback' }).waitFor();
      expect(await page.evaluate('document.documentElement.scrollWidth')).toBeLessThanOrEqual(viewport.width);
      await screenshot(page, viewport === DESKTOP ? 'request-detail-endpoints.png' : 'request-detail-endpoints-390.png', { fullPage: true });
      expect(problems.errors).toEqual([]);
    } finally {
      await context.close();
    }
  });
});
