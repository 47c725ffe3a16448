// API keys (issue 27, WIRE.md part 3 "API keys") against the real service: the create / list /
// revoke shapes; the key shown once and never again; every credential form (Bearer, Token, Basic
// with any user name, u/p, access_token on the notification stream and the live WebSocket, a bare
// key) on a read route and on ingest writes; the key's role capped by its creator's; demotion,
// grant changes and deletion of the creator on the next request; revocation and expiry on the
// next request; one message for every refused key, the same as a bad token's; other users'
// keys out of reach; admins see every key with its owner; keys and their last use across a
// graceful restart; no key in any log line.

import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import https from 'node:https';
import { after, before, describe, test } from 'node:test';
import WebSocket from 'ws';
import { waitFor } from '../support/wait-for.js';
import { accountHelpers, type Account } from './accounts.js';
import { startService, type HttpResult, type TestService } from './harness.js';
import { basicAuth, send, writePath } from './influx-wire.js';

const ACME = { organization: 'acme', site: 'north', unit: 'boiler-1', grid: 'main' };
const OTHER = { organization: 'other', site: 's2', unit: 'u2', grid: 'main' };
const CLIENT = 'acme-collector';
const T0 = Date.UTC(2026, 0, 12, 8);
const KEY_SHAPE = /^hk_[0-9A-Za-z]{40}$/;
const CREATED_FIELDS = ['created_ms', 'expires_ms', 'id', 'key', 'name', 'prefix', 'role'];
const LISTED_FIELDS = ['created_ms', 'expires_ms', 'id', 'last_used_ms', 'name', 'prefix', 'role'];

const qs = (params: Record<string, string | number>) => new URLSearchParams(Object.entries(params).map(([k, v]): [string, string] => [k, String(v)])).toString();
const sha256 = (text: string) => crypto.createHash('sha256').update(text).digest('hex');

