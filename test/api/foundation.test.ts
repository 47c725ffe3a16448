// The service skeleton over real HTTPS: public routes, routing errors, body
// handling, the OpenAPI document against the mounted routes, settings
// validation at start, restart reuse of certificates and secret, shutdown.

import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { X509Certificate } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { parse as parseYaml } from 'yaml';
import { waitFor } from '../support/wait-for.js';
import { ADMIN_PASSWORD, rawRequest, startService, tempDir, type TestService } from './harness.js';

const MAIN = fileURLToPath(new URL('../../src/main.js', import.meta.url));

// Routes this issue mounts, and the contract routes that must stay unmounted.
const MOUNTED: Array<[string, string]> = [
  ['GET', '/svcapi/ca-cert'], ['GET', '/docs'], ['GET', '/svcapi/openapi.yaml'], ['GET', '/svcapi/context/options'],
  ['GET', '/svcapi/mdns'], ['GET', '/ingest/health'], ['POST', '/svcapi/register'], ['POST', '/svcapi/login'],
  ['GET', '/svcapi/me'], ['GET', '/svcapi/me/details'], ['POST', '/svcapi/admin/user/delete'],
];
/** Every route SPEC names as defined in code but not mounted. */
const UNMOUNTED: Array<[string, string]> = [
  ['POST', '/svcapi/update_password'],
  ['GET', '/elog/group/data/health'], ['POST', '/elog/group/data/health'], ['POST', '/elog/group/data'],
  ['POST', '/elog/group/data/deviation-report'], ['POST', '/elog/group/data/downloadcsv'], ['POST', '/elog/summary/download'],
  ['GET', '/dataflow/ems/kpiparams'], ['POST', '/dataflow/ems/kpiparams'], ['GET', '/dataflow/ems/tags/summary'],
  ['GET', '/dataflow/ems/tags/summary/download'], ['GET', '/dataflow/ems/meters/group-config'], ['POST', '/dataflow/ems/meters/group-config'],
];

