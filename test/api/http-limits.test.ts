// What one request may bring, and HEAD (issue 12 items 8 and 13): bodies are limited per kind
// of route before they are read (public routes most of all) and all bodies being read at
// once share one budget; URLs and headers past their limits are 414/431; HEAD answers every
// GET route without a body and keeps the connection usable; no reply names the server make.

import assert from 'node:assert/strict';
import fs from 'node:fs';
import tls from 'node:tls';
import { after, before, describe, test } from 'node:test';
import { waitFor } from '../support/wait-for.js';
import { startService, type HttpResult, type TestService } from './harness.js';

const SCOPE = { organization: 'acme', site: 'north', unit: 'boiler-1', grid: 'main' };

/** Resident memory of the service process, from /proc. */
function rssBytes(svc: TestService): number {
  const status = fs.readFileSync(`/proc/${svc.child.pid}/status`, 'utf8');
  return Number(/VmRSS:\s+(\d+) kB/.exec(status)![1]) * 1024;
}

/** Sends raw bytes on one TLS connection and returns everything the server sent until it closed or went quiet. */
function exchange(svc: TestService, chunks: Array<string | Buffer>, quietMs = 700): Promise<string> {
  return new Promise((resolve) => {
    const socket = tls.connect({ host: '127.0.0.1', port: svc.port, servername: 'localhost', ca: svc.ca }, () => {
      for (const c of chunks) socket.write(c);
    });
    let data = '';
    let timer = setTimeout(() => socket.end(), quietMs * 3);
    socket.on('data', (d: Buffer) => {
      data += d.toString('latin1');
      clearTimeout(timer);
      timer = setTimeout(() => socket.end(), quietMs);
    });
    socket.on('error', () => resolve(data));
    socket.on('close', () => {
      clearTimeout(timer);
      resolve(data);
    });
  });
}

/** Splits raw HTTP/1.1 responses (Content-Length framed; HEAD ones have no body). */
function responses(raw: string, heads: boolean[]): Array<{ status: number; headers: Record<string, string>; body: string }> {
  const out = [];
  let at = 0;
  for (const isHead of heads) {
    const end = raw.indexOf('\r\n\r\n', at);
    assert.ok(end >= 0, `response ${out.length + 1} is complete: ${JSON.stringify(raw.slice(at, at + 200))}`);
    const [statusLine, ...lines] = raw.slice(at, end).split('\r\n');
    const headers: Record<string, string> = {};
    for (const line of lines) headers[line.slice(0, line.indexOf(':')).toLowerCase()] = line.slice(line.indexOf(':') + 1).trim();
    const length = isHead ? 0 : Number(headers['content-length'] ?? 0);
    out.push({ status: Number(statusLine.split(' ')[1]), headers, body: raw.slice(end + 4, end + 4 + length) });
    at = end + 4 + length;
  }
  assert.equal(at, raw.length, 'nothing after the last response');
  return out;
}

