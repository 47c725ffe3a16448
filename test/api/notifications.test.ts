// Notification routes (issue 14), checked from the contract alone: SPEC "Notification" and
// "Notifications", WIRE part 2 "Notifications", and the lead's decisions for issue 14.
// Create (admin, 201, validation naming the field), mark-read, unread-count, the generic
// entity routes under the same visibility, expiry, and the retention purge driven by
// debug.clockRoute with a one-second purge interval. The stream has its own file.

import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { waitFor } from '../support/wait-for.js';
import { startService, type HttpResult, type TestService } from './harness.js';
import { accountHelpers, filterQuery, USER_PASSWORD, type Account } from './accounts.js';

const enc = encodeURIComponent;
const filterQ = filterQuery;
const PASSWORD = USER_PASSWORD;
const MINIMAL = { severity: 'info', source: 'custom', title: 'Boiler pressure', body: 'Pressure above the warning limit' };

/** Calls shared by the describes below; each binds them to its own service. */
function helpers(svcRef: () => TestService, adminRef: () => string) {
  const { call, mk, account } = accountHelpers(svcRef, adminRef);
  const notify = async (fields: Record<string, unknown> = {}): Promise<Record<string, any>> => {
    const res = await call(adminRef(), 'POST', '/svcapi/notifications', { ...MINIMAL, ...fields });
    assert.equal(res.status, 201, `create ${JSON.stringify(fields).slice(0, 120)}: ${res.status} ${res.text}`);
    return res.body;
  };
  const advanceClock = async (seconds: number) => {
    const res = await call(adminRef(), 'POST', '/svcapi/_debug/advance_clock', { seconds });
    assert.equal(res.status, 200, `advance_clock: ${res.text}`);
  };
  const adminGet = (id: string) => call(adminRef(), 'GET', `/svcapi/notifications/${id}`);
  return { call, mk, account, notify, advanceClock, adminGet };
}