describe('API keys', () => {
  let svc: TestService;
  let admin: string;
  let acmeUnit: string;
  let otherUnit: string;
  /** Read-write, granted the acme unit. */
  let alice: Account;
  /** Read-write, no grants. */
  let bob: Account;
  /** Every key made here: none may appear in a log line. */
  const madeKeys: string[] = [];
  /** Services stopped during the suite, whose log lines are checked too. */
  const earlierLogs: string[][] = [];
  let n = 0;
  const helpers = accountHelpers(() => svc, () => admin);

  /** Any request with a whole `Authorization` header (or none). */
  const withAuth = (method: string, path: string, authorization: string | null, body?: unknown) =>
    svc.request(method, path, { body, headers: authorization === null ? {} : { authorization } });

  async function makeKey(token: string, body: Record<string, unknown> = {}): Promise<{ id: string; key: string; role: string; [field: string]: unknown }> {
    const res = await svc.post('/svcapi/api_keys', { name: `key ${++n}`, ...body }, token);
    assert.equal(res.status, 201, res.text);
    madeKeys.push(res.body.key);
    return res.body;
  }

  const list = async (token: string) => {
    const res = await svc.get('/svcapi/api_keys', token);
    assert.equal(res.status, 200, res.text);
    return res.body as Array<Record<string, unknown>>;
  };

  /** The points of `tag` in the acme collection, read by the admin. */
  async function pointsOf(tag: string, scope = ACME): Promise<Array<[number, number]>> {
    const res = await svc.get(`/svcapi/fast_query?${qs({ tags: tag, start: T0 - 86_400_000, end: T0 + 86_400_000, ...scope })}`, admin);
    assert.equal(res.status, 200, res.text);
    return res.body[tag];
  }

  /** fast_query of the acme collection with a whole Authorization header. */
  const readAcme = (authorization: string | null, query: Record<string, string> = {}) =>
    withAuth('GET', `/svcapi/fast_query?${qs({ tags: 'TI-1', start: T0 - 1000, end: T0 + 1000, ...ACME, ...query })}`, authorization);

  // A row inside the creators' grant (labels are every tenant's, changed by admins only).
  const canWriteEquipment = async (authorization: string) => (await withAuth('POST', '/svcapi/equipment', authorization, { name: `pump-${++n}`, unitsId: acmeUnit })).status;

  const unitsSeen = async (key: string) => {
    const res = await withAuth('GET', '/svcapi/units', `Bearer ${key}`);
    assert.equal(res.status, 200, res.text);
    return (res.body as Array<{ id: string }>).map((u) => u.id).sort();
  };

  before(async () => {
    svc = await startService({ config: { debug: { clockRoute: true } } });
    admin = await svc.adminToken();
    const org = await helpers.mk('orgs', { name: ACME.organization });
    acmeUnit = await helpers.mk('units', { name: ACME.unit, siteId: await helpers.mk('sites', { name: ACME.site, orgsId: org }) });
    otherUnit = await helpers.mk('units', { name: OTHER.unit, siteId: await helpers.mk('sites', { name: OTHER.site, orgsId: await helpers.mk('orgs', { name: OTHER.organization }) }) });
    for (const scope of [ACME, OTHER]) assert.equal((await svc.post('/svcapi/create_collection', scope, admin)).status, 200);
    await helpers.mk('ingestconfigs', { clientId: CLIENT, ...ACME });
    assert.equal((await svc.post('/svcapi/write', { ...ACME, tags: { 'TI-1': [[T0, 41.5]] } }, admin)).body.success, true);
    alice = await helpers.account('alice@plant.test', { units: [acmeUnit] });
    bob = await helpers.account('bob@plant.test');
  });
  after(() => svc.dispose());

  test('create answers 201 with exactly the WIRE fields, the key once; the list never holds the key or its hash', async () => {
    const before = Date.now();
    const created = await makeKey(alice.token, { name: 'grafana' });
    assert.deepEqual(Object.keys(created).sort(), CREATED_FIELDS);
    assert.match(created.key, KEY_SHAPE);
    assert.equal(created.name, 'grafana');
    assert.equal(created.role, 'read-write', "the creator's role by default");
    assert.equal(created.expires_ms, null);
    assert.equal(typeof created.id, 'string');
    assert.ok((created.created_ms as number) >= before - 1000 && (created.created_ms as number) <= Date.now() + 1000, 'created_ms is now');
    assert.ok(created.key.startsWith(created.prefix as string) && (created.prefix as string).length < created.key.length - 20, 'the prefix is the first few characters');

    const listed = await svc.get('/svcapi/api_keys', alice.token);
    assert.equal(listed.status, 200);
    const mine = (listed.body as Array<Record<string, unknown>>).find((k) => k.id === created.id);
    assert.ok(mine, 'the new key is listed');
    assert.deepEqual(Object.keys(mine).sort(), LISTED_FIELDS, 'no key, no owner in a user\'s own list');
    assert.deepEqual({ ...mine }, { id: created.id, name: 'grafana', role: 'read-write', prefix: created.prefix, created_ms: created.created_ms, expires_ms: null, last_used_ms: null });
    assert.ok(!listed.text.includes(created.key), 'the key is not listed');
    assert.ok(!listed.text.includes(sha256(created.key)), 'its hash is not listed');

    // Two keys with the same name are two keys.
    const twin = await makeKey(alice.token, { name: 'grafana', expires_ms: Date.now() + 86_400_000 });
    assert.notEqual(twin.id, created.id);
    assert.notEqual(twin.key, created.key);
    assert.equal(typeof twin.expires_ms, 'number');
  });

  test('every field is validated with a 400 naming it; a role above the creator\'s is 403 naming role', async () => {
    const refused = async (body: unknown, status: number, pattern: RegExp) => {
      const res = await svc.post('/svcapi/api_keys', body, alice.token);
      assert.equal(res.status, status, `${JSON.stringify(body)}: ${res.text}`);
      assert.match(res.body.error, pattern, JSON.stringify(body));
    };
    await refused({}, 400, /name/);
    await refused({ name: '' }, 400, /name/);
    await refused({ name: '   ' }, 400, /name.*blank/);
    await refused({ name: 'x'.repeat(101) }, 400, /name/);
    await refused({ name: 'tab\there' }, 400, /name.*control/);
    await refused({ name: 7 }, 400, /name/);
    await refused({ name: 'k', role: 'owner' }, 400, /role.*admin, read-write, read-only/);
    await refused({ name: 'k', role: 'admin' }, 403, /role.*admin.*read-write/);
    await refused({ name: 'k', expires_ms: Date.now() - 1000 }, 400, /expires_ms.*future/);
    await refused({ name: 'k', expires_ms: 1.5 }, 400, /expires_ms/);
    await refused({ name: 'k', expires_ms: '2030-01-01' }, 400, /expires_ms/);
    await refused({ name: 'k', key: 'hk_mine' }, 400, /unknown body field 'key'/);
    const malformed = await svc.request('POST', '/svcapi/api_keys', { rawBody: '{"name":', token: alice.token, headers: { 'content-type': 'application/json' } });
    assert.equal(malformed.status, 400, malformed.text);
    assert.equal((await svc.post('/svcapi/api_keys', { name: 'k' })).status, 401, 'no credential');
  });

  test('a read-only account makes, lists and revokes read-only keys, and still changes no data', async () => {
    const reader = await helpers.account(`reader${++n}@plant.test`, { units: [acmeUnit] });
    assert.equal((await svc.request('PUT', `/svcapi/users/${reader.id}`, { body: { role: 'read-only' }, token: admin })).status, 200);
    const key = await makeKey(reader.token);
    assert.equal(key.role, 'read-only', 'defaults to the creator\'s role');
    const up = await svc.post('/svcapi/api_keys', { name: 'up', role: 'read-write' }, reader.token);
    assert.equal(up.status, 403, up.text);
    assert.match(up.body.error, /role/);
    assert.equal((await readAcme(`Bearer ${key.key}`)).status, 200, 'the key reads');
    assert.equal(await canWriteEquipment(`Bearer ${key.key}`), 403, 'the key writes nothing');
    assert.equal(await canWriteEquipment(`Bearer ${reader.token}`), 403, 'the account itself still writes nothing');
    assert.deepEqual((await list(reader.token)).map((k) => k.id), [key.id]);
    assert.equal((await svc.request('DELETE', `/svcapi/api_keys/${key.id}`, { token: reader.token })).status, 200);
    assert.deepEqual(await list(reader.token), []);
  });

  test('a request made with an API key may list keys but neither create nor revoke one', async () => {
    const key = await makeKey(alice.token);
    const mint = await withAuth('POST', '/svcapi/api_keys', `Bearer ${key.key}`, { name: 'longer lived' });
    assert.equal(mint.status, 403, mint.text);
    assert.match(mint.body.error, /API key/);
    const revoke = await withAuth('DELETE', `/svcapi/api_keys/${key.id}`, `Bearer ${key.key}`);
    assert.equal(revoke.status, 403, revoke.text);
    const listed = await withAuth('GET', '/svcapi/api_keys', `Bearer ${key.key}`);
    assert.equal(listed.status, 200, listed.text);
    assert.ok((listed.body as Array<{ id: string }>).some((k) => k.id === key.id));
    assert.equal((await readAcme(`Bearer ${key.key}`)).status, 200, 'the key still works');
  });

  test('a key works on a read route in every header form: Bearer, Token, bare, Basic with any user name', async () => {
    const { key } = await makeKey(alice.token);
    for (const authorization of [`Bearer ${key}`, `bearer ${key}`, `Token ${key}`, key, basicAuth('grafana', key), basicAuth('', key), basicAuth(alice.email, key)]) {
      const res = await readAcme(authorization);
      assert.equal(res.status, 200, `${authorization.slice(0, 6)}: ${res.text}`);
      assert.deepEqual(res.body, { 'TI-1': [[T0, 41.5]] }, authorization.slice(0, 6));
    }
    assert.deepEqual((await withAuth('GET', '/svcapi/me', `Bearer ${key}`)).body, { user_id: alice.email, role: 'read-write' });
    assert.equal((await readAcme(`Token ${alice.token}`)).status, 200, 'a JWT as Token too');
    // Basic with an account password stays an ingest-only form: here it is a bad credential.
    assert.equal((await readAcme(basicAuth(alice.email, 'user-password-1'))).status, 401);
  });

  test('a key in access_token opens the notification stream and the live WebSocket; in the header too', async () => {
    const { key } = await makeKey(alice.token);
    const opening = await streamOpening(svc, `/svcapi/notifications/stream?${qs({ access_token: key })}`, {});
    assert.equal(opening.status, 200);
    assert.match(opening.text, /retry: 3000/);
    const withHeader = await streamOpening(svc, '/svcapi/notifications/stream', { authorization: `Bearer ${key}` });
    assert.equal(withHeader.status, 200);
    const refused = await streamOpening(svc, `/svcapi/notifications/stream?${qs({ access_token: `hk_${'A'.repeat(40)}` })}`, {});
    assert.equal(refused.status, 401);

    for (const via of ['query', 'header'] as const) {
      const ws = new WebSocket(`wss://localhost:${svc.port}/svcapi/ws${via === 'query' ? `?access_token=${key}` : ''}`, { ca: svc.ca, headers: via === 'header' ? { authorization: `Bearer ${key}` } : {} });
      await new Promise<void>((resolve, reject) => {
        ws.once('open', () => resolve());
        ws.once('unexpected-response', (_req, res) => reject(new Error(`upgrade refused: ${res.statusCode}`)));
        ws.once('error', reject);
      });
      ws.close();
    }
    const bad = new WebSocket(`wss://localhost:${svc.port}/svcapi/ws?access_token=hk_${'B'.repeat(40)}`, { ca: svc.ca });
    const status = await new Promise<number>((resolve, reject) => {
      bad.once('unexpected-response', (_req, res) => resolve(res.statusCode ?? 0));
      bad.once('open', () => reject(new Error('a made-up key opened a socket')));
      bad.once('error', reject);
    });
    assert.equal(status, 401);
  });

  test('a key writes through ingest in every form (Bearer, Token, Basic with any user name, u/p, p alone) and through /svcapi/write_fast', async () => {
    const { key } = await makeKey(alice.token);
    const forms: Array<[string, string | null, Record<string, string>]> = [
      ['bearer', `Bearer ${key}`, {}],
      ['token', `Token ${key}`, {}],
      ['basic', basicAuth('telegraf', key), {}],
      ['basicempty', basicAuth('', key), {}],
      ['up', null, { u: 'telegraf', p: key }],
      ['ponly', null, { p: key }],
    ];
    for (const [i, [form, authorization, params]] of forms.entries()) {
      const headers: Record<string, string> = { 'content-type': 'text/plain' };
      if (authorization) headers.authorization = authorization;
      for (const api of ['1.x', '2.x'] as const) {
        const res = await send(svc, 'POST', writePath(api, CLIENT, params), `keyed,form=${form} v=${i} ${(T0 + i) * 1e6}`, { headers });
        assert.equal(res.status, 204, `${form} ${api}: ${res.status} ${res.text}`);
      }
      assert.deepEqual(await pointsOf(`keyed,form=${form}.v`), [[T0 + i, i]], form);
    }
    // The JSON ingest route, Basic with a key.
    const json = await svc.request('POST', `/ingest/${CLIENT}/main`, { body: { tags: { 'KEY-JSON': [[T0, 7]] } }, headers: { authorization: basicAuth('collector', key) } });
    assert.equal(json.status, 200, json.text);
    assert.deepEqual(json.body, { success: true, points: 1 });
    const fast = await withAuth('POST', '/svcapi/write_fast', `Bearer ${key}`, { ...ACME, tags: { 'KEY-FAST': [[T0, 8]] } });
    assert.equal(fast.status, 200, fast.text);
    assert.equal(fast.body.success, true, fast.text);
    assert.deepEqual(await pointsOf('KEY-JSON'), [[T0, 7]]);
    assert.deepEqual(await pointsOf('KEY-FAST'), [[T0, 8]]);
    // The key carries alice's grant: the other collection is refused.
    const outside = await withAuth('POST', '/svcapi/write_fast', `Bearer ${key}`, { ...OTHER, tags: { X: [[T0, 1]] } });
    assert.ok(outside.status === 403 || outside.body?.success === false, `outside the grant: ${outside.text}`);
    assert.deepEqual(await pointsOf('X', OTHER), []);
  });

  test("a key's role is the lower of its own and its creator's current one; grants are the creator's at each use", async () => {
    const carol = await helpers.account(`carol${++n}@plant.test`, { units: [acmeUnit] });
    const writer = await makeKey(carol.token);
    const reader = await makeKey(carol.token, { role: 'read-only' });
    assert.equal(await canWriteEquipment(`Bearer ${writer.key}`), 200);
    assert.equal(await canWriteEquipment(`Bearer ${reader.key}`), 403, 'a read-only key of a read-write user');
    const adminsReader = await makeKey(admin, { role: 'read-only' });
    assert.equal(await canWriteEquipment(`Bearer ${adminsReader.key}`), 403, "a read-only key of an admin");
    assert.equal((await withAuth('POST', '/svcapi/admin/user/delete', `Bearer ${adminsReader.key}`, { email: 'nobody@plant.test' })).status, 403, 'and no admin route');
    const adminsAdmin = await makeKey(admin);
    assert.equal(adminsAdmin.role, 'admin');
    assert.equal((await withAuth('POST', '/svcapi/admin/user/delete', `Bearer ${adminsAdmin.key}`, { email: 'nobody@plant.test' })).status, 404, 'an admin key reaches admin routes');

    // Demotion and promotion of the creator: the next request.
    assert.equal((await svc.request('PUT', `/svcapi/users/${carol.id}`, { body: { role: 'read-only' }, token: admin })).status, 200);
    assert.equal(await canWriteEquipment(`Bearer ${writer.key}`), 403, 'creator demoted');
    assert.equal((await withAuth('GET', '/svcapi/me', `Bearer ${writer.key}`)).body.role, 'read-only');
    assert.equal((await svc.request('PUT', `/svcapi/users/${carol.id}`, { body: { role: 'admin' }, token: admin })).status, 200);
    assert.equal(await canWriteEquipment(`Bearer ${writer.key}`), 200, 'creator promoted: back to the key\'s own role');
    assert.equal((await withAuth('POST', '/svcapi/admin/user/delete', `Bearer ${writer.key}`, { email: 'nobody@plant.test' })).status, 403, 'a read-write key of an admin is no admin');
    assert.equal((await svc.request('PUT', `/svcapi/users/${carol.id}`, { body: { role: 'read-write' }, token: admin })).status, 200);

    // Grants: what the key sees follows the creator's profile.
    assert.deepEqual(await unitsSeen(writer.key), [acmeUnit]);
    const profile = (await svc.get(`/svcapi/userprofiles?${qs({ filter: JSON.stringify({ where: { usersId: Number(carol.id) } }) })}`, admin)).body[0];
    assert.equal((await svc.request('PUT', `/svcapi/userprofiles/${profile.id}`, { body: { accessAllowed: { units: [otherUnit] } }, token: admin })).status, 200);
    assert.deepEqual(await unitsSeen(writer.key), [otherUnit], 'grant changed');
    const outOfReach = await readAcme(`Bearer ${writer.key}`);
    assert.ok(outOfReach.status === 403 || outOfReach.status === 404, `the old collection is out of reach: ${outOfReach.status}`);
  });

  test('deleting the creator kills the key on the next request (by id, by the admin route), and removes it from the lists', async () => {
    for (const how of ['entity', 'admin route'] as const) {
      const dave = await helpers.account(`dave${++n}@plant.test`, { units: [acmeUnit] });
      const key = await makeKey(dave.token);
      assert.equal((await readAcme(`Bearer ${key.key}`)).status, 200);
      const deleted = how === 'entity'
        ? await svc.request('DELETE', `/svcapi/users/${dave.id}`, { token: admin })
        : await svc.post('/svcapi/admin/user/delete', { email: dave.email }, admin);
      assert.equal(deleted.status, 200, deleted.text);
      const res = await readAcme(`Bearer ${key.key}`);
      assert.equal(res.status, 401, how);
      assert.deepEqual(res.body, { error: 'invalid token' }, how);
      assert.ok(!(await list(admin)).some((k) => k.id === key.id), `${how}: the key is gone from the admin's list`);
      // The same email registered again does not bring the key back.
      await svc.newUser(dave.email, 'user-password-1');
      assert.equal((await readAcme(`Bearer ${key.key}`)).status, 401, `${how}: a new account under the same email`);
    }
  });

  test('revocation takes effect on the very next request, on every route kind', async () => {
    const { id, key } = await makeKey(alice.token);
    const ingest = (k: string) => send(svc, 'POST', writePath('1.x', CLIENT), `revoked v=1 ${T0 * 1e6}`, { headers: { authorization: `Token ${k}`, 'content-type': 'text/plain' } });
    assert.equal((await readAcme(`Bearer ${key}`)).status, 200);
    assert.equal((await ingest(key)).status, 204);
    const revoked = await svc.request('DELETE', `/svcapi/api_keys/${id}`, { token: alice.token });
    assert.equal(revoked.status, 200, revoked.text);
    assert.deepEqual(revoked.body, { success: true, message: 'API key revoked' });
    assert.equal((await readAcme(`Bearer ${key}`)).status, 401);
    assert.equal((await ingest(key)).status, 401);
    assert.equal((await svc.request('DELETE', `/svcapi/api_keys/${id}`, { token: alice.token })).status, 404, 'a second revoke');
    assert.ok(!(await list(alice.token)).some((k) => k.id === id));
  });

  test('a notification stream opened with a key ends once the key is revoked', async () => {
    const key = await makeKey(alice.token);
    let ended = false;
    let text = '';
    const req = https.request({ host: '127.0.0.1', servername: 'localhost', port: svc.port, method: 'GET', path: `/svcapi/notifications/stream?${qs({ access_token: key.key })}`, ca: svc.ca, agent: false }, (res) => {
      assert.equal(res.statusCode, 200);
      res.on('data', (chunk: Buffer) => (text += chunk.toString()));
      res.on('end', () => (ended = true));
      res.on('close', () => (ended = true));
    });
    req.on('error', () => (ended = true));
    req.end();
    try {
      await waitFor(() => text.includes('replay-complete'), 'the stream opened');
      assert.equal((await svc.request('DELETE', `/svcapi/api_keys/${key.id}`, { token: alice.token })).status, 200);
      // The stream checks its credential again (at most once a second) when it has something to send.
      await waitFor(async () => {
        await svc.post('/svcapi/notifications', { severity: 'info', source: 'custom', title: 'ping', body: 'b', userId: alice.email }, admin);
        return ended;
      }, 'the stream ended', { intervalMs: 200 });
    } finally {
      req.destroy();
    }
  });

  test('an expired key is refused (the service clock moved past expires_ms)', async () => {
    const key = await makeKey(alice.token, { expires_ms: Date.now() + 60_000 });
    assert.equal((await readAcme(`Bearer ${key.key}`)).status, 200);
    await svc.advanceAuthClock(120, admin);
    const res = await readAcme(`Bearer ${key.key}`);
    assert.equal(res.status, 401);
    assert.deepEqual(res.body, { error: 'invalid token' });
    assert.ok((await list(alice.token)).some((k) => k.id === key.id), 'an expired key is still listed (to be revoked)');
  });

  test('bad, revoked, expired, made-up and dead-creator keys all answer exactly as a bad token does', async () => {
    // A revoked key.
    const revoked = await makeKey(alice.token);
    await svc.request('DELETE', `/svcapi/api_keys/${revoked.id}`, { token: alice.token });
    // An expired one (the clock only moves forward: past whatever earlier tests did).
    const expiring = await makeKey(alice.token, { expires_ms: Date.now() + 3_600_000 });
    await svc.advanceAuthClock(7200, admin);
    // One whose creator is gone.
    const erin = await helpers.account(`erin${++n}@plant.test`);
    const orphan = await makeKey(erin.token);
    await svc.post('/svcapi/admin/user/delete', { email: erin.email }, admin);
    const madeUp = `hk_${'x'.repeat(40)}`;
    const keys = { revoked: revoked.key, expired: expiring.key, orphan: orphan.key, madeUp, short: 'hk_abc', bare: 'hk_' };
    const badToken = await readAcme('Bearer not-a-token');
    assert.equal(badToken.status, 401);
    for (const [what, key] of Object.entries(keys)) {
      for (const authorization of [`Bearer ${key}`, `Token ${key}`, basicAuth('grafana', key)]) {
        const res = await readAcme(authorization);
        assert.equal(res.status, 401, `${what}: ${res.text}`);
        assert.equal(res.text, badToken.text, `${what} (${authorization.slice(0, 6)}) answers as a bad token`);
      }
    }
    // The ingest routes: each key form answers as a bad token there (1.x and 2.x shapes alike).
    for (const api of ['1.x', '2.x'] as const) {
      const ingest = (headers: Record<string, string>, params: Record<string, string> = {}) => send(svc, 'POST', writePath(api, CLIENT, params), `bad v=1 ${T0 * 1e6}`, { headers: { 'content-type': 'text/plain', ...headers } });
      const bad = await ingest({ authorization: 'Token not-a-token' });
      assert.equal(bad.status, 401);
      for (const [what, key] of Object.entries(keys)) {
        for (const [form, answer] of [
          ['Token', await ingest({ authorization: `Token ${key}` })],
          ['Basic', await ingest({ authorization: basicAuth('telegraf', key) })],
          ['u/p', await ingest({}, { u: 'telegraf', p: key })],
        ] as const) {
          assert.equal(answer.status, 401, `${api} ${what} ${form}: ${answer.text}`);
          assert.equal(answer.text, bad.text, `${api} ${what} ${form} answers as a bad token`);
        }
      }
    }
  });

  test('a key is never a password: made-up keys over Basic and u/p with an account email count toward no login limit or lockout', async () => {
    const frank = await helpers.account(`frank${++n}@plant.test`, { units: [acmeUnit] });
    for (let i = 0; i < 12; i++) {
      const madeUp = `hk_${crypto.randomBytes(30).toString('base64').replace(/[^0-9A-Za-z]/g, '').slice(0, 40).padEnd(40, 'q')}`;
      const viaBasic = await send(svc, 'POST', writePath('1.x', CLIENT), `lockout v=1 ${T0 * 1e6}`, { headers: { authorization: basicAuth(frank.email, madeUp), 'content-type': 'text/plain' } });
      assert.equal(viaBasic.status, 401, viaBasic.text);
      const viaQuery = await send(svc, 'POST', writePath('1.x', CLIENT, { u: frank.email, p: madeUp }), `lockout v=1 ${T0 * 1e6}`, { headers: { 'content-type': 'text/plain' } });
      assert.equal(viaQuery.status, 401, viaQuery.text);
    }
    // 24 refusals for one email, far past auth.lockoutFailures (5): the account logs in at once.
    const login = await svc.post('/svcapi/login', { email: frank.email, password: 'user-password-1' });
    assert.equal(login.status, 200, login.text);
  });

  test("another user can neither list nor revoke my key; an admin lists every key with its owner and may revoke any", async () => {
    const mine = await makeKey(alice.token);
    assert.ok(!(await list(bob.token)).some((k) => k.id === mine.id), "not in bob's list");
    const theft = await svc.request('DELETE', `/svcapi/api_keys/${mine.id}`, { token: bob.token });
    assert.equal(theft.status, 404, theft.text);
    const missing = await svc.request('DELETE', `/svcapi/api_keys/${crypto.randomUUID()}`, { token: bob.token });
    assert.equal(missing.text, theft.text, "someone else's key answers like a missing one");
    assert.equal((await readAcme(`Bearer ${mine.key}`)).status, 200, 'the key still works');

    const bobs = await makeKey(bob.token);
    const all = await list(admin);
    const seen = all.find((k) => k.id === mine.id);
    assert.ok(seen, "alice's key in the admin's list");
    assert.equal(seen.owner, alice.email);
    assert.equal(all.find((k) => k.id === bobs.id)?.owner, bob.email);
    assert.deepEqual(Object.keys(seen).sort(), [...LISTED_FIELDS, 'owner'].sort());
    assert.ok(all.every((k) => !('key' in k)));
    assert.equal((await svc.request('DELETE', `/svcapi/api_keys/${bobs.id}`, { token: admin })).status, 200, 'an admin revokes anyone\'s key');
    assert.equal((await readAcme(`Bearer ${bobs.key}`)).status, 401);
  });

  test('the OpenAPI document lists the routes, with no key in its examples', async () => {
    const doc = await svc.get('/svcapi/openapi.yaml');
    assert.equal(doc.status, 200);
    for (const route of ['/svcapi/api_keys:', '/svcapi/api_keys/{id}:']) assert.ok(doc.text.includes(route), route);
    assert.doesNotMatch(doc.text, /hk_[0-9A-Za-z]{20,}/);
  });

  test('last_used_ms follows use; keys and their last use survive a graceful restart; no key reaches a log line', async () => {
    const key = await makeKey(alice.token, { name: 'restart' });
    const entry = async (token: string) => (await list(token)).find((k) => k.id === key.id)!;
    assert.equal((await entry(alice.token)).last_used_ms, null, 'never used');
    assert.equal((await readAcme(`Bearer ${key.key}`)).status, 200);
    let used = 0;
    await waitFor(async () => ((used = (await entry(alice.token)).last_used_ms as number) ?? 0) > 0, 'last_used_ms after a use');

    // Keys in every place a request can carry them, for the log check below.
    const carrier = await makeKey(alice.token, { name: 'log check' });
    await readAcme(null, { access_token: carrier.key });
    await readAcme(`Bearer ${carrier.key}`, { marker: 'keys-in-logs', token_like: carrier.key });
    await send(svc, 'POST', writePath('1.x', CLIENT, { u: carrier.key, p: carrier.key }), `logged v=1 ${T0 * 1e6}`, { headers: { 'content-type': 'text/plain' } });
    await svc.get(`/svcapi/api_keys/${carrier.key}`, alice.token);
    await svc.request('DELETE', `/svcapi/api_keys/${carrier.key}`, { token: alice.token });
    const echoed = await svc.get(`/svcapi/no-such-route/${carrier.key}?marker=keys-in-logs-end`);
    assert.equal(echoed.status, 404);
    assert.ok(!echoed.text.includes(carrier.key.slice(3)), `no key in an error message: ${echoed.text}`);
    await waitFor(() => svc.logLines.some((l) => l.includes('keys-in-logs-end')), 'the requests were logged');
    assert.ok(svc.logLines.some((l) => l.includes('hk_[redacted]')), 'keys were redacted, not dropped with their lines');

    const dataDir = svc.dataDir;
    earlierLogs.push(svc.logLines);
    const exit = await svc.stop('SIGTERM');
    assert.equal(exit.code, 0, 'graceful stop');
    svc = await startService({ dataDir, config: { debug: { clockRoute: true } } });
    admin = await svc.adminToken();
    const token = await svc.login(alice.email, 'user-password-1');
    const after = await entry(token);
    assert.ok(after, 'the key survived the restart');
    assert.equal(after.last_used_ms, used, 'its last use was written at stop');
    assert.equal((await readAcme(`Bearer ${key.key}`)).status, 200, 'and it still works');

    for (const lines of [...earlierLogs, svc.logLines]) {
      for (const line of lines) for (const made of madeKeys) assert.ok(!line.includes(made) && !line.includes(made.slice(3)), `a key in a log line: ${line}`);
    }
  });
});

/** The status and first bytes of a streamed response (read until its first event-stream line), then closed. */
function streamOpening(svc: TestService, path: string, headers: Record<string, string>): Promise<Pick<HttpResult, 'status' | 'text'>> {
  return new Promise((resolve, reject) => {
    const req = https.request({ host: '127.0.0.1', servername: 'localhost', port: svc.port, method: 'GET', path, headers: { accept: 'text/event-stream', ...headers }, ca: svc.ca, agent: false }, (res) => {
      let text = '';
      const done = () => {
        req.destroy();
        resolve({ status: res.statusCode ?? 0, text });
      };
      res.on('data', (chunk: Buffer) => {
        text += chunk.toString();
        if (text.includes('retry:')) done();
      });
      res.on('end', done);
    });
    req.on('error', reject);
    req.end();
  });
}