describe('request limits and HEAD', () => {
  let svc: TestService;
  let admin: string;

  before(async () => {
    svc = await startService({ config: { server: { maxJsonBodyBytes: 65536, maxBodyBytesInFlight: 1 << 20 } } });
    admin = await svc.adminToken();
    await svc.post('/svcapi/create_collection', SCOPE, admin);
  });
  after(() => svc.dispose());

  test('public routes refuse large bodies before reading them; memory does not follow the declared sizes', async () => {
    const before = rssBytes(svc);
    const declared = 63 << 20;
    const attempts = await Promise.all(
      Array.from({ length: 16 }, (_, i) =>
        exchange(svc, [`POST /svcapi/login HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: ${declared}\r\n\r\n{"email":"x${i}@plant.test",`]),
      ),
    );
    for (const raw of attempts) {
      const [res] = responses(raw, [false]);
      assert.equal(res.status, 413);
      assert.match(JSON.parse(res.body).error, /server\.maxPublicBodyBytes/);
    }
    // Undeclared (chunked) bodies are cut off as soon as they pass the limit.
    const chunk = 'a'.repeat(8192);
    const chunked = await exchange(svc, [
      'POST /svcapi/register HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n',
      ...Array.from({ length: 8 }, () => `${(8192).toString(16)}\r\n${chunk}\r\n`),
    ]);
    assert.equal(responses(chunked.slice(0, chunked.indexOf('}') + 1), [false])[0].status, 413);
    assert.ok(rssBytes(svc) - before < 48 << 20, `RSS grew by ${(rssBytes(svc) - before) >> 20} MiB`);
    // A normal login still works.
    assert.equal((await svc.post('/svcapi/login', { email: 'admin@historian.test', password: 'wrong-password' })).status, 401);
  });

  test('JSON routes with a token have their own limit, named in the 413', async () => {
    const big = { name: 'x', blob: 'y'.repeat(70_000) };
    const res = await svc.post('/svcapi/labels', big, admin);
    assert.equal(res.status, 413);
    assert.match(res.body.error, /server\.maxJsonBodyBytes/);
    assert.equal((await svc.post('/svcapi/labels', { name: 'small' }, admin)).status, 200);
  });

  test('bodies being read at once share one budget: past it, 503 with Retry-After, and it comes back', async () => {
    // Two uploads of 600 KiB that stop half way hold 1.2 MiB of a 1 MiB budget.
    const head = (n: number) => `POST /svcapi/write_fast HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer ${admin}\r\nContent-Type: application/json\r\nContent-Length: ${n}\r\n\r\n`;
    const first = tls.connect({ host: '127.0.0.1', port: svc.port, servername: 'localhost', ca: svc.ca });
    first.on('error', () => {}); // destroyed below on purpose
    await new Promise((r) => first.once('secureConnect', r));
    first.write(head(600 << 10) + '{"tags":');
    // Nothing tells a client that the server has read the head of this upload (and reserved its
    // share): give it a moment. Retrying the next request until 503 instead would send uploads
    // that take the budget themselves.
    await new Promise((r) => setTimeout(r, 200));
    const [refused] = responses(await exchange(svc, [head(600 << 10)]), [false]);
    assert.equal(refused.status, 503);
    assert.equal(refused.headers['retry-after'], '1');
    assert.match(JSON.parse(refused.body).error, /server\.maxBodyBytesInFlight/);
    first.destroy(); // the client goes away: its share is given back
    // As a client told Retry-After would, try again while the answer is 503 (which writes nothing).
    const body = JSON.stringify({ ...SCOPE, tags: { T: [[Date.UTC(2026, 0, 1), 1]] }, pad: 'p'.repeat(500 << 10) });
    let ok: HttpResult | undefined;
    await waitFor(async () => {
      ok = await svc.request('POST', '/svcapi/write_fast', { rawBody: body, token: admin, headers: { 'content-type': 'application/json' } });
      return ok.status !== 503;
    }, 'the budget is given back once the first client has gone', { intervalMs: 50 });
    assert.deepEqual(ok!.body, { success: true, points: 1 });
  });

  test('URLs and headers past their limits are 414 and 431 with a JSON error', async () => {
    const long = await svc.get(`/ingest/health?x=${'a'.repeat(9000)}`);
    assert.equal(long.status, 414);
    assert.match(long.body.error, /server\.maxUrlBytes/);
    const big = await svc.request('GET', '/ingest/health', { headers: { 'x-big': 'b'.repeat(17_000) } });
    assert.equal(big.status, 431);
    assert.match(big.body.error, /server\.maxHeaderBytes/);
    assert.equal((await svc.get('/ingest/health')).status, 200);
  });

  test('HEAD answers every GET route like the GET, without a body, and the connection goes on', async () => {
    const get = await svc.get('/ingest/health');
    const raw = await exchange(svc, [
      'HEAD /ingest/health HTTP/1.1\r\nHost: localhost\r\n\r\n',
      'HEAD /svcapi/collection HTTP/1.1\r\nHost: localhost\r\n\r\n',
      'HEAD /no/such/path HTTP/1.1\r\nHost: localhost\r\n\r\n',
      `HEAD /svcapi/fast_query?tags=T&start=0&end=1&${new URLSearchParams(SCOPE)} HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer ${admin}\r\n\r\n`,
      'GET /ingest/health HTTP/1.1\r\nHost: localhost\r\n\r\n',
    ]);
    const [health, unauthorized, missing, query, after] = responses(raw, [true, true, true, true, false]);
    assert.equal(health.status, 200);
    assert.equal(Number(health.headers['content-length']), get.bytes.length);
    assert.equal(health.headers['content-type'], get.headers['content-type']);
    assert.equal(unauthorized.status, 401);
    assert.equal(missing.status, 404);
    assert.equal(query.status, 200);
    assert.equal(query.headers['content-type'], 'application/json; charset=utf-8');
    assert.equal(after.status, 200);
    assert.equal(after.body, get.text);
    // A method the route does not have names HEAD among the allowed ones.
    const put = await svc.request('PUT', '/ingest/health', {});
    assert.equal(put.status, 405);
    assert.equal(put.headers.allow, 'GET, HEAD');
  });

  test('no reply names the server make or version', async () => {
    for (const path of ['/ingest/health', '/no/such/path']) {
      const res = await svc.get(path);
      assert.equal(res.headers.uwebsockets, undefined);
      assert.equal(res.headers.server, undefined);
    }
  });
});
