// The time-series path over real HTTPS with real workers and real day files:
// collections, the three write paths and their bodies, queries, last values,
// the tag map, sealing, access, backpressure, the disk guard, metadata side
// effects, and crash recovery of a worker and of the whole service.

import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { pack } from 'msgpackr';
import { encodeBinaryBatch } from '../../native-free-codecs/write-body.js';
import { waitFor } from '../support/wait-for.js';
import { startService, type TestService } from './harness.js';

const SCOPE = { organization: 'acme', site: 'north', unit: 'boiler-1', grid: 'main' };
const DAY = 86_400_000;
const T0 = Date.UTC(2026, 0, 10);

const enc = encodeURIComponent;
const queryUrl = (tags: string[], start: number, end: number, scope: Record<string, string> | null = SCOPE) =>
  `/svcapi/fast_query?${tags.map((t) => `tags=${enc(t)}`).join('&')}&start=${start}&end=${end}${scope ? Object.entries(scope).map(([k, v]) => `&${k}=${enc(v)}`).join('') : ''}`;

describe('time-series storage', () => {
  let svc: TestService;
  let admin: string;
  const write = (route: string, body: unknown, token = admin) => svc.request('POST', `/svcapi/${route}`, { body, token });

  before(async () => {
    svc = await startService({ config: { storage: { shards: 2, flushIntervalMs: 200 } } });
    admin = await svc.adminToken();
    const res = await svc.post('/svcapi/create_collection', { ...SCOPE, description: 'boiler one' }, admin);
    assert.equal(res.body.success, true, res.text);
  });
  after(() => svc.dispose());

  test('collections: create, duplicate, list, get by URL-encoded id, update, 404', async () => {
    const dup = await svc.post('/svcapi/create_collection', SCOPE, admin);
    assert.equal(dup.status, 200);
    assert.equal(dup.body.success, false);
    const list = await svc.get('/svcapi/collection', admin);
    assert.ok(list.body.some((c: Record<string, unknown>) => c.unit === 'boiler-1' && c.description === 'boiler one'));
    const one = await svc.get(`/svcapi/collection/${enc('acme/north/boiler-1/main')}`, admin);
    assert.equal(one.status, 200);
    assert.equal(one.body.grid, 'main');
    const upd = await svc.post('/svcapi/update_collection', { ...SCOPE, description: 'renamed' }, admin);
    assert.equal(upd.body.success, true);
    assert.equal((await svc.get(`/svcapi/collection/${enc('acme/north/boiler-1/main')}`, admin)).body.description, 'renamed');
    assert.equal((await svc.get(`/svcapi/collection/${enc('acme/north/none/main')}`, admin)).status, 404);
    assert.ok(fs.existsSync(path.join(svc.dataDir, 'ts', 'acme', 'north', 'boiler-1', 'main', 'meta.json')));
  });

  test('names that could escape the data dir stay inside it', async () => {
    const evil = { organization: '..', site: '../../etc', unit: 'a/b', grid: 'x\u0000y' };
    const res = await svc.post('/svcapi/create_collection', evil, admin);
    if (res.status === 200) assert.equal(res.body.success, true);
    else assert.equal(res.status, 400);
    const walk = (dir: string): string[] => fs.readdirSync(dir, { withFileTypes: true }).flatMap((d) => (d.isDirectory() ? [path.join(dir, d.name), ...walk(path.join(dir, d.name))] : []));
    for (const dir of walk(path.join(svc.dataDir, 'ts'))) assert.ok(path.resolve(dir).startsWith(path.join(svc.dataDir, 'ts')), dir);
    assert.ok(!fs.existsSync(path.join(svc.dataDir, '..', 'etc')));
    const long = await svc.post('/svcapi/create_collection', { ...SCOPE, unit: 'u'.repeat(1000) }, admin);
    assert.equal(long.status, 400);
    assert.match(long.body.error, /unit/);
  });

  test('write then read back: exact float64, sorted, last write wins, start and end inclusive', async () => {
    const values = [0.1 + 0.2, -0, 5e-324, 1.7976931348623157e308, 123.45, -7, 1e-7, 42];
    const points = values.map((v, i) => [T0 + (values.length - i) * 1000, v]); // reverse order
    const res = await write('write', { ...SCOPE, tags: { 'TI-101': points, 'PI-202': [[T0, 1], [T0, 2], [T0 + 1000, 3]] } });
    assert.deepEqual(res.body, { success: true, points: values.length + 3 });
    const again = await write('write', { ...SCOPE, tags: { 'PI-202': [[T0 + 1000, 30]] } });
    assert.equal(again.body.success, true);
    const q = await svc.get(queryUrl(['TI-101', 'PI-202', 'NOPE'], T0, T0 + values.length * 1000), admin);
    assert.equal(q.status, 200);
    const expected = points.slice().sort((a, b) => a[0] - b[0]);
    assert.deepEqual(Object.keys(q.body), ['TI-101', 'PI-202', 'NOPE']);
    assert.equal(q.body['TI-101'].length, values.length);
    q.body['TI-101'].forEach(([ts, v]: [number, number], i: number) => {
      assert.equal(ts, expected[i][0]);
      assert.ok(Object.is(v, expected[i][1]) || (v === 0 && expected[i][1] === 0), `value ${expected[i][1]}`);
    });
    assert.deepEqual(q.body['PI-202'], [[T0, 2], [T0 + 1000, 30]]);
    assert.deepEqual(q.body.NOPE, []);
    const inclusive = await svc.get(queryUrl(['PI-202'], T0 + 1000, T0 + 1000), admin);
    assert.deepEqual(inclusive.body, { 'PI-202': [[T0 + 1000, 30]] });
  });

  test('columnar JSON, msgpack and the binary batch are accepted alike', async () => {
    const columnar = await write('write', { ...SCOPE, timestamps: [T0 + DAY, T0 + DAY + 1000], columns: { 'COL-1': [1.5, null], 'COL-2': [null, 2.5] } });
    assert.deepEqual(columnar.body, { success: true, points: 2 });
    const mp = await svc.request('POST', '/svcapi/write_fast', {
      rawBody: pack({ ...SCOPE, tags: { 'MP-1': [[T0 + DAY, 7.25]] } }), token: admin, headers: { 'content-type': 'application/msgpack' },
    });
    assert.deepEqual(mp.body, { success: true, points: 1 });
    const binary = encodeBinaryBatch(SCOPE, [T0 + DAY, T0 + DAY + 1000], [{ name: 'BIN-1', values: [NaN, 9.5] }]);
    const bin = await svc.request('POST', '/svcapi/write', { rawBody: Buffer.from(binary), token: admin, headers: { 'content-type': 'application/octet-stream' } });
    assert.deepEqual(bin.body, { success: true, points: 1 });
    const q = await svc.get(queryUrl(['COL-1', 'COL-2', 'MP-1', 'BIN-1'], T0 + DAY, T0 + DAY + 1000), admin);
    assert.deepEqual(q.body, { 'COL-1': [[T0 + DAY, 1.5]], 'COL-2': [[T0 + DAY + 1000, 2.5]], 'MP-1': [[T0 + DAY, 7.25]], 'BIN-1': [[T0 + DAY + 1000, 9.5]] });
  });

  test('malformed bodies are 400; unacceptable ones are 200 success false and write nothing', async () => {
    const malformed = await svc.request('POST', '/svcapi/write', { rawBody: '{"tags": [1,2', token: admin, headers: { 'content-type': 'application/json' } });
    assert.equal(malformed.status, 400);
    const cases: Array<[unknown, RegExp]> = [
      [{ ...SCOPE, tags: { 'ALL-1': [[T0, 1]], 'ALL-2': [[T0, 'x']] } }, /ALL-2/],
      [{ ...SCOPE, tags: { 'ALL-1': [[T0, 1]], 'ALL-3': [[-5, 1]] } }, /ALL-3/],
      [{ ...SCOPE, unit: 'no-such-unit', tags: { 'ALL-1': [[T0, 1]] } }, /no-such-unit/],
      [{ tags: { 'NEVER-SEEN': [[T0, 1]] } }, /NEVER-SEEN/],
    ];
    for (const [body, pattern] of cases) {
      for (const route of ['write', 'write_fast', 'write_buffered']) {
        const res = await write(route, body);
        assert.equal(res.status, 200, `${route} ${JSON.stringify(body)}`);
        assert.equal(res.body.success, false);
        assert.match(res.body.error, pattern);
      }
    }
    // Whatever a refused write_buffered might have left in a buffer has been flushed to where the query reads.
    await waitFor(async () => (await svc.get('/svcapi/write_buffer_stats', admin)).body.pendingPoints === 0, 'the write buffers are empty');
    const q = await svc.get(queryUrl(['ALL-1'], 0, T0 + DAY), admin);
    assert.deepEqual(q.body, { 'ALL-1': [] }, 'nothing of the refused requests was written');
  });

  test('the tag map resolves writes and queries that name no scope; lastlist', async () => {
    const res = await write('write', { tags: { 'TI-101': [[T0 + 2 * DAY, 77.5]] } });
    assert.deepEqual(res.body, { success: true, points: 1 });
    const q = await svc.get(queryUrl(['TI-101'], T0 + 2 * DAY, T0 + 2 * DAY, null), admin);
    assert.deepEqual(q.body, { 'TI-101': [[T0 + 2 * DAY, 77.5]] });
    const last = await svc.get(`/svcapi/lastlist?tags=TI-101&tags=PI-202&${Object.entries(SCOPE).map(([k, v]) => `${k}=${v}`).join('&')}`, admin);
    assert.deepEqual(last.body, { 'TI-101': [T0 + 2 * DAY, 77.5], 'PI-202': [T0 + 1000, 30] });
    const unknown = await svc.get(queryUrl(['GHOST'], 0, 1, null), admin);
    assert.equal(unknown.status, 400);
    assert.match(unknown.body.error, /GHOST/);
    const missingParam = await svc.get(`/svcapi/fast_query?tags=TI-101&end=${T0 + 2 * DAY}`, admin);
    assert.equal(missingParam.status, 400);
    assert.match(missingParam.body.error, /missing query parameter 'start'/);
  });

  test('buffered points become visible after the flush; stats report the buffer', async () => {
    const res = await write('write_buffered', { ...SCOPE, tags: { 'BUF-1': [[T0 + 3 * DAY, 1], [T0 + 3 * DAY + 1000, 2]] } });
    assert.deepEqual(res.body, { success: true, points: 2 });
    const stats = await svc.get('/svcapi/write_buffer_stats', admin);
    assert.equal(stats.status, 200);
    assert.equal(stats.body.shards.length, 2);
    for (const s of stats.body.shards) for (const key of ['capacityPoints', 'pendingPoints', 'fill', 'flushes', 'lastFlushMs']) assert.ok(key in s, key);
    let points: unknown[] = [];
    await waitFor(async () => {
      points = (await svc.get(queryUrl(['BUF-1'], T0, T0 + 4 * DAY), admin)).body['BUF-1'];
      return points.length >= 2;
    }, 'the buffered points become visible', { intervalMs: 50 });
    assert.equal(points.length, 2);
    const after = await svc.get('/svcapi/write_buffer_stats', admin);
    assert.ok(after.body.shards.some((s: { flushes: number }) => s.flushes > 0));
  });

  test('seal_now compresses finished days; queries answer the same before and after; late points merge', async () => {
    const tags: Record<string, number[][]> = {};
    for (let t = 0; t < 3; t++) tags[`SEAL-${t}`] = Array.from({ length: 3600 }, (_, i) => [T0 + 5 * DAY + i * 1000, Math.round((50 + Math.sin(i / 60) * t) * 100) / 100]);
    assert.equal((await write('write', { ...SCOPE, tags })).body.success, true);
    const url = queryUrl(Object.keys(tags), T0 + 5 * DAY, T0 + 6 * DAY);
    const before = (await svc.get(url, admin)).text;
    const sealed = await svc.post('/svcapi/seal_now', {}, admin);
    assert.equal(sealed.body.success, true);
    assert.ok(sealed.body.sealedDays >= 1);
    const dir = path.join(svc.dataDir, 'ts', 'acme', 'north', 'boiler-1', 'main');
    assert.ok(fs.readdirSync(dir).some((f) => f.startsWith('sealed-')), fs.readdirSync(dir).join(','));
    assert.equal((await svc.get(url, admin)).text, before);
    // A late point for the sealed day, overriding one value.
    await write('write', { ...SCOPE, tags: { 'SEAL-0': [[T0 + 5 * DAY, 999]] } });
    const late = (await svc.get(queryUrl(['SEAL-0'], T0 + 5 * DAY, T0 + 5 * DAY), admin)).body;
    assert.deepEqual(late, { 'SEAL-0': [[T0 + 5 * DAY, 999]] });
    await svc.post('/svcapi/seal_now', { collection: 'acme/north/boiler-1/main' }, admin);
    assert.deepEqual((await svc.get(queryUrl(['SEAL-0'], T0 + 5 * DAY, T0 + 5 * DAY), admin)).body, late);
  });

  test('access follows the metadata binding: new accounts see nothing; a unit grant opens its collections', async () => {
    const fresh = await svc.newUser('fresh@plant.test', 'fresh-password-1');
    assert.deepEqual((await svc.get('/svcapi/collection', fresh)).body, []);
    assert.deepEqual((await svc.get('/svcapi/me/details', fresh)).body, { unitConfigured: false });
    assert.equal((await svc.get(queryUrl(['TI-101'], 0, T0 + DAY), fresh)).status, 404, 'a collection outside the grant is not found');
    assert.equal((await svc.post('/svcapi/write', { ...SCOPE, tags: { X: [[T0, 1]] } }, fresh)).status, 403);

    const mk = async (url: string, body: object) => (await svc.post(`/svcapi/${url}`, body, admin)).body.id as string;
    const org = await mk('orgs', { name: 'acme' });
    const site = await mk('sites', { name: 'north', orgsId: org });
    const unit = await mk('units', { name: 'boiler-1', siteId: site });
    const user = (await svc.get(`/svcapi/users/findOne?filter=${enc(JSON.stringify({ where: { email: 'fresh@plant.test' } }))}`, admin)).body;
    await svc.post('/svcapi/userprofiles', { usersId: user.id, accessAllowed: { units: [unit] } }, admin);
    const granted = await svc.login('fresh@plant.test', 'fresh-password-1');
    assert.equal((await svc.get('/svcapi/collection', granted)).body.length, 1);
    assert.deepEqual((await svc.get('/svcapi/me/details', granted)).body, { unitConfigured: true });
    assert.equal((await svc.get(queryUrl(['TI-101'], T0, T0 + DAY), granted)).status, 200);
    assert.equal((await svc.post('/svcapi/write', { ...SCOPE, tags: { GRANTED: [[T0, 1]] } }, granted)).body.success, true);

    // A tagmeta row naming a storage tag puts it in the tag map (its unit has one collection).
    assert.equal((await svc.post('/svcapi/write', { tags: { 'TM-TAG': [[T0, 1]] } }, admin)).body.success, false);
    await svc.post('/svcapi/tagmeta', { tagName: 'Flow', unitsId: unit, dataTagId: 'TM-TAG' }, admin);
    assert.deepEqual((await svc.post('/svcapi/write', { tags: { 'TM-TAG': [[T0, 3.5]] } }, admin)).body, { success: true, points: 1 });
    assert.deepEqual((await svc.get(queryUrl(['TM-TAG'], T0, T0, null), admin)).body, { 'TM-TAG': [[T0, 3.5]] });
  });

  test('renaming a unit through update-all renames the folder; deleting it removes its collections', async () => {
    await svc.post('/svcapi/create_collection', { organization: 'acme', site: 'north', unit: 'boiler-2', grid: 'g' }, admin);
    await write('write', { organization: 'acme', site: 'north', unit: 'boiler-2', grid: 'g', tags: { 'REN-1': [[T0, 5]] } });
    const site = (await svc.get(`/svcapi/sites/findOne?filter=${enc(JSON.stringify({ where: { name: 'north' } }))}`, admin)).body.id;
    await svc.post('/svcapi/units', { name: 'boiler-2', siteId: site }, admin);
    const renamed = await svc.request('POST', `/svcapi/units/update?where=${enc(JSON.stringify({ name: 'boiler-2' }))}`, { body: { name: 'boiler-3' }, token: admin });
    assert.deepEqual(renamed.body, { count: 1 });
    const base = path.join(svc.dataDir, 'ts', 'acme', 'north');
    assert.ok(!fs.existsSync(path.join(base, 'boiler-2')));
    assert.ok(fs.existsSync(path.join(base, 'boiler-3', 'g', 'meta.json')));
    const q = await svc.get(queryUrl(['REN-1'], T0, T0, { organization: 'acme', site: 'north', unit: 'boiler-3', grid: 'g' }), admin);
    assert.deepEqual(q.body, { 'REN-1': [[T0, 5]] });
    assert.deepEqual((await svc.get(queryUrl(['REN-1'], T0, T0, null), admin)).body, { 'REN-1': [[T0, 5]] }, 'tag map follows');
    const unit = (await svc.get(`/svcapi/units/findOne?filter=${enc(JSON.stringify({ where: { name: 'boiler-3' } }))}`, admin)).body.id;
    assert.deepEqual((await svc.request('DELETE', `/svcapi/units/${unit}`, { token: admin })).body, { count: 1 });
    assert.ok(!fs.existsSync(path.join(base, 'boiler-3')));
    assert.equal((await svc.get(`/svcapi/collection/${enc('acme/north/boiler-3/g')}`, admin)).status, 404);
  });
});

