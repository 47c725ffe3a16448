// The console's Alarms, Notifications and System pages in a real browser (Debian's Chromium,
// playwright-core) against the real service: /ui/ as the service serves it, signed in through the
// form. A monitored collection ticks every 150 ms with two limHi rules; the value above a limit is
// written through the API while the Alarms page is open, and the page shows the event without a
// reload (the notification stream, or the page's poll). What the page shows is checked against
// what the API answers; the roles are checked on both sides (no button, and a 403 from the server).
// Screenshots of every page (1280×720 light and dark, 390 px) go to a temp dir named in the output.

import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { Browser } from 'playwright-core';
import { CHROMIUM, launchFor } from './chromium.js';
import {
  assertClean, assertNoHorizontalOverflow, DESKTOP, go, headerBadge, LIVE_TIMEOUT_MS, openConsole, panelReady, PHONE, screenshot, type ConsolePage,
} from './console-alarms-support.js';
import { ADMIN_EMAIL, ADMIN_PASSWORD, startService, type TestService } from '../api/harness.js';
import { M, Plant, collectionIdOf, enc, type Scope } from '../api/monitor-support.js';
import { waitFor } from '../support/wait-for.js';

const TICK_MS = 150;
const PASSWORD = 'monitor-password-1'; // what Plant.account gives its users
const MAIN: Scope = { organization: 'acme', site: 'north', unit: 'boiler-1', grid: 'main' };
const MAIN_ID = collectionIdOf(MAIN);
const SHOTS = '/tmp/console-shots';
const live = { timeoutMs: LIVE_TIMEOUT_MS, intervalMs: 50 };

