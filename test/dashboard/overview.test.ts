import type { Browser, Page } from 'playwright-core';
import { destinationOf } from '@media/callbacks';
import { eventually } from '../support/stack';
import { expectApiError } from '../support/http';
import { DispatcherHarness } from '../dispatcher/support/harness';
import { TestReceiver } from '../dispatcher/support/receiver';
import { DashboardClient } from './support/api-client';
import { launchChromium, newSession, PHONE, screenshot, signIn, type PageProblems } from './support/browser';

/**
 * The Overview against the real stack, after a scripted history: callbacks delivered at once,
 * callbacks delivered during a slow spell of the receiver (over a second each), and callbacks to a
 * second receiver (another origin) that answers 503 until each has used up its ladder. The page's
 * numbers, read from its text (tiles, the tables behind the charts), must be that history; the
 * JSON API must say the same; and retrying the failing destination from the page must send each of
 * its failed callbacks once more.
 */
jest.setTimeout(180_000);

const FAST = 6;
const SLOW = 2;
const SLOW_MS = 1_200;
const FAILING = 3;
/** A job that fails (moderation), whose `image.failed` callback is delivered at once. */
const FAILED_JOBS = 1;

let h: DispatcherHarness;
let down: TestReceiver;
let downOrigin: string;
let browser: Browser;
let owner: DashboardClient;
let badJobs: string[] = [];
let charged = 0;
/** The dates (UTC) on which the scripted jobs ended: one, or two when the history straddles midnight. */
let workDays: string[] = [];

beforeAll(async () => {
  h = await DispatcherHarness.start({ WEBHOOK_RETRY_SCHEDULE: '150ms,150ms,150ms,150ms,150ms' }, { inProcess: true });
  down = await TestReceiver.start(h.pki);
  down.script('/hooks', () => ({ status: 503, body: 'maintenance' }));
  downOrigin = destinationOf(down.url('/hooks')).origin;
  h.receiver.script('/slow', () => ({ status: 200, body: 'ok', afterMs: SLOW_MS }));
  browser = await launchChromium();

  const firstDay = today();
  const fast = await Promise.all(Array.from({ length: FAST }, (_, i) => h.jobs.image(h.receiver.url('/ok'), `a calm sea ${i}`)));
  const failedJob = await h.jobs.image(h.receiver.url('/ok'), 'something forbidden');
  const slow = await Promise.all(Array.from({ length: SLOW }, (_, i) => h.jobs.image(h.receiver.url('/slow'), `a slow boat ${i}`)));
  badJobs = await Promise.all(Array.from({ length: FAILING }, (_, i) => h.jobs.image(down.url('/hooks'), `a closed door ${i}`)));
  for (const id of [...fast, failedJob, ...slow]) await h.settled(await h.messageIdOf(id), ['delivered']);
  for (const id of badJobs) await h.settled(await h.messageIdOf(id), ['failed']);
  // Added up in micro-dollars, as the server does: binary fractions would round differently.
  let micros = 0;
  for (const id of [...fast, ...slow, ...badJobs]) micros += Math.round(((await h.jobs.get(id)).cost as number) * 1e6);
  charged = micros / 1e6;
  workDays = [...new Set([firstDay, today()])];
  owner = await DashboardClient.signedIn(h.stack.baseUrl, h.workspace.owner.email, h.workspace.owner.password);
});

afterAll(async () => {
  await browser?.close();
  await down?.stop();
  await h?.stop();
});

const DELIVERED = FAST + SLOW + FAILED_JOBS;
const CALLBACKS = DELIVERED + FAILING;
const ATTEMPTS = DELIVERED + 6 * FAILING;
const today = () => new Date().toISOString().slice(0, 10);

