// The operator console's shell (ui/src/main.ts) in a real browser: headless Chromium (Debian's
// `chromium`, driven by playwright-core) opens ${baseUrl}/ui/ as served by the service, signs in
// and out, moves around by keyboard, survives a reload, meets an expired token, and is laid out
// at 1280×720 and on a 390-px phone in light and dark. Over the whole suite no page error, no
// console error and no Content-Security-Policy violation may happen (one test first shows that a
// violation would be seen). Trust of the service's key: chromium.ts.
//
// Page-side code is given as expressions: this project compiles without the DOM's types.

import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { Browser, BrowserContext, Locator, Page } from 'playwright-core';
import { CHROMIUM, launchFor } from './chromium.js';
import { ADMIN_EMAIL, ADMIN_PASSWORD, startService, type TestService } from '../api/harness.js';
import { waitFor } from '../support/wait-for.js';

const NAV = ['Trends', 'Alarms', 'Notifications', 'System'] as const;
const TOKEN_LIFETIME_SECONDS = 3600;
const DESKTOP = { width: 1280, height: 720 };
const PHONE = { width: 390, height: 844 };
/** Where the 1280×720 light sign-in screenshot is copied for people to look at. */
const SHARED_SHOTS = '/tmp/console-shots';

/** Relative luminance (WCAG) of a computed `rgb(…)`/`rgba(…)` colour. */
function luminance(color: string): number {
  const [r, g, b] = (color.match(/[\d.]+/g) ?? []).slice(0, 3).map(Number).map((c) => {
    const s = c / 255;
    return s <= 0.03928 ? s / 12.92 : ((s + 0.055) / 1.055) ** 2.4;
  }) as [number, number, number];
  return 0.2126 * r + 0.7152 * g + 0.0722 * b;
}

function contrast(a: string, b: string): number {
  const [hi, lo] = [luminance(a), luminance(b)].sort((x, y) => y - x) as [number, number];
  return (hi + 0.05) / (lo + 0.05);
}

/** The text colour of the first element matching `selector`, and the background it is drawn on (the first opaque one up its ancestors). */
const colorsOf = (selector: string) => `(() => {
  const el = document.querySelector(${JSON.stringify(selector)});
  if (!el) return null;
  let bg = null;
  for (let n = el; n && !bg; n = n.parentElement) {
    const c = getComputedStyle(n).backgroundColor;
    if (c && c !== 'transparent' && !/rgba\\(.*,\\s*0\\)$/.test(c)) bg = c;
  }
  return { color: getComputedStyle(el).color, background: bg ?? 'rgb(255, 255, 255)' };
})()`;