describe('service foundation', () => {
  let svc: TestService;
  before(async () => {
    svc = await startService();
  });
  after(() => svc.dispose());

  test('public routes answer without a token', async () => {
    const health = await svc.get('/ingest/health');
    assert.equal(health.status, 200);
    assert.deepEqual(health.body, { status: 'ok' });

    const options = await svc.get('/svcapi/context/options');
    assert.deepEqual(options.body, { orgs: [], sites: [], units: [] });

    const mdns = await svc.get('/svcapi/mdns');
    assert.equal(mdns.status, 200);
    assert.match(mdns.body.url, new RegExp(`^https://[^/]+:${svc.port}$`));

    const docs = await svc.get('/docs');
    assert.equal(docs.status, 200);
    assert.match(String(docs.headers['content-type']), /^text\/html/);
    assert.match(docs.text, /<html/i);
    assert.match(docs.text, /\/svcapi\/login/);
  });

  test('ca-cert is the CA that signed the server certificate, for localhost and loopback addresses', async () => {
    const res = await svc.get('/svcapi/ca-cert');
    assert.equal(res.status, 200);
    const ca = new X509Certificate(res.text);
    assert.equal(ca.ca, true);
    const server = new X509Certificate(fs.readFileSync(path.join(svc.dataDir, 'tls', 'server.crt')));
    assert.ok(server.verify(ca.publicKey));
    assert.equal(server.checkHost('localhost'), 'localhost');
    assert.equal(server.checkIP('127.0.0.1'), '127.0.0.1');
    // The harness already trusts only this CA; an untrusting client is refused.
    await assert.rejects(rawRequest({ port: svc.port, method: 'GET', path: '/ingest/health' }), /self[- ]signed|unable to verify|certificate/i);
  });

  test('unknown path is 404, known path with another method is 405 with Allow', async () => {
    const missing = await svc.get('/svcapi/no-such-route');
    assert.equal(missing.status, 404);
    assert.equal(typeof missing.body.error, 'string');

    const wrongMethod = await svc.request('DELETE', '/svcapi/login');
    assert.equal(wrongMethod.status, 405);
    assert.equal(wrongMethod.headers.allow, 'POST');
    assert.match(wrongMethod.body.error, /DELETE/);
  });

  test('a method no route has (OPTIONS, TRACE) is 405 with an Allow naming every method of the path', async () => {
    const doc = parseYaml((await svc.get('/svcapi/openapi.yaml')).text) as { paths: Record<string, Record<string, unknown>> };
    const methodsOf = (p: string) => Object.keys(doc.paths[p] ?? {}).map((m) => m.toUpperCase()).sort();
    assert.deepEqual(methodsOf('/svcapi/tag_mappings'), ['GET', 'POST'], 'the path this test is about has GET and POST');
    assert.deepEqual(methodsOf('/svcapi/login'), ['POST']);
    for (const method of ['OPTIONS', 'TRACE']) {
      const both = await svc.request(method, '/svcapi/tag_mappings');
      assert.equal(both.status, 405, method);
      assert.equal(both.headers.allow, 'GET, HEAD, POST', method);
      assert.match(both.body.error, new RegExp(method));
      const postOnly = await svc.request(method, '/svcapi/login');
      assert.equal(postOnly.status, 405, method);
      assert.equal(postOnly.headers.allow, 'POST', method);
      assert.equal((await svc.request(method, '/svcapi/no-such-route')).status, 404, method);
    }
    // A known method the path lacks names them all too.
    const put = await svc.request('PUT', '/svcapi/tag_mappings', { body: {} });
    assert.equal(put.status, 405);
    assert.equal(put.headers.allow, 'GET, HEAD, POST');
    // Every documented operation's method is in the Allow of its path; HEAD wherever GET is.
    for (const [p, ops] of Object.entries(doc.paths)) {
      const res = await svc.request('OPTIONS', p.replace(/\{[^}]+\}/g, 'x'));
      assert.equal(res.status, 405, p);
      const allow = String(res.headers.allow).split(', ');
      for (const m of Object.keys(ops)) assert.ok(allow.includes(m.toUpperCase()), `${m.toUpperCase()} ${p} is in the Allow ${res.headers.allow}`);
      assert.equal(allow.includes('HEAD'), allow.includes('GET'), `${p}: HEAD with GET (${res.headers.allow})`);
    }
  });

  test('routes the contract lists as unmounted answer 404, with or without a token, whatever the method', async () => {
    const admin = await svc.adminToken();
    for (const [method, p] of UNMOUNTED) {
      const res = await svc.request(method, p, { body: {} });
      assert.equal(res.status, 404, `${method} ${p}`);
      for (const m of ['GET', 'POST', 'PUT', 'DELETE']) {
        const withToken = await svc.request(m, `${p}?startTime=0&endTime=1&unitsId=1`, { token: admin, body: { email: 'admin@historian.test', new_password: 'another-password-9' } });
        assert.equal(withToken.status, 404, `${m} ${p} with an admin token`);
      }
    }
    // The admin's password did not change through any of them.
    assert.ok(await svc.adminToken());
  });

  test('an admin changes a password through PUT /svcapi/users/{id}; tokens issued before it stop working', async () => {
    const admin = await svc.adminToken();
    const before = await svc.newUser('changes-password@plant.test', 'first-password-1');
    const users = (await svc.get('/svcapi/users', admin)).body as Array<{ id: string; email: string }>;
    const id = users.find((u) => u.email === 'changes-password@plant.test')!.id;
    assert.equal((await svc.get('/svcapi/me', before)).status, 200);
    const put = await svc.request('PUT', `/svcapi/users/${id}`, { token: admin, body: { password: 'second-password-2' } });
    assert.equal(put.status, 200, put.text);
    assert.equal(put.body.password, undefined, 'the hash is never answered');
    const refused = await svc.get('/svcapi/me', before);
    assert.equal(refused.status, 401);
    assert.match(refused.body.error, /password changed/);
    assert.equal((await svc.post('/svcapi/login', { email: 'changes-password@plant.test', password: 'first-password-1' })).status, 401);
    const after = await svc.login('changes-password@plant.test', 'second-password-2');
    assert.equal((await svc.get('/svcapi/me', after)).status, 200);
  });

  test('malformed JSON is a 400 that says so', async () => {
    const res = await svc.request('POST', '/svcapi/login', { rawBody: '{"email": "a@b.c",', headers: { 'content-type': 'application/json' } });
    assert.equal(res.status, 400);
    assert.match(res.body.error, /malformed JSON/);
  });

  test('schema violations are a 400 naming the field', async () => {
    const missing = await svc.post('/svcapi/login', { email: 'a@b.c' });
    assert.equal(missing.status, 400);
    assert.match(missing.body.error, /password/);

    const wrongType = await svc.post('/svcapi/login', { email: 42, password: 'x' });
    assert.equal(wrongType.status, 400);
    assert.match(wrongType.body.error, /email/);
  });

  test('the OpenAPI document lists exactly the mounted routes, version 0.1.0', async () => {
    const res = await svc.get('/svcapi/openapi.yaml');
    assert.equal(res.status, 200);
    const doc = parseYaml(res.text) as { openapi: string; info: { version: string }; paths: Record<string, Record<string, unknown>> };
    assert.match(doc.openapi, /^3\./);
    assert.equal(doc.info.version, '0.1.0');
    const documented = Object.entries(doc.paths).flatMap(([p, ops]) => Object.keys(ops).map((m) => `${m.toUpperCase()} ${p}`));
    for (const [method, p] of MOUNTED) assert.ok(documented.includes(`${method} ${p}`), `${method} ${p} is documented`);
    for (const [method, p] of UNMOUNTED) assert.ok(!documented.includes(`${method} ${p}`), `${method} ${p} is not documented`);
    // Every documented operation is really mounted (never a routing 404).
    for (const entry of documented) {
      const [method, p] = entry.split(' ');
      const res2 = await svc.request(method, p.replace(/\{[^}]+\}/g, 'x'), method === 'GET' ? {} : { body: {} });
      assert.notEqual(res2.status, 405, entry);
      if (res2.status === 404) assert.doesNotMatch(res2.text, /no route/, entry);
    }
  });

  test('request log lines carry method, path, status and duration', async () => {
    await svc.get('/ingest/health?probe=1');
    await waitFor(() => svc.logs().some((l) => l.msg === 'request' && l.path === '/ingest/health?probe=1'), 'the request is logged');
    const line = svc.logs().find((l) => l.msg === 'request' && l.path === '/ingest/health?probe=1')!;
    assert.equal(line.method, 'GET');
    assert.equal(line.status, 200);
    assert.equal(typeof line.ms, 'number');
  });

  test('access_token query values never reach the log', async () => {
    await svc.get('/svcapi/me?access_token=SECRET-TOKEN-VALUE&x=1');
    await waitFor(() => svc.logs().some((l) => l.msg === 'request' && String(l.path).startsWith('/svcapi/me?')), 'the request is logged');
    assert.ok(!svc.logLines.some((l) => l.includes('SECRET-TOKEN-VALUE')));
    assert.ok(!svc.logLines.some((l) => l.includes(ADMIN_PASSWORD)));
  });
});