describe('notification routes', { timeout: 120_000 }, () => {
  let svc: TestService;
  let admin: string;
  const h = helpers(() => svc, () => admin);
  const { call, mk, account, notify, advanceClock, adminGet } = h;
  const ids: Record<string, string> = {};
  /** Granted unit u1 only. */
  let unitUser: Account;
  /** Granted site s1 (so its unit u1 too). */
  let siteUser: Account;
  /** Granted org o1 (so its site s1 and unit u1 too). */
  let orgUser: Account;
  /** Another tenant: granted org o2. */
  let otherUser: Account;
  /** No grant at all. */
  let bareUser: Account;

  before(async () => {
    svc = await startService({ config: { debug: { clockRoute: true } } });
    admin = await svc.adminToken();
    ids.o1 = await mk('orgs', { name: 'n-acme' });
    ids.s1 = await mk('sites', { name: 'n-north', orgsId: ids.o1 });
    ids.u1 = await mk('units', { name: 'n-boiler-1', siteId: ids.s1 });
    ids.o2 = await mk('orgs', { name: 'n-evil' });
    ids.s2 = await mk('sites', { name: 'n-south', orgsId: ids.o2 });
    ids.u2 = await mk('units', { name: 'n-turbine-2', siteId: ids.s2 });
    unitUser = await account('unit@acme.test', { units: [ids.u1] });
    siteUser = await account('site@acme.test', { sites: [ids.s1] });
    orgUser = await account('org@acme.test', { orgs: [ids.o1] });
    otherUser = await account('other@evil.test', { orgs: [ids.o2] });
    bareUser = await account('bare@nowhere.test');
  });
  after(() => svc.dispose());

  test('create: 201 with the stored row in entity wire form', async () => {
    const expiresAt = Date.now() + 3_600_000;
    const res = await call(admin, 'POST', '/svcapi/notifications', {
      severity: 'critical', source: 'monitor', title: 'Drum level low', body: 'Level below 20 %',
      unitsId: Number(ids.u1), link: '/units/1', redirect: true, payload: { tag: 'LI-101', value: 17.5, nested: { a: [1, 2] } },
      sourceRef: 'rule-7', expiresAt,
    });
    assert.equal(res.status, 201, res.text);
    const row = res.body;
    assert.match(row.id, /^\d+$/, 'id is a string of digits');
    assert.equal(row.unitsId, ids.u1, 'a numeric unitsId comes back as a string');
    assert.equal(row.orgsId, null);
    assert.equal(row.sitesId, null);
    assert.equal(row.userId, null, 'a broadcast');
    assert.equal(row.severity, 'critical');
    assert.equal(row.source, 'monitor');
    assert.equal(row.title, 'Drum level low');
    assert.equal(row.body, 'Level below 20 %');
    assert.equal(row.link, '/units/1');
    assert.equal(row.redirect, true);
    assert.deepEqual(row.payload, { tag: 'LI-101', value: 17.5, nested: { a: [1, 2] } });
    assert.equal(row.sourceRef, 'rule-7');
    assert.equal(row.expiresAt, expiresAt);
    assert.equal(typeof row.createdAt, 'number', 'createdAt is set by the service');
    assert.equal(row.readAt, null);
    assert.equal(row.deliveredAt, null);
    // The stored row reads back the same through the generic get.
    const stored = await adminGet(row.id);
    assert.equal(stored.status, 200);
    for (const key of ['id', 'unitsId', 'userId', 'severity', 'source', 'title', 'body', 'link', 'redirect', 'payload', 'sourceRef', 'expiresAt', 'createdAt']) {
      assert.deepEqual(stored.body[key], row[key], key);
    }
  });

  test('create: userId is the recipient email, lower-cased; a numeric users.id is stored as that email', async () => {
    const byEmail = await notify({ userId: 'Unit@ACME.test' });
    assert.equal(byEmail.userId, 'unit@acme.test');
    const byId = await notify({ userId: Number(siteUser.id) });
    assert.equal(byId.userId, 'site@acme.test');
    // The addressee sees both (as their own rows), nobody else without the admin role does.
    assert.equal((await call(unitUser.token, 'GET', `/svcapi/notifications/${byEmail.id}`)).status, 200);
    assert.equal((await call(siteUser.token, 'GET', `/svcapi/notifications/${byId.id}`)).status, 200);
    assert.equal((await call(orgUser.token, 'GET', `/svcapi/notifications/${byEmail.id}`)).status, 404);
  });

  test('create: 401 without a token or with a bad one, 403 for a non-admin; nothing stored', async () => {
    const stored = (await call(admin, 'GET', '/svcapi/notifications/count')).body.count;
    assert.equal((await call(undefined, 'POST', '/svcapi/notifications', MINIMAL)).status, 401);
    assert.equal((await call('not-a-token', 'POST', '/svcapi/notifications', MINIMAL)).status, 401);
    for (const user of [unitUser, orgUser, bareUser]) {
      const res = await call(user.token, 'POST', '/svcapi/notifications', MINIMAL);
      assert.equal(res.status, 403, `${user.email}: ${res.text}`);
      assert.equal(typeof res.body.error, 'string');
    }
    assert.equal((await call(admin, 'GET', '/svcapi/notifications/count')).body.count, stored);
  });

  test('create: each invalid field is a 400 {error} naming it, and nothing is stored', async () => {
    const stored = (await call(admin, 'GET', '/svcapi/notifications/count')).body.count;
    const { severity, source, title, body } = MINIMAL;
    const cases: Array<[string, Record<string, unknown>, RegExp]> = [
      ['unknown severity', { ...MINIMAL, severity: 'fatal' }, /severity/],
      ['severity of the wrong type', { ...MINIMAL, severity: 3 }, /severity/],
      ['unknown source', { ...MINIMAL, source: 'me' }, /source/],
      ['missing severity', { source, title, body }, /severity/],
      ['missing source', { severity, title, body }, /source/],
      ['missing title', { severity, source, body }, /title/],
      ['missing body', { severity, source, title }, /body/],
      ['title of 121 bytes', { ...MINIMAL, title: 't'.repeat(121) }, /title/],
      ['title of 60 characters but 122 bytes', { ...MINIMAL, title: 'é'.repeat(61) }, /title/],
      ['body of 2049 bytes', { ...MINIMAL, body: 'b'.repeat(2049) }, /body/],
      ['body of 2050 bytes in 1025 characters', { ...MINIMAL, body: 'ü'.repeat(1025) }, /body/],
      ['payload above 16384 bytes of JSON', { ...MINIMAL, payload: { big: 'p'.repeat(16_400) } }, /payload/],
      ['payload that is an array', { ...MINIMAL, payload: [1, 2] }, /payload/],
      ['payload that is a string', { ...MINIMAL, payload: 'text' }, /payload/],
      ['redirect without link', { ...MINIMAL, redirect: true }, /link|redirect/],
      ['expiresAt in the past', { ...MINIMAL, expiresAt: Date.now() - 60_000 }, /expiresAt/],
      ['unknown field', { ...MINIMAL, colour: 'red' }, /colour/],
      ['createdAt set by the client', { ...MINIMAL, createdAt: Date.now() }, /createdAt/],
      ['readAt set by the client', { ...MINIMAL, readAt: Date.now() }, /readAt/],
      ['deliveredAt set by the client', { ...MINIMAL, deliveredAt: Date.now() }, /deliveredAt/],
      ['id set by the client', { ...MINIMAL, id: 424242 }, /\bid\b/],
      ['orgsId of no org', { ...MINIMAL, orgsId: 987654 }, /orgsId/],
      ['sitesId of no site', { ...MINIMAL, sitesId: 987654 }, /sitesId/],
      ['unitsId of no unit', { ...MINIMAL, unitsId: 987654 }, /unitsId/],
    ];
    for (const [what, sent, names] of cases) {
      const res = await call(admin, 'POST', '/svcapi/notifications', sent);
      assert.equal(res.status, 400, `${what}: ${res.status} ${res.text.slice(0, 200)}`);
      assert.equal(typeof res.body?.error, 'string', `${what}: body ${res.text.slice(0, 200)}`);
      assert.match(res.body.error, names, `${what}: the error names the field`);
    }
    const notJson = await svc.request('POST', '/svcapi/notifications', { rawBody: '{"severity": "info",', token: admin, headers: { 'content-type': 'application/json' } });
    assert.equal(notJson.status, 400, 'malformed JSON');
    assert.equal((await call(admin, 'GET', '/svcapi/notifications/count')).body.count, stored, 'nothing of the refused requests was stored');
  });

  test('create: the byte limits are inclusive (120, 2048, 16384 bytes pass)', async () => {
    const title = 'é'.repeat(60); // 120 bytes
    const body = 'ü'.repeat(1024); // 2048 bytes
    const skeleton = JSON.stringify({ big: '' }).length;
    const payload = { big: 'p'.repeat(16_384 - skeleton) };
    assert.equal(Buffer.byteLength(JSON.stringify(payload)), 16_384);
    const row = await notify({ title, body, payload });
    assert.equal(row.title, title);
    assert.equal(row.body, body);
    assert.deepEqual(row.payload, payload);
    await notify({ redirect: true, link: '/somewhere' });
    await notify({ redirect: false });
  });

  test('mark-read: 200 {id, readAt}; a second call keeps the first readAt', async () => {
    const row = await notify({ userId: orgUser.email });
    const first = await call(orgUser.token, 'POST', `/svcapi/notifications/${row.id}/read`);
    assert.equal(first.status, 200, first.text);
    assert.deepEqual(Object.keys(first.body).sort(), ['id', 'readAt']);
    assert.equal(String(first.body.id), row.id);
    assert.equal(typeof first.body.readAt, 'number');
    assert.ok(first.body.readAt >= row.createdAt, 'read after it was created');
    await advanceClock(30); // a second read at a later time must not move readAt
    const second = await call(orgUser.token, 'POST', `/svcapi/notifications/${row.id}/read`);
    assert.equal(second.status, 200, second.text);
    assert.equal(second.body.readAt, first.body.readAt, 'the first readAt is kept');
    assert.equal((await adminGet(row.id)).body.readAt, first.body.readAt);
    // An admin may mark any row read; a visible broadcast can be marked by a granted user.
    const broadcast = await notify({ unitsId: ids.u1 });
    const byUnit = await call(unitUser.token, 'POST', `/svcapi/notifications/${broadcast.id}/read`);
    assert.equal(byUnit.status, 200, byUnit.text);
    const other = await notify({ userId: otherUser.email });
    assert.equal((await call(admin, 'POST', `/svcapi/notifications/${other.id}/read`)).status, 200);
    assert.equal((await call(undefined, 'POST', `/svcapi/notifications/${other.id}/read`)).status, 401);
  });

  test('mark-read, unread-count: any logged-in user, a read-only account included', async () => {
    const created = await call(admin, 'POST', '/svcapi/users', { email: 'reader@acme.test', password: PASSWORD, role: 'read-only' });
    assert.equal(created.status, 200, created.text);
    const reader = await svc.login('reader@acme.test', PASSWORD);
    const unread = async () => (await call(reader, 'GET', '/svcapi/notifications/unread-count')).body.count as number;
    const initially = await unread(); // system-wide rows of the tests above
    const row = await notify({ userId: 'reader@acme.test', title: 'for the read-only account' });
    assert.equal(await unread(), initially + 1);
    const read = await call(reader, 'POST', `/svcapi/notifications/${row.id}/read`);
    assert.equal(read.status, 200, read.text);
    assert.equal(await unread(), initially);
    assert.equal((await call(reader, 'POST', '/svcapi/notifications', MINIMAL)).status, 403, 'creating stays admin-only');
  });

  test('mark-read: 404 for an absent row and for an invisible one, the two not distinguished; the invisible row stays unread', async () => {
    const foreign = await notify({ userId: otherUser.email });
    const foreignBroadcast = await notify({ orgsId: ids.o2 });
    const absentId = String(Number(foreignBroadcast.id) + 100_000);
    const absent = await call(orgUser.token, 'POST', `/svcapi/notifications/${absentId}/read`);
    assert.equal(absent.status, 404, absent.text);
    assert.equal(typeof absent.body.error, 'string');
    for (const hidden of [foreign, foreignBroadcast]) {
      const res = await call(orgUser.token, 'POST', `/svcapi/notifications/${hidden.id}/read`);
      assert.equal(res.status, 404, `${hidden.id}: ${res.text}`);
      assert.deepEqual(
        JSON.parse(res.text.replaceAll(hidden.id, '<id>')),
        JSON.parse(absent.text.replaceAll(absentId, '<id>')),
        'an invisible row answers exactly as an absent one',
      );
      assert.equal((await adminGet(hidden.id)).body.readAt, null, 'not marked');
    }
  });

  test('unread-count: visible rows with readAt null, per caller', async () => {
    const count = async (token: string) => {
      const res = await call(token, 'GET', '/svcapi/notifications/unread-count');
      assert.equal(res.status, 200, res.text);
      assert.deepEqual(Object.keys(res.body), ['count']);
      assert.equal(typeof res.body.count, 'number');
      return res.body.count as number;
    };
    assert.equal((await call(undefined, 'GET', '/svcapi/notifications/unread-count')).status, 401);
    const users = { unit: unitUser, site: siteUser, org: orgUser, other: otherUser, bare: bareUser };
    const initial: Record<string, number> = {};
    for (const [name, user] of Object.entries(users)) initial[name] = await count(user.token);
    const adminBefore = await count(admin);

    // What each new row adds, by the decisions' visibility rule (the most specific scope column decides).
    const rows: Array<[Record<string, unknown>, string[]]> = [
      [{ userId: unitUser.email }, ['unit']],
      [{ userId: bareUser.email, unitsId: ids.u1 }, ['bare']], // addressed: only the addressee, whatever the scope
      [{ unitsId: ids.u1 }, ['unit', 'site', 'org']],
      [{ sitesId: ids.s1 }, ['site', 'org']],
      [{ orgsId: ids.o1 }, ['org']],
      [{ orgsId: ids.o1, sitesId: ids.s1, unitsId: ids.u1 }, ['unit', 'site', 'org']],
      [{ unitsId: ids.u2 }, ['other']],
      [{ orgsId: ids.o2 }, ['other']],
      [{}, ['unit', 'site', 'org', 'other', 'bare']], // system-wide
    ];
    const expected = { ...initial };
    const created: string[] = [];
    for (const [fields, seenBy] of rows) {
      created.push((await notify(fields)).id);
      for (const name of seenBy) expected[name]++;
    }
    for (const [name, user] of Object.entries(users)) assert.equal(await count(user.token), expected[name], `${name} user`);
    assert.equal(await count(admin), adminBefore + rows.length, 'admin counts every row');

    // Reading a row takes it out of the counts of those who saw it.
    const orgBroadcast = created[4];
    assert.equal((await call(orgUser.token, 'POST', `/svcapi/notifications/${orgBroadcast}/read`)).status, 200);
    assert.equal(await count(orgUser.token), expected.org - 1);
    assert.equal(await count(admin), adminBefore + rows.length - 1);
    assert.equal(await count(siteUser.token), expected.site, 'a row the site user cannot see does not change its count');
  });

  test('generic routes apply the same visibility: list, get, count, findOne, exists', async () => {
    const mine = await notify({ userId: unitUser.email, title: 'generic-mine' });
    const unitCast = await notify({ unitsId: ids.u1, title: 'generic-unit' });
    const siteCast = await notify({ sitesId: ids.s1, title: 'generic-site' });
    const orgCast = await notify({ orgsId: ids.o1, title: 'generic-org' });
    const addressedElsewhere = await notify({ userId: siteUser.email, unitsId: ids.u1, title: 'generic-for-site-user' });
    const foreign = await notify({ unitsId: ids.u2, title: 'generic-foreign' });
    const titles = ['generic-mine', 'generic-unit', 'generic-site', 'generic-org', 'generic-for-site-user', 'generic-foreign'];
    const where = { title: { inq: titles } };
    const visible: Record<string, Array<Record<string, any>>> = {
      unit: [mine, unitCast],
      site: [unitCast, siteCast, addressedElsewhere],
      org: [unitCast, siteCast, orgCast],
      other: [foreign],
      bare: [],
    };
    const users: Record<string, Account> = { unit: unitUser, site: siteUser, org: orgUser, other: otherUser, bare: bareUser };
    const all = [mine, unitCast, siteCast, orgCast, addressedElsewhere, foreign];
    const missingId = String(Number(foreign.id) + 100_000);
    for (const [name, user] of Object.entries(users)) {
      const list = await call(user.token, 'GET', `/svcapi/notifications?${filterQ({ where, order: 'id ASC' })}`);
      assert.equal(list.status, 200, `${name} list: ${list.text}`);
      assert.deepEqual(list.body.map((r: { id: string }) => r.id), visible[name].map((r) => r.id), `${name} list`);
      const count = await call(user.token, 'GET', `/svcapi/notifications/count?where=${enc(JSON.stringify(where))}`);
      assert.deepEqual(count.body, { count: visible[name].length }, `${name} count`);

      const absentGet = await call(user.token, 'GET', `/svcapi/notifications/${missingId}`);
      assert.equal(absentGet.status, 404);
      const absentExists = await call(user.token, 'GET', `/svcapi/notifications/${missingId}/exists`);
      for (const row of all) {
        const seen = visible[name].some((r) => r.id === row.id);
        const got = await call(user.token, 'GET', `/svcapi/notifications/${row.id}`);
        const one = await call(user.token, 'GET', `/svcapi/notifications/findOne?${filterQ({ where: { id: row.id } })}`);
        const exists = await call(user.token, 'GET', `/svcapi/notifications/${row.id}/exists`);
        if (seen) {
          assert.equal(got.status, 200, `${name} get ${row.title}`);
          assert.equal(got.body.title, row.title);
          assert.equal(one.body.id, row.id, `${name} findOne ${row.title}`);
          assert.deepEqual(exists.body, { exists: true }, `${name} exists ${row.title}`);
        } else {
          assert.equal(got.status, 404, `${name} get ${row.title}: an invisible row reads as absent, not 403`);
          assert.deepEqual(got.body, absentGet.body, `${name} get ${row.title}: same body as an absent row`);
          assert.equal(one.status, 404, `${name} findOne ${row.title}`);
          assert.deepEqual(exists.body, absentExists.body, `${name} exists ${row.title}: same as an absent row`);
        }
      }
    }
    // Filters cannot reach around the rule.
    const sneaky = await call(bareUser.token, 'GET', `/svcapi/notifications?${filterQ({ where: { or: [{ userId: unitUser.email }, { userId: null }, { unitsId: ids.u2 }] } })}`);
    assert.equal(sneaky.status, 200);
    assert.ok(sneaky.body.every((r: { userId: string | null; unitsId: string | null; sitesId: string | null; orgsId: string | null }) =>
      r.userId === bareUser.email || (r.userId === null && r.unitsId === null && r.sitesId === null && r.orgsId === null)), 'only own or system-wide rows');
  });

  test('generic writes: an invisible row is absent for PUT and DELETE, and stays unchanged', async () => {
    const foreign = await notify({ userId: otherUser.email, title: 'untouchable' });
    const foreignCast = await notify({ orgsId: ids.o2, title: 'untouchable-cast' });
    const missingId = String(Number(foreignCast.id) + 100_000);
    const putAbsent = await call(orgUser.token, 'PUT', `/svcapi/notifications/${missingId}`, { readAt: Date.now() });
    const delAbsent = await call(orgUser.token, 'DELETE', `/svcapi/notifications/${missingId}`);
    for (const row of [foreign, foreignCast]) {
      const put = await call(orgUser.token, 'PUT', `/svcapi/notifications/${row.id}`, { readAt: Date.now() });
      assert.equal(put.status, putAbsent.status, `PUT ${row.title}: ${put.text}`);
      assert.deepEqual(put.body, putAbsent.body, `PUT ${row.title}: answered as absent`);
      const del = await call(orgUser.token, 'DELETE', `/svcapi/notifications/${row.id}`);
      assert.equal(del.status, delAbsent.status, `DELETE ${row.title}: ${del.text}`);
      assert.deepEqual(del.body, delAbsent.body, `DELETE ${row.title}: answered as absent`);
      const stored = await adminGet(row.id);
      assert.equal(stored.status, 200, 'still there');
      assert.equal(stored.body.readAt, null, 'unchanged');
    }
    const deleteAll = await call(orgUser.token, 'DELETE', `/svcapi/notifications?where=${enc(JSON.stringify({ title: { like: 'untouchable%' } }))}`);
    assert.deepEqual(deleteAll.body, { count: 0 }, 'a where-delete reaches no invisible row');
    assert.equal((await adminGet(foreign.id)).status, 200);
  });

  test('expiry: an expired row is visible to admins only, for every read route', async () => {
    const probe = await notify({ userId: orgUser.email, title: 'clock probe' });
    const serverNow = probe.createdAt as number; // the service's notification clock (tests before may have moved it)
    const expiring = await notify({ userId: orgUser.email, title: 'expiring', expiresAt: serverNow + 60_000 });
    const expiringCast = await notify({ orgsId: ids.o1, title: 'expiring-cast', expiresAt: serverNow + 60_000 });
    const lasting = await notify({ userId: orgUser.email, title: 'lasting', expiresAt: serverNow + 86_400_000 });
    const countBefore = (await call(orgUser.token, 'GET', '/svcapi/notifications/unread-count')).body.count;
    assert.equal((await call(orgUser.token, 'GET', `/svcapi/notifications/${expiring.id}`)).status, 200, 'visible before it expires');

    await advanceClock(120);
    for (const row of [expiring, expiringCast]) {
      assert.equal((await call(orgUser.token, 'GET', `/svcapi/notifications/${row.id}`)).status, 404, `${row.title} get`);
      assert.equal((await call(orgUser.token, 'POST', `/svcapi/notifications/${row.id}/read`)).status, 404, `${row.title} mark-read`);
      assert.equal((await adminGet(row.id)).status, 200, `${row.title}: admins still see it`);
      assert.equal((await adminGet(row.id)).body.readAt, null);
    }
    const list = await call(orgUser.token, 'GET', `/svcapi/notifications?${filterQ({ where: { title: { inq: ['expiring', 'expiring-cast', 'lasting'] } } })}`);
    assert.deepEqual(list.body.map((r: { id: string }) => r.id), [lasting.id]);
    assert.equal((await call(orgUser.token, 'GET', '/svcapi/notifications/unread-count')).body.count, countBefore - 2, 'expired rows leave the unread count');
    const adminList = await call(admin, 'GET', `/svcapi/notifications?${filterQ({ where: { title: { inq: ['expiring', 'expiring-cast'] } } })}`);
    assert.equal(adminList.body.length, 2);
  });
});

