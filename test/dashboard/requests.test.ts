import type { Browser, Page } from 'playwright-core';
import { destinationOf } from '@media/callbacks';
import { eventually } from '../support/stack';
import { expectApiError } from '../support/http';
import { DispatcherHarness } from '../dispatcher/support/harness';
import { TestReceiver } from '../dispatcher/support/receiver';
import { DashboardClient } from './support/api-client';
import { launchChromium, newSession, PHONE, screenshot, signIn } from './support/browser';

/**
 * The Requests page as on-call uses it, through its JSON API and in real Chromium at 1280 and 390
 * px, after a scripted history in two halves a second boundary apart:
 * - older: a delivered image; two images to a `down` receiver that answers 503, and one to our
 *   usual receiver that answers 500, each ended `failed` after its second attempt;
 * - newer: a delivered video; two images to `down` that answers 500, still pending after two
 *   failed attempts (the ladder's third step is ten minutes away): failing, not yet failed; and one
 *   more image to `down`'s 503 path ended `failed`.
 * The ladder's end is brought forward with `giveUp`, as the dispatcher ends a callback after its
 * last attempt: six real attempts would take the ladder's whole length.
 */
jest.setTimeout(180_000);

let h: DispatcherHarness;
let down: TestReceiver;
let downOrigin: string;
let browser: Browser;
let owner: DashboardClient;
/** Unix seconds between the two halves of the history. */
let boundary: number;
/** `down`'s /gone path answers 503 until the recovery tests bring it back. */
let goneIsBack = false;

const ids = { okOld: '', goneOld: [] as string[], failsElsewhere: '', videoNew: '', failing: [] as string[], goneNew: '' };
const msg: Record<string, string> = {};

/** Two attempts made, then failed for good. */
async function failedAfterTwo(jobId: string): Promise<void> {
  const messageId = await h.messageIdOf(jobId);
  await h.attempts(messageId, 2);
  const callback = await eventually(
    async () => {
      const cb = await h.callbacks.get(messageId);
      return cb && cb.attempt_count === 2 && cb.next_attempt_ms !== null ? cb : undefined;
    },
    20_000,
    'attempt 3 scheduled',
  );
  await h.callbacks.giveUp(callback);
  await h.settled(messageId, ['failed']);
}

beforeAll(async () => {
  h = await DispatcherHarness.start({ WEBHOOK_RETRY_SCHEDULE: '100ms,10m,10m,10m,10m' }, { inProcess: true });
  down = await TestReceiver.start(h.pki);
  downOrigin = destinationOf(down.url('/hooks')).origin;
  down.script('/hooks', () => ({ status: 500, body: 'broken' }));
  down.script('/gone', () => (goneIsBack ? { status: 200, body: 'ok' } : { status: 503, body: 'maintenance' }));
  h.receiver.script('/fails', () => ({ status: 500, body: 'no' }));
  browser = await launchChromium();

  ids.okOld = await h.jobs.image(h.receiver.url('/ok'), 'a quiet harbour');
  ids.goneOld = [await h.jobs.image(down.url('/gone'), 'an empty shop 1'), await h.jobs.image(down.url('/gone'), 'an empty shop 2')];
  ids.failsElsewhere = await h.jobs.image(h.receiver.url('/fails'), 'a broken lamp');
  await h.settled(await h.messageIdOf(ids.okOld), ['delivered']);
  for (const id of [...ids.goneOld, ids.failsElsewhere]) await failedAfterTwo(id);

  // Every callback so far was created before `boundary`; every later one at or after it.
  boundary = Math.floor(Date.now() / 1000) + 1;
  await eventually(async () => (Date.now() >= boundary * 1000 ? true : undefined), 5_000, 'the next second');

  ids.videoNew = await h.jobs.video(h.receiver.url('/ok'), 'waves on a beach');
  ids.failing = [await h.jobs.image(down.url('/hooks'), 'a <b>closed</b> door 1'), await h.jobs.image(down.url('/hooks'), 'a <b>closed</b> door 2')];
  ids.goneNew = await h.jobs.image(down.url('/gone'), 'an empty shop 3');
  await h.settled(await h.messageIdOf(ids.videoNew), ['delivered']);
  for (const id of ids.failing) {
    await h.attempts(await h.messageIdOf(id), 2);
    await eventually(
      async () => {
        const cb = await h.callbacks.get(await h.messageIdOf(id));
        return cb && cb.state === 'pending' && cb.attempt_count === 2 && cb.next_attempt_ms !== null ? cb : undefined;
      },
      20_000,
      'a failing callback waiting for attempt 3',
    );
  }
  await failedAfterTwo(ids.goneNew);
  for (const [name, id] of Object.entries({ okOld: ids.okOld, failsElsewhere: ids.failsElsewhere, videoNew: ids.videoNew, goneNew: ids.goneNew }))
    msg[name] = await h.messageIdOf(id);
  owner = await DashboardClient.signedIn(h.stack.baseUrl, h.workspace.owner.email, h.workspace.owner.password);
});

