// Query formats over real HTTPS: the POST body with aggregators, msgpack
// answers equal to JSON answers, binary formats 1 and 2 decoded by a decoder
// written here from WIRE.md alone, last values in both shapes, and tag
// mappings end to end.

import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { unpack } from 'msgpackr';
import { startService, type TestService } from './harness.js';

const SCOPE = { organization: 'acme', site: 'north', unit: 'boiler-1', grid: 'main' };
const T0 = Date.UTC(2026, 0, 10);
const MIN = 60_000;

/** Binary format 1 per WIRE.md: "HSB1", u32 tags; per tag u16 len, name, u32 count, count × (u64 ts, f32 value). */
function readFormat1(buf: Buffer): Record<string, Array<[number, number]>> {
  assert.equal(buf.subarray(0, 4).toString('latin1'), 'HSB1');
  const tags = buf.readUInt32LE(4);
  let at = 8;
  const out: Record<string, Array<[number, number]>> = {};
  for (let t = 0; t < tags; t++) {
    const len = buf.readUInt16LE(at);
    const name = buf.subarray(at + 2, at + 2 + len).toString('utf8');
    at += 2 + len;
    const count = buf.readUInt32LE(at);
    at += 4;
    const points: Array<[number, number]> = [];
    for (let i = 0; i < count; i++) {
      points.push([Number(buf.readBigUInt64LE(at)), buf.readFloatLE(at + 8)]);
      at += 12;
    }
    out[name] = points;
  }
  assert.equal(at, buf.length, 'no trailing bytes');
  return out;
}

/** Binary format 2 per WIRE.md, checking every array starts on an 8-byte boundary. */
function readFormat2(buf: Buffer): { timestamps: number[]; tags: Record<string, Array<number | null>> } {
  assert.equal(buf.subarray(0, 4).toString('latin1'), 'HSB2');
  const tagCount = buf.readUInt32LE(4);
  const rows = buf.readUInt32LE(8);
  const pad = (n: number) => (n + 7) & ~7;
  let at = pad(12);
  const timestamps: number[] = [];
  for (let i = 0; i < rows; i++) timestamps.push(Number(buf.readBigUInt64LE(at + i * 8)));
  at += rows * 8;
  const tags: Record<string, Array<number | null>> = {};
  for (let t = 0; t < tagCount; t++) {
    assert.equal(at % 8, 0);
    const len = buf.readUInt16LE(at);
    const name = buf.subarray(at + 2, at + 2 + len).toString('utf8');
    at = pad(at + 2 + len);
    const bitmap = buf.subarray(at, at + Math.ceil(rows / 8));
    at = pad(at + Math.ceil(rows / 8));
    const values: Array<number | null> = [];
    for (let i = 0; i < rows; i++) values.push((bitmap[i >> 3] >> (i & 7)) & 1 ? buf.readFloatLE(at + i * 4) : null);
    at = pad(at + rows * 4);
    tags[name] = values;
  }
  assert.equal(at, buf.length);
  return { timestamps, tags };
}

