// Time-series isolation between tenants (issue 12 items 2, 12 and 16): the scope a write is
// checked against is the scope it is written to, whatever the body's encoding tricks; what a
// caller may not see answers like what does not exist; seal_now reaches only the caller's
// collections; the disk guard covers every path that adds data and fails closed.

import assert from 'node:assert/strict';
import fs from 'node:fs';
import { after, before, describe, test } from 'node:test';
import { pack } from 'msgpackr';
import { waitFor } from '../support/wait-for.js';
import { startService, type HttpResult, type TestService } from './harness.js';

const ACME = { organization: 'acme', site: 'north', unit: 'boiler-1', grid: 'main' };
const EVIL = { organization: 'evil', site: 's2', unit: 'u2', grid: 'main' };
const T0 = Date.UTC(2026, 0, 10);
const DAY = 86_400_000;

const json = (value: unknown) => JSON.stringify(value);
const qs = (scope: Record<string, string>) => new URLSearchParams(scope).toString();

/** HSW1 per WIRE.md, with the scope object given as raw JSON text (so it can repeat a key). */
function hsw1(scopeJson: string, timestamps: number[], columns: Record<string, number[]>): Buffer {
  const pad8 = (n: number) => (n + 7) & ~7;
  const scope = Buffer.from(scopeJson);
  const names = Object.keys(columns).map((n) => Buffer.from(n));
  let size = pad8(14 + scope.length) + timestamps.length * 8;
  for (const name of names) size += pad8(2 + name.length) + timestamps.length * 8;
  const buf = Buffer.alloc(size);
  buf.write('HSW1', 0, 'latin1');
  buf.writeUInt32LE(names.length, 4);
  buf.writeUInt32LE(timestamps.length, 8);
  buf.writeUInt16LE(scope.length, 12);
  scope.copy(buf, 14);
  let at = pad8(14 + scope.length);
  for (const t of timestamps) (buf.writeDoubleLE(t, at), (at += 8));
  Object.values(columns).forEach((values, i) => {
    buf.writeUInt16LE(names[i].length, at);
    names[i].copy(buf, at + 2);
    at = pad8(at + 2 + names[i].length);
    for (const v of values) (buf.writeDoubleLE(v, at), (at += 8));
  });
  return buf;
}

/** A msgpack map written key by key, so a key can appear twice (msgpackr's pack cannot do that). */
function msgpackMap(entries: Array<[string, unknown]>): Buffer {
  return Buffer.concat([Buffer.from([0x80 | entries.length]), ...entries.flatMap(([k, v]) => [pack(k), pack(v)])]);
}