describe('auto-created collections', () => {
  test('with storage.autoCreateCollections a write creates its collection', async () => {
    const svc = await startService({ config: { storage: { shards: 2, autoCreateCollections: true } } });
    try {
      const admin = await svc.adminToken();
      const scope = { organization: 'auto', site: 's', unit: 'u', grid: 'g' };
      const res = await svc.post('/svcapi/write', { ...scope, tags: { A: [[T0, 1]] } }, admin);
      assert.deepEqual(res.body, { success: true, points: 1 });
      assert.equal((await svc.get(`/svcapi/collection/${enc('auto/s/u/g')}`, admin)).status, 200);
      assert.deepEqual((await svc.get(queryUrl(['A'], T0, T0, scope), admin)).body, { A: [[T0, 1]] });
    } finally {
      await svc.dispose();
    }
  });
});

describe('backpressure and the disk guard', () => {
  test('a full write buffer answers 503 and keeps nothing of that request', async () => {
    const svc = await startService({ config: { storage: { shards: 1, bufferCapacityPoints: 100, flushIntervalMs: 60_000 } } });
    try {
      const admin = await svc.adminToken();
      await svc.post('/svcapi/create_collection', SCOPE, admin);
      const points = (n: number, base: number) => Array.from({ length: n }, (_, i) => [base + i * 1000, i]);
      assert.equal((await svc.post('/svcapi/write_buffered', { ...SCOPE, tags: { B: points(80, T0) } }, admin)).body.success, true);
      const full = await svc.post('/svcapi/write_buffered', { ...SCOPE, tags: { B: points(50, T0 + DAY) } }, admin);
      assert.equal(full.status, 503);
      assert.match(full.body.error, /buffer/);
      const stats = await svc.get('/svcapi/write_buffer_stats', admin);
      assert.equal(stats.body.shards[0].pendingPoints, 80);
    } finally {
      await svc.dispose();
    }
  });

  test('a write body larger than the request ring is 413 naming storage.requestRingBytes, and nothing is written', async () => {
    const svc = await startService({ config: { storage: { shards: 1, requestRingBytes: 65536 } } });
    try {
      const admin = await svc.adminToken();
      await svc.post('/svcapi/create_collection', SCOPE, admin);
      const points = Array.from({ length: 5000 }, (_, i) => [T0 + i * 1000, i + 0.25]);
      const big = await svc.post('/svcapi/write_fast', { ...SCOPE, tags: { R: points } }, admin);
      assert.equal(big.status, 413);
      assert.match(big.body.error, /storage\.requestRingBytes/);
      const fits = await svc.post('/svcapi/write_fast', { ...SCOPE, tags: { R: points.slice(0, 100) } }, admin);
      assert.deepEqual(fits.body, { success: true, points: 100 });
      const read = await svc.get(queryUrl(['R'], T0, T0 + DAY), admin);
      assert.equal(read.status, 200);
      assert.equal(JSON.stringify(read.body).split('],[').length, 100, 'only the 100 points of the write that fitted');
    } finally {
      await svc.dispose();
    }
  });

  test('free disk below storage.minFreeBytes: writes 507, reads go on', async () => {
    const svc = await startService({ config: { storage: { shards: 1, minFreeBytes: Number.MAX_SAFE_INTEGER } } });
    try {
      const admin = await svc.adminToken();
      assert.equal((await svc.post('/svcapi/create_collection', SCOPE, admin)).status, 507);
      const res = await svc.post('/svcapi/write', { ...SCOPE, tags: { D: [[T0, 1]] } }, admin);
      assert.equal(res.status, 507);
      assert.match(res.body.error, /disk/);
      assert.equal((await svc.get('/svcapi/collection', admin)).status, 200);
    } finally {
      await svc.dispose();
    }
  });
});

