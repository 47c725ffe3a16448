// The proxied services (issue 20), from WIRE.md "Proxied services" and README "Proxied services":
// POST /svcapi/create_qdrant_collection through Qdrant's JS client against a Qdrant simulator
// (test/support/qdrant-simulator.ts), and /svcapi/adk/* forwarded to a small agent-service stand-in
// (test/support/adk-upstream.ts) that records what it got. One service has both upstreams set,
// one has neither (501), one points both at a closed port (502).

import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { AdkUpstream } from '../support/adk-upstream.js';
import { freePort } from '../support/ports.js';
import { QdrantSimulator } from '../support/qdrant-simulator.js';
import { waitFor } from '../support/wait-for.js';
import { ADMIN_EMAIL, startService, type HttpResult, type TestService } from './harness.js';

const CREATE = '/svcapi/create_qdrant_collection';
/** Upstream timeouts of the configured service: short enough for the hang tests, long enough for a loaded machine. */
const TIMEOUT_MS = 2000;

/** Sends a request and waits (bounded) for its answer: for calls whose upstream hangs. */
async function answered(call: Promise<HttpResult>, what: string): Promise<HttpResult> {
  let result: HttpResult | undefined;
  void call.then((r) => (result = r));
  await waitFor(() => result !== undefined, what, { timeoutMs: 30_000 });
  return result!;
}