describe('GET /dashboard/api/overview', () => {
  it('gives the history as the aggregates counted it, over each window', async () => {
    for (const window of ['1h', '24h', '7d'] as const) {
      const res = await owner.call('GET', `/overview?window=${window}`);
      expect(res.status).toBe(200);
      const overview = res.json;
      expect(overview.window).toBe(window);
      expect(overview.step_seconds).toBe({ '1h': 60, '24h': 900, '7d': 3600 }[window]);
      expect(overview.series).toHaveLength({ '1h': 60, '24h': 96, '7d': 168 }[window]);
      expect(overview.totals).toMatchObject({
        created: CALLBACKS,
        delivered: DELIVERED,
        failed: FAILING,
        recovered: 0,
        pending: 0,
        attempts: ATTEMPTS,
        failed_attempts: 6 * FAILING,
        first_attempts: CALLBACKS,
        first_attempts_delivered: DELIVERED,
      });
      expect(overview.totals.first_attempt_success_rate).toBeCloseTo(DELIVERED / CALLBACKS, 5);
      // The slow spell is the top 2 of 9 deliveries: p95 lies in the histogram's 1 s-2.5 s bucket, p50 well below it.
      expect(overview.totals.latency_p95_ms).toBeGreaterThan(1_000);
      expect(overview.totals.latency_p95_ms).toBeLessThanOrEqual(2_500);
      expect(overview.totals.latency_p50_ms).toBeLessThan(1_000);
      expect(overview.destinations).toEqual([
        { origin: downOrigin, failed_attempts: 6 * FAILING, last_failure_at: expect.any(Number), last_error: 'http_error', last_status: 503 },
      ]);
      const sum = (key: string) => overview.series.reduce((n: number, p: Record<string, number>) => n + p[key]!, 0);
      expect([sum('created'), sum('delivered'), sum('failed'), sum('attempts')]).toEqual([CALLBACKS, DELIVERED, FAILING, ATTEMPTS]);
      expect(overview.days).toHaveLength(7);
      const days = overview.days.filter((d: { date: string }) => workDays.includes(d.date));
      const total = (key: string) => days.reduce((n: number, d: Record<string, number>) => n + d[key]!, 0);
      expect(days.map((d: { date: string }) => d.date)).toEqual(workDays);
      expect([total('jobs_completed'), total('jobs_failed')]).toEqual([FAST + SLOW + FAILING, FAILED_JOBS]);
      expect(total('charged')).toBeCloseTo(charged, 6);
    }
  });

  it('refuses an unknown window, and a destination that is not an origin', async () => {
    expectApiError(await owner.call('GET', '/overview?window=2h'), 400, { code: 'invalid_value', param: 'window' });
    expectApiError(await owner.call('GET', `/callbacks/recover?destination=${encodeURIComponent(down.url('/hooks'))}`), 400, { param: 'destination' });
    expectApiError(await owner.call('GET', '/callbacks/recover'), 400, { param: 'destination' });
    expectApiError(await owner.call('GET', '/requests?destination=ftp%3A%2F%2Fx'), 400, { param: 'destination' });
  });

  it('lists the requests whose callback went to a destination, and counts its failed callbacks before a retry', async () => {
    const res = await owner.call('GET', `/requests?destination=${encodeURIComponent(downOrigin)}`);
    expect(res.status).toBe(200);
    expect(new Set(res.json.data.map((r: { id: string }) => r.id))).toEqual(new Set(badJobs));
    const failedOnly = await owner.call('GET', `/requests?destination=${encodeURIComponent(downOrigin)}&callback_status=delivered`);
    expect(failedOnly.json.data).toEqual([]);
    // The origin may be given without its default port too; this one names its port.
    const preview = await owner.call('GET', `/callbacks/recover?destination=${encodeURIComponent(downOrigin)}`);
    expect(preview.json).toEqual({ destination: downOrigin, count: FAILING, rate_per_second: 5 });
    // Another workspace sees none of it.
    const other = await h.stack.createWorkspace('other');
    const stranger = await DashboardClient.signedIn(h.stack.baseUrl, other.owner.email, other.owner.password);
    expect((await stranger.call('GET', `/callbacks/recover?destination=${encodeURIComponent(downOrigin)}`)).json.count).toBe(0);
    expect((await stranger.call('GET', '/overview')).json.totals).toMatchObject({ created: 0, attempts: 0 });
  });
});

