// /ingest/v2: InfluxDB line protocol over the real service (issue 16; WIRE.md part 2 "Ingest";
// notes/ingest-decisions.md). Ping and health, the 1.x and 2.x write paths with every
// precision, value types, name mapping and escapes, scope tags and grids, every auth form,
// the partial-write contract, gzip, 413 and 429, then the clients that no one here wrote:
// @influxdata/influxdb-client (2.x), influx (node-influx, 1.x), and replays of Telegraf's
// `influxdb` and `influxdb_v2` outputs. Every point is read back with /svcapi/fast_query.
//
// One service for the file, with ingest.maxBodyBytes and ingest.rateLimitPerMinute set small
// so the 413 and 429 rules can be reached; each test uses its own ingest clients, so the
// per-client rate limit of one test never touches another.

import assert from 'node:assert/strict';
import zlib from 'node:zlib';
import { after, before, describe, test } from 'node:test';
import { HttpError, InfluxDB as InfluxDB2, Point, setLogger } from '@influxdata/influxdb-client';
import Influx from 'influx';
import { waitFor } from '../support/wait-for.js';
import { USER_PASSWORD, accountHelpers, type Account } from './accounts.js';
import { ADMIN_EMAIL, ADMIN_PASSWORD, startService, type HttpResult, type TestService } from './harness.js';
import {
  TelegrafV1,
  TelegrafV2,
  basicAuth,
  decodedBytes,
  send,
  telegrafLine,
  writePath,
  type ApiForm,
  type TelegrafMetric,
} from './influx-wire.js';

const MAX_BODY = 64 * 1024;
const RATE_LIMIT = 40;
const DAY = 86_400_000;
const T0 = Date.UTC(2026, 0, 12, 8);

interface Scope {
  organization: string;
  site: string;
  unit: string;
  grid: string;
}
type Points = Array<[number, number]>;

const ACME = { organization: 'acme', site: 'north', unit: 'boiler-1' };
const SOUTH = { organization: 'acme', site: 'south', unit: 'boiler-2' };
const EVIL = { organization: 'evil', site: 's2', unit: 'u2' };
const inGrid = (scope: Omit<Scope, 'grid'>, grid = 'default'): Scope => ({ ...scope, grid });

/** `<ms>` followed by the digits of the finer precision: exact, where ms * 1e6 as a number would not be. */
const nsOf = (ms: number, extra = '000000') => `${ms}${extra}`;