describe('proxied services with both upstreams set', () => {
  let svc: TestService;
  let qdrant: QdrantSimulator;
  let adk: AdkUpstream;
  let admin: string;
  let reader: string;
  const READER = 'reader@plant.test';

  before(async () => {
    [qdrant, adk] = await Promise.all([QdrantSimulator.start(), AdkUpstream.start('/adk-base')]);
    svc = await startService({
      config: { vector: { qdrantUrl: qdrant.url, timeoutMs: TIMEOUT_MS }, adk: { baseUrl: adk.url, timeoutMs: TIMEOUT_MS } },
    });
    admin = await svc.adminToken();
    const made = await svc.request('POST', '/svcapi/users', { token: admin, body: { email: READER, password: 'reader-password-1', role: 'read-only' } });
    assert.equal(made.status, 200, made.text);
    reader = await svc.login(READER, 'reader-password-1');
  });
  after(async () => {
    await svc?.dispose();
    await Promise.all([qdrant?.stop(), adk?.stop()]);
  });

  test('create_qdrant_collection creates it in Qdrant with the size and distance given', async () => {
    const res = await svc.post(CREATE, { name: 'pump_embeddings', vector_size: 384, distance: 'Cosine' }, admin);
    assert.equal(res.status, 200, res.text);
    assert.deepEqual(res.body, { success: true, message: 'collection pump_embeddings created', name: 'pump_embeddings', vector_size: 384, distance: 'Cosine' });
    assert.deepEqual(qdrant.collections.get('pump_embeddings'), { size: 384, distance: 'Cosine' });
    const put = qdrant.requests.find((r) => r.method === 'PUT' && r.url === '/collections/pump_embeddings');
    assert.ok(put, 'the client sent PUT /collections/{name}');
    assert.deepEqual(JSON.parse(put.body).vectors, { size: 384, distance: 'Cosine' });
    assert.equal(put.headers.authorization, undefined);
    assert.ok(!put.body.includes(admin) && !JSON.stringify(put.headers).includes(admin), 'the token does not reach Qdrant');
  });

  test('a bad body is a 400 naming the field, and nothing reaches Qdrant', async () => {
    const seen = qdrant.requests.length;
    const cases: Array<[unknown, RegExp]> = [
      [{ vector_size: 3, distance: 'Dot' }, /'name'/],
      [{ name: '', vector_size: 3, distance: 'Dot' }, /'name'/],
      [{ name: 'a', distance: 'Dot' }, /'vector_size'/],
      [{ name: 'a', vector_size: 0, distance: 'Dot' }, /'vector_size'/],
      [{ name: 'a', vector_size: 2.5, distance: 'Dot' }, /'vector_size'/],
      [{ name: 'a', vector_size: '3', distance: 'Dot' }, /'vector_size'/],
      [{ name: 'a', vector_size: 3 }, /'distance'/],
      [{ name: 'a', vector_size: 3, distance: 'cosine' }, /'distance' must be one of Cosine, Dot, Euclid/],
      [{ name: 'a', vector_size: 3, distance: 'Dot', shards: 2 }, /unknown body field 'shards'/],
    ];
    for (const [body, message] of cases) {
      const res = await svc.post(CREATE, body, admin);
      assert.equal(res.status, 400, JSON.stringify(body));
      assert.match(res.body.error, message, JSON.stringify(body));
    }
    assert.equal(qdrant.requests.length, seen);
  });

  test('a collection name that is or decodes to . or .., or holds / \\ or NUL, is a 400 naming it; Qdrant never sees it', async () => {
    const seen = qdrant.requests.length;
    for (const name of ['..', '.', '%2e%2e', '%2E%2E', '%252e%252e', '.%2e', '../collections', '..%2f..%2fx', 'a\\b', 'a%5cb', 'a%00b', 'a\u0000b']) {
      const res = await svc.post(CREATE, { name, vector_size: 3, distance: 'Dot' }, admin);
      assert.equal(res.status, 400, `${JSON.stringify(name)}: ${res.status} ${res.text}`);
      assert.match(res.body.error, /^name /, name);
    }
    assert.equal(qdrant.requests.length, seen, 'no attack reached Qdrant');
    const ok = await svc.post(CREATE, { name: 'dots.in.the_middle-1', vector_size: 3, distance: 'Dot' }, admin);
    assert.equal(ok.status, 200, ok.text);
    assert.equal(qdrant.requests.at(-1)!.url, '/collections/dots.in.the_middle-1');
  });

  test('Qdrant refusing (4xx) passes through with its status and message; a 5xx or 401 from Qdrant is a 502', async () => {
    const first = await svc.post(CREATE, { name: 'twice', vector_size: 8, distance: 'Euclid' }, admin);
    assert.equal(first.status, 200, first.text);
    const again = await svc.post(CREATE, { name: 'twice', vector_size: 8, distance: 'Euclid' }, admin);
    assert.equal(again.status, 409);
    assert.deepEqual(again.body, { error: 'Wrong input: Collection `twice` already exists!' });

    qdrant.failNext(422, 'Validation error in JSON body: [name: too long]');
    const invalid = await svc.post(CREATE, { name: 'x', vector_size: 8, distance: 'Dot' }, admin);
    assert.equal(invalid.status, 422);
    assert.deepEqual(invalid.body, { error: 'Validation error in JSON body: [name: too long]' });

    qdrant.failNext(500, 'Service internal error: disk full');
    const broken = await svc.post(CREATE, { name: 'x', vector_size: 8, distance: 'Dot' }, admin);
    assert.equal(broken.status, 502);
    assert.match(broken.body.error, /qdrant answered 500: Service internal error: disk full/);

    qdrant.failNext(401, 'Must provide an API key');
    const refused = await svc.post(CREATE, { name: 'x', vector_size: 8, distance: 'Dot' }, admin);
    assert.equal(refused.status, 502);
    assert.match(refused.body.error, /qdrant answered 401/);

    qdrant.failNext(200, 'not json at all {', { raw: true });
    const garbled = await svc.post(CREATE, { name: 'x', vector_size: 8, distance: 'Dot' }, admin);
    assert.equal(garbled.status, 502);
    assert.equal(qdrant.collections.has('x'), false);
  });

  test('a Qdrant that does not answer is a 502 naming vector.timeoutMs', async () => {
    qdrant.hang = true;
    try {
      const res = await answered(svc.post(CREATE, { name: 'hung', vector_size: 4, distance: 'Dot' }, admin), 'the hung create answers');
      assert.equal(res.status, 502);
      assert.match(res.body.error, /did not answer within 2000 ms \(vector\.timeoutMs\)/);
    } finally {
      qdrant.hang = false;
    }
    const after = await svc.post(CREATE, { name: 'after_hang', vector_size: 4, distance: 'Dot' }, admin);
    assert.equal(after.status, 200, after.text);
  });

  test('adk: path and query go upstream exactly, with the caller\'s email and none of its credentials', async () => {
    const path = '/apps/my%20app/users/u%2B1:x@y/sessions/s-1?x=1&x=2&y=a%20b&empty=&q=%E2%9C%93&p=%2e%2e%2f';
    const res = await svc.request('GET', `/svcapi/adk${path}`, {
      token: admin,
      headers: { 'x-historian-user': 'forged@evil.test', cookie: 'session=secret-cookie', accept: 'application/json' },
    });
    assert.equal(res.status, 200, res.text);
    assert.match(String(res.headers['content-type']), /^application\/json/);
    const seen = adk.requests.at(-1)!;
    assert.equal(seen.url, `/adk-base${path}`);
    assert.equal(res.body.url, `/adk-base${path}`, 'the echo came back as the upstream wrote it');
    assert.equal(seen.method, 'GET');
    assert.equal(seen.headers['x-historian-user'], ADMIN_EMAIL);
    assert.equal(seen.headers.accept, 'application/json');
    assert.equal(seen.headers.authorization, undefined);
    assert.equal(seen.headers.cookie, undefined);
    assert.ok(!seen.raw.includes(admin), 'the token reaches the upstream nowhere');
    assert.ok(!seen.raw.includes('forged@evil.test') && !seen.raw.includes('secret-cookie'));
  });

  test('adk: every method is forwarded with its body and content type; the answer keeps status, body and content type', async () => {
    const payload = JSON.stringify({ appName: 'pumps', newMessage: { role: 'user', parts: [{ text: 'why is P-101 hot?' }] } });
    for (const method of ['POST', 'PUT', 'PATCH']) {
      const res = await svc.request(method, '/svcapi/adk/run', { token: admin, rawBody: payload, headers: { 'content-type': 'application/json' } });
      assert.equal(res.status, 200, `${method}: ${res.text}`);
      const seen = adk.requests.at(-1)!;
      assert.equal(seen.method, method);
      assert.equal(seen.url, '/adk-base/run');
      assert.equal(seen.body.toString('utf8'), payload);
      assert.equal(seen.headers['content-type'], 'application/json');
    }
    const bytes = Buffer.from([0, 1, 2, 255, 254]);
    const binary = await svc.request('POST', '/svcapi/adk/upload', { token: admin, rawBody: bytes, headers: { 'content-type': 'application/octet-stream' } });
    assert.equal(binary.status, 200, binary.text);
    assert.deepEqual(adk.requests.at(-1)!.body, bytes);
    const removed = await svc.request('DELETE', '/svcapi/adk/apps/a/users/u/sessions/s', { token: admin });
    assert.equal(removed.status, 200);
    assert.equal(adk.requests.at(-1)!.method, 'DELETE');

    const text = await svc.request('POST', '/svcapi/adk/text', { token: admin, rawBody: 'hi', headers: { 'content-type': 'text/plain' } });
    assert.equal(text.status, 201);
    assert.equal(text.headers['content-type'], 'text/plain; charset=utf-8');
    assert.equal(text.text, 'plain answer');
    const head = await svc.request('HEAD', '/svcapi/adk/text', { token: admin });
    assert.equal(head.status, 201);
    assert.equal(head.text, '');
    assert.equal(adk.requests.at(-1)!.method, 'GET', 'HEAD is sent on as GET');
    const empty = await svc.request('GET', '/svcapi/adk/empty', { token: admin });
    assert.equal(empty.status, 204);
    assert.equal(empty.text, '');
  });

  test('adk: an upstream 4xx passes through with its status and {error}; a 5xx or 401 is a 502', async () => {
    const missing = await svc.get('/svcapi/adk/status/404?detail=Session%20not%20found', admin);
    assert.equal(missing.status, 404);
    assert.deepEqual(missing.body, { error: 'Session not found' });
    const unprocessable = await svc.get('/svcapi/adk/status/422?detail=appName%20required', admin);
    assert.equal(unprocessable.status, 422);
    assert.deepEqual(unprocessable.body, { error: 'appName required' });
    const failed = await svc.get('/svcapi/adk/status/500?detail=agent%20crashed', admin);
    assert.equal(failed.status, 502);
    assert.match(failed.body.error, /adk answered 500: agent crashed/);
    const refused = await svc.get('/svcapi/adk/status/401', admin);
    assert.equal(refused.status, 502);
  });

  test('adk: an upstream that does not answer is a 502 naming adk.timeoutMs', async () => {
    const res = await answered(svc.get('/svcapi/adk/hang', admin), 'the hung forward answers');
    assert.equal(res.status, 502);
    assert.match(res.body.error, /did not answer within 2000 ms \(adk\.timeoutMs\)/);
  });

  test('adk: a path that is or decodes to a . or .. segment, or holds / \\ or NUL in any encoding, is a 400 naming the path; the upstream never sees it', async () => {
    const seen = adk.requests.length;
    const attacks: Array<[string, RegExp]> = [
      ['a/%2e%2e/secret', /\. or \.\. segments/],
      ['a/%2E/b', /\. or \.\. segments/],
      ['%2e%2e%2f%2e%2e%2fetc%2fpasswd', /may not hold \/ or \\/],
      ['%2E%2E%2F%2E%2E%2Fetc%2Fpasswd', /may not hold \/ or \\/],
      ['a/%252e%252e/%252e%252e/etc/passwd', /\. or \.\. segments/],
      ['a/%25252e%25252e/x', /\. or \.\. segments/],
      ['a/.%2e/x', /\. or \.\. segments/],
      ['a/%2e./x', /\. or \.\. segments/],
      ['a/./b', /\. or \.\. segments/],
      ['a/../b', /\. or \.\. segments/],
      ['a/..\\..\\etc/passwd', /may not hold \/ or \\/],
      ['a/%5c..%5c..%5cetc', /may not hold \/ or \\/],
      ['a/%255c..%255cetc', /may not hold \/ or \\/],
      ['users/u%2F1/sessions', /may not hold \/ or \\/],
      ['a/%252f..%252f', /may not hold \/ or \\/],
      ['a/x%00y', /NUL/],
      ['a/x%2500y', /NUL/],
      ['a/%c0%ae%c0%ae/x', /overlong/],
      ['a/%u002e%u002e/x', /\. or \.\. segments/],
      ['a/%2525252525252e/x', /encoded more than/],
    ];
    for (const [rest, message] of attacks) {
      const res = await svc.get(`/svcapi/adk/${rest}`, admin);
      assert.equal(res.status, 400, `${rest}: ${res.status} ${res.text}`);
      assert.match(res.body.error, /^the forwarded path segment \d+ /, rest);
      assert.match(res.body.error, message, rest);
    }
    assert.equal(adk.requests.length, seen, 'no attack reached the upstream');
    // Whatever did reach it (the other tests) stayed below the base path, in every decoding.
    for (const r of adk.requests) {
      const path = r.url.split('?')[0]!;
      assert.ok(path.startsWith('/adk-base/'), r.url);
      let decoded = path;
      for (let i = 0; i < 5; i++) decoded = decoded.replace(/%([0-9a-f]{2})/gi, (_, h: string) => String.fromCharCode(parseInt(h, 16)));
      assert.ok(!decoded.split(/[/\\]/).some((s) => s === '..' || s === '.'), `the upstream saw ${r.url}`);
    }
  });

  test('a read-only account may use both; no token is 401 and reaches no upstream', async () => {
    const created = await svc.post(CREATE, { name: 'reader_made', vector_size: 16, distance: 'Dot' }, reader);
    assert.equal(created.status, 200, created.text);
    const forwarded = await svc.request('POST', '/svcapi/adk/run', { token: reader, body: { q: 1 } });
    assert.equal(forwarded.status, 200, forwarded.text);
    assert.equal(adk.requests.at(-1)!.headers['x-historian-user'], READER);
    assert.ok(!adk.requests.at(-1)!.raw.includes(reader));

    const [q, a] = [qdrant.requests.length, adk.requests.length];
    for (const token of [undefined, 'not-a-token']) {
      assert.equal((await svc.post(CREATE, { name: 'anon', vector_size: 16, distance: 'Dot' }, token)).status, 401);
      assert.equal((await svc.get('/svcapi/adk/apps', token)).status, 401);
      assert.equal((await svc.request('POST', '/svcapi/adk/run', { token, body: {} })).status, 401);
    }
    assert.deepEqual([qdrant.requests.length, adk.requests.length], [q, a]);
  });

  test('health says both upstreams are set; the OpenAPI document lists the routes', async () => {
    const health = await svc.get('/svcapi/health');
    assert.deepEqual(health.body.subsystems.proxies, { status: 'ok', configured: { 'vector.qdrantUrl': true, 'adk.baseUrl': true } });
    const doc = await svc.get('/svcapi/openapi.yaml');
    assert.match(doc.text, /\/svcapi\/create_qdrant_collection:/);
    assert.match(doc.text, /\/svcapi\/adk\/\{path\}:/);
  });

  test('no token appears in the service log', async () => {
    await svc.get('/svcapi/adk/status/404', admin);
    await svc.get('/svcapi/adk/hang?x=1', reader).catch(() => undefined);
    await waitFor(() => svc.logs().some((l) => l.path === '/svcapi/adk/hang?x=1'), 'the request line of the last call is logged');
    const log = svc.logLines.join('\n');
    assert.ok(log.includes('/svcapi/adk/'), 'the proxy requests are logged');
    for (const token of [admin, reader]) assert.ok(!log.includes(token), 'a token is in the log');
  });
});

