// The console in a real browser for console-alarms.test.ts: a page at /ui/ as the service serves
// it (its CSP included), signed in through the form, with every page error, console error and CSP
// violation recorded; navigation by the header's links; layout checks and screenshots.
//
// Page-side code is given as expressions: the tests compile without the DOM's types.

import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import type { Browser, Page } from 'playwright-core';
import type { TestService } from '../api/harness.js';
import { waitFor } from '../support/wait-for.js';

export const DESKTOP = { width: 1280, height: 720 };
export const PHONE = { width: 390, height: 844 };
/** Generous: it only costs time when something is wrong. The console's own poll is 15 s. */
export const LIVE_TIMEOUT_MS = 30_000;

export interface ConsolePage {
  page: Page;
  /** Uncaught errors, console errors and CSP violations, as text. */
  problems: string[];
}

/** Reports CSP violations into the page (the init script is injected by the browser, not blocked by the CSP). */
const CSP_WATCH = `window.__cspViolations = [];
document.addEventListener('securitypolicyviolation', (e) => window.__cspViolations.push(e.violatedDirective + ' ' + e.blockedURI));`;

/** A fresh browser context at /ui/, signed in as `email` through the form. */
export async function openConsole(browser: Browser, svc: TestService, email: string, password: string): Promise<ConsolePage> {
  const context = await browser.newContext({ viewport: DESKTOP, colorScheme: 'light' });
  await context.addInitScript(CSP_WATCH);
  const page = await context.newPage();
  const problems: string[] = [];
  page.on('pageerror', (err) => problems.push(`pageerror: ${err.message}`));
  page.on('console', (message) => {
    if (message.type() === 'error') problems.push(`console: ${message.text()}`);
  });
  await page.goto(`${svc.baseUrl}/ui/`);
  await page.getByLabel('Email').fill(email);
  await page.getByLabel('Password').fill(password);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('button', { name: 'Sign out' }).waitFor({ timeout: LIVE_TIMEOUT_MS });
  return { page, problems };
}

/** Follows the header link to `name` and waits for the page's heading. */
export async function go(page: Page, name: 'Alarms' | 'Notifications' | 'System'): Promise<void> {
  await page.getByRole('link', { name, exact: true }).click();
  await page.getByRole('heading', { level: 1, name, exact: true }).waitFor({ timeout: LIVE_TIMEOUT_MS });
}

/** Waits until the panel (by id) has loaded (`data-state="ready"`); fails with its error line otherwise. */
export async function panelReady(page: Page, id: string): Promise<void> {
  const panel = page.locator(`#${id}`);
  await waitFor(async () => (await panel.getAttribute('data-state')) === 'ready', `panel #${id} loads (state ${await panel.getAttribute('data-state').catch(() => '?')}: ${await panel.locator('.error').textContent().catch(() => '')})`, { timeoutMs: LIVE_TIMEOUT_MS, intervalMs: 50 });
}

/** The text of the alarms badge (or the unread badge) beside a header link; '' when hidden. */
export async function headerBadge(page: Page, link: 'Alarms' | 'Notifications'): Promise<string> {
  const badge = page.locator('header .nav-item', { has: page.getByRole('link', { name: link, exact: true }) }).locator('.badge');
  return (await badge.isVisible()) ? ((await badge.textContent()) ?? '').trim() : '';
}

/** Nothing went wrong in the page: no uncaught error, no console error, no CSP violation. */
export async function assertClean(c: ConsolePage): Promise<void> {
  const csp = await c.page.evaluate<string[]>('window.__cspViolations ?? []');
  assert.deepEqual([...c.problems, ...csp.map((v) => `csp: ${v}`)], [], 'no page errors, console errors or CSP violations');
}

/** The document does not scroll sideways (wide tables scroll inside their own box). */
export async function assertNoHorizontalOverflow(page: Page, what: string): Promise<void> {
  const size = await page.evaluate<{ scroll: number; client: number }>('({ scroll: document.documentElement.scrollWidth, client: document.documentElement.clientWidth })');
  assert.ok(size.scroll <= size.client, `${what}: the document is ${size.scroll} px wide in a ${size.client} px viewport`);
}

export async function screenshot(page: Page, dir: string, name: string): Promise<string> {
  const file = path.join(dir, `${name}.png`);
  await page.screenshot({ path: file, fullPage: true });
  assert.ok(fs.statSync(file).size > 0, `${file} is written`);
  return file;
}
