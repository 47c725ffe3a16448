// Series identity and discovery (issue 27; WIRE.md part 3 "Series identity"): line protocol
// keeps measurement, field and line tags with each series; GET /svcapi/series lists what the
// collections a caller can see hold, with labels and last points; labels survive a graceful
// restart, kill -9, seal and backup/restore; storage.maxSeriesPerCollection refuses a write
// whole. The dictionary log's crash rules are tested on the files in test/workers/tag-log.test.ts.

import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { startService, type HttpResult, type TestService } from './harness.js';
import { send } from './influx-wire.js';
import { newestBackups, restore, runBackup } from './backup-support.js';

const ACME = { organization: 'acme', site: 'north', unit: 'boiler-1', grid: 'main' };
const ACME_B = { organization: 'acme', site: 'north', unit: 'boiler-1', grid: 'aux' };
const EVIL = { organization: 'evil', site: 's2', unit: 'u2', grid: 'main' };
const T0 = Date.UTC(2026, 0, 10, 6);
const idOf = (s: Record<string, string>) => `${s.organization}/${s.site}/${s.unit}/${s.grid}`;
const scopeTags = (s: Record<string, string>) => `organization=${s.organization},site=${s.site},unit=${s.unit},grid=${s.grid}`;

interface Listing {
  series: Array<{ collection: string; tag: string; labels?: Record<string, string>; last_ms: number | null; last_value: number | null }>;
  total: number;
  has_more: boolean;
}