describe('crash recovery', () => {
  test('kill -9 after acknowledged /write and /write_fast: a restart finds every acknowledged point', async () => {
    const svc = await startService({ config: { storage: { shards: 2 } } });
    const admin = await svc.adminToken();
    await svc.post('/svcapi/create_collection', SCOPE, admin);
    const acknowledged: Array<[string, number, number]> = [];
    const writers = Array.from({ length: 4 }, async (_, w) => {
      for (let i = 0; i < 25; i++) {
        const route = i % 2 === 0 ? 'write' : 'write_fast';
        const tagName = `K-${w}`;
        const ts = T0 + i * 1000;
        const res = await svc.post(`/svcapi/${route}`, { ...SCOPE, tags: { [tagName]: [[ts, w * 1000 + i]] } }, admin);
        if (res.body?.success) acknowledged.push([tagName, ts, w * 1000 + i]);
      }
    });
    await Promise.all(writers);
    assert.equal(acknowledged.length, 100);
    assert.deepEqual(await svc.stop('SIGKILL'), { code: null, signal: 'SIGKILL' });
    const again = await startService({ dataDir: svc.dataDir, config: { storage: { shards: 2 } } });
    try {
      const token = await again.adminToken();
      const q = await again.get(queryUrl(['K-0', 'K-1', 'K-2', 'K-3'], T0, T0 + DAY), token);
      for (const [tagName, ts, value] of acknowledged) {
        assert.ok(q.body[tagName].some(([t, v]: [number, number]) => t === ts && v === value), `${tagName}@${ts}`);
      }
    } finally {
      await again.dispose();
    }
  });
});

