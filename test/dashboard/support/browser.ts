import { mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { resolve } from 'node:path';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';

/** Debian's chromium package (.ci/run installs it): no browser download, no network needed. */
export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

/**
 * Flags that keep Chromium from calling out (the machine has no network) and make it run as root
 * in a container. Playwright gives every launch a fresh temporary user-data dir of its own.
 */
const ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

/**
 * The README's screenshots are rewritten only on request (`UPDATE_SCREENSHOTS=1 npx jest
 * test/dashboard/browser.test.ts`): every run taking them into docs/ left the tree dirty with
 * byte-different but identical-looking images. Other runs still take them, into a temp folder.
 */
export const SCREENSHOTS =
  process.env.UPDATE_SCREENSHOTS === '1' ? resolve(__dirname, '../../../docs/screenshots') : resolve(tmpdir(), 'media-callbacks-screenshots');

export function launchChromium(): Promise<Browser> {
  return chromium.launch({ executablePath: CHROMIUM, args: ARGS, headless: true });
}

/**
 * What went wrong in a page: script errors and console errors (a CSP violation is one, and so is an
 * answer of 4xx or 5xx to any request the page makes, which the browser logs by itself).
 */
export interface PageProblems {
  errors: string[];
}

/** The size of the README's screenshots, and a phone's. */
export const DESKTOP = { width: 1280, height: 800 };
export const PHONE = { width: 390, height: 844 };

/** A fresh browser profile (own cookies), at the size the README's screenshots use unless told. */
export async function newSession(
  browser: Browser,
  baseURL: string,
  viewport: { width: number; height: number } = DESKTOP,
): Promise<{ context: BrowserContext; page: Page; problems: PageProblems }> {
  const context = await browser.newContext({ baseURL, viewport, locale: 'en-GB', timezoneId: 'Europe/Berlin' });
  const page = await context.newPage();
  const problems: PageProblems = { errors: [] };
  page.on('pageerror', (err) => problems.errors.push(`pageerror: ${err.message}`));
  page.on('console', (msg) => {
    if (msg.type() === 'error') problems.errors.push(`console: ${msg.text()}`);
  });
  return { context, page, problems };
}

export async function signIn(page: Page, email: string, password: string): Promise<void> {
  await page.goto('/dashboard/');
  await page.getByLabel('E-mail').fill(email);
  await page.getByLabel('Password').fill(password);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('button', { name: 'Sign out' }).waitFor();
}

export async function screenshot(page: Page, name: string, options: { fullPage?: boolean } = {}): Promise<void> {
  mkdirSync(SCREENSHOTS, { recursive: true });
  await page.screenshot({ path: resolve(SCREENSHOTS, name), animations: 'disabled', caret: 'hide', fullPage: options.fullPage ?? false });
}
