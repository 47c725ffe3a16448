// Issue 12 item 9: login and register under abuse. A spray of distinct emails
// from one address is limited per address; failed logins lock an email only
// for the address they came from (so nobody can lock the admin out); emails
// are normalised and look-alikes refused; register does not reveal which
// accounts exist. Two client addresses are real ones: 127.0.0.1 and ::1.

import assert from 'node:assert/strict';
import fs from 'node:fs';
import { after, before, describe, test } from 'node:test';
import { waitFor } from '../support/wait-for.js';
import { ADMIN_EMAIL, ADMIN_PASSWORD, rawRequest, startService, tempDir, type HttpResult, type TestService } from './harness.js';

/** POST from the IPv6 loopback, a second client address. */
function postFromIpv6(svc: TestService, path: string, body: unknown): Promise<HttpResult> {
  const payload = JSON.stringify(body);
  return rawRequest({ port: svc.port, host: '::1', method: 'POST', path, ca: svc.ca, payload, headers: { 'content-type': 'application/json' } });
}

describe('per-address limit', () => {
  let svc: TestService;
  before(async () => {
    svc = await startService({ config: { auth: { rateLimitRequestsPerAddress: 5 } } });
  });
  after(() => svc.dispose());

  test('a spray of distinct emails from one address is 429 after the limit; another address is not affected', async () => {
    for (let i = 0; i < 5; i++) {
      const res = await svc.post('/svcapi/login', { email: `spray${i}@plant.test`, password: 'guess-password' });
      assert.equal(res.status, 401, `attempt ${i}`);
    }
    const over = await svc.post('/svcapi/login', { email: 'spray-last@plant.test', password: 'guess-password' });
    assert.equal(over.status, 429);
    assert.match(over.body.error, /from your address.*auth\.rateLimitRequestsPerAddress/);
    assert.ok(Number(over.headers['retry-after']) > 0);
    const register = await svc.post('/svcapi/register', { email: 'new@plant.test', password: 'new-password-1' });
    assert.equal(register.status, 429, 'register counts too');

    const elsewhere = await postFromIpv6(svc, '/svcapi/login', { email: ADMIN_EMAIL, password: ADMIN_PASSWORD });
    assert.equal(elsewhere.status, 200, 'the admin logs in from another address');
  });
});