describe('the Overview page in a real browser', () => {
  let page: Page;
  let problems: PageProblems;

  beforeAll(async () => {
    ({ page, problems } = await newSession(browser, h.stack.baseUrl));
  });

  it('is the page after sign-in, first in the navigation', async () => {
    await signIn(page, h.workspace.owner.email, h.workspace.owner.password);
    await page.waitForURL(/\/dashboard\/overview$/);
    await page.getByRole('heading', { name: 'Overview' }).waitFor();
    const nav = page.getByRole('navigation', { name: 'Sections' }).getByRole('link');
    expect(await nav.first().textContent()).toBe('Overview');
    expect(await nav.first().getAttribute('aria-current')).toBe('page');
  });

  it('shows the history in words and numbers at 1280 px', async () => {
    await expectHistoryOn(page);
    await screenshot(page, 'overview.png', { fullPage: true });
  });

  it('shows the same at 390 px, within the width of the screen', async () => {
    const phone = await newSession(browser, h.stack.baseUrl, PHONE);
    try {
      await signIn(phone.page, h.workspace.owner.email, h.workspace.owner.password);
      await expectHistoryOn(phone.page);
      await screenshot(phone.page, 'overview-390.png', { fullPage: true });
      // Nothing wider than the screen: no sideways scrolling of the page (wide tables scroll inside their own box).
      expect(await phone.page.evaluate('document.documentElement.scrollWidth')).toBeLessThanOrEqual(PHONE.width);
      expect(phone.problems.errors).toEqual([]);
    } finally {
      await phone.context.close();
    }
  });

  it('switches the window with the keyboard, and the numbers stay the history', async () => {
    await page.getByRole('button', { name: 'Last 24 hours' }).focus();
    await page.keyboard.press('Enter');
    await page.waitForURL(/window=24h/);
    await eventually(async () => ((await page.getByRole('button', { name: 'Last 24 hours' }).getAttribute('aria-pressed')) === 'true' ? true : undefined));
    await eventually(async () => ((await rowsOf(page, 'callbacks')) === 96 ? true : undefined), 10_000, '96 quarter hours');
    expect(await columnSum(page, 'callbacks', 'Failed')).toBe(FAILING);
    await page.getByRole('button', { name: 'Last hour' }).click();
    await page.waitForURL(/\/overview$/);
  });

  it('links a failing destination to its requests', async () => {
    const row = page.locator(`[data-testid="table-destinations"] tr[data-origin="${downOrigin}"]`);
    await row.getByRole('link', { name: 'Requests to this destination' }).click();
    await page.waitForURL(/\/requests\?destination=/);
    expect(await page.getByLabel('Destination').inputValue()).toBe(downOrigin);
    for (const id of badJobs) await page.getByRole('link', { name: id, exact: true }).waitFor();
    await eventually(async () => ((await page.locator('tbody tr').count()) === FAILING ? true : undefined), 10_000, 'only the failing destination’s requests');
    await page.goBack();
    await page.getByRole('heading', { name: 'Overview' }).waitFor();
  });

  it('retries every failed callback to the destination, with the keyboard, after showing how many', async () => {
    down.script('/hooks', () => ({ status: 200, body: 'back' }));
    const row = page.locator(`[data-testid="table-destinations"] tr[data-origin="${downOrigin}"]`);
    await row.getByRole('button', { name: /Retry all failed callbacks to this destination/ }).focus();
    await page.keyboard.press('Enter');
    const confirm = row.getByRole('button', { name: `Retry ${FAILING} callbacks` });
    await confirm.waitFor();
    expect(await row.innerText()).toContain(`Retry ${FAILING} failed callbacks to this destination?`);
    // The confirming button has the focus: Enter confirms.
    expect(await confirm.evaluate((el) => el === el.ownerDocument.activeElement)).toBe(true);
    await page.keyboard.press('Enter');
    await row
      .getByRole('status')
      .filter({ hasText: `Retrying ${FAILING} failed callbacks to this destination` })
      .waitFor();

    // Each failed callback got one more attempt, a manual one, and is now delivered.
    for (const id of badJobs) {
      const { attempts } = await h.settled(await h.messageIdOf(id), ['delivered']);
      expect(attempts).toHaveLength(7);
      expect(attempts[6]).toMatchObject({ trigger: 'manual', status: 200, error: null });
    }
    expect(down.requestsTo('/hooks')).toHaveLength(7 * FAILING);
    // …and the Overview counts them as delivered after failing.
    await page.getByRole('button', { name: 'Refresh' }).click();
    await eventually(async () => ((await page.getByTestId('tile-delivered').innerText()).includes(`${FAILING} of them after failing`) ? true : undefined));
    expect(problems.errors).toEqual([]);
  });
});

