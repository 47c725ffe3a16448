// Saved collectors (/svcapi/collectors, WIRE.md part 3 "Plant collectors") on the real service:
// the CRUD shape, validation naming the field, secrets sealed at rest and masked in answers,
// who sees and changes what (a grant's unit, read-only), status of a collector whose broker is
// not there, and no password in a log line. The protocols themselves are in mqtt.test.ts and
// opcua.test.ts.

import assert from 'node:assert/strict';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import Database from 'better-sqlite3';
import { accountHelpers } from '../api/accounts.js';
import { startService, type TestService } from '../api/harness.js';
import { freePort } from '../support/ports.js';
import { waitFor } from '../support/wait-for.js';

const ACME = { organization: 'acme', site: 'north', unit: 'boiler', grid: 'main' };
const EVIL = { organization: 'evil', site: 'south', unit: 'kiln', grid: 'main' };
const SECRET = 'broker-secret-Zq81';

describe('saved collectors: CRUD, secrets, grants, status', () => {
  let svc: TestService;
  let admin: string;
  let deadPort: number;
  const { mk, call } = accountHelpers(() => svc, () => admin);
  const body = (extra: Record<string, unknown> = {}) => ({
    name: 'Line 1 broker', kind: 'mqtt', enabled: true, ...ACME,
    connection: { url: `mqtt://127.0.0.1:${deadPort}`, username: 'historian', password: SECRET, client_id: 'hist-line-1', clean: false },
    items: [{ topic: 'plant/line1/+/temp', format: 'value' }],
    ...extra,
  });
  let acmeUser: string;
  let acmeReader: string;
  let evilUser: string;

  before(async () => {
    svc = await startService();
    admin = await svc.adminToken();
    deadPort = await freePort();
    const acmeUnit = await mk('units', { name: ACME.unit, siteId: await mk('sites', { name: ACME.site, orgsId: await mk('orgs', { name: ACME.organization }) }) });
    const evilUnit = await mk('units', { name: EVIL.unit, siteId: await mk('sites', { name: EVIL.site, orgsId: await mk('orgs', { name: EVIL.organization }) }) });
    for (const [email, role, unit] of [['acme-rw@plant.test', 'read-write', acmeUnit], ['acme-ro@plant.test', 'read-only', acmeUnit], ['evil-rw@plant.test', 'read-write', evilUnit]] as const) {
      const user = await mk('users', { email, password: 'user-password-1', role });
      await mk('userprofiles', { usersId: user, accessAllowed: { units: [unit] } });
    }
    acmeUser = await svc.login('acme-rw@plant.test', 'user-password-1');
    acmeReader = await svc.login('acme-ro@plant.test', 'user-password-1');
    evilUser = await svc.login('evil-rw@plant.test', 'user-password-1');
  });
  after(() => svc?.dispose());

  test('create, read, update (the mask keeps the secret), delete; the secret is sealed at rest and masked in every answer', async () => {
    const created = await call(acmeUser, 'POST', '/svcapi/collectors', body());
    assert.equal(created.status, 200, created.text);
    const c = created.body;
    assert.match(c.id, /^col-[0-9a-f]{16}$/);
    assert.deepEqual({ ...c, id: undefined }, { ...body(), id: undefined, connection: { ...body().connection, password: '********' } });
    assert.deepEqual((await call(acmeUser, 'GET', `/svcapi/collectors/${c.id}`)).body, c);
    assert.deepEqual((await call(acmeUser, 'GET', '/svcapi/collectors')).body, [c]);

    const db = new Database(path.join(svc.dataDir, 'metadata.sqlite'), { readonly: true, fileMustExist: true });
    const stored = () => JSON.parse((db.prepare('SELECT connection FROM collectors WHERE id = ?').get(c.id) as { connection: string }).connection);
    try {
      const sealed = stored().password as string;
      assert.match(sealed, /^enc:v1:/);
      assert.ok(!sealed.includes(SECRET));

      // Sending the mask back keeps the stored secret; a new one replaces it.
      const renamed = await call(acmeUser, 'PUT', `/svcapi/collectors/${c.id}`, { name: 'Line 1', connection: { ...body().connection, password: '********' } });
      assert.equal(renamed.status, 200, renamed.text);
      assert.equal(renamed.body.name, 'Line 1');
      assert.equal(renamed.body.connection.password, '********');
      assert.match(stored().password, /^enc:v1:/);
      const changed = await call(acmeUser, 'PUT', `/svcapi/collectors/${c.id}`, { connection: { ...body().connection, password: 'another-one' } });
      assert.equal(changed.status, 200, changed.text);
      assert.notEqual(stored().password, sealed);
      assert.equal((await call(acmeUser, 'PUT', `/svcapi/collectors/${c.id}`, { kind: 'opcua' })).status, 400, 'the kind cannot change');
    } finally {
      db.close();
    }

    assert.deepEqual((await call(acmeUser, 'DELETE', `/svcapi/collectors/${c.id}`)).body, { success: true });
    assert.equal((await call(acmeUser, 'GET', `/svcapi/collectors/${c.id}`)).status, 404);
    assert.equal((await call(acmeUser, 'DELETE', `/svcapi/collectors/${c.id}`)).status, 404);
    assert.equal(svc.logLines.some((line) => line.includes(SECRET) || line.includes('another-one')), false, 'no secret in a log line');
  });

  test('a bad field is 400 naming it', async () => {
    const cases: Array<[Record<string, unknown>, RegExp]> = [
      [{ kind: 'modbus' }, /kind/],
      [{ name: '' }, /name/],
      [{ organization: undefined }, /organization/],
      [{ grid: 'a/b' }, /grid/],
      [{ enabled: 'yes' }, /enabled/],
      [{ connection: 'mqtt://x' }, /connection/],
      [{ items: [] }, /items/],
      [{ items: ['plant/#'] }, /items\[0\]/],
      [{ connection: { url: 'http://127.0.0.1:1883' } }, /connection\.url/],
      [{ connection: { url: 'mqtt://127.0.0.1:1883', password: 42 } }, /connection\.password/],
      [{ connection: { url: 'mqtt://127.0.0.1:1883', password: '********' } }, /connection\.password/],
    ];
    for (const [change, field] of cases) {
      const res = await call(admin, 'POST', '/svcapi/collectors', { ...body(), ...change });
      assert.equal(res.status, 400, `${JSON.stringify(change)}: ${res.text}`);
      assert.match(res.body.error, field, JSON.stringify(change));
    }
    assert.deepEqual((await call(admin, 'GET', '/svcapi/collectors')).body, [], 'nothing half-saved');
  });

  test("another unit's user never sees nor changes it; read-only reads; a unit outside the grant is refused", async () => {
    const c = (await call(acmeUser, 'POST', '/svcapi/collectors', body())).body;
    try {
      assert.deepEqual((await call(evilUser, 'GET', '/svcapi/collectors')).body, []);
      for (const [method, suffix] of [['GET', ''], ['PUT', ''], ['DELETE', ''], ['GET', '/status']] as const) {
        const res = await call(evilUser, method, `/svcapi/collectors/${c.id}${suffix}`, method === 'PUT' ? { name: 'mine now' } : undefined);
        assert.equal(res.status, 404, `${method} ${suffix}: ${res.text}`);
      }
      assert.equal((await call(evilUser, 'POST', '/svcapi/collectors', body())).status, 403, 'into a unit outside the grant');
      assert.deepEqual((await call(acmeReader, 'GET', '/svcapi/collectors')).body.map((x: { id: string }) => x.id), [c.id]);
      assert.equal((await call(acmeReader, 'GET', `/svcapi/collectors/${c.id}/status`)).status, 200);
      assert.equal((await call(acmeReader, 'POST', '/svcapi/collectors', body())).status, 403);
      assert.equal((await call(acmeReader, 'DELETE', `/svcapi/collectors/${c.id}`)).status, 403);
      assert.equal((await call(admin, 'GET', `/svcapi/collectors/${c.id}`)).status, 200, 'an admin sees every collector');
    } finally {
      await call(admin, 'DELETE', `/svcapi/collectors/${c.id}`);
    }
  });

  test('status: a broker that is not there is retried and named, never fatal; a disabled collector says so', async () => {
    const c = (await call(acmeUser, 'POST', '/svcapi/collectors', body())).body;
    const off = (await call(acmeUser, 'POST', '/svcapi/collectors', body({ name: 'off', enabled: false }))).body;
    try {
      // Never connected: it stays `connecting`, and says why.
      await waitFor(async () => /ECONNREFUSED|refused/i.test((await call(acmeUser, 'GET', `/svcapi/collectors/${c.id}/status`)).body.error ?? ''), 'the status names the refused connection');
      const status = (await call(acmeUser, 'GET', `/svcapi/collectors/${c.id}/status`)).body;
      assert.equal(status.state, 'connecting');
      assert.equal(status.values_stored, 0);
      assert.equal(status.last_value_ms, null);
      assert.equal(typeof status.since_ms, 'number');
      const disabled = (await call(acmeUser, 'GET', `/svcapi/collectors/${off.id}/status`)).body;
      assert.equal(disabled.state, 'disabled');
      assert.equal((await svc.get('/svcapi/health')).body.subsystems.collectors.status, 'ok');
    } finally {
      await call(admin, 'DELETE', `/svcapi/collectors/${c.id}`);
      await call(admin, 'DELETE', `/svcapi/collectors/${off.id}`);
    }
  });
});
