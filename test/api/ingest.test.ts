// The classic ingest routes (issue 16), checked from the contract alone: SPEC "Ingest" and
// "Limits", WIRE part 2 "Ingest" and the lead's decisions for issue 16 (notes/ingest-decisions.md).
// Two services: one with a small ingest.maxBodyBytes (1 MiB) for most rules, one with the default
// 10 MiB, a storage request ring of 1 MiB (smaller than the bodies it must take whole) and a rate
// limit of 5 requests a minute. Every write is read back with GET /svcapi/fast_query.

import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { prng } from '../support/prng.js';
import { startService, type HttpResult, type TestService } from './harness.js';
import {
  gzipped,
  hsw1Body,
  jsonBody,
  jsonText,
  msgpackBody,
  uploadWithoutEnd,
  type Payload,
} from './ingest-support.js';
import { M, Plant, collectionIdOf, enc, nextTs, type Scope } from './monitor-support.js';

const MiB = 1 << 20;
const DAY = 86_400_000;
const T0 = Date.UTC(2026, 0, 10);
const ORG = 'acme';
const SITE = 'north';
type Points = Array<[number, number]>;

interface ClientRow {
  clientId: string;
  organization: string;
  site: string;
  unit: string;
  grid?: string;
  enabled?: boolean;
}

/** Calls bound to one service and its admin token. */
function ingestHelpers(svcRef: () => TestService, adminRef: () => string) {
  const ingestPath = (client: string, group: string, backfill = false) => `/ingest/${backfill ? 'backfill/' : ''}${enc(client)}/${enc(group)}`;
  const ingest = (token: string | undefined, client: string, group: string, p: Payload, backfill = false): Promise<HttpResult> =>
    svcRef().request('POST', ingestPath(client, group, backfill), {
      rawBody: p.bytes,
      token,
      headers: { 'content-type': p.contentType, ...(p.contentEncoding ? { 'content-encoding': p.contentEncoding } : {}) },
    });
  const scopeOf = (unit: string, grid: string): Scope => ({ organization: ORG, site: SITE, unit, grid });
  const query = async (scope: Scope, tags: string[], start: number, end: number, token = adminRef()): Promise<Record<string, Points>> => {
    const params = [...tags.map((t) => `tags=${enc(t)}`), `start=${start}`, `end=${end}`, ...Object.entries(scope).map(([k, v]) => `${k}=${enc(v)}`)];
    const res = await svcRef().get(`/svcapi/fast_query?${params.join('&')}`, token);
    assert.equal(res.status, 200, `fast_query ${collectionIdOf(scope)} ${tags.join(',')}: ${res.text.slice(0, 300)}`);
    return res.body;
  };
  const collectionStatus = async (scope: Scope) => (await svcRef().get(`/svcapi/collection/${enc(collectionIdOf(scope))}`, adminRef())).status;
  const addClient = async (row: ClientRow) => {
    const res = await svcRef().post('/svcapi/ingestconfigs', row, adminRef());
    assert.equal(res.status, 200, `ingestconfigs ${row.clientId}: ${res.text}`);
  };
  const stats = async (token: string) => {
    const res = await svcRef().get('/svcapi/ingest/stats', token);
    assert.equal(res.status, 200, `ingest/stats: ${res.text}`);
    return res.body as { since: number; clients: any[] };
  };
  return { ingestPath, ingest, scopeOf, query, collectionStatus, addClient, stats };
}

const assertAccepted = (res: HttpResult, points: number, what: string) => {
  assert.equal(res.status, 200, `${what}: ${res.text.slice(0, 300)}`);
  assert.deepEqual(res.body, { success: true, points }, what);
};

/** 200 {success: false, error} as /svcapi/write answers a well-formed body it cannot accept. */
const assertRefusedInBody = (res: HttpResult, pattern: RegExp, what: string) => {
  assert.equal(res.status, 200, `${what}: ${res.text.slice(0, 300)}`);
  assert.equal(res.body?.success, false, `${what}: ${res.text.slice(0, 300)}`);
  assert.equal(typeof res.body.error, 'string', what);
  assert.match(res.body.error, pattern, what);
};

// ---------------------------------------------------------------- body shapes

interface ShapeCase {
  name: string;
  payload: Payload;
  points: number;
  expected: Record<string, Points>;
}