describe('time-series isolation between tenants', () => {
  let svc: TestService;
  let admin: string;
  let acmeUser: string;
  let noGrant: string;

  async function points(scope: Record<string, string>, tag: string): Promise<unknown> {
    const res = await svc.get(`/svcapi/fast_query?tags=${tag}&start=0&end=${T0 + 10 * DAY}&${qs(scope)}`, admin);
    assert.equal(res.status, 200, res.text);
    return res.body[tag];
  }

  before(async () => {
    svc = await startService();
    admin = await svc.adminToken();
    const mk = async (url: string, body: object) => (await svc.post(`/svcapi/${url}`, body, admin)).body.id as string;
    const acmeUnit = await mk('units', { name: ACME.unit, siteId: await mk('sites', { name: ACME.site, orgsId: await mk('orgs', { name: ACME.organization }) }) });
    await mk('units', { name: EVIL.unit, siteId: await mk('sites', { name: EVIL.site, orgsId: await mk('orgs', { name: EVIL.organization }) }) });
    for (const scope of [ACME, EVIL]) assert.equal((await svc.post('/svcapi/create_collection', scope, admin)).status, 200);
    const user = await mk('users', { email: 'acme@plant.test', password: 'acme-password-1', role: 'read-write' });
    await svc.post('/svcapi/userprofiles', { usersId: user, accessAllowed: { units: [acmeUnit] } }, admin);
    acmeUser = await svc.login('acme@plant.test', 'acme-password-1');
    noGrant = await svc.newUser('nobody@plant.test', 'nobody-password-1');
    // Evil's own data: a tag only it has, and a finished day not yet sealed.
    assert.equal((await svc.post('/svcapi/write', { ...EVIL, tags: { 'EVIL-ONLY': [[T0, 1]], 'EVIL-OLD': [[T0 - 3 * DAY, 2]] } }, admin)).body.success, true);
  });
  after(() => svc.dispose());

  test('a scope key given twice is 400 in JSON, escaped JSON, msgpack and HSW1; nothing reaches the other tenant', async () => {
    const acmeThenEvil = `"organization":"acme","site":"north","unit":"boiler-1","grid":"main","organization":"evil","site":"s2","unit":"u2"`;
    const escaped = `"organization":"acme","site":"north","unit":"boiler-1","grid":"main","organ\\u0069zation":"evil","s\\u0069te":"s2","un\\u0069t":"u2"`;
    for (const scope of [acmeThenEvil, escaped]) {
      for (const route of ['/svcapi/write', '/svcapi/write_fast', '/svcapi/write_buffered']) {
        const res = await svc.request('POST', route, { rawBody: `{${scope},"tags":{"DUP":[[${T0},1]]}}`, token: acmeUser, headers: { 'content-type': 'application/json' } });
        assert.equal(res.status, 400, `${route}: ${res.text}`);
        assert.match(res.body.error, /"(organization|site|unit)" appears more than once/);
      }
    }
    const msgpack = msgpackMap([...Object.entries(ACME), ['organization', 'evil'], ['site', 's2'], ['unit', 'u2'], ['tags', { DUP: [[T0, 1]] }]]);
    const viaMsgpack = await svc.request('POST', '/svcapi/write', { rawBody: msgpack, token: acmeUser, headers: { 'content-type': 'application/msgpack' } });
    assert.equal(viaMsgpack.status, 400, viaMsgpack.text);
    const binary = hsw1(`{${acmeThenEvil},"grid":"main"}`, [T0], { DUP: [1] });
    const viaBinary = await svc.request('POST', '/svcapi/write_fast', { rawBody: binary, token: acmeUser, headers: { 'content-type': 'application/octet-stream' } });
    assert.equal(viaBinary.status, 400, viaBinary.text);
    assert.match(viaBinary.body.error, /appears more than once/);
    assert.deepEqual(await points(EVIL, 'DUP'), []);
    assert.deepEqual(await points(ACME, 'DUP'), []);
  });

  test('a scope spelled so the main thread cannot read it is checked by the worker that can', async () => {
    const hidden = `{"organ\\u0069zation":"evil","s\\u0069te":"s2","un\\u0069t":"u2","gr\\u0069d":"main","tags":{"HIDDEN":[[${T0},1]]}}`;
    const res = await svc.request('POST', '/svcapi/write', { rawBody: hidden, token: acmeUser, headers: { 'content-type': 'application/json' } });
    assert.equal(res.status, 403, res.text);
    assert.deepEqual(await points(EVIL, 'HIDDEN'), []);
    // The same body from the admin lands where it says.
    const byAdmin = await svc.request('POST', '/svcapi/write', { rawBody: hidden, token: admin, headers: { 'content-type': 'application/json' } });
    assert.deepEqual(byAdmin.body, { success: true, points: 1 });
    assert.deepEqual(await points(EVIL, 'HIDDEN'), [[T0, 1]]);
    // Writes through the tag map are checked the same way: EVIL-ONLY lives in evil's collection.
    const viaTagMap = await svc.post('/svcapi/write', { tags: { 'EVIL-ONLY': [[T0 + 1000, 9]] } }, acmeUser);
    assert.equal(viaTagMap.status, 403, viaTagMap.text);
    assert.deepEqual(await points(EVIL, 'EVIL-ONLY'), [[T0, 1]]);
  });

  test("what a caller may not see answers like what does not exist, naming nothing of another tenant's", async () => {
    const hiddenId = encodeURIComponent('evil/s2/u2/main');
    const missingId = encodeURIComponent('acme/north/boiler-1/nope');
    const hidden = await svc.get(`/svcapi/collection/${hiddenId}`, acmeUser);
    const missing = await svc.get(`/svcapi/collection/${missingId}`, acmeUser);
    assert.equal(hidden.status, 404);
    assert.equal(missing.status, 404);
    assert.deepEqual(Object.keys(hidden.body), Object.keys(missing.body));
    assert.equal((await svc.get(`/svcapi/fast_query?tags=X&start=0&end=1&${qs(EVIL)}`, acmeUser)).status, 404);
    assert.equal((await svc.get(`/svcapi/lastlist?tags=X&${qs(EVIL)}`, noGrant)).status, 404);
    // Through the tag map: EVIL-ONLY is as unknown to acme's user as a tag nobody has.
    for (const path of ['/svcapi/lastlist?tags=EVIL-ONLY', `/svcapi/fast_query?tags=EVIL-ONLY&start=0&end=${T0 + DAY}`]) {
      const res = await svc.get(path, acmeUser);
      const unknown = await svc.get(path.replace('EVIL-ONLY', 'NOBODY-HAS-THIS'), acmeUser);
      assert.equal(res.status, 400, res.text);
      assert.equal(unknown.status, 400);
      assert.equal(res.body.error, unknown.body.error.replace('NOBODY-HAS-THIS', 'EVIL-ONLY'));
      assert.doesNotMatch(res.text, /evil\/|s2|u2/);
    }
    const sensor = await svc.post('/sensordata/1/lastlist', { metrics: [{ name: 'EVIL-ONLY' }] }, acmeUser);
    assert.doesNotMatch(sensor.text, /evil\/|s2|u2/);
  });

  test('seal_now reaches only the caller\'s collections; all of them for an admin', async () => {
    // No grant: nothing to seal, and evil's finished day stays unsealed.
    assert.deepEqual((await svc.post('/svcapi/seal_now', {}, noGrant)).body.sealedDays, 0);
    assert.deepEqual((await svc.post('/svcapi/seal_now', {}, acmeUser)).body.sealedDays, 0);
    assert.equal((await svc.post('/svcapi/seal_now', { collection: 'evil/s2/u2/main' }, acmeUser)).status, 404);
    assert.equal((await svc.post('/svcapi/seal_now', EVIL, noGrant)).status, 404);
    const sealedByAdmin = await svc.post('/svcapi/seal_now', { collection: 'evil/s2/u2/main' }, admin);
    assert.equal(sealedByAdmin.status, 200);
    assert.ok(sealedByAdmin.body.sealedDays >= 1, 'the day was still there for the admin to seal');
    // A granted user seals its own collection.
    await svc.post('/svcapi/write', { ...ACME, tags: { OLD: [[T0 - 2 * DAY, 1]] } }, acmeUser);
    assert.equal((await svc.post('/svcapi/seal_now', {}, acmeUser)).body.sealedDays, 1);
  });
});

