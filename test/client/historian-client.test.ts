// HistorianClient against the real service (test/api/harness.ts), through a
// fetch built on node:https that trusts the service's own CA. Every route the
// client calls is mounted: a 404 or 405 from any of them fails the test.

import assert from 'node:assert/strict';
import https from 'node:https';
import { after, before, describe, test } from 'node:test';
import {
  HistorianClient,
  HistorianError,
  type FetchInit,
  type KairosQuery,
  type PointMap,
  type RawQuery,
} from '../../client/historian-client.js';
import { isValid, timestampsAsNumbers } from '../../native-free-codecs/result-binary.js';
import { ADMIN_EMAIL, ADMIN_PASSWORD, startService, type TestService } from '../api/harness.js';

const SCOPE = { organization: 'client-org', site: 'Süd werk', unit: 'boiler 7', grid: 'main' };
const T0 = Date.UTC(2026, 1, 3);
const TEMP = 'TI-701';
const FLOW = 'FI 702 ä'; // a space and a non-ASCII letter, to exercise URL encoding
const UNUSED = 'TI-799';

/** Points as written: TEMP every second, FLOW every 1.5 s, so the format 2 union has gaps. */
const WRITTEN: Record<string, Array<[number, number]>> = {
  [TEMP]: Array.from({ length: 40 }, (_, i): [number, number] => [T0 + i * 1000, i === 3 ? 0.1 + 0.2 : 70 + i * 0.25 + (i % 7) / 3]),
  [FLOW]: Array.from({ length: 27 }, (_, i): [number, number] => [T0 + i * 1500, i % 2 ? -12.5 * i : 1e-7 * i]),
};
const END = T0 + 39 * 1000;

/** A `typeof fetch` over node:https: Node's global fetch cannot be given a private CA. */
function httpsFetch(ca: string, agent: https.Agent): typeof fetch {
  return (input, init) =>
    new Promise<Response>((resolve, reject) => {
      const url = input instanceof Request ? input.url : String(input);
      const headers: Record<string, string> = {};
      new Headers(init?.headers).forEach((value, key) => (headers[key] = value));
      const body = typeof init?.body === 'string' ? init.body : undefined;
      if (body !== undefined) headers['content-length'] = String(Buffer.byteLength(body));
      const req = https.request(url, { method: init?.method ?? 'GET', headers, agent, ca }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('error', reject);
        res.on('end', () => {
          const replyHeaders = new Headers();
          for (const [key, value] of Object.entries(res.headers)) {
            if (value !== undefined) replyHeaders.set(key, Array.isArray(value) ? value.join(', ') : value);
          }
          resolve(new Response(Buffer.concat(chunks), { status: res.statusCode ?? 0, headers: replyHeaders }));
        });
      });
      req.on('error', reject);
      if (body !== undefined) req.write(body);
      req.end();
    });
}

function assertHistorianError(status: number, message?: RegExp) {
  return (err: unknown) => {
    assert.ok(err instanceof HistorianError, `expected a HistorianError, got ${String(err)}`);
    assert.equal(err.status, status, err.message);
    if (message) assert.match(err.message, message);
    return true;
  };
}

const asF32 = (points: Array<[number, number]>) => points.map(([ts, v]): [number, number] => [ts, Math.fround(v)]);