describe('/ingest/v2: InfluxDB line protocol', () => {
  let svc: TestService;
  let admin: string;
  /** Org grant on acme: covers acme/north/boiler-1 and acme/south/boiler-2, not evil. */
  let writer: Account;
  const helpers = accountHelpers(() => svc, () => admin);

  /** An ingestconfigs row as an admin creates it. */
  async function ingestClient(clientId: string, scope: Omit<Scope, 'grid'> = ACME, extra: Record<string, unknown> = {}): Promise<string> {
    return helpers.mk('ingestconfigs', { clientId, ...scope, ...extra });
  }

  /** POST a line protocol body; `auth` is the whole Authorization header (none when null). */
  function post(form: ApiForm, target: string | null, body: string | Buffer, opts: { params?: Record<string, string>; auth?: string | null; headers?: Record<string, string>; chunkBytes?: number } = {}): Promise<HttpResult> {
    const headers: Record<string, string> = { 'content-type': 'text/plain; charset=utf-8', ...opts.headers };
    const auth = opts.auth === undefined ? `Bearer ${admin}` : opts.auth;
    if (auth !== null) headers.authorization = auth;
    return send(svc, 'POST', writePath(form, target, opts.params), body, { headers, chunkBytes: opts.chunkBytes });
  }

  /** Asserts a 204 with no body. */
  function written(res: HttpResult, what: string): void {
    assert.equal(res.status, 204, `${what}: ${res.status} ${res.text}`);
    assert.equal(res.text, '', `${what}: a 204 has no body`);
  }

  /** The error of a refused write in its API form's shape: 1.x `{"error"}`, 2.x `{"code", "message"}`. */
  function refused(res: HttpResult, form: ApiForm, status: number, code: string, message: RegExp, what: string): void {
    assert.equal(res.status, status, `${what}: ${res.text}`);
    if (form === '1.x') {
      assert.equal(typeof res.body?.error, 'string', `${what}: 1.x error shape {"error"}: ${res.text}`);
      assert.match(res.body.error, message, what);
    } else {
      assert.equal(res.body?.code, code, `${what}: 2.x error shape {"code", "message"}: ${res.text}`);
      assert.equal(typeof res.body.message, 'string', `${what}: 2.x message: ${res.text}`);
      assert.match(res.body.message, message, what);
    }
  }

  /** fast_query with an explicit scope: every tag's points in [start, end]. */
  async function read(scope: Scope, tags: string[], start = T0 - DAY, end = T0 + 10 * DAY): Promise<Record<string, Points>> {
    const qs = new URLSearchParams();
    for (const t of tags) qs.append('tags', t);
    qs.set('start', String(start));
    qs.set('end', String(end));
    for (const [k, v] of Object.entries(scope)) qs.set(k, v);
    const res = await svc.get(`/svcapi/fast_query?${qs}`, admin);
    assert.equal(res.status, 200, `fast_query ${JSON.stringify(scope)} ${tags.join(' ')}: ${res.text}`);
    return res.body;
  }

  /** Asserts exactly these points per tag (Object.is on values, so -0 and rounding show). */
  async function expectPoints(scope: Scope, expected: Record<string, Points>, what: string, start?: number, end?: number): Promise<void> {
    const got = await read(scope, Object.keys(expected), start, end);
    for (const [tag, points] of Object.entries(expected)) {
      const actual = got[tag];
      assert.ok(Array.isArray(actual), `${what}: tag ${JSON.stringify(tag)} missing in ${JSON.stringify(got)}`);
      assert.equal(actual.length, points.length, `${what}: ${JSON.stringify(tag)} in ${Object.values(scope).join('/')} has ${JSON.stringify(actual)}, expected ${JSON.stringify(points)}`);
      points.forEach(([ts, v], i) => {
        assert.equal(actual[i][0], ts, `${what}: ${JSON.stringify(tag)} point ${i} timestamp`);
        assert.ok(Object.is(actual[i][1], v), `${what}: ${JSON.stringify(tag)} point ${i} value ${actual[i][1]}, expected ${v}`);
      });
    }
  }

  before(async () => {
    svc = await startService({ config: { ingest: { maxBodyBytes: MAX_BODY, rateLimitPerMinute: RATE_LIMIT } } });
    admin = await svc.adminToken();
    const acmeOrg = await helpers.mk('orgs', { name: 'acme' });
    const north = await helpers.mk('sites', { name: 'north', orgsId: acmeOrg });
    const south = await helpers.mk('sites', { name: 'south', orgsId: acmeOrg });
    await helpers.mk('units', { name: 'boiler-1', siteId: north });
    await helpers.mk('units', { name: 'boiler-2', siteId: south });
    const evilOrg = await helpers.mk('orgs', { name: 'evil' });
    await helpers.mk('units', { name: 'u2', siteId: await helpers.mk('sites', { name: 's2', orgsId: evilOrg }) });
    writer = await helpers.account('writer@plant.test', { orgs: [acmeOrg] });
    // The Influx 2.x client logs each failed write on the console; the tests look at the errors themselves.
    setLogger({ error: () => undefined, warn: () => undefined });
  });
  after(() => svc.dispose());

  test('ping (GET and HEAD) is 204 with X-Influxdb-Version, health is 200 pass; both public', async () => {
    for (const method of ['GET', 'HEAD']) {
      const ping = await send(svc, method, '/ingest/v2/ping', null);
      assert.equal(ping.status, 204, `${method} ping: ${ping.text}`);
      assert.equal(ping.text, '');
      assert.equal(typeof ping.headers['x-influxdb-version'], 'string', `${method} ping has X-Influxdb-Version`);
      assert.ok(String(ping.headers['x-influxdb-version']).length > 0);
    }
    const health = await send(svc, 'GET', '/ingest/v2/health', null);
    assert.equal(health.status, 200, health.text);
    assert.equal(typeof health.body?.version, 'string', health.text);
    const { name, message, status } = health.body;
    assert.deepEqual({ name, message, status }, { name: 'historian', message: 'ready for queries and writes', status: 'pass' });
  });

  test('every precision on both paths (ns default, us, ms, s; 1.x n and u), rounding down to ms', async () => {
    await ingestClient('prec');
    const ms = T0 + 123; // the ns and us forms carry sub-ms digits that are dropped
    const precisions: Array<[string | undefined, (ms: number) => string, (ms: number) => number]> = [
      [undefined, (t) => nsOf(t, '456789'), (t) => t],
      ['ns', (t) => nsOf(t, '999999'), (t) => t],
      ['us', (t) => `${t}999`, (t) => t],
      ['ms', (t) => `${t}`, (t) => t],
      ['s', (t) => `${Math.floor(t / 1000)}`, (t) => Math.floor(t / 1000) * 1000],
      ['n', (t) => nsOf(t, '000001'), (t) => t],
      ['u', (t) => `${t}001`, (t) => t],
    ];
    const expected: Record<ApiForm, Record<string, Points>> = { '1.x': {}, '2.x': {} };
    let k = 0;
    for (const form of ['1.x', '2.x'] as const) {
      for (const [precision, stamp, expect] of precisions) {
        if (form === '2.x' && (precision === 'n' || precision === 'u')) continue; // 1.x spellings only
        const t = ms + k * 60_000;
        const field = `p_${precision ?? 'default'}`;
        const res = await post(form, 'prec', `prec,api=${form === '1.x' ? 'v1' : 'v2'} ${field}=${k + 0.5} ${stamp(t)}\n`, { params: precision ? { precision } : {} });
        written(res, `${form} precision ${precision ?? '(none)'}`);
        expected[form][`prec,api=${form === '1.x' ? 'v1' : 'v2'}.${field}`] = [[expect(t), k + 0.5]];
        k++;
      }
    }
    await expectPoints(inGrid(ACME), { ...expected['1.x'], ...expected['2.x'] }, 'precisions');

    refused(await post('1.x', 'prec', 'prec bad=1 1\n', { params: { precision: 'h' } }), '1.x', 400, 'invalid', /precision/, '1.x precision h');
    refused(await post('2.x', 'prec', 'prec bad=1 1\n', { params: { precision: 'xs' } }), '2.x', 400, 'invalid', /precision/, '2.x precision xs');
    await expectPoints(inGrid(ACME), { 'prec.bad': [] }, 'a refused precision writes nothing');
  });

  test('a line without a timestamp takes the server time, on both paths', async () => {
    await ingestClient('now');
    for (const [i, form] of (['1.x', '2.x'] as const).entries()) {
      const before = Date.now();
      written(await post(form, 'now', `now,api=${i} f=${i + 7}\n`), `${form} no timestamp`);
      const after = Date.now();
      const got = (await read(inGrid(ACME), [`now,api=${i}.f`], before - DAY, after + DAY))[`now,api=${i}.f`];
      assert.equal(got.length, 1, `${form}: one point, got ${JSON.stringify(got)}`);
      assert.equal(got[0][1], i + 7);
      assert.ok(got[0][0] >= before && got[0][0] <= after, `${form}: timestamp ${got[0][0]} is the server time of the request (${before}..${after})`);
    }
  });

  test('value types: integers (i), unsigned (u), floats in exponent forms, booleans 1/0, string fields skipped', async () => {
    await ingestClient('types');
    const ts = nsOf(T0 + 5000);
    const ints: Array<[string, string]> = [['i', '42'], ['neg', '-42'], ['big', '-9007199254740993'], ['min', '-9223372036854775808'], ['max', '9223372036854775807'], ['zero', '0']];
    const uints: Array<[string, string]> = [['u', '42'], ['umax', '18446744073709551615'], ['uzero', '0']];
    const floats: Array<[string, string]> = [
      ['e1', '1e+20'], ['e2', '1E-5'], ['e3', '-2.5e-3'], ['e4', '6.02214076e23'], ['e5', '1e21'], ['dot', '.5'], ['trail', '5.'],
      ['plain', '-0.1'], ['sum', '0.30000000000000004'], ['tiny', '5e-324'], ['huge', '1.7976931348623157e308'], ['lead', '007.25'], ['int', '12'],
    ];
    const bools: Array<[string, string, number]> = [
      ['bt', 't', 1], ['bT', 'T', 1], ['btrue', 'true', 1], ['bTrue', 'True', 1], ['bTRUE', 'TRUE', 1],
      ['bf', 'f', 0], ['bF', 'F', 0], ['bfalse', 'false', 0], ['bFalse', 'False', 0], ['bFALSE', 'FALSE', 0],
    ];
    const body = [
      `types ${ints.map(([k, v]) => `${k}=${v}i`).join(',')} ${ts}`,
      `types ${uints.map(([k, v]) => `${k}=${v}u`).join(',')} ${ts}`,
      `types ${floats.map(([k, v]) => `${k}=${v}`).join(',')} ${ts}`,
      `types ${bools.map(([k, v]) => `${k}=${v}`).join(',')} ${ts}`,
      `types s="a string",sf=1.25,s2="with \\"quotes\\", a comma\\\\ and = sign" ${ts}`,
      `types only="strings only" ${ts}`,
    ].join('\n');
    written(await post('1.x', 'types', body), 'value types');
    const at = T0 + 5000;
    const expected: Record<string, Points> = {};
    for (const [k, v] of [...ints, ...uints, ...floats]) expected[`types.${k}`] = [[at, Number(v)]];
    for (const [k, , v] of bools) expected[`types.${k}`] = [[at, v]];
    expected['types.sf'] = [[at, 1.25]];
    for (const k of ['s', 's2', 'only']) expected[`types.${k}`] = [];
    await expectPoints(inGrid(ACME), expected, 'value types');
  });

  test('string fields are counted in /svcapi/ingest/stats', async () => {
    await ingestClient('strings');
    written(await post('2.x', 'strings', `str a="x",b="y",v=1 ${nsOf(T0)}\nstr c="z" ${nsOf(T0 + 1)}\n`), 'strings');
    const stats = await svc.get('/svcapi/ingest/stats', admin);
    assert.equal(stats.status, 200, stats.text);
    const row = stats.body.clients.find((c: Record<string, unknown>) => c.clientId === 'strings');
    assert.ok(row, `a stats row for client "strings": ${stats.text}`);
    assert.equal(row.tagGroup, 'default');
    assert.equal(row.skippedStringFields, 3);
    assert.equal(row.points, 1);
    assert.equal(row.requests, 1);
    assert.equal(row.rejectedLines, 0);
  });

  test('names: <measurement>.<field>, other tags sorted, escapes undone (WIRE example)', async () => {
    await ingestClient('names');
    const t = (s: number) => nsOf(T0 + s * 1000);
    const body = [
      `m,b=2,a=1 f=1 ${t(1)}`,
      `m,a=1,b=2 f=2 ${t(2)}`,
      `esc\\ m,x=a\\,b v=3 ${t(3)}`,
      `plc,id=ns\\=3;s\\=TT\\ 101,host=gw value=4 ${t(4)}`,
      `m2 f\\,x\\=y\\ z=5 ${t(5)}`,
      `température,pièce=salle\\ 1 °C=21.5 ${t(6)}`,
      `bare v=7 ${t(7)}`,
    ].join('\n');
    written(await post('1.x', 'names', body), 'names');
    await expectPoints(inGrid(ACME), {
      'm,a=1,b=2.f': [[T0 + 1000, 1], [T0 + 2000, 2]],
      'esc m,x=a,b.v': [[T0 + 3000, 3]],
      'plc,host=gw,id=ns=3;s=TT 101.value': [[T0 + 4000, 4]],
      'm2.f,x=y z': [[T0 + 5000, 5]],
      'température,pièce=salle 1.°C': [[T0 + 6000, 21.5]],
      'bare.v': [[T0 + 7000, 7]],
      // Neither the unsorted nor the escaped spelling is a tag of its own.
      'm,b=2,a=1.f': [],
      'esc\\ m,x=a\\,b.v': [],
    }, 'name mapping');
  });

  test('scope tags organization/site/unit/grid override the client, within the grant; outside is 403', async () => {
    await ingestClient('scoped');
    const t = nsOf(T0 + 9000);
    const body = [
      `sc,site=south,unit=boiler-2 v=1 ${t}`,
      `sc,organization=other,site=s9,unit=u9,grid=g9 v=2 ${t}`,
      `sc,grid=fast v=3 ${t}`,
      `sc,x=1 v=4 ${t}`,
    ].join('\n');
    written(await post('2.x', 'scoped', body), 'scope tags as admin');
    const at = T0 + 9000;
    await expectPoints(inGrid(SOUTH), { 'sc.v': [[at, 1]] }, 'site and unit from line tags');
    await expectPoints({ organization: 'other', site: 's9', unit: 'u9', grid: 'g9' }, { 'sc.v': [[at, 2]] }, 'every scope field from line tags');
    await expectPoints(inGrid(ACME, 'fast'), { 'sc.v': [[at, 3]] }, 'grid from a line tag');
    await expectPoints(inGrid(ACME), { 'sc,x=1.v': [[at, 4]], 'sc.v': [] }, 'the client scope otherwise');

    // A user granted the acme org: another acme site is inside, the evil org is not.
    written(await post('1.x', 'scoped', `sc2,site=south,unit=boiler-2 v=5 ${t}`, { auth: `Bearer ${writer.token}` }), 'writer inside the grant');
    await expectPoints(inGrid(SOUTH), { 'sc2.v': [[at, 5]] }, 'writer inside the grant');
    const outside = `sc2,organization=evil,site=s2,unit=u2 v=6 ${t}`;
    refused(await post('1.x', 'scoped', outside, { auth: `Bearer ${writer.token}` }), '1.x', 403, 'forbidden', /outside your access grant/, '1.x line scope outside the grant');
    refused(await post('2.x', 'scoped', outside, { auth: `Token ${writer.token}` }), '2.x', 403, 'forbidden', /outside your access grant/, '2.x line scope outside the grant');
    // A client whose own unit the caller may not reach.
    await ingestClient('evil-client', EVIL);
    refused(await post('2.x', 'evil-client', `sc2 v=7 ${t}`, { auth: `Token ${writer.token}` }), '2.x', 403, 'forbidden', /outside your access grant/, "client's unit outside the grant");
    // Nothing reached the evil org: not even the collection a first ingest would create.
    const evil = await svc.get(`/svcapi/fast_query?tags=sc2.v&start=0&end=${T0 + DAY}&${new URLSearchParams({ ...inGrid(EVIL) })}`, admin);
    assert.equal(evil.status, 404, evil.text);
    assert.match(evil.body.error, /evil\/s2\/u2\/default not found/);
  });

  test('grid: line tag, else the client row, else rp / the bucket part after "/", else default', async () => {
    await ingestClient('gridless');
    await ingestClient('gridrow', ACME, { grid: 'rowgrid' });
    const t = nsOf(T0 + 11_000);
    const at = T0 + 11_000;
    const writes: Array<[ApiForm, string, Record<string, string>, string, string]> = [
      ['1.x', 'gridless', { rp: 'fast' }, 'g1', 'fast'],
      ['2.x', 'gridless/slow', {}, 'g2', 'slow'],
      ['1.x', 'gridless', {}, 'g3', 'default'],
      ['2.x', 'gridless', {}, 'g4', 'default'],
      // node-influx sends `rp=` when no retention policy is given (querystring of undefined).
      ['1.x', 'gridless', { rp: '' }, 'g5', 'default'],
      ['1.x', 'gridrow', { rp: 'fast' }, 'g6', 'rowgrid'],
      ['2.x', 'gridrow/slow', {}, 'g7', 'rowgrid'],
      ['2.x', 'gridrow', {}, 'g8', 'rowgrid'],
    ];
    for (const [i, [form, target, params, measurement]] of writes.entries()) {
      written(await post(form, target, `${measurement} v=${i} ${t}`, { params }), `${form} ${target} ${JSON.stringify(params)}`);
    }
    written(await post('1.x', 'gridrow', `g9,grid=tagged v=9 ${t}`, { params: { rp: 'fast' } }), 'grid line tag');
    for (const [i, [form, target, params, measurement, grid]] of writes.entries()) {
      await expectPoints(inGrid(ACME, grid), { [`${measurement}.v`]: [[at, i]] }, `${form} ${target} ${JSON.stringify(params)} -> grid ${grid}`);
    }
    await expectPoints(inGrid(ACME, 'tagged'), { 'g9.v': [[at, 9]] }, 'a grid line tag beats the row and rp');
  });

  test('auth: Bearer, Token, Basic email:password and u/p query all write; missing or bad is 401 in each form\'s shape', async () => {
    await ingestClient('auth');
    // Wrong passwords count toward the login lockout (auth.lockoutFailures): each kind of bad
    // credential gets its own account, so none reaches the lockout and answers 429 instead.
    const wrongBasic = await helpers.account('wrong-basic@plant.test');
    const wrongQuery = await helpers.account('wrong-query@plant.test');
    const noPassword = await helpers.account('no-password@plant.test');
    const t = nsOf(T0 + 13_000);
    const good: Array<[string, ApiForm, string | null, Record<string, string>]> = [
      ['bearer', '1.x', `Bearer ${admin}`, {}],
      ['token', '2.x', `Token ${writer.token}`, {}],
      ['basic', '1.x', basicAuth(writer.email, USER_PASSWORD), {}],
      ['basic2', '2.x', basicAuth(ADMIN_EMAIL, ADMIN_PASSWORD), {}],
      ['query', '1.x', null, { u: writer.email, p: USER_PASSWORD }],
      ['query2', '2.x', null, { u: writer.email, p: USER_PASSWORD }],
    ];
    for (const [i, [name, form, auth, params]] of good.entries()) {
      written(await post(form, 'auth', `auth ${name}=${i} ${t}`, { auth, params }), `${name} (${form})`);
    }
    const expected: Record<string, Points> = {};
    for (const [i, [name]] of good.entries()) expected[`auth.${name}`] = [[T0 + 13_000, i]];
    await expectPoints(inGrid(ACME), expected, 'every auth form wrote');

    const bad: Array<[string, string | null, Record<string, string>]> = [
      ['missing', null, {}],
      ['bearer garbage', 'Bearer not-a-jwt', {}],
      ['token garbage', 'Token not-a-jwt', {}],
      ['basic wrong password', basicAuth(wrongBasic.email, 'wrong-password'), {}],
      ['basic unknown email', basicAuth('nobody@plant.test', USER_PASSWORD), {}],
      ['basic not base64', 'Basic %%%', {}],
      ['u/p wrong password', null, { u: wrongQuery.email, p: 'wrong-password' }],
      ['u without p', null, { u: noPassword.email }],
    ];
    for (const form of ['1.x', '2.x'] as const) {
      for (const [name, auth, params] of bad) {
        refused(await post(form, 'auth', `auth refused=1 ${t}`, { auth, params }), form, 401, 'unauthorized', /./, `${form} ${name}`);
      }
    }
    await expectPoints(inGrid(ACME), { 'auth.refused': [] }, 'no refused request wrote');
  });

  test('partial write: bad lines among good are 400 "partial write: line <n>: … dropped=<k>"; the good lines are written', async () => {
    await ingestClient('partial');
    for (const [i, form] of (['1.x', '2.x'] as const).entries()) {
      const m = `pw${i}`;
      const t = (s: number) => nsOf(T0 + s * 1000);
      const body = [
        '# a comment line counts as a line',
        `${m} v=1 ${t(1)}`,
        `${m} v= ${t(2)}`,
        '',
        `${m} v=2 ${t(3)}`,
        `${m},k=a v=abc ${t(4)}`,
        `${m} v=3 ${t(5)}`,
      ].join('\n');
      const res = await post(form, 'partial', body);
      refused(res, form, 400, 'invalid', /^partial write: line 3: .+ dropped=2$/, `${form} partial write`);
      await expectPoints(inGrid(ACME), { [`${m}.v`]: [[T0 + 1000, 1], [T0 + 3000, 2], [T0 + 5000, 3]], [`${m},k=a.v`]: [] }, `${form} good lines of a partial write`);
    }
    const allBad = await post('2.x', 'partial', 'only bad\nlines here\n');
    refused(allBad, '2.x', 400, 'invalid', /^partial write: line 1: .+ dropped=2$/, 'every line bad');
  });

  test('gzip bodies on both paths; a body that is not gzip is 400', async () => {
    await ingestClient('gz');
    for (const [i, form] of (['1.x', '2.x'] as const).entries()) {
      const lines = Array.from({ length: 50 }, (_, k) => `gz,api=${i} v=${k + 0.25} ${nsOf(T0 + k * 1000)}`).join('\n');
      written(await post(form, 'gz', zlib.gzipSync(lines), { headers: { 'content-encoding': 'gzip' } }), `${form} gzip`);
      await expectPoints(inGrid(ACME), { [`gz,api=${i}.v`]: Array.from({ length: 50 }, (_, k): [number, number] => [T0 + k * 1000, k + 0.25]) }, `${form} gzip`);
      refused(await post(form, 'gz', `gz,api=${i} bad=1 ${nsOf(T0)}`, { headers: { 'content-encoding': 'gzip' } }), form, 400, 'invalid', /gzip/i, `${form} not gzip`);
    }
    await expectPoints(inGrid(ACME), { 'gz,api=0.bad': [], 'gz,api=1.bad': [] }, 'a bad gzip body writes nothing');
  });

  test('413 above ingest.maxBodyBytes (declared, streamed, or once decoded); a body of exactly the limit is taken', async () => {
    await ingestClient('big');
    const PAD = 'x'.repeat(40);
    /** Lines `<measurement>,pad=<x…> v=<i> <ts>` of exactly `bytes` bytes in all: the last line's pad makes up the rest. */
    const bodyOf = (measurement: string, bytes: number): { text: string; fullLines: number } => {
      const line = (i: number, pad: string) => `${measurement},pad=${pad} v=${i} ${nsOf(T0 + i * 1000)}\n`;
      const lines: string[] = [];
      let size = 0;
      while (bytes - size > 2 * line(lines.length, PAD).length) {
        lines.push(line(lines.length, PAD));
        size += lines[lines.length - 1].length;
      }
      const lastPad = 'x'.repeat(bytes - size - line(lines.length, '').length);
      const text = lines.join('') + line(lines.length, lastPad);
      assert.equal(Buffer.byteLength(text), bytes);
      return { text, fullLines: lines.length + (lastPad === PAD ? 1 : 0) };
    };
    const exact = bodyOf('fits', MAX_BODY);
    written(await post('2.x', 'big', exact.text), 'a body of exactly ingest.maxBodyBytes');
    const fitsTag = `fits,pad=${PAD}.v`;
    assert.equal((await read(inGrid(ACME), [fitsTag]))[fitsTag].length, exact.fullLines, 'the lines of the exact-size body were written');

    const tooBig = bodyOf('over', MAX_BODY + 1).text;
    refused(await post('2.x', 'big', tooBig), '2.x', 413, 'request too large', /ingest\.maxBodyBytes/, '2.x Content-Length above the limit');
    refused(await post('1.x', 'big', tooBig), '1.x', 413, 'request too large', /ingest\.maxBodyBytes/, '1.x Content-Length above the limit');
    refused(await post('2.x', 'big', bodyOf('over', 3 * MAX_BODY).text, { chunkBytes: 16 * 1024 }), '2.x', 413, 'request too large', /ingest\.maxBodyBytes/, 'chunked body above the limit');
    const bomb = zlib.gzipSync(bodyOf('over', 4 * MAX_BODY).text);
    assert.ok(bomb.length < MAX_BODY, 'the gzip body itself is under the limit');
    refused(await post('2.x', 'big', bomb, { headers: { 'content-encoding': 'gzip' } }), '2.x', 413, 'request too large', /ingest\.maxBodyBytes/, 'gzip body above the limit once decoded');
    const overTag = `over,pad=${PAD}.v`;
    await expectPoints(inGrid(ACME), { [overTag]: [] }, 'no line of a refused body is written');
  });

  test('429 with Retry-After above ingest.rateLimitPerMinute, counted per client over both paths', async () => {
    await ingestClient('rate');
    await ingestClient('rate-other');
    const t = nsOf(T0 + 15_000);
    for (let i = 0; i < RATE_LIMIT; i++) {
      const form: ApiForm = i % 2 === 0 ? '1.x' : '2.x';
      written(await post(form, 'rate', `rate v=${i} ${t}`), `request ${i + 1} of ${RATE_LIMIT}`);
    }
    for (const form of ['2.x', '1.x'] as const) {
      const res = await post(form, 'rate', `rate over=1 ${t}`);
      refused(res, form, 429, 'too many requests', /./, `${form} request over the limit`);
      const retryAfter = Number(res.headers['retry-after']);
      assert.ok(Number.isInteger(retryAfter) && retryAfter >= 1 && retryAfter <= 60, `Retry-After is whole seconds within the minute: ${res.headers['retry-after']}`);
    }
    written(await post('2.x', 'rate-other', `rate v=1 ${t}`), 'another client is not limited');
    await expectPoints(inGrid(ACME), { 'rate.over': [] }, 'a rate-limited request writes nothing');
  });

  test('missing db / bucket is 400 naming it; an unknown or disabled client is 404', async () => {
    refused(await post('1.x', null, 'm v=1'), '1.x', 400, 'invalid', /\bdb\b/, '1.x without db');
    refused(await post('2.x', null, 'm v=1', { params: { org: 'x' } }), '2.x', 400, 'invalid', /\bbucket\b/, '2.x without bucket');
    refused(await post('1.x', 'no-such-client', 'm v=1'), '1.x', 404, 'not found', /ingest client "no-such-client" not found/, '1.x unknown client');
    refused(await post('2.x', 'no-such-client', 'm v=1'), '2.x', 404, 'not found', /ingest client "no-such-client" not found/, '2.x unknown client');
    await ingestClient('switched-off', ACME, { enabled: false });
    refused(await post('2.x', 'switched-off', 'm v=1'), '2.x', 404, 'not found', /"switched-off" is disabled/, 'disabled client');
  });

  test('no password or token of an ingest request (u/p query, Basic, Bearer, Token) reaches a log line', async () => {
    await ingestClient('log-check');
    const secret = 'query-password-in-the-url';
    const email = 'log-check@plant.test';
    await svc.newUser(email, secret); // no grant: its writes are 403, after the password was checked
    for (const form of ['1.x', '2.x'] as const) {
      const answers = [
        await post(form, 'log-check', `log v=1 ${nsOf(T0)}`, { auth: null, params: { u: email, p: secret } }),
        await post(form, 'log-check', `log v=2 ${nsOf(T0)}`, { auth: basicAuth(email, secret) }),
        await post(form, 'log-check', `log v=3 ${nsOf(T0)}`, { auth: `Token ${writer.token}`, params: { marker: `log-check-${form}` } }),
      ];
      assert.deepEqual(answers.map((r) => r.status), [403, 403, 204], `${form}: ${answers.map((r) => r.text).join(' ')}`);
    }
    // The log is written in batches: wait for the last request's line.
    await waitFor(() => svc.logLines.some((l) => l.includes('log-check-2.x')), 'the ingest requests were logged');
    assert.ok(svc.logLines.some((l) => l.includes('u=log-check%40plant.test')), 'the u/p requests were logged with their query');
    const secrets = [secret, USER_PASSWORD, ADMIN_PASSWORD, writer.token, admin, Buffer.from(`${email}:${secret}`).toString('base64')];
    for (const line of svc.logLines) {
      for (const s of secrets) assert.ok(!line.includes(s), `a log line holds a secret: ${line}`);
    }
  });

  // ---- clients no one here wrote -------------------------------------------------------------

  test('@influxdata/influxdb-client (2.x): points of every type and precision, gzip, read back exactly; its errors', async () => {
    await ingestClient('influx2');
    const url = `https://127.0.0.1:${svc.port}/ingest/v2`;
    const client = new InfluxDB2({ url, token: writer.token, transportOptions: { ca: svc.ca } });
    const options = { flushInterval: 0, maxRetries: 0 };
    const scope = inGrid(ACME, 'lines');

    const ns = client.getWriteApi('acme-org', 'influx2/lines', 'ns', options);
    ns.writePoint(new Point('boiler').tag('line', 'A').floatField('temp', 81.25).intField('count', 42).uintField('starts', 7).booleanField('running', true).stringField('state', 'ok').timestamp(new Date(T0 + 1000)));
    ns.writePoint(new Point('boiler').tag('line', 'A').floatField('temp', 1e21).intField('count', -3).booleanField('running', false).timestamp(nsOf(T0 + 2000, '123456')));
    ns.writePoint(new Point('boiler').tag('line', 'A').tag('zone', 'b c,d=e').floatField('temp', 1e-7).timestamp(new Date(T0 + 3000)));
    await ns.close();
    const s = client.getWriteApi('acme-org', 'influx2/lines', 's', options);
    s.writePoint(new Point('boiler_s').floatField('temp', 0.1 + 0.2).timestamp(new Date(T0 + 4000)));
    await s.close();
    const ms = client.getWriteApi('acme-org', 'influx2/lines', 'ms', { ...options, gzipThreshold: 1 });
    for (let i = 0; i < 200; i++) ms.writePoint(new Point('boiler_ms').floatField('temp', i / 8).timestamp(new Date(T0 + i)));
    await ms.close();

    await expectPoints(scope, {
      'boiler,line=A.temp': [[T0 + 1000, 81.25], [T0 + 2000, 1e21]],
      'boiler,line=A.count': [[T0 + 1000, 42], [T0 + 2000, -3]],
      'boiler,line=A.starts': [[T0 + 1000, 7]],
      'boiler,line=A.running': [[T0 + 1000, 1], [T0 + 2000, 0]],
      'boiler,line=A.state': [],
      'boiler,line=A,zone=b c,d=e.temp': [[T0 + 3000, 1e-7]],
      'boiler_s.temp': [[T0 + 4000, 0.1 + 0.2]],
      'boiler_ms.temp': Array.from({ length: 200 }, (_, i): [number, number] => [T0 + i, i / 8]),
    }, 'influxdb-client points');

    // The partial-write answer is an error to the client, not retried.
    const partial = client.getWriteApi('acme-org', 'influx2/lines', 'ms', options);
    partial.writeRecords([`pw v=1 ${T0 + 5000}`, 'pw v=', `pw v=2 ${T0 + 6000}`]);
    await assert.rejects(partial.flush(), (err: unknown) => {
      assert.ok(err instanceof HttpError, `an HttpError: ${err}`);
      assert.equal(err.statusCode, 400);
      assert.equal(err.json?.code, 'invalid');
      assert.match(err.message, /^partial write: line 2: .+ dropped=1$/);
      return true;
    });
    await partial.close();
    await expectPoints(scope, { 'pw.v': [[T0 + 5000, 1], [T0 + 6000, 2]] }, 'the good lines of the client\'s partial write');

    const stranger = new InfluxDB2({ url, token: 'not-a-jwt', transportOptions: { ca: svc.ca } }).getWriteApi('acme-org', 'influx2/lines', 'ms', options);
    stranger.writeRecord(`pw v=9 ${T0 + 7000}`);
    await assert.rejects(stranger.flush(), (err: unknown) => err instanceof HttpError && err.statusCode === 401 && err.json?.code === 'unauthorized');
    await stranger.close();
  });

  test('influx (node-influx, 1.x): writePoints with a schema, every precision and a retention policy, read back exactly; its errors', async () => {
    await ingestClient('influx1');
    const { InfluxDB, FieldType } = Influx;
    const connect = (username: string, password: string) =>
      new InfluxDB({
        host: '127.0.0.1',
        port: svc.port,
        protocol: 'https',
        path: '/ingest/v2',
        database: 'influx1',
        username,
        password,
        options: { ca: svc.ca },
        schema: [{ measurement: 'pump', tags: ['line'], fields: { flow: FieldType.FLOAT, count: FieldType.INTEGER, on: FieldType.BOOLEAN, note: FieldType.STRING } }],
      });
    const influx = connect(writer.email, USER_PASSWORD);
    const point = (ms: number, i: number) => ({ measurement: 'pump', tags: { line: 'B' }, fields: { flow: 12.5 + i, count: 3 + i, on: i % 2 === 0, note: `n${i}` }, timestamp: new Date(ms) });
    // precision n is the library's default; it sends rp= (empty) when no retention policy is given.
    await influx.writePoints([point(T0 + 1000, 0)]);
    await influx.writePoints([point(T0 + 2000, 1)], { precision: 'u' });
    await influx.writePoints([point(T0 + 3000, 2)], { precision: 'ms' });
    await influx.writePoints([point(T0 + 4000, 3)], { precision: 's' });
    await influx.writePoints([{ measurement: 'pump_rp', fields: { v: 1.5 }, timestamp: new Date(T0 + 5000) }], { precision: 'ms', retentionPolicy: 'hourly' });

    const ts = [1000, 2000, 3000, 4000].map((d) => T0 + d);
    await expectPoints(inGrid(ACME), {
      'pump,line=B.flow': ts.map((t, i): [number, number] => [t, 12.5 + i]),
      'pump,line=B.count': ts.map((t, i): [number, number] => [t, 3 + i]),
      'pump,line=B.on': ts.map((t, i): [number, number] => [t, i % 2 === 0 ? 1 : 0]),
      'pump,line=B.note': [],
    }, 'node-influx points');
    await expectPoints(inGrid(ACME, 'hourly'), { 'pump_rp.v': [[T0 + 5000, 1.5]] }, 'node-influx retention policy as the grid');

    // A line with a timestamp before storage.minTimestampMs spoils only itself.
    await assert.rejects(
      influx.writePoints([{ measurement: 'pump_pw', fields: { v: 1 }, timestamp: T0 + 6000 }, { measurement: 'pump_pw', fields: { v: 2 }, timestamp: 5 }], { precision: 'ms' }),
      (err: Error & { res?: { statusCode?: number } }) => {
        assert.equal(err.res?.statusCode, 400, String(err));
        assert.match(err.message, /partial write: line 2: .+ dropped=1/);
        return true;
      },
    );
    await expectPoints(inGrid(ACME), { 'pump_pw.v': [[T0 + 6000, 1]] }, 'the good line of node-influx\'s partial write');
    await assert.rejects(connect('nobody-influx@plant.test', 'wrong-password').writePoints([point(T0 + 7000, 9)], { precision: 'ms' }), (err: Error & { res?: { statusCode?: number } }) => err.res?.statusCode === 401);
  });

  // ---- Telegraf replays -------------------------------------------------------------------------

  /** What a gateway's Telegraf collects each second: OPC UA nodes (value and quality) and a Modbus register set. */
  function plantMetrics(startMs: number, seconds: number): TelegrafMetric[] {
    const out: TelegrafMetric[] = [];
    for (let s = 0; s < seconds; s++) {
      const timeMs = startMs + s * 1000;
      for (let n = 1; n <= 5; n++) {
        const name = `TT-10${n}`;
        out.push({ name: 'opcua', tags: { id: `ns=3;s=${name}`, host: 'gw-01' }, fields: [['Quality', 'OK (0x0)'], [name, Math.round((20 + n + Math.sin(s / 10)) * 1000) / 1000]], timeMs });
      }
      out.push({ name: 'modbus', tags: { host: 'gw-01', name: 'Boiler', slave_id: '1', type: 'holding_register' }, fields: [['PT-201', Math.round(s * 37.5) / 1000], ['Counter', BigInt(s * 3)]], timeMs });
    }
    return out;
  }

  /** The historian tags and points the metrics map to (string fields skipped). */
  function expectedOf(metrics: TelegrafMetric[]): Record<string, Points> {
    const out: Record<string, Points> = {};
    for (const m of metrics) {
      const series = [m.name, ...Object.keys(m.tags).sort().map((k) => `${k}=${m.tags[k]}`)].join(',');
      for (const [field, v] of m.fields) {
        if (typeof v === 'string') continue;
        (out[`${series}.${field}`] ??= []).push([m.timeMs, typeof v === 'boolean' ? Number(v) : Number(v)]);
      }
    }
    for (const points of Object.values(out)) points.sort((a, b) => a[0] - b[0]);
    return out;
  }

  test('Telegraf influxdb output replay: CREATE DATABASE at connect, gzip batches with Basic auth and rp; all values read back', async () => {
    await ingestClient('telegraf-v1');
    const metrics = plantMetrics(T0 + DAY, 150); // 900 metrics
    const telegraf = new TelegrafV1(svc, { database: 'telegraf-v1', retentionPolicy: 'fast', username: writer.email, password: USER_PASSWORD });
    const created = await telegraf.connect();
    assert.ok(created.status < 500, `CREATE DATABASE is refused without a 5xx (Telegraf only logs it): ${created.status} ${created.text}`);
    // metric_batch_size = 300: each batch well under ingest.maxBodyBytes, since this output drops a batch on any 4xx.
    for (let at = 0; at < metrics.length; at += 300) {
      const batch = metrics.slice(at, at + 300);
      assert.ok(decodedBytes(batch) < MAX_BODY);
      const res = await telegraf.write(batch);
      assert.equal(res.status, 204, `batch at ${at}: ${JSON.stringify(res)}`);
    }
    assert.equal(telegraf.requests.length, 3);
    assert.match(telegraf.requests[0].path, /^\/ingest\/v2\/write\?db=telegraf-v1&rp=fast$/);
    const expected = expectedOf(metrics);
    assert.equal(Object.keys(expected).length, 7);
    assert.ok(Object.keys(expected).includes('opcua,host=gw-01,id=ns=3;s=TT-101.TT-101'), Object.keys(expected).join(' '));
    await expectPoints(inGrid(ACME, 'fast'), { ...expected, 'opcua,host=gw-01,id=ns=3;s=TT-101.Quality': [] }, 'Telegraf influxdb output');

    // A batch above the limit: 413 in the 1.x shape, nothing of it written (Telegraf logs and drops it).
    const oversize = plantMetrics(T0 + 2 * DAY, 200).map((m) => ({ ...m, name: 'opcua_big' }));
    assert.ok(decodedBytes(oversize) > MAX_BODY);
    const res = await telegraf.write(oversize);
    assert.equal(res.status, 413, JSON.stringify(res));
    assert.match(String((res.body as { error?: string }).error), /ingest\.maxBodyBytes/);
    await expectPoints(inGrid(ACME, 'fast'), { 'opcua_big,host=gw-01,id=ns=3;s=TT-101.TT-101': [] }, 'the refused batch', T0 + 2 * DAY, T0 + 3 * DAY);
  });

  test('Telegraf influxdb_v2 output replay: Token auth, gzip, a batch above ingest.maxBodyBytes split in halves on 413; all values read back', async () => {
    await ingestClient('telegraf-v2');
    const metrics = plantMetrics(T0 + 3 * DAY, 500); // 3000 metrics: three batches of metric_batch_size 1000
    const telegraf = new TelegrafV2(svc, { bucket: 'telegraf-v2/opc', organization: 'plant', token: writer.token });
    for (let at = 0; at < metrics.length; at += 1000) {
      const batch = metrics.slice(at, at + 1000);
      // Telegraf splits once: the batch must be over the limit and each half under it.
      assert.ok(decodedBytes(batch) > MAX_BODY && decodedBytes(batch.slice(0, 500)) <= MAX_BODY && decodedBytes(batch.slice(500)) <= MAX_BODY, 'batch sizes for one split');
      const failed = await telegraf.write(batch);
      assert.equal(failed, null, `batch at ${at}: ${JSON.stringify(failed)}`);
    }
    assert.deepEqual(telegraf.requests.map((r) => [r.lines, r.status]), [[1000, 413], [500, 204], [500, 204], [1000, 413], [500, 204], [500, 204], [1000, 413], [500, 204], [500, 204]]);
    assert.equal(telegraf.requests[0].path, '/ingest/v2/api/v2/write?bucket=telegraf-v2%2Fopc&org=plant');
    assert.equal((telegraf.requests[0].body as { code?: string }).code, 'request too large');
    const expected = expectedOf(metrics);
    await expectPoints(inGrid(ACME, 'opc'), expected, 'Telegraf influxdb_v2 output', T0 + 3 * DAY, T0 + 4 * DAY);
    assert.equal(Object.values(expected).reduce((n, p) => n + p.length, 0), 3500);
    assert.ok(telegrafLine(metrics[0]).startsWith('opcua,host=gw-01,id=ns\\=3;s\\=TT-101 Quality="OK (0x0)",TT-101='), telegrafLine(metrics[0]));
  });
});