/** Every body WIRE accepts on ingest, each with the points it holds, around `t`. */
function bodyShapes(t: number): ShapeCase[] {
  const tagKeyed = { tags: { A: [[t + 2000, 1.5], [t, -2.25]], B: [[t + 1000, 0.1 + 0.2]] } };
  const tagKeyedExpected = { A: [[t, -2.25], [t + 2000, 1.5]] as Points, B: [[t + 1000, 0.1 + 0.2]] as Points };
  const rows = [
    { ts: t, values: { A: 1, B: 2 } },
    { ts: t + 1000, values: { A: 3 } },
    { ts: t + 2000, values: { B: null, A: -4.125 } },
  ];
  const rowsExpected = { A: [[t, 1], [t + 1000, 3], [t + 2000, -4.125]] as Points, B: [[t, 2]] as Points };
  return [
    { name: 'tag keyed JSON', payload: jsonBody(tagKeyed), points: 3, expected: tagKeyedExpected },
    {
      name: 'columnar JSON',
      payload: jsonBody({ timestamps: [t, t + 1000, t + 2000], columns: { A: [1, null, 3], B: [null, 2.5, null] } }),
      points: 3,
      expected: { A: [[t, 1], [t + 2000, 3]], B: [[t + 1000, 2.5]] },
    },
    { name: 'tag keyed msgpack', payload: msgpackBody(tagKeyed), points: 3, expected: tagKeyedExpected },
    {
      name: 'columnar msgpack',
      payload: msgpackBody({ timestamps: [t, t + 1000], columns: { A: [null, 6.5], B: [1e-7, 8] } }),
      points: 3,
      expected: { A: [[t + 1000, 6.5]], B: [[t, 1e-7], [t + 1000, 8]] },
    },
    {
      name: 'HSW1 binary',
      payload: hsw1Body({}, [t, t + 1000, t + 2000], [
        { name: 'A', values: [1.25, NaN, -3] },
        { name: 'B', values: [NaN, 1e-7, NaN] },
      ]),
      points: 3,
      expected: { A: [[t, 1.25], [t + 2000, -3]], B: [[t + 1000, 1e-7]] },
    },
    {
      name: 'a single row',
      payload: jsonBody({ ts: t, values: { A: 7.5, B: null, C: -1 } }),
      points: 2,
      expected: { A: [[t, 7.5]], B: [], C: [[t, -1]] },
    },
    { name: 'an array of rows', payload: jsonBody(rows), points: 4, expected: rowsExpected },
    { name: 'rows in msgpack', payload: msgpackBody(rows), points: 4, expected: rowsExpected },
    { name: 'a single row in msgpack', payload: msgpackBody({ ts: t, values: { A: 0.1 + 0.2 } }), points: 1, expected: { A: [[t, 0.1 + 0.2]], B: [] } },
  ];
}

const slug = (name: string) => name.replace(/[^a-z0-9]+/gi, '-').toLowerCase();

// ---------------------------------------------------------------- service 1