describe('HistorianClient against the real service', () => {
  let svc: TestService;
  let agent: https.Agent;
  let fetchImpl: typeof fetch;
  let client: HistorianClient;

  const rawQuery: RawQuery = { ...SCOPE, tags: [TEMP, FLOW, UNUSED], start: T0, end: END };
  const kairosQuery: KairosQuery = {
    start_absolute: T0,
    end_absolute: END,
    ...SCOPE,
    metrics: [{ name: TEMP }, { name: FLOW }, { name: UNUSED }],
  };
  const expected: PointMap = { ...WRITTEN, [UNUSED]: [] };

  before(async () => {
    svc = await startService();
    agent = new https.Agent({ ca: svc.ca, keepAlive: true });
    fetchImpl = httpsFetch(svc.ca, agent);
    const admin = await svc.adminToken();
    const created = await svc.post('/svcapi/create_collection', SCOPE, admin);
    assert.equal(created.body?.success, true, created.text);
    const written = await svc.post('/svcapi/write', { ...SCOPE, tags: WRITTEN }, admin);
    assert.deepEqual(written.body, { success: true, points: WRITTEN[TEMP]!.length + WRITTEN[FLOW]!.length });
    client = new HistorianClient({ baseUrl: `${svc.baseUrl}/`, fetch: fetchImpl });
  });
  after(async () => {
    agent?.destroy();
    await svc?.dispose();
  });

  test('login stores the token; a wrong password is a 401 HistorianError', async () => {
    await assert.rejects(client.login(ADMIN_EMAIL, 'wrong password'), assertHistorianError(401, /invalid username or password/));
    assert.equal(client.token, undefined);
    const token = await client.login(ADMIN_EMAIL, ADMIN_PASSWORD);
    assert.equal(typeof token, 'string');
    assert.equal(client.token, token);
  });

  test('query (GET) returns the written points exactly, with and without scope', async () => {
    assert.deepEqual(await client.query(rawQuery), expected);
    // Without scope the server's tag map, learned from the write, finds the collection.
    assert.deepEqual(await client.query({ tags: [FLOW], start: T0 + 1500, end: T0 + 3000 }), { [FLOW]: WRITTEN[FLOW]!.slice(1, 3) });
  });

  test('lastValues: latest [ts, value] per tag, null when none', async () => {
    assert.deepEqual(await client.lastValues({ ...SCOPE, tags: [TEMP, FLOW, UNUSED] }), {
      [TEMP]: WRITTEN[TEMP]!.at(-1),
      [FLOW]: WRITTEN[FLOW]!.at(-1),
      [UNUSED]: null,
    });
  });

  test('errors: a bad token is 401, an unknown tag without scope is 400, both with the server message', async () => {
    const stranger = new HistorianClient({ baseUrl: svc.baseUrl, token: 'not-a-token', fetch: fetchImpl });
    await assert.rejects(stranger.query(rawQuery), assertHistorianError(401));
    await assert.rejects(stranger.lastValues({ tags: [TEMP] }), (err) => {
      assert.ok(err instanceof HistorianError);
      assert.equal(err.status, 401);
      assert.equal(typeof (err.body as { error?: unknown }).error, 'string', 'body is the parsed {error}');
      return true;
    });
    await assert.rejects(client.query({ tags: ['GHOST-TAG'], start: 0, end: 1 }), assertHistorianError(400, /GHOST-TAG/));
  });

  test('query (POST, KairosDB body) returns the written points exactly', async () => {
    assert.deepEqual(await client.query(kairosQuery), expected);
  });

  for (const form of ['GET', 'POST'] as const) {
    test(`queryBinary (${form}): format 1 holds the written points, values as f32`, async () => {
      const tags = await client.queryBinary(form === 'GET' ? rawQuery : kairosQuery);
      assert.deepEqual(tags.map((tag) => tag.name).sort(), Object.keys(expected).sort());
      for (const tag of tags) {
        assert.ok(tag.timestamps instanceof Float64Array && tag.values instanceof Float32Array);
        const points = Array.from(tag.timestamps, (ts, i): [number, number] => [ts, tag.values[i]!]);
        assert.deepEqual(points, asF32(expected[tag.name]!), tag.name);
      }
    });

    test(`queryOptimised (${form}): format 2 holds the written points on the shared timestamps`, async () => {
      const result = await client.queryOptimised(form === 'GET' ? rawQuery : kairosQuery);
      const rows = timestampsAsNumbers(result.timestamps);
      const union = [...new Set(Object.values(WRITTEN).flatMap((points) => points.map(([ts]) => ts)))].sort((a, b) => a - b);
      assert.deepEqual([...rows], union);
      assert.deepEqual(result.tags.map((tag) => tag.name).sort(), Object.keys(expected).sort());
      for (const tag of result.tags) {
        assert.equal(tag.values.length, rows.length);
        const points: Array<[number, number]> = [];
        rows.forEach((ts, row) => {
          if (isValid(tag.valid, row)) points.push([ts, tag.values[row]!]);
        });
        assert.deepEqual(points, asF32(expected[tag.name]!), tag.name);
      }
    });
  }
});

