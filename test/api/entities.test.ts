// Generic entity layer over real HTTPS: CRUD replies, the flat convention,
// nested routes, cascade, include/order/limit/skip/fields, introspection,
// users, and row scoping for read-write and read-only callers.

import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { startService, type TestService } from './harness.js';

const q = (filter: unknown) => `filter=${encodeURIComponent(JSON.stringify(filter))}`;

describe('entity CRUD', () => {
  let svc: TestService;
  let admin: string;
  before(async () => {
    svc = await startService();
    admin = await svc.adminToken();
  });
  after(() => svc.dispose());

  const call = (method: string, path: string, body?: unknown, token = admin) => svc.request(method, path, { body, token });

  test('create answers 200 with the flat entity: meta keys hoisted, id and *Id strings, dataTagId untouched', async () => {
    const org = await call('POST', '/svcapi/orgs', { name: 'Acme', country: 'NL', nested: { depth: 1 } });
    assert.equal(org.status, 200);
    assert.equal(typeof org.body.id, 'string');
    assert.deepEqual(org.body, { id: org.body.id, name: 'Acme', country: 'NL', nested: { depth: 1 } });

    const site = await call('POST', '/svcapi/sites', { name: 'North', orgsId: Number(org.body.id) });
    assert.equal(site.body.orgsId, org.body.id, 'numeric foreign key comes back as a string');
    const unit = await call('POST', '/svcapi/units', { name: 'Boiler 1', siteId: site.body.id });
    const tag = await call('POST', '/svcapi/tagmeta', { tagName: 'TI-101', unitsId: unit.body.id, dataTagId: 'TI_101', limLo: 0, limHi: 100, plantRef: 7 });
    assert.equal(tag.status, 200);
    assert.equal(tag.body.unitsId, unit.body.id);
    assert.equal(tag.body.dataTagId, 'TI_101');
    assert.equal(tag.body.equipmentId, null, 'null foreign key stays null');
    assert.equal(tag.body.limHi, 100, 'meta values untouched');
    assert.equal(tag.body.plantRef, 7);
  });

  test('get, exists, count, findOne, and their 404 replies', async () => {
    const created = await call('POST', '/svcapi/labels', { name: 'alpha', weight: 3 });
    const id = created.body.id;
    assert.deepEqual((await call('GET', `/svcapi/labels/${id}`)).body, created.body);
    assert.deepEqual((await call('GET', `/svcapi/labels/${id}/exists`)).body, { exists: true });
    assert.deepEqual((await call('GET', '/svcapi/labels/999999/exists')).body, { exists: false });
    const missing = await call('GET', '/svcapi/labels/999999');
    assert.equal(missing.status, 404);
    assert.equal(missing.body.error, 'item not found');
    assert.deepEqual((await call('GET', `/svcapi/labels/count?where=${encodeURIComponent('{"name":"alpha"}')}`)).body, { count: 1 });
    assert.equal((await call('GET', `/svcapi/labels/findOne?${q({ where: { name: 'alpha' } })}`)).body.id, id);
    const none = await call('GET', `/svcapi/labels/findOne?${q({ where: { name: 'nope' } })}`);
    assert.equal(none.status, 404);
    assert.equal(none.body.error, 'no matching record');
    const badId = await call('GET', '/svcapi/labels/abc');
    assert.equal(badId.status, 400);
    assert.match(badId.body.error, /id/);
  });

  test('PUT and PATCH merge into meta_data; PATCH without id inserts; update-all counts', async () => {
    const created = await call('POST', '/svcapi/labels', { name: 'beta', color: 'red', size: 1 });
    const put = await call('PUT', `/svcapi/labels/${created.body.id}`, { color: 'blue' });
    assert.deepEqual(put.body, { id: created.body.id, name: 'beta', color: 'blue', size: 1 });
    const patch = await call('PATCH', '/svcapi/labels', { id: Number(created.body.id), size: 2 });
    assert.deepEqual(patch.body, { id: created.body.id, name: 'beta', color: 'blue', size: 2 });
    const inserted = await call('PATCH', '/svcapi/labels', { name: 'gamma' });
    assert.equal(inserted.status, 200);
    assert.notEqual(inserted.body.id, created.body.id);
    const putMissing = await call('PUT', '/svcapi/labels/999999', { color: 'x' });
    assert.equal(putMissing.status, 404);

    const updated = await call('POST', `/svcapi/labels/update?where=${encodeURIComponent(JSON.stringify({ name: { inq: ['beta', 'gamma'] } }))}`, { reviewed: true });
    assert.deepEqual(updated.body, { count: 2 });
    const viaPut = await call('PUT', `/svcapi/labels/update?where=${encodeURIComponent('{"name":"gamma"}')}`, { reviewed: false });
    assert.deepEqual(viaPut.body, { count: 1 });
    assert.equal((await call('GET', `/svcapi/labels/${inserted.body.id}`)).body.reviewed, false);
  });

  test('bulk create is all or nothing', async () => {
    const ok = await call('POST', '/svcapi/profiles-lookups/bulk', [{ key: 'a' }, { key: 'b' }]);
    assert.equal(ok.status, 200);
    assert.equal(ok.body.length, 2);
    const before = (await call('GET', '/svcapi/profiles-lookups/count')).body.count;
    const bad = await call('POST', '/svcapi/users/bulk', [{ email: 'bulk1@plant.test' }, { email: 'bulk1@plant.test' }]);
    assert.equal(bad.status, 409);
    assert.match(bad.body.error, /DUPLICATE:/);
    assert.equal((await call('GET', `/svcapi/users/count?where=${encodeURIComponent('{"email":"bulk1@plant.test"}')}`)).body.count, 0);
    assert.equal((await call('GET', '/svcapi/profiles-lookups/count')).body.count, before);
  });

  test('aliases and renamed URL segments reach the same tables', async () => {
    const viaCustomers = await call('POST', '/svcapi/customers', { name: 'Via alias' });
    assert.equal((await call('GET', `/svcapi/orgs/${viaCustomers.body.id}`)).body.name, 'Via alias');
    for (const url of ['faultTemplates', 'dashboard-plots', 'profiles-lookups', 'Users', 'configurations', 'connections', 'notifications']) {
      assert.equal((await call('GET', `/svcapi/${url}`)).status, 200, url);
    }
    const config = await call('POST', '/svcapi/configurations', { id: 'site.theme', value: 'dark' });
    assert.equal(config.body.id, 'site.theme');
    assert.equal((await call('GET', '/svcapi/configurations/site.theme')).body.value, 'dark');
    assert.equal((await call('POST', '/svcapi/configurations', { id: 'site.theme' })).status, 409);
  });

  test('nested routes: list, count, create with the parent key, get and delete only within the parent', async () => {
    const unitA = (await call('POST', '/svcapi/units', { name: 'A' })).body.id;
    const unitB = (await call('POST', '/svcapi/units', { name: 'B' })).body.id;
    const eq = await call('POST', `/svcapi/units/${unitA}/equipment`, { name: 'pump', unitsId: unitB });
    assert.equal(eq.status, 200);
    assert.equal(eq.body.unitsId, unitA, 'the path parent wins');
    await call('POST', `/svcapi/units/${unitA}/equipment`, { name: 'fan' });
    assert.equal((await call('GET', `/svcapi/units/${unitA}/equipment`)).body.length, 2);
    assert.deepEqual((await call('GET', `/svcapi/units/${unitA}/equipment/count`)).body, { count: 2 });
    assert.deepEqual((await call('GET', `/svcapi/units/${unitB}/equipment`)).body, []);
    assert.equal((await call('GET', `/svcapi/units/${unitA}/equipment/${eq.body.id}`)).body.name, 'pump');
    assert.equal((await call('GET', `/svcapi/units/${unitB}/equipment/${eq.body.id}`)).status, 404);
    assert.deepEqual((await call('DELETE', `/svcapi/units/${unitB}/equipment/${eq.body.id}`)).body, { count: 0 }, 'parent mismatch deletes nothing');
    assert.equal((await call('GET', `/svcapi/equipment/${eq.body.id}`)).status, 200);

    // Two levels deep.
    const tm = await call('POST', `/svcapi/units/${unitA}/equipment/${eq.body.id}/tagmeta`, { tagName: 'PI-1' });
    assert.equal(tm.status, 200);
    assert.equal(tm.body.equipmentId, eq.body.id);
    assert.equal((await call('GET', `/svcapi/units/${unitA}/equipment/${eq.body.id}/tagmeta`)).body.length, 1);
    assert.equal((await call('GET', `/svcapi/units/${unitB}/equipment/${eq.body.id}/tagmeta`)).status, 404);
    const dash = (await call('POST', `/svcapi/units/${unitA}/dashboards`, { title: 'Overview' })).body.id;
    await call('POST', `/svcapi/units/${unitA}/dashboards/${dash}/dashboard-plots`, { kind: 'trend' });
    assert.equal((await call('GET', `/svcapi/units/${unitA}/dashboards/${dash}/dashboard-plots`)).body[0].kind, 'trend');

    // The generic relationship route, both directions.
    assert.equal((await call('GET', `/svcapi/units/${unitA}/equipment`)).body.length, 2);
    const parent = await call('GET', `/svcapi/equipment/${eq.body.id}/units`);
    assert.equal(parent.body[0].id, unitA);
    assert.equal((await call('GET', `/svcapi/units/${unitA}/nothing`)).status, 404);
    assert.equal((await call('GET', `/svcapi/units/999999/equipment`)).status, 404);

    assert.equal((await call('DELETE', `/svcapi/units/${unitA}/equipment/${eq.body.id}`)).body.count, 1);
  });

  test('delete cascades to every foreign-key child, recursively', async () => {
    const org = (await call('POST', '/svcapi/orgs', { name: 'Doomed' })).body.id;
    const site = (await call('POST', '/svcapi/sites', { name: 's', orgsId: org })).body.id;
    const unit = (await call('POST', '/svcapi/units', { name: 'u', siteId: site })).body.id;
    const eq = (await call('POST', '/svcapi/equipment', { name: 'e', unitsId: unit })).body.id;
    const tm = (await call('POST', '/svcapi/tagmeta', { tagName: 't', equipmentId: eq })).body.id;
    const dash = (await call('POST', '/svcapi/dashboards', { unitsId: unit })).body.id;
    const plot = (await call('POST', '/svcapi/dashboard-plots', { dashboardsId: dash })).body.id;
    const client = (await call('POST', '/svcapi/clients', { orgsId: org })).body.id;
    const ingest = (await call('POST', '/svcapi/ingestconfigs', { clientsId: client })).body.id;
    assert.deepEqual((await call('DELETE', `/svcapi/orgs/${org}`)).body, { count: 1 });
    for (const [url, id] of [['sites', site], ['units', unit], ['equipment', eq], ['tagmeta', tm], ['dashboards', dash], ['dashboard-plots', plot], ['clients', client], ['ingestconfigs', ingest]]) {
      assert.equal((await call('GET', `/svcapi/${url}/${id}`)).status, 404, `${url} ${id} removed`);
    }
    assert.deepEqual((await call('DELETE', `/svcapi/orgs/${org}`)).body, { count: 0 });
  });

  test('delete-all needs a where; deletes only matching rows', async () => {
    await call('POST', '/svcapi/labels/bulk', [{ group: 'tmp', n: 1 }, { group: 'tmp', n: 2 }, { group: 'keep' }]);
    assert.equal((await call('DELETE', '/svcapi/labels')).status, 400);
    assert.deepEqual((await call('DELETE', `/svcapi/labels?where=${encodeURIComponent('{"group":"tmp"}')}`)).body, { count: 2 });
    assert.equal((await call('GET', `/svcapi/labels/count?where=${encodeURIComponent('{"group":"keep"}')}`)).body.count, 1);
  });

  test('include children and parents, order on several keys, limit, skip, fields', async () => {
    const unit = (await call('POST', '/svcapi/units', { name: 'Inc' })).body.id;
    await call('POST', '/svcapi/equipment/bulk', [
      { name: 'c', rank: 2, unitsId: unit }, { name: 'a', rank: 1, unitsId: unit }, { name: 'b', rank: 2, unitsId: unit },
    ]);
    const withKids = await call('GET', `/svcapi/units/${unit}?${q({ include: ['equipment'] })}`);
    assert.equal(withKids.body.equipment.length, 3);
    const listed = await call('GET', `/svcapi/equipment?${q({ where: { unitsId: unit }, include: ['units'], order: ['rank DESC', 'name ASC'] })}`);
    assert.deepEqual(listed.body.map((e: { name: string }) => e.name), ['b', 'c', 'a']);
    assert.equal(listed.body[0].units[0].id, unit, 'parent expanded as an array');
    const paged = await call('GET', `/svcapi/equipment?${q({ where: { unitsId: unit }, order: 'name', limit: 1, skip: 1 })}`);
    assert.deepEqual(paged.body.map((e: { name: string }) => e.name), ['b']);
    const offset = await call('GET', `/svcapi/equipment?${q({ where: { unitsId: unit }, order: 'name', limit: 2, offset: 2 })}`);
    assert.deepEqual(offset.body.map((e: { name: string }) => e.name), ['c']);
    const fields = await call('GET', `/svcapi/equipment?${q({ where: { unitsId: unit }, fields: ['name'], order: 'name' })}`);
    assert.deepEqual(fields.body, [{ name: 'a' }, { name: 'b' }, { name: 'c' }]);
    const fieldsObj = await call('GET', `/svcapi/equipment?${q({ where: { unitsId: unit }, fields: { name: true, rank: true }, order: 'name', limit: 1 })}`);
    assert.deepEqual(fieldsObj.body, [{ name: 'a', rank: 1 }]);
    const excluded = await call('GET', `/svcapi/equipment?${q({ where: { unitsId: unit }, fields: { rank: false, unitsId: false }, order: 'name', limit: 1 })}`);
    assert.deepEqual(Object.keys(excluded.body[0]).sort(), ['id', 'name']);
    const bracket = await call('GET', `/svcapi/equipment?filter[where][unitsId]=${unit}&filter[order]=name%20DESC&filter[limit]=2`);
    assert.deepEqual(bracket.body.map((e: { name: string }) => e.name), ['c', 'b']);
    const badInclude = await call('GET', `/svcapi/units/${unit}?${q({ include: ['nope'] })}`);
    assert.equal(badInclude.status, 400);
    assert.match(badInclude.body.error, /nope/);
  });

  test('introspection lists tables, columns, relations', async () => {
    const tables = (await call('GET', '/svcapi/_tables')).body as string[];
    assert.equal(tables.length, 29);
    for (const t of ['orgs', 'faulttemplates', 'dashboardplots', 'profiles_lookups', 'users', 'notifications', 'configurations']) assert.ok(tables.includes(t), t);
    const schema = (await call('GET', '/svcapi/_schema')).body;
    assert.deepEqual(schema.tagmeta.relations.map((r: { column: string }) => r.column).sort(), ['equipmentId', 'unitsId']);
    assert.ok(schema.tagmeta.columns.some((c: { name: string }) => c.name === 'dataTagId'));
    const dyn = (await call('GET', '/svcapi/dyn/_schema')).body;
    assert.deepEqual(dyn.belongs_to.dashboardplots, [{ table: 'dashboards', foreignKey: 'dashboardsId' }]);
    assert.ok(dyn.has_many.units.some((r: { table: string }) => r.table === 'equipment'));
  });

  test('users: password hashed, never returned, usable for login; duplicate email 409 DUPLICATE', async () => {
    const created = await call('POST', '/svcapi/users', { email: 'Made@Plant.test', password: 'made-password-1', username: 'made', role: 'read-only' });
    assert.equal(created.status, 200);
    assert.equal(created.body.email, 'made@plant.test');
    assert.equal('password' in created.body, false);
    assert.equal(created.body.role, 'read-only');
    const dup = await call('POST', '/svcapi/users', { email: 'made@plant.test', password: 'x-password-2' });
    assert.equal(dup.status, 409);
    assert.match(dup.body.error, /^DUPLICATE:/);
    const token = await svc.login('made@plant.test', 'made-password-1');
    assert.equal((await svc.get('/svcapi/me', token)).body.role, 'read-only');
    await call('PUT', `/svcapi/users/${created.body.id}`, { password: 'changed-password-2' });
    assert.ok(await svc.login('made@plant.test', 'changed-password-2'));
    const list = await call('GET', '/svcapi/users');
    assert.ok(list.body.every((u: Record<string, unknown>) => !('password' in u)));
    assert.ok(!list.text.includes('scrypt$'));
    const badRole = await call('POST', '/svcapi/users', { email: 'r@plant.test', role: 'superuser' });
    assert.equal(badRole.status, 400);
    assert.match(badRole.body.error, /role/);
  });

  test('malformed filters and bodies are 400 naming the problem', async () => {
    const badJson = await call('GET', '/svcapi/labels?filter=%7Bnope');
    assert.equal(badJson.status, 400);
    assert.match(badJson.body.error, /filter/);
    const badOp = await call('GET', `/svcapi/labels?${q({ where: { name: { sounds_like: 'x' } } })}`);
    assert.equal(badOp.status, 400);
    assert.match(badOp.body.error, /sounds_like/);
    const badLimit = await call('GET', `/svcapi/labels?${q({ limit: -1 })}`);
    assert.equal(badLimit.status, 400);
    assert.match(badLimit.body.error, /limit/);
    const badFk = await call('POST', '/svcapi/equipment', { unitsId: 'abc' });
    assert.equal(badFk.status, 400);
    assert.match(badFk.body.error, /unitsId/);
    const arrayBody = await call('POST', '/svcapi/labels', [{ a: 1 }]);
    assert.equal(arrayBody.status, 400);
  });

  test('SQL injection through field names is refused and through values is inert', async () => {
    await call('POST', '/svcapi/labels', { name: 'victim' });
    const count = (await call('GET', '/svcapi/labels/count')).body.count;
    const names = ['name") OR 1=1 --', "name' OR '1'='1", 'name;DROP TABLE labels', 'meta_data)--'];
    for (const field of names) {
      const res = await call('GET', `/svcapi/labels?${q({ where: { [field]: 'x' } })}`);
      assert.equal(res.status, 400, field);
      const ordered = await call('GET', `/svcapi/labels?${q({ order: `${field} DESC` })}`);
      assert.equal(ordered.status, 400, field);
    }
    for (const value of ["' OR '1'='1", 'x") OR 1=1 --', "'; DROP TABLE labels; --"]) {
      const res = await call('GET', `/svcapi/labels?${q({ where: { name: value } })}`);
      assert.deepEqual(res.body, [], value);
      const like = await call('GET', `/svcapi/labels?${q({ where: { name: { like: value } } })}`);
      assert.deepEqual(like.body, [], value);
    }
    assert.equal((await call('GET', '/svcapi/labels/count')).body.count, count, 'table intact');
  });

  test('a regexp with a backreference is refused; one that backtracks catastrophically in JavaScript answers', async () => {
    await call('POST', '/svcapi/labels', { name: `${'a'.repeat(40)}!` });
    const res = await call('GET', `/svcapi/labels?${q({ where: { name: { regexp: '/^(a+)\\1$/' } } })}`);
    assert.equal(res.status, 400);
    assert.match(res.body.error, /regexp|pattern/i);
    const nested = await call('GET', `/svcapi/labels?${q({ where: { name: { regexp: '/^(a+)+$/' } } })}`);
    assert.equal(nested.status, 200);
    const ok = await call('GET', `/svcapi/labels?${q({ where: { name: { regexp: '/^VICTIM$/i' } } })}`);
    assert.equal(ok.status, 200);
    assert.ok(ok.body.length >= 1);
    assert.equal((await svc.get('/ingest/health')).status, 200);
  });
});