describe('worker crash', () => {
  test('a storage worker terminated mid-load: in-flight requests get 503, the shard recovers, acknowledged points stay', async () => {
    const svc = await startService({ config: { storage: { shards: 1 }, debug: { crashRoute: true } } });
    try {
      const admin = await svc.adminToken();
      await svc.post('/svcapi/create_collection', SCOPE, admin);
      const acknowledged: Array<[number, number]> = [];
      const statuses = new Set<number>();
      let stop = false;
      const load = Array.from({ length: 4 }, async (_, w) => {
        for (let i = 0; !stop && i < 400; i++) {
          const ts = T0 + (w * 1000 + i) * 1000;
          const res = await svc.post('/svcapi/write_fast', { ...SCOPE, tags: { CRASH: [[ts, i]] } }, admin);
          statuses.add(res.status);
          if (res.body?.success === true) acknowledged.push([ts, i]);
        }
      });
      await waitFor(() => acknowledged.length > 0, 'the load is under way');
      const crash = await svc.post('/svcapi/_debug/crash_shard', { shard: 0 }, admin);
      assert.equal(crash.status, 200);
      assert.equal((await svc.get('/ingest/health')).status, 200, 'the service keeps answering');
      // The load goes on until a new worker has recovered the shard.
      await waitFor(() => svc.logLines.filter((l) => l.includes('shard recovered')).length >= 2, 'a new worker recovers the shard');
      stop = true;
      await Promise.all(load);
      assert.ok(!statuses.has(500), `no 500s (saw ${[...statuses].join(', ')})`);
      assert.ok([...statuses].every((s) => s === 200 || s === 503), [...statuses].join(', '));
      // After recovery the shard takes writes and finds every acknowledged point.
      const after = await svc.post('/svcapi/write', { ...SCOPE, tags: { CRASH: [[T0 + 10 * DAY, 1]] } }, admin);
      assert.equal(after.body.success, true, after.text);
      const q = await svc.get(queryUrl(['CRASH'], T0, T0 + 11 * DAY), admin);
      const seen = new Set(q.body.CRASH.map(([ts]: [number]) => ts));
      for (const [ts] of acknowledged) assert.ok(seen.has(ts), `acknowledged point ${ts} present`);
      assert.equal(svc.logLines.filter((l) => l.includes('shard recovered')).length, 2, 'a new worker recovered the shard');
    } finally {
      await svc.dispose();
    }
  });
});

