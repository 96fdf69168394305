import type { Browser, Page } from 'playwright-core';
import { eventually } from '../support/stack';
import { DispatcherHarness } from '../dispatcher/support/harness';
import { launchChromium, newSession, screenshot, signIn, type PageProblems } from './support/browser';
import { loadConfig } from '@media/common';
import { DestinationGate, destinationLimits, destinationOf } from '@media/callbacks';

/**
 * The dashboard in real headless Chromium against the real stack (gateway, generator, dispatcher)
 * and an HTTPS receiver on loopback. The ladder's first gap is short so a callback has failed twice
 * within seconds; the next gaps are long so attempt 3 is still waiting (and its time shown) while
 * the test looks at it, however slow the machine.
 */
jest.setTimeout(120_000);

/** A receiver's answer is attacker-controlled: the page must show it as text and never run it. */
const HOSTILE = '<script>window.__pwned = 1</script><b>upstream down</b>';

let h: DispatcherHarness;
let browser: Browser;
let owner: { page: Page; problems: PageProblems };
let flakyJob: string;
let flakyMessage: string;
let otherJobs: string[] = [];

beforeAll(async () => {
  h = await DispatcherHarness.start({ WEBHOOK_RETRY_SCHEDULE: '2s,10m,10m,10m,10m' }, { inProcess: true });
  h.receiver.script('/flaky', (n) => (n <= 2 ? { status: 500, body: HOSTILE } : { status: 200, body: 'ok' }));
  browser = await launchChromium();

  // Some history for the Requests page: delivered image and video callbacks, a failed job, and the flaky one.
  [flakyJob, ...otherJobs] = await Promise.all([
    h.jobs.image(h.receiver.url('/flaky'), 'a lighthouse at dusk'),
    h.jobs.image(h.receiver.url('/ok'), 'a red bicycle in the rain'),
    h.jobs.video(h.receiver.url('/ok'), 'waves on a beach'),
    h.jobs.image(h.receiver.url('/ok'), 'something forbidden'),
  ]);
  flakyMessage = await h.messageIdOf(flakyJob);
  await h.attempts(flakyMessage, 2);
  // Attempt 3 is on the ladder (its time is what the page must show).
  await eventually(
    async () => {
      const cb = await h.callbacks.get(flakyMessage);
      return cb && cb.state === 'pending' && cb.next_attempt_ms !== null && cb.next_attempt_ms > Date.now() ? cb : undefined;
    },
    20_000,
    'attempt 3 scheduled',
  );
  for (const id of otherJobs) await h.settled(await h.messageIdOf(id), ['delivered']);

  const session = await newSession(browser, h.stack.baseUrl);
  owner = { page: session.page, problems: session.problems };
});

afterAll(async () => {
  await browser?.close();
  await h?.stop();
});

/** The row of the Requests table that links to `jobId`. */
const rowOf = (page: Page, jobId: string) => page.locator('tbody tr', { has: page.getByRole('link', { name: jobId, exact: true }) });