describe('proxied services with no upstream set', () => {
  let svc: TestService;
  let admin: string;
  before(async () => {
    svc = await startService();
    admin = await svc.adminToken();
  });
  after(() => svc?.dispose());

  test('each route answers 501 naming its setting; health stays ok and says neither is set', async () => {
    const create = await svc.post(CREATE, { name: 'a', vector_size: 3, distance: 'Cosine' }, admin);
    assert.equal(create.status, 501);
    assert.deepEqual(create.body, { error: 'vector.qdrantUrl is not set' });
    for (const method of ['GET', 'POST', 'PUT', 'PATCH', 'DELETE']) {
      const res = await svc.request(method, '/svcapi/adk/list-apps?x=1', { token: admin });
      assert.equal(res.status, 501, method);
      assert.deepEqual(res.body, { error: 'adk.baseUrl is not set' });
    }
    const health = await svc.get('/svcapi/health');
    assert.deepEqual(health.body.subsystems.proxies, { status: 'ok', configured: { 'vector.qdrantUrl': false, 'adk.baseUrl': false } });
    assert.equal(health.body.status, 'ok');
  });
});

describe('proxied services whose upstreams cannot be reached', () => {
  let svc: TestService;
  let admin: string;
  let port: number;
  before(async () => {
    port = await freePort();
    svc = await startService({
      config: { vector: { qdrantUrl: `http://127.0.0.1:${port}` }, adk: { baseUrl: `http://127.0.0.1:${port}/agents` } },
    });
    admin = await svc.adminToken();
  });
  after(() => svc?.dispose());

  test('both answer 502 saying the upstream is unreachable', async () => {
    const create = await svc.post(CREATE, { name: 'a', vector_size: 3, distance: 'Cosine' }, admin);
    assert.equal(create.status, 502);
    assert.match(create.body.error, new RegExp(`qdrant at http://127\\.0\\.0\\.1:${port} unreachable: ECONNREFUSED`));
    const forwarded = await svc.get('/svcapi/adk/list-apps', admin);
    assert.equal(forwarded.status, 502);
    assert.match(forwarded.body.error, new RegExp(`adk at http://127\\.0\\.0\\.1:${port} unreachable: ECONNREFUSED`));
  });
});
