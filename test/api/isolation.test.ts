// Tenant isolation through the metadata entities (issue 12, items 3, 4, 10, 11 and part of 12):
// moving and renaming scope rows, the tag map, renames that must be all or nothing, rows with
// several parents, and entity rules (notifications) on every generic write route.
// Two tenants: "acme" (the victim, with data) and "evil" (the caller under test).

import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import Database from 'better-sqlite3';
import { encodeScopeName } from '../../shared/scope-path.js';
import { startService, type TestService } from './harness.js';

const T0 = Date.UTC(2026, 0, 10);
const enc = encodeURIComponent;
const ACME = { organization: 'acme', site: 'north', unit: 'boiler-1', grid: 'main' };
const EVIL = { organization: 'evil', site: 's2', unit: 'u2', grid: 'main' };
const where = (w: unknown) => `where=${enc(JSON.stringify(w))}`;
const scopeQuery = (s: Record<string, string>) => Object.entries(s).map(([k, v]) => `${k}=${enc(v)}`).join('&');
const rawQuery = (tags: string[], scope: Record<string, string> | null) =>
  `/svcapi/fast_query?${tags.map((t) => `tags=${enc(t)}`).join('&')}&start=0&end=${T0 + 86_400_000}${scope ? `&${scopeQuery(scope)}` : ''}`;