describe('the disk guard', () => {
  test('covers collection creates and updates and every write route, and fails closed when free space cannot be read', async () => {
    const svc = await startService({ config: { storage: { minFreeBytes: 1 } } });
    try {
      const admin = await svc.adminToken();
      assert.equal((await svc.post('/svcapi/create_collection', ACME, admin)).status, 200);
      assert.equal((await svc.post('/svcapi/tag_mappings', { external: 'X', tag: 'T', ...ACME }, admin)).status, 200);
      // Free space that cannot be read (the data dir's path is gone) counts as none.
      const moved = `${svc.dataDir}.moved`;
      fs.renameSync(svc.dataDir, moved);
      try {
        // Kept: the guard reads the volume at most once a second, and nothing shows when it has read it;
        // a write sent to find out would be written if it came first.
        await new Promise((r) => setTimeout(r, 1100));
        const writes: Array<[string, unknown]> = [
          ['/svcapi/create_collection', EVIL],
          ['/svcapi/update_collection', { ...ACME, description: 'x' }],
          ['/svcapi/write', { ...ACME, tags: { T: [[T0, 1]] } }],
          ['/svcapi/write_fast', { ...ACME, tags: { T: [[T0, 1]] } }],
          ['/svcapi/write_buffered', { ...ACME, tags: { T: [[T0, 1]] } }],
          ['/svcapi/write_tag_mapping', { data: { X: [[T0, 1]] } }],
        ];
        for (const [route, body] of writes) {
          const res = await svc.post(route, body, admin);
          assert.equal(res.status, 507, `${route}: ${res.status} ${res.text}`);
          assert.match(res.body.error, /storage\.minFreeBytes/);
        }
        assert.equal((await svc.get(`/svcapi/fast_query?tags=T&start=0&end=1&${qs(ACME)}`, admin)).status, 200, 'reads go on');
      } finally {
        fs.renameSync(moved, svc.dataDir);
      }
      // The guard notices the volume again at its next reading: until then a write is 507 and writes nothing.
      let write: HttpResult | undefined;
      await waitFor(async () => {
        write = await svc.post('/svcapi/write', { ...ACME, tags: { T: [[T0, 1]] } }, admin);
        return write.status !== 507;
      }, 'writes are accepted again once the volume can be read', { intervalMs: 100 });
      assert.deepEqual(write!.body, { success: true, points: 1 });
      // The log is written in batches (every 200 ms): wait for the line rather than expect it at once.
      await waitFor(() => svc.logs().some((l) => l.msg === 'cannot read the free space of the data volume; refusing writes until it can be read'), 'the unreadable volume is logged');
    } finally {
      await svc.dispose();
    }
  });

  test('a volume below the floor refuses collection creates too', async () => {
    const svc = await startService({ config: { storage: { minFreeBytes: Number.MAX_SAFE_INTEGER } } });
    try {
      const admin = await svc.adminToken();
      const res = await svc.post('/svcapi/create_collection', ACME, admin);
      assert.equal(res.status, 507, res.text);
    } finally {
      await svc.dispose();
    }
  });
});