describe('body limits', () => {
  let svc: TestService;
  before(async () => {
    svc = await startService({ config: { server: { maxPublicBodyBytes: 1024 } } });
  });
  after(() => svc.dispose());

  test('a body over server.maxPublicBodyBytes is 413 and nothing is processed', async () => {
    const big = await svc.post('/svcapi/register', { email: 'big@x.y', password: 'p'.repeat(2000) });
    assert.equal(big.status, 413);
    assert.match(big.body.error, /larger than 1024 bytes \(server\.maxPublicBodyBytes\)/);
    const login = await svc.post('/svcapi/login', { email: 'big@x.y', password: 'p'.repeat(2000).slice(0, 900) });
    assert.equal(login.status, 401, 'the oversized register created nothing');
  });
});

describe('settings', () => {
  test('an invalid setting stops the start with a message naming the key', () => {
    const dataDir = tempDir();
    try {
      const run = spawnSync(process.execPath, [MAIN], { env: { ...process.env, HISTORIAN_PORT: 'abc', HISTORIAN_DATA_DIR: dataDir }, encoding: 'utf8', timeout: 20_000 });
      assert.equal(run.status, 1);
      assert.match(run.stderr, /server\.port/);

      const configFile = path.join(dataDir, 'bad.json');
      fs.writeFileSync(configFile, JSON.stringify({ auth: { tokenLifetimeSecs: 5 } }));
      const run2 = spawnSync(process.execPath, [MAIN], { env: { ...process.env, HISTORIAN_CONFIG: configFile, HISTORIAN_DATA_DIR: dataDir }, encoding: 'utf8', timeout: 20_000 });
      assert.equal(run2.status, 1);
      assert.match(run2.stderr, /auth\.tokenLifetimeSecs/);
    } finally {
      fs.rmSync(dataDir, { recursive: true, force: true });
    }
  });

  test('configured certificate paths replace the generated ones; ca-cert is 404 without a CA file', async () => {
    const first = await startService();
    const tlsDir = path.join(first.dataDir, 'tls');
    await first.stop();
    const dataDir = tempDir();
    const svc = await startService({
      dataDir,
      trustCa: false,
      config: { tls: { certFile: path.join(tlsDir, 'server.crt'), keyFile: path.join(tlsDir, 'server.key') } },
    });
    try {
      assert.ok(!fs.existsSync(path.join(dataDir, 'tls')), 'no certificates generated');
      const res = await rawRequest({ port: svc.port, method: 'GET', path: '/svcapi/ca-cert', rejectUnauthorized: false });
      assert.equal(res.status, 404);
      const health = await rawRequest({ port: svc.port, method: 'GET', path: '/ingest/health', ca: fs.readFileSync(path.join(tlsDir, 'ca.crt'), 'utf8') });
      assert.equal(health.status, 200);
    } finally {
      await svc.dispose();
      await first.dispose();
    }
  });
});

