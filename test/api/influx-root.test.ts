// The InfluxDB 1.x API at the root (issue 28; WIRE.md part 3 "InfluxDB 1.x compatibility at the
// root"): `GET|HEAD /ping` and `POST /write`, which clients with no path prefix (the `influx`
// CLI, Grafana) call. `/write` is `/ingest/v2/write`: every credential form (JWT and API key in
// each), and the same answer for the same request on both paths, compared whole. Every point is
// read back with /svcapi/fast_query.

import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { parse as parseYaml } from 'yaml';
import { waitFor } from '../support/wait-for.js';
import { USER_PASSWORD, accountHelpers, type Account } from './accounts.js';
import { ADMIN_EMAIL, ADMIN_PASSWORD, startService, type HttpResult, type TestService } from './harness.js';
import { basicAuth, send } from './influx-wire.js';

const T0 = Date.UTC(2026, 0, 12, 8);
const DAY = 86_400_000;
const ACME = { organization: 'acme', site: 'north', unit: 'boiler-1', grid: 'default' };
type Points = Array<[number, number]>;

/** `<ms>` followed by six digits: the ns timestamp of a line, exact as text. */
const ns = (ms: number) => `${ms}000000`;

describe('InfluxDB 1.x API at the root: /ping and /write', () => {
  let svc: TestService;
  let admin: string;
  /** Org grant on acme. */
  let writer: Account;
  /** The writer's API key (role of the writer), and a read-only one. */
  let key: string;
  let readOnlyKey: string;
  const helpers = accountHelpers(() => svc, () => admin);

  /** POST a line protocol body to `path` (`/write` or `/ingest/v2/write`); `auth` is the whole Authorization header (none when null). */
  function write(path: string, params: Record<string, string>, body: string, auth: string | null, headers: Record<string, string> = { 'content-type': 'text/plain; charset=utf-8' }): Promise<HttpResult> {
    const qs = new URLSearchParams(params).toString();
    return send(svc, 'POST', `${path}${qs ? `?${qs}` : ''}`, body, { headers: auth === null ? headers : { ...headers, authorization: auth } });
  }

  function written(res: HttpResult, what: string): void {
    assert.equal(res.status, 204, `${what}: ${res.status} ${res.text}`);
    assert.equal(res.text, '', `${what}: a 204 has no body`);
  }

  /** Asserts exactly these points per tag in the acme collection. */
  async function expectPoints(expected: Record<string, Points>, what: string): Promise<void> {
    const qs = new URLSearchParams({ start: String(T0 - DAY), end: String(T0 + DAY), ...ACME });
    for (const tag of Object.keys(expected)) qs.append('tags', tag);
    const res = await svc.get(`/svcapi/fast_query?${qs}`, admin);
    assert.equal(res.status, 200, `${what}: ${res.text}`);
    for (const [tag, points] of Object.entries(expected)) {
      assert.deepEqual(res.body[tag], points, `${what}: ${tag}`);
    }
  }

  /** The parts of an answer a client sees: status, body, and the headers that carry meaning. */
  const answerOf = (res: HttpResult) => ({
    status: res.status,
    body: res.text,
    contentType: res.headers['content-type'],
    retryAfter: res.headers['retry-after'],
    wwwAuthenticate: res.headers['www-authenticate'],
  });

  before(async () => {
    svc = await startService({ config: { ingest: { maxBodyBytes: 64 * 1024 } } });
    admin = await svc.adminToken();
    const org = await helpers.mk('orgs', { name: 'acme' });
    const site = await helpers.mk('sites', { name: 'north', orgsId: org });
    await helpers.mk('units', { name: 'boiler-1', siteId: site });
    writer = await helpers.account('root-writer@plant.test', { orgs: [org] });
    await helpers.mk('ingestconfigs', { clientId: 'plant', organization: 'acme', site: 'north', unit: 'boiler-1' });
    await helpers.mk('ingestconfigs', { clientId: 'off', organization: 'acme', site: 'north', unit: 'boiler-1', enabled: false });
    const made = await svc.post('/svcapi/api_keys', { name: 'influx root' }, writer.token);
    assert.equal(made.status, 201, made.text);
    key = made.body.key;
    const ro = await svc.post('/svcapi/api_keys', { name: 'read only', role: 'read-only' }, writer.token);
    assert.equal(ro.status, 201, ro.text);
    readOnlyKey = ro.body.key;
  });
  after(() => svc.dispose());

  test('GET and HEAD /ping: 204, X-Influxdb-Version 1.8.10, X-Influxdb-Build OSS, no body, no credentials needed; /ingest/v2/ping the same', async () => {
    for (const path of ['/ping', '/ingest/v2/ping']) {
      for (const method of ['GET', 'HEAD']) {
        for (const auth of [null, basicAuth('anything', 'not-checked')]) {
          const res = await send(svc, method, path, null, { headers: auth === null ? {} : { authorization: auth } });
          const what = `${method} ${path}${auth ? ' with Basic' : ''}`;
          assert.equal(res.status, 204, `${what}: ${res.text}`);
          assert.equal(res.text, '', what);
          assert.equal(res.headers['x-influxdb-version'], '1.8.10', what);
          assert.equal(res.headers['x-influxdb-build'], 'OSS', what);
        }
      }
    }
    const post = await send(svc, 'POST', '/ping', '');
    assert.equal(post.status, 405, post.text);
    assert.equal(post.headers.allow, 'GET, HEAD');
  });

  test('/ping and /write are in the OpenAPI document; other root paths stay 404 (GET / sends a browser to the console), GET /write is 405', async () => {
    const doc = parseYaml((await svc.get('/svcapi/openapi.yaml')).text) as { paths: Record<string, Record<string, { summary?: string }>> };
    assert.deepEqual(Object.keys(doc.paths['/ping'] ?? {}), ['get']);
    assert.deepEqual(Object.keys(doc.paths['/write'] ?? {}), ['post']);
    assert.match(String(doc.paths['/write'].post.summary), /db=<client_id>/);
    const docs = await svc.get('/docs');
    assert.equal(docs.status, 200);
    for (const path of ['/pong', '/writes', '/write/x', '/ping/x', '/api/v2/write', '/influx/write']) {
      for (const method of ['GET', 'POST']) {
        const res = await svc.request(method, path, { token: admin, rawBody: method === 'POST' ? 'm v=1' : undefined });
        assert.equal(res.status, 404, `${method} ${path}: ${res.text}`);
        assert.deepEqual(res.body, { error: `no route for ${path}` }, `${method} ${path}`);
      }
    }
    const get = await svc.get('/write?db=plant', admin);
    assert.equal(get.status, 405, get.text);
    assert.equal(get.headers.allow, 'POST');
    const root = await svc.get('/');
    assert.equal(root.status, 302, root.text);
    assert.equal(root.headers.location, '/ui/');
    const postRoot = await svc.request('POST', '/', { token: admin, rawBody: 'm v=1' });
    assert.equal(postRoot.status, 405, postRoot.text);
  });

  test('/write takes every credential form, a JWT or an API key in each: Bearer, Token, Basic, u/p', async () => {
    const t = ns(T0 + 1000);
    const forms: Array<[string, string | null, Record<string, string>]> = [
      ['bearer_jwt', `Bearer ${writer.token}`, {}],
      ['token_jwt', `Token ${writer.token}`, {}],
      ['bearer_admin', `Bearer ${admin}`, {}],
      ['basic_password', basicAuth(writer.email, USER_PASSWORD), {}],
      ['basic_admin', basicAuth(ADMIN_EMAIL, ADMIN_PASSWORD), {}],
      ['up_password', null, { u: writer.email, p: USER_PASSWORD }],
      ['bearer_key', `Bearer ${key}`, {}],
      ['token_key', `Token ${key}`, {}],
      ['basic_key', basicAuth('anything', key), {}],
      ['basic_key_no_user', basicAuth('', key), {}],
      ['up_key', null, { u: 'anything', p: key }],
      ['p_key', null, { p: key }],
    ];
    for (const [i, [name, auth, params]] of forms.entries()) {
      written(await write('/write', { db: 'plant', ...params }, `root,auth=${name} v=${i} ${t}`, auth), name);
    }
    await expectPoints(Object.fromEntries(forms.map(([name], i) => [`root,auth=${name}.v`, [[T0 + 1000, i]]])), 'every credential form wrote');
  });

  test('the same request gets the same answer on /write and /ingest/v2/write: 401s, 403, 400s, 404s, 413, partial writes', async () => {
    const wrong = await helpers.account('root-wrong@plant.test', { orgs: [] });
    const t = ns(T0 + 2000);
    const partialBody = ['# comment', `same v=1 ${t}`, `same v= ${t}`, '', `same,k=a v=abc ${t}`, `same v=2 ${ns(T0 + 3000)}`].join('\n');
    const cases: Array<[string, number, Record<string, string>, string, string | null]> = [
      ['no credentials', 401, { db: '$db' }, `refused v=1 ${t}`, null],
      ['bearer garbage', 401, { db: '$db' }, `refused v=1 ${t}`, 'Bearer not-a-jwt'],
      ['token garbage', 401, { db: '$db' }, `refused v=1 ${t}`, 'Token not-a-jwt'],
      ['unknown API key', 401, { db: '$db' }, `refused v=1 ${t}`, `Bearer hk_${'x'.repeat(40)}`],
      ['unknown API key as Basic password', 401, { db: '$db' }, `refused v=1 ${t}`, basicAuth('anything', `hk_${'y'.repeat(40)}`)],
      ['unknown API key as p', 401, { db: '$db', p: `hk_${'z'.repeat(40)}` }, `refused v=1 ${t}`, null],
      ['wrong Basic password', 401, { db: '$db' }, `refused v=1 ${t}`, basicAuth(wrong.email, 'wrong-password')],
      ['Basic not base64', 401, { db: '$db' }, `refused v=1 ${t}`, 'Basic %%%'],
      ['u without p', 401, { db: '$db', u: writer.email }, `refused v=1 ${t}`, null],
      ['other scheme', 401, { db: '$db' }, `refused v=1 ${t}`, 'Digest abc'],
      ['read-only key', 403, { db: '$db' }, `refused v=1 ${t}`, `Bearer ${readOnlyKey}`],
      ['no grant', 403, { db: '$db' }, `refused v=1 ${t}`, `Bearer ${wrong.token}`],
      ['missing db', 400, {}, `refused v=1 ${t}`, `Bearer ${key}`],
      ['unknown client', 404, { db: 'no-such-client' }, `refused v=1 ${t}`, `Bearer ${key}`],
      ['disabled client', 404, { db: 'off' }, `refused v=1 ${t}`, `Bearer ${key}`],
      ['bad precision', 400, { db: '$db', precision: 'h' }, `refused v=1 ${t}`, `Bearer ${key}`],
      ['too large', 413, { db: '$db' }, `refused,pad=${'x'.repeat(64 * 1024)} v=1 ${t}`, `Bearer ${key}`],
      ['partial write', 400, { db: '$db' }, partialBody, `Bearer ${key}`],
      ['every line bad', 400, { db: '$db' }, 'only bad\nlines here\n', `Bearer ${key}`],
    ];
    for (const [name, status, params, body, auth] of cases) {
      const on = (db: string) => Object.fromEntries(Object.entries(params).map(([k, v]) => [k, v === '$db' ? db : v]));
      const root = await write('/write', on('plant'), body, auth);
      const prefixed = await write('/ingest/v2/write', on('plant'), body, auth);
      assert.equal(root.status, status, `${name}: ${root.text}`);
      assert.equal(typeof root.body?.error, 'string', `${name}: the 1.x error shape {"error"}: ${root.text}`);
      assert.deepEqual(answerOf(root), answerOf(prefixed), `${name}: /write answers as /ingest/v2/write`);
    }
    // Spot checks of what was compared: the statuses and messages clients rely on.
    const unauthorized = await write('/write', { db: 'plant' }, `refused v=1 ${t}`, null);
    assert.equal(unauthorized.status, 401);
    const partial = await write('/write', { db: 'plant' }, partialBody.replaceAll('same', 'same2'), `Bearer ${key}`);
    assert.equal(partial.status, 400);
    assert.match(partial.body.error, /^partial write: line 3: .+ dropped=2$/);
    await expectPoints({
      'same.v': [[T0 + 2000, 1], [T0 + 3000, 2]],
      'same2.v': [[T0 + 2000, 1], [T0 + 3000, 2]],
      'same,k=a.v': [],
      'refused.v': [],
    }, 'the good lines of the partial writes, none of the refused requests');
  });

  test('the influx CLI\'s INSERT, replayed: no Content-Type, a leading space, consistency=all, an empty rp, no timestamp', async () => {
    // What /usr/bin/influx 1.6 sends for `INSERT cpu,host=a v=1` with -username/-password (test/influx/cli.test.ts drives the CLI itself).
    const before = Date.now();
    const res = await send(svc, 'POST', '/write?consistency=all&db=plant&precision=ns&rp=', ' cli,host=a v=1.5\n', {
      headers: { 'user-agent': 'InfluxDBShell/1.6.7~rc0', 'content-type': '', authorization: basicAuth('anything', key), 'accept-encoding': 'gzip' },
    });
    const after = Date.now();
    written(res, 'the CLI\'s write');
    const qs = new URLSearchParams({ tags: 'cli,host=a.v', start: String(before - 1000), end: String(after + 1000), ...ACME });
    const got = await svc.get(`/svcapi/fast_query?${qs}`, admin);
    assert.equal(got.status, 200, got.text);
    const points = got.body['cli,host=a.v'] as Points;
    assert.equal(points.length, 1, JSON.stringify(points));
    assert.equal(points[0][1], 1.5);
    assert.ok(points[0][0] >= before && points[0][0] <= after, `the server time of the request: ${points[0][0]} in ${before}..${after}`);
  });

  test('no API key, token or password of a root /write reaches a log line', async () => {
    const t = ns(T0 + 4000);
    written(await write('/write', { db: 'plant', u: 'anything', p: key }, `logged v=1 ${t}`, null), 'p=key');
    written(await write('/write', { db: 'plant', u: writer.email, p: USER_PASSWORD }, `logged v=2 ${t}`, null), 'u/p password');
    written(await write('/write', { db: 'plant' }, `logged v=3 ${t}`, basicAuth('anything', key)), 'Basic key');
    written(await write('/write', { db: 'plant', marker: 'root-log-check' }, `logged v=4 ${t}`, `Token ${writer.token}`), 'Token jwt');
    await waitFor(() => svc.logLines.some((l) => l.includes('root-log-check')), 'the root writes were logged');
    assert.ok(svc.logLines.some((l) => l.includes('"/write"') || l.includes('/write?')), 'the root writes are in the log');
    const secrets = [key, readOnlyKey, USER_PASSWORD, ADMIN_PASSWORD, writer.token, admin, Buffer.from(`anything:${key}`).toString('base64')];
    for (const line of svc.logLines) {
      for (const s of secrets) assert.ok(!line.includes(s), `a log line holds a secret: ${line}`);
    }
  });
});
