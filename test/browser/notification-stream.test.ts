// The notification stream in a real browser (issue 14): headless Chromium from Debian's
// `chromium` package, driven by playwright-core, opens a page that uses the browser's own
// EventSource with `?access_token=` (browsers cannot set headers on an EventSource).
//
// How the browser reaches the service (trust of exactly the served key, the page at the service's
// origin so its EventSource is same-origin, as for a dashboard the service would host): chromium.ts.

import assert from 'node:assert/strict';
import fs from 'node:fs';
import { after, before, describe, test } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import { CHROMIUM, launchFor, pageAt } from './chromium.js';
import { startService, type TestService } from '../api/harness.js';
import { waitFor } from '../support/wait-for.js';

/** What the page records of each EventSource event, in arrival order. */
interface PageEvent {
  type: string;
  lastEventId: string;
  data: string;
  readyState: number;
}

const TEST_PAGE = `<!doctype html>
<meta charset="utf-8">
<title>notification stream</title>
<script>
  window.received = [];
  window.openStream = (token) => {
    const source = new EventSource('/svcapi/notifications/stream?access_token=' + encodeURIComponent(token));
    const record = (e) => window.received.push({ type: e.type, lastEventId: e.lastEventId ?? '', data: typeof e.data === 'string' ? e.data : '', readyState: source.readyState });
    for (const type of ['replay-complete', 'notification', 'message', 'error']) source.addEventListener(type, record);
    window.source = source;
  };
</script>
<p>notification stream test page</p>`;