describe('login abuse', () => {
  let svc: TestService;
  before(async () => {
    svc = await startService();
  });
  after(() => svc.dispose());

  test('register refuses control, invisible, direction, look-alike, malformed and over-long emails, naming the problem', async () => {
    const cases: Array<[string, RegExp]> = [
      ['ad\u200Bmin@plant.test', /invisible/],
      ['a\u0000dmin@plant.test', /control/],
      ['admin\u202E@plant.test', /text-direction/],
      ['аdmin@plant.test', /ASCII/], // Cyrillic а in the local part
      ['admin@рlant.test', /mixes letters of different scripts/], // Cyrillic р
      ['admin@аррӏе.com', /look like Latin/],
      [`${'a'.repeat(10_000)}@plant.test`, /254 bytes/],
      ['a@@plant.test', /one @|malformed|name@host/],
      ['admin@plant..test', /malformed/],
    ];
    for (const [email, error] of cases) {
      const res = await svc.post('/svcapi/register', { email, password: 'long-enough-1' });
      assert.equal(res.status, 200, JSON.stringify(email).slice(0, 40));
      assert.equal(res.body.success, false, JSON.stringify(email).slice(0, 40));
      assert.match(res.body.error, error, JSON.stringify(email).slice(0, 40));
    }
    const admin = await svc.adminToken();
    const users = (await svc.get('/svcapi/users', admin)).body as Array<{ email: string }>;
    assert.deepEqual(users.map((u) => u.email), [ADMIN_EMAIL], 'none was stored');
  });

  test('emails are one identity however they are spelled (NFKC, case, spaces, xn--)', async () => {
    const reg = await svc.post('/svcapi/register', { email: ' ＷＩＤＥ@Plant.Test ', password: 'wide-password-1' });
    assert.equal(reg.body.success, true);
    assert.equal((await svc.post('/svcapi/login', { email: 'wide@plant.test', password: 'wide-password-1' })).status, 200);

    assert.equal((await svc.post('/svcapi/register', { email: 'user@bücher.test', password: 'idn-password-1' })).body.success, true);
    const token = await svc.login('user@xn--bcher-kva.test', 'idn-password-1');
    assert.equal((await svc.get('/svcapi/me', token)).body.user_id, 'user@bücher.test');
  });

  test('login with an email that cannot be an address is 400 naming the problem', async () => {
    const res = await svc.post('/svcapi/login', { email: 'ad\u200Bmin@plant.test', password: ADMIN_PASSWORD });
    assert.equal(res.status, 400);
    assert.match(res.body.error, /invisible/);
  });

  test('accounts made through /svcapi/users follow the same email rules', async () => {
    const admin = await svc.adminToken();
    const bad = await svc.post('/svcapi/users', { email: 'x\u200B@plant.test', password: 'pw-123456789' }, admin);
    assert.equal(bad.status, 400);
    assert.match(bad.body.error, /invisible/);
    const good = await svc.post('/svcapi/users', { email: 'ＭＡＤＥ@plant.test', password: 'made-password-1' }, admin);
    assert.equal(good.status, 200);
    assert.equal(good.body.email, 'made@plant.test');
    assert.equal((await svc.post('/svcapi/login', { email: 'made@plant.test', password: 'made-password-1' })).status, 200);
  });

  test('register answers an existing email exactly as a new one, changes nothing, and logs the attempt', async () => {
    const fresh = await svc.post('/svcapi/register', { name: 'Zed', email: 'zed@plant.test', password: 'zed-password-1' });
    const existing = await svc.post('/svcapi/register', { name: 'Eve', email: 'ZED@plant.test', password: 'eve-password-1' });
    assert.equal(fresh.status, 200);
    assert.equal(fresh.body.success, true);
    assert.equal(existing.text, fresh.text);
    assert.equal((await svc.post('/svcapi/login', { email: 'zed@plant.test', password: 'eve-password-1' })).status, 401);
    assert.equal((await svc.post('/svcapi/login', { email: 'zed@plant.test', password: 'zed-password-1' })).status, 200);
    // Invalid input still fails clearly.
    const short = await svc.post('/svcapi/register', { email: 'zed@plant.test', password: 'x' });
    assert.equal(short.body.success, false);
    assert.match(short.body.error, /at least 8/);
    // The log is written in batches: wait for the line rather than for a fixed time.
    const logged = () => svc.logs().some((l) => l.msg === 'register for an email that already has an account; nothing changed' && l.email === 'zed@plant.test');
    await waitFor(logged, 'the attempt is logged');
  });

  test('without debug.clockRoute nobody can move the auth clock: the route is not mounted', async () => {
    const res = await svc.post('/svcapi/_debug/advance_clock', { seconds: 900 }, await svc.adminToken());
    assert.equal(res.status, 404, res.text);
  });

  // Last: it locks the admin out of 127.0.0.1 for the rest of this service's life.
  test('five wrong passwords from one address do not lock the admin out from another', async () => {
    for (let i = 0; i < 5; i++) {
      assert.equal((await svc.post('/svcapi/login', { email: ADMIN_EMAIL, password: `wrong-${i}` })).status, 401);
    }
    const locked = await svc.post('/svcapi/login', { email: ADMIN_EMAIL, password: ADMIN_PASSWORD });
    assert.equal(locked.status, 429, 'the address that failed is locked');
    assert.match(locked.body.error, /locked for your address/);

    const owner = await postFromIpv6(svc, '/svcapi/login', { email: ADMIN_EMAIL, password: ADMIN_PASSWORD });
    assert.equal(owner.status, 200, 'the owner, from another address, is not');
    assert.equal(typeof owner.body.token, 'string');
  });
});

test('a start with an admin email that breaks the email rules stops with a message naming the setting', async () => {
  const dataDir = tempDir();
  try {
    await assert.rejects(startService({ dataDir, env: { HISTORIAN_ADMIN_EMAIL: 'ad\u200Bmin@plant.test' } }), /auth\.adminEmail.*invisible/s);
  } finally {
    fs.rmSync(dataDir, { recursive: true, force: true });
    fs.rmSync(`${dataDir}.config.json`, { force: true });
  }
});
