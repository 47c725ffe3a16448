// The asset-hierarchy connector (issue 18), from WIRE.md part 2 "Asset-hierarchy connector (PI
// Web API)" and README "Asset-hierarchy connector": browsing, auth, TLS, timeouts and upstream
// failures, who may aim the service where, saved connections with their secrets, and backfills
// (exact values, skipped counts, no alarms, grants, bad bodies, resuming after a restart).
//
// Everything runs against the real service (harness.ts) and the PI Web API simulator
// (test/support/pi-simulator.ts) on loopback with its own CA; what the simulator's model holds is
// the expected answer, and what it saw (requests, headers, query parameters) shows how the
// service asked. One simulator serves the whole file; the browse and backfill tests share one
// service, and the allowedHosts and resume tests start their own.

import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import Database from 'better-sqlite3';
import { PiSimulator, plantModel, type AttributeNode, type ElementNode, type ModelNode, type ServerNode } from '../support/pi-simulator.js';
import { waitFor } from '../support/wait-for.js';
import { accountHelpers, filterQuery } from './accounts.js';
import { startService, tempDir, type TestService } from './harness.js';
import { Plant, collectionIdOf } from './monitor-support.js';
import {
  PI_PASSWORD,
  PI_TOKEN,
  PI_USER,
  WRONG_PASSWORD,
  allSecretForms,
  assertError,
  assertNoSecret,
  assertSamePoints,
  basicConnection,
  basicForms,
  browseOk,
  connector,
  filesHolding,
  finished,
  goodNumericPoints,
  jobOf,
  project,
  readTag,
  untilJob,
  type JobRecord,
  type Scope,
} from './connector-support.js';

const plant = plantModel();
const P = plant.paths;
/** Start of the model's history: the big series has a value each second from here. */
const T0 = Date.UTC(2024, 0, 1);
const BIG_COUNT = 100_000;
/** The last value of the big series: backfill ranges are inclusive at both ends. */
const BIG_END = T0 + (BIG_COUNT - 1) * 1000;
/** Every minute-of-day series (1,440 values) lies in [T0, DAY_END]. */
const DAY_END = T0 + 1439 * 60_000;
/** A second rotated password for saved-connection tests. */
const ROTATED_PASSWORD = `${PI_PASSWORD}-rotated`;

const SERVER_KEYS = ['web_id', 'name', 'path', 'description', 'is_connected'] as const;
const BASE_KEYS = ['web_id', 'name', 'path', 'description'] as const;
const CHILD_KEYS = [...BASE_KEYS, 'template_name', 'has_children'] as const;
const ATTRIBUTE_KEYS = [...BASE_KEYS, 'type', 'units'] as const;

let sim: PiSimulator;

before(async () => {
  sim = await PiSimulator.start(
    { auth: { basic: { username: PI_USER, password: PI_PASSWORD }, bearer: { token: PI_TOKEN } } },
    plant.spec,
  );
});
after(() => sim?.stop());

const node = <T>(p: string) => sim.node(p) as T;
const webId = (p: string) => sim.webIdOf(p);
const serverJson = (s: ServerNode) => ({ web_id: sim.model.webId(s), name: s.name, path: s.path, description: s.description, is_connected: s.isConnected });
const baseJson = (n: ModelNode) => ({
  web_id: sim.model.webId(n),
  name: n.name,
  path: n.path,
  description: n.description,
});
const childJson = (e: ElementNode) => ({ ...baseJson(e), template_name: e.templateName, has_children: e.elements.length > 0 });
const attributeJson = (a: AttributeNode) => ({ ...baseJson(a), type: a.type, units: a.units?.name ?? '' });

/** Requests the simulator saw from index `from` on. */
const seenSince = (from: number) => sim.requests.slice(from);

