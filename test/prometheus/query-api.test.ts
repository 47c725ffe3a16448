// Prometheus' query API on the real service (WIRE.md part 3): credentials, isolation between
// tenants (queries, series, labels, label values and remote read see only the caller's grant),
// GET and POST form alike, Prometheus' answer and error shapes (400 bad_data, 422 execution,
// 503 timeout), the limits (promql.maxSamples, promql.maxSeries), bad input (parse errors,
// nesting, regex bombs, bad times and steps), and Debian's promtool 2.42 as a client.

import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { promisify } from 'node:util';
import { decodeReadResponse, encodeReadRequest, encodeWriteRequest, type EncodableSeries } from '../../native-free-codecs/prom-remote.js';
import { snappyCompress, snappyDecompress } from '../../native-free-codecs/snappy.js';
import { accountHelpers, type Account } from '../api/accounts.js';
import { startService, type HttpResult, type TestService } from '../api/harness.js';

const run = promisify(execFile);
const PROMTOOL = '/usr/bin/promtool';
const T0 = Date.UTC(2026, 0, 6, 0, 0, 0);
const ACME = { organization: 'acme', site: 'north', unit: 'boiler-1', grid: 'default' };
const GLOBEX = { organization: 'globex', site: 'south', unit: 'press-1', grid: 'default' };

function series(name: string, labels: Record<string, string>, count: number, value: (i: number) => number): EncodableSeries {
  return {
    labels: [['__name__', name], ...Object.entries(labels)],
    timestamps: Array.from({ length: count }, (_, i) => T0 + i * 15_000),
    values: Float64Array.from({ length: count }, (_, i) => value(i)),
  };
}