afterAll(async () => {
  await browser?.close();
  await down?.stop();
  await h?.stop();
});

const idsOf = (res: { json: { data: { id: string }[] } }) => res.json.data.map((r) => r.id);
const newestFirst = (...jobIds: string[]) => [...jobIds].reverse();
/**
 * A callback filter lists in the order the callbacks were created (when each job finished), which
 * need not be the order the jobs were made in (a video takes longer): compared as sets.
 */
const sameSet = (actual: string[], expected: string[]) => expect([...actual].sort()).toEqual([...expected].sort());

describe('GET /dashboard/api/requests for on-call', () => {
  it('gives each row its last attempt in words and marks the pending callbacks that have failed', async () => {
    const { json } = await owner.call('GET', '/requests');
    const byId = Object.fromEntries(json.data.map((r: { id: string }) => [r.id, r]));
    for (const id of ids.failing) {
      expect(byId[id]).toMatchObject({
        failing: true,
        callback: { status: 'pending', attempt_count: 2 },
        last_attempt: { status_code: 500, error: 'http_error', result: '500 Internal Server Error', trigger: 'scheduled', sent_at: expect.any(Number) },
      });
    }
    for (const id of [...ids.goneOld, ids.goneNew])
      expect(byId[id]).toMatchObject({ failing: false, callback: { status: 'failed' }, last_attempt: { status_code: 503, result: '503 Service Unavailable' } });
    for (const id of [ids.okOld, ids.videoNew])
      expect(byId[id]).toMatchObject({ failing: false, callback: { status: 'delivered' }, last_attempt: { status_code: 200, error: null, result: '200 OK' } });
  });

  it('filters by failing, by destination and by when the callback was created, alone and together', async () => {
    sameSet(idsOf(await owner.call('GET', '/requests?callback_status=failing')), ids.failing);
    // Pending still lists them: failing is a kind of pending.
    sameSet(idsOf(await owner.call('GET', '/requests?callback_status=pending')), ids.failing);
    const toDown = `destination=${encodeURIComponent(downOrigin)}`;
    sameSet(idsOf(await owner.call('GET', `/requests?${toDown}`)), [...ids.goneOld, ...ids.failing, ids.goneNew]);
    sameSet(idsOf(await owner.call('GET', `/requests?created_before=${boundary}`)), [ids.okOld, ...ids.goneOld, ids.failsElsewhere]);
    const newer = idsOf(await owner.call('GET', `/requests?created_after=${boundary}`));
    sameSet(newer, [ids.videoNew, ...ids.failing, ids.goneNew]);
    sameSet(idsOf(await owner.call('GET', `/requests?${toDown}&callback_status=failed&created_before=${boundary}`)), ids.goneOld);
    expect(idsOf(await owner.call('GET', `/requests?created_after=${boundary}&kind=video`))).toEqual([ids.videoNew]);
    // Paging within a time range goes on where the page ended.
    const first = await owner.call('GET', `/requests?created_after=${boundary}&limit=2`);
    expect([idsOf(first), first.json.has_more]).toEqual([newer.slice(0, 2), true]);
    const rest = await owner.call('GET', `/requests?created_after=${boundary}&limit=2&after=${first.json.data[1].id}`);
    expect([idsOf(rest), rest.json.has_more]).toEqual([newer.slice(2), false]);
    expectApiError(await owner.call('GET', '/requests?created_after=yesterday'), 400, { param: 'created_after', type: 'invalid_request_error' });
    expectApiError(await owner.call('GET', '/requests?callback_status=broken'), 400, { param: 'callback_status' });
    // A page that continues from a request that is gone (deleted, retention) says so, in every mode,
    // rather than answering an empty page that reads as the end of the list.
    for (const query of ['', `created_after=${boundary}&`, 'callback_status=failed&', 'q=door&']) {
      const gone = await owner.call('GET', `/requests?${query}after=req_deletedmeanwhile`);
      expectApiError(gone, 400, { param: 'after', code: 'invalid_value' });
      expect(gone.json.error.message).toContain('start again from the first page');
    }
  });

  it('searches prompts and destinations among the newest requests, ignoring case, and says how far it looked', async () => {
    const byPrompt = await owner.call('GET', `/requests?q=${encodeURIComponent('CLOSED</b> DOOR')}`);
    // A search reads the requests' own index: newest request first.
    expect(idsOf(byPrompt)).toEqual(newestFirst(...ids.failing));
    expect(byPrompt.json.search).toEqual({ window: 1000, looked_through: 8, complete: true });
    expect(idsOf(await owner.call('GET', `/requests?q=${encodeURIComponent(`${new URL(downOrigin).host}/gone`)}`))).toEqual(
      newestFirst(...ids.goneOld, ids.goneNew),
    );
    expect(idsOf(await owner.call('GET', '/requests?q=empty+shop&callback_status=failed&created_after=' + boundary))).toEqual([ids.goneNew]);
    expect(idsOf(await owner.call('GET', '/requests?q=nothing+like+this'))).toEqual([]);
    // An id is still an exact match, with the filters applied.
    expect(idsOf(await owner.call('GET', `/requests?q=${msg.goneNew}`))).toEqual([ids.goneNew]);
    expect(idsOf(await owner.call('GET', `/requests?q=${msg.goneNew}&created_before=${boundary}`))).toEqual([]);
  });

  it('never shows another workspace’s requests to a search or a filter', async () => {
    const other = await h.stack.createWorkspace('elsewhere');
    const stranger = await DashboardClient.signedIn(h.stack.baseUrl, other.owner.email, other.owner.password);
    expect((await stranger.call('GET', '/requests?q=closed')).json.data).toEqual([]);
    expect((await stranger.call('GET', `/requests?created_after=${boundary - 3600}`)).json.data).toEqual([]);
    expect((await stranger.call('GET', `/requests/recovery?destination=${encodeURIComponent(downOrigin)}`)).json.count).toBe(0);
  });
});