describe('console: Alarms, Notifications and System pages (Chromium)', () => {
  let svc: TestService;
  let admin: string;
  let plant: Plant;
  let browser: Browser;
  let shotDir: string;
  let operator: { email: string; token: string };
  let viewer: { email: string; token: string };
  let op: ConsolePage;
  const rules: Record<string, string> = {};
  const events: Record<string, any> = {};
  const getEvent = async (id: string) => {
    const res = await svc.get(`${M}/alarm/events/${enc(id)}`, admin);
    assert.equal(res.status, 200, res.text);
    return res.body;
  };
  const unreadCount = async (token: string) => (await svc.get('/svcapi/notifications/unread-count', token)).body.count as number;

  before(async () => {
    assert.ok(fs.existsSync(CHROMIUM), `${CHROMIUM} is missing: install Debian's chromium`);
    shotDir = fs.mkdtempSync(path.join(os.tmpdir(), 'console-alarms-shots-'));
    fs.mkdirSync(SHOTS, { recursive: true });
    svc = await startService();
    admin = await svc.adminToken();
    plant = new Plant(() => svc, () => admin);
    await plant.collection(MAIN, TICK_MS);
    // The tags exist (normal values) before their rules.
    await plant.writeValue(MAIN, 'TI-101', 100);
    await plant.writeValue(MAIN, 'PI-202', 1);
    rules.ti = await plant.rule({ collection_id: MAIN_ID, tag: 'TI-101', limHi: 500, severity: 'error', name: 'Drum temperature' });
    rules.pi = await plant.rule({ collection_id: MAIN_ID, tag: 'PI-202', limHi: 10, severity: 'warn', name: 'Drum pressure' });
    const unit = await plant.unitOf(MAIN);
    operator = await plant.account('operator@acme.test', 'read-write', [unit]);
    viewer = await plant.account('viewer@acme.test', 'read-only', [unit]);
    // An ingest client with some traffic, for the System page's ingest table.
    assert.equal((await svc.post('/svcapi/ingestconfigs', { clientId: 'plc-7', organization: 'acme', site: 'north', unit: 'boiler-1' }, admin)).status, 200);
    const ingest = await svc.post('/ingest/plc-7/main', [{ ts: Date.now(), values: { 'FT-301': 3.5 } }], operator.token);
    assert.ok(ingest.status < 300, `ingest: ${ingest.status} ${ingest.text}`);
    browser = await launchFor(svc);
    op = await openConsole(browser, svc, operator.email, PASSWORD);
  });

  after(async () => {
    await browser?.close();
    await svc?.dispose();
    if (shotDir) console.log(`# screenshots: ${shotDir}`);
  });

  test('Alarms: a value above limHi shows as an active event on the open page, without a reload, and the header counts it', async () => {
    const { page } = op;
    await go(page, 'Alarms');
    await panelReady(page, 'alarms-active');
    assert.equal(await page.locator('#alarms-active tr[data-event]').count(), 0, 'no active event yet');
    await page.evaluate('window.__sameDocument = true');

    await plant.writeValue(MAIN, 'TI-101', 612.25);
    const row = page.locator('#alarms-active tr[data-event]', { hasText: 'TI-101' });
    await waitFor(async () => (await row.count()) === 1, 'the TI-101 event appears on the open Alarms page', live);
    assert.equal(await page.evaluate('window.__sameDocument'), true, 'the page was not reloaded');

    events.ti = (await plant.ruleEvents(rules.ti))[0];
    assert.equal(await row.getAttribute('data-event'), events.ti.id);
    assert.equal(await row.getAttribute('data-status'), 'active');
    const cells = (await row.locator('td').allTextContents()).map((t) => t.trim());
    assert.deepEqual(cells.slice(0, 7), ['active', 'error', 'TI-101', MAIN_ID, 'high', '612.25', '500']);
    assert.match(cells[7]!, /^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\d+ s ago$/, `since: local time and how long ago (${cells[7]})`);
    assert.equal(await row.locator('.sev.sev-error').count(), 1, 'severity badge');
    await waitFor(async () => (await headerBadge(page, 'Alarms')) === '1', 'the header shows 1 active alarm', live);
    // The recent events list it too (newest first, last 24 h).
    await waitFor(async () => (await page.locator('#alarms-recent tr[data-event]', { hasText: 'TI-101' }).count()) === 1, 'the recent events list the event', live);
    await assertClean(op);
  });

  test('read-only: the event is listed without an Acknowledge button, and the server refuses the ack with that user\'s token', async () => {
    const ro = await openConsole(browser, svc, viewer.email, PASSWORD);
    try {
      await go(ro.page, 'Alarms');
      await panelReady(ro.page, 'alarms-active');
      const row = ro.page.locator('#alarms-active tr[data-event]', { hasText: 'TI-101' });
      await waitFor(async () => (await row.count()) === 1, 'the read-only user sees the TI-101 event', live);
      assert.equal(await row.getAttribute('data-status'), 'active');
      assert.equal(await ro.page.getByRole('button', { name: 'Acknowledge' }).count(), 0, 'no Acknowledge button for a read-only user');

      const token = await ro.page.evaluate<string>("sessionStorage.getItem('historian.console.token')");
      assert.ok(token, 'the console keeps its session token');
      const refused = await svc.request('POST', `${M}/alarm/events/${enc(events.ti.id)}/ack`, { token });
      assert.equal(refused.status, 403, `ack with the read-only user's token: ${refused.text}`);
      assert.equal((await getEvent(events.ti.id)).status, 'active', 'the event is still active');
      await assertClean(ro);
    } finally {
      await ro.page.context().close();
    }
  });

  test('Acknowledge: one button per active event, told apart by its tag; clicking it acknowledges as that user and the row follows', async () => {
    const { page } = op;
    await plant.writeValue(MAIN, 'PI-202', 42);
    const buttons = page.getByRole('button', { name: 'Acknowledge', exact: true });
    await waitFor(async () => (await buttons.count()) === 2, 'a second active event brings a second Acknowledge button', live);
    events.pi = (await plant.ruleEvents(rules.pi))[0];
    await waitFor(async () => (await headerBadge(page, 'Alarms')) === '2', 'the header shows 2 active alarms', live);
    // Same accessible name, described by the row's tag cell.
    const descriptions = await page.evaluate<string[]>(`[...document.querySelectorAll('#alarms-active button[data-ack]')].map((b) => document.getElementById(b.getAttribute('aria-describedby')).textContent)`);
    assert.deepEqual(descriptions.sort(), ['PI-202', 'TI-101']);

    const row = page.locator('#alarms-active tr[data-event]', { hasText: 'TI-101' });
    await row.getByRole('button', { name: 'Acknowledge' }).click();
    await waitFor(async () => (await row.getAttribute('data-status')) === 'acknowledged', 'the TI-101 row becomes acknowledged', live);
    assert.equal((await row.locator('td').first().textContent())?.trim(), 'acknowledged');
    assert.match((await row.textContent()) ?? '', new RegExp(operator.email.replace('.', '\\.')), 'the row names who acknowledged');
    assert.equal(await row.getByRole('button', { name: 'Acknowledge' }).count(), 0, 'no button on an acknowledged event');

    const acked = await getEvent(events.ti.id);
    assert.equal(acked.status, 'acknowledged');
    assert.equal(acked.acked_by, operator.email, 'acknowledged with the operator\'s own token');
    // The keyboard stays in the table: focus moves to the remaining button.
    await waitFor(async () => (await page.evaluate<string | null>("document.activeElement?.getAttribute('data-ack') ?? null")) === events.pi.id, 'focus moves to the next Acknowledge button', live);
    assert.equal(await headerBadge(page, 'Alarms'), '2', 'acknowledged events are still unresolved');

    // Recent events filtered by status; the filter is in the URL, so a link reopens it.
    await page.getByLabel('Status').selectOption('acknowledged');
    const recent = page.locator('#alarms-recent tr[data-event]');
    await waitFor(async () => (await recent.count()) === 1 && (await recent.first().getAttribute('data-event')) === events.ti.id, 'the recent events show only the acknowledged one', live);
    assert.match(page.url(), /#\/alarms\?status=acknowledged$/);
    await page.getByLabel('Status').selectOption('');
    await waitFor(async () => (await recent.count()) === 2, 'every status again', live);
    await screenshot(page, shotDir, 'alarms-1280-light');
    fs.copyFileSync(path.join(shotDir, 'alarms-1280-light.png'), path.join(SHOTS, 'alarms.png'));
    await assertClean(op);
  });

  test('Notifications: the monitor\'s notification is listed, the unread count is the API\'s, Mark read marks it read; new ones arrive live, as text', async () => {
    const { page } = op;
    await go(page, 'Notifications');
    await panelReady(page, 'notifications-list');
    const listed = (await svc.get(`/svcapi/notifications?filter=${enc(JSON.stringify({ order: 'id DESC' }))}`, operator.token)).body as any[];
    const note = listed.find((n) => n.source === 'monitor' && n.payload?.event_id === events.ti.id);
    assert.ok(note, `the API lists the TI-101 notification: ${JSON.stringify(listed)}`);
    const item = page.locator(`li.note[data-id="${note.id}"]`);
    assert.equal((await item.locator('.note-title').textContent())?.trim(), note.title);
    assert.equal(await item.getAttribute('data-read'), 'false');

    const before = await unreadCount(operator.token);
    assert.ok(before >= 2, `unread before: ${before}`);
    const shown = page.locator('#notifications-unread');
    await waitFor(async () => (await shown.getAttribute('data-count')) === String(before), `the page shows ${before} unread`, live);
    assert.equal((await shown.textContent())?.trim(), `${before} unread`);

    // By keyboard: focus the row's button, press Enter.
    await item.getByRole('button', { name: 'Mark read' }).focus();
    await page.keyboard.press('Enter');
    await waitFor(async () => (await item.getAttribute('data-read')) === 'true', 'the row shows as read', live);
    const read = await svc.get(`/svcapi/notifications/${note.id}`, operator.token);
    assert.equal(read.status, 200, read.text);
    assert.ok(Number.isInteger(read.body.readAt), `readAt set: ${read.text}`);
    assert.equal(await unreadCount(operator.token), before - 1, 'the API counts one fewer unread');
    await waitFor(async () => (await shown.getAttribute('data-count')) === String(before - 1), 'the page counts one fewer unread', live);
    await waitFor(async () => (await headerBadge(page, 'Notifications')) === String(before - 1), 'the header counts one fewer unread', live);

    // Titles are user data: shown as text; a javascript: link is not a link, an http(s) one is.
    const hostile = await svc.post('/svcapi/notifications', { severity: 'critical', source: 'admin', userId: operator.email, title: '<img src=x onerror="alert(1)"> & <b>bold</b>', body: 'line one\nline two', link: 'javascript:alert(1)' }, admin);
    assert.equal(hostile.status, 201, hostile.text);
    const plain = await svc.post('/svcapi/notifications', { severity: 'info', source: 'admin', userId: operator.email, title: 'Shift report ready', body: 'See the report.', link: '/ui/#/system' }, admin);
    assert.equal(plain.status, 201, plain.text);
    const hostileItem = page.locator(`li.note[data-id="${hostile.body.id}"]`);
    const plainItem = page.locator(`li.note[data-id="${plain.body.id}"]`);
    await waitFor(async () => (await plainItem.count()) === 1 && (await hostileItem.count()) === 1, 'new notifications are put on the open list', live);
    assert.equal((await hostileItem.locator('.note-title').textContent())?.trim(), '<img src=x onerror="alert(1)"> & <b>bold</b>');
    assert.equal(await hostileItem.locator('img, b, a').count(), 0, 'no markup and no javascript: link from a title');
    assert.equal(await plainItem.getByRole('link', { name: 'Shift report ready' }).getAttribute('href'), `${svc.baseUrl}/ui/#/system`);
    assert.equal(await page.locator('li.note').first().getAttribute('data-id'), String(plain.body.id), 'the newest is on top');
    await waitFor(async () => (await shown.getAttribute('data-count')) === String(await unreadCount(operator.token)), 'the unread count follows the new ones', live);

    await page.getByRole('button', { name: 'Mark all read' }).click();
    await waitFor(async () => (await page.locator('li.note[data-read="false"]').count()) === 0, 'every row shows as read', live);
    assert.equal(await unreadCount(operator.token), 0, 'the API counts none unread');
    await waitFor(async () => (await shown.getAttribute('data-count')) === '0', 'the page counts none unread', live);
    await waitFor(async () => (await headerBadge(page, 'Notifications')) === '', 'the header badge goes away', live);
    await assertClean(op);
  });

  test('System as a non-admin: health per subsystem as /svcapi/health says, single node, and the admin sections say an admin is needed', async () => {
    const { page } = op;
    await go(page, 'System');
    for (const id of ['system-health', 'system-ingest', 'system-buffers', 'system-cluster', 'system-jobs', 'system-backup']) await panelReady(page, id);
    const health = (await svc.get('/svcapi/health')).body as { subsystems: Record<string, { status: string }> };
    const rows = page.locator('#system-health tr[data-subsystem]');
    const shown: Record<string, string> = {};
    for (const row of await rows.all()) shown[(await row.getAttribute('data-subsystem'))!] = ((await row.locator('td').nth(1).textContent()) ?? '').trim();
    assert.deepEqual(shown, Object.fromEntries(Object.entries(health.subsystems).map(([k, v]) => [k, v.status])));
    assert.equal(await page.locator('#system-health td .state-ok').count(), Object.values(health.subsystems).filter((s) => s.status === 'ok').length);
    assert.match((await page.locator('#system-cluster').textContent()) ?? '', /Single node \(clustering off\)/);
    assert.match((await page.locator('#system-ingest').textContent()) ?? '', /plc-7/, 'the ingest client is listed');
    assert.match((await page.locator('#system-jobs').textContent()) ?? '', /needs an admin/);
    assert.match((await page.locator('#system-backup').textContent()) ?? '', /needs an admin/);
    assert.equal(await page.locator('#system-jobs table, #system-backup table').count(), 0);
    await assertClean(op);
  });

  test('System as admin: the process log shows a backup job with its progress, and the backup section its results', async () => {
    const ad = await openConsole(browser, svc, ADMIN_EMAIL, ADMIN_PASSWORD);
    try {
      const { page } = ad;
      await go(page, 'System');
      await panelReady(page, 'system-jobs');
      await panelReady(page, 'system-backup');
      const run = await svc.post('/api/admin/backup/run', { kind: 'all' }, admin);
      assert.equal(run.status, 200, run.text);
      const job = page.locator(`#system-jobs tr[data-job="${run.body.job_id}"]`);
      await waitFor(async () => (await job.getAttribute('data-status').catch(() => null)) === 'done', 'the backup job shows, done, in the process log', live);
      assert.equal(await job.getAttribute('data-kind'), 'backup');
      assert.equal(await job.locator('progress').getAttribute('value'), '1');
      const status = (await svc.get('/api/admin/backup/status', admin)).body;
      assert.ok(status.last_sqlite?.file_name, `a finished sqlite backup: ${JSON.stringify(status)}`);
      await waitFor(async () => ((await page.locator('#system-backup').textContent()) ?? '').includes(status.last_sqlite.file_name), 'the backup section names the last backup', live);
      await assertNoHorizontalOverflow(page, 'System (admin) at 1280×720');
      await screenshot(page, shotDir, 'system-admin-1280-light');
      fs.copyFileSync(path.join(shotDir, 'system-admin-1280-light.png'), path.join(SHOTS, 'system.png'));
      await page.emulateMedia({ colorScheme: 'dark' });
      await screenshot(page, shotDir, 'system-admin-1280-dark');
      await page.setViewportSize(PHONE);
      await assertNoHorizontalOverflow(page, 'System (admin) at 390 px');
      await screenshot(page, shotDir, 'system-admin-390-dark');
      await assertClean(ad);
    } finally {
      await ad.page.context().close();
    }
  });

  test('every page at 1280×720 and 390×844, light and dark: no horizontal scroll of the document', async () => {
    const { page } = op;
    for (const name of ['Alarms', 'Notifications', 'System'] as const) {
      await page.setViewportSize(DESKTOP);
      await page.emulateMedia({ colorScheme: 'light' });
      await go(page, name);
      for (const panel of await page.locator('section.panel').all()) await panelReady(page, (await panel.getAttribute('id'))!);
      const slug = name.toLowerCase();
      await assertNoHorizontalOverflow(page, `${name} at 1280×720`);
      await screenshot(page, shotDir, `${slug}-1280-light`);
      await page.emulateMedia({ colorScheme: 'dark' });
      await screenshot(page, shotDir, `${slug}-1280-dark`);
      await page.emulateMedia({ colorScheme: 'light' });
      await page.setViewportSize(PHONE);
      await assertNoHorizontalOverflow(page, `${name} at 390×844`);
      await screenshot(page, shotDir, `${slug}-390-light`);
    }
    await page.setViewportSize(DESKTOP);
    await assertClean(op);
  });
});