describe('connector: browse, auth, TLS, upstream failures, saved connections, backfill', () => {
  let svc: TestService;
  let admin: string;
  let rows: Plant;
  let helpers: ReturnType<typeof accountHelpers>;
  /** A read-write account with no grant, and a read-only one. */
  let rw: { email: string; token: string };
  let viewer: { email: string; token: string };
  /** A saved Basic connection to the simulator, left as made (tests that change one make their own). */
  let savedId: string;

  const saveConnection = async (body: Record<string, unknown>): Promise<string> => {
    const res = await svc.request('POST', '/svcapi/connections', { body, token: admin });
    assert.equal(res.status, 200, `create connection: ${res.text}`);
    return String(res.body.id);
  };
  const connectionRow = async (id: string, token = admin) => {
    const res = await svc.get(`/svcapi/connections/${id}`, token);
    assert.equal(res.status, 200, `connections/${id}: ${res.text}`);
    return res.body;
  };
  const backfillJobs = async (): Promise<number> => {
    const res = await svc.get('/svcapi/process-log?kind=backfill&limit=1000', admin);
    assert.equal(res.status, 200, res.text);
    return res.body.total_count as number;
  };

  before(async () => {
    // One day per write: a backfill page that crosses midnight (the big series does) must be
    // split into writes the store takes (storage.maxDaysPerWrite), not refused.
    svc = await startService({ config: { storage: { maxDaysPerWrite: 1 } } });
    admin = await svc.adminToken();
    rows = new Plant(() => svc, () => admin);
    helpers = accountHelpers(() => svc, () => admin);
    const a = await helpers.account('pi-rw@historian.test');
    rw = { email: a.email, token: a.token };
    viewer = await rows.account('pi-viewer@historian.test', 'read-only', []);
    savedId = await saveConnection({ name: 'plant-pi', ...basicConnection(sim) });
  });
  after(() => svc?.dispose());

  // ---------------------------------------------------------------- browse

  test('list_asset_servers: every server with is_connected, as the PI Web API has them, asked with selectedFields and X-Requested-With', async () => {
    const from = sim.requests.length;
    const items = await browseOk(svc, admin, 'list_asset_servers', basicConnection(sim));
    assert.deepEqual(project(items, SERVER_KEYS), sim.model.servers.map(serverJson));
    assert.deepEqual(
      items.map((i) => [i.name, i.is_connected]),
      [['PIAF01', true], ['PIAF02-DR', false]],
    );
    const seen = seenSince(from);
    assert.ok(seen.some((r) => /\/piwebapi\/assetservers$/i.test(r.path)), `GET /assetservers was asked: ${seen.map((r) => r.path)}`);
    for (const r of seen) {
      assert.equal(r.method, 'GET', r.path);
      assert.ok(r.headers['x-requested-with'], `X-Requested-With on ${r.path}`);
      assert.equal(r.headers.authorization, `Basic ${Buffer.from(`${PI_USER}:${PI_PASSWORD}`).toString('base64')}`, `Basic auth on ${r.path}`);
      const fields = r.query.get('selectedFields') ?? '';
      for (const f of ['WebId', 'Name', 'Path', 'IsConnected']) assert.match(fields, new RegExp(`(^|;)Items\\.${f}(;|$)`), `selectedFields of ${r.path}: ${fields}`);
    }
  });

  test('list_databases of a server; a server PI cannot reach is 502 naming the upstream status', async () => {
    const server = node<ServerNode>(P.server);
    const items = await browseOk(svc, admin, 'list_databases', { ...basicConnection(sim), web_id: webId(P.server) });
    assert.deepEqual(project(items, BASE_KEYS), server.databases.map(baseJson));
    assert.deepEqual(items.map((i) => i.name), ['Plant', 'Sandbox']);

    const down = await connector(svc, admin, 'list_databases', { ...basicConnection(sim), web_id: webId(P.disconnectedServer) });
    assertError(down, 502, /upstream 502/, 'databases of a disconnected server');
  });

  test('list_children of a database and of an element: template_name and has_children; a leaf has none', async () => {
    const database = await browseOk(svc, admin, 'list_children', { ...basicConnection(sim), web_id: webId(P.database), is_database: true });
    const db = node<{ elements: ElementNode[] }>(P.database);
    assert.deepEqual(project(database, CHILD_KEYS), db.elements.map(childJson));
    assert.deepEqual(
      database.map((i) => [i.name, i.template_name, i.has_children]),
      [['Site North', 'Site', true], ['Site South', 'Site', true], ['Utilities', '', true]],
    );

    const site = await browseOk(svc, admin, 'list_children', { ...basicConnection(sim), web_id: webId(P.site), is_database: false });
    assert.deepEqual(project(site, CHILD_KEYS), node<ElementNode>(P.site).elements.map(childJson));
    assert.deepEqual(site.map((i) => i.name), ['Area 1', 'Area 2', 'Area 3']);

    // The path of a child leads on: Area 1 > Unit 1 > its equipment, which has no children.
    const unit = await browseOk(svc, admin, 'list_children', { ...basicConnection(sim), web_id: webId(`${P.site}\\Area 1\\Unit 1`), is_database: false });
    assert.deepEqual(unit.map((i) => [i.path, i.template_name, i.has_children]), [
      [`${P.site}\\Area 1\\Unit 1\\Compressor`, 'Compressor', false],
      [P.pump, 'Pump', false],
      [`${P.site}\\Area 1\\Unit 1\\Pump 2`, 'Pump', false],
    ]);
    const leaf = await connector(svc, admin, 'list_children', { ...basicConnection(sim), web_id: webId(P.pump), is_database: false });
    assert.equal(leaf.status, 200, leaf.text);
    assert.deepEqual(leaf.body, { items: [], total: 0 });
  });

  test('list_children of an element with 2,500 children reads every page (startIndex/maxCount, selectedFields); total counts them all', async () => {
    const wide = node<ElementNode>(P.wideElement);
    assert.equal(wide.elements.length, 2500, 'the model has 2,500 children');
    const from = sim.requests.length;
    const items = await browseOk(svc, admin, 'list_children', { ...basicConnection(sim), web_id: webId(P.wideElement), is_database: false });
    assert.equal(items.length, 2500);
    assert.deepEqual(project(items, CHILD_KEYS), wide.elements.map(childJson));
    assert.equal(items[0].name, 'Sensor 00001');
    assert.equal(items[2499].name, 'Sensor 02500');
    assert.equal(new Set(items.map((i) => i.web_id)).size, 2500, 'no child twice');

    const pages = seenSince(from).filter((r) => r.path.toLowerCase().endsWith('/elements'));
    assert.equal(pages.length, 3, `three pages: ${pages.map((r) => r.query.toString())}`);
    assert.deepEqual(pages.map((r) => Number(r.query.get('startIndex'))), [0, 1000, 2000], 'paged by startIndex');
    for (const r of pages) {
      assert.ok(Number(r.query.get('maxCount')) > 0, `maxCount on ${r.query}`);
      const fields = (r.query.get('selectedFields') ?? '').split(';');
      assert.ok(fields.length > 1, `selectedFields sent: ${r.query}`);
      for (const f of ['Items.WebId', 'Items.Name', 'Items.Path', 'Items.TemplateName', 'Items.HasChildren']) assert.ok(fields.includes(f), `${f} in ${fields}`);
      assert.ok(!fields.includes('Items.Links'), 'only mapped fields are asked for');
    }
  });

  test('list_attributes: type and units, every page of an element with 1,200 attributes', async () => {
    const pump = await browseOk(svc, admin, 'list_attributes', { ...basicConnection(sim), web_id: webId(P.pump) });
    assert.deepEqual(project(pump, ATTRIBUTE_KEYS), node<ElementNode>(P.pump).attributes.map(attributeJson));
    const byName = Object.fromEntries(pump.map((a) => [a.name, a]));
    assert.equal(byName.Flow.type, 'Double');
    assert.equal(byName.Flow.units, 'cubic meter per hour');
    assert.equal(byName.Flow.path, P.bigSeries);
    assert.equal(byName.Flow.web_id, webId(P.bigSeries));
    assert.equal(byName.Status.type, 'EnumerationValue');
    assert.equal(byName['Run Hours'].type, 'Int32');

    const from = sim.requests.length;
    const wide = await browseOk(svc, admin, 'list_attributes', { ...basicConnection(sim), web_id: webId(P.wideAttributesElement) });
    assert.equal(wide.length, 1200);
    assert.deepEqual(project(wide, ATTRIBUTE_KEYS), node<ElementNode>(P.wideAttributesElement).attributes.map(attributeJson));
    const pages = seenSince(from).filter((r) => r.path.toLowerCase().endsWith('/attributes'));
    assert.deepEqual(pages.map((r) => Number(r.query.get('startIndex'))), [0, 1000]);
  });

  // ---------------------------------------------------------------- auth and TLS

  test('auth: Basic with the right password 200, a wrong one 502 "upstream 401" without the password; Bearer; anonymous', async () => {
    const wrong = await connector(svc, admin, 'list_asset_servers', basicConnection(sim, { password: WRONG_PASSWORD }));
    assertError(wrong, 502, /upstream 401/, 'wrong Basic password');
    assertNoSecret(wrong.text, basicForms(PI_USER, WRONG_PASSWORD), 'the 401 answer');

    let from = sim.requests.length;
    await browseOk(svc, admin, 'list_asset_servers', { base_url: sim.baseUrl, auth: 'bearer', token: PI_TOKEN, ca_pem: sim.caPem });
    assert.ok(seenSince(from).every((r) => r.headers.authorization === `Bearer ${PI_TOKEN}`), 'Bearer sent');
    const badToken = await connector(svc, admin, 'list_asset_servers', { base_url: sim.baseUrl, auth: 'bearer', token: `${PI_TOKEN}-no`, ca_pem: sim.caPem });
    assertError(badToken, 502, /upstream 401/, 'wrong Bearer token');
    assertNoSecret(badToken.text, [PI_TOKEN], 'the 401 answer');

    // Anonymous against a server that wants credentials: its 401; against one that allows it: 200, no Authorization sent.
    const anonymous = { base_url: sim.baseUrl, auth: 'anonymous', ca_pem: sim.caPem };
    assertError(await connector(svc, admin, 'list_asset_servers', anonymous), 502, /upstream 401/, 'anonymous to a server that wants credentials');
    sim.setAuth({});
    try {
      from = sim.requests.length;
      await browseOk(svc, admin, 'list_asset_servers', anonymous);
      const noAuth = { base_url: sim.baseUrl, ca_pem: sim.caPem }; // auth defaults to anonymous
      await browseOk(svc, admin, 'list_asset_servers', noAuth);
      assert.ok(seenSince(from).length >= 2);
      for (const r of seenSince(from)) {
        assert.equal(r.headers.authorization, undefined, 'no Authorization header when anonymous');
        assert.ok(r.headers['x-requested-with'], 'X-Requested-With on anonymous requests too');
      }
    } finally {
      sim.setAuth({ basic: { username: PI_USER, password: PI_PASSWORD }, bearer: { token: PI_TOKEN } });
    }
  });

  test('TLS: verified by default (the self-signed simulator is refused, naming TLS); ca_pem of its CA works; another CA is refused; verify_tls false works', async () => {
    const from = sim.requests.length;
    const { ca_pem: _ca, ...noCa } = basicConnection(sim);
    assertError(await connector(svc, admin, 'list_asset_servers', noCa), 502, /TLS/, 'default verification of a self-signed server');
    assertError(await connector(svc, admin, 'list_asset_servers', { ...noCa, verify_tls: true }), 502, /TLS/, 'verify_tls true without its CA');
    assertError(await connector(svc, admin, 'list_asset_servers', { ...noCa, ca_pem: svc.ca }), 502, /TLS/, 'ca_pem of another CA');
    assert.equal(seenSince(from).length, 0, 'no request reached the simulator through an unverified connection');

    await browseOk(svc, admin, 'list_asset_servers', basicConnection(sim));
    const unverified = await browseOk(svc, admin, 'list_asset_servers', { ...noCa, verify_tls: false });
    assert.equal(unverified.length, 2);
  });

  // ---------------------------------------------------------------- upstream trouble

  test('a hung upstream with timeout_ms 500 answers 502 naming the timeout, and the hung request is let go', async () => {
    sim.hang('/assetservers', 1);
    const res = await connector(svc, admin, 'list_asset_servers', basicConnection(sim, { timeout_ms: 500 }));
    assertError(res, 502, /500 ms|timeout/i, 'hung upstream');
    await waitFor(() => sim.hungCount === 0, 'the service closed the hung connection');
    await browseOk(svc, admin, 'list_asset_servers', basicConnection(sim, { timeout_ms: 500 }));
  });

  test('upstream 503, 502 and a dropped connection are 502 naming them; a failing second page fails the whole list', async () => {
    sim.failNext(1, 503, '/assetservers');
    assertError(await connector(svc, admin, 'list_asset_servers', basicConnection(sim)), 502, /upstream 503/, 'upstream 503');
    sim.failNext(1, 502, '/assetservers');
    assertError(await connector(svc, admin, 'list_asset_servers', basicConnection(sim)), 502, /upstream 502/, 'upstream 502');
    sim.resetConnections('/assetservers', 1);
    assertError(await connector(svc, admin, 'list_asset_servers', basicConnection(sim)), 502, /upstream/, 'dropped connection');

    const { base_url: _u, ...rest } = basicConnection(sim);
    assertError(await connector(svc, admin, 'list_asset_servers', { ...rest, base_url: 'https://localhost:1/piwebapi' }), 502, /upstream .*unreachable/, 'nothing listening');

    sim.failNext(1, 503, /startIndex=1000/);
    const res = await connector(svc, admin, 'list_children', { ...basicConnection(sim), web_id: webId(P.wideElement), is_database: false });
    assertError(res, 502, /upstream 503/, 'second page failing');
    sim.clearFaults();
    await browseOk(svc, admin, 'list_asset_servers', basicConnection(sim));
  });

  // ---------------------------------------------------------------- who may connect where

  test('an ad-hoc connection needs the admin role: read-write and read-only callers 403, no token 401, and nothing reaches the PI server', async () => {
    const from = sim.requests.length;
    for (const [who, token] of [['read-write', rw.token], ['read-only', viewer.token]] as const) {
      assertError(await connector(svc, token, 'list_asset_servers', basicConnection(sim)), 403, /admin/, `${who} ad-hoc browse`);
      // (read-only callers may be turned away earlier, as for every write: any 403 will do)
      assertError(
        await connector(svc, token, 'backfill', { ...basicConnection(sim), attributes: [{ web_id: webId(P.integer), tag: 'X' }], organization: 'o', site: 's', unit: 'u', grid: 'g', start: T0, end: DAY_END }),
        403,
        who === 'read-write' ? /admin/ : /./,
        `${who} ad-hoc backfill`,
      );
    }
    assert.equal((await connector(svc, undefined, 'list_asset_servers', basicConnection(sim))).status, 401);
    assert.equal(seenSince(from).length, 0, 'the service did not connect for them');
  });

  // ---------------------------------------------------------------- saved connections

  test('saved connections: created by admin, password and token read back "********" everywhere, sealed in SQLite, usable by connection_id', async () => {
    const created = await svc.request('POST', '/svcapi/connections', { body: { name: 'bearer-pi', base_url: sim.baseUrl, auth: 'bearer', token: PI_TOKEN, ca_pem: sim.caPem }, token: admin });
    assert.equal(created.status, 200, created.text);
    assert.equal(created.body.token, '********', 'the create answer masks the token');
    const bearerId = String(created.body.id);

    const basic = await connectionRow(savedId);
    assert.equal(basic.password, '********');
    assert.equal(basic.username, PI_USER);
    assert.equal(basic.base_url, sim.baseUrl);
    assert.equal((await connectionRow(bearerId)).token, '********');

    // Every way of reading rows back.
    const answers = [
      await svc.get('/svcapi/connections', admin),
      await svc.get(`/svcapi/connections/${savedId}`, admin),
      await svc.get(`/svcapi/connections/findOne?${filterQuery({ where: { name: 'plant-pi' } })}`, admin),
      await svc.get(`/svcapi/connections?${filterQuery({ fields: ['id', 'password', 'token'] })}`, admin),
      await svc.get('/svcapi/connections', rw.token),
      await svc.get(`/svcapi/connections/${bearerId}`, rw.token),
    ];
    for (const res of answers) {
      assert.equal(res.status, 200, res.text);
      assertNoSecret(res.text, allSecretForms(), 'a GET /svcapi/connections answer');
    }
    const listed = answers[0].body as any[];
    assert.deepEqual(listed.filter((r) => r.password !== undefined).map((r) => r.password), listed.filter((r) => r.password !== undefined).map(() => '********'));

    // At rest: the row holds a sealed value, not the secret; the key is a private file under secrets/.
    const db = new Database(path.join(svc.dataDir, 'metadata.sqlite'), { readonly: true, fileMustExist: true });
    try {
      for (const [id, field, secret] of [[savedId, 'password', PI_PASSWORD], [bearerId, 'token', PI_TOKEN]] as const) {
        const metaData = db.prepare('SELECT meta_data FROM connections WHERE id = ?').pluck().get(Number(id)) as string;
        assert.equal(typeof metaData, 'string', `row ${id} is stored`);
        assert.ok(!metaData.includes(secret), `row ${id} does not hold the plain ${field}: ${metaData}`);
        const stored = JSON.parse(metaData)[field];
        assert.equal(typeof stored, 'string');
        assert.notEqual(stored, '********', `the ${field} itself is kept (sealed), not the mask`);
        assert.ok(stored.length > secret.length, `a sealed ${field}`);
      }
    } finally {
      db.close();
    }
    const keyFile = path.join(svc.dataDir, 'secrets', 'connections.key');
    assert.ok(fs.existsSync(keyFile), 'the key is made on first start under secrets/');
    assert.equal(fs.statSync(keyFile).mode & 0o077, 0, 'the key file is private to the service account');

    // Usable by id, by the admin and by a read-write caller.
    const from = sim.requests.length;
    await browseOk(svc, admin, 'list_asset_servers', { connection_id: savedId });
    await browseOk(svc, rw.token, 'list_databases', { connection_id: savedId, web_id: webId(P.server) });
    await browseOk(svc, rw.token, 'list_asset_servers', { connection_id: Number(bearerId) });
    const seen = seenSince(from);
    assert.ok(seen.some((r) => r.headers.authorization === `Basic ${Buffer.from(`${PI_USER}:${PI_PASSWORD}`).toString('base64')}`), 'the saved password is sent');
    assert.ok(seen.some((r) => r.headers.authorization === `Bearer ${PI_TOKEN}`), 'the saved token is sent');
  });

  test('saved connections: "********" written back keeps the secret; a new password replaces it; a sealed value is refused', async () => {
    const id = await saveConnection({ name: 'rotating-pi', ...basicConnection(sim) });
    const put = async (body: Record<string, unknown>, token = admin) => svc.request('PUT', `/svcapi/connections/${id}`, { body, token });

    // The row as read, written back with a change elsewhere.
    const row = await connectionRow(id);
    const back = await put({ ...row, description: 'written back as read' });
    assert.equal(back.status, 200, back.text);
    assert.equal(back.body.password, '********');
    await browseOk(svc, admin, 'list_asset_servers', { connection_id: id });

    // A new (wrong) password replaces the stored one: upstream refuses it; the right one again works.
    assert.equal((await put({ password: WRONG_PASSWORD })).status, 200);
    assertError(await connector(svc, admin, 'list_asset_servers', { connection_id: id }), 502, /upstream 401/, 'after a wrong password was saved');
    sim.setAuth({ basic: { username: PI_USER, password: ROTATED_PASSWORD } });
    try {
      assert.equal((await put({ password: ROTATED_PASSWORD })).status, 200);
      await browseOk(svc, admin, 'list_asset_servers', { connection_id: id });
      assert.equal((await put({ password: '********' })).status, 200);
      await browseOk(svc, admin, 'list_asset_servers', { connection_id: id });
    } finally {
      sim.setAuth({ basic: { username: PI_USER, password: PI_PASSWORD }, bearer: { token: PI_TOKEN } });
    }

    // PATCH (update-or-insert) with the mask keeps it too.
    assert.equal((await put({ password: PI_PASSWORD })).status, 200);
    const patched = await svc.request('PATCH', '/svcapi/connections', { body: { id: Number(id), password: '********', description: 'patched' }, token: admin });
    assert.equal(patched.status, 200, patched.text);
    await browseOk(svc, admin, 'list_asset_servers', { connection_id: id });

    // A sealed value cannot be planted (it would be some other row's secret).
    assertError(await put({ password: 'enc:v1:AAAAAAAAAAAAAAAA:AAAAAAAAAAAAAAAAAAAAAA==:AAAA' }), 400, /password/, 'a sealed value written');
  });

  test('saved connections: a read-write user browses by connection_id but cannot create one or change where it points or how it logs in (403)', async () => {
    const id = await saveConnection({ name: 'guarded-pi', ...basicConnection(sim) });
    const before = await connectionRow(id);
    const asRw = (method: string, url: string, body: unknown) => svc.request(method, url, { body, token: rw.token });
    const attempts: Array<[string, Promise<Awaited<ReturnType<typeof asRw>>>]> = [
      ['create', asRw('POST', '/svcapi/connections', { name: 'mine', base_url: 'https://evil.example/piwebapi' })],
      ['bulk create', asRw('POST', '/svcapi/connections/bulk', [{ name: 'mine2', base_url: 'https://evil.example/piwebapi' }])],
      ['PUT base_url', asRw('PUT', `/svcapi/connections/${id}`, { base_url: 'https://evil.example/piwebapi' })],
      ['PUT password', asRw('PUT', `/svcapi/connections/${id}`, { password: 'chosen-by-rw' })],
      ['PUT username', asRw('PUT', `/svcapi/connections/${id}`, { username: 'someone-else' })],
      ['PUT auth', asRw('PUT', `/svcapi/connections/${id}`, { auth: 'anonymous' })],
      ['PUT verify_tls', asRw('PUT', `/svcapi/connections/${id}`, { verify_tls: false })],
      ['PUT ca_pem', asRw('PUT', `/svcapi/connections/${id}`, { ca_pem: svc.ca })],
      ['PATCH base_url', asRw('PATCH', '/svcapi/connections', { id: Number(id), base_url: 'https://evil.example/piwebapi' })],
      ['update base_url', asRw('POST', `/svcapi/connections/update?where=${encodeURIComponent(JSON.stringify({ id: Number(id) }))}`, { base_url: 'https://evil.example/piwebapi' })],
    ];
    for (const [what, pending] of attempts) {
      const res = await pending;
      assert.equal(res.status, 403, `read-write ${what}: ${res.text}`);
    }
    const afterRow = await connectionRow(id);
    assert.deepEqual(afterRow, before, 'the row is unchanged');
    const listed = (await svc.get(`/svcapi/connections?${filterQuery({ where: { name: { inq: ['mine', 'mine2'] } } })}`, admin)).body;
    assert.deepEqual(listed, [], 'nothing was created');
    await browseOk(svc, rw.token, 'list_asset_servers', { connection_id: id });
  });

  test('saved connections: a read-write user may write a row back as read (password "********") with only its name changed', async () => {
    // WIRE: writing "********" back keeps the stored secret; it changes no connection field.
    const id = await saveConnection({ name: 'shared-pi', ...basicConnection(sim) });
    const row = await connectionRow(id, rw.token);
    const res = await svc.request('PUT', `/svcapi/connections/${id}`, { body: { ...row, name: 'shared-pi (renamed)' }, token: rw.token });
    assert.equal(res.status, 200, `read-write writes the row back as read: ${res.text}`);
    await browseOk(svc, rw.token, 'list_asset_servers', { connection_id: id });
  });

  test('connection_id: unknown 404; with connection fields beside it 400', async () => {
    assertError(await connector(svc, admin, 'list_asset_servers', { connection_id: 987654 }), 404, /987654|not found/, 'unknown connection_id');
    assertError(await connector(svc, rw.token, 'list_asset_servers', { connection_id: '987654' }), 404, /not found/, 'unknown connection_id (read-write)');
    assertError(await connector(svc, admin, 'list_asset_servers', { connection_id: savedId, base_url: sim.baseUrl }), 400, /base_url/, 'connection_id and base_url');
  });

  // ---------------------------------------------------------------- bad bodies

  test('bad browse and backfill bodies are 400 naming the field; nothing is started or asked upstream', async () => {
    const from = sim.requests.length;
    const jobsBefore = await backfillJobs();
    const conn = basicConnection(sim);
    const ok: Record<string, unknown> = { ...conn, attributes: [{ web_id: webId(P.integer), tag: 'BAD-BODY' }], organization: 'pi-bad', site: 's', unit: 'u', grid: 'g', start: T0, end: DAY_END };
    const { attributes: _a, ...noAttributes } = ok;
    const { organization: _o, ...noOrganization } = ok;
    const { end: _e, ...noEnd } = ok;
    const { base_url: _b, ...noBaseUrl } = ok;
    const backfillCases: Array<[string, unknown, RegExp]> = [
      ['attributes missing', noAttributes, /attributes/],
      ['attributes empty', { ...ok, attributes: [] }, /attributes/],
      ['attribute without tag', { ...ok, attributes: [{ web_id: webId(P.integer) }] }, /tag/],
      ['attribute with empty web_id', { ...ok, attributes: [{ web_id: '', tag: 'T' }] }, /web_id/],
      ['empty tag', { ...ok, attributes: [{ web_id: webId(P.integer), tag: '' }] }, /tag/],
      ['tag with a control character', { ...ok, attributes: [{ web_id: webId(P.integer), tag: 'A\u0001B' }] }, /tag/],
      ['organization missing', noOrganization, /organization/],
      ['site with a slash', { ...ok, site: 'a/b' }, /site/],
      ['unit empty', { ...ok, unit: '' }, /unit/],
      ['start not a number', { ...ok, start: '2024-01-01' }, /start/],
      ['start fractional', { ...ok, start: T0 + 0.5 }, /start/],
      ['end missing', noEnd, /end/],
      ['start after end', { ...ok, start: DAY_END + 1, end: T0 }, /start/],
      ['unknown field', { ...ok, colour: 'red' }, /colour/],
      ['timeout_ms too small', { ...ok, timeout_ms: 5 }, /timeout_ms/],
      ['auth unknown', { ...ok, auth: 'ntlm' }, /auth/],
      ['base_url not a URL', { ...ok, base_url: 'not a url' }, /base_url/],
      ['base_url not http', { ...ok, base_url: 'ftp://localhost/piwebapi' }, /base_url/],
      ['base_url with credentials', { ...ok, base_url: `https://${PI_USER}:${PI_PASSWORD}@localhost:${sim.port}/piwebapi` }, /base_url/],
      ['no connection at all', noBaseUrl, /base_url|connection_id/],
      ['basic without password', { ...ok, password: undefined }, /password/],
      ['bearer without token', { ...ok, auth: 'bearer', password: undefined, username: undefined }, /token/],
      ['verify_tls not a boolean', { ...ok, verify_tls: 'no' }, /verify_tls/],
      ['ca_pem not PEM', { ...ok, ca_pem: 'hello' }, /ca_pem/],
      ['connection_id and base_url', { ...ok, connection_id: savedId }, /connection_id|base_url/],
    ];
    for (const [what, body, field] of backfillCases) {
      const res = await connector(svc, admin, 'backfill', body);
      assertError(res, 400, field, `backfill: ${what}`);
      assertNoSecret(res.text, allSecretForms(), `backfill: ${what}`);
    }
    const browseCases: Array<[string, string, unknown, RegExp]> = [
      ['list_databases', 'web_id missing', conn, /web_id/],
      ['list_databases', 'web_id not a string', { ...conn, web_id: 7 }, /web_id/],
      ['list_children', 'is_database missing', { ...conn, web_id: webId(P.database) }, /is_database/],
      ['list_children', 'is_database not a boolean', { ...conn, web_id: webId(P.database), is_database: 'yes' }, /is_database/],
      ['list_attributes', 'web_id missing', conn, /web_id/],
      ['list_asset_servers', 'timeout_ms too large', { ...conn, timeout_ms: 10_000_000 }, /timeout_ms/],
    ];
    for (const [route, what, body, field] of browseCases) assertError(await connector(svc, admin, route, body), 400, field, `${route}: ${what}`);
    assert.equal(await backfillJobs(), jobsBefore, 'no job was started');
    assert.equal(seenSince(from).length, 0, 'nothing was asked upstream');
  });

  // ---------------------------------------------------------------- backfill

  test('backfill of 100,000 recorded values: a job with progress, then done; exactly the good numeric values come back; bad and digital-state values are counted as skipped', async () => {
    const scope: Scope = { organization: 'pi-bulk', site: 'north', unit: 'pump-1', grid: 'history' };
    const flow = sim.tally(P.bigSeries, T0, BIG_END);
    const status = sim.tally(P.enumeration, T0, BIG_END);
    assert.equal(flow.total, BIG_COUNT, 'the range holds all 100,000 values, both ends included');
    assert.ok(flow.bad > 0 && status.total > 0 && status.goodNumeric === 0, 'the model has bad values and digital states to skip');

    const from = sim.requests.length;
    sim.setLatency(60, '/recorded'); // slow enough to see the job run
    let started;
    const progress: number[] = [];
    let job: JobRecord;
    try {
      started = await connector(svc, admin, 'backfill', {
        ...basicConnection(sim),
        attributes: [
          { web_id: webId(P.bigSeries), tag: 'PI-FLOW' },
          { web_id: webId(P.enumeration), tag: 'PI-STATUS' },
        ],
        ...scope,
        start: T0,
        end: BIG_END,
      });
      assert.equal(started.status, 200, started.text);
      assert.equal(typeof started.body.job_id, 'string');
      job = await untilJob(svc, admin, started.body.job_id, finished, 'the backfill finishes', (j) => {
        if (j.status === 'running') progress.push(j.progress);
      });
    } finally {
      sim.setLatency(0);
    }
    assert.equal(job.status, 'done', `job: ${JSON.stringify(job)}`);
    assert.equal(job.kind, 'backfill');
    assert.equal(job.progress, 1);
    assert.equal(job.error, null);
    assert.ok(progress.some((p) => p > 0 && p < 1), `progress between 0 and 1 was seen while it ran: ${progress}`);
    assert.deepEqual(progress, [...progress].sort((a, b) => a - b), 'progress never goes back');
    assert.match(job.message, new RegExp(`\\b${flow.goodNumeric} values\\b`), 'the written count in the message');
    assert.match(job.message, new RegExp(`\\b${flow.bad + status.total} skipped\\b`), 'bad and digital-state values counted as skipped');
    const listed = (await svc.get('/svcapi/process-log?kind=backfill', admin)).body.jobs as JobRecord[];
    assert.ok(listed.some((j) => j.id === job.id), 'listed in the process log');

    const { res, points } = await readTag(svc, admin, scope, 'PI-FLOW', T0 - 1, BIG_END + 1);
    assert.equal(res.status, 200, res.text.slice(0, 300));
    const expected = goodNumericPoints(sim, P.bigSeries, T0, BIG_END);
    assert.equal(expected.length, flow.goodNumeric);
    assertSamePoints(points, expected, 'PI-FLOW read back');
    const statusPoints = await readTag(svc, admin, scope, 'PI-STATUS', T0 - 1, BIG_END + 1);
    assert.ok(statusPoints.points === undefined || statusPoints.points.length === 0, `no digital state was written: ${statusPoints.res.text.slice(0, 200)}`);

    // Paged by time, one page of connector.recordedPageSize (10000) at a time, asking only for what it keeps.
    const recorded = seenSince(from).filter((r) => r.path.toLowerCase().endsWith('/recorded'));
    assert.ok(recorded.length >= BIG_COUNT / 10_000, `${recorded.length} recorded pages`);
    for (const r of recorded) {
      assert.ok(Number(r.query.get('maxCount')) <= 10_000, `maxCount ${r.query.get('maxCount')}`);
      assert.ok(r.query.get('selectedFields'), 'selectedFields on recorded requests');
    }
  });

  /** A monitored collection (ticks every 150 ms) with a heartbeat, for the alarm tests. */
  const monitored = async (grid: string): Promise<Scope> => {
    const scope: Scope = { organization: 'pi-alarm', site: 'north', unit: 'pump-1', grid };
    await rows.collection(scope, 150);
    await rows.heartbeat(scope);
    return scope;
  };
  /** Backfills the run hours (1,440 good values of 5000 h, above the rules' limHi 1000) into `tag`. */
  const backfillRunHours = async (scope: Scope, tag: string): Promise<void> => {
    assert.equal(sim.tally(P.integer, T0, DAY_END).goodNumeric, 1440, 'every run-hours value is good (5000 h)');
    const started = await connector(svc, admin, 'backfill', { ...basicConnection(sim), attributes: [{ web_id: webId(P.integer), tag }], ...scope, start: T0, end: DAY_END });
    assert.equal(started.status, 200, started.text);
    const job = await untilJob(svc, admin, started.body.job_id, finished, 'the backfill finishes');
    assert.equal(job.status, 'done', JSON.stringify(job));
    assertSamePoints((await readTag(svc, admin, scope, tag, T0, DAY_END)).points, goodNumericPoints(sim, P.integer, T0, DAY_END), `${tag} read back`);
  };
  const ruleOn = (scope: Scope, tag: string) => rows.rule({ collection_id: collectionIdOf(scope), tag, limHi: 1000, notify: false });

  test('backfilled values above a rule\'s limit open no alarm (the same value written live does)', async () => {
    const scope = await monitored('watched');
    const rule = await ruleOn(scope, 'PI-RUNHOURS');
    await rows.tickPassed(scope); // the monitor watches the tag before the backfill
    await backfillRunHours(scope, 'PI-RUNHOURS');
    await rows.tickPassed(scope);
    await rows.tickPassed(scope);
    assert.deepEqual(await rows.ruleEvents(rule), [], 'no alarm from backfilled values');

    // The rule works: the same value written live opens an event.
    await rows.writeValue(scope, 'PI-RUNHOURS', 5000);
    await rows.untilEvent(rule, 'a live value above limHi opens an event');
  });

  test('a rule made just before a backfill, before a tick has run with it, opens no alarm from the backfilled values', async () => {
    const scope = await monitored('fresh-rule');
    const rule = await ruleOn(scope, 'PI-RUNHOURS-2');
    await backfillRunHours(scope, 'PI-RUNHOURS-2');
    await rows.tickPassed(scope);
    await rows.tickPassed(scope);
    assert.deepEqual(await rows.ruleEvents(rule), [], 'no alarm from backfilled values');
  });

  test('a rule made after a backfill opens no alarm from the backfilled values', async () => {
    const scope = await monitored('later-rule');
    await backfillRunHours(scope, 'PI-RUNHOURS-3');
    const rule = await ruleOn(scope, 'PI-RUNHOURS-3');
    await rows.tickPassed(scope);
    await rows.tickPassed(scope);
    assert.deepEqual(await rows.ruleEvents(rule), [], 'no alarm from backfilled values');
  });

  test('backfill grants: a user outside the target unit 403; read-only 403; a granted read-write user backfills by connection_id', async () => {
    const granted: Scope = { organization: 'pi-grants', site: 'north', unit: 'granted', grid: 'imported' };
    const other: Scope = { ...granted, unit: 'other' };
    const grantedUnit = await rows.unitOf(granted);
    await rows.unitOf(other);
    const operator = await rows.account('pi-operator@historian.test', 'read-write', [grantedUnit]);
    const reader = await rows.account('pi-reader@historian.test', 'read-only', [grantedUnit]);
    const body = (s: Scope) => ({ connection_id: savedId, attributes: [{ web_id: webId(P.withChildAttributes), tag: 'PI-TEMP' }], ...s, start: T0, end: DAY_END });
    const jobsBefore = await backfillJobs();
    const from = sim.requests.length;

    assertError(await connector(svc, operator.token, 'backfill', body(other)), 403, /grant|access/, 'into a unit outside the grant');
    assertError(await connector(svc, rw.token, 'backfill', body(granted)), 403, /grant|access/, 'a user with no grant');
    assert.equal((await connector(svc, reader.token, 'backfill', body(granted))).status, 403, 'read-only');
    assert.equal(await backfillJobs(), jobsBefore, 'no job for a refused backfill');
    assert.equal(seenSince(from).length, 0, 'nothing asked upstream for a refused backfill');

    const started = await connector(svc, operator.token, 'backfill', body(granted));
    assert.equal(started.status, 200, started.text);
    const job = await untilJob(svc, admin, started.body.job_id, finished, 'the granted backfill finishes');
    assert.equal(job.status, 'done', JSON.stringify(job));
    const expected = goodNumericPoints(sim, P.withChildAttributes, T0, DAY_END);
    assertSamePoints((await readTag(svc, operator.token, granted, 'PI-TEMP', T0, DAY_END)).points, expected, 'the operator reads the backfilled tag');
    assert.match(job.message, new RegExp(`\\b${expected.length} values\\b`));
  });

  test('a backfill whose upstream hangs fails at its timeout naming it; one with refused credentials fails naming upstream 401 without the password', async () => {
    sim.hang('/recorded', 1);
    const hung = await connector(svc, admin, 'backfill', {
      ...basicConnection(sim, { timeout_ms: 500 }),
      attributes: [{ web_id: webId(`${P.pump}|Pressure`), tag: 'PI-HUNG' }],
      organization: 'pi-fail', site: 'north', unit: 'u', grid: 'g', start: T0, end: DAY_END,
    });
    assert.equal(hung.status, 200, hung.text);
    const hungJob = await untilJob(svc, admin, hung.body.job_id, finished, 'the hung backfill ends');
    assert.equal(hungJob.status, 'failed');
    assert.match(hungJob.error ?? '', /500 ms|timeout/i);
    await waitFor(() => sim.hungCount === 0, 'the hung recorded request was let go');

    const refused = await connector(svc, admin, 'backfill', {
      ...basicConnection(sim, { password: WRONG_PASSWORD }),
      attributes: [{ web_id: webId(`${P.pump}|Pressure`), tag: 'PI-REFUSED' }],
      organization: 'pi-fail', site: 'north', unit: 'u', grid: 'g', start: T0, end: DAY_END,
    });
    assert.equal(refused.status, 200, refused.text);
    const refusedJob = await untilJob(svc, admin, refused.body.job_id, finished, 'the refused backfill ends');
    assert.equal(refusedJob.status, 'failed');
    assert.match(refusedJob.error ?? '', /upstream 401/);
    assertNoSecret(JSON.stringify(refusedJob), allSecretForms(), 'the failed job');
  });

  // ---------------------------------------------------------------- no credential anywhere (runs last)

  test('no credential in a log line, a process-log answer, a connections answer or a file of the data dir (other than sealed)', async () => {
    const marker = `/svcapi/me?connector-log-marker=${Date.now()}`;
    await svc.get(marker, admin);
    await waitFor(() => svc.logLines.some((l) => l.includes('connector-log-marker')), 'the marker request is logged');
    const secrets = allSecretForms([ROTATED_PASSWORD]);
    assert.ok(svc.logLines.length > 50, 'the service logged');
    for (const line of svc.logLines) assertNoSecret(line, secrets, 'a log line');
    for (const url of ['/svcapi/process-log?limit=1000', '/svcapi/connections']) assertNoSecret((await svc.get(url, admin)).text, secrets, url);
    assert.deepEqual(filesHolding(svc.dataDir, secrets), [], 'files of the data dir holding a credential');
  });
});