describe('query formats and aggregation', () => {
  let svc: TestService;
  let admin: string;
  const post = (path: string, body: unknown, headers: Record<string, string> = {}) => svc.request('POST', path, { body, token: admin, headers });

  before(async () => {
    svc = await startService({ config: { storage: { shards: 2 } } });
    admin = await svc.adminToken();
    await svc.post('/svcapi/create_collection', SCOPE, admin);
    // TI: one point every 20 s for 3 minutes, value = minute index * 10 + second / 20.
    const ti = Array.from({ length: 9 }, (_, i) => [T0 + i * 20_000, Math.floor(i / 3) * 10 + (i % 3)]);
    const res = await svc.post('/svcapi/write', { ...SCOPE, tags: { TI: ti, PI: [[T0, 1.5], [T0 + 40_000, 2.5]] } }, admin);
    assert.deepEqual(res.body, { success: true, points: 11 });
  });
  after(() => svc.dispose());

  test('POST fast_query: per-metric aggregators, then the body pipeline; relative times', async () => {
    const res = await post('/svcapi/fast_query', {
      start_absolute: T0, end_absolute: T0 + 3 * MIN - 1, ...SCOPE,
      metrics: [
        { name: 'TI', aggregators: [{ name: 'avg', sampling: { value: 1, unit: 'minutes' } }] },
        { name: 'PI', tags: { organization: ['acme'], site: ['north'], unit: ['boiler-1'], grid: ['main'] } },
      ],
    });
    assert.equal(res.status, 200, res.text);
    assert.deepEqual(res.body, { TI: [[T0, 1], [T0 + MIN, 11], [T0 + 2 * MIN, 21]], PI: [[T0, 1.5], [T0 + 40_000, 2.5]] });

    const chained = await post('/svcapi/fast_query', {
      start_absolute: T0, end_absolute: T0 + 3 * MIN - 1, ...SCOPE,
      metrics: [{ name: 'TI', aggregators: [{ name: 'max', sampling: { value: 1, unit: 'minutes' } }] }],
      pipeline: [{ name: 'scale', factor: 2 }],
    });
    assert.deepEqual(chained.body, { TI: [[T0, 4], [T0 + MIN, 24], [T0 + 2 * MIN, 44]] });

    const relative = await post('/svcapi/fast_query', { start_relative: { value: 100, unit: 'years' }, ...SCOPE, metrics: [{ name: 'PI' }] });
    assert.deepEqual(relative.body, { PI: [[T0, 1.5], [T0 + 40_000, 2.5]] });
  });

  test('bad aggregators and bodies are 400 naming the problem', async () => {
    const cases: Array<[unknown, RegExp]> = [
      [{ start_absolute: T0, ...SCOPE, metrics: [{ name: 'TI', aggregators: [{ name: 'median', sampling: { value: 1, unit: 'minutes' } }] }] }, /median/],
      [{ start_absolute: T0, ...SCOPE, metrics: [{ name: 'TI', aggregators: [{ name: 'avg', sampling: { value: 1, unit: 'fortnights' } }] }] }, /fortnights/],
      [{ start_absolute: T0, ...SCOPE, metrics: [{ name: 'TI', aggregators: [{ name: 'avg' }] }] }, /sampling/],
      [{ start_absolute: T0, ...SCOPE, metrics: [{ name: 'TI' }], pipeline: [{ name: 'div', divisor: 0 }] }, /divisor/],
      [{ ...SCOPE, metrics: [{ name: 'TI' }] }, /start/],
      [{ start_absolute: T0, organization: 'acme', metrics: [{ name: 'TI' }] }, /site/],
      [{ start_absolute: 0, ...SCOPE, metrics: [{ name: 'TI', aggregators: [{ name: 'gaps', sampling: { value: 1, unit: 'milliseconds' } }] }] }, /buckets/],
    ];
    for (const [body, pattern] of cases) {
      const res = await post('/svcapi/fast_query', body);
      assert.equal(res.status, 400, JSON.stringify(body));
      assert.match(res.body.error, pattern);
    }
  });

  test('msgpack answers equal JSON answers on every query route', async () => {
    const get = `/svcapi/fast_query?tags=TI&tags=PI&start=${T0}&end=${T0 + 3 * MIN}&${new URLSearchParams(SCOPE)}`;
    const json = await svc.request('GET', get, { token: admin });
    const mp = await svc.request('GET', get, { token: admin, headers: { accept: 'application/msgpack' } });
    assert.equal(mp.headers['content-type'], 'application/msgpack');
    assert.deepEqual(unpack(mp.bytes), json.body);

    const body = { start_absolute: T0, ...SCOPE, metrics: [{ name: 'TI', aggregators: [{ name: 'sum', sampling: { value: 1, unit: 'minutes' } }] }, { name: 'PI' }] };
    const pj = await post('/svcapi/fast_query', body);
    const pm = await post('/svcapi/fast_query', body, { accept: 'application/msgpack' });
    assert.deepEqual(unpack(pm.bytes), pj.body);

    const lj = await svc.request('GET', `/svcapi/lastlist?tags=TI&tags=PI&${new URLSearchParams(SCOPE)}`, { token: admin });
    const lm = await svc.request('GET', `/svcapi/lastlist?tags=TI&tags=PI&${new URLSearchParams(SCOPE)}`, { token: admin, headers: { accept: 'application/msgpack' } });
    assert.deepEqual(unpack(lm.bytes), lj.body);
  });

  test('binary format 1 carries every point as (u64 ts, f32 value); POST runs the pipeline in the store', async () => {
    const res = await svc.request('GET', `/svcapi/fast_query_binary?tags=TI&tags=NONE&start=${T0}&end=${T0 + 3 * MIN}&${new URLSearchParams(SCOPE)}`, { token: admin });
    assert.equal(res.status, 200);
    assert.equal(res.headers['content-type'], 'application/octet-stream');
    const decoded = readFormat1(res.bytes);
    assert.equal(decoded.TI.length, 9);
    assert.deepEqual(decoded.TI[4], [T0 + 80_000, Math.fround(11)]);
    assert.deepEqual(decoded.NONE, []);
    const agg = await svc.request('POST', '/svcapi/fast_query_binary', {
      token: admin,
      body: { start_absolute: T0, end_absolute: T0 + 3 * MIN - 1, ...SCOPE, metrics: [{ name: 'TI', aggregators: [{ name: 'count', sampling: { value: 1, unit: 'minutes' } }] }] },
    });
    assert.deepEqual(readFormat1(agg.bytes), { TI: [[T0, 3], [T0 + MIN, 3], [T0 + 2 * MIN, 3]] });
  });

  test('binary format 1 of a raw range gives the JSON points, within one day (encoded from the day as scanned) or across days', async () => {
    const DAY = 86_400_000;
    // Points either side of the midnight at T0 + DAY, none on the day after.
    const span = Array.from({ length: 40 }, (_, i) => [T0 + DAY - 20 * 60_000 + i * 60_000, i * 1.25 - 7]);
    assert.deepEqual((await svc.post('/svcapi/write', { ...SCOPE, tags: { SPAN: span } }, admin)).body, { success: true, points: 40 });
    const ranges = [
      [T0 + DAY - 10 * MIN, T0 + DAY - 1], // one day, cut at both ends
      [T0 + DAY, T0 + 2 * DAY - 1], // the next day whole
      [T0 + DAY - 10 * MIN, T0 + DAY + 10 * MIN], // across midnight
      [T0 + 2 * DAY, T0 + 3 * DAY - 1], // a day with no point
      [T0, T0 + 3 * DAY],
    ];
    for (const [start, end] of ranges) {
      const query = `tags=SPAN&tags=TI&start=${start}&end=${end}&${new URLSearchParams(SCOPE)}`;
      const json = await svc.request('GET', `/svcapi/fast_query?${query}`, { token: admin });
      const bin = await svc.request('GET', `/svcapi/fast_query_binary?${query}`, { token: admin });
      const expected = Object.fromEntries(Object.entries(json.body as Record<string, Array<[number, number]>>).map(([k, pts]) => [k, pts.map(([t, v]) => [t, Math.fround(v)])]));
      assert.deepEqual(readFormat1(bin.bytes), expected, `${start}..${end}`);
    }
  });

  test('binary format 2: union of timestamps, validity bitmaps, aligned arrays; scope required', async () => {
    const res = await svc.request('GET', `/svcapi/fast_query_optimised?tags=TI&tags=PI&start=${T0}&end=${T0 + MIN}&${new URLSearchParams(SCOPE)}`, { token: admin });
    assert.equal(res.status, 200, res.text);
    const table = readFormat2(res.bytes);
    assert.deepEqual(table.timestamps, [T0, T0 + 20_000, T0 + 40_000, T0 + 60_000]);
    assert.deepEqual(table.tags.TI, [0, 1, 2, 10]);
    assert.deepEqual(table.tags.PI, [1.5, null, 2.5, null]);
    const missing = await svc.request('GET', `/svcapi/fast_query_optimised?tags=TI&start=${T0}&end=${T0 + MIN}&organization=acme&site=north&unit=boiler-1`, { token: admin });
    assert.equal(missing.status, 400);
    assert.match(missing.body.error, /grid/);
    const post2 = await svc.request('POST', '/svcapi/fast_query_optimised', { token: admin, body: { start_absolute: T0, end_absolute: T0 + MIN, ...SCOPE, metrics: [{ name: 'PI' }] } });
    assert.deepEqual(readFormat2(post2.bytes), { timestamps: [T0, T0 + 40_000], tags: { PI: [1.5, 2.5] } });
    const noScope = await svc.request('POST', '/svcapi/fast_query_optimised', { token: admin, body: { start_absolute: T0, metrics: [{ name: 'PI' }] } });
    assert.equal(noScope.status, 400);
    assert.match(noScope.body.error, /organization/);
  });

  test('POST lastlist and the KairosDB-shaped sensordata lastlist', async () => {
    const last = await post('/svcapi/lastlist', { ...SCOPE, tags: ['TI', 'PI', 'NOTHING'] });
    assert.deepEqual(last.body, { TI: [T0 + 160_000, 22], PI: [T0 + 40_000, 2.5], NOTHING: null });
    const sensor = await post('/sensordata/anything/lastlist', { metrics: [{ name: 'TI' }, { name: 'PI' }] });
    assert.deepEqual(sensor.body, {
      queries: [{ sample_size: 2, results: [{ name: 'TI', tags: {}, values: [[T0 + 160_000, 22]] }, { name: 'PI', tags: {}, values: [[T0 + 40_000, 2.5]] }] }],
    });
    const byTags = await post('/sensordata/1/lastlist', { tags: ['PI'] });
    assert.equal(byTags.body.queries[0].results[0].values[0][1], 2.5);
  });

  test('tag mappings: CRUD, writes and queries by external spec', async () => {
    const created = await post('/svcapi/tag_mappings', { external: '\\\\PI-SRV\\TI101', tag: 'MAP-TI', ...SCOPE, description: 'from PI' });
    assert.equal(created.status, 200, created.text);
    assert.equal(created.body.tag, 'MAP-TI');
    assert.equal(created.body.description, 'from PI');
    assert.equal((await post('/svcapi/tag_mappings', { external: '\\\\PI-SRV\\TI101', tag: 'X', ...SCOPE })).status, 409);
    await post('/svcapi/tag_mappings/bulk', [{ external: 'opc:ns=2;s=PI', tag: 'MAP-PI', ...SCOPE }]);
    assert.equal((await svc.get('/svcapi/tag_mappings', admin)).body.length, 2);

    const written = await post('/svcapi/write_tag_mapping', { data: { '\\\\PI-SRV\\TI101': [[T0, 7], [T0 + 1000, 8]], 'opc:ns=2;s=PI': [[T0, 1]] } });
    assert.deepEqual(written.body, { success: true, points: 3 });
    const unmapped = await post('/svcapi/write_tag_mapping', { data: { 'nobody-knows': [[T0, 1]] } });
    assert.equal(unmapped.status, 400);
    assert.match(unmapped.body.error, /nobody-knows/);

    const q = await post('/svcapi/fast_query_tag_mapping', { tags: ['\\\\PI-SRV\\TI101', 'opc:ns=2;s=PI'], start: T0, end: T0 + 1000 });
    assert.deepEqual(q.body, { '\\\\PI-SRV\\TI101': [[T0, 7], [T0 + 1000, 8]], 'opc:ns=2;s=PI': [[T0, 1]] });
    const mp = await post('/svcapi/fast_query_tag_mapping', { tags: ['\\\\PI-SRV\\TI101', 'opc:ns=2;s=PI'], start: T0, end: T0 + 1000 }, { accept: 'application/msgpack' });
    assert.deepEqual(unpack(mp.bytes), q.body);
    const bin = await post('/svcapi/fast_query_tag_mapping', { tags: ['\\\\PI-SRV\\TI101'], start: T0, end: T0 + 1000, format: 'binary' });
    assert.deepEqual(readFormat1(bin.bytes), { '\\\\PI-SRV\\TI101': [[T0, 7], [T0 + 1000, 8]] });
    // The storage tag is also queryable directly.
    const direct = await svc.get(`/svcapi/fast_query?tags=MAP-TI&start=${T0}&end=${T0 + 1000}&${new URLSearchParams(SCOPE)}`, admin);
    assert.deepEqual(direct.body, { 'MAP-TI': [[T0, 7], [T0 + 1000, 8]] });

    const updated = await svc.request('PUT', `/svcapi/tag_mappings/${created.body.id}`, { token: admin, body: { tag: 'MAP-TI-2' } });
    assert.equal(updated.body.tag, 'MAP-TI-2');
    assert.deepEqual((await svc.request('DELETE', `/svcapi/tag_mappings/${created.body.id}`, { token: admin })).body, { count: 1 });
    assert.equal((await svc.get(`/svcapi/tag_mappings/${created.body.id}`, admin)).status, 404);
  });

  test('write_tag_mapping: tags named like Object.prototype members (constructor, __proto__, toString) are written, not a 500 or lost', async () => {
    // Found by the fuzzer (issue 34): the points were grouped per tag in a plain object, so
    // "constructor" read Object and the write failed with a TypeError, and "__proto__" set the prototype.
    const names = ['constructor', '__proto__', 'toString'];
    for (const tag of names) assert.equal((await post('/svcapi/tag_mappings', { external: `proto/${tag}`, tag, ...SCOPE })).status, 200);
    const data = Object.fromEntries(names.map((tag, i) => [`proto/${tag}`, [[T0 + 5 * MIN, i + 1]]]));
    const written = await post('/svcapi/write_tag_mapping', { data });
    assert.equal(written.status, 200, written.text);
    assert.deepEqual(written.body, { success: true, points: 3 });
    const q = await post('/svcapi/fast_query_tag_mapping', { tags: Object.keys(data), start: T0, end: T0 + 10 * MIN });
    assert.equal(q.status, 200, q.text);
    assert.deepEqual(q.body, JSON.parse(JSON.stringify(Object.fromEntries(names.map((tag, i) => [`proto/${tag}`, [[T0 + 5 * MIN, i + 1]]])))));
  });
});