describe('Prometheus query API', () => {
  let svc: TestService;
  let admin: string;
  let acmeUser: Account;
  let acmeKey: string;
  let globexKey: string;
  const helpers = accountHelpers(() => svc, () => admin);

  async function write(db: string, key: string, body: EncodableSeries[]): Promise<void> {
    const res = await svc.request('POST', `/api/v1/write?db=${db}`, {
      rawBody: Buffer.from(snappyCompress(encodeWriteRequest(body))),
      headers: { 'content-type': 'application/x-protobuf', 'content-encoding': 'snappy', authorization: `Bearer ${key}` },
    });
    assert.equal(res.status, 204, res.text);
  }

  function api(endpoint: string, params: Record<string, string | string[]>, auth: string | null, method: 'GET' | 'POST' = 'GET'): Promise<HttpResult> {
    const search = new URLSearchParams();
    for (const [k, v] of Object.entries(params)) for (const one of Array.isArray(v) ? v : [v]) search.append(k, one);
    const headers: Record<string, string> = auth ? { authorization: auth } : {};
    if (method === 'GET') return svc.request('GET', `/api/v1/${endpoint}?${search}`, { headers });
    return svc.request('POST', `/api/v1/${endpoint}`, { rawBody: Buffer.from(search.toString()), headers: { ...headers, 'content-type': 'application/x-www-form-urlencoded' } });
  }

  const basic = (key: string) => `Basic ${Buffer.from(`grafana:${key}`).toString('base64')}`;

  before(async () => {
    svc = await startService({ config: { promql: { maxSamples: 1_000, maxSeries: 50 } } });
    admin = await svc.adminToken();
    for (const scope of [ACME, GLOBEX]) {
      const org = await helpers.mk('orgs', { name: scope.organization });
      await helpers.mk('units', { name: scope.unit, siteId: await helpers.mk('sites', { name: scope.site, orgsId: org }) });
      await helpers.mk('ingestconfigs', { clientId: scope.organization, ...scope });
      if (scope === ACME) {
        acmeUser = await helpers.account('reader@acme.test', { orgs: [org] });
      } else {
        const user = await helpers.account('reader@globex.test', { orgs: [org] });
        globexKey = (await svc.post('/svcapi/api_keys', { name: 'globex' }, user.token)).body.key;
      }
    }
    acmeKey = (await svc.post('/svcapi/api_keys', { name: 'acme' }, acmeUser.token)).body.key;
    await write('acme', acmeKey, [
      series('requests_total', { job: 'api', instance: 'a' }, 240, (i) => i * 10),
      series('requests_total', { job: 'api', instance: 'b' }, 240, (i) => i * 3),
      series('secret_acme', { job: 'api' }, 10, (i) => i),
    ]);
    await write('globex', globexKey, [series('requests_total', { job: 'api', instance: 'g' }, 240, (i) => i), series('secret_globex', { job: 'x' }, 10, (i) => i)]);
  });
  after(() => svc?.dispose());

  const at = (ms: number) => String(ms / 1000);

  test('an instant query answers in Prometheus\' shape; GET and POST form alike; a key as Basic password or Bearer', async () => {
    const params = { query: 'sum by (instance) (requests_total)', time: at(T0 + 30 * 60_000) };
    const get = await api('query', params, basic(acmeKey));
    const post = await api('query', params, `Bearer ${acmeKey}`, 'POST');
    assert.equal(get.status, 200, get.text);
    assert.equal(get.text, post.text);
    assert.equal(get.body.status, 'success');
    assert.equal(get.body.data.resultType, 'vector');
    const byInstance = Object.fromEntries(get.body.data.result.map((r: any) => [r.metric.instance, r.value]));
    assert.deepEqual(byInstance, { a: [T0 / 1000 + 1800, '1200'], b: [T0 / 1000 + 1800, '360'] });
    const jwt = await api('query', { query: '1+1' }, `Bearer ${acmeUser.token}`);
    assert.equal(jwt.body.data.resultType, 'scalar');
    assert.equal(jwt.body.data.result[1], '2');
  });

  test('a read-only key queries by GET and POST form and reads remotely; it cannot remote-write', async () => {
    const made = await svc.post('/svcapi/api_keys', { name: 'grafana', role: 'read-only' }, acmeUser.token);
    assert.equal(made.status, 201, made.text);
    const readOnly = basic(made.body.key);
    for (const method of ['GET', 'POST'] as const) {
      const res = await api('query', { query: 'count(requests_total)', time: at(T0 + 60_000) }, readOnly, method);
      assert.equal(res.status, 200, `${method}: ${res.text}`);
      assert.equal(res.body.data.result[0].value[1], '2');
    }
    const read = await svc.request('POST', '/api/v1/read', {
      rawBody: Buffer.from(snappyCompress(encodeReadRequest({ queries: [{ startTimestampMs: T0, endTimestampMs: T0 + 60_000, matchers: [{ type: 'EQ', name: '__name__', value: 'requests_total' }] }] }))),
      headers: { 'content-type': 'application/x-protobuf', 'content-encoding': 'snappy', authorization: readOnly },
    });
    assert.equal(read.status, 200, read.text);
    const write = await svc.request('POST', '/api/v1/write?db=acme', {
      rawBody: Buffer.from(snappyCompress(encodeWriteRequest([series('requests_total', { job: 'api', instance: 'z' }, 1, () => 1)]))),
      headers: { 'content-type': 'application/x-protobuf', 'content-encoding': 'snappy', authorization: readOnly },
    });
    assert.equal(write.status, 403, write.text);
  });

  test('no credentials: 401 in Prometheus\' error shape', async () => {
    const res = await api('query', { query: '1+1' }, null);
    assert.equal(res.status, 401);
    assert.equal(res.body.status, 'error');
    assert.equal(typeof res.body.errorType, 'string');
    assert.equal(typeof res.body.error, 'string');
  });

  test('another tenant\'s series never appear: query, series, labels, label values, remote read', async () => {
    const q = await api('query_range', { query: '{__name__=~".+"}', start: at(T0), end: at(T0 + 3_600_000), step: '60' }, basic(acmeKey));
    assert.equal(q.status, 200, q.text);
    const names = new Set(q.body.data.result.map((r: any) => r.metric.__name__));
    assert.deepEqual([...names].sort(), ['requests_total', 'secret_acme']);
    assert.ok(q.body.data.result.every((r: any) => r.metric.organization === 'acme'));
    const s = await api('series', { 'match[]': 'requests_total' }, basic(acmeKey));
    assert.deepEqual(s.body.data.map((m: any) => m.instance).sort(), ['a', 'b']);
    const values = await api('label/__name__/values', {}, basic(globexKey));
    assert.deepEqual(values.body.data, ['requests_total', 'secret_globex']);
    const orgs = await api('label/organization/values', {}, basic(acmeKey));
    assert.deepEqual(orgs.body.data, ['acme']);
    const labels = await api('labels', { 'match[]': 'secret_globex' }, basic(acmeKey));
    assert.deepEqual(labels.body.data, []);
    const read = await svc.request('POST', '/api/v1/read', {
      rawBody: Buffer.from(snappyCompress(encodeReadRequest({ queries: [{ startTimestampMs: T0, endTimestampMs: T0 + 3_600_000, matchers: [{ type: 'RE', name: '__name__', value: '.+' }] }] }))),
      headers: { 'content-type': 'application/x-protobuf', 'content-encoding': 'snappy', authorization: basic(globexKey) },
    });
    assert.equal(read.status, 200, read.text);
    const response = decodeReadResponse(snappyDecompress(new Uint8Array(read.bytes), 1 << 24));
    const readNames = response.results[0]!.map((t) => Object.fromEntries(t.labels).__name__).sort();
    assert.deepEqual(readNames, ['requests_total', 'secret_globex']);
    assert.equal(response.results[0]!.find((t) => Object.fromEntries(t.labels).__name__ === 'requests_total')!.timestamps.length, 240);
  });

  test('parse errors, bad times, steps and types are 400 bad_data naming the parameter', async () => {
    const cases: Array<[string, Record<string, string | string[]>, RegExp]> = [
      ['query', { query: 'sum(' }, /^invalid parameter "query": 1:5: parse error/],
      ['query', { query: '' }, /^invalid parameter "query": .*no expression found in input/],
      ['query', { query: 'rate(requests_total)' }, /^invalid parameter "query": .*expected type range vector in call to function "rate", got instant vector/],
      ['query', { query: '1', time: 'noon' }, /^invalid parameter "time": cannot parse "noon" to a valid timestamp/],
      ['query_range', { query: '1', end: '10', step: '1' }, /^invalid parameter "start"/],
      ['query_range', { query: '1', start: '10', end: '5', step: '1' }, /end timestamp must not be before start time/],
      ['query_range', { query: '1', start: '0', end: '10', step: '0' }, /zero or negative query resolution step widths are not accepted/],
      ['query_range', { query: '1', start: '0', end: '100000', step: '1' }, /exceeded maximum resolution of 11,000 points per timeseries/],
      ['query_range', { query: 'requests_total[5m]', start: '0', end: '10', step: '1' }, /invalid expression type "range vector" for range query, must be Scalar or instant Vector/],
      ['series', {}, /no match\[\] parameter provided/],
      ['series', { 'match[]': 'sum(requests_total)' }, /^invalid parameter "match\[\]"/],
      ['label/a-b/values', {}, /invalid label name/],
    ];
    for (const [endpoint, params, message] of cases) {
      const res = await api(endpoint, params, basic(acmeKey));
      assert.equal(res.status, 400, `${endpoint} ${JSON.stringify(params)}: ${res.text}`);
      assert.equal(res.body.status, 'error');
      assert.equal(res.body.errorType, 'bad_data', res.text);
      assert.match(res.body.error, message);
    }
  });

  test('matching errors and the limits are 422 execution', async () => {
    const time = at(T0 + 30 * 60_000);
    const manyToMany = await api('query', { query: 'requests_total + on (job) requests_total', time }, basic(acmeKey));
    assert.equal(manyToMany.status, 422, manyToMany.text);
    assert.equal(manyToMany.body.errorType, 'execution');
    assert.match(manyToMany.body.error, /found duplicate series for the match group \{job="api"\} on the right hand-side of the operation/);
    // promql.maxSamples is 1,000 here: 2 series × 1,001 steps of a range query do not fit.
    const big = await api('query_range', { query: 'requests_total', start: at(T0), end: at(T0 + 10_000_000), step: '10' }, basic(acmeKey));
    assert.equal(big.status, 422, big.text);
    assert.match(big.body.error, /query processing would load too many samples into memory in query execution/);
  });

  test('a regex bomb in a matcher and deep nesting are answered, not hung or crashed', async () => {
    const bomb = await api('query', { query: '{__name__=~"(a+)+$", job=~"(.*a){20}"}', time: at(T0) }, basic(acmeKey));
    assert.equal(bomb.status, 200, bomb.text);
    assert.deepEqual(bomb.body.data.result, []);
    const deep = await api('query', { query: `${'('.repeat(100_000)}1${')'.repeat(100_000)}` }, basic(acmeKey), 'POST');
    assert.equal(deep.status, 400, deep.text.slice(0, 300));
    assert.equal(deep.body.errorType, 'bad_data');
    const lookaround = await api('query', { query: '{__name__=~"(?=a)b"}' }, basic(acmeKey));
    assert.equal(lookaround.status, 400, lookaround.text);
  });

  test('a query past its timeout is 503 timeout', async () => {
    const res = await api('query', { query: 'requests_total', time: at(T0), timeout: '0s' }, basic(acmeKey));
    assert.equal(res.status, 503, res.text);
    assert.equal(res.body.errorType, 'timeout');
    assert.match(res.body.error, /query timed out in expression evaluation/);
  });

  test('metadata and buildinfo answer as Prometheus does', async () => {
    const meta = await api('metadata', {}, basic(acmeKey));
    assert.deepEqual(meta.body, { status: 'success', data: {} });
    const build = await api('status/buildinfo', {}, basic(acmeKey));
    assert.equal(build.body.status, 'success');
    assert.match(build.body.data.version, /^2\.42\./);
  });

  describe('promtool 2.42 as a client', { skip: fs.existsSync(PROMTOOL) ? false : `${PROMTOOL} is not installed (apt-get install prometheus)` }, () => {
    let caFile: string;
    let server: string;
    before(() => {
      caFile = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'promtool-')), 'ca.pem');
      fs.writeFileSync(caFile, svc.ca);
      // promtool 2.42 has no --http.config.file: Basic credentials in the URL, any user name and the key.
      server = `https://grafana:${acmeKey}@127.0.0.1:${svc.port}`;
    });
    after(() => fs.rmSync(path.dirname(caFile), { recursive: true, force: true }));
    const promtool = (...args: string[]) => run(PROMTOOL, ['query', ...args], { env: { ...process.env, SSL_CERT_FILE: caFile }, timeout: 30_000 });

    test('query instant, in promql and json output', async () => {
      const { stdout } = await promtool('instant', '--time', at(T0 + 30 * 60_000), server, 'sum by (instance) (requests_total)');
      assert.match(stdout, /\{instance="a"\} => 1200 @\[1767659400\]/);
      assert.match(stdout, /\{instance="b"\} => 360 @\[1767659400\]/);
      const json = JSON.parse((await promtool('instant', '-o', 'json', '--time', at(T0 + 30 * 60_000), server, 'requests_total{instance="a"}')).stdout);
      assert.equal(json[0].value[1], '1200');
      assert.equal(json[0].metric.organization, 'acme');
    });

    test('query range', async () => {
      const json = JSON.parse((await promtool('range', '-o', 'json', '--start', at(T0), '--end', at(T0 + 600_000), '--step', '1m', server, 'rate(requests_total{instance="a"}[2m])')).stdout);
      assert.equal(json.length, 1);
      assert.equal(json[0].values.length, 10); // T0+1m … T0+10m: the step at T0 has one sample in its window
      // At T0+1m the window holds the counter's first minute from 0: 40 over a 2-minute range.
      assert.ok(Math.abs(Number(json[0].values[0][1]) - 40 / 120) < 1e-9, json[0].values[0][1]);
      for (const [, v] of json[0].values.slice(1)) assert.ok(Math.abs(Number(v) - 10 / 15) < 1e-9, v);
    });

    test('query series and labels', async () => {
      const { stdout } = await promtool('series', '--match', 'requests_total', server);
      assert.match(stdout, /instance="a"/);
      assert.match(stdout, /instance="b"/);
      assert.doesNotMatch(stdout, /instance="g"/);
      const labels = await promtool('labels', server, 'instance');
      assert.deepEqual(labels.stdout.trim().split('\n'), ['a', 'b']);
    });

    test('a wrong key is refused (promtool exits non-zero)', async () => {
      await assert.rejects(run(PROMTOOL, ['query', 'instant', `https://grafana:hk_wrong@127.0.0.1:${svc.port}`, '1'], { env: { ...process.env, SSL_CERT_FILE: caFile } }));
    });
  });
  // Last: it adds series the tests above do not expect.
  test('a selector reaching more series than promql.maxSeries is refused with 422', async () => {
    const many = Array.from({ length: 60 }, (_, i) => series('wide', { n: String(i) }, 2, () => 1));
    await write('acme', acmeKey, many);
    const res = await api('query', { query: 'count(wide)', time: at(T0 + 60_000) }, basic(acmeKey));
    assert.equal(res.status, 422, res.text);
    assert.match(res.body.error, /promql\.maxSeries/);
  });

});