describe('console shell in a real browser (Chromium)', () => {
  let svc: TestService;
  let browser: Browser;
  let shots: string;
  /** Page errors, console errors and CSP violations seen by any page of the suite. */
  const problems: string[] = [];
  /** Paths of the service that answered a page 401 (Chromium logs those as errors; they are expected only where a test makes them). */
  const unauthorized: string[] = [];
  /** True while the expiry test runs: then any data call of the open pages may answer 401. */
  let tokensExpired = false;
  /** The page signed in by the sign-in test and used by the tests after it. */
  let page: Page;

  /** Reports CSP violations of every page of `context` to `sink` (an init script is injected by the browser, not subject to the page's CSP). */
  async function watchContext(context: BrowserContext, sink: string[]): Promise<void> {
    await context.exposeBinding('__reportCspViolation', ({ page: from }, v: Record<string, unknown>) => {
      sink.push(`CSP violation on ${from.url()}: ${JSON.stringify(v)}`);
    });
    await context.addInitScript(`document.addEventListener('securitypolicyviolation', (e) => window.__reportCspViolation({
      directive: e.violatedDirective, blocked: e.blockedURI, source: e.sourceFile, line: e.lineNumber, sample: e.sample }));`);
    context.on('page', (p) => watchPage(p, sink));
  }

  function watchPage(p: Page, sink: string[]): void {
    p.on('pageerror', (err) => sink.push(`page error on ${p.url()}: ${err.stack ?? err.message}`));
    p.on('console', (msg) => {
      if (msg.type() !== 'error') return;
      const where = msg.location().url.replace(/access_token=[^&]*/, 'access_token=…');
      // Chromium logs every 401 it receives; a wrong password and an expired token are answered
      // so on purpose, and the console handles both (the tests below check how). Nothing else.
      if (/^Failed to load resource: the server responded with a status of 401\b/.test(msg.text()) && where.startsWith(`${svc.baseUrl}/svcapi/`)) {
        const at = new URL(where).pathname;
        unauthorized.push(at);
        if (at !== '/svcapi/login' && !tokensExpired) sink.push(`401 from ${at} while the token was valid`);
        return;
      }
      sink.push(`console error on ${p.url()}: ${msg.text()} (${where}:${msg.location().lineNumber})`);
    });
  }

  /** A new context (its own session storage, as a new tab has) with the console open. */
  async function openConsole(options: { viewport?: { width: number; height: number }; colorScheme?: 'light' | 'dark'; sink?: string[]; setup?: (context: BrowserContext) => Promise<void> } = {}): Promise<Page> {
    const context = await browser.newContext({ viewport: options.viewport ?? DESKTOP, colorScheme: options.colorScheme ?? 'light' });
    await watchContext(context, options.sink ?? problems);
    await options.setup?.(context);
    const p = await context.newPage();
    await p.goto(`${svc.baseUrl}/ui/`);
    return p;
  }

  const emailField = (p: Page) => p.getByLabel('Email', { exact: true });
  const passwordField = (p: Page) => p.getByLabel('Password', { exact: true });
  const signInButton = (p: Page) => p.getByRole('button', { name: 'Sign in', exact: true });
  const signOutButton = (p: Page) => p.getByRole('button', { name: 'Sign out', exact: true });
  const navLink = (p: Page, name: string) => p.getByRole('navigation').getByRole('link', { name, exact: true });
  const heading = (p: Page, name: string) => p.getByRole('main').getByRole('heading', { name, exact: true, level: 1 });

  async function signIn(p: Page, password = ADMIN_PASSWORD): Promise<void> {
    await emailField(p).fill(ADMIN_EMAIL);
    await passwordField(p).fill(password);
    await signInButton(p).click();
  }

  async function signedIn(p: Page): Promise<void> {
    await signOutButton(p).waitFor();
    for (const name of NAV) await navLink(p, name).waitFor();
  }

  /** Every value in the page's session storage, local storage, and cookies. */
  async function storage(p: Page): Promise<{ session: string[]; local: string[]; cookies: string }> {
    const [session, local, cookies] = await p.evaluate<[string[], string[], string]>(
      '[Object.values(sessionStorage), Object.values(localStorage), document.cookie]');
    return { session, local, cookies };
  }

  /** Whether `token` is a token the service accepts now. */
  const accepted = async (token: string) => (await svc.request('GET', '/svcapi/me', { token })).status === 200;

  /** The text of the element that has focus (its accessible text: what Tab landed on). */
  const focused = (p: Page) => p.evaluate<string>('(document.activeElement?.textContent ?? "").trim() + "|" + (document.activeElement?.tagName ?? "")');

  before(async () => {
    assert.ok(fs.existsSync(CHROMIUM), `${CHROMIUM} is missing: install Debian's chromium (apt-get install -y chromium; .ci/run does it when missing)`);
    svc = await startService({ config: { auth: { tokenLifetimeSeconds: TOKEN_LIFETIME_SECONDS }, debug: { clockRoute: true } } });
    browser = await launchFor(svc);
    shots = fs.mkdtempSync(path.join(os.tmpdir(), 'console-shell-'));
  });
  after(async () => {
    await browser?.close();
    await svc?.dispose();
  });

  test('the watch sees what it must: a CSP violation, a page error and a console error on a console page', async () => {
    const seen: string[] = [];
    const p = await openConsole({ sink: seen });
    await emailField(p).waitFor();
    // An inline style element and an inline script: both refused by the policy, both reported.
    await p.evaluate(`document.head.appendChild(Object.assign(document.createElement('style'), { textContent: 'body { color: red }' }))`);
    await p.evaluate(`document.head.appendChild(Object.assign(document.createElement('script'), { textContent: 'window.__ran = true' }))`);
    await waitFor(() => seen.filter((s) => s.startsWith('CSP violation')).length >= 2, `both violations are reported (seen: ${seen.join('; ')})`);
    assert.ok(seen.some((s) => /style-src/.test(s)) && seen.some((s) => /script-src/.test(s)), seen.join('\n'));
    assert.equal(await p.evaluate('window.__ran === true'), false, 'the inline script did not run');
    await p.evaluate(`setTimeout(() => { throw new Error('thrown on purpose') }); console.error('logged on purpose')`);
    await waitFor(() => seen.some((s) => s.startsWith('page error') && s.includes('thrown on purpose')) && seen.some((s) => s.includes('logged on purpose')), 'the page error and console error are seen');
    await p.context().close();
  });

  test('sign-in: labelled fields; a wrong password shows an alert and keeps the form; the right one opens the shell, the token in sessionStorage only', async () => {
    page = await openConsole();
    await emailField(page).waitFor();
    assert.equal(await page.title(), 'Sign in · Historian console');
    assert.equal(await page.evaluate('document.activeElement?.id'), await emailField(page).getAttribute('id'), 'the email field has focus');

    await signIn(page, 'not-the-password');
    const alert = page.getByRole('alert');
    await waitFor(async () => (await alert.textContent())?.trim() !== '', 'the form says why');
    assert.match((await alert.textContent())!, /password|credential|email/i);
    await page.screenshot({ path: path.join(shots, 'sign-in-wrong-password.png') });
    assert.ok(await emailField(page).isVisible() && await passwordField(page).isVisible() && await signInButton(page).isEnabled(), 'the form stays, usable');
    assert.equal(await emailField(page).inputValue(), ADMIN_EMAIL, 'what was typed stays');
    assert.equal(await signOutButton(page).count(), 0);
    assert.deepEqual(await storage(page), { session: [], local: [], cookies: '' });

    // By keyboard: the focus is on the password (selected for retyping); Enter submits.
    await passwordField(page).fill('');
    await passwordField(page).focus();
    await page.keyboard.type(ADMIN_PASSWORD);
    await page.keyboard.press('Enter');
    await signedIn(page);
    assert.equal(await page.getByRole('alert').count(), 0, 'no alert is left over');
    await page.getByText(ADMIN_EMAIL, { exact: true }).waitFor();
    await heading(page, 'Trends').waitFor();
    assert.equal(await navLink(page, 'Trends').getAttribute('aria-current'), 'page');
    assert.equal(await page.title(), 'Trends · Historian console');

    const kept = await storage(page);
    assert.equal(kept.session.length, 1, 'one entry in sessionStorage');
    assert.ok(await accepted(kept.session[0]!), 'it is a token the service accepts');
    assert.deepEqual(kept.local, [], 'nothing in localStorage');
    assert.equal(kept.cookies, '', 'no cookie');
    assert.deepEqual(await page.context().cookies(), [], 'no cookie, not even an httpOnly one');
  });

  test('keyboard: Tab reaches the skip link, then the navigation in order; Enter switches the page; the skip link keeps it; Back returns', async () => {
    // From the start of the page: a freshly loaded one (the session is kept; nothing has focus).
    await page.reload();
    await signedIn(page);
    const order: string[] = [];
    for (let i = 0; i < 1 + NAV.length; i++) {
      await page.keyboard.press('Tab');
      order.push(await focused(page));
    }
    assert.deepEqual(order, ['Skip to content|A', ...NAV.map((n) => `${n}|A`)]);
    await page.keyboard.press('Tab');
    assert.equal(await focused(page), 'Sign out|BUTTON', 'then the sign-out button');

    // Enter on Alarms: its heading, aria-current moves, the hash says so.
    await page.keyboard.press('Shift+Tab');
    await page.keyboard.press('Shift+Tab');
    await page.keyboard.press('Shift+Tab');
    assert.equal(await focused(page), 'Alarms|A');
    await page.keyboard.press('Enter');
    await heading(page, 'Alarms').waitFor();
    assert.equal(new URL(page.url()).hash, '#/alarms');
    assert.equal(await navLink(page, 'Alarms').getAttribute('aria-current'), 'page');
    assert.equal(await navLink(page, 'Trends').getAttribute('aria-current'), null);
    assert.equal(await page.locator('[aria-current="page"]').count(), 1, 'one current page');
    assert.equal(await page.title(), 'Alarms · Historian console');

    // The skip link moves the focus to the content and leaves the page where it is.
    await page.reload();
    await heading(page, 'Alarms').waitFor();
    await page.keyboard.press('Tab');
    assert.equal(await focused(page), 'Skip to content|A');
    await page.keyboard.press('Enter');
    await waitFor(async () => page.evaluate<boolean>('document.activeElement?.id === "main" || !!document.activeElement?.closest("main")'), 'the focus is in the content');
    assert.equal(new URL(page.url()).hash, '#/alarms', 'still the alarms page');
    await heading(page, 'Alarms').waitFor();
    assert.equal(await navLink(page, 'Alarms').getAttribute('aria-current'), 'page');

    // Two more pages by keyboard, then Back twice.
    await navLink(page, 'System').focus();
    await page.keyboard.press('Enter');
    await heading(page, 'System').waitFor();
    assert.equal(new URL(page.url()).hash, '#/system');
    await page.goBack();
    await heading(page, 'Alarms').waitFor();
    assert.equal(await navLink(page, 'Alarms').getAttribute('aria-current'), 'page');
    assert.equal(await navLink(page, 'System').getAttribute('aria-current'), null);
    await page.goBack();
    await heading(page, 'Trends').waitFor();
    assert.equal(await navLink(page, 'Trends').getAttribute('aria-current'), 'page');
    assert.equal(await heading(page, 'Alarms').count(), 0);
  });

  test('a reload keeps the session and the page; a new tab (new session storage) shows the sign-in form', async () => {
    await navLink(page, 'Notifications').click();
    await heading(page, 'Notifications').waitFor();
    const token = (await storage(page)).session[0];
    await page.reload();
    await signedIn(page);
    await heading(page, 'Notifications').waitFor();
    assert.equal(await emailField(page).count(), 0, 'no sign-in form');
    assert.deepEqual((await storage(page)).session, [token], 'the same token');

    const other = await openConsole();
    await emailField(other).waitFor();
    await signInButton(other).waitFor();
    assert.equal(await signOutButton(other).count(), 0);
    assert.deepEqual((await storage(other)).session, []);
    await other.context().close();
  });

  test('layout: no horizontal overflow and the header visible at 1280×720 and 390×844 on every page; dark follows the system; screenshots', async (t) => {
    // The sign-in form, light and dark, desktop and phone.
    for (const [label, viewport, scheme] of [['1280x720-light', DESKTOP, 'light'], ['1280x720-dark', DESKTOP, 'dark'], ['390-light', PHONE, 'light'], ['390-dark', PHONE, 'dark']] as const) {
      const p = await openConsole({ viewport, colorScheme: scheme });
      await signInButton(p).waitFor();
      await assertNoOverflow(p, `sign-in ${label}`);
      for (const control of [emailField(p), passwordField(p), signInButton(p)]) await assertInside(p, control, viewport.width, `sign-in ${label}`);
      await assertReadable(p, `sign-in ${label}`, ['form.sign-in h1', 'form.sign-in label', 'form.sign-in button']);
      // The fields' edges must be seen to find them (WCAG 1.4.11: 3:1 against what surrounds them).
      for (const field of ['#sign-in-email', '#sign-in-password']) {
        const edge = await p.evaluate<{ border: string; around: string }>(`(() => {
          const el = document.querySelector(${JSON.stringify(field)});
          return { border: getComputedStyle(el).borderTopColor, around: ${colorsOf('form.sign-in')}.background };
        })()`);
        assert.ok(contrast(edge.border, edge.around) >= 3, `sign-in ${label}: ${field} edge ${edge.border} on ${edge.around} is ${contrast(edge.border, edge.around).toFixed(2)}:1`);
      }
      await p.screenshot({ path: path.join(shots, `sign-in-${label}.png`) });
      await p.context().close();
    }
    fs.mkdirSync(SHARED_SHOTS, { recursive: true });
    fs.copyFileSync(path.join(shots, 'sign-in-1280x720-light.png'), path.join(SHARED_SHOTS, 'sign-in.png'));

    // An unread notification: its count shows beside Notifications (the link's name stays exact)
    // and is said in the links' description; the alarm count (none) stays hidden.
    const posted = await svc.post('/svcapi/notifications', { severity: 'info', source: 'admin', title: 'Layout check', body: 'a badge to lay out', userId: ADMIN_EMAIL }, await svc.adminToken());
    assert.equal(posted.status, 201, posted.text);
    const badge = page.locator('header .badge:not([hidden])');
    await waitFor(async () => (await badge.count()) === 1 && (await badge.textContent()) === '1', 'the unread count shows');
    assert.equal(await badge.getAttribute('aria-hidden'), 'true');
    assert.equal(await navLink(page, 'Notifications').count(), 1, 'the link is still named exactly Notifications');
    assert.match((await page.locator('#header-counts').textContent()) ?? '', /0 active alarms, 1 unread notification/);
    assert.equal(await navLink(page, 'Notifications').getAttribute('aria-describedby'), 'header-counts');

    // The shell, on every page.
    for (const [label, viewport] of [['1280x720', DESKTOP], ['390', PHONE]] as const) {
      await page.setViewportSize(viewport);
      for (const scheme of ['light', 'dark'] as const) {
        await page.emulateMedia({ colorScheme: scheme });
        for (const name of NAV) {
          await navLink(page, name).click();
          await heading(page, name).waitFor();
          await assertNoOverflow(page, `${name} ${label} ${scheme}`);
          const boxes = [];
          for (const control of [...NAV.map((n) => navLink(page, n)), signOutButton(page), page.getByText(ADMIN_EMAIL, { exact: true })]) {
            boxes.push(await assertInside(page, control, viewport.width, `${name} ${label} ${scheme}`));
          }
          for (let i = 0; i < boxes.length; i++) {
            for (let j = i + 1; j < boxes.length; j++) assert.ok(!overlap(boxes[i]!, boxes[j]!), `${name} ${label} ${scheme}: header controls ${i} and ${j} overlap`);
          }
          // The sticky header leaves the content most of the window.
          const header = await page.locator('header.top').boundingBox();
          assert.ok(header && header.height <= viewport.height * 0.12, `${name} ${label} ${scheme}: the header is ${header?.height} px of ${viewport.height}`);
          // What is hidden takes no room (a class's display must not undo the hidden attribute).
          assert.deepEqual(await page.evaluate('[...document.querySelectorAll("[hidden]")].filter((e) => e.getClientRects().length > 0).map((e) => e.outerHTML)'), [], `${name} ${label} ${scheme}: hidden elements are not laid out`);
          await assertReadable(page, `${name} ${label} ${scheme}`, ['header.top nav a:not([aria-current])', 'header.top nav a[aria-current="page"]', 'header.top .who', 'header.top button', 'header.top .badge:not([hidden])', 'main h1']);
        }
        await navLink(page, 'Trends').click();
        await heading(page, 'Trends').waitFor();
        await page.screenshot({ path: path.join(shots, `shell-${label}-${scheme}.png`) });
      }
    }

    // Dark follows the system: the body's background turns dark, and back.
    await page.setViewportSize(DESKTOP);
    const background = () => page.evaluate<string>('getComputedStyle(document.body).backgroundColor');
    await page.emulateMedia({ colorScheme: 'light' });
    const light = await background();
    await page.emulateMedia({ colorScheme: 'dark' });
    const dark = await background();
    assert.notEqual(light, dark);
    assert.ok(luminance(light) > 0.6, `light background ${light}`);
    assert.ok(luminance(dark) < 0.1, `dark background ${dark}`);
    await page.emulateMedia({ colorScheme: 'light' });
    assert.equal(await background(), light);
    t.diagnostic(`screenshots: ${shots} (sign-in copied to ${SHARED_SHOTS}/sign-in.png)`);
  });

  test('an expired token: the next action brings back the sign-in form saying so; signing in again works', async () => {
    // A second tab, signed in now and left (the console closed, its token kept) until after the
    // expiry: the start of the console finds out then.
    const second = await openConsole();
    await signIn(second);
    await signedIn(second);
    await second.goto('about:blank');
    // A third that can learn of the expiry only from what it does next: its notification stream
    // is an empty one, and its timers (the header counts' refresh) are stopped.
    const third = await openConsole({
      setup: async (context) => {
        await context.route('**/svcapi/notifications/stream?*', (route) => route.fulfill({ status: 200, contentType: 'text/event-stream', body: ': not the service\n\n' }));
        await context.clock.install();
        await context.clock.pauseAt(new Date());
      },
    });
    await signIn(third);
    await signedIn(third);
    const before = (await storage(page)).session[0]!;
    assert.ok(await accepted(before));

    tokensExpired = true;
    await svc.advanceAuthClock(TOKEN_LIFETIME_SECONDS + 60, await svc.adminToken());
    assert.equal(await accepted(before), false, 'the service no longer accepts the token');

    // The next action: another page (by its URL: the shell may already have found out from its
    // notification stream, which the service closes on expiry, and be showing the form).
    await page.evaluate("location.hash = '#/alarms'");
    await emailField(page).waitFor();
    await signInButton(page).waitFor();
    await waitFor(async () => /session (has )?expired/i.test((await page.getByRole('alert').textContent()) ?? ''), 'the form says the session expired');
    assert.equal(await signOutButton(page).count(), 0, 'the shell is gone');
    assert.equal(await page.getByRole('navigation').count(), 0);
    assert.deepEqual((await storage(page)).session, [], 'the expired token is forgotten');
    await page.screenshot({ path: path.join(shots, 'sign-in-expired.png') });
    assert.equal(await page.evaluate('/undefined|\\[object|NaN/.test(document.body.textContent)'), false, 'nothing broken shown');
    assert.equal(await emailField(page).inputValue(), ADMIN_EMAIL, 'the email is kept: only the password is asked again');
    assert.equal(await page.evaluate('document.activeElement?.id'), await passwordField(page).getAttribute('id'), 'the password field has focus');

    await signIn(page);
    await signedIn(page);
    const renewed = (await storage(page)).session[0]!;
    assert.notEqual(renewed, before);
    assert.ok(await accepted(renewed));
    await navLink(page, 'System').click();
    await heading(page, 'System').waitFor();

    const mark = unauthorized.length;
    await third.evaluate("location.hash = '#/system'");
    await emailField(third).waitFor();
    await waitFor(async () => /session (has )?expired/i.test((await third.getByRole('alert').textContent()) ?? ''), 'a page switch finds the session expired');
    const refused = unauthorized.slice(mark);
    assert.ok(refused.some((p) => p === '/svcapi/monitor/alarm/events/active' || p === '/svcapi/notifications/unread-count'), `through a data call (401s: ${refused.join(', ')})`);
    assert.deepEqual((await storage(third)).session, []);
    await third.context().close();

    await second.goto(`${svc.baseUrl}/ui/`);
    await emailField(second).waitFor();
    await waitFor(async () => /session (has )?expired/i.test((await second.getByRole('alert').textContent()) ?? ''), 'a console opened with the expired token says so');
    assert.deepEqual((await storage(second)).session, []);
    await second.context().close();
    tokensExpired = false;
  });

  test('Sign out (by keyboard): the sign-in form, and the token is gone from sessionStorage', async () => {
    assert.equal((await storage(page)).session.length, 1);
    await signOutButton(page).focus();
    await page.keyboard.press('Enter');
    await emailField(page).waitFor();
    await signInButton(page).waitFor();
    assert.equal(await signOutButton(page).count(), 0);
    assert.equal(await page.getByRole('navigation').count(), 0);
    assert.equal(await page.locator('[role="alert"]').textContent(), '', 'no message: signing out is not an error');
    assert.deepEqual(await storage(page), { session: [], local: [], cookies: '' });
    await page.reload();
    await emailField(page).waitFor();
    assert.equal(await signOutButton(page).count(), 0, 'a reload stays signed out');
  });

  test('no page error, console error or CSP violation in any of it; a 401 only from the wrong password and the expired token', () => {
    // A 401 outside the expiry test (other than the wrong password's) is in `problems`.
    assert.deepEqual(problems, []);
    assert.ok(new Set(unauthorized).has('/svcapi/login'), 'the wrong password was seen (the 401 filter is not blind)');
  });

  async function assertNoOverflow(p: Page, label: string): Promise<void> {
    const [scroll, client] = await p.evaluate<[number, number]>('[document.documentElement.scrollWidth, document.documentElement.clientWidth]');
    assert.ok(scroll <= client, `${label}: page is ${scroll} px wide in a ${client} px window`);
  }

  /** Asserts the control is visible and wholly inside the window's width; returns its box. */
  async function assertInside(p: Page, control: Locator, width: number, label: string) {
    assert.ok(await control.isVisible(), `${label}: ${control} is visible`);
    const box = await control.boundingBox();
    assert.ok(box && box.width > 0 && box.height > 0, `${label}: ${control} has a size`);
    assert.ok(box.x >= 0 && box.x + box.width <= width, `${label}: ${control} is inside the window (${box.x}..${box.x + box.width} of ${width})`);
    return box;
  }

  /** Text against its background: at least 4.5:1 (WCAG AA) for each selector present. */
  async function assertReadable(p: Page, label: string, selectors: string[]): Promise<void> {
    for (const selector of selectors) {
      const colors = await p.evaluate<{ color: string; background: string } | null>(colorsOf(selector));
      assert.ok(colors, `${label}: ${selector} is there`);
      const ratio = contrast(colors.color, colors.background);
      assert.ok(ratio >= 4.5, `${label}: ${selector} ${colors.color} on ${colors.background} is ${ratio.toFixed(2)}:1`);
    }
  }
});

function overlap(a: { x: number; y: number; width: number; height: number }, b: typeof a): boolean {
  return a.x < b.x + b.width && b.x < a.x + a.width && a.y < b.y + b.height && b.y < a.y + a.height;
}
