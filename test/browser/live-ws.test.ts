// Live data in a real browser: headless Chromium (Debian's `chromium`, driven by playwright-core)
// opens the browser's own WebSocket to /svcapi/ws with `?access_token=` (browsers cannot set
// headers on a WebSocket), subscribes, and receives exactly the points written through
// /svcapi/write; a subscription outside the user's grant is an error and the socket stays open.
// Trust and origin: see chromium.ts.

import assert from 'node:assert/strict';
import fs from 'node:fs';
import { after, before, describe, test } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import { CHROMIUM, launchFor, pageAt } from './chromium.js';
import { startService, type TestService } from '../api/harness.js';
import { waitFor } from '../support/wait-for.js';

const T0 = 1_700_000_000_000;
const SCOPE = { organization: 'acme', site: 'north', unit: 'boiler', grid: 'g1' };

const TEST_PAGE = `<!doctype html>
<meta charset="utf-8">
<title>live data</title>
<script>
  window.received = [];
  window.closeInfo = null;
  window.openSocket = (token) => new Promise((resolve, reject) => {
    const ws = new WebSocket('wss://' + location.host + '/svcapi/ws?access_token=' + encodeURIComponent(token));
    ws.onmessage = (e) => window.received.push(JSON.parse(e.data));
    ws.onclose = (e) => (window.closeInfo = { code: e.code });
    ws.onopen = () => { window.socket = ws; resolve(true); };
    ws.onerror = () => reject(new Error('socket error'));
  });
  window.sendMessage = (m) => window.socket.send(JSON.stringify(m));
</script>`;

describe('live data in a real browser (Chromium, WebSocket)', () => {
  let svc: TestService;
  let admin: string;
  let browser: Browser;
  let page: Page;
  const received = (): Promise<Array<Record<string, any>>> => page.evaluate('window.received');

  before(async () => {
    assert.ok(fs.existsSync(CHROMIUM), `${CHROMIUM} is missing: install Debian's chromium (apt-get install -y chromium; .ci/run does it when missing)`);
    svc = await startService({ config: { storage: { autoCreateCollections: true } } });
    admin = await svc.adminToken();
    assert.equal((await svc.request('POST', '/svcapi/write', { token: admin, body: { ...SCOPE, tags: { flow: [[T0, 0]] } } })).status, 200);
    browser = await launchFor(svc);
    page = await pageAt(browser, svc, TEST_PAGE);
  });
  after(async () => {
    await browser?.close();
    await svc?.dispose();
  });

  test('the page subscribes and receives the exact values written; outside its grant it gets an error and stays open', async () => {
    assert.equal(await page.evaluate(`openSocket(${JSON.stringify(admin)})`), true);
    await page.evaluate(`sendMessage(${JSON.stringify({ op: 'subscribe', id: 'page', ...SCOPE, tags: ['flow'] })})`);
    await waitFor(async () => (await received()).some((m) => m.op === 'subscribed'), 'the page is subscribed');
    const flow = Array.from({ length: 20 }, (_, i) => [T0 + (i + 1) * 1000, Math.round(i * 137.1) / 100]);
    assert.equal((await svc.request('POST', '/svcapi/write', { token: admin, body: { ...SCOPE, tags: { flow } } })).status, 200);
    const pointsOf = async () => (await received()).filter((m) => m.op === 'points').flatMap((m) => m.tags.flow as number[][]);
    await waitFor(async () => (await pointsOf()).length >= 20, 'the page receives the 20 points');
    assert.deepEqual(await pointsOf(), flow);

    // Another user, with no grant on acme: an error, and the socket stays open.
    const other = await svc.newUser('browser-live-other@plant.test');
    const second = await pageAt(browser, svc, TEST_PAGE);
    assert.equal(await second.evaluate(`openSocket(${JSON.stringify(other)})`), true);
    await second.evaluate(`sendMessage(${JSON.stringify({ op: 'subscribe', id: 'nope', ...SCOPE, tags: ['flow'] })})`);
    await waitFor(async () => ((await second.evaluate('window.received')) as Array<Record<string, any>>).some((m) => m.op === 'error' && m.id === 'nope'), 'the other page gets an error');
    assert.equal(await second.evaluate('window.closeInfo'), null, 'its socket stays open');
  });
});