describe('query cancellation', () => {
  test('a client that disconnects mid-stream cancels the query in the worker', async () => {
    const svc = await startService({ config: { storage: { shards: 1, resultRingBytes: 65536 } } });
    try {
      const admin = await svc.adminToken();
      await svc.post('/svcapi/create_collection', SCOPE, admin);
      const points = Array.from({ length: 20000 }, (_, i) => [T0 + i * 1000, i + 0.25]);
      for (let t = 0; t < 10; t++) await svc.post('/svcapi/write_fast', { ...SCOPE, tags: { [`BIG-${t}`]: points } }, admin);
      const https = await import('node:https');
      const tags = Array.from({ length: 10 }, (_, t) => `BIG-${t}`);
      await new Promise<void>((resolve, reject) => {
        const req = https.request(
          { host: '127.0.0.1', servername: 'localhost', port: svc.port, path: queryUrl(tags, T0, T0 + DAY), ca: svc.ca, headers: { authorization: admin } },
          (res) => {
            res.on('error', () => {}); // the aborted response complains; that is the point
            res.once('data', () => {
              req.destroy(); // walk away after the first chunk
              resolve();
            });
          },
        );
        req.on('error', (err) => (/socket hang up|aborted/.test(String(err)) ? resolve() : reject(err)));
        req.end();
      });
      await waitFor(() => svc.logLines.some((l) => l.includes('client went away')), 'the worker stopped the query because the client went away');
      const small = await svc.get(queryUrl(['BIG-0'], T0, T0 + 1000), admin);
      assert.deepEqual(small.body, { 'BIG-0': [[T0, 0.25], [T0 + 1000, 1.25]] }, 'the shard serves the next query');
    } finally {
      await svc.dispose();
    }
  });
});