// -------------------------------------------------------------------- connector.allowedHosts

describe('connector.allowedHosts', () => {
  const dataDir = tempDir();
  let svc: TestService | undefined;
  after(async () => {
    await svc?.dispose();
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  test('a host outside connector.allowedHosts is 403, ad hoc or through a saved connection, and nothing is asked of it', async () => {
    // With localhost allowed, a saved connection to the simulator works.
    svc = await startService({ dataDir, config: { connector: { allowedHosts: ['localhost'] } } });
    let admin = await svc.adminToken();
    await browseOk(svc, admin, 'list_asset_servers', basicConnection(sim));
    const saved = await svc.request('POST', '/svcapi/connections', { body: { name: 'pi', ...basicConnection(sim) }, token: admin });
    assert.equal(saved.status, 200, saved.text);
    await browseOk(svc, admin, 'list_asset_servers', { connection_id: saved.body.id });
    await svc.stop();
    const firstLog = svc.logLines;

    // The same data dir with another host allowed: the simulator is out of bounds.
    svc = await startService({ dataDir, config: { connector: { allowedHosts: ['pi.example'] } } });
    admin = await svc.adminToken();
    const from = sim.requests.length;
    assertError(await connector(svc, admin, 'list_asset_servers', basicConnection(sim)), 403, /allowedHosts/, 'ad hoc');
    assertError(await connector(svc, admin, 'list_asset_servers', { connection_id: saved.body.id }), 403, /allowedHosts/, 'saved before the setting');
    assertError(
      await connector(svc, admin, 'backfill', { ...basicConnection(sim), attributes: [{ web_id: webId(P.integer), tag: 'T' }], organization: 'o', site: 's', unit: 'u', grid: 'g', start: T0, end: DAY_END }),
      403,
      /allowedHosts/,
      'backfill',
    );
    const create = await svc.request('POST', '/svcapi/connections', { body: { name: 'pi-2', ...basicConnection(sim) }, token: admin });
    assertError(create, 403, /allowedHosts/, 'saving a connection to a host outside');
    const allowed = await svc.request('POST', '/svcapi/connections', { body: { name: 'pi-3', ...basicConnection(sim), base_url: 'https://pi.example/piwebapi' }, token: admin });
    assert.equal(allowed.status, 200, `a connection to an allowed host is saved: ${allowed.text}`);
    assert.equal(seenSince(from).length, 0, 'nothing reached the simulator');
    for (const line of [...firstLog, ...svc.logLines]) assertNoSecret(line, allSecretForms(), 'a log line');
  });
});

// -------------------------------------------------------------------- resume after a restart

describe('a backfill interrupted by restarts', () => {
  const dataDir = tempDir();
  const config = { connector: { recordedPageSize: 5000 } };
  let svc: TestService | undefined;
  after(async () => {
    sim?.setLatency(0);
    await svc?.dispose();
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  test('killed (SIGKILL) and stopped (SIGTERM) mid-way, it resumes under the same job id from where it was and writes every value exactly once', async () => {
    const scope: Scope = { organization: 'pi-resume', site: 'north', unit: 'pump-1', grid: 'history' };
    const flow = sim.tally(P.bigSeries, T0, BIG_END);
    const instances: TestService[] = [];
    let live!: TestService;
    const start = async () => {
      live = svc = await startService({ dataDir, config });
      instances.push(live);
      return live.adminToken();
    };
    let admin = await start();
    const running = (job: JobRecord) => job.status === 'running' && job.progress > 0 && job.progress < 1;

    sim.setLatency(150, '/recorded'); // 21 pages of 5,000 values: slow enough to stop it part-way
    const started = await connector(live, admin, 'backfill', { ...basicConnection(sim), attributes: [{ web_id: webId(P.bigSeries), tag: 'PI-FLOW-R' }], ...scope, start: T0, end: BIG_END });
    assert.equal(started.status, 200, started.text);
    const id = started.body.job_id as string;

    // 1. SIGKILL part-way.
    const first = await untilJob(live, admin, id, (j) => running(j) || finished(j), 'the backfill makes progress');
    assert.ok(running(first), `still running when killed: ${JSON.stringify(first)}`);
    await live.stop('SIGKILL');

    // 2. Restart: it resumes, from where it was; SIGTERM part-way (a clean stop, exit code 0).
    const requestsBeforeRestart = sim.requests.length;
    admin = await start();
    const second = await untilJob(live, admin, id, (j) => (running(j) && j.progress >= first.progress) || finished(j), 'the backfill resumes after SIGKILL');
    assert.ok(running(second), `resumed and still running: ${JSON.stringify(second)}`);
    const resumedPage = sim.requests.slice(requestsBeforeRestart).find((r) => r.path.toLowerCase().endsWith('/recorded'));
    assert.ok(resumedPage, 'the resumed job asked for recorded values');
    const resumedFrom = Date.parse(resumedPage.query.get('startTime') ?? '');
    assert.ok(resumedFrom > T0, `resumed after the values already written, not from the start (startTime ${resumedPage.query.get('startTime')})`);
    const exit = await live.stop('SIGTERM');
    assert.deepEqual(exit, { code: 0, signal: null }, 'SIGTERM with a backfill running exits 0');

    // 3. Restart at full speed: it completes.
    sim.setLatency(0);
    admin = await start();
    const done = await untilJob(live, admin, id, finished, 'the backfill completes after the restarts');
    assert.equal(done.status, 'done', JSON.stringify(done));
    assert.equal(done.progress, 1);
    assert.match(done.message, new RegExp(`\\b${flow.goodNumeric} values\\b`), 'written counted once');
    assert.match(done.message, new RegExp(`\\b${flow.bad} skipped\\b`), 'skipped counted once');
    const all = (await live.get('/svcapi/process-log?kind=backfill', admin)).body;
    assert.deepEqual(all.jobs.map((j: JobRecord) => j.id), [id], 'one job, the same id throughout');
    assert.equal((await jobOf(live, admin, id)).status, 'done');

    const { res, points } = await readTag(live, admin, scope, 'PI-FLOW-R', T0 - 1, BIG_END + 1);
    assert.equal(res.status, 200, res.text.slice(0, 300));
    assertSamePoints(points, goodNumericPoints(sim, P.bigSeries, T0, BIG_END), 'every value exactly once after the restarts');
    // The ad-hoc password was kept sealed in the resumable record, never in plain text, nor logged.
    assert.deepEqual(filesHolding(dataDir, allSecretForms()), [], 'files of the data dir holding a credential');
    for (const line of instances.flatMap((i) => i.logLines)) assertNoSecret(line, allSecretForms(), 'a log line');
  });
});