describe('tenant isolation through entities', () => {
  let svc: TestService;
  let admin: string;
  /** Granted unit u2 only. */
  let unitUser: string;
  /** Granted org evil. */
  let orgUser: string;
  /** Granted acme's unit boiler-1: the victim. */
  let victim: string;
  const ids: Record<string, string> = {};

  const call = (token: string, method: string, urlPath: string, body?: unknown) => svc.request(method, urlPath, { body, token });
  const mk = async (url: string, body: object) => {
    const res = await call(admin, 'POST', `/svcapi/${url}`, body);
    assert.equal(res.status, 200, `${url}: ${res.text}`);
    return res.body.id as string;
  };
  const grantedUser = async (email: string, grant: Record<string, string[]>) => {
    await svc.newUser(email, 'user-password-1');
    const user = (await call(admin, 'GET', `/svcapi/users/findOne?filter=${enc(JSON.stringify({ where: { email } }))}`)).body;
    await mk('userprofiles', { usersId: user.id, accessAllowed: { orgs: [], sites: [], units: [], ...grant } });
    return svc.login(email, 'user-password-1');
  };
  const entity = async (url: string, id: string) => (await call(admin, 'GET', `/svcapi/${url}/${id}`)).body;

  before(async () => {
    svc = await startService({ config: { storage: { shards: 2 } } });
    admin = await svc.adminToken();
    ids.acme = await mk('orgs', { name: 'acme' });
    ids.north = await mk('sites', { name: 'north', orgsId: ids.acme });
    ids.boiler1 = await mk('units', { name: 'boiler-1', siteId: ids.north });
    ids.acmeEq = await mk('equipment', { name: 'pump', unitsId: ids.boiler1 });
    ids.evil = await mk('orgs', { name: 'evil' });
    ids.s2 = await mk('sites', { name: 's2', orgsId: ids.evil });
    ids.u2 = await mk('units', { name: 'u2', siteId: ids.s2 });
    ids.evilEq = await mk('equipment', { name: 'fan', unitsId: ids.u2 });
    for (const scope of [ACME, EVIL]) assert.equal((await svc.post('/svcapi/create_collection', scope, admin)).body.success, true);
    assert.equal((await svc.post('/svcapi/write', { ...ACME, tags: { 'TI-901': [[T0, 1]] } }, admin)).body.success, true);
    unitUser = await grantedUser('unit@evil.test', { units: [ids.u2] });
    orgUser = await grantedUser('org@evil.test', { orgs: [ids.evil] });
    victim = await grantedUser('victim@acme.test', { units: [ids.boiler1] });
  });
  after(() => svc.dispose());

  test('item 3: a granted unit cannot be moved to a site outside the grant, by any write route', async () => {
    const move = { siteId: ids.north };
    const attempts: Array<[string, string, unknown]> = [
      ['PUT', `/svcapi/units/${ids.u2}`, move],
      ['PATCH', '/svcapi/units', { id: ids.u2, ...move }],
      ['POST', `/svcapi/units/update?${where({ name: 'u2' })}`, move],
      ['PUT', `/svcapi/units/update?${where({})}`, move],
    ];
    for (const [method, url, body] of attempts) {
      const res = await call(unitUser, method, url, body);
      assert.equal(res.status, 403, `${method} ${url}: ${res.text}`);
    }
    assert.equal((await entity('units', ids.u2)).siteId, ids.s2, 'nothing was written');
    // Creating a unit (with an id of its own choosing) under the foreign site is refused too.
    assert.equal((await call(orgUser, 'POST', '/svcapi/units', { name: 'x', siteId: ids.north })).status, 403);
    assert.equal((await call(orgUser, 'POST', '/svcapi/units/bulk', [{ name: 'x', siteId: ids.north }])).status, 403);
    assert.equal((await call(orgUser, 'POST', `/svcapi/sites/${ids.north}/units`, { name: 'x' })).status, 403);
    // An org-granted user cannot move one of its sites into another org either.
    assert.equal((await call(orgUser, 'PUT', `/svcapi/sites/${ids.s2}`, { orgsId: ids.acme })).status, 403);
    assert.equal((await entity('sites', ids.s2)).orgsId, ids.evil);
    // The attack of the issue ends here: the unit did not move, so its rename binds nothing of acme.
    assert.equal((await call(unitUser, 'GET', `/svcapi/collection/${enc('acme/north/boiler-1/main')}`)).status, 404, 'hidden like a missing one');
    assert.equal((await call(unitUser, 'POST', '/svcapi/write', { ...ACME, tags: { X: [[T0, 1]] } })).status, 403);
  });

  test('item 3: equipment and other children cannot be re-parented outside the grant', async () => {
    assert.equal((await call(unitUser, 'PUT', `/svcapi/equipment/${ids.evilEq}`, { unitsId: ids.boiler1 })).status, 403);
    assert.equal((await call(unitUser, 'PATCH', '/svcapi/equipment', { id: ids.evilEq, unitsId: ids.boiler1 })).status, 403);
    assert.equal((await entity('equipment', ids.evilEq)).unitsId, ids.u2);
  });

  test('item 3: names that would bind a collection of another row are refused with 409 DUPLICATE', async () => {
    const boiler2 = await mk('units', { name: 'boiler-2', siteId: ids.north });
    const south = await mk('sites', { name: 'south', orgsId: ids.acme });
    const cases: Array<[string, string, unknown]> = [
      ['PUT', `/svcapi/units/${boiler2}`, { name: 'boiler-1' }],
      ['PATCH', '/svcapi/units', { id: boiler2, name: 'boiler-1' }],
      ['POST', `/svcapi/units/update?${where({ name: 'boiler-2' })}`, { name: 'boiler-1' }],
      ['POST', '/svcapi/units', { name: 'boiler-1', siteId: ids.north }],
      ['POST', '/svcapi/units/bulk', [{ name: 'boiler-9', siteId: ids.north }, { name: 'boiler-9', siteId: ids.north }]],
      ['POST', `/svcapi/sites/${ids.north}/units`, { name: 'boiler-1' }],
      ['PUT', `/svcapi/sites/${south}`, { name: 'north' }],
      ['POST', '/svcapi/sites', { name: 'north', orgsId: ids.acme }],
      ['POST', '/svcapi/orgs', { name: 'acme' }],
      ['PUT', `/svcapi/orgs/${ids.evil}`, { name: 'acme' }],
    ];
    for (const [method, url, body] of cases) {
      const res = await call(admin, method, url, body);
      assert.equal(res.status, 409, `${method} ${url} ${JSON.stringify(body)}: ${res.text}`);
      assert.match(res.body.error, /^(item \d+: )?DUPLICATE: /);
    }
    assert.equal((await entity('units', boiler2)).name, 'boiler-2');
    assert.equal((await entity('orgs', ids.evil)).name, 'evil');
    assert.equal((await call(admin, 'GET', `/svcapi/units/count?${where({ name: 'boiler-9' })}`)).body.count, 0);
    // A move into a site that already has a unit of that name is a duplicate as well.
    const other = await mk('units', { name: 'boiler-1', siteId: south });
    assert.equal((await call(admin, 'PUT', `/svcapi/units/${other}`, { siteId: ids.north })).status, 409);
    // The same names elsewhere are fine; changing other fields of a row keeps its own name.
    assert.equal((await call(admin, 'PUT', `/svcapi/units/${boiler2}`, { name: 'boiler-2', note: 'same name' })).status, 200);
    assert.equal((await call(orgUser, 'PUT', `/svcapi/units/${ids.u2}`, { note: 'hello' })).status, 200);
  });

  test('item 3: duplicate names already stored do not make reads or unrelated writes fail', async () => {
    const db = new Database(path.join(svc.dataDir, 'metadata.sqlite'));
    try {
      db.pragma('busy_timeout = 5000');
      db.prepare('INSERT INTO units (meta_data, siteId) VALUES (?, ?)').run(JSON.stringify({ name: 'boiler-1', legacy: true }), Number(ids.north));
    } finally {
      db.close();
    }
    const units = await call(admin, 'GET', `/svcapi/units?${where({ name: 'boiler-1', siteId: ids.north })}`);
    assert.equal(units.status, 200);
    assert.equal(units.body.length, 2);
    assert.equal((await call(victim, 'GET', rawQuery(['TI-901'], ACME))).status, 200);
    assert.equal((await call(admin, 'PUT', `/svcapi/units/${ids.boiler1}`, { note: 'still writable' })).status, 200);
    const legacy = units.body.find((u: { legacy?: boolean }) => u.legacy);
    // Deleting the extra row leaves the collections to the row that stays.
    assert.equal((await call(admin, 'DELETE', `/svcapi/units/${legacy.id}`)).status, 200);
    assert.equal((await call(admin, 'GET', `/svcapi/collection/${enc('acme/north/boiler-1/main')}`)).status, 200);
  });

  test('item 12: an org grant lets its user create sites in the org and units under them', async () => {
    const site = await call(orgUser, 'POST', '/svcapi/sites', { name: 's3', orgsId: ids.evil });
    assert.equal(site.status, 200, site.text);
    const nested = await call(orgUser, 'POST', `/svcapi/orgs/${ids.evil}/sites`, { name: 's4' });
    assert.equal(nested.status, 200, nested.text);
    const unit = await call(orgUser, 'POST', '/svcapi/units', { name: 'u3', siteId: site.body.id });
    assert.equal(unit.status, 200, unit.text);
    const nestedUnit = await call(orgUser, 'POST', `/svcapi/sites/${nested.body.id}/units`, { name: 'u4' });
    assert.equal(nestedUnit.status, 200, nestedUnit.text);
    assert.equal((await call(orgUser, 'POST', '/svcapi/equipment', { name: 'e', unitsId: unit.body.id })).status, 200);
    // Still nothing outside the org, and a unit grant does not open site creation.
    assert.equal((await call(orgUser, 'POST', '/svcapi/sites', { name: 's5', orgsId: ids.acme })).status, 403);
    assert.equal((await call(orgUser, 'POST', '/svcapi/orgs', { name: 'evil-2' })).status, 403);
    assert.equal((await call(unitUser, 'POST', '/svcapi/sites', { name: 's6', orgsId: ids.evil })).status, 403);
    // What the user created is the user's.
    assert.equal((await call(orgUser, 'PUT', `/svcapi/sites/${site.body.id}`, { note: 'mine' })).status, 200);
  });

  test('item 4: a tagmeta row cannot re-point another collection\'s tag; writes cannot either', async () => {
    const hijack = await call(unitUser, 'POST', '/svcapi/tagmeta', { unitsId: ids.u2, dataTagId: 'TI-901' });
    assert.equal(hijack.status, 409, hijack.text);
    assert.match(hijack.body.error, /TI-901/);
    assert.doesNotMatch(hijack.body.error, /acme|north|boiler/, 'the owner is not named to a non-admin');
    assert.equal((await call(admin, 'GET', `/svcapi/tagmeta/count?${where({ dataTagId: 'TI-901' })}`)).body.count, 0, 'nothing written');
    // An update of an existing row cannot do it either.
    const own = await call(unitUser, 'POST', '/svcapi/tagmeta', { unitsId: ids.u2, dataTagId: 'EV-1' });
    assert.equal(own.status, 200, own.text);
    assert.equal((await call(unitUser, 'PUT', `/svcapi/tagmeta/${own.body.id}`, { dataTagId: 'TI-901' })).status, 409);
    // Nor does writing the tag into one's own collection with an explicit scope.
    assert.equal((await call(unitUser, 'POST', '/svcapi/write', { ...EVIL, tags: { 'TI-901': [[T0, 666]] } })).body.success, true);
    // The victim's scope-less reads and writes still reach acme; an admin's scope-less write lands there.
    const last = await call(victim, 'GET', '/svcapi/lastlist?tags=TI-901');
    assert.equal(last.status, 200, last.text);
    assert.deepEqual(last.body, { 'TI-901': [T0, 1] });
    assert.equal((await call(victim, 'POST', '/svcapi/write', { tags: { 'TI-901': [[T0 + 1000, 2]] } })).body.success, true);
    assert.equal((await call(admin, 'POST', '/svcapi/write', { tags: { 'TI-901': [[T0 + 2000, 3]] } })).body.success, true);
    assert.deepEqual((await call(admin, 'GET', rawQuery(['TI-901'], ACME))).body, { 'TI-901': [[T0, 1], [T0 + 1000, 2], [T0 + 2000, 3]] });
    assert.deepEqual((await call(admin, 'GET', rawQuery(['TI-901'], EVIL))).body, { 'TI-901': [[T0, 666]] });
    // The owner's own tag was bound: its scope-less write works.
    assert.equal((await call(unitUser, 'POST', '/svcapi/write', { tags: { 'EV-1': [[T0, 5]] } })).body.success, true);
    // An admin is refused too, and told which collection owns the tag.
    const byAdmin = await call(admin, 'POST', '/svcapi/tagmeta', { unitsId: ids.u2, dataTagId: 'TI-901' });
    assert.equal(byAdmin.status, 409);
    assert.match(byAdmin.body.error, /acme\/north\/boiler-1\/main/);
  });

  test('item 11: every parent of a row must be inside the grant, for writes and for reads', async () => {
    const mixed = await call(unitUser, 'POST', '/svcapi/tagmeta', { unitsId: ids.boiler1, equipmentId: ids.evilEq, tagName: 'x' });
    assert.equal(mixed.status, 403, mixed.text);
    const mixed2 = await call(unitUser, 'POST', '/svcapi/tagmeta', { unitsId: ids.u2, equipmentId: ids.acmeEq, tagName: 'x' });
    assert.equal(mixed2.status, 403, mixed2.text);
    assert.equal((await call(admin, 'GET', `/svcapi/tagmeta/count?${where({ tagName: 'x' })}`)).body.count, 0);
    // A row an admin stored across both tenants is readable by neither.
    const stored = await mk('tagmeta', { unitsId: ids.u2, equipmentId: ids.acmeEq, tagName: 'both' });
    for (const token of [unitUser, victim]) {
      assert.equal((await call(token, 'GET', `/svcapi/tagmeta/${stored}`)).status, 403);
      assert.deepEqual((await call(token, 'GET', `/svcapi/tagmeta?${where({ tagName: 'both' })}`)).body, []);
      assert.equal((await call(token, 'PUT', `/svcapi/tagmeta/${stored}`, { tagName: 'mine' })).status, 403);
    }
    // A row with one parent set and inside is the caller's.
    assert.equal((await call(unitUser, 'POST', '/svcapi/tagmeta', { equipmentId: ids.evilEq, tagName: 'eq-only' })).status, 200);
  });

  test('item 11: notifications are created by admins only, on every generic route, and validated there', async () => {
    const valid = { severity: 'warn', source: 'custom', title: 'Hello', body: 'world' };
    for (const [method, url, body] of [
      ['POST', '/svcapi/notifications/bulk', [valid]],
      ['PATCH', '/svcapi/notifications', valid],
    ] as const) {
      const res = await call(orgUser, method, url, body);
      assert.equal(res.status, 403, `${method} ${url}: ${res.text}`);
    }
    assert.equal((await call(admin, 'GET', '/svcapi/notifications/count')).body.count, 0);

    const invalid: Array<[Record<string, unknown>, RegExp]> = [
      [{ ...valid, severity: 'fatal' }, /severity/],
      [{ ...valid, source: 'me' }, /source/],
      [{ ...valid, title: 'é'.repeat(61) }, /title.*120/],
      [{ ...valid, body: 'b'.repeat(2049) }, /body.*2048/],
      [{ ...valid, payload: [1, 2] }, /payload/],
      [{ ...valid, payload: { big: 'p'.repeat(16_400) } }, /payload.*16384/],
      [{ ...valid, redirect: true }, /link/],
      [{ ...valid, expiresAt: Date.now() - 60_000 }, /expiresAt/],
      [{ severity: 'warn', source: 'custom', body: 'no title' }, /title/],
      [{ severity: 'warn', title: 't', body: 'b' }, /source/],
    ];
    for (const [body, pattern] of invalid) {
      for (const [method, url, sent] of [
        ['POST', '/svcapi/notifications/bulk', [valid, body]],
        ['PATCH', '/svcapi/notifications', body],
      ] as const) {
        const res = await call(admin, method, url, sent);
        assert.equal(res.status, 400, `${method} ${JSON.stringify(body).slice(0, 80)}: ${res.text}`);
        assert.match(res.body.error, pattern);
      }
    }
    assert.equal((await call(admin, 'GET', '/svcapi/notifications/count')).body.count, 0, 'nothing of the refused requests was stored');

    const created = await call(admin, 'POST', '/svcapi/notifications/bulk', [
      { ...valid, userId: 'org@evil.test', redirect: true, link: '/x', payload: { a: 1 }, expiresAt: Date.now() + 60_000 },
    ]);
    assert.equal(created.status, 200, created.text);
    const [row] = created.body;
    assert.equal(typeof row.createdAt, 'number');
    // Updates go through the same rules, for the addressee and for admins.
    assert.equal((await call(orgUser, 'PUT', `/svcapi/notifications/${row.id}`, { severity: 'loud' })).status, 400);
    assert.equal((await call(admin, 'POST', `/svcapi/notifications/update?${where({})}`, { redirect: true, link: null })).status, 400);
    assert.equal((await call(admin, 'PUT', `/svcapi/notifications/${row.id}`, { title: 't'.repeat(121) })).status, 400);
    assert.equal((await entity('notifications', row.id)).title, 'Hello');
    assert.equal((await call(orgUser, 'PUT', `/svcapi/notifications/${row.id}`, { readAt: Date.now() })).status, 200);
  });
});