describe('retrying the failed callbacks the filters list', () => {
  it('counts them first, for each combination of filters, queueing nothing', async () => {
    const count = async (query: string) => (await owner.call('GET', `/requests/recovery${query}`)).json;
    const toDown = `destination=${encodeURIComponent(downOrigin)}`;
    expect(await count(`?${toDown}&created_before=${boundary}`)).toEqual({
      filters: { destination: downOrigin, created_before: boundary },
      count: 2,
      rate_per_second: 5,
    });
    expect((await count(`?${toDown}`)).count).toBe(3);
    expect((await count(`?created_after=${boundary}`)).count).toBe(1);
    expect((await count('?kind=video')).count).toBe(0);
    // No filter: every failed callback of the workspace (the failing ones are still on their ladder).
    expect((await count('')).count).toBe(4);
    expect(down.requestsTo('/gone')).toHaveLength(6);
    expectApiError(await owner.call('GET', `/requests/recovery?created_after=${boundary}&created_before=${boundary}`), 400, { param: 'created_before' });
    expectApiError(await owner.call('GET', '/requests/recovery?destination=not-a-url'), 400, { param: 'destination' });
  });

  it('is refused without a session or the CSRF token, and open to a member as Retry is', async () => {
    const anonymous = new DashboardClient(h.stack.baseUrl);
    expectApiError(await anonymous.call('GET', '/requests/recovery'), 401, { code: 'not_signed_in' });
    expectApiError(await anonymous.call('POST', '/requests/recovery', { json: {} }), 401, { code: 'not_signed_in' });
    expectApiError(await owner.call('POST', '/requests/recovery', { json: { kind: 'video' }, csrf: null }), 403, { code: 'csrf_failed' });
    const added = await owner.call('POST', '/members', { json: { email: 'oncall@test.test', role: 'member' } });
    const member = await DashboardClient.signedIn(h.stack.baseUrl, added.json.email, added.json.password);
    const byMember = await member.call('POST', '/requests/recovery', { json: { kind: 'video' } });
    expect(byMember.status).toBe(202);
    expect(byMember.json).toEqual({ id: expect.stringMatching(/^rcv_/), filters: { kind: 'video' }, count: 0, rate_per_second: 5 });
  });

  it('retries exactly those callbacks once, at the recovery’s pace, and leaves every other callback as it was', async () => {
    goneIsBack = true;
    const started = await owner.call('POST', '/requests/recovery', { json: { destination: downOrigin, created_before: boundary } });
    expect(started.status).toBe(202);
    expect(started.json).toMatchObject({ id: expect.stringMatching(/^rcv_/), count: 2, rate_per_second: 5 });
    for (const id of ids.goneOld) {
      const { attempts } = await h.settled(await h.messageIdOf(id), ['delivered']);
      expect(attempts.map((a) => [a.trigger, a.status])).toEqual([
        ['scheduled', 503],
        ['scheduled', 503],
        ['manual', 200],
      ]);
    }
    expect(down.requestsTo('/gone')).toHaveLength(8);
    // Outside the filters: the newer failed one, the other destination's, and the failing ones (still on their ladder).
    expect(await h.callbacks.get(msg.goneNew!)).toMatchObject({ state: 'failed', attempt_count: 2 });
    expect(await h.callbacks.get(msg.failsElsewhere!)).toMatchObject({ state: 'failed', attempt_count: 2 });
    for (const id of ids.failing) expect(await h.callbacks.get(await h.messageIdOf(id))).toMatchObject({ state: 'pending', attempt_count: 2 });
    expect((await owner.call('GET', `/requests/recovery?destination=${encodeURIComponent(downOrigin)}`)).json.count).toBe(1);
  });
});