describe('notification retention purge', { timeout: 120_000 }, () => {
  let svc: TestService;
  let admin: string;
  const { call, notify, advanceClock, adminGet } = helpers(() => svc, () => admin);
  const purgeLines = () => svc.logs().filter((l) => l.msg === 'notification purge');
  const removedTotal = () => purgeLines().reduce((sum, l) => sum + (typeof l.removed === 'number' ? l.removed : 0), 0);

  before(async () => {
    svc = await startService({ config: { debug: { clockRoute: true }, notifications: { retention_days: 1, retention_interval_seconds: 1 } } });
    admin = await svc.adminToken();
  });
  after(() => svc.dispose());

  test('deletes read rows older than the retention and expired rows; keeps unread and young rows; logs what it removed', async () => {
    const oldRead = await notify({ title: 'old read' });
    assert.equal((await call(admin, 'POST', `/svcapi/notifications/${oldRead.id}/read`)).status, 200);
    const oldUnread = await notify({ title: 'old unread' });
    const expiring = await notify({ title: 'expiring', expiresAt: (oldRead.createdAt as number) + 60_000 });
    const expiringRead = await notify({ title: 'expiring read', expiresAt: (oldRead.createdAt as number) + 60_000 });
    assert.equal((await call(admin, 'POST', `/svcapi/notifications/${expiringRead.id}/read`)).status, 200);
    // Nothing is due yet: the purge runs once a second, and a run or two must leave all four.
    await new Promise((resolve) => setTimeout(resolve, 2_500));
    for (const row of [oldRead, oldUnread, expiring, expiringRead]) assert.equal((await adminGet(row.id)).status, 200, `${row.title} is not due yet`);
    assert.equal(removedTotal(), 0, 'nothing was due before the clock moved');

    await advanceClock(2 * 86_400); // past the one-day retention and the expiry
    admin = await svc.adminToken(); // tokens from before the step may have expired
    const youngRead = await notify({ title: 'young read' });
    assert.equal((await call(admin, 'POST', `/svcapi/notifications/${youngRead.id}/read`)).status, 200);

    await waitFor(async () => (await adminGet(oldRead.id)).status === 404 && (await adminGet(expiring.id)).status === 404 && (await adminGet(expiringRead.id)).status === 404,
      'the purge removes the old read row and both expired rows', { timeoutMs: 20_000, intervalMs: 200 });
    assert.equal((await adminGet(oldUnread.id)).status, 200, 'an unread unexpired row is kept, however old');
    assert.equal((await adminGet(youngRead.id)).status, 200, 'a read row younger than the retention is kept');
    await waitFor(() => removedTotal() === 3, `the purge logs "notification purge" with removed adding up to 3 (saw ${JSON.stringify(purgeLines().slice(-3))})`, { timeoutMs: 10_000 });
    const count = await call(admin, 'GET', `/svcapi/notifications/count?where=${enc(JSON.stringify({ title: { inq: ['old read', 'old unread', 'expiring', 'expiring read', 'young read'] } }))}`);
    assert.deepEqual(count.body, { count: 2 });
  });
});

