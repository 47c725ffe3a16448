// Issue 34, item 5: the tag dictionary grows by appends. A write that adds a series appends one
// record to tags.log (meta.json is not rewritten until a seal or a restart compacts the log), a
// kill -9 right after acknowledged writes that added series keeps the series and their points,
// and a data dir of the layout before the tag log (meta.json alone, format 1 or 2) opens and
// answers the same. The record format and its crash rules on the files: test/workers/tag-log.test.ts
// and test/workers/dictionary-commit.test.ts.

import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { startService, type TestService } from './harness.js';
import { send } from './influx-wire.js';

const JSON_SCOPE = { organization: 'acme', site: 'north', unit: 'boiler-1', grid: 'main' };
const LINE_SCOPE = { organization: 'acme', site: 'north', unit: 'boiler-1', grid: 'lines' };
const T0 = Date.UTC(2026, 0, 10, 6);
const enc = encodeURIComponent;
const folderOf = (svc: TestService, s: Record<string, string>) => path.join(svc.dataDir, 'ts', s.organization!, s.site!, s.unit!, s.grid!);
const scopeTags = (s: Record<string, string>) => `organization=${s.organization},site=${s.site},unit=${s.unit},grid=${s.grid}`;
const SERIES = 60;

describe('tag dictionary: appends, kill -9, the layout before the tag log', () => {
  let svc: TestService;
  let admin: string;

  const mk = async (url: string, body: object) => {
    const res = await svc.post(`/svcapi/${url}`, body, admin);
    assert.equal(res.status, 200, `${url}: ${res.text}`);
    return res.body.id as string;
  };
  const writeLines = (body: string) =>
    send(svc, 'POST', '/ingest/v2/write?db=dict-client&precision=ms', body, { headers: { authorization: `Bearer ${admin}`, 'content-type': 'text/plain' } });

  /** Every series of both collections with labels and last points, and every point of the JSON ones. */
  async function snapshot(): Promise<{ series: unknown; points: unknown }> {
    const listing = await svc.get('/svcapi/series?limit=100000', admin);
    assert.equal(listing.status, 200, listing.text);
    const tags = (listing.body.series as Array<{ collection: string; tag: string }>).filter((s) => s.collection.endsWith('/main')).map((s) => s.tag);
    const scope = Object.entries(JSON_SCOPE).map(([k, v]) => `&${k}=${enc(v)}`).join('');
    const points = await svc.get(`/svcapi/fast_query?${tags.map((t) => `tags=${enc(t)}`).join('&')}&start=${T0 - 1}&end=${T0 + 10 * 86_400_000}${scope}`, admin);
    assert.equal(points.status, 200, points.text);
    return { series: listing.body.series, points: points.body };
  }

  before(async () => {
    svc = await startService();
    admin = await svc.adminToken();
    await mk('units', { name: JSON_SCOPE.unit, siteId: await mk('sites', { name: JSON_SCOPE.site, orgsId: await mk('orgs', { name: JSON_SCOPE.organization }) }) });
    await mk('ingestconfigs', { clientId: 'dict-client', ...LINE_SCOPE });
    for (const scope of [JSON_SCOPE, LINE_SCOPE]) assert.equal((await svc.post('/svcapi/create_collection', scope, admin)).status, 200);
    assert.equal((await svc.post('/svcapi/write', { ...JSON_SCOPE, tags: { 'FIRST-0': [[T0, 0]] } }, admin)).body.success, true);
    assert.equal((await writeLines(`boiler,${scopeTags(LINE_SCOPE)},line=A temp=1 ${T0}`)).status, 204);
  });
  after(() => svc.dispose());

  test('one new series per request appends a bounded record to tags.log; meta.json stays as it is until a restart; kill -9 keeps them all', async () => {
    const dir = folderOf(svc, JSON_SCOPE);
    const meta = fs.statSync(path.join(dir, 'meta.json'));
    const logBefore = fs.statSync(path.join(dir, 'tags.log')).size;
    const names: string[] = [];
    for (let i = 0; i < SERIES; i++) {
      const name = `NEW-${String(i).padStart(3, '0')}.PV`;
      names.push(name);
      // Alternately the fsyncing /write and /write_fast: both are acknowledged, both must survive kill -9.
      const route = i % 2 === 0 ? 'write' : 'write_fast';
      const res = await svc.post(`/svcapi/${route}`, { ...JSON_SCOPE, tags: { [name]: [[T0 + i * 1000, i + 0.5]] } }, admin);
      assert.equal(res.body.success, true, `${route} ${name}: ${res.text}`);
    }
    const metaAfter = fs.statSync(path.join(dir, 'meta.json'));
    assert.deepEqual([metaAfter.ino, metaAfter.size, metaAfter.mtimeMs], [meta.ino, meta.size, meta.mtimeMs], 'meta.json was not rewritten by writes that added series');
    const grown = fs.statSync(path.join(dir, 'tags.log')).size - logBefore;
    // A record is `<crc 8 hex> [id,"name",null]\n`: 26 bytes around a 10-byte name and a 2-digit id.
    assert.ok(grown >= SERIES * 30 && grown <= SERIES * 40, `tags.log grew ${grown} bytes for ${SERIES} series`);
    const records = fs.readFileSync(path.join(dir, 'tags.log'), 'utf8').trim().split('\n');
    assert.equal(records.length, 1 + SERIES, 'one record per new series (FIRST-0 before them)');

    const expected = await snapshot();
    for (let i = 0; i < SERIES; i++) assert.deepEqual((expected.points as Record<string, unknown>)[names[i]!], [[T0 + i * 1000, i + 0.5]]);
    assert.deepEqual(await svc.stop('SIGKILL'), { code: null, signal: 'SIGKILL' });
    svc = await startService({ dataDir: svc.dataDir });
    admin = await svc.adminToken();
    assert.deepEqual(await snapshot(), expected, 'every acknowledged series and point after kill -9');
    // The restart compacted the log into meta.json.
    assert.equal(fs.statSync(path.join(dir, 'tags.log')).size, 0);
    const compacted = JSON.parse(fs.readFileSync(path.join(dir, 'meta.json'), 'utf8')) as { tags: string[] };
    assert.deepEqual(compacted.tags, ['FIRST-0', ...names]);
  });

  test('a data dir with only meta.json (format 1, and format 2 with labels), as before the tag log, opens and answers the same', async () => {
    assert.equal((await svc.post('/svcapi/write', { ...JSON_SCOPE, tags: { 'LATE-1': [[T0 + 5, 5]] } }, admin)).body.success, true);
    assert.equal((await writeLines(`pump,${scopeTags(LINE_SCOPE)},zone=hot rpm=1200i ${T0 + 7}`)).status, 204);
    const expected = await snapshot();
    assert.deepEqual(await svc.stop('SIGTERM'), { code: 0, signal: null });
    // The old layout: the whole dictionary in meta.json, no tags.log. The JSON collection's has
    // no labels, so it is written as format 1 (no `labels` key), as builds before issue 27 did.
    for (const scope of [JSON_SCOPE, LINE_SCOPE]) {
      const dir = folderOf(svc, scope);
      const meta = JSON.parse(fs.readFileSync(path.join(dir, 'meta.json'), 'utf8')) as { version: number; collection: unknown; tags: string[]; labels: Record<string, unknown> };
      for (const line of fs.readFileSync(path.join(dir, 'tags.log'), 'utf8').split('\n').filter(Boolean)) {
        const [id, name, labels] = JSON.parse(line.slice(9)) as [number, string | null, Record<string, string> | null];
        if (name !== null) meta.tags[id] = name;
        if (labels !== null) meta.labels[id] = labels;
      }
      fs.rmSync(path.join(dir, 'tags.log'));
      const old = scope === JSON_SCOPE ? { version: 1, collection: meta.collection, tags: meta.tags } : { ...meta, version: 2 };
      fs.writeFileSync(path.join(dir, 'meta.json'), JSON.stringify(old, null, 1));
    }
    svc = await startService({ dataDir: svc.dataDir });
    admin = await svc.adminToken();
    assert.deepEqual(await snapshot(), expected, 'the same series, labels and points');
    // And it grows on as usual: a new series is a tag log record again.
    assert.equal((await svc.post('/svcapi/write', { ...JSON_SCOPE, tags: { 'AFTER-OLD': [[T0 + 9, 9]] } }, admin)).body.success, true);
    assert.match(fs.readFileSync(path.join(folderOf(svc, JSON_SCOPE), 'tags.log'), 'utf8'), /^[0-9a-f]{8} \[\d+,"AFTER-OLD",null\]\n$/);
  });
});