describe('notification stream in a real browser (Chromium, EventSource)', () => {
  let svc: TestService;
  let admin: string;
  let browser: Browser;
  const ids: Record<string, string> = {};
  const users = {
    alice: { email: 'alice@plant-a.test', token: '', page: null as unknown as Page },
    bob: { email: 'bob@plant-b.test', token: '', page: null as unknown as Page },
  };

  // Page-side code is given as expressions: this project compiles without the DOM's types.
  const events = (page: Page) => page.evaluate<PageEvent[]>('window.received');
  const notifications = async (page: Page) => (await events(page)).filter((e) => e.type === 'notification');
  const postNotification = async (body: Record<string, unknown>) => {
    const res = await svc.post('/svcapi/notifications', { severity: 'warn', source: 'admin', body: 'from the browser test', ...body }, admin);
    assert.equal(res.status, 201, `POST /svcapi/notifications: ${res.text}`);
    return res.body as Record<string, unknown> & { id: string };
  };
  /** Waits until the page's events satisfy `done`; on failure the message shows what the page did receive. */
  const waitForEvents = async (page: Page, done: (received: PageEvent[]) => boolean, message: string) => {
    try {
      await waitFor(async () => done(await events(page)), message);
    } catch (err) {
      (err as Error).message += `; the page received ${JSON.stringify(await events(page))}`;
      throw err;
    }
  };
  const waitForNotification = (page: Page, id: string, who: string) =>
    waitForEvents(page, (received) => received.some((e) => e.type === 'notification' && e.lastEventId === id), `${who}'s page receives notification ${id}`);

  before(async () => {
    assert.ok(fs.existsSync(CHROMIUM), `${CHROMIUM} is missing: install Debian's chromium (apt-get install -y chromium; .ci/run does it when missing)`);
    svc = await startService();
    admin = await svc.adminToken();
    const create = async (url: string, body: object) => {
      const res = await svc.post(`/svcapi/${url}`, body, admin);
      assert.equal(res.status, 200, `${url}: ${res.text}`);
      return res.body.id as string;
    };
    ids.orgA = await create('orgs', { name: 'plant-a' });
    ids.orgB = await create('orgs', { name: 'plant-b' });
    for (const [user, org] of [
      [users.alice, ids.orgA],
      [users.bob, ids.orgB],
    ] as const) {
      await svc.newUser(user.email);
      const row = (await svc.get(`/svcapi/users/findOne?filter=${encodeURIComponent(JSON.stringify({ where: { email: user.email } }))}`, admin)).body;
      await create('userprofiles', { usersId: row.id, accessAllowed: { orgs: [org], sites: [], units: [] } });
      user.token = await svc.login(user.email, 'user-password-1');
    }

    browser = await launchFor(svc);
    for (const user of Object.values(users)) {
      const page = await pageAt(browser, svc, TEST_PAGE);
      assert.deepEqual(await page.evaluate('({ secure: isSecureContext, origin: location.origin })'), { secure: true, origin: svc.baseUrl });
      await page.evaluate(`openStream(${JSON.stringify(user.token)})`);
      user.page = page;
    }
    for (const [name, user] of Object.entries(users)) {
      await waitForEvents(user.page, (received) => received.some((e) => e.type === 'replay-complete'), `${name}'s page receives replay-complete`);
    }
  });

  after(async () => {
    await browser?.close();
    await svc?.dispose();
  });

  test('the page gets replay-complete first, then the notification an admin posts, with its id and fields', async () => {
    const payload = { sentBy: 'browser-test', value: 512.5, tags: ['TI-101'] };
    const created = await postNotification({ title: 'Drum temperature high', userId: users.alice.email, payload, link: '/units/7' });
    await waitForNotification(users.alice.page, created.id, 'alice');

    const received = await events(users.alice.page);
    assert.equal(received[0].type, 'replay-complete', `first event: ${JSON.stringify(received[0])}`);
    assert.deepEqual(JSON.parse(received[0].data), { replayed: 0 });
    assert.equal(received[0].lastEventId, '', 'replay-complete carries no id');
    assert.equal(received.filter((e) => e.type === 'error').length, 0, `no error events: ${JSON.stringify(received)}`);

    const [event] = received.filter((e) => e.type === 'notification');
    assert.equal(event.lastEventId, String(created.id));
    assert.equal(event.readyState, 1, 'EventSource is OPEN');
    const data = JSON.parse(event.data) as Record<string, unknown>;
    assert.equal(data.id, created.id);
    assert.equal(data.title, 'Drum temperature high');
    assert.equal(data.body, 'from the browser test');
    assert.equal(data.severity, 'warn');
    assert.equal(data.source, 'admin');
    assert.equal(data.userId, users.alice.email);
    assert.equal(data.link, '/units/7');
    assert.deepEqual(data.payload, payload);
    assert.equal(data.readAt ?? null, null);
    assert.equal(typeof data.createdAt, 'number');
  });

  test("another user's page (other grant) does not get notifications addressed to the first user or broadcast outside its grant", async () => {
    const toAlice = await postNotification({ title: 'for alice only', userId: users.alice.email });
    const toOrgA = await postNotification({ title: 'plant-a broadcast', orgsId: ids.orgA });
    const toOrgB = await postNotification({ title: 'plant-b broadcast', orgsId: ids.orgB });
    // Each stream delivers in order, so once the later row has arrived the earlier ones would have too.
    await waitForNotification(users.bob.page, toOrgB.id, 'bob');
    await waitForNotification(users.alice.page, toOrgA.id, 'alice');
    const lastForAlice = await postNotification({ title: 'for alice, after plant-b', userId: users.alice.email });
    await waitForNotification(users.alice.page, lastForAlice.id, 'alice');

    const bobIds = (await notifications(users.bob.page)).map((e) => e.lastEventId);
    assert.deepEqual(bobIds, [String(toOrgB.id)], 'bob receives only the plant-b broadcast');
    const aliceIds = (await notifications(users.alice.page)).map((e) => e.lastEventId);
    assert.ok(aliceIds.includes(String(toAlice.id)));
    assert.ok(!aliceIds.includes(String(toOrgB.id)), `alice does not receive the plant-b broadcast: ${aliceIds.join(', ')}`);

    for (const user of Object.values(users)) {
      assert.ok(!svc.logLines.some((line) => line.includes(user.token)), 'the access_token of a browser stream is not in the log');
    }
  });
});