describe('HistorianClient requests (recorded, no server)', () => {
  interface Recorded {
    url: string;
    init: FetchInit;
  }

  /** A fetch that records each request and answers with the next canned reply. */
  function recorder(replies: Array<{ status: number; body: string | Uint8Array }>) {
    const calls: Recorded[] = [];
    const fetchImpl = async (url: string, init: FetchInit) => {
      calls.push({ url, init });
      const reply = replies.shift() ?? { status: 500, body: '' };
      const bytes = typeof reply.body === 'string' ? new TextEncoder().encode(reply.body) : reply.body;
      return { status: reply.status, arrayBuffer: async () => bytes.slice().buffer };
    };
    return { calls, fetchImpl };
  }

  test('GET forms: repeated tags, encoded names, scope only when given, bearer token', async () => {
    const { calls, fetchImpl } = recorder([
      { status: 200, body: '{"a b":[[1,2]]}' },
      { status: 200, body: '{"x":null}' },
    ]);
    const client = new HistorianClient({ baseUrl: 'https://historian.example:3030//', token: 'tok', fetch: fetchImpl });
    assert.deepEqual(await client.query({ tags: ['a b', 'ü&='], start: 10, end: 20, site: 'Süd', organization: 'o' }), { 'a b': [[1, 2]] });
    assert.deepEqual(await client.lastValues({ tags: ['x'] }), { x: null });
    assert.equal(calls[0]!.url, 'https://historian.example:3030/svcapi/fast_query?tags=a%20b&tags=%C3%BC%26%3D&start=10&end=20&organization=o&site=S%C3%BCd');
    assert.deepEqual(calls[0]!.init, { method: 'GET', headers: { accept: 'application/json', authorization: 'Bearer tok' } });
    assert.equal(calls[1]!.url, 'https://historian.example:3030/svcapi/lastlist?tags=x');
  });

  test('POST forms send the KairosDB body as JSON; login sends no old token', async () => {
    const { calls, fetchImpl } = recorder([
      { status: 200, body: '{"token":"fresh"}' },
      { status: 200, body: '{}' },
    ]);
    const client = new HistorianClient({ baseUrl: 'https://h', token: 'old', fetch: fetchImpl });
    assert.equal(await client.login('me@example.com', 'pw'), 'fresh');
    const body: KairosQuery = { start_relative: { value: 1, unit: 'hours' }, metrics: [{ name: 'A', aggregators: [{ name: 'avg', sampling: { value: 1, unit: 'minutes' } }] }] };
    await client.query(body);
    assert.deepEqual(calls[0]!.init.headers, { accept: 'application/json', 'content-type': 'application/json' });
    assert.deepEqual(JSON.parse(calls[0]!.init.body!), { email: 'me@example.com', password: 'pw' });
    assert.equal(calls[1]!.url, 'https://h/svcapi/fast_query');
    assert.equal(calls[1]!.init.method, 'POST');
    assert.equal(calls[1]!.init.headers.authorization, 'Bearer fresh');
    assert.deepEqual(JSON.parse(calls[1]!.init.body!), body);
  });

  test('errors carry the status, the parsed body and the {error} or {message} text', async () => {
    const { fetchImpl } = recorder([
      { status: 403, body: '{"status":"error","message":"access denied"}' },
      { status: 502, body: '<html>bad gateway</html>' },
      { status: 400, body: '{"error":"query parameter end must not be before start"}' },
    ]);
    const client = new HistorianClient({ baseUrl: 'https://h', fetch: fetchImpl });
    await assert.rejects(client.lastValues({ tags: ['a'] }), (err) => {
      assert.ok(err instanceof HistorianError);
      assert.equal(err.message, 'access denied');
      assert.deepEqual(err.body, { status: 'error', message: 'access denied' });
      return true;
    });
    await assert.rejects(client.queryBinary({ tags: ['a'], start: 0, end: 1 }), (err) => {
      assert.ok(err instanceof HistorianError);
      assert.equal(err.status, 502);
      assert.equal(err.body, '<html>bad gateway</html>');
      assert.equal(err.message, 'GET /svcapi/fast_query_binary answered 502');
      return true;
    });
    await assert.rejects(client.queryOptimised({ tags: ['a'], start: 1, end: 0 }), assertHistorianError(400, /end must not be before start/));
  });
});