describe('notification retention disabled (retention_days 0)', { timeout: 60_000 }, () => {
  let svc: TestService;
  let admin: string;
  const { call, notify, advanceClock, adminGet } = helpers(() => svc, () => admin);

  before(async () => {
    svc = await startService({ config: { debug: { clockRoute: true }, notifications: { retention_days: 0, retention_interval_seconds: 1 } } });
    admin = await svc.adminToken();
  });
  after(() => svc.dispose());

  test('no row is purged, read or expired', async () => {
    const read = await notify({ title: 'kept read' });
    assert.equal((await call(admin, 'POST', `/svcapi/notifications/${read.id}/read`)).status, 200);
    const expiring = await notify({ title: 'kept expiring', expiresAt: (read.createdAt as number) + 60_000 });
    await advanceClock(40 * 86_400);
    admin = await svc.adminToken();
    // Three purge intervals go by; with the purge disabled nothing may go.
    await new Promise((resolve) => setTimeout(resolve, 3_500));
    assert.equal((await adminGet(read.id)).status, 200);
    assert.equal((await adminGet(expiring.id)).status, 200, 'an expired row stays (admins still see it)');
    assert.ok(!svc.logs().some((l) => l.msg === 'notification purge' && typeof l.removed === 'number' && l.removed > 0), 'no purge removed anything');
  });
});
