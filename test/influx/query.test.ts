// InfluxQL over the real service (issue 28; WIRE.md part 3 "InfluxDB 1.x compatibility at the
// root"): answers computed by hand for a small data set written through line protocol, in the
// exact JSON InfluxDB 1.x gives. The side-by-side comparison with a real influxd is
// test/influx/differential.test.ts.

import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { startService, type HttpResult, type TestService } from '../api/harness.js';

const T0 = Date.UTC(2026, 0, 10, 6); // a whole minute
const STEP = 10_000;
const CLIENT = 'influx-plant';
const SCOPE = { organization: 'acme', site: 'north', unit: 'boiler-1' };

describe('InfluxQL /query', () => {
  let svc: TestService;
  let admin: string;
  let outsider: string;

  async function query(q: string, params: Record<string, string> = {}, token = admin): Promise<HttpResult> {
    const qs = new URLSearchParams({ db: CLIENT, q, ...params });
    return svc.request('GET', `/query?${qs}`, { token });
  }

  /** The series of statement 0, after asserting a 200 without error. */
  async function series(q: string, params: Record<string, string> = {}): Promise<Array<{ name?: string; tags?: Record<string, string>; columns: string[]; values: unknown[][] }>> {
    const res = await query(q, params);
    assert.equal(res.status, 200, `${q}: ${res.text}`);
    const result = res.body.results[0];
    assert.equal(result.error, undefined, `${q}: ${res.text}`);
    return result.series ?? [];
  }

  before(async () => {
    // The smallest storage.queryMemoryBytes, so that a raw SELECT of BIG's 70,000 points passes it.
    svc = await startService({ config: { storage: { queryMemoryBytes: 1048576 } } });
    admin = await svc.adminToken();
    const mk = async (url: string, body: object) => {
      const res = await svc.post(`/svcapi/${url}`, body, admin);
      assert.equal(res.status, 200, res.text);
      return res.body.id as string;
    };
    await mk('units', { name: SCOPE.unit, siteId: await mk('sites', { name: SCOPE.site, orgsId: await mk('orgs', { name: SCOPE.organization }) }) });
    await mk('ingestconfigs', { clientId: CLIENT, ...SCOPE, grid: 'main' });
    // host a: usage = k; host b: usage = 10 + k; k = 0..11 every 10 s; b has no point at k = 4.
    const lines: string[] = [];
    for (let k = 0; k < 12; k++) {
      lines.push(`cpu,host=a,region=eu usage=${k},idle=${100 - k} ${T0 + k * STEP}`);
      if (k !== 4) lines.push(`cpu,host=b,region=eu usage=${10 + k} ${T0 + k * STEP}`);
    }
    const res = await svc.request('POST', `/ingest/v2/write?db=${CLIENT}&precision=ms`, { token: admin, rawBody: lines.join('\n'), headers: { 'content-type': 'text/plain' } });
    assert.equal(res.status, 204, res.text);
    const json = await svc.post('/svcapi/write', { ...SCOPE, grid: 'main', tags: { 'TI-1': [[T0, 7.5]] } }, admin);
    assert.equal(json.body.success, true, json.text);
    const big = Array.from({ length: 70_000 }, (_, i): [number, number] => [T0 + i * 1000, (i % 1000) + 0.25]);
    const bigWrite = await svc.post('/svcapi/write', { ...SCOPE, grid: 'main', tags: { BIG: big } }, admin);
    assert.equal(bigWrite.body.success, true, bigWrite.text);
    outsider = await svc.newUser('outsider@plant.test');
  });
  after(() => svc?.dispose());

  test('SHOW statements: databases, measurements, tag keys and values, field keys, series, retention policies', async () => {
    const dbs = await series('SHOW DATABASES');
    assert.deepEqual(dbs[0]?.columns, ['name']);
    assert.ok(dbs[0]!.values.some(([name]) => name === CLIENT), JSON.stringify(dbs));
    assert.deepEqual(await series('SHOW MEASUREMENTS'), [{ name: 'measurements', columns: ['name'], values: [['BIG'], ['TI-1'], ['cpu']] }]);
    assert.deepEqual(await series('SHOW MEASUREMENTS WITH MEASUREMENT =~ /^c/'), [{ name: 'measurements', columns: ['name'], values: [['cpu']] }]);
    assert.deepEqual(await series('SHOW MEASUREMENTS WITH MEASUREMENT =~ /(?i)^CP/'), [{ name: 'measurements', columns: ['name'], values: [['cpu']] }], "Go's (?i) flag, as Grafana sends it");
    assert.deepEqual(await series('SHOW TAG KEYS FROM "cpu"'), [{ name: 'cpu', columns: ['tagKey'], values: [['host'], ['region']] }]);
    assert.deepEqual(await series('SHOW TAG VALUES FROM "cpu" WITH KEY = "host"'), [{ name: 'cpu', columns: ['key', 'value'], values: [['host', 'a'], ['host', 'b']] }]);
    assert.deepEqual(await series('SHOW FIELD KEYS FROM "cpu"'), [{ name: 'cpu', columns: ['fieldKey', 'fieldType'], values: [['idle', 'float'], ['usage', 'float']] }]);
    assert.deepEqual(await series('SHOW FIELD KEYS FROM "TI-1"'), [{ name: 'TI-1', columns: ['fieldKey', 'fieldType'], values: [['value', 'float']] }]);
    assert.deepEqual(await series('SHOW SERIES FROM "cpu"'), [{ columns: ['key'], values: [['cpu,host=a,region=eu'], ['cpu,host=b,region=eu']] }]);
    assert.deepEqual(await series('SHOW RETENTION POLICIES'), [{ columns: ['name', 'duration', 'shardGroupDuration', 'replicaN', 'default'], values: [['autogen', '0s', '168h0m0s', 1, true]] }]);
  });

  test('GROUP BY time and tags: the mean per bucket and host, times RFC 3339 or epoch', async () => {
    const q = `SELECT mean("usage") FROM "cpu" WHERE time >= ${T0}ms AND time < ${T0 + 60_000}ms GROUP BY time(30s), "host" fill(null)`;
    const iso = (ms: number) => new Date(ms).toISOString().replace('.000Z', 'Z');
    assert.deepEqual(await series(q), [
      { name: 'cpu', tags: { host: 'a' }, columns: ['time', 'mean'], values: [[iso(T0), 1], [iso(T0 + 30_000), 4]] },
      { name: 'cpu', tags: { host: 'b' }, columns: ['time', 'mean'], values: [[iso(T0), 11], [iso(T0 + 30_000), 14]] },
    ]);
    assert.deepEqual((await series(q, { epoch: 'ms' }))[0]!.values, [[T0, 1], [T0 + 30_000, 4]]);
    const ns = await query(q, { epoch: 'ns' });
    assert.match(ns.text, new RegExp(`\\[${T0}000000,1\\]`), 'nanoseconds as exact digits');
    assert.deepEqual((await series(q, { epoch: 's' }))[0]!.values, [[T0 / 1000, 1], [T0 / 1000 + 30, 4]]);
  });

  test('one group over both hosts combines the series (worker sums and counts): mean, sum, count, min, max', async () => {
    const where = `WHERE time >= ${T0}ms AND time < ${T0 + 60_000}ms`;
    const rows = (await series(`SELECT mean(usage), sum(usage), count(usage), min(usage), max(usage) FROM cpu ${where} GROUP BY time(1m)`, { epoch: 'ms' }))[0]!.values;
    // a: 0..5 (sum 15, 6 points); b: 10,11,12,13,15 (sum 61, 5 points; no point at k = 4).
    assert.deepEqual(rows, [[T0, 76 / 11, 76, 11, 0, 15]]);
  });

  test('fill: null, none, a number, previous, linear; count fills with 0', async () => {
    const q = (fill: string, fn = 'mean') => `SELECT ${fn}(usage) FROM cpu WHERE host = 'b' AND time >= ${T0 + 30_000}ms AND time < ${T0 + 60_000}ms GROUP BY time(10s) fill(${fill})`;
    const values = async (fill: string, fn?: string) => (await series(q(fill, fn), { epoch: 'ms' }))[0]!.values;
    assert.deepEqual(await values('null'), [[T0 + 30_000, 13], [T0 + 40_000, null], [T0 + 50_000, 15]]);
    assert.deepEqual(await values('none'), [[T0 + 30_000, 13], [T0 + 50_000, 15]]);
    assert.deepEqual(await values('-1'), [[T0 + 30_000, 13], [T0 + 40_000, -1], [T0 + 50_000, 15]]);
    assert.deepEqual(await values('previous'), [[T0 + 30_000, 13], [T0 + 40_000, 13], [T0 + 50_000, 15]]);
    assert.deepEqual(await values('linear'), [[T0 + 30_000, 13], [T0 + 40_000, 14], [T0 + 50_000, 15]]);
    assert.deepEqual(await values('null', 'count'), [[T0 + 30_000, 1], [T0 + 40_000, 0], [T0 + 50_000, 1]]);
  });

  test('raw SELECT: fields and tags as columns, ORDER BY time DESC, LIMIT, OFFSET, field conditions', async () => {
    const rows = await series(`SELECT usage, idle, host FROM cpu WHERE host = 'a' ORDER BY time DESC LIMIT 2 OFFSET 1`, { epoch: 'ms' });
    assert.deepEqual(rows, [{ name: 'cpu', columns: ['time', 'usage', 'idle', 'host'], values: [[T0 + 10 * STEP, 10, 90, 'a'], [T0 + 9 * STEP, 9, 91, 'a']] }]);
    const hot = await series(`SELECT usage FROM cpu WHERE usage > 19`, { epoch: 'ms' });
    assert.deepEqual(hot[0]!.values, [[T0 + 10 * STEP, 20], [T0 + 11 * STEP, 21]]);
  });

  test('selectors without GROUP BY time give the time of the point; functions compute as InfluxDB does', async () => {
    const one = async (fn: string) => (await series(`SELECT ${fn} FROM cpu WHERE host = 'a'`, { epoch: 'ms' }))[0]!.values[0];
    assert.deepEqual(await one('max(usage)'), [T0 + 11 * STEP, 11]);
    assert.deepEqual(await one('first(usage)'), [T0, 0]);
    assert.deepEqual(await one('median(usage)'), [0, 5.5]);
    assert.deepEqual(await one('spread(usage)'), [0, 11]);
    assert.deepEqual(await one('percentile(usage, 50)'), [T0 + 5 * STEP, 5]);
  });

  test('errors: a parse error is 400 with the position; unsupported statements, unknown and hidden databases are statement errors', async () => {
    const bad = await query('SELEC * FROM cpu');
    assert.equal(bad.status, 400);
    assert.match(bad.body.error, /^error parsing query: .*line 1, char 1/);
    for (const statement of ['CREATE DATABASE x', 'DROP MEASUREMENT cpu', 'DELETE FROM cpu', 'SELECT usage INTO other FROM cpu']) {
      const res = await query(statement);
      assert.equal(res.status, 200, `${statement}: ${res.text}`);
      assert.match(res.body.results[0].error, /not supported/, statement);
    }
    const missing = await query('SHOW MEASUREMENTS', { db: 'nope' });
    assert.deepEqual(missing.body, { results: [{ statement_id: 0, error: 'database not found: nope' }] });
    const hidden = await query('SHOW MEASUREMENTS', {}, outsider);
    assert.deepEqual(hidden.body, { results: [{ statement_id: 0, error: `database not found: ${CLIENT}` }] });
    const noCredentials = await svc.request('GET', `/query?db=${CLIENT}&q=SHOW+DATABASES`);
    assert.equal(noCredentials.status, 401);
    assert.equal(typeof noCredentials.body.error, 'string');
  });

  test('several statements answer in order; POST takes a form body; an API key works as Token and as Basic password', async () => {
    const two = await query('SHOW MEASUREMENTS; SHOW TAG KEYS FROM cpu');
    assert.deepEqual(two.body.results.map((r: { statement_id: number }) => r.statement_id), [0, 1]);
    const form = await svc.request('POST', '/query', { token: admin, rawBody: new URLSearchParams({ db: CLIENT, q: 'SHOW MEASUREMENTS' }).toString(), headers: { 'content-type': 'application/x-www-form-urlencoded' } });
    assert.equal(form.status, 200, form.text);
    assert.deepEqual(form.body.results[0].series[0].values, [['BIG'], ['TI-1'], ['cpu']]);
    const key = (await svc.post('/svcapi/api_keys', { name: 'grafana' }, admin)).body.key as string;
    for (const authorization of [`Token ${key}`, `Basic ${Buffer.from(`grafana:${key}`).toString('base64')}`]) {
      const res = await svc.request('GET', `/query?db=${CLIENT}&q=SHOW+MEASUREMENTS`, { headers: { authorization } });
      assert.equal(res.status, 200, res.text);
    }
  });

  test('bound parameters ($name) come from params; bad params JSON is a 400', async () => {
    const res = await query('SELECT max(usage) FROM cpu WHERE host = $h', { params: JSON.stringify({ h: 'b' }), epoch: 'ms' });
    assert.equal(res.status, 200, res.text);
    assert.deepEqual(res.body.results[0].series[0].values, [[T0 + 11 * STEP, 21]]);
    const bad = await query('SHOW MEASUREMENTS', { params: '{not json' });
    assert.equal(bad.status, 400);
    assert.match(bad.body.error, /^error parsing query parameters/);
  });

  test('a raw SELECT past storage.queryMemoryBytes is a statement error naming it; the same range aggregated in the workers answers', async () => {
    const raw = await query(`SELECT value FROM "BIG" WHERE time >= ${T0}ms`);
    assert.equal(raw.status, 200, raw.text);
    assert.match(raw.body.results[0].error, /storage\.queryMemoryBytes/);
    // Two statements each within the limit draw on one budget for the request: the second is refused.
    const half = `SELECT value FROM "BIG" WHERE time >= ${T0}ms AND time < ${T0 + 40_000_000}ms`;
    const two = await query(`${half}; ${half}`, { epoch: 'ms' });
    assert.equal(two.body.results[0].series[0].values.length, 40_000, two.text.slice(0, 200));
    assert.match(two.body.results[1].error, /storage\.queryMemoryBytes/);
    const buckets = await series(`SELECT mean(value), count(value) FROM "BIG" WHERE time >= ${T0}ms AND time < ${T0 + 70_000_000}ms GROUP BY time(1000s)`, { epoch: 'ms' });
    // T0 lies 800 s into a 1000 s bucket of the epoch grid: 71 buckets, the first and last partial.
    const rows = buckets[0]!.values as Array<[number, number, number]>;
    assert.equal(rows.length, 71);
    assert.equal(rows[0]![0], T0 - 800_000);
    assert.equal(rows.reduce((n, [, , count]) => n + count, 0), 70_000);
    const mean = rows.reduce((sum, [, m, count]) => sum + m * count, 0) / 70_000;
    assert.ok(Math.abs(mean - 499.75) < 1e-9, `overall mean ${mean}`);
    assert.deepEqual(rows[0]!.slice(1), [99.75, 200], 'the first bucket holds the first 200 points, 0.25 .. 199.25');
  });
});