describe('ingest routes (ingest.maxBodyBytes 1 MiB)', () => {
  let svc: TestService;
  let admin: string;
  let plant: Plant;
  const h = ingestHelpers(() => svc, () => admin);
  const { ingest, scopeOf, query, collectionStatus, addClient } = h;
  const units: Record<string, string> = {};
  /** The unit of every client made here, to check what a non-admin's stats show. */
  const clientUnit: Record<string, string> = {};
  const client = async (clientId: string, unit: string, extra: Partial<ClientRow> = {}) => {
    await addClient({ clientId, organization: ORG, site: SITE, unit, ...extra });
    clientUnit[clientId] = unit;
  };

  before(async () => {
    svc = await startService({ config: { storage: { shards: 2 }, ingest: { maxBodyBytes: MiB } } });
    admin = await svc.adminToken();
    plant = new Plant(() => svc, () => admin);
    for (const unit of ['boiler-1', 'boiler-2', 'boiler-3']) units[unit] = await plant.unitOf(scopeOf(unit, 'x'));
    await client('plc-1', 'boiler-1');
    await client('plc-2', 'boiler-2');
    await client('plc-fixed', 'boiler-1', { grid: 'fixed' });
    await client('plc-off', 'boiler-1', { enabled: false });
    await client('plc-on', 'boiler-2', { enabled: true });
    await client('plc-mon', 'boiler-3');
    await client('stats-a', 'boiler-1');
    await client('stats-b', 'boiler-2');
  });
  after(() => svc?.dispose());

  test('GET /ingest/health answers {status: "ok"} without a token', async () => {
    const res = await svc.get('/ingest/health');
    assert.equal(res.status, 200, res.text);
    assert.deepEqual(res.body, { status: 'ok' });
  });

  test('two ingestconfigs rows with the same clientId: 409 naming it', async () => {
    // The decisions say "Two rows with the same clientId: 409 naming it" without saying when:
    // either the second row is refused, or ingest through that clientId is.
    await client('plc-dup', 'boiler-1');
    const second = await svc.post('/svcapi/ingestconfigs', { clientId: 'plc-dup', organization: ORG, site: SITE, unit: 'boiler-2' }, admin);
    const res = second.status === 409 ? second : await ingest(admin, 'plc-dup', 'dup', jsonBody({ ts: T0, values: { D: 1 } }));
    assert.equal(res.status, 409, res.text);
    assert.match(res.body.error, /plc-dup/);
    assert.equal(await collectionStatus(scopeOf('boiler-1', 'dup')), 404, 'nothing was written');
    assert.equal(await collectionStatus(scopeOf('boiler-2', 'dup')), 404, 'nothing was written');
  });

  for (const backfill of [false, true]) {
    const route = backfill ? 'backfill' : 'live';
    for (const shape of bodyShapes(T0)) {
      test(`${route}: ${shape.name} is accepted, creates the collection org/site/unit/<tag_group> and reads back exactly`, async () => {
        const group = `${route}-${slug(shape.name)}`;
        const scope = scopeOf('boiler-1', group);
        assert.equal(await collectionStatus(scope), 404, 'no collection before the first ingest');
        assertAccepted(await ingest(admin, 'plc-1', group, shape.payload, backfill), shape.points, `${route} ${shape.name}`);
        assert.equal(await collectionStatus(scope), 200, 'the ingest created the collection');
        assert.deepEqual(await query(scope, Object.keys(shape.expected), T0 - DAY, T0 + DAY), shape.expected);
      });
    }
  }

  test('a client row with a grid writes into that grid, whatever the tag_group segment', async () => {
    const shape = bodyShapes(T0)[0];
    assertAccepted(await ingest(admin, 'plc-fixed', 'segment-ignored', shape.payload), shape.points, 'plc-fixed');
    assert.equal(await collectionStatus(scopeOf('boiler-1', 'fixed')), 200);
    assert.equal(await collectionStatus(scopeOf('boiler-1', 'segment-ignored')), 404, 'no collection named after the segment');
    assert.deepEqual(await query(scopeOf('boiler-1', 'fixed'), Object.keys(shape.expected), T0 - DAY, T0 + DAY), shape.expected);
  });

  test('an explicitly enabled client ingests', async () => {
    assertAccepted(await ingest(admin, 'plc-on', 'enabled', jsonBody({ ts: T0, values: { E: 1 } })), 1, 'plc-on');
    assert.deepEqual(await query(scopeOf('boiler-2', 'enabled'), ['E'], T0, T0), { E: [[T0, 1]] });
  });

  test('unknown client: 404 naming it; disabled client: 404 saying so; on both routes', async () => {
    for (const backfill of [false, true]) {
      const unknown = await ingest(admin, 'no-such-client', 'g', jsonBody({ ts: T0, values: { U: 1 } }), backfill);
      assert.equal(unknown.status, 404, unknown.text);
      assert.match(unknown.body.error, /no-such-client/);
      assert.match(unknown.body.error, /not found/);
      const disabled = await ingest(admin, 'plc-off', 'g', jsonBody({ ts: T0, values: { U: 1 } }), backfill);
      assert.equal(disabled.status, 404, disabled.text);
      assert.match(disabled.body.error, /plc-off/);
      assert.match(disabled.body.error, /disabled/);
    }
    assert.equal(await collectionStatus(scopeOf('boiler-1', 'g')), 404, 'a disabled client wrote nothing');
  });

  test('a row of the wrong shape is 400 naming the row and the key; nothing of the body is written', async () => {
    const group = 'bad-shape';
    const scope = scopeOf('boiler-1', group);
    assertAccepted(await ingest(admin, 'plc-1', group, jsonBody({ ts: T0, values: { OK: 1 } })), 1, 'the collection exists');
    const cases: Array<[string, Payload, RegExp[]]> = [
      ['another key in row 2', jsonBody([{ ts: T0, values: { R1: 1 } }, { ts: T0 + 1, values: { R1: 2 } }, { ts: T0 + 2, values: { R1: 3 }, extra: 1 }]), [/\b2\b/, /extra/]],
      ['values not an object', jsonBody([{ ts: T0, values: { R2: 1 } }, { ts: T0 + 1, values: 5 }]), [/\b1\b/, /values/]],
      ['ts missing in row 0', jsonBody([{ values: { R3: 1 } }, { ts: T0, values: { R3: 2 } }]), [/\b0\b/, /\bts\b/]],
      ['another key, msgpack rows', msgpackBody([{ ts: T0, values: { R4: 1 } }, { ts: T0 + 1, values: { R4: 2 }, unit2: 'x' }]), [/\b1\b/, /unit2/]],
    ];
    for (const [what, payload, patterns] of cases) {
      const res = await ingest(admin, 'plc-1', group, payload);
      assert.equal(res.status, 400, `${what}: ${res.text}`);
      assert.equal(typeof res.body?.error, 'string', what);
      for (const p of patterns) assert.match(res.body.error, p, what);
    }
    assert.deepEqual(await query(scope, ['R1', 'R2', 'R3', 'R4'], 0, T0 + DAY), { R1: [], R2: [], R3: [], R4: [] });
  });

  test('a value that is not finite, or a bad timestamp: 200 success false, and none of the body is written', async () => {
    const group = 'not-finite';
    const scope = scopeOf('boiler-1', group);
    assertAccepted(await ingest(admin, 'plc-1', group, jsonBody({ ts: T0, values: { OK: 1 } })), 1, 'the collection exists');
    const cases: Array<[string, Payload, RegExp]> = [
      ['Infinity in the last of msgpack rows', msgpackBody([{ ts: T0, values: { NF1: 1 } }, { ts: T0 + 1000, values: { NF1: Infinity } }]), /NF1/],
      ['-Infinity in HSW1', hsw1Body({}, [T0, T0 + 1000], [{ name: 'NF2', values: [1, -Infinity] }]), /NF2/],
      ['1e999 in tag keyed JSON', jsonText(`{"tags": {"NF3": [[${T0}, 1], [${T0 + 1000}, 1e999]]}}`), /NF3/],
      ['NaN in tag keyed msgpack', msgpackBody({ tags: { NF4: [[T0, 1], [T0 + 1000, NaN]] } }), /NF4/],
      ['a timestamp in epoch seconds', jsonBody({ tags: { NF5: [[T0, 1], [Math.floor(T0 / 1000), 2]] } }), /NF5/],
      ['a row with a string value', jsonBody([{ ts: T0, values: { NF6: 1 } }, { ts: T0 + 1000, values: { NF6: 'high' } }]), /NF6/],
    ];
    for (const backfill of [false, true]) {
      for (const [what, payload, pattern] of cases) assertRefusedInBody(await ingest(admin, 'plc-1', group, payload, backfill), pattern, `${backfill ? 'backfill' : 'live'}: ${what}`);
    }
    const tags = ['NF1', 'NF2', 'NF3', 'NF4', 'NF5', 'NF6'];
    assert.deepEqual(await query(scope, tags, 0, T0 + DAY), Object.fromEntries(tags.map((t) => [t, []])));
  });

  test('isolation: another unit\'s grant, a read-only account and a scope override outside the grant are 403; no token 401; nothing written', async () => {
    const group = 'iso';
    const scope1 = scopeOf('boiler-1', group);
    const scope2 = scopeOf('boiler-2', group);
    // Both collections exist (made by the admin's ingest), so "nothing written" is read from them.
    assertAccepted(await ingest(admin, 'plc-1', group, jsonBody({ ts: T0, values: { BASE: 1 } })), 1, 'admin into boiler-1');
    assertAccepted(await ingest(admin, 'plc-2', group, jsonBody({ ts: T0, values: { BASE: 2 } })), 1, 'admin into boiler-2');

    const operator = await plant.account('operator@ingest.test', 'read-write', [units['boiler-1']]);
    const stranger = await plant.account('stranger@ingest.test', 'read-write', [units['boiler-2']]);
    const viewer = await plant.account('viewer@ingest.test', 'read-only', [units['boiler-1']]);
    const row = (tag: string) => jsonBody({ ts: T0 + 1000, values: { [tag]: 5 } });

    assertAccepted(await ingest(operator.token, 'plc-1', group, row('MINE')), 1, 'the operator ingests into the unit it is granted');
    for (const backfill of [false, true]) {
      const other = await ingest(stranger.token, 'plc-1', group, row('X-STRANGER'), backfill);
      assert.equal(other.status, 403, `a grant on boiler-2 ingesting through a boiler-1 client: ${other.text}`);
      assert.match(other.body.error, /outside your access grant/);
      assert.match(other.body.error, /acme\/north\/boiler-1\/iso/);
      const readOnly = await ingest(viewer.token, 'plc-1', group, row('X-VIEWER'), backfill);
      assert.equal(readOnly.status, 403, `read-only account: ${readOnly.text}`);
      const override = await ingest(operator.token, 'plc-1', group, jsonBody({ unit: 'boiler-2', tags: { 'X-OVERRIDE': [[T0 + 1000, 5]] } }), backfill);
      assert.equal(override.status, 403, `body scope override to boiler-2: ${override.text}`);
      assert.match(override.body.error, /acme\/north\/boiler-2\/iso/);
      const overrideBinary = await ingest(operator.token, 'plc-1', group, hsw1Body({ unit: 'boiler-2' }, [T0 + 1000], [{ name: 'X-OVERRIDE', values: [5] }]), backfill);
      assert.equal(overrideBinary.status, 403, `HSW1 scope override to boiler-2: ${overrideBinary.text}`);
      const noToken = await ingest(undefined, 'plc-1', group, row('X-ANON'), backfill);
      assert.equal(noToken.status, 401, noToken.text);
      const badToken = await ingest('not-a-token', 'plc-1', group, row('X-ANON'), backfill);
      assert.equal(badToken.status, 401, badToken.text);
    }
    const refused = ['X-STRANGER', 'X-VIEWER', 'X-OVERRIDE', 'X-ANON'];
    const none = Object.fromEntries(refused.map((t) => [t, []]));
    assert.deepEqual(await query(scope1, refused, 0, T0 + DAY), none);
    assert.deepEqual(await query(scope2, refused, 0, T0 + DAY), none);
    assert.deepEqual(await query(scope1, ['MINE'], 0, T0 + DAY), { MINE: [[T0 + 1000, 5]] });
  });

  test('a scope override inside the grant writes where the body says (field by field)', async () => {
    const operator = await plant.account('override@ingest.test', 'read-write', [units['boiler-1']]);
    const res = await ingest(operator.token, 'plc-1', 'iso-base', jsonBody({ grid: 'overridden', tags: { OV: [[T0, 3.5]] } }));
    assertAccepted(res, 1, 'grid override');
    assert.deepEqual(await query(scopeOf('boiler-1', 'overridden'), ['OV'], T0, T0), { OV: [[T0, 3.5]] });
    assert.equal(await collectionStatus(scopeOf('boiler-1', 'iso-base')), 404, 'the tag_group segment was overridden');
  });

  test('an org or site grant covers the client\'s unit', async () => {
    const orgs = (await svc.get(`/svcapi/orgs/findOne?filter=${enc(JSON.stringify({ where: { name: ORG } }))}`, admin)).body;
    const sites = (await svc.get(`/svcapi/sites/findOne?filter=${enc(JSON.stringify({ where: { name: SITE } }))}`, admin)).body;
    const grants: Array<[string, { orgs: string[]; sites: string[]; units: string[] }]> = [
      ['org-grant@ingest.test', { orgs: [orgs.id], sites: [], units: [] }],
      ['site-grant@ingest.test', { orgs: [], sites: [sites.id], units: [] }],
    ];
    for (const [email, grant] of grants) {
      await svc.newUser(email, 'grant-password-1');
      const user = (await svc.get(`/svcapi/users/findOne?filter=${enc(JSON.stringify({ where: { email } }))}`, admin)).body;
      const profile = await svc.post('/svcapi/userprofiles', { usersId: user.id, accessAllowed: grant }, admin);
      assert.equal(profile.status, 200, profile.text);
      const token = await svc.login(email, 'grant-password-1');
      assertAccepted(await ingest(token, 'plc-2', 'wide-grant', jsonBody({ ts: T0, values: { [email]: 1 } })), 1, email);
    }
  });

  test('gzip bodies are accepted on both routes; corrupt gzip is 400; gzip inflating above ingest.maxBodyBytes is 413', async () => {
    const group = 'gzip';
    const scope = scopeOf('boiler-1', group);
    for (const backfill of [false, true]) {
      for (const shape of bodyShapes(T0)) {
        const shapeGroup = `gz-${backfill ? 'backfill' : 'live'}-${slug(shape.name)}`;
        assertAccepted(await ingest(admin, 'plc-1', shapeGroup, gzipped(shape.payload), backfill), shape.points, `gzip ${shapeGroup}`);
        assert.deepEqual(await query(scopeOf('boiler-1', shapeGroup), Object.keys(shape.expected), T0 - DAY, T0 + DAY), shape.expected, `gzip ${shapeGroup}`);
      }
    }
    assertAccepted(await ingest(admin, 'plc-1', group, jsonBody({ ts: T0, values: { OK: 1 } })), 1, 'the collection exists');

    const good = gzipped(jsonBody({ tags: { GZ: [[T0, 1]] } }));
    const corrupt: Array<[string, Buffer]> = [
      ['not gzip at all', Buffer.from('{"tags": {"GZ": [[1768003200000, 1]]}}')],
      ['truncated', good.bytes.subarray(0, good.bytes.length - 6)],
      ['a flipped byte in the deflate stream', Buffer.from(good.bytes.map((b, i) => (i === 14 ? b ^ 0xff : b)))],
    ];
    for (const [what, bytes] of corrupt) {
      const res = await ingest(admin, 'plc-1', group, { bytes, contentType: 'application/json', contentEncoding: 'gzip' });
      assert.equal(res.status, 400, `${what}: ${res.text}`);
      assert.equal(typeof res.body?.error, 'string', what);
    }

    // Valid JSON: one point and 2 MiB of white space, about 2 KiB once compressed.
    const bomb = gzipped(jsonText(`{"tags": {"GZ": [[${T0}, 1]]}${' '.repeat(2 * MiB)}}`));
    assert.ok(bomb.bytes.length < 64 * 1024, `the compressed body is small (${bomb.bytes.length} bytes)`);
    for (const backfill of [false, true]) {
      const res = await ingest(admin, 'plc-1', group, bomb, backfill);
      assert.equal(res.status, 413, res.text);
      assert.match(res.body.error, /ingest\.maxBodyBytes/);
    }
    assert.deepEqual(await query(scope, ['GZ'], 0, T0 + DAY), { GZ: [] });
  });

  test('413 naming ingest.maxBodyBytes: from Content-Length before the body is sent, and while a chunked body streams', async () => {
    for (const backfill of [false, true]) {
      const urlPath = h.ingestPath('plc-1', 'too-big', backfill);
      const announced = await uploadWithoutEnd(svc, urlPath, { token: admin, contentLength: MiB + 1 });
      assert.equal(announced.status, 413, JSON.stringify(announced.body));
      assert.equal(announced.sentBytes, 0, 'refused from the headers alone');
      assert.match(announced.body?.error, /ingest\.maxBodyBytes/);

      // 64 KiB chunks of a JSON body, 1 MiB + 128 KiB in all, and the body never ends.
      const chunk = Buffer.alloc(64 * 1024, ' ');
      const chunks = [Buffer.from(`{"tags": {"BIG": [[${T0}, 1]]}`), ...Array.from({ length: 18 }, () => chunk)];
      const streamed = await uploadWithoutEnd(svc, urlPath, { token: admin, chunks });
      assert.equal(streamed.status, 413, JSON.stringify(streamed.body));
      assert.match(streamed.body?.error, /ingest\.maxBodyBytes/);
    }
    const health = await svc.get('/ingest/health');
    assert.equal(health.status, 200, 'the service still answers');
    assert.equal(await collectionStatus(scopeOf('boiler-1', 'too-big')), 404, 'nothing was written');
  });

  test('a token that ingested stops working for ingest as soon as its user is deleted', async () => {
    const user = await plant.account('cached@ingest.test', 'read-write', [units['boiler-1']]);
    for (const v of [1, 2]) assertAccepted(await ingest(user.token, 'plc-1', 'cache', jsonBody({ ts: T0 + v, values: { TC: v } })), 1, `ingest ${v}`);
    assertAccepted(await ingest(user.token, 'plc-1', 'cache', jsonBody({ ts: T0 + 3, values: { TC: 3 } }), true), 1, 'backfill');
    const deleted = await svc.post('/svcapi/admin/user/delete', { email: user.email }, admin);
    assert.equal(deleted.status, 200, deleted.text);
    const live = await ingest(user.token, 'plc-1', 'cache', jsonBody({ ts: T0 + 4, values: { TC: 4 } }));
    assert.equal(live.status, 401, `the deleted user's cached token: ${live.text}`);
    const backfill = await ingest(user.token, 'plc-1', 'cache', jsonBody({ ts: T0 + 5, values: { TC: 5 } }), true);
    assert.equal(backfill.status, 401, `the deleted user's cached token on backfill: ${backfill.text}`);
    assert.deepEqual(await query(scopeOf('boiler-1', 'cache'), ['TC'], T0, T0 + DAY), { TC: [[T0 + 1, 1], [T0 + 2, 2], [T0 + 3, 3]] });
  });

  test('backfill into a sealed day merges with what the day held', async () => {
    const group = 'sealed';
    const scope = scopeOf('boiler-1', group);
    const day = T0 + 3 * DAY;
    const live: Points = Array.from({ length: 24 }, (_, i) => [day + i * 3_600_000, i]);
    assertAccepted(await ingest(admin, 'plc-1', group, jsonBody({ tags: { S1: live } })), live.length, 'the day\'s points');
    const sealed = await svc.post('/svcapi/seal_now', { collection: collectionIdOf(scope) }, admin);
    assert.equal(sealed.body?.success, true, sealed.text);
    assert.ok(sealed.body.sealedDays >= 1, sealed.text);
    const dir = path.join(svc.dataDir, 'ts', ORG, SITE, 'boiler-1', group);
    assert.ok(fs.readdirSync(dir).some((f) => f.startsWith('sealed-')), `a sealed day file in ${fs.readdirSync(dir).join(',')}`);

    const late: Points = Array.from({ length: 24 }, (_, i) => [day + i * 3_600_000 + 1_800_000, 100 + i]);
    const rows = late.map(([ts, v]) => ({ ts, values: { S1: v, S2: -v } }));
    assertAccepted(await ingest(admin, 'plc-1', group, jsonBody(rows), true), 2 * late.length, 'backfill into the sealed day');
    const override = await ingest(admin, 'plc-1', group, msgpackBody({ tags: { S1: [[day, 999.5]] } }), true);
    assertAccepted(override, 1, 'backfill over an existing point');

    const merged = [...live, ...late].sort((a, b) => a[0] - b[0]).map(([ts, v]): [number, number] => [ts, ts === day ? 999.5 : v]);
    const got = await query(scope, ['S1', 'S2'], day, day + DAY - 1);
    assert.deepEqual(got.S1, merged);
    assert.deepEqual(got.S2, late.map(([ts, v]) => [ts, -v]));
  });

  test('backfilled values beyond a monitor rule\'s limits open and close no alarm; the same values through live ingest do', async () => {
    const group = 'mon';
    const scope = scopeOf('boiler-3', group);
    const id = collectionIdOf(scope);
    const row = (v: number) => jsonBody({ ts: nextTs(), values: { 'HI-BF': v } });
    const firstTs = nextTs();
    assertAccepted(await ingest(admin, 'plc-mon', group, jsonBody({ ts: firstTs, values: { 'HI-BF': 100 } })), 1, 'live, normal');
    const enabled = await svc.request('PUT', `${M}/collections/${enc(id)}/enable`, { body: { tick_rate_ms: 150 }, token: admin });
    assert.equal(enabled.status, 200, enabled.text);
    await plant.heartbeat(scope);
    const rule = await plant.rule({ collection_id: id, tag: 'HI-BF', limHi: 500, notify: false });
    await plant.tickPassed(scope);

    assertAccepted(await ingest(admin, 'plc-mon', group, row(600), true), 1, 'backfill above limHi');
    await plant.tickPassed(scope);
    await plant.tickPassed(scope);
    assert.deepEqual(await plant.ruleEvents(rule), [], 'a backfilled value above limHi opens nothing');

    assertAccepted(await ingest(admin, 'plc-mon', group, row(600), false), 1, 'live above limHi');
    const event = await plant.untilEvent(rule, 'a live value above limHi opens an event');
    assert.equal(event.status, 'active');
    assert.equal(event.value, 600);

    assertAccepted(await ingest(admin, 'plc-mon', group, row(100), true), 1, 'backfill back to normal');
    await plant.tickPassed(scope);
    await plant.tickPassed(scope);
    const still = await plant.ruleEvents(rule);
    assert.equal(still.length, 1);
    assert.equal(still[0].status, 'active', 'a backfilled normal value resolves nothing');

    assertAccepted(await ingest(admin, 'plc-mon', group, row(100), false), 1, 'live back to normal');
    await plant.untilEvent(rule, 'a live normal value resolves the event', (e) => e.id === event.id && e.status === 'resolved');
  });

  test('GET /svcapi/ingest/stats counts per client and tag group; a non-admin sees only clients of units it can reach', async () => {
    const startedBefore = Date.now();
    assertAccepted(await ingest(admin, 'stats-a', 'ga', jsonBody({ tags: { S: [[T0, 1], [T0 + 1, 2], [T0 + 2, 3]] } })), 3, 'stats-a ga 1');
    assertAccepted(await ingest(admin, 'stats-a', 'ga', jsonBody([{ ts: T0 + 3, values: { S: 4, T: 5 } }]), true), 2, 'stats-a ga 2 (backfill)');
    const bad = await ingest(admin, 'stats-a', 'ga', jsonBody([{ ts: T0, values: { S: 1 }, bad: true }]));
    assert.equal(bad.status, 400, bad.text);
    assertAccepted(await ingest(admin, 'stats-a', 'gb', jsonBody({ ts: T0, values: { S: 1 } })), 1, 'stats-a gb');
    assertAccepted(await ingest(admin, 'stats-b', 'gc', jsonBody({ timestamps: [T0, T0 + 1], columns: { S: [1, 2], T: [3, 4] } })), 4, 'stats-b gc');
    const now = Date.now();

    const all = await h.stats(admin);
    assert.equal(typeof all.since, 'number');
    assert.ok(all.since <= now, `since ${all.since}`);
    assert.ok(Array.isArray(all.clients));
    const row = (clientId: string, tagGroup: string) => {
      const found = all.clients.filter((c) => c.clientId === clientId && c.tagGroup === tagGroup);
      assert.equal(found.length, 1, `one stats row for ${clientId}/${tagGroup} in ${JSON.stringify(all.clients)}`);
      return found[0];
    };
    const ga = row('stats-a', 'ga');
    assert.deepEqual(Object.keys(ga).sort(), ['clientId', 'lastSeen', 'points', 'rateLimited', 'rejectedLines', 'rejectedRequests', 'requests', 'skippedStringFields', 'tagGroup']);
    assert.equal(ga.points, 5);
    assert.ok(ga.requests >= 2 && ga.requests <= 3, `requests ${ga.requests}`);
    assert.equal(ga.rejectedRequests, 1);
    assert.equal(ga.rateLimited, 0);
    assert.equal(ga.rejectedLines, 0);
    assert.equal(ga.skippedStringFields, 0);
    assert.ok(typeof ga.lastSeen === 'number' && ga.lastSeen >= startedBefore && ga.lastSeen <= now, `lastSeen ${ga.lastSeen}`);
    const gb = row('stats-a', 'gb');
    assert.equal(gb.requests, 1);
    assert.equal(gb.points, 1);
    assert.equal(gb.rejectedRequests, 0);
    const gc = row('stats-b', 'gc');
    assert.equal(gc.requests, 1);
    assert.equal(gc.points, 4);

    const operator = await plant.account('stats-viewer@ingest.test', 'read-write', [units['boiler-1']]);
    const mine = await h.stats(operator.token);
    assert.ok(mine.clients.some((c) => c.clientId === 'stats-a' && c.tagGroup === 'ga'), 'the client of its unit shows');
    for (const c of mine.clients) assert.equal(clientUnit[c.clientId], 'boiler-1', `a client of another unit shows: ${JSON.stringify(c)}`);
    assert.ok(!mine.clients.some((c) => c.clientId === 'stats-b'));

    const nobody = await svc.newUser('no-grant@ingest.test', 'no-grant-password-1');
    assert.deepEqual((await h.stats(nobody)).clients, []);
    assert.equal((await svc.get('/svcapi/ingest/stats')).status, 401);
  });
});

