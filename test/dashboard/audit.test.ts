// The dashboard's Audit page and its API, on a real gateway (in-process) and Redis, in real
// Chromium at 1280 and 390 px: owners and admins read who changed what (members are refused, and
// have no link to it), the filter keeps one action, and what a member typed is shown as text.
import type { Browser } from 'playwright-core';
import { expectApiError } from '../support/http';
import { TestStack, type TestWorkspace } from '../support/stack';
import { DashboardClient } from './support/api-client';
import { launchChromium, newSession, PHONE, screenshot, signIn } from './support/browser';

jest.setTimeout(120_000);

let stack: TestStack;
let ws: TestWorkspace;
let browser: Browser;
let owner: DashboardClient;
const member = { email: '', password: '' };
const admin = { email: '', password: '' };
/** An address that would be markup if it were rendered as HTML. */
const ODD_EMAIL = '<b>bold</b>@example.com';

beforeAll(async () => {
  const launching = launchChromium();
  stack = await TestStack.start(['api-gateway'], {}, { inProcess: true });
  ws = await stack.createWorkspace('audit-page');
  owner = await DashboardClient.signedIn(stack.baseUrl, ws.owner.email, ws.owner.password);
  for (const [who, role] of [
    [member, 'member'],
    [admin, 'admin'],
  ] as const) {
    const made = await owner.call('POST', '/members', { json: { email: `${role}@audit-page.test`, role } });
    expect(made.status).toBe(201);
    Object.assign(who, { email: made.json.email, password: made.json.password });
  }
  expect((await owner.call('POST', '/keys')).status).toBe(201);
  expect((await owner.call('POST', '/members', { json: { email: ODD_EMAIL, role: 'member' } })).status).toBe(201);
  browser = await launching;
});

afterAll(async () => {
  await browser?.close();
  await stack?.stop();
});

describe('GET /dashboard/api/audit', () => {
  it('lists the changes newest first for owners and admins, and refuses members', async () => {
    const page = await owner.call('GET', '/audit');
    expect(page.status).toBe(200);
    expect(page.json.data.map((e: { action: string }) => e.action)).toEqual([
      'member.added',
      'api_key.created',
      'member.added',
      'member.added',
      'workspace.created',
    ]);
    expect(page.json.data[0].actor).toEqual({ type: 'member', email: ws.owner.email });
    expect(page.json.actions).toContain('signing_secret.rotated');
    const asAdmin = await DashboardClient.signedIn(stack.baseUrl, admin.email, admin.password);
    expect((await asAdmin.call('GET', '/audit?action=api_key.created')).json.data).toHaveLength(1);
    const asMember = await DashboardClient.signedIn(stack.baseUrl, member.email, member.password);
    expectApiError(await asMember.call('GET', '/audit'), 403, { type: 'permission_error' });
    expectApiError(await owner.call('GET', '/audit?action=key.stolen'), 400, { param: 'action' });
    expectApiError(await owner.call('GET', '/audit?after=aud_nope'), 400, { param: 'after' });
    expectApiError(await new DashboardClient(stack.baseUrl).call('GET', '/audit'), 401);
  });
});

describe('the Audit page in a real browser', () => {
  it('shows who changed what, filters by action, and shows a typed address as text, at 1280 px', async () => {
    const { context, page, problems } = await newSession(browser, stack.baseUrl);
    try {
      await signIn(page, ws.owner.email, ws.owner.password);
      await page.getByRole('navigation', { name: 'Sections' }).getByRole('link', { name: 'Audit' }).click();
      await page.getByRole('heading', { name: 'Audit' }).waitFor();
      const rows = page.locator('[data-testid="audit-table"] tbody tr');
      await rows.first().waitFor();
      expect(await rows.count()).toBe(5);
      const first = (await rows.first().innerText()).replace(/\s+/g, ' ');
      expect(first).toContain(ws.owner.email);
      expect(first).toContain('Member added');
      expect(first).toContain(ODD_EMAIL);
      // The address is text: no <b> element came of it.
      expect(await page.locator('[data-testid="audit-table"] b').count()).toBe(0);
      await page.getByLabel('Action').selectOption('api_key.created');
      await page.locator('[data-testid="audit-table"] tbody tr[data-action="workspace.created"]').waitFor({ state: 'detached' });
      expect(await page.locator('[data-testid="audit-table"] tbody tr').count()).toBe(1);
      expect(await page.locator('[data-testid="audit-table"] tbody tr').first().getAttribute('data-action')).toBe('api_key.created');
      await page.getByLabel('Action').selectOption('');
      await page.locator('[data-testid="audit-table"] tbody tr[data-action="workspace.created"]').waitFor();
      await screenshot(page, 'audit.png', { fullPage: true });
      expect(problems.errors).toEqual([]);
    } finally {
      await context.close();
    }
  });

  it('fits a 390 px screen, and a member has no link to it and is told so at its address', async () => {
    const phone = await newSession(browser, stack.baseUrl, PHONE);
    try {
      await signIn(phone.page, admin.email, admin.password);
      await phone.page.goto('/dashboard/audit');
      await phone.page.locator('[data-testid="audit-table"] tbody tr').first().waitFor();
      await screenshot(phone.page, 'audit-390.png', { fullPage: true });
      expect(await phone.page.evaluate('document.documentElement.scrollWidth')).toBeLessThanOrEqual(PHONE.width);
      expect(phone.problems.errors).toEqual([]);
    } finally {
      await phone.context.close();
    }
    const { context, page } = await newSession(browser, stack.baseUrl);
    try {
      await signIn(page, member.email, member.password);
      expect(await page.getByRole('navigation', { name: 'Sections' }).getByRole('link', { name: 'Audit' }).count()).toBe(0);
      await page.goto('/dashboard/audit');
      await page.getByText('may not do this').waitFor();
    } finally {
      await context.close();
    }
  });
});
