// Every page of the dashboard, with real data that strains a layout (callback URLs of 300 characters,
// failing callbacks with long answers, a dozen API keys, members with long e-mails), in real
// Chromium at a phone's width (390 px) and a laptop's (1280 px). Nothing may make the page, a table
// or a cell scroll sideways or spill out of its box; a value may be cut short only with an ellipsis
// and its whole text in a title (on hover, and what a copy takes). Screenshots of each page go
// where the other browser tests put theirs.
import type { Browser, Page } from 'playwright-core';
import { DispatcherHarness } from '../dispatcher/support/harness';
import { DashboardClient } from './support/api-client';
import { DESKTOP, launchChromium, newSession, PHONE, screenshot, signIn } from './support/browser';

jest.setTimeout(180_000);

const LONG_PATH = `/hooks/${'integration-platform-segment/'.repeat(8)}catch?token=${'k'.repeat(96)}&workspace=acme-corporation-production`;
const FAILING_PATH = `/failing/${'x'.repeat(120)}`;

let h: DispatcherHarness;
let browser: Browser;
let failingJob: string;

beforeAll(async () => {
  // Chromium starts while the stack and its data are made: neither needs the other.
  const launching = launchChromium();
  try {
    h = await DispatcherHarness.start({ WEBHOOK_RETRY_SCHEDULE: '1s,10m,10m,10m,10m' }, { inProcess: true });
    h.receiver.script(FAILING_PATH, () => ({ status: 503, body: `upstream ${'unavailable '.repeat(40)}` }));
    const jobs = await Promise.all([
      h.jobs.image(h.receiver.url(LONG_PATH), `a ${'very '.repeat(60)}long prompt about a lighthouse`),
      h.jobs.image(h.receiver.url(FAILING_PATH), 'a failing one'),
      h.jobs.video(h.receiver.url(LONG_PATH), 'waves on a beach'),
    ]);
    failingJob = jobs[1]!;
    // The keys and members are made while the failing callback waits for its second attempt.
    const owner = await DashboardClient.signedIn(h.stack.baseUrl, h.workspace.owner.email, h.workspace.owner.password);
    const made = await Promise.all([
      // Subscribed to an event none of these jobs ends with: the other pages' data stays as it was.
      owner.call('POST', '/endpoints', {
        json: { url: h.receiver.url(LONG_PATH), events: ['video.failed'], description: `The ${'integration platform '.repeat(12)}receiver` },
      }),
      ...Array.from({ length: 12 }, () => owner.call('POST', '/keys')),
      ...['admin', 'member', 'member'].map((role) => {
        const email = `${role}.with.a.rather.long.name.${Math.random().toString(36).slice(2)}@subsidiary.example-enterprise.com`;
        return owner.call('POST', '/members', { json: { email, role } });
      }),
    ]);
    expect(made.map((res) => res.status)).toEqual(Array(16).fill(201));
    await h.attempts(await h.messageIdOf(failingJob), 2);
    await h.settled(await h.messageIdOf(jobs[0]!), ['delivered']);
  } finally {
    browser = await launching;
  }
});

afterAll(async () => {
  await browser?.close();
  await h?.stop();
});

interface Offender {
  what: string;
  tag: string;
  text: string;
  box: string;
}

/**
 * What of the page's content is off its width, scrolls sideways, or spills out of its box (in the
 * page's main part and its header); a box cut short with an ellipsis and a title is on purpose. Run
 * in the page (its text, as the test's own TypeScript has no DOM types).
 */