/** The row of the Requests table that links to `jobId`. */
const rowOf = (page: Page, jobId: string) => page.locator('tbody tr', { has: page.getByRole('link', { name: jobId, exact: true }) });
const hasRows = async (page: Page, jobIds: string[]) => {
  for (const id of jobIds) if ((await rowOf(page, id).count()) === 0) return undefined;
  return (await page.locator('tbody tr').count()) === jobIds.length ? true : undefined;
};
/** `datetime-local` input text, in the browser's zone (Europe/Berlin, as newSession sets it). */
const localInput = (ms: number) => {
  const parts = Object.fromEntries(
    new Intl.DateTimeFormat('en-GB', {
      timeZone: 'Europe/Berlin',
      year: 'numeric',
      month: '2-digit',
      day: '2-digit',
      hour: '2-digit',
      minute: '2-digit',
      hourCycle: 'h23',
    })
      .formatToParts(new Date(ms))
      .map((p) => [p.type, p.value]),
  );
  return `${parts.year}-${parts.month}-${parts.day}T${parts.hour}:${parts.minute}`;
};

describe('the Requests and Usage pages in a real browser', () => {
  let page: Page;

  beforeAll(async () => {
    ({ page } = await newSession(browser, h.stack.baseUrl));
    await signIn(page, h.workspace.owner.email, h.workspace.owner.password);
  });

  it('shows each callback’s last attempt in words and marks the failing ones in words as well as colour', async () => {
    await page.goto('/dashboard/requests');
    for (const id of [...ids.failing, ids.okOld, ids.goneNew]) await rowOf(page, id).waitFor();
    for (const id of ids.failing) {
      const row = rowOf(page, id);
      expect(await row.getAttribute('data-failing')).toBe('true');
      const text = await row.innerText();
      expect(text).toContain('Failing, retrying');
      expect(text).toContain('500 Internal Server Error');
      // The prompt's markup is shown as characters, never made into an element.
      expect(text).toContain('a <b>closed</b> door');
      expect(await row.locator('b').count()).toBe(0);
    }
    expect(await rowOf(page, ids.goneNew).innerText()).toContain('503 Service Unavailable');
    expect(await rowOf(page, ids.goneNew).getAttribute('data-failing')).toBeNull();
    const ok = await rowOf(page, ids.okOld).innerText();
    expect(ok).toContain('Delivered');
    expect(ok).toContain('200 OK');
    expect(ok).not.toContain('Failing');
    await screenshot(page, 'requests-failing.png');
  });

  it('filters by state, destination and time, and searches words, all kept in the address', async () => {
    await page.getByLabel('Callback state').selectOption('failing');
    await page.waitForURL(/callback_status=failing/);
    await eventually(() => hasRows(page, ids.failing), 10_000, 'only the failing rows');

    await page.getByLabel('Callback state').selectOption('');
    await page.getByRole('textbox', { name: 'Destination', exact: true }).fill(downOrigin);
    await page.getByLabel('Callback created from').fill(localInput(Date.now() - 3_600_000));
    await page.getByRole('button', { name: 'Search' }).click();
    await page.waitForURL(/created_after=\d+/);
    expect(page.url()).toContain(`destination=${encodeURIComponent(downOrigin)}`);
    await eventually(() => hasRows(page, [...ids.goneOld, ...ids.failing, ids.goneNew]), 10_000, 'the rows to the down destination');

    // A range that ended an hour ago holds none of them.
    await page.getByLabel('Callback created before').fill(localInput(Date.now() - 3_600_000));
    await page.getByRole('button', { name: 'Search' }).click();
    await page.waitForURL(/created_before=\d+/);
    await page.getByText('No request matches these filters.').waitFor();

    await page.getByRole('button', { name: 'Clear filters' }).click();
    await page.getByLabel('Search', { exact: true }).fill('closed');
    await page.getByRole('button', { name: 'Search' }).click();
    await page.waitForURL(/q=closed/);
    await eventually(() => hasRows(page, ids.failing), 10_000, 'the rows whose prompt says closed');
    expect(await page.getByTestId('search-note').innerText()).toBe('Searched all 8 requests of this workspace for “closed”.');
  });

  it('retries the failed callbacks matching the filters after showing their count', async () => {
    await page.getByRole('button', { name: 'Clear filters' }).click();
    await page.getByRole('textbox', { name: 'Destination', exact: true }).fill(downOrigin);
    await page.getByRole('button', { name: 'Search' }).click();
    await page.waitForURL(/destination=/);
    await eventually(() => hasRows(page, [...ids.goneOld, ...ids.failing, ids.goneNew]), 10_000, 'the rows to the down destination');
    await page.getByRole('button', { name: 'Retry failed callbacks matching these filters' }).click();
    const question = page.getByTestId('recovery-question');
    await question.waitFor();
    // Of the three failed callbacks to this destination, the API test recovered two: one is left.
    expect(await question.innerText()).toBe(`Retry 1 failed callback to ${downOrigin}? They go out 5 a second.`);
    expect(down.requestsTo('/gone')).toHaveLength(8);
    await page.getByRole('button', { name: 'Retry 1 callback' }).click();
    await page.getByText('Retrying 1 failed callback matching these filters, 5 a second. The list refreshes every 2 s as their attempts are made.').waitFor();
    await h.settled(msg.goneNew!, ['delivered']);
    // The list refreshes by itself every 2 s while the retry's attempts go out (10 s otherwise): the
    // row shows the delivery well before the next ordinary refresh.
    await eventually(async () => ((await rowOf(page, ids.goneNew).innerText()).includes('Delivered') ? true : undefined), 8_000, 'the row delivered');
    expect(await rowOf(page, ids.goneNew).innerText()).toContain('200 OK');
    expect(down.requestsTo('/gone')).toHaveLength(9);
    for (const id of ids.failing) expect((await h.callbacks.get(await h.messageIdOf(id)))!.attempt_count).toBe(2);
  });

  it('charts the jobs and amounts charged per day on Usage, with the numbers behind the charts', async () => {
    const ledger = await h.stack.jobs.ledger(h.workspace.workspaceId);
    expect(ledger).toHaveLength(8);
    await page.getByRole('navigation', { name: 'Sections' }).getByRole('link', { name: 'Usage' }).click();
    const jobs = page.getByTestId('chart-usage-jobs');
    await jobs.waitFor();
    // One bar per day on which jobs were charged (UTC): one, or two when the jobs straddled midnight.
    const perDay = new Map<number, { count: number; micros: number }>();
    for (const e of ledger) {
      const at = Math.floor(e.created_ms / 86_400_000) * 86_400;
      const day = perDay.get(at) ?? { count: 0, micros: 0 };
      day.count += 1;
      day.micros += Math.round(e.amount * 1e6);
      perDay.set(at, day);
    }
    const busiest = Math.max(...[...perDay.values()].map((d) => d.count));
    expect(await jobs.locator('svg rect.bar').count()).toBe(perDay.size);
    expect(await jobs.locator('svg').getAttribute('aria-label')).toMatch(
      new RegExp(`^8 jobs charged over the 30 days, most on \\d{4}-\\d\\d-\\d\\d \\(${busiest}\\)\\.$`),
    );
    for (const [at, day] of perDay) {
      expect(await page.getByTestId('table-usage-jobs').locator(`tr[data-at="${at}"] td`).textContent()).toBe(String(day.count));
      expect(await page.getByTestId('table-usage-amount').locator(`tr[data-at="${at}"] td`).textContent()).toBe(`$${(day.micros / 1e6).toFixed(2)}`);
    }
    expect(await page.getByTestId('chart-usage-amount').locator('svg rect.bar').count()).toBe(perDay.size);
    expect(await page.getByTestId('table-usage-jobs').locator('tbody tr').count()).toBe(30);
    await screenshot(page, 'usage.png', { fullPage: true });
  });

  it('fits a 390 px screen: the navigation and the Requests list, as cards, within its width', async () => {
    const phone = await newSession(browser, h.stack.baseUrl, PHONE);
    try {
      await signIn(phone.page, h.workspace.owner.email, h.workspace.owner.password);
      await phone.page.goto('/dashboard/requests');
      for (const id of ids.failing) await rowOf(phone.page, id).waitFor();
      expect(await phone.page.evaluate('document.documentElement.scrollWidth')).toBeLessThanOrEqual(PHONE.width);
      const nav = phone.page.getByRole('navigation', { name: 'Sections' });
      expect(await nav.evaluate((el) => el.scrollWidth <= el.clientWidth)).toBe(true);
      for (const link of await nav.getByRole('link').all()) {
        const box = (await link.boundingBox())!;
        expect(box.x).toBeGreaterThanOrEqual(0);
        expect(box.x + box.width).toBeLessThanOrEqual(PHONE.width);
      }
      const failing = await rowOf(phone.page, ids.failing[0]!).innerText();
      expect(failing).toContain('Failing, retrying');
      expect(failing).toContain('500 Internal Server Error');
      await screenshot(phone.page, 'requests-390.png', { fullPage: true });
      await phone.page.getByRole('navigation', { name: 'Sections' }).getByRole('link', { name: 'Usage' }).click();
      await phone.page.getByTestId('chart-usage-jobs').waitFor();
      expect(await phone.page.evaluate('document.documentElement.scrollWidth')).toBeLessThanOrEqual(PHONE.width);
      expect(phone.problems.errors).toEqual([]);
    } finally {
      await phone.context.close();
    }
  });
});