describe('series identity and GET /svcapi/series', () => {
  let svc: TestService;
  let admin: string;
  let acmeUser: string;

  const mk = async (url: string, body: object) => {
    const res = await svc.post(`/svcapi/${url}`, body, admin);
    assert.equal(res.status, 200, `${url}: ${res.text}`);
    return res.body.id as string;
  };

  function writeLines(body: string, token = admin): Promise<HttpResult> {
    return send(svc, 'POST', '/ingest/v2/write?db=series-client&precision=ms', body, { headers: { authorization: `Bearer ${token}`, 'content-type': 'text/plain' } });
  }

  async function list(query: string, token = admin): Promise<Listing> {
    const res = await svc.get(`/svcapi/series${query ? `?${query}` : ''}`, token);
    assert.equal(res.status, 200, `series ${query}: ${res.text}`);
    return res.body as Listing;
  }

  before(async () => {
    svc = await startService({ config: { storage: { maxSeriesPerCollection: 40 } } });
    admin = await svc.adminToken();
    const acmeUnit = await mk('units', { name: ACME.unit, siteId: await mk('sites', { name: ACME.site, orgsId: await mk('orgs', { name: ACME.organization }) }) });
    await mk('units', { name: EVIL.unit, siteId: await mk('sites', { name: EVIL.site, orgsId: await mk('orgs', { name: EVIL.organization }) }) });
    await mk('ingestconfigs', { clientId: 'series-client', organization: ACME.organization, site: ACME.site, unit: ACME.unit, grid: ACME.grid });
    for (const scope of [ACME, ACME_B, EVIL]) assert.equal((await svc.post('/svcapi/create_collection', scope, admin)).status, 200);
    const user = await mk('users', { email: 'acme-series@plant.test', password: 'acme-password-1', role: 'read-only' });
    await mk('userprofiles', { usersId: user, accessAllowed: { units: [acmeUnit] } });
    acmeUser = await svc.login('acme-series@plant.test', 'acme-password-1');

    const lines = [
      `boiler,${scopeTags(ACME)},line=A,zone=hot temp=81.5,pressure=2i ${T0}`,
      `boiler,${scopeTags(ACME)},line=A,zone=hot temp=82.25 ${T0 + 1000}`,
      `boiler,${scopeTags(ACME)},line=B temp=70 ${T0}`,
      `pump,${scopeTags(ACME_B)} running=true ${T0 + 5}`,
      // A line tag named like a reserved label gives way to the measurement.
      `odd,${scopeTags(ACME)},measurement=shadow v=1 ${T0}`,
    ].join('\n');
    const res = await writeLines(lines);
    assert.equal(res.status, 204, res.text);
    const json = await svc.post('/svcapi/write', { ...ACME, tags: { 'TI-100': [[T0, 1], [T0 + 60_000, 2.5]], 'TI-101': [[T0, 3]], 'star*tag': [[T0, 4]] } }, admin);
    assert.equal(json.body.success, true, json.text);
    assert.equal((await svc.post('/svcapi/write', { ...EVIL, tags: { 'TI-100': [[T0, 9]], 'EVIL-ONLY': [[T0, 9]] } }, admin)).body.success, true);
  });
  after(() => svc.dispose());

  test('line protocol series carry measurement, field and line tags; scope tags and JSON tags have none', async () => {
    const { series } = await list(`collection=${encodeURIComponent(idOf(ACME))}`);
    const byTag = new Map(series.map((s) => [s.tag, s]));
    assert.deepEqual(byTag.get('boiler,line=A,zone=hot.temp')?.labels, { field: 'temp', line: 'A', measurement: 'boiler', zone: 'hot' });
    assert.deepEqual(byTag.get('boiler,line=A,zone=hot.pressure')?.labels, { field: 'pressure', line: 'A', measurement: 'boiler', zone: 'hot' });
    assert.deepEqual(byTag.get('boiler,line=B.temp')?.labels, { field: 'temp', line: 'B', measurement: 'boiler' });
    assert.deepEqual(byTag.get('odd,measurement=shadow.v')?.labels, { field: 'v', measurement: 'odd' });
    assert.equal(byTag.get('TI-100')?.labels, undefined, 'a tag written through /svcapi/write has no labels');
    assert.equal('labels' in byTag.get('TI-100')!, false);
    // Label keys come sorted.
    assert.deepEqual(Object.keys(byTag.get('boiler,line=A,zone=hot.temp')!.labels!), ['field', 'line', 'measurement', 'zone']);
  });

  test('each series has its last point; the list is ordered by collection then tag name', async () => {
    const { series, total, has_more } = await list('');
    assert.equal(has_more, false);
    assert.equal(total, series.length);
    const temp = series.find((s) => s.tag === 'boiler,line=A,zone=hot.temp');
    assert.deepEqual([temp?.last_ms, temp?.last_value], [T0 + 1000, 82.25]);
    const ti = series.find((s) => s.tag === 'TI-100' && s.collection === idOf(ACME));
    assert.deepEqual([ti?.last_ms, ti?.last_value], [T0 + 60_000, 2.5]);
    const pump = series.find((s) => s.tag === 'pump.running');
    assert.deepEqual([pump?.collection, pump?.last_value, pump?.labels], [idOf(ACME_B), 1, { field: 'running', measurement: 'pump' }]);
    const keys = series.map((s) => `${s.collection}\u0000${s.tag}`);
    const collections = [...new Set(series.map((s) => s.collection))];
    assert.deepEqual(collections, [idOf(ACME_B), idOf(ACME), idOf(EVIL)], 'collections in id order');
    for (const c of collections) {
      const tags = series.filter((s) => s.collection === c).map((s) => s.tag);
      assert.deepEqual(tags, [...tags].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0)), `tags of ${c} in name order`);
    }
    assert.equal(new Set(keys).size, keys.length, 'no series twice');
  });

  test('match globs the tag name: prefix, *, ?, escapes, case-sensitive', async () => {
    const tags = async (match: string) => (await list(`collection=${encodeURIComponent(idOf(ACME))}&match=${encodeURIComponent(match)}`)).series.map((s) => s.tag);
    assert.deepEqual(await tags('TI-*'), ['TI-100', 'TI-101']);
    assert.deepEqual(await tags('TI-10?'), ['TI-100', 'TI-101']);
    assert.deepEqual(await tags('TI-1?'), []);
    assert.deepEqual(await tags('*.temp'), ['boiler,line=A,zone=hot.temp', 'boiler,line=B.temp']);
    assert.deepEqual(await tags('*line=?*'), ['boiler,line=A,zone=hot.pressure', 'boiler,line=A,zone=hot.temp', 'boiler,line=B.temp']);
    assert.deepEqual(await tags('ti-*'), [], 'case-sensitive');
    assert.deepEqual(await tags('TI-100'), ['TI-100'], 'no wildcard: the name itself');
    assert.deepEqual(await tags('star\\*tag'), ['star*tag'], 'an escaped * is literal');
    assert.deepEqual(await tags('star\\*'), [], 'an escaped * matches only a star');
  });

  test('limit pages the list: total counts every match, has_more says the page left some out', async () => {
    const all = await list('match=*');
    const page = await list('limit=2');
    assert.equal(page.series.length, 2);
    assert.equal(page.total, all.total);
    assert.equal(page.has_more, true);
    assert.deepEqual(page.series, all.series.slice(0, 2));
    const exact = await list(`limit=${all.total}`);
    assert.equal(exact.has_more, false);
  });

  test('a caller sees only the collections of its grant; another collection answers like a missing one', async () => {
    const mine = await list('', acmeUser);
    assert.ok(mine.series.length > 0);
    assert.ok(mine.series.every((s) => s.collection.startsWith('acme/north/boiler-1/')), JSON.stringify(mine.series.map((s) => s.collection)));
    assert.ok(!mine.series.some((s) => s.tag === 'EVIL-ONLY'));
    const theirs = await svc.get(`/svcapi/series?collection=${encodeURIComponent(idOf(EVIL))}`, acmeUser);
    const missing = await svc.get(`/svcapi/series?collection=${encodeURIComponent('nope/x/y/z')}`, acmeUser);
    assert.equal(theirs.status, 404);
    assert.equal(missing.status, 404);
    assert.equal(theirs.body.error.replace(idOf(EVIL), 'X'), missing.body.error.replace('nope/x/y/z', 'X'), 'same answer for hidden and missing');
    assert.equal((await svc.get('/svcapi/series')).status, 401);
  });

  test('bad parameters are 400 naming them', async () => {
    for (const [query, name] of [['limit=0', 'limit'], ['limit=abc', 'limit'], [`limit=${10 ** 9}`, 'limit'], [`match=${'x'.repeat(2000)}`, 'match']]) {
      const res = await svc.get(`/svcapi/series?${query}`, admin);
      assert.equal(res.status, 400, `${query}: ${res.text}`);
      assert.match(res.text, new RegExp(name), query);
    }
  });

  test('a pre-existing series without labels gets them from a later line protocol write', async () => {
    assert.equal((await svc.post('/svcapi/write', { ...ACME, tags: { 'legacy,line=C.flow': [[T0, 1]] } }, admin)).body.success, true);
    const before = (await list(`collection=${encodeURIComponent(idOf(ACME))}&match=legacy*`)).series[0];
    assert.equal(before?.labels, undefined);
    assert.equal((await writeLines(`legacy,${scopeTags(ACME)},line=C flow=2 ${T0 + 10}`)).status, 204);
    const after = (await list(`collection=${encodeURIComponent(idOf(ACME))}&match=legacy*`)).series;
    assert.equal(after.length, 1, 'still one series');
    assert.deepEqual(after[0]?.labels, { field: 'flow', line: 'C', measurement: 'legacy' });
    assert.equal(after[0]?.last_value, 2);
  });

  test('storage.maxSeriesPerCollection refuses the whole write, naming the setting and the first refused series', async () => {
    const before = await list(`collection=${encodeURIComponent(idOf(ACME))}`);
    const room = 40 - before.total;
    assert.ok(room > 2, `room ${room}`);
    const tags: Record<string, Array<[number, number]>> = { 'TI-100': [[T0 + 120_000, 7]] };
    for (let i = 0; i < room + 1; i++) tags[`many-${String(i).padStart(3, '0')}`] = [[T0, i]];
    const json = await svc.post('/svcapi/write', { ...ACME, tags }, admin);
    assert.equal(json.status, 200);
    assert.equal(json.body.success, false, json.text);
    assert.match(json.body.error, /storage\.maxSeriesPerCollection \(40\)/);
    assert.match(json.body.error, new RegExp(`series "many-${String(room).padStart(3, '0')}"`), 'the first series past the limit');
    const lp = Array.from({ length: room + 1 }, (_, i) => `lots,${scopeTags(ACME)},n=${i} v=${i} ${T0}`).join('\n') + `\nboiler,${scopeTags(ACME)},line=B temp=1 ${T0 + 999_999}`;
    const line = await writeLines(lp);
    assert.equal(line.status, 400, line.text);
    assert.match(line.body.error, new RegExp(`^partial write: series "lots,n=${room}\\.v" would pass storage\\.maxSeriesPerCollection \\(40\\)`));
    assert.match(line.body.error, new RegExp(`dropped=${room + 2}$`));
    // Nothing of either body was written: no new series, and the known tags kept their last points.
    const after = await list(`collection=${encodeURIComponent(idOf(ACME))}`);
    assert.equal(after.total, before.total);
    const ti = after.series.find((s) => s.tag === 'TI-100');
    assert.equal(ti?.last_ms, T0 + 60_000);
    assert.equal(after.series.find((s) => s.tag === 'boiler,line=B.temp')?.last_ms, T0);
    // Up to the limit is fine.
    const fits: Record<string, Array<[number, number]>> = {};
    for (let i = 0; i < room; i++) fits[`fit-${i}`] = [[T0, i]];
    assert.equal((await svc.post('/svcapi/write', { ...ACME, tags: fits }, admin)).body.success, true);
    assert.equal((await list(`collection=${encodeURIComponent(idOf(ACME))}`)).total, 40);
  });

  test('buffered writes count the series their pending points will add: the flush is never the one refused', async () => {
    const BUF = { ...ACME, grid: 'buffered' };
    assert.equal((await svc.post('/svcapi/create_collection', BUF, admin)).status, 200);
    const tagsOf = (from: number, n: number) => Object.fromEntries(Array.from({ length: n }, (_, i) => [`buf-${from + i}`, [[T0, i]]]));
    const first = await svc.post('/svcapi/write_buffered', { ...BUF, tags: tagsOf(0, 25) }, admin);
    assert.deepEqual(first.body, { success: true, points: 25 }, first.text);
    const second = await svc.post('/svcapi/write_buffered', { ...BUF, tags: tagsOf(25, 25) }, admin);
    assert.equal(second.body.success, false, second.text);
    assert.match(second.body.error, /storage\.maxSeriesPerCollection \(40\)/);
    // The same series again are no new ones.
    assert.equal((await svc.post('/svcapi/write_buffered', { ...BUF, tags: tagsOf(0, 25) }, admin)).body.success, true);
    let listed: Listing | null = null;
    for (let i = 0; i < 100 && (listed?.total ?? 0) < 25; i++) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      listed = await list(`collection=${encodeURIComponent(idOf(BUF))}`);
    }
    assert.equal(listed?.total, 25, 'the first write was flushed whole');
  });

  test('labels and last points survive seal, graceful restart, kill -9 and backup/restore', async () => {
    const snapshot = async () => (await list('limit=100000')).series;
    const expected = await snapshot();
    assert.ok(expected.some((s) => s.labels));
    assert.equal((await svc.post('/svcapi/seal_now', {}, admin)).status, 200);
    assert.deepEqual(await snapshot(), expected, 'after seal');

    // New series after the seal live in the tag log only; kill -9 must not lose them.
    assert.equal((await writeLines(`afterseal,${scopeTags(ACME_B)},k=v x=5 ${T0 + 50}`)).status, 204);
    const withNew = await snapshot();
    assert.deepEqual(withNew.find((s) => s.tag === 'afterseal,k=v.x')?.labels, { field: 'x', k: 'v', measurement: 'afterseal' });
    await svc.stop('SIGKILL');
    svc = await startService({ dataDir: svc.dataDir });
    admin = await svc.adminToken();
    assert.deepEqual(await snapshot(), withNew, 'after kill -9');
    await svc.stop('SIGTERM');
    svc = await startService({ dataDir: svc.dataDir });
    admin = await svc.adminToken();
    assert.deepEqual(await snapshot(), withNew, 'after a graceful restart');

    await runBackup(svc, admin, 'all');
    const { timeseries } = await newestBackups(svc, admin);
    // A series added after the backup is gone after the restore; the labelled ones are back.
    assert.equal((await writeLines(`postbackup,${scopeTags(ACME_B)} y=1 ${T0}`)).status, 204);
    const restored = await restore(svc, admin, 'timeseries', timeseries.file_name);
    assert.equal(restored.status, 200, restored.text);
    assert.deepEqual(await snapshot(), withNew, 'after backup/restore');
  });
});