const FIND_OFFENDERS = `(viewport) => {
  const found = [];
  const describe = (el, what) => {
    const r = el.getBoundingClientRect();
    found.push({
      what,
      tag: el.tagName.toLowerCase() + (typeof el.className === 'string' && el.className ? '.' + el.className.split(' ').join('.') : ''),
      text: (el.textContent || '').trim().slice(0, 60),
      box: Math.round(r.left) + '..' + Math.round(r.right) + ' (scroll ' + el.scrollWidth + ' / client ' + el.clientWidth + ')',
    });
  };
  // Clipped to nothing on purpose (for screen readers only: the sr-only pattern, a stacked table's head).
  const visuallyHidden = (el) => {
    for (let a = el; a; a = a.parentElement) if (getComputedStyle(a).clip !== 'auto') return true;
    return false;
  };
  if (document.documentElement.scrollWidth > viewport) describe(document.documentElement, 'page scrolls sideways');
  for (const el of document.querySelectorAll('header *, main *')) {
    if (el.closest('svg') || !el.checkVisibility() || visuallyHidden(el)) continue;
    const style = getComputedStyle(el);
    const r = el.getBoundingClientRect();
    if (r.width === 0 || r.height === 0) continue;
    if (r.right > viewport + 1 || r.left < -1) {
      describe(el, 'off the page');
      continue;
    }
    if (style.display === 'inline' || el.scrollWidth <= el.clientWidth + 1) continue;
    const onPurpose = style.textOverflow === 'ellipsis' && el.hasAttribute('title');
    if (!onPurpose) describe(el, style.overflowX === 'visible' ? 'spills out of its box' : 'cut or scrolls sideways');
  }
  return found;
}`;

const offenders = (page: Page, width: number) => page.evaluate<Offender[]>(`(${FIND_OFFENDERS})(${width})`);

/** Every value cut short with an ellipsis: its title and its text. */
const CUT_VALUES = `[...document.querySelectorAll('main *')]
  .filter((el) => getComputedStyle(el).textOverflow === 'ellipsis' && el.scrollWidth > el.clientWidth + 1)
  .map((el) => ({ title: el.getAttribute('title') || '', text: (el.textContent || '').trim() }))`;

const PAGES = [
  ['Overview', '/dashboard/overview'],
  ['Requests', '/dashboard/requests'],
  ['Request detail', () => `/dashboard/requests/${failingJob}`],
  ['Webhook endpoints', '/dashboard/endpoints'],
  ['API keys', '/dashboard/keys'],
  ['Usage', '/dashboard/usage'],
  ['Members', '/dashboard/members'],
] as const;

describe.each([
  ['390 px', PHONE],
  ['1280 px', DESKTOP],
])('at %s', (_label, viewport) => {
  let session: Awaited<ReturnType<typeof newSession>>;

  beforeAll(async () => {
    session = await newSession(browser, h.stack.baseUrl, viewport);
    await signIn(session.page, h.workspace.owner.email, h.workspace.owner.password);
  });

  afterAll(async () => {
    await session?.context.close();
  });

  it.each(PAGES)('%s fits, without sideways scrolling or clipped values', async (name, path) => {
    const { page } = session;
    await page.goto(typeof path === 'function' ? path() : path);
    await page.locator('main h1').waitFor();
    // Loaded: no "Loading…" left, and the data in (a table's rows, or the page's own content).
    // Through a locator (Playwright's own world), not a predicate evaluated in the page, which
    // the dashboard's Content-Security-Policy (no 'unsafe-eval') refuses once it has to poll.
    await page
      .getByText(/Loading/)
      .filter({ visible: true })
      .first()
      .waitFor({ state: 'hidden' });
    await page.waitForLoadState('networkidle');
    // What is folded away (the numbers behind a chart, the raw JSON) must fit too, once opened.
    await page.evaluate(`document.querySelectorAll('main details').forEach((d) => { d.open = true; })`);
    const found = await offenders(page, viewport.width);
    await screenshot(page, `layout-${name.toLowerCase().replace(/ /g, '-')}-${viewport.width}.png`, { fullPage: true });
    expect(found).toEqual([]);
    expect(session.problems.errors).toEqual([]);
  });

  it('shows ids and URLs cut short whole on hover', async () => {
    const { page } = session;
    await page.goto('/dashboard/requests');
    await page.locator('tbody tr').first().waitFor();
    // Every value cut short with an ellipsis carries its whole text in its title.
    const cut = await page.evaluate<{ title: string; text: string }[]>(CUT_VALUES);
    // At a laptop's width the long callback URL is one of them; on a phone's cards values wrap instead.
    if (viewport === DESKTOP) expect(cut.length).toBeGreaterThan(0);
    for (const { title, text } of cut) expect(title).toContain(text);
  });
});
