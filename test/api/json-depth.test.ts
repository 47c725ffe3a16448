// Issue 12 item 6: deeply nested bodies are refused at the door, and stored
// rows that SQLite or JSON.stringify cannot read (too deep, invalid JSON)
// never turn a filtered list, count, delete, findOne or include into a 500.

import assert from 'node:assert/strict';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import Database from 'better-sqlite3';
import { pack } from 'msgpackr';
import { startService, type TestService } from './harness.js';

const q = (filter: unknown) => `filter=${encodeURIComponent(JSON.stringify(filter))}`;
const w = (where: unknown) => `where=${encodeURIComponent(JSON.stringify(where))}`;

/** `{"name": …, "nested": {"a": {"a": … 1}}}` with `depth` levels in all. */
function nestedJson(depth: number, name = 'deep'): string {
  return `{"name":${JSON.stringify(name)},"nested":${'{"a":'.repeat(depth - 1)}1${'}'.repeat(depth - 1)}}`;
}

describe('request body nesting limit (server.maxJsonDepth)', () => {
  let svc: TestService;
  let admin: string;
  before(async () => {
    svc = await startService();
    admin = await svc.adminToken();
  });
  after(() => svc.dispose());

  const post = (urlPath: string, rawBody: string | Buffer, contentType = 'application/json') =>
    svc.request('POST', urlPath, { rawBody, token: admin, headers: { 'content-type': contentType } });

  test('a JSON body one level past the limit is a 400 naming the setting; at the limit it is stored', async () => {
    const atLimit = await post('/svcapi/labels', nestedJson(64, 'at-limit'));
    assert.equal(atLimit.status, 200, atLimit.text);
    const over = await post('/svcapi/labels', nestedJson(65, 'over'));
    assert.equal(over.status, 400);
    assert.match(over.body.error, /more than 64 levels deep \(server\.maxJsonDepth\)/);
    // brackets inside strings do not count
    const inString = await post('/svcapi/labels', JSON.stringify({ name: 'brackets', text: '{['.repeat(500) }));
    assert.equal(inString.status, 200, inString.text);
  });

  test('1,001 and 10,000 levels (once stored, or a stack overflow) are 400 and store nothing', async () => {
    const before = (await svc.get('/svcapi/labels/count', admin)).body.count as number;
    for (const depth of [1001, 10_000, 100_000]) {
      const res = await post('/svcapi/labels', nestedJson(depth));
      assert.equal(res.status, 400, `${depth}: ${res.text.slice(0, 200)}`);
      assert.match(res.body.error, /server\.maxJsonDepth/);
      const bulk = await post('/svcapi/labels/bulk', `[${nestedJson(depth)}]`);
      assert.equal(bulk.status, 400, `bulk ${depth}`);
    }
    assert.equal((await svc.get('/svcapi/labels/count', admin)).body.count, before);
    const filtered = await svc.get(`/svcapi/labels?${q({ where: { name: 'deep' } })}`, admin);
    assert.equal(filtered.status, 200);
    assert.deepEqual(filtered.body, []);
  });

  test('a msgpack body past the limit is a 400 naming the setting', async () => {
    let value: unknown = 1;
    for (let i = 0; i < 99; i++) value = { a: value };
    const res = await post('/svcapi/labels', pack({ name: 'mp', nested: value }), 'application/msgpack');
    assert.equal(res.status, 400);
    assert.match(res.body.error, /more than 64 levels deep \(server\.maxJsonDepth\)/);
    const ok = await post('/svcapi/labels', pack({ name: 'mp', nested: { a: [1, { b: 2 }] } }), 'application/msgpack');
    assert.equal(ok.status, 200, ok.text);
  });
});