/** The page's own text, read as a person (or a screen reader) would, against the scripted history. */
async function expectHistoryOn(page: Page): Promise<void> {
  await page.getByRole('heading', { name: 'Overview' }).waitFor();
  const tile = async (id: string) => (await page.getByTestId(id).innerText()).replace(/\s+/g, ' ');
  await eventually(async () => ((await tile('tile-delivered')).includes(String(DELIVERED)) ? true : undefined), 10_000, 'the tiles');
  expect(await tile('tile-delivered')).toMatch(new RegExp(`Delivered ${DELIVERED}\\b`));
  expect(await tile('tile-failed')).toMatch(new RegExp(`Failed ${FAILING}\\b`));
  expect(await tile('tile-pending')).toMatch(/Pending now 0\b/);
  const rate = Math.floor((DELIVERED / CALLBACKS) * 1000) / 10;
  expect(await tile('tile-first')).toContain(`${rate} %`);
  expect(await tile('tile-first')).toContain(`${DELIVERED} of ${CALLBACKS} first attempts`);
  expect(await tile('tile-attempts')).toContain(`${6 * FAILING} of ${ATTEMPTS} attempts`);
  expect(await tile('tile-latency')).toMatch(/p95 [12]\.\d\d s/);
  // Counts read as English: "1 second", never "1 seconds" (the ladder here is under two seconds).
  expect(await page.locator('main').innerText()).not.toMatch(/\b1 (seconds|minutes|hours|attempts|callbacks)\b/);

  // The headline names the failures and where they went, in words.
  const headline = await page.getByTestId('headline').innerText();
  expect(headline).toMatch(
    new RegExp(
      `${6 * FAILING} attempts failed in the last hour \\(the first at \\d\\d:\\d\\d [A-Z][A-Za-z0-9+:-]*\\), and ${FAILING} callbacks ran out of attempts\\.`,
    ),
  );
  expect(headline).toContain(`Most failures: ${downOrigin} (${6 * FAILING} attempts, last HTTP 503)`);

  // The charts' accessible names, and the tables behind them, add up to the history.
  const callbacksChart = page.getByTestId('chart-callbacks').getByRole('img');
  expect(await callbacksChart.getAttribute('aria-label')).toBe(`Callbacks in the last hour: ${DELIVERED} delivered, ${FAILING} failed; 0 pending now.`);
  // The time axis names its zone (the browser's, Europe/Berlin here) once, on its last label.
  const axis = await page.getByTestId('chart-callbacks').locator('text.axis-label').allTextContents();
  expect(axis.at(-1)).toMatch(/^\d\d:\d\d (CET|GMT\+1)$/);
  expect(axis.at(-3)).toMatch(/^\d\d:\d\d$/);
  expect(await rowsOf(page, 'callbacks')).toBe(60);
  expect(await columnSum(page, 'callbacks', 'Delivered')).toBe(DELIVERED);
  expect(await columnSum(page, 'callbacks', 'Failed')).toBe(FAILING);
  expect(await columnSum(page, 'callbacks', 'Created')).toBe(CALLBACKS);
  expect(await columnSum(page, 'first-attempt', 'First attempts')).toBe(CALLBACKS);
  expect(await columnSum(page, 'first-attempt', 'Delivered at once')).toBe(DELIVERED);
  expect(await columnSum(page, 'latency', 'Deliveries')).toBe(DELIVERED);
  // The slow spell's minute shows a p95 over a second.
  const p95s = await column(page, 'latency', 'p95');
  expect(p95s.some((text) => /^[12]\.\d\d s$/.test(text))).toBe(true);
  expect(await page.getByTestId('chart-latency').getByRole('img').getAttribute('aria-label')).toMatch(/p95 [12]\.\d\d s\.$/);

  // The failing destination, its count and its last error in words.
  const destination = page.locator(`[data-testid="table-destinations"] tr[data-origin="${downOrigin}"]`);
  const text = (await destination.innerText()).replace(/\s+/g, ' ');
  expect(text).toContain(String(6 * FAILING));
  expect(text).toContain('HTTP 503');
  expect(await page.locator('[data-testid="table-destinations"] tbody tr').count()).toBe(1);

  // The jobs and charges of the day the history was made (of each day, when it straddled midnight).
  const rows: string[][] = [];
  for (const date of workDays) {
    rows.push((await page.locator(`[data-testid="table-jobs"] tr[data-date="${date}"]`).innerText()).trim().split(/\s+/));
  }
  if (rows.length === 1) {
    expect(rows[0]).toEqual([workDays[0], String(FAST + SLOW + FAILING), String(FAILED_JOBS), `$${charged.toFixed(charged !== 0 && charged < 0.01 ? 4 : 2)}`]);
  } else {
    const total = (i: number) => rows.reduce((n, row) => n + Number(row[i]!.replace(/[$,]/g, '')), 0);
    expect([total(1), total(2)]).toEqual([FAST + SLOW + FAILING, FAILED_JOBS]);
    expect(total(3)).toBeCloseTo(charged, 1);
  }
}

async function rowsOf(page: Page, chart: string): Promise<number> {
  return page.locator(`[data-testid="table-${chart}"] tbody tr`).count();
}

/** A column of a chart's table, by its header, as the page shows it. */
async function column(page: Page, chart: string, header: string): Promise<string[]> {
  const table = page.locator(`[data-testid="table-${chart}"]`);
  const headers = (await table.locator('thead th').allTextContents()).map((t) => t.trim());
  const index = headers.indexOf(header);
  if (index === -1) throw new Error(`no column ${header} in ${headers.join(', ')}`);
  return (await table.locator(`tbody tr > :nth-child(${index + 1})`).allTextContents()).map((t) => t.trim());
}

async function columnSum(page: Page, chart: string, header: string): Promise<number> {
  return (await column(page, chart, header)).reduce((sum, text) => sum + (Number(text.replace(/,/g, '')) || 0), 0);
}
