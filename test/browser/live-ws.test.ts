// Live data in a real browser: headless Chromium (Debian's `chromium`, driven by playwright-core)
// opens the browser's own WebSocket to /svcapi/ws with `?access_token=` (browsers cannot set
// headers on a WebSocket), subscribes, and receives exactly the points written through
// /svcapi/write; a subscription outside the user's grant is an error and the socket stays open.
// Trust and origin as in notification-stream.test.ts: Chromium accepts exactly the key the service
// serves, and the page is served at the service's origin.

import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import fs from 'node:fs';
import tls from 'node:tls';
import { after, before, describe, test } from 'node:test';
import { chromium, type Browser, type Page } from 'playwright-core';
import { startService, type TestService } from '../api/harness.js';
import { waitFor } from '../support/wait-for.js';

const CHROMIUM = process.env.HISTORIAN_CHROMIUM ?? '/usr/bin/chromium';
// The test page is fulfilled by playwright, so Chromium cannot tell it came from this machine and
// its Local Network Access checks would block the page's WebSocket to localhost
// (net::ERR_BLOCKED_BY_LOCAL_NETWORK_ACCESS_CHECKS); a page the service itself served would not be.
const CHROMIUM_FLAGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--disable-features=LocalNetworkAccessChecks'];
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

function servedKeyHash(port: number, ca: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = tls.connect({ host: '127.0.0.1', port, servername: 'localhost', ca }, () => {
      const cert = new crypto.X509Certificate(socket.getPeerCertificate().raw);
      socket.end();
      resolve(crypto.createHash('sha256').update(cert.publicKey.export({ type: 'spki', format: 'der' })).digest('base64'));
    });
    socket.once('error', reject);
  });
}

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
    const spki = await servedKeyHash(svc.port, svc.ca);
    browser = await chromium.launch({ executablePath: CHROMIUM, args: [...CHROMIUM_FLAGS, `--ignore-certificate-errors-spki-list=${spki}`], timeout: 60_000 });
    const pageUrl = `${svc.baseUrl}/__test_page`;
    page = await (await browser.newContext()).newPage();
    await page.route(pageUrl, (route) => route.fulfill({ status: 200, contentType: 'text/html; charset=utf-8', body: TEST_PAGE }));
    await page.goto(pageUrl);
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
    const second = await (await browser.newContext()).newPage();
    await second.route(`${svc.baseUrl}/__test_page`, (route) => route.fulfill({ status: 200, contentType: 'text/html; charset=utf-8', body: TEST_PAGE }));
    await second.goto(`${svc.baseUrl}/__test_page`);
    assert.equal(await second.evaluate(`openSocket(${JSON.stringify(other)})`), true);
    await second.evaluate(`sendMessage(${JSON.stringify({ op: 'subscribe', id: 'nope', ...SCOPE, tags: ['flow'] })})`);
    await waitFor(async () => ((await second.evaluate('window.received')) as Array<Record<string, any>>).some((m) => m.op === 'error' && m.id === 'nope'), 'the other page gets an error');
    assert.equal(await second.evaluate('window.closeInfo'), null, 'its socket stays open');
  });
});