describe('stored rows SQLite cannot read never fail a query', () => {
  let svc: TestService;
  let admin: string;
  const ids: Record<string, string> = {};
  before(async () => {
    svc = await startService();
    admin = await svc.adminToken();
    const make = async (url: string, body: object) => (await svc.post(`/svcapi/${url}`, body, admin)).body.id as string;
    ids.org = await make('orgs', { name: 'Org' });
    ids.site = await make('sites', { name: 'Site', orgsId: ids.org });
    ids.unit = await make('units', { name: 'Unit', siteId: ids.site });
    ids.good = await make('labels', { name: 'good', weight: 1 });
    // Rows written by an older version or another tool, straight into the real file.
    const db = new Database(path.join(svc.dataDir, 'metadata.sqlite'));
    db.pragma('busy_timeout = 5000');
    const addLabel = db.prepare('INSERT INTO labels (meta_data) VALUES (?)');
    ids.deep1001 = String(addLabel.run(nestedJson(1001)).lastInsertRowid); // SQLite: "malformed JSON"
    ids.deep20000 = String(addLabel.run(nestedJson(20_000)).lastInsertRowid); // JSON.stringify: stack overflow
    ids.invalid = String(addLabel.run('{"name": "cut').lastInsertRowid);
    ids.deepUnit = String(db.prepare('INSERT INTO units (siteId, meta_data) VALUES (?, ?)').run(Number(ids.site), nestedJson(1001, 'Unit')).lastInsertRowid);
    db.close();
  });
  after(() => svc.dispose());

  const get = (urlPath: string) => svc.get(urlPath, admin);

  test('filtered lists, counts, findOne and order answer, reading unreadable meta_data as empty', async () => {
    const list = await get(`/svcapi/labels?${q({ where: { name: 'good' } })}`);
    assert.equal(list.status, 200, list.text);
    assert.deepEqual(list.body.map((row: { id: string }) => row.id), [ids.good]);
    const all = await get('/svcapi/labels');
    assert.equal(all.status, 200, all.text.slice(0, 200));
    assert.deepEqual(
      all.body.map((row: { id: string }) => row.id),
      [ids.good, ids.deep1001, ids.deep20000, ids.invalid],
    );
    assert.deepEqual(all.body[1], { id: ids.deep1001 }, 'too deep for SQLite: no keys');
    assert.deepEqual(all.body[3], { id: ids.invalid });
    const count = await get(`/svcapi/labels/count?${w({ weight: { gt: 0 } })}`);
    assert.equal(count.status, 200, count.text);
    assert.deepEqual(count.body, { count: 1 });
    const missing = await get(`/svcapi/labels/count?${w({ name: { exists: false } })}`);
    assert.deepEqual(missing.body, { count: 3 });
    const regexp = await get(`/svcapi/labels?${q({ where: { name: { regexp: '/^g/' } } })}`);
    assert.equal(regexp.status, 200, regexp.text);
    assert.equal(regexp.body.length, 1);
    const findOne = await get(`/svcapi/labels/findOne?${q({ where: { name: 'good' } })}`);
    assert.equal(findOne.status, 200, findOne.text);
    assert.equal(findOne.body.id, ids.good);
    const ordered = await get(`/svcapi/labels?${q({ order: 'name DESC', limit: 1 })}`);
    assert.equal(ordered.status, 200, ordered.text);
    assert.equal(ordered.body[0].id, ids.good);
    const one = await get(`/svcapi/labels/${ids.deep20000}`);
    assert.equal(one.status, 200, one.text.slice(0, 200));
  });

  test('include and nested routes answer when a child row is unreadable', async () => {
    const sites = await get(`/svcapi/sites?${q({ where: { name: 'Site' }, include: ['units'] })}`);
    assert.equal(sites.status, 200, sites.text);
    assert.deepEqual(sites.body[0].units.map((unit: { id: string }) => unit.id), [ids.unit, ids.deepUnit]);
    const units = await get(`/svcapi/units?${q({ where: { name: 'Unit' }, include: ['site'] })}`);
    assert.equal(units.status, 200, units.text);
    assert.deepEqual(units.body.map((unit: { id: string }) => unit.id), [ids.unit]);
  });

  test('time-series access through the unit names still answers a granted non-admin', async () => {
    const collection = await svc.post('/svcapi/create_collection', { organization: 'Org', site: 'Site', unit: 'Unit', grid: 'g' }, admin);
    assert.equal(collection.status, 200, collection.text);
    const email = 'granted@depth.test';
    await svc.newUser(email);
    const account = (await get(`/svcapi/users/findOne?${q({ where: { email } })}`)).body;
    await svc.post('/svcapi/userprofiles', { usersId: account.id, accessAllowed: { units: [ids.unit] } }, admin);
    const granted = await svc.login(email, 'user-password-1'); // grants are read at login
    const listed = await svc.get('/svcapi/collection', granted);
    assert.equal(listed.status, 200, listed.text);
    assert.equal(listed.body.length, 1);
    const written = await svc.post('/svcapi/write', { organization: 'Org', site: 'Site', unit: 'Unit', grid: 'g', tags: { T: [[Date.UTC(2026, 0, 10), 1]] } }, granted);
    assert.equal(written.status, 200, written.text);
    assert.equal(written.body.success, true);
  });

  test('filtered delete and update-all answer, and a PUT replaces the unreadable meta_data', async () => {
    const del = await svc.request('DELETE', `/svcapi/labels?${w({ name: 'nothing-matches' })}`, { token: admin });
    assert.equal(del.status, 200, del.text);
    assert.deepEqual(del.body, { count: 0 });
    const update = await svc.request('POST', `/svcapi/labels/update?${w({ name: 'good' })}`, { body: { weight: 2 }, token: admin });
    assert.equal(update.status, 200, update.text);
    assert.deepEqual(update.body, { count: 1 });
    const put = await svc.request('PUT', `/svcapi/labels/${ids.deep1001}`, { body: { name: 'repaired' }, token: admin });
    assert.equal(put.status, 200, put.text);
    assert.deepEqual((await get(`/svcapi/labels?${q({ where: { name: 'repaired' } })}`)).body, [{ id: ids.deep1001, name: 'repaired' }]);
    const delDeep = await svc.request('DELETE', `/svcapi/labels?${w({ name: { exists: false } })}`, { token: admin });
    assert.deepEqual(delDeep.body, { count: 2 });
  });
});