describe('renames are all or nothing (item 10)', () => {
  let svc: TestService;
  let admin: string;
  const ids: Record<string, string> = {};
  const call = (method: string, urlPath: string, body?: unknown) => svc.request(method, urlPath, { body, token: admin });
  const mk = async (url: string, body: object) => (await call('POST', `/svcapi/${url}`, body)).body.id as string;
  const folder = (...names: string[]) => path.join(svc.dataDir, 'ts', ...names.map(encodeScopeName));
  const read = async (scope: Record<string, string>, tag = 'R') => (await svc.get(rawQuery([tag], scope), admin)).body?.[tag];

  before(async () => {
    svc = await startService({ config: { storage: { shards: 2 } } });
    admin = await svc.adminToken();
    ids.plant = await mk('orgs', { name: 'plant' });
    ids.east = await mk('sites', { name: 'east', orgsId: ids.plant });
    ids.west = await mk('sites', { name: 'west', orgsId: ids.plant });
    ids.u1 = await mk('units', { name: 'u1', siteId: ids.east });
    const scope = { organization: 'plant', site: 'east', unit: 'u1', grid: 'g' };
    assert.equal((await svc.post('/svcapi/create_collection', scope, admin)).body.success, true);
    assert.equal((await svc.post('/svcapi/write', { ...scope, tags: { R: [[T0, 7]] } }, admin)).body.success, true);
    // Collections no entity owns, in the folders a rename would move into.
    for (const ghost of [{ organization: 'ghost', site: 's', unit: 'u', grid: 'g' }, { organization: 'plant', site: 'east', unit: 'ghost', grid: 'g' }]) {
      assert.equal((await svc.post('/svcapi/create_collection', ghost, admin)).body.success, true);
    }
  });
  after(() => svc.dispose());

  test('a rename into an existing folder is 409 before anything changes', async () => {
    const org = await call('PUT', `/svcapi/orgs/${ids.plant}`, { name: 'ghost' });
    assert.equal(org.status, 409, org.text);
    assert.match(org.body.error, /^DUPLICATE: .*ghost/);
    const unit = await call('PUT', `/svcapi/units/${ids.u1}`, { name: 'ghost' });
    assert.equal(unit.status, 409, unit.text);
    assert.equal((await call('GET', `/svcapi/orgs/${ids.plant}`)).body.name, 'plant');
    assert.equal((await call('GET', `/svcapi/units/${ids.u1}`)).body.name, 'u1');
    assert.ok(fs.existsSync(path.join(folder('plant', 'east', 'u1', 'g'), 'meta.json')));
    assert.deepEqual(await read({ organization: 'plant', site: 'east', unit: 'u1', grid: 'g' }), [[T0, 7]]);
    // A name that cannot be a folder is refused while the row has collections.
    const slash = await call('PUT', `/svcapi/units/${ids.u1}`, { name: 'a/b' });
    assert.equal(slash.status, 400, slash.text);
    assert.match(slash.body.error, /unit/);
    assert.equal((await call('GET', `/svcapi/units/${ids.u1}`)).body.name, 'u1');
  });

  test('a rename to a name that is percent-encoded on disk moves the folder, and back', async () => {
    const name = 'Ünit 1.%';
    const res = await call('PUT', `/svcapi/units/${ids.u1}`, { name });
    assert.equal(res.status, 200, res.text);
    assert.ok(fs.existsSync(path.join(folder('plant', 'east', name, 'g'), 'meta.json')));
    assert.ok(!fs.existsSync(folder('plant', 'east', 'u1')));
    assert.deepEqual(await read({ organization: 'plant', site: 'east', unit: name, grid: 'g' }), [[T0, 7]]);
    const back = await call('PUT', `/svcapi/units/${ids.u1}`, { name: 'u1' });
    assert.equal(back.status, 200, back.text);
    assert.deepEqual(await read({ organization: 'plant', site: 'east', unit: 'u1', grid: 'g' }), [[T0, 7]]);
  });

  test('moving a unit to another site moves its folder with it', async () => {
    const res = await call('PUT', `/svcapi/units/${ids.u1}`, { siteId: ids.west });
    assert.equal(res.status, 200, res.text);
    assert.ok(fs.existsSync(path.join(folder('plant', 'west', 'u1', 'g'), 'meta.json')));
    assert.deepEqual(await read({ organization: 'plant', site: 'west', unit: 'u1', grid: 'g' }), [[T0, 7]]);
    assert.deepEqual((await svc.get(rawQuery(['R'], null), admin)).body, { R: [[T0, 7]] }, 'the tag map follows');
    assert.equal((await call('PUT', `/svcapi/units/${ids.u1}`, { siteId: ids.east })).status, 200);
    assert.deepEqual(await read({ organization: 'plant', site: 'east', unit: 'u1', grid: 'g' }), [[T0, 7]]);
  });

  test('when the folder move fails after the commit, the entity change is undone and the reply says so', async () => {
    // A plain file where the new site's folder would have to be created: the move cannot happen.
    const south = await mk('sites', { name: 'south', orgsId: ids.plant });
    fs.writeFileSync(folder('plant', 'south'), 'in the way');
    try {
      const res = await call('PUT', `/svcapi/units/${ids.u1}`, { siteId: south, note: 'moved' });
      assert.equal(res.status, 409, res.text);
      assert.match(res.body.error, /could not be moved.*the change was undone/);
      const unit = (await call('GET', `/svcapi/units/${ids.u1}`)).body;
      assert.equal(unit.siteId, ids.east, 'the move was undone');
      assert.equal(unit.note, undefined, 'the whole write was undone');
      assert.deepEqual(await read({ organization: 'plant', site: 'east', unit: 'u1', grid: 'g' }), [[T0, 7]]);
    } finally {
      fs.rmSync(folder('plant', 'south'));
    }
    // The next rename works normally.
    assert.equal((await call('PUT', `/svcapi/units/${ids.u1}`, { siteId: south })).status, 200);
    assert.deepEqual(await read({ organization: 'plant', site: 'south', unit: 'u1', grid: 'g' }), [[T0, 7]]);
  });
});