describe('row scoping', () => {
  let svc: TestService;
  let admin: string;
  let rw: string;
  let ro: string;
  const ids: Record<string, string> = {};

  const call = (token: string, method: string, path: string, body?: unknown) => svc.request(method, path, { body, token });

  before(async () => {
    svc = await startService();
    admin = await svc.adminToken();
    const mk = async (url: string, body: object) => (await call(admin, 'POST', `/svcapi/${url}`, body)).body.id as string;
    ids.org = await mk('orgs', { name: 'Org' });
    ids.siteA = await mk('sites', { name: 'Site A', orgsId: ids.org });
    ids.siteB = await mk('sites', { name: 'Site B', orgsId: ids.org });
    ids.unitA = await mk('units', { name: 'Unit A', siteId: ids.siteA });
    ids.unitA2 = await mk('units', { name: 'Unit A2', siteId: ids.siteA });
    ids.unitB = await mk('units', { name: 'Unit B', siteId: ids.siteB });
    ids.eqA = await mk('equipment', { name: 'eq A', unitsId: ids.unitA });
    ids.eqB = await mk('equipment', { name: 'eq B', unitsId: ids.unitB });
    ids.label = await mk('labels', { name: 'shared' });

    // A read-write user granted unit A only, through its profile.
    await svc.newUser('rw@plant.test', 'rw-password-1');
    const rwUser = (await call(admin, 'GET', `/svcapi/users/findOne?${q({ where: { email: 'rw@plant.test' } })}`)).body;
    ids.rwUser = rwUser.id;
    await call(admin, 'POST', '/svcapi/userprofiles', { usersId: rwUser.id, accessAllowed: { sites: [], units: [ids.unitA] } });
    rw = await svc.login('rw@plant.test', 'rw-password-1');

    await call(admin, 'POST', '/svcapi/users', { email: 'ro@plant.test', password: 'ro-password-1', role: 'read-only' });
    const roUser = (await call(admin, 'GET', `/svcapi/users/findOne?${q({ where: { email: 'ro@plant.test' } })}`)).body;
    await call(admin, 'POST', '/svcapi/userprofiles', { usersId: roUser.id, accessAllowed: { orgs: [ids.org], sites: [], units: [] } });
    ro = await svc.login('ro@plant.test', 'ro-password-1');
  });
  after(() => svc.dispose());

  test('login puts the profile grants into the token', async () => {
    const payload = JSON.parse(Buffer.from(rw.split('.')[1], 'base64url').toString());
    assert.deepEqual(payload.units_id, [ids.unitA]);
  });

  test('lists and counts silently leave out rows outside the grant', async () => {
    const units = (await call(rw, 'GET', '/svcapi/units')).body.map((u: { id: string }) => u.id);
    assert.deepEqual(units, [ids.unitA]);
    assert.deepEqual((await call(rw, 'GET', '/svcapi/equipment')).body.map((e: { id: string }) => e.id), [ids.eqA]);
    assert.deepEqual((await call(rw, 'GET', '/svcapi/equipment/count')).body, { count: 1 });
    // Ancestors of the granted unit are readable for navigation, siblings are not.
    assert.deepEqual((await call(rw, 'GET', '/svcapi/sites')).body.map((s: { id: string }) => s.id), [ids.siteA]);
    assert.deepEqual((await call(rw, 'GET', '/svcapi/orgs')).body.map((o: { id: string }) => o.id), [ids.org]);
    // Rows with no path to the hierarchy are shared.
    assert.ok((await call(rw, 'GET', '/svcapi/labels')).body.some((l: { id: string }) => l.id === ids.label));
    // An org grant covers its sites and units.
    assert.equal((await call(ro, 'GET', '/svcapi/units')).body.length, 3);
  });

  test('direct reads, updates and deletes outside the grant are 403', async () => {
    assert.equal((await call(rw, 'GET', `/svcapi/units/${ids.unitB}`)).status, 403);
    assert.equal((await call(rw, 'GET', `/svcapi/equipment/${ids.eqB}`)).status, 403);
    assert.equal((await call(rw, 'GET', `/svcapi/equipment/${ids.eqB}/exists`)).status, 403);
    assert.equal((await call(rw, 'PUT', `/svcapi/equipment/${ids.eqB}`, { name: 'mine' })).status, 403);
    assert.equal((await call(rw, 'DELETE', `/svcapi/equipment/${ids.eqB}`)).status, 403);
    assert.equal((await call(rw, 'PUT', `/svcapi/sites/${ids.siteA}`, { name: 'renamed' })).status, 403, 'ancestor is read-only');
    assert.equal((await call(admin, 'GET', `/svcapi/equipment/${ids.eqB}`)).body.name, 'eq B', 'nothing changed');
    // Inside the grant works.
    assert.equal((await call(rw, 'PUT', `/svcapi/equipment/${ids.eqA}`, { note: 'ok' })).status, 200);
    // Moving a row out of the grant is refused and leaves it as it was.
    assert.equal((await call(rw, 'PUT', `/svcapi/equipment/${ids.eqA}`, { unitsId: ids.unitB })).status, 403);
    assert.equal((await call(admin, 'GET', `/svcapi/equipment/${ids.eqA}`)).body.unitsId, ids.unitA);
    // Update-all and delete-all only touch rows inside.
    assert.deepEqual((await call(rw, 'POST', '/svcapi/equipment/update?where=%7B%7D', { touched: true })).body, { count: 1 });
    assert.equal((await call(admin, 'GET', `/svcapi/equipment/${ids.eqB}`)).body.touched, undefined);
  });

  test('creating under a foreign parent is 403, nested or flat, and writes nothing', async () => {
    const before = (await call(admin, 'GET', '/svcapi/equipment/count')).body.count;
    assert.equal((await call(rw, 'POST', `/svcapi/units/${ids.unitB}/equipment`, { name: 'sneaky' })).status, 403);
    assert.equal((await call(rw, 'POST', '/svcapi/equipment', { name: 'sneaky', unitsId: ids.unitB })).status, 403);
    assert.equal((await call(rw, 'POST', '/svcapi/equipment/bulk', [{ name: 'fine', unitsId: ids.unitA }, { name: 'sneaky', unitsId: ids.unitB }])).status, 403);
    assert.equal((await call(admin, 'GET', '/svcapi/equipment/count')).body.count, before);
    assert.equal((await call(rw, 'POST', `/svcapi/units/${ids.unitA}/equipment`, { name: 'allowed' })).status, 200);
  });

  test('users and profiles: own rows only; role and grants are admin-only', async () => {
    const users = (await call(rw, 'GET', '/svcapi/users')).body;
    assert.deepEqual(users.map((u: { email: string }) => u.email), ['rw@plant.test']);
    assert.equal((await call(rw, 'PUT', `/svcapi/users/${ids.rwUser}`, { role: 'admin' })).status, 403);
    const profile = (await call(rw, 'GET', '/svcapi/userprofiles')).body[0];
    assert.ok(profile);
    assert.equal((await call(rw, 'PUT', `/svcapi/userprofiles/${profile.id}`, { accessAllowed: { units: [ids.unitA, ids.unitB] } })).status, 403);
    assert.equal((await call(rw, 'PUT', `/svcapi/userprofiles/${profile.id}`, { theme: 'dark' })).status, 200);
    assert.equal((await call(rw, 'POST', '/svcapi/users', { email: 'other@plant.test' })).status, 403);
    const me = (await call(admin, 'GET', `/svcapi/users/${ids.rwUser}`)).body;
    assert.equal(me.role, 'read-write');
  });

  test('read-only callers get 403 on every mutating route and can still read', async () => {
    assert.equal((await call(ro, 'GET', '/svcapi/units')).status, 200);
    const attempts: Array<[string, string, unknown]> = [
      ['POST', '/svcapi/labels', { name: 'x' }],
      ['PUT', `/svcapi/units/${ids.unitA}`, { name: 'x' }],
      ['PATCH', '/svcapi/labels', { name: 'x' }],
      ['DELETE', `/svcapi/equipment/${ids.eqA}`, undefined],
      ['DELETE', '/svcapi/labels?where=%7B%7D', undefined],
      ['POST', '/svcapi/labels/bulk', [{ name: 'x' }]],
      ['POST', '/svcapi/labels/update?where=%7B%7D', { name: 'x' }],
      ['POST', `/svcapi/units/${ids.unitA}/equipment`, { name: 'x' }],
    ];
    for (const [method, path, body] of attempts) {
      const res = await call(ro, method, path, body);
      assert.equal(res.status, 403, `${method} ${path}`);
    }
    assert.equal((await call(admin, 'GET', `/svcapi/equipment/${ids.eqA}`)).status, 200);
  });

  test('a new account with no grant sees no hierarchy data', async () => {
    const fresh = await svc.newUser('fresh@plant.test', 'fresh-password-1');
    for (const url of ['orgs', 'sites', 'units', 'equipment', 'tagmeta']) {
      assert.deepEqual((await call(fresh, 'GET', `/svcapi/${url}`)).body, [], url);
    }
  });
});
