// Issue 12 item 5: a token says who the caller is; what it may do is the
// account's current state. Deleting the account (by id, by where, by the
// admin route, by deleting your own row), changing its role (PUT, PATCH,
// update-all), its grants (userprofiles.accessAllowed) or its password takes
// effect on the very next request made with a token issued before.

import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import jwt from 'jsonwebtoken';
import { startService, type TestService } from './harness.js';

const q = (filter: unknown) => `where=${encodeURIComponent(JSON.stringify(filter))}`;

describe('tokens follow the account', () => {
  let svc: TestService;
  let admin: string;
  let unitA: string;
  let unitB: string;
  let n = 0;

  const call = (token: string, method: string, path: string, body?: unknown) => svc.request(method, path, { body, token });
  /** A new read-write account: its id and a token. */
  const account = async (password = 'user-password-1') => {
    const email = `user${++n}@plant.test`;
    const token = await svc.newUser(email, password);
    const row = (await call(admin, 'GET', `/svcapi/users/findOne?${q({ email })}`)).body;
    return { email, id: row.id as string, token, password };
  };
  const me = async (token: string) => call(token, 'GET', '/svcapi/me');
  /** A change of the account's own row: what a read-write account with no grant may write (labels are admins' now). */
  const canWrite = async (user: { token: string; id: string }) => (await call(user.token, 'PUT', `/svcapi/users/${user.id}`, { note: `change ${++n}` })).status;
  const visibleUnits = async (token: string) => {
    const res = await call(token, 'GET', '/svcapi/units');
    assert.equal(res.status, 200, res.text);
    return (res.body as Array<{ id: string }>).map((u) => u.id).sort();
  };

  before(async () => {
    svc = await startService();
    admin = await svc.adminToken();
    const mk = async (url: string, body: object) => (await call(admin, 'POST', `/svcapi/${url}`, body)).body.id as string;
    const org = await mk('orgs', { name: 'Org' });
    const site = await mk('sites', { name: 'Site', orgsId: org });
    unitA = await mk('units', { name: 'Unit A', siteId: site });
    unitB = await mk('units', { name: 'Unit B', siteId: site });
  });
  after(() => svc.dispose());

  test('DELETE /svcapi/users/{id}: the token is refused on the next request', async () => {
    const user = await account();
    assert.equal((await me(user.token)).status, 200);
    assert.equal((await call(admin, 'DELETE', `/svcapi/users/${user.id}`)).status, 200);
    const after = await me(user.token);
    assert.equal(after.status, 401);
    assert.match(after.body.error, /no longer exists/);
  });

  test('DELETE /svcapi/users?where=: the token is refused', async () => {
    const user = await account();
    assert.equal((await me(user.token)).status, 200);
    assert.equal((await call(admin, 'DELETE', `/svcapi/users?${q({ email: user.email })}`)).status, 200);
    assert.equal((await me(user.token)).status, 401);
    assert.equal((await canWrite(user)), 401);
  });

  test('a user who deletes their own row loses their token with it', async () => {
    const user = await account();
    assert.equal((await call(user.token, 'DELETE', `/svcapi/users/${user.id}`)).status, 200);
    assert.equal((await me(user.token)).status, 401);
  });

  test('a deleted account registered again does not bring its old tokens back', async () => {
    const user = await account();
    assert.equal((await svc.post('/svcapi/admin/user/delete', { email: user.email }, admin)).status, 200);
    assert.equal((await me(user.token)).status, 401);
    const fresh = await svc.newUser(user.email, user.password);
    assert.equal((await me(fresh)).status, 200);
    assert.equal((await me(user.token)).status, 401, 'same email, same password, new account');
  });

  test('demotion to read-only by PUT, PATCH and update-all: /me answers it and writes are 403 at once', async () => {
    const demotions: Array<(id: string, email: string) => Promise<number>> = [
      async (id) => (await call(admin, 'PUT', `/svcapi/users/${id}`, { role: 'read-only' })).status,
      async (id) => (await call(admin, 'PATCH', '/svcapi/users', { id, role: 'read-only' })).status,
      async (_id, email) => (await call(admin, 'POST', `/svcapi/users/update?${q({ email })}`, { role: 'read-only' })).status,
    ];
    for (const [i, demote] of demotions.entries()) {
      const user = await account();
      assert.equal(await canWrite(user), 200, `case ${i}: writes before`);
      assert.equal(await demote(user.id, user.email), 200, `case ${i}: demoted`);
      assert.deepEqual((await me(user.token)).body, { user_id: user.email, role: 'read-only' }, `case ${i}: /me`);
      assert.equal(await canWrite(user), 403, `case ${i}: writes after`);
    }
  });

  test('promotion and demotion of admin take effect on the next request', async () => {
    const user = await account();
    assert.equal((await svc.post('/svcapi/admin/user/delete', { email: 'nobody@plant.test' }, user.token)).status, 403);
    assert.equal((await call(admin, 'PUT', `/svcapi/users/${user.id}`, { role: 'admin' })).status, 200);
    assert.equal((await me(user.token)).body.role, 'admin');
    assert.equal((await svc.post('/svcapi/admin/user/delete', { email: 'nobody@plant.test' }, user.token)).status, 404, 'admin route reached');
    assert.equal((await call(admin, 'PUT', `/svcapi/users/${user.id}`, { role: 'read-write' })).status, 200);
    assert.equal((await svc.post('/svcapi/admin/user/delete', { email: 'nobody@plant.test' }, user.token)).status, 403);
  });

  test('grants: adding, narrowing and removing a profile changes what the same token sees', async () => {
    const user = await account();
    assert.deepEqual(await visibleUnits(user.token), []);
    const profile = (await call(admin, 'POST', '/svcapi/userprofiles', { usersId: user.id, accessAllowed: { units: [unitA, unitB] } })).body;
    assert.deepEqual(await visibleUnits(user.token), [unitA, unitB].sort(), 'grant added after login');
    assert.equal((await call(admin, 'PUT', `/svcapi/userprofiles/${profile.id}`, { accessAllowed: { units: [unitB] } })).status, 200);
    assert.deepEqual(await visibleUnits(user.token), [unitB], 'grant narrowed');
    assert.equal((await call(admin, 'POST', `/svcapi/userprofiles/update?${q({ usersId: Number(user.id) })}`, { accessAllowed: { units: [unitA] } })).status, 200);
    assert.deepEqual(await visibleUnits(user.token), [unitA], 'grant changed by update-all');
    assert.equal((await call(admin, 'DELETE', `/svcapi/userprofiles/${profile.id}`)).status, 200);
    assert.deepEqual(await visibleUnits(user.token), [], 'profile deleted');
  });

  test('a password change ends every older token; a login after it works at once', async () => {
    const byAdmin = await account();
    assert.equal((await call(admin, 'PUT', `/svcapi/users/${byAdmin.id}`, { password: 'reset-password-1' })).status, 200);
    const refused = await me(byAdmin.token);
    assert.equal(refused.status, 401);
    assert.match(refused.body.error, /password changed/);
    assert.equal((await me(await svc.login(byAdmin.email, 'reset-password-1'))).status, 200);

    // The user changes it with their own token, then logs in within the same second.
    const self = await account();
    const second = await svc.login(self.email, self.password);
    assert.equal((await call(self.token, 'PUT', `/svcapi/users/${self.id}`, { password: 'my-new-password-1' })).status, 200);
    assert.equal((await me(self.token)).status, 401);
    assert.equal((await me(second)).status, 401, 'every token issued before the change');
    assert.equal((await me(await svc.login(self.email, 'my-new-password-1'))).status, 200);
  });

  test('an email change ends the tokens issued to the old email', async () => {
    const user = await account();
    assert.equal((await call(admin, 'PUT', `/svcapi/users/${user.id}`, { email: `renamed-${user.email}` })).status, 200);
    assert.equal((await me(user.token)).status, 401);
  });

  test('the role and grants inside a token are not what the server goes by', async () => {
    const user = await account();
    const claims = jwt.decode(user.token) as jwt.JwtPayload;
    assert.equal(claims.role, 'read-write');
    assert.equal(typeof claims.stamp, 'string');
    await call(admin, 'PUT', `/svcapi/users/${user.id}`, { role: 'read-only' });
    assert.equal((await me(user.token)).body.role, 'read-only');
  });
});
