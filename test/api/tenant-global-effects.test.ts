// Issue 34 items 1, 7 and 8: what one tenant can do to every other. A registered account with no
// grant, and a read-write account of another unit, must not switch alarms off for everyone, lock
// another tenant's collector out of ingest by spending its rate budget, or take the clientId a
// collector uses. The admin still can do what is global.

import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { startService, type HttpResult, type TestService } from './harness.js';
import { M, Plant, enc, type Scope } from './monitor-support.js';

const RATE_LIMIT = 5;
const ACME: Scope = { organization: 'acme', site: 'north', unit: 'boiler-1', grid: 'main' };
const EVIL: Scope = { organization: 'evil', site: 's2', unit: 'u2', grid: 'main' };
const CLIENT = 'plant-opc';
/** A second client of the same unit, for the rate test of its own. */
const CLIENT_B = 'plant-opc-b';
const T0 = Date.UTC(2026, 0, 10);

describe('global effects across tenants', () => {
  let svc: TestService;
  let admin: string;
  let plant: Plant;
  let evilUnit: string;
  /** The collector's account: read-write on the unit its ingest client writes to. */
  let collector: { email: string; token: string };
  /** Read-write on another tenant's unit. */
  let mallory: { email: string; token: string };
  /** Registered (public), never granted anything. */
  let nobody: string;
  const call = (token: string | undefined, method: string, url: string, body?: unknown) => plant.call(token, method, url, body);
  const ingest = (token: string, v: number, client = CLIENT): Promise<HttpResult> =>
    svc.request('POST', `/ingest/${enc(client)}/g`, { token, body: { ts: T0 + v, values: { TI: v } } });

  before(async () => {
    svc = await startService({ config: { ingest: { rateLimitPerMinute: RATE_LIMIT } } });
    admin = await svc.adminToken();
    plant = new Plant(() => svc, () => admin);
    await plant.collection(ACME);
    await plant.collection(EVIL);
    const acmeUnit = await plant.unitOf(ACME);
    evilUnit = await plant.unitOf(EVIL);
    collector = await plant.account('collector@acme.test', 'read-write', [acmeUnit]);
    mallory = await plant.account('mallory@evil.test', 'read-write', [evilUnit]);
    nobody = await svc.newUser('nobody@register.test');
    for (const clientId of [CLIENT, CLIENT_B]) {
      const created = await call(admin, 'POST', '/svcapi/ingestconfigs', { clientId, organization: ACME.organization, site: ACME.site, unit: ACME.unit });
      assert.equal(created.status, 200, created.text);
    }
  });
  after(() => svc?.dispose());

  test('global switches: 403 for a no-grant account and for read-write accounts of any unit; the admin still changes them', async () => {
    const switches: Array<[string, string, unknown]> = [
      ['PUT', `${M}/config`, { enabled: false }],
      ['PUT', '/api/admin/backup/config', {}],
      ['POST', '/api/admin/backup/run', { kind: 'sqlite' }],
    ];
    for (const [who, token] of [['no grant', nobody], ['read-write of another unit', mallory.token], ['read-write of the unit', collector.token]] as const) {
      for (const [method, url, body] of switches) {
        const res = await call(token, method, url, body);
        assert.equal(res.status, 403, `${who}: ${method} ${url}: ${res.status} ${res.text}`);
      }
    }
    assert.deepEqual((await call(admin, 'GET', `${M}/config`)).body, { enabled: true }, 'the refused switches changed nothing');
    assert.deepEqual((await call(collector.token, 'GET', `${M}/config`)).body, { enabled: true }, 'reading the switch needs only a token');
    assert.deepEqual((await call(admin, 'PUT', `${M}/config`, { enabled: false })).body, { ok: true });
    assert.deepEqual((await call(admin, 'GET', `${M}/config`)).body, { enabled: false });
    assert.deepEqual((await call(admin, 'PUT', `${M}/config`, { enabled: true })).body, { ok: true });
    assert.equal((await call(admin, 'PUT', '/api/admin/backup/config', {})).status, 200);
    // What lies inside a read-write caller's grant stays its to change.
    const own = await call(collector.token, 'PUT', `${M}/collections/${enc(`${ACME.organization}/${ACME.site}/${ACME.unit}/${ACME.grid}`)}/enable`, {});
    assert.equal(own.status, 200, own.text);
  });

  test('rows every tenant shares (labels, profiles-lookups, configurations): read by all, created, changed and deleted by an admin only', async () => {
    const shared: Array<[string, Record<string, unknown>]> = [
      ['labels', { name: 'shared-label' }],
      ['profiles-lookups', { name: 'shared-lookup' }],
      ['configurations', { id: 'plant-wide', value: 'kept' }],
    ];
    for (const [url, row] of shared) {
      const made = await call(admin, 'POST', `/svcapi/${url}`, row);
      assert.equal(made.status, 200, `admin creates ${url}: ${made.text}`);
      const id = encodeURIComponent(String(made.body.id));
      for (const [who, token] of [['no grant', nobody], ['read-write of another unit', mallory.token], ['read-write of the unit', collector.token]] as const) {
        const attempts: Array<[string, string, unknown?]> = [
          ['POST', `/svcapi/${url}`, url === 'configurations' ? { id: `${who}-row` } : { name: `${who}-row` }],
          ['PATCH', `/svcapi/${url}`, { id: made.body.id, note: 'changed' }],
          ['PUT', `/svcapi/${url}/${id}`, { ...row, note: 'replaced' }],
          ['POST', `/svcapi/${url}/update?where=${enc(JSON.stringify({}))}`, { note: 'everyone' }],
          ['DELETE', `/svcapi/${url}/${id}`],
          ['DELETE', `/svcapi/${url}?where=${enc(JSON.stringify({}))}`],
        ];
        for (const [method, path, body] of attempts) {
          const res = await call(token, method, path, body);
          assert.equal(res.status, 403, `${who}: ${method} ${path}: ${res.status} ${res.text}`);
          assert.match(res.text, /only an admin/, `${who}: ${method} ${path} says why`);
        }
        const read = await call(token, 'GET', `/svcapi/${url}/${id}`);
        assert.equal(read.status, 200, `${who} reads ${url}: ${read.text}`);
      }
      const list = await call(admin, 'GET', `/svcapi/${url}`);
      assert.equal(list.body.length, 1, `${url}: nothing created by the refused calls: ${list.text}`);
      assert.equal(list.body[0].note, undefined, `${url}: nothing changed by the refused calls`);
      assert.equal((await call(admin, 'DELETE', `/svcapi/${url}/${id}`)).status, 200, `admin deletes ${url}`);
    }
  });

  test("ingest: callers refused by the access check never use up the collector's rate budget", async () => {
    const lineProtocol = (token: string) =>
      svc.request('POST', `/ingest/v2/write?db=${CLIENT}&precision=ms`, { token, rawBody: `m v=1 ${T0}`, headers: { 'content-type': 'text/plain' } });
    for (let i = 0; i < RATE_LIMIT * 3; i++) {
      for (const [who, token] of [['no grant', nobody], ['another unit', mallory.token]] as const) {
        const res = await ingest(token, i);
        assert.equal(res.status, 403, `${who}, request ${i + 1}: ${res.status} ${res.text}`);
        const line = await lineProtocol(token);
        assert.equal(line.status, 403, `${who}, line protocol request ${i + 1}: ${line.status} ${line.text}`);
      }
    }
    const res = await ingest(collector.token, 100);
    assert.equal(res.status, 200, res.text);
    assert.deepEqual(res.body, { success: true, points: 1 });
  });

  test("ingest: a caller over its own budget for a client does not take another caller's", async () => {
    for (let i = 0; i < RATE_LIMIT; i++) assert.equal((await ingest(admin, 200 + i, CLIENT_B)).status, 200, `admin request ${i + 1}`);
    const over = await ingest(admin, 300, CLIENT_B);
    assert.equal(over.status, 429, over.text);
    assert.match(String(over.headers['retry-after']), /^\d+$/);
    const res = await ingest(collector.token, 400, CLIENT_B);
    assert.equal(res.status, 200, `the collector after another caller ran out: ${res.text}`);
  });

  test('ingestconfigs: only an admin creates or renames them; a taken clientId is 409 naming no owner; the collector keeps writing', async () => {
    const squat = { clientId: CLIENT, organization: EVIL.organization, site: EVIL.site, unit: EVIL.unit, unitsId: evilUnit };
    for (const [who, token] of [['no grant', nobody], ['read-write of another unit', mallory.token], ['read-write of the unit', collector.token]] as const) {
      const one = await call(token, 'POST', '/svcapi/ingestconfigs', squat);
      assert.equal(one.status, 403, `${who} creating: ${one.text}`);
      const bulk = await call(token, 'POST', '/svcapi/ingestconfigs/bulk', [{ ...squat, clientId: `${CLIENT}-bulk` }]);
      assert.equal(bulk.status, 403, `${who} creating in bulk: ${bulk.text}`);
    }
    // A row of mallory's own unit cannot be renamed onto the collector's name, nor aimed elsewhere.
    const own = await call(admin, 'POST', '/svcapi/ingestconfigs', { clientId: 'evil-opc', organization: EVIL.organization, site: EVIL.site, unit: EVIL.unit, unitsId: evilUnit });
    assert.equal(own.status, 200, own.text);
    const rename = await call(mallory.token, 'PUT', `/svcapi/ingestconfigs/${own.body.id}`, { clientId: CLIENT });
    assert.equal(rename.status, 403, rename.text);
    const aim = await call(mallory.token, 'PUT', `/svcapi/ingestconfigs/${own.body.id}`, { organization: ACME.organization });
    assert.equal(aim.status, 403, aim.text);

    const duplicate = await call(admin, 'POST', '/svcapi/ingestconfigs', squat);
    assert.equal(duplicate.status, 409, duplicate.text);
    assert.match(duplicate.body.error, new RegExp(CLIENT));
    for (const owner of [ACME.organization, ACME.site, ACME.unit]) assert.doesNotMatch(duplicate.text, new RegExp(owner), 'the 409 names no owner');
    const rows = await call(admin, 'GET', `/svcapi/ingestconfigs/count?where=${enc(JSON.stringify({ clientId: CLIENT }))}`);
    assert.deepEqual(rows.body, { count: 1 });

    const res = await ingest(collector.token, 500);
    assert.equal(res.status, 200, `the collector still writes: ${res.text}`);
  });

  test("tag mappings: external specs are given out and renamed by an admin only; a tenant changes the rest of its own", async () => {
    const external = '\\\\PI-SRV\\TI101';
    for (const [who, token, scope] of [['no grant', nobody, ACME], ['read-write of another unit', mallory.token, EVIL], ['read-write of the unit', collector.token, ACME]] as const) {
      const one = await call(token, 'POST', '/svcapi/tag_mappings', { external, tag: 'SQUAT', ...scope });
      assert.equal(one.status, 403, `${who} creating: ${one.text}`);
      const bulk = await call(token, 'POST', '/svcapi/tag_mappings/bulk', [{ external: `${external}-bulk`, tag: 'SQUAT', ...scope }]);
      assert.equal(bulk.status, 403, `${who} creating in bulk: ${bulk.text}`);
    }
    const made = await call(admin, 'POST', '/svcapi/tag_mappings', { external, tag: 'MAP-TI', ...ACME });
    assert.equal(made.status, 200, made.text);
    const id = made.body.id as string;
    assert.equal((await call(collector.token, 'PUT', `/svcapi/tag_mappings/${id}`, { external: 'elsewhere' })).status, 403, 'renaming the spec');
    assert.equal((await call(mallory.token, 'PUT', `/svcapi/tag_mappings/${id}`, { tag: 'X' })).status, 403, 'another tenant changing it');
    const changed = await call(collector.token, 'PUT', `/svcapi/tag_mappings/${id}`, { tag: 'MAP-TI-2', external });
    assert.equal(changed.status, 200, changed.text);
    assert.equal(changed.body.tag, 'MAP-TI-2');
    const written = await call(collector.token, 'POST', '/svcapi/write_tag_mapping', { data: { [external]: [[T0, 1.5]] } });
    assert.equal(written.body?.success, true, written.text);
  });
});