describe('restart and shutdown', () => {
  test('certificates, secret and accounts survive a restart; SIGTERM exits 0', async () => {
    const svc = await startService();
    const token = await svc.adminToken();
    const caBefore = svc.ca;
    const stopped = await svc.stop('SIGTERM');
    assert.deepEqual(stopped, { code: 0, signal: null });
    assert.ok(svc.logs().some((l) => l.msg === 'stopped'));

    const again = await startService({ dataDir: svc.dataDir });
    try {
      assert.equal(again.ca, caBefore, 'same CA after restart');
      const me = await again.get('/svcapi/me', token);
      assert.equal(me.status, 200, 'token from before the restart still valid');
      const stopped2 = await again.stop('SIGINT');
      assert.deepEqual(stopped2, { code: 0, signal: null });
    } finally {
      await again.dispose();
    }
  });

  test('without HISTORIAN_ADMIN_PASSWORD a generated admin password is written to a 0600 file and works', async () => {
    const svc = await startService({ env: { HISTORIAN_ADMIN_PASSWORD: undefined } });
    try {
      const file = path.join(svc.dataDir, 'secrets', 'admin-password.txt');
      assert.equal(fs.statSync(file).mode & 0o777, 0o600);
      const [email, password] = fs.readFileSync(file, 'utf8').trim().split('\n');
      const token = await svc.login(email, password);
      const me = await svc.get('/svcapi/me', token);
      assert.deepEqual(me.body, { user_id: email, role: 'admin' });
      assert.ok(svc.logLines.some((l) => l.includes(file)), 'the file path is logged');
      assert.ok(!svc.logLines.some((l) => l.includes(password)), 'the password is not');
    } finally {
      await svc.dispose();
    }
  });
});

describe('graceful shutdown', () => {
  test('SIGTERM lets a request in flight finish, refuses new connections, then exits 0', async () => {
    const svc = await startService();
    try {
      const https = await import('node:https');
      const body = JSON.stringify({ email: 'slow@plant.test', password: 'slow-password-1' });
      const req = https.request({
        host: '127.0.0.1', servername: 'localhost', port: svc.port, method: 'POST', path: '/svcapi/login', ca: svc.ca,
        headers: { 'content-type': 'application/json', 'content-length': String(body.length) },
      });
      const reply = new Promise<number>((resolve, reject) => {
        req.on('response', (res) => {
          res.resume();
          res.on('end', () => resolve(res.statusCode ?? 0));
        });
        req.on('error', reject);
      });
      req.write(body.slice(0, 10));
      // Nothing tells a client that the server has read the head of its request: give it a moment.
      await new Promise((r) => setTimeout(r, 200));
      svc.child.kill('SIGTERM');
      // The rest of the body arrives after the service has taken the signal.
      await waitFor(() => svc.logs().some((l) => l.msg === 'shutting down'), 'the service logs that it is shutting down');
      req.end(body.slice(10));
      assert.equal(await reply, 401, 'the in-flight login was answered normally');
      assert.deepEqual(await svc.stop(), { code: 0, signal: null });
      await assert.rejects(rawRequest({ port: svc.port, method: 'GET', path: '/ingest/health', ca: svc.ca }), /ECONNREFUSED/);
    } finally {
      await svc.dispose();
    }
  });
});