// ---------------------------------------------------------------- service 2

describe('ingest routes (default ingest.maxBodyBytes, storage ring 1 MiB, 5 requests a minute)', () => {
  let svc: TestService;
  let admin: string;
  let plant: Plant;
  const h = ingestHelpers(() => svc, () => admin);
  const { ingest, scopeOf, query, addClient } = h;
  const UNIT = 'boiler-1';

  before(async () => {
    svc = await startService({ config: { storage: { shards: 2, requestRingBytes: MiB }, ingest: { rateLimitPerMinute: 5 } } });
    admin = await svc.adminToken();
    plant = new Plant(() => svc, () => admin);
    await plant.unitOf(scopeOf(UNIT, 'x'));
    for (const clientId of ['big', 'big-bad', 'limit', 'rl', 'rl-other']) await addClient({ clientId, organization: ORG, site: SITE, unit: UNIT });
  });
  after(() => svc?.dispose());

  /** Columnar JSON of `tags` × `rows` values with 3 decimals, between 8 MiB and 10 MB. */
  const bigColumnar = (prefix: string, seed: number) => {
    const rnd = prng(seed);
    const rows = 25_000;
    const timestamps = Array.from({ length: rows }, (_, i) => T0 + 5 * DAY + i * 1000);
    const columns: Record<string, number[]> = {};
    for (let t = 0; t < 40; t++) columns[`${prefix}-${String(t).padStart(2, '0')}`] = timestamps.map(() => (Math.round(rnd() * 2e6) - 1e6) / 1000);
    return { timestamps, columns };
  };

  test('Content-Length above the default 10 MiB is 413 naming ingest.maxBodyBytes, before the body is sent', async () => {
    for (const backfill of [false, true]) {
      const res = await uploadWithoutEnd(svc, h.ingestPath('limit', 'g', backfill), { token: admin, contentLength: 10 * MiB + 1 });
      assert.equal(res.status, 413, JSON.stringify(res.body));
      assert.equal(res.sentBytes, 0);
      assert.match(res.body?.error, /ingest\.maxBodyBytes/);
    }
  });

  test('a body of about 9 MB, larger than the storage request ring, is accepted whole and reads back exactly', async () => {
    const body = bigColumnar('L', 1);
    const payload = jsonBody(body);
    assert.ok(payload.bytes.length > 8 * MiB && payload.bytes.length < 10_000_000, `body of ${payload.bytes.length} bytes`);
    const tags = Object.keys(body.columns);
    assertAccepted(await ingest(admin, 'big', 'big', payload), tags.length * body.timestamps.length, 'the large body');
    const scope = scopeOf(UNIT, 'big');
    for (let i = 0; i < tags.length; i += 10) {
      const part = tags.slice(i, i + 10);
      const got = await query(scope, part, T0, T0 + 10 * DAY);
      for (const tag of part) {
        const expected = body.timestamps.map((ts, r) => [ts, body.columns[tag][r]]);
        assert.equal(got[tag].length, expected.length, `${tag}: every point`);
        assert.deepEqual(got[tag], expected, tag);
      }
    }
  });

  test('a body of about 9 MB with one value that is not finite in its last row writes nothing', async () => {
    const body = bigColumnar('Q', 2);
    const tags = Object.keys(body.columns);
    const lastTag = tags[tags.length - 1];
    const SENTINEL = 123456.789;
    body.columns[lastTag][body.timestamps.length - 1] = SENTINEL;
    const text = JSON.stringify(body);
    const at = text.lastIndexOf(String(SENTINEL));
    assert.equal(text.indexOf(String(SENTINEL)), at, 'the sentinel is the only one');
    const payload = jsonText(text.slice(0, at) + '1e999' + text.slice(at + String(SENTINEL).length));
    assert.ok(payload.bytes.length > 8 * MiB && payload.bytes.length < 10_000_000, `body of ${payload.bytes.length} bytes`);
    assertAccepted(await ingest(admin, 'big-bad', 'big-bad', jsonBody({ ts: T0, values: { OK: 1 } })), 1, 'the collection exists');
    assertRefusedInBody(await ingest(admin, 'big-bad', 'big-bad', payload), new RegExp(lastTag), 'the large body with a bad last value');
    const got = await query(scopeOf(UNIT, 'big-bad'), tags.slice(0, 3).concat(lastTag), T0, T0 + 10 * DAY);
    for (const tag of Object.keys(got)) assert.deepEqual(got[tag], [], `${tag}: nothing written`);
  });

  test('over ingest.rateLimitPerMinute a client gets 429 with Retry-After, live and backfill together; another client is not affected', async () => {
    const body = (v: number) => jsonBody({ ts: T0 + v, values: { RL: v } });
    for (let i = 0; i < 5; i++) assertAccepted(await ingest(admin, 'rl', 'g', body(i), i >= 3), 1, `request ${i + 1} of 5`);
    let limited = 0;
    for (const backfill of [false, true]) {
      const res = await ingest(admin, 'rl', 'g', body(10), backfill);
      assert.equal(res.status, 429, `request over the limit (${backfill ? 'backfill' : 'live'}): ${res.text}`);
      limited++;
      const retryAfter = res.headers['retry-after'];
      assert.equal(typeof retryAfter, 'string', 'a Retry-After header');
      assert.match(retryAfter as string, /^\d+$/, `Retry-After in seconds: ${retryAfter}`);
      assert.ok(Number(retryAfter) >= 1 && Number(retryAfter) <= 60, `Retry-After ${retryAfter}`);
      assert.equal(typeof res.body?.error, 'string');
    }
    assertAccepted(await ingest(admin, 'rl-other', 'g', body(20)), 1, 'another client');
    assert.deepEqual(await query(scopeOf(UNIT, 'g'), ['RL'], T0, T0 + DAY), {
      RL: [[T0, 0], [T0 + 1, 1], [T0 + 2, 2], [T0 + 3, 3], [T0 + 4, 4], [T0 + 20, 20]],
    });
    const stats = await h.stats(admin);
    const rl = stats.clients.filter((c) => c.clientId === 'rl');
    assert.equal(rl.reduce((n, c) => n + c.rateLimited, 0), limited, JSON.stringify(rl));
    assert.equal(rl.reduce((n, c) => n + c.points, 0), 5);
    const other = stats.clients.filter((c) => c.clientId === 'rl-other');
    assert.equal(other.reduce((n, c) => n + c.rateLimited, 0), 0);
  });
});
