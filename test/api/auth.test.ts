// Authentication over real HTTPS: register, login, tokens (every bad-token
// case), rate limit, lockout, admin delete, and that no password ever comes
// back in a reply or reaches the log. Expiry and lockout are reached by moving
// the service's auth clock forward (debug.clockRoute), not by sleeping.

import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import jwt from 'jsonwebtoken';
import { waitFor } from '../support/wait-for.js';
import { ADMIN_EMAIL, ADMIN_PASSWORD, startService, type HttpResult, type TestService } from './harness.js';

describe('authentication', () => {
  let svc: TestService;
  let secret: Buffer;
  const replies: HttpResult[] = [];
  const PASSWORDS = [ADMIN_PASSWORD, 'alice-password-1', 'bob-password-12', 'wrong-password-x'];

  const post = async (p: string, body: unknown, token?: string) => {
    const res = await svc.post(p, body, token);
    replies.push(res);
    return res;
  };
  const get = async (p: string, token?: string) => {
    const res = await svc.get(p, token);
    replies.push(res);
    return res;
  };

  before(async () => {
    svc = await startService({ config: { debug: { clockRoute: true } } });
    secret = Buffer.from(fs.readFileSync(path.join(svc.dataDir, 'secrets', 'jwt.secret'), 'utf8').trim(), 'hex');
  });
  after(() => svc.dispose());

  test('register answers 200 with success true, and the same reply for an email that already has an account', async () => {
    const first = await post('/svcapi/register', { name: 'Alice', email: 'alice@plant.test', password: 'alice-password-1' });
    assert.equal(first.status, 200);
    assert.equal(first.body.success, true);
    assert.equal(typeof first.body.message, 'string');

    // The reply must not tell whether the account exists; the existing account is left as it is.
    const again = await post('/svcapi/register', { name: 'Mallory', email: 'Alice@Plant.test', password: 'mallory-password-1' });
    assert.equal(again.status, 200);
    assert.equal(again.text, first.text, 'same reply as for a new email');
    assert.equal((await post('/svcapi/login', { email: 'alice@plant.test', password: 'mallory-password-1' })).status, 401);
    assert.equal((await post('/svcapi/login', { email: 'alice@plant.test', password: 'alice-password-1' })).status, 200);
    // The log is written in batches: wait for the line rather than for a fixed time.
    const logged = () => svc.logs().some((l) => l.msg === 'register for an email that already has an account; nothing changed' && l.email === 'alice@plant.test');
    await waitFor(logged, 'the attempt is logged');
  });

  test('register refuses bad fields with 200 and success false', async () => {
    for (const body of [{}, { email: 'no-at-sign', password: 'long-enough-1' }, { email: 'short@pw.test', password: 'x' }, { email: 5, password: 'long-enough-1' }]) {
      const res = await post('/svcapi/register', body);
      assert.equal(res.status, 200, JSON.stringify(body));
      assert.equal(res.body.success, false, JSON.stringify(body));
      assert.equal(typeof res.body.error, 'string');
    }
  });

  test('login gives a token whose claims name the subject, role read-write and empty grants', async () => {
    const res = await post('/svcapi/login', { email: 'alice@plant.test', password: 'alice-password-1' });
    assert.equal(res.status, 200);
    const claims = jwt.verify(res.body.token, secret, { algorithms: ['HS256'] }) as jwt.JwtPayload;
    assert.equal(claims.sub, 'alice@plant.test');
    assert.equal(claims.role, 'read-write');
    assert.deepEqual([claims.units_id, claims.sites_id, claims.orgs_id], [[], [], []]);
    assert.equal(claims.exp! - claims.iat!, 12 * 3600, 'default lifetime 12 h');

    const me = await get('/svcapi/me', res.body.token);
    assert.deepEqual(me.body, { user_id: 'alice@plant.test', role: 'read-write' });
    const details = await get('/svcapi/me/details', res.body.token);
    assert.deepEqual(details.body, { unitConfigured: false });
  });

  test('wrong password and unknown email are both 401 "invalid username or password"', async () => {
    for (const body of [{ email: 'alice@plant.test', password: 'wrong-password-x' }, { email: 'nobody@plant.test', password: 'wrong-password-x' }]) {
      const res = await post('/svcapi/login', body);
      assert.equal(res.status, 401);
      assert.equal(res.body.error, 'invalid username or password');
    }
  });

  test('the token is accepted with and without "Bearer "', async () => {
    const token = await svc.login('alice@plant.test', 'alice-password-1');
    const bare = await svc.request('GET', '/svcapi/me', { headers: { authorization: token } });
    assert.equal(bare.status, 200);
    const bearer = await svc.request('GET', '/svcapi/me', { headers: { authorization: `Bearer ${token}` } });
    assert.equal(bearer.status, 200);
  });

  test('missing, malformed, alg none, wrong-key and expired tokens are 401', async () => {
    const claims = { role: 'admin', units_id: [], sites_id: [], orgs_id: [] };
    const b64 = (o: object) => Buffer.from(JSON.stringify(o)).toString('base64url');
    const now = Math.floor(Date.now() / 1000);
    const cases: Record<string, string | undefined> = {
      missing: undefined,
      empty: 'Bearer ',
      malformed: 'Bearer not.a.jwt',
      garbage: 'Bearer abc',
      algNone: `${b64({ alg: 'none', typ: 'JWT' })}.${b64({ ...claims, sub: ADMIN_EMAIL, exp: now + 3600 })}.`,
      wrongKey: jwt.sign(claims, 'some-other-secret', { algorithm: 'HS256', subject: ADMIN_EMAIL, expiresIn: 3600 }),
      expired: jwt.sign({ ...claims, exp: now - 10 }, secret, { algorithm: 'HS256', subject: ADMIN_EMAIL }),
      hs512: jwt.sign(claims, secret, { algorithm: 'HS512', subject: ADMIN_EMAIL, expiresIn: 3600 }),
      noRole: jwt.sign({ units_id: [], sites_id: [], orgs_id: [] }, secret, { algorithm: 'HS256', subject: ADMIN_EMAIL, expiresIn: 3600 }),
    };
    for (const [name, header] of Object.entries(cases)) {
      const res = await svc.request('GET', '/svcapi/me', { headers: header === undefined ? {} : { authorization: header } });
      assert.equal(res.status, 401, name);
      assert.equal(typeof res.body.error, 'string', name);
    }
  });

  test('a cached token is refused once it expires', async () => {
    const admin = await svc.adminToken();
    // iat is the service's own clock: the token below expires a minute after it.
    const { stamp, iat } = jwt.decode(await svc.login('alice@plant.test', 'alice-password-1')) as jwt.JwtPayload;
    const token = jwt.sign({ role: 'read-write', units_id: [], sites_id: [], orgs_id: [], stamp, exp: iat! + 60 }, secret, {
      algorithm: 'HS256', subject: 'alice@plant.test',
    });
    assert.equal((await svc.get('/svcapi/me', token)).status, 200);
    await svc.advanceAuthClock(61, admin);
    assert.equal((await svc.get('/svcapi/me', token)).status, 401);
  });

  test('the 31st register or login for one email within 60 s is 429, and allowed again once the 60 s have passed', async () => {
    for (let i = 1; i <= 30; i++) {
      const res = await post('/svcapi/register', { email: 'flood@plant.test', password: 'flood-password-1' });
      assert.equal(res.status, 200, `register ${i}`);
    }
    const over = await post('/svcapi/register', { email: 'flood@plant.test', password: 'flood-password-1' });
    assert.equal(over.status, 429);
    assert.ok(Number(over.headers['retry-after']) > 0);
    // Other emails are not affected.
    assert.equal((await post('/svcapi/register', { email: 'calm@plant.test', password: 'calm-password-1' })).body.success, true);

    await post('/svcapi/register', { email: 'bob@plant.test', password: 'bob-password-12' });
    for (let i = 1; i < 30; i++) {
      const res = await post('/svcapi/login', { email: 'bob@plant.test', password: 'bob-password-12' });
      assert.equal(res.status, 200, `login ${i}`);
    }
    const overLogin = await post('/svcapi/login', { email: 'bob@plant.test', password: 'bob-password-12' });
    assert.equal(overLogin.status, 429);

    await svc.advanceAuthClock(60, await svc.adminToken());
    assert.equal((await post('/svcapi/login', { email: 'bob@plant.test', password: 'bob-password-12' })).status, 200, 'the window has passed');
  });

  test('five failed logins lock the account: 429 even with the right password', async () => {
    await post('/svcapi/register', { email: 'carol@plant.test', password: 'carol-password-1' });
    for (let i = 0; i < 5; i++) {
      assert.equal((await post('/svcapi/login', { email: 'carol@plant.test', password: 'wrong-password-x' })).status, 401);
    }
    const locked = await post('/svcapi/login', { email: 'carol@plant.test', password: 'carol-password-1' });
    assert.equal(locked.status, 429);
    assert.match(locked.body.error, /locked/);
    assert.ok(Number(locked.headers['retry-after']) > 14 * 60, 'locked for about 15 minutes');
  });

  test('admin user delete: 400 empty, 404 missing, 200 deleted; the deleted account and its tokens stop working', async () => {
    const admin = await svc.adminToken();
    await post('/svcapi/register', { email: 'dave@plant.test', password: 'dave-password-1' });
    const daveToken = await svc.login('dave@plant.test', 'dave-password-1');

    const empty = await post('/svcapi/admin/user/delete', { email: '' }, admin);
    assert.equal(empty.status, 400);
    assert.equal(typeof empty.body.error, 'string');
    const noField = await post('/svcapi/admin/user/delete', {}, admin);
    assert.equal(noField.status, 400);
    const missing = await post('/svcapi/admin/user/delete', { email: 'ghost@plant.test' }, admin);
    assert.equal(missing.status, 404);
    assert.equal(typeof missing.body.error, 'string');

    const byUser = await post('/svcapi/admin/user/delete', { email: 'dave@plant.test' }, daveToken);
    assert.equal(byUser.status, 403, 'non-admin refused');
    const noToken = await post('/svcapi/admin/user/delete', { email: 'dave@plant.test' });
    assert.equal(noToken.status, 401);

    const ok = await post('/svcapi/admin/user/delete', { email: 'dave@plant.test' }, admin);
    assert.equal(ok.status, 200);
    assert.deepEqual(ok.body, { success: true });
    assert.equal((await post('/svcapi/login', { email: 'dave@plant.test', password: 'dave-password-1' })).status, 401);
    assert.equal((await get('/svcapi/me', daveToken)).status, 401, 'token of a deleted account refused');
  });

  test('no reply and no log line ever contains a password or a token', async () => {
    assert.ok(replies.length > 50);
    for (const res of replies) {
      for (const pw of PASSWORDS) assert.ok(!res.text.includes(pw), `reply leaked a password: ${res.text}`);
      assert.ok(!/scrypt\$/.test(res.text), 'reply leaked a password hash');
    }
    const tokens = replies.map((r) => r.body?.token).filter((t): t is string => typeof t === 'string');
    assert.ok(tokens.length > 0);
    // The log is written in batches and in order: once this request's line is there, so is every earlier one.
    await svc.get('/ingest/health?probe=auth-log');
    await waitFor(() => svc.logs().some((l) => l.msg === 'request' && l.path === '/ingest/health?probe=auth-log'), 'the last request is logged');
    const log = svc.logLines.join('\n');
    for (const pw of PASSWORDS) assert.ok(!log.includes(pw), 'log leaked a password');
    for (const token of tokens) assert.ok(!log.includes(token), 'log leaked a token');
  });
});

describe('lockout expiry', () => {
  let svc: TestService;
  before(async () => {
    svc = await startService({ config: { debug: { clockRoute: true } } });
  });
  after(() => svc.dispose());

  test('a locked account opens again once the lockout (auth.lockoutSeconds, 900 by default) has passed', async () => {
    const admin = await svc.adminToken();
    await svc.post('/svcapi/register', { email: 'erin@plant.test', password: 'erin-password-1' });
    for (let i = 0; i < 5; i++) await svc.post('/svcapi/login', { email: 'erin@plant.test', password: 'nope-nope-nope' });
    assert.equal((await svc.post('/svcapi/login', { email: 'erin@plant.test', password: 'erin-password-1' })).status, 429);
    await svc.advanceAuthClock(840, admin);
    assert.equal((await svc.post('/svcapi/login', { email: 'erin@plant.test', password: 'erin-password-1' })).status, 429, 'still locked after 14 minutes');
    await svc.advanceAuthClock(60, admin);
    assert.equal((await svc.post('/svcapi/login', { email: 'erin@plant.test', password: 'erin-password-1' })).status, 200);
  });
});