describe('dashboard in a real browser', () => {
  it('opens on the sign-in page with no console error, refuses a wrong password, then signs the owner in', async () => {
    const { page, problems } = owner;
    await page.goto('/dashboard/');
    await page.getByRole('heading', { name: 'Sign in' }).waitFor();
    // The app has asked who is signed in (nobody) and has nothing more to ask.
    await page.waitForLoadState('networkidle');
    expect(problems.errors).toEqual([]);

    await page.getByLabel('E-mail').fill(h.workspace.owner.email);
    await page.getByLabel('Password').fill('not-the-password');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('alert').filter({ hasText: /./ }).waitFor();
    expect(await page.getByRole('button', { name: 'Sign out' }).count()).toBe(0);
    // The wrong password's 401, which the browser logs, is the one console error of this session.
    await eventually(() => (problems.errors.length > 0 ? true : undefined), 5_000, 'the refused sign-in to be logged');
    expect(problems.errors).toEqual([expect.stringMatching(/^console: .*status of 401/)]);
    problems.errors.length = 0;

    await signIn(page, h.workspace.owner.email, h.workspace.owner.password);
    // The Overview is the first page; Requests is one link away.
    await page.getByRole('heading', { name: 'Overview' }).waitFor();
    await page.getByRole('navigation', { name: 'Sections' }).getByRole('link', { name: 'Requests' }).click();
    await page.getByRole('heading', { name: 'Requests' }).waitFor();
  });

  it('lists every request with its callback, newest first, and finds the one that failed twice', async () => {
    const { page } = owner;
    for (const id of [flakyJob, ...otherJobs]) await rowOf(page, id).waitFor();

    const flaky = rowOf(page, flakyJob);
    const text = await flaky.innerText();
    // Pending, but both attempts failed: marked as failing, with the last answer in words.
    expect(text).toContain('Failing, retrying');
    expect(text).toContain('500 Internal Server Error');
    expect(await flaky.getAttribute('data-failing')).toBe('true');
    expect(text).toContain(h.receiver.url('/flaky'));
    expect(text).toMatch(/\b2\b/); // attempts
    expect(text).toMatch(/in (9|10) min/); // next attempt, relative to now
    await screenshot(page, 'requests.png');

    // The callback-state filter: only pending callbacks remain.
    await page.getByLabel('Callback state').selectOption('pending');
    await page.waitForURL(/callback_status=pending/);
    await eventually(async () => ((await rowOf(page, otherJobs[0]!).count()) === 0 ? true : undefined), 10_000, 'delivered rows filtered out');
    await flaky.waitFor();

    // Search by id.
    await page.getByRole('button', { name: 'Clear filters' }).click();
    await page.getByLabel('Search', { exact: true }).fill(flakyJob);
    await page.getByRole('button', { name: 'Search' }).click();
    await page.waitForURL(new RegExp(`q=${flakyJob}`));
    await eventually(async () => ((await page.locator('tbody tr').count()) === 1 ? true : undefined), 10_000, 'one row for the id');
    await flaky.waitFor();
  });

  it('shows the workspace’s callback destinations, the ones holding callbacks back first, with why, and a failing one never as healthy', async () => {
    const { page } = owner;
    const gate = new DestinationGate(h.stack.redis, h.stack.keys, destinationLimits(loadConfig(h.stack.env)));
    const now = Date.now();
    const busy = destinationOf('https://hooks.busy-receiver.example/callbacks');
    for (let i = 0; i <= 100; i++) {
      await gate.acquire({ destination: busy, workspaceId: h.workspace.workspaceId, leaseId: `seed.${i}`, parkAs: `seed.${i}.d1`, dueMs: now, nowMs: now });
    }
    // A receiver that answers at once, and fails every callback: not held back, and failing.
    const refusing = destinationOf('https://hooks.refusing-receiver.example/callbacks');
    for (let i = 0; i < 3; i++) {
      await gate.acquire({ destination: refusing, workspaceId: h.workspace.workspaceId, leaseId: `refused.${i}`, dueMs: now, nowMs: now });
      await gate.release(refusing, h.workspace.workspaceId, `refused.${i}`, { slow: false, fast: true, throttleMs: 0, delivered: false }, now + i);
    }
    await page.goto('/dashboard/requests');
    const panel = page.getByRole('region', { name: 'Callback destinations' });
    const rows = panel.locator('tbody tr');
    await eventually(async () => ((await rows.count()) >= 3 ? true : undefined), 10_000, 'three destinations listed');
    expect(await rows.nth(0).getAttribute('data-state')).toBe('saturated');
    expect(await rows.nth(0).getAttribute('data-reason')).toBe('host_busy');
    const first = (await rows.nth(0).textContent()) ?? '';
    expect(first).toContain(busy.origin);
    expect(first).toContain('Saturated');
    // One workspace alone holds the cap less its headroom: 90 of the shipped 100; the rest wait.
    expect(first).toContain('90 of 90');
    expect(first).toContain('11 waiting');
    expect(first).toContain('Every slot you may use at this host is taken');
    const failing = panel.locator('tbody tr[data-health="failing"]', { hasText: refusing.origin });
    expect(await failing.getAttribute('data-state')).toBe('ok');
    expect(await failing.textContent()).toContain('3 attempts failed in a row');
    expect(await failing.locator('.badge-rejecting').textContent()).toContain('Failing');
    expect(await failing.locator('.badge-ok, .badge-accepting').count()).toBe(0);
    expect(await panel.textContent()).toContain('1 of 3 receivers your callbacks went to lately holds callbacks back.');
    expect(await panel.locator('tbody tr', { hasText: destinationOf(h.receiver.url('/')).origin }).count()).toBe(1);
    // The list, which the page is opened for, comes first; the panel is open as callbacks are held back.
    const list = page.getByRole('table').filter({ has: page.getByRole('columnheader', { name: 'Request' }) });
    expect((await list.boundingBox())!.y).toBeLessThan((await panel.boundingBox())!.y);
    expect(await panel.locator('details').getAttribute('open')).not.toBeNull();
    await panel.scrollIntoViewIfNeeded();
    await screenshot(page, 'destinations.png');
  });

  it('shows both attempts, the next attempt time, and the receiver excerpt as text', async () => {
    const { page } = owner;
    await rowOf(page, flakyJob).getByRole('link', { name: flakyJob }).click();
    await page.waitForURL(new RegExp(`/dashboard/requests/${flakyJob}$`));
    const attempts = page.locator('tr.attempt');
    await attempts.nth(1).waitFor();
    expect(await attempts.count()).toBe(2);
    for (const n of ['1', '2']) expect(await page.locator(`tr.attempt[data-attempt="${n}"]`).innerText()).toContain('HTTP 500');
    expect(await page.getByTestId('next-attempt').innerText()).toMatch(/in (9|10) min/);

    // The hostile excerpt is on screen as characters; no element came of it and no script ran.
    const excerpt = page.locator('pre.excerpt').first();
    expect(await excerpt.textContent()).toBe(HOSTILE);
    expect(await excerpt.isVisible()).toBe(true);
    expect(await page.locator('pre.excerpt script, pre.excerpt b').count()).toBe(0);
    expect(await page.evaluate(() => (globalThis as unknown as { __pwned?: number }).__pwned)).toBeUndefined();
  });

  it('retries the callback and shows the third attempt without reloading the page', async () => {
    const { page } = owner;
    // Survives only if the page is never reloaded.
    await page.evaluate(() => ((globalThis as unknown as { __sameDocument: boolean }).__sameDocument = true));
    await page.getByRole('button', { name: 'Retry callback' }).click();

    const third = page.locator('tr.attempt[data-attempt="3"]');
    await third.waitFor({ timeout: 30_000 });
    const text = await third.innerText();
    expect(text).toContain('manual');
    expect(text).toContain('HTTP 200');
    await page.locator('.badge-delivered', { hasText: 'Delivered' }).first().waitFor();
    expect(await page.evaluate(() => (globalThis as unknown as { __sameDocument?: boolean }).__sameDocument)).toBe(true);
    expect(h.receiver.requestsTo('/flaky')).toHaveLength(3);
    await screenshot(page, 'request-detail.png');
  });

  it('rotates the signing secret as the owner and shows both secrets and when the old one stops', async () => {
    const { page } = owner;
    await page.getByRole('link', { name: 'API keys' }).click();
    await page.getByRole('heading', { name: 'API keys', exact: true }).waitFor();
    await page.locator('tbody tr td.mono').first().waitFor(); // the owner's key from create-workspace

    await page.getByRole('button', { name: 'Rotate secret' }).click();
    await page.getByRole('button', { name: 'Rotate now' }).click();
    const previous = page.getByTestId('previous-secret');
    await previous.waitFor();
    const current = (await page.getByTestId('current-secret').textContent())!.trim();
    expect(current).toMatch(/^whsec_/);
    expect((await previous.textContent())!.trim()).toBe(h.workspace.signingSecret);
    expect(current).not.toBe(h.workspace.signingSecret);
    expect(await page.getByTestId('overlap-ends').innerText()).toMatch(/Stops signing in (23|24) hr/);
    await page.getByRole('button', { name: 'End overlap now' }).waitFor();
    await screenshot(page, 'api-keys.png');
  });

  it('turns on asymmetric signing as the owner and shows the public key that receivers fetch', async () => {
    const { page } = owner;
    await page.getByTestId('asymmetric-off').waitFor();
    await page.getByRole('button', { name: 'Turn on asymmetric signing' }).click();
    await page.getByRole('button', { name: 'Turn on now' }).click();
    const key = page.getByTestId('current-public-key');
    await key.waitFor();
    const shown = (await key.textContent())!.trim();
    expect(shown).toMatch(/^whpk_[A-Za-z0-9+/]{43}=$/);
    const served = (await (await fetch(`${h.stack.baseUrl}/v1/webhook-keys/${h.workspace.workspaceId}`)).json()) as { data: { public_key: string }[] };
    expect(served.data.map((k) => k.public_key)).toEqual([shown]);
    await page.getByRole('button', { name: 'Rotate signing key' }).waitFor();
  });

  it('refuses a state-changing request without the CSRF token', async () => {
    const { page } = owner;
    const reveal = async () => {
      const res = await page.request.post('/dashboard/api/secrets/reveal', { data: {}, headers: { 'x-csrf-token': await csrfOf(page) } });
      expect(res.status()).toBe(200);
      return ((await res.json()) as { current: string }).current;
    };
    const before = await reveal();

    // Same cookie, a well-formed JSON body, no token: what a forged cross-site request would carry.
    const forged = await page.request.post('/dashboard/api/secrets/rotate', { data: {} });
    expect(forged.status()).toBe(403);
    expect(((await forged.json()) as { error: { code: string } }).error.code).toBe('csrf_failed');
    expect(await reveal()).toBe(before);
  });

  it('shows a member no rotate button and answers 403 to a rotation they forge', async () => {
    const member = await h.stack.accounts.addMember(h.workspace.workspaceId, 'dev@test.test', 'member');
    const { context, page, problems } = await newSession(browser, h.stack.baseUrl);
    try {
      await signIn(page, member.email, member.password);
      await page.getByRole('link', { name: 'API keys' }).click();
      await page.getByRole('button', { name: 'Reveal signing secret' }).waitFor();
      await page.getByText('Only owners and admins can rotate the secret.').waitFor();
      expect(await page.getByRole('button', { name: 'Rotate secret' }).count()).toBe(0);
      expect(await page.getByRole('button', { name: 'End overlap now' }).count()).toBe(0);
      // The public key is public: a member sees it, and cannot rotate it.
      await page.getByTestId('current-public-key').waitFor();
      await page.getByText('Only owners and admins can turn it on or rotate the key.').waitFor();
      expect(await page.getByRole('button', { name: 'Rotate signing key' }).count()).toBe(0);

      // The member's own cookie and CSRF token: a well-formed request they are not allowed to make.
      const forged = await page.request.post('/dashboard/api/secrets/rotate', { data: {}, headers: { 'x-csrf-token': await csrfOf(page) } });
      expect(forged.status()).toBe(403);
      expect(((await forged.json()) as { error: { code: string } }).error.code).toBe('permission_denied');
      expect(problems.errors).toEqual([]);
    } finally {
      await context.close();
    }
  });

  it("changes a member's role only once asked again in place, and titles each page", async () => {
    const { page } = owner;
    const member = await h.stack.accounts.addMember(h.workspace.workspaceId, 'ops@test.test', 'member');
    await page.getByRole('link', { name: 'Members' }).click();
    await eventually(async () => ((await page.title()).startsWith('Members · ') ? true : undefined), 5_000, 'the page title');
    const role = page.getByLabel(`Role of ${member.email}`);
    // The keyboard walks the list (an arrow key is a change): nothing is sent until confirmed.
    await role.selectOption('admin');
    const question = page.getByRole('group', { name: `Make ${member.email} an admin? Their open sessions end.` });
    await question.waitFor();
    await page.waitForTimeout(300);
    expect((await h.stack.accounts.members(h.workspace.workspaceId)).find((m) => m.email === member.email)?.role).toBe('member');
    await question.getByRole('button', { name: 'Cancel' }).click();
    expect(await role.inputValue()).toBe('member');
    await role.selectOption('admin');
    await page.getByRole('button', { name: 'Change role' }).click();
    await eventually(
      async () => ((await h.stack.accounts.members(h.workspace.workspaceId)).find((m) => m.email === member.email)?.role === 'admin' ? true : undefined),
      5_000,
      'the role change',
    );
    await question.waitFor({ state: 'detached' });
  });

  it('signs out, and ran without a script error or CSP violation', async () => {
    const { page, problems } = owner;
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByRole('heading', { name: 'Sign in' }).waitFor();
    const session = await page.request.get('/dashboard/api/session');
    expect([session.status(), await session.json()]).toEqual([200, { signed_in: false }]);
    expect(problems.errors).toEqual([]);
  });
});

async function csrfOf(page: Page): Promise<string> {
  const res = await page.request.get('/dashboard/api/session');
  expect(res.status()).toBe(200);
  return ((await res.json()) as { csrf_token: string }).csrf_token;
}
