// Large streamed results read by slow, paused and vanishing clients (issue 12, item 1; CSV from
// issue 27).
// One storage shard holds a million-point tag; every result is 20+ MB. Each test checks the
// bytes a slow reader gets against a fast read and the points written, and that the shard
// keeps answering writes and queries during and after whatever the reader does.

import assert from 'node:assert/strict';
import https from 'node:https';
import { after, before, describe, test } from 'node:test';
import { unpack } from 'msgpackr';
import { encodeBinaryBatch } from '../../native-free-codecs/write-body.js';
import { decodeFormat1 } from '../../native-free-codecs/result-binary.js';
import { waitFor } from '../support/wait-for.js';
import { startService, type TestService } from './harness.js';

const SCOPE = { organization: 'acme', site: 'north', unit: 'boiler-1', grid: 'main' };
const SCOPE_QS = new URLSearchParams(SCOPE).toString();
const T0 = 1720000000000;
const POINTS = 1_000_000;
const STALL_MS = 2000;

/** A noisy analog signal: a slow walk plus measurement noise, two decimals. */
function signal(n: number): { ts: Float64Array; values: Float64Array } {
  const ts = new Float64Array(n);
  const values = new Float64Array(n);
  let walk = 50;
  let seed = 12345;
  const rand = () => ((seed = (seed * 1103515245 + 12345) & 0x7fffffff) / 0x7fffffff);
  for (let i = 0; i < n; i++) {
    walk += (rand() - 0.5) * 0.2;
    ts[i] = T0 + i * 1000;
    values[i] = Math.round((walk + (rand() - 0.5) * 0.5) * 100) / 100;
  }
  return { ts, values };
}

interface Read {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  bytes: Buffer;
  /** True when the body ended normally (chunked framing intact, nothing cut). */
  complete: boolean;
  error: string | null;
}

interface ReadOptions {
  method?: string;
  body?: unknown;
  token: string;
  accept?: string;
  /** Bytes per second; unlimited when absent. */
  rate?: number;
  /** Stop reading (without closing) after this many bytes... */
  pauseAfter?: number;
  /** ...and read on once this settles (a paused client only sees the server's close when it reads). */
  resumeOn?: Promise<unknown>;
  /** Destroy the connection after this many bytes. */
  vanishAfter?: number;
}

/** One request on its own connection, read at the given pace; `status` is 0 until the reply's head arrives. */
function read(svc: TestService, path: string, opts: ReadOptions): { done: Promise<Read>; received: () => number; status: () => number } {
  let received = 0;
  let status = 0;
  const done = new Promise<Read>((resolve) => {
    const payload = opts.body === undefined ? undefined : JSON.stringify(opts.body);
    const req = https.request({
      host: '127.0.0.1',
      servername: 'localhost',
      port: svc.port,
      method: opts.method ?? 'GET',
      path,
      ca: svc.ca,
      agent: false,
      headers: {
        authorization: `Bearer ${opts.token}`,
        ...(opts.accept ? { accept: opts.accept } : {}),
        ...(payload ? { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(payload)) } : {}),
      },
    });
    let settled = false;
    const finish = (r: Omit<Read, 'bytes'> & { chunks: Buffer[] }) => {
      if (settled) return;
      settled = true;
      resolve({ status: r.status, headers: r.headers, complete: r.complete, error: r.error, bytes: Buffer.concat(r.chunks) });
    };
    req.on('error', (err) => finish({ status: 0, headers: {}, complete: false, error: err.message, chunks: [] }));
    req.on('response', (res) => {
      status = res.statusCode ?? 0;
      const chunks: Buffer[] = [];
      const started = Date.now();
      let pausedOnce = false;
      res.on('data', (chunk: Buffer) => {
        chunks.push(chunk);
        received += chunk.length;
        if (opts.vanishAfter !== undefined && received >= opts.vanishAfter) {
          req.destroy();
          finish({ status: res.statusCode ?? 0, headers: res.headers, complete: false, error: 'vanished', chunks });
          return;
        }
        if (opts.pauseAfter !== undefined && received >= opts.pauseAfter && !pausedOnce) {
          pausedOnce = true;
          res.pause();
          // Either way: a failed wait is reported by the test that awaits it, and nothing is left hanging.
          void opts.resumeOn?.then(() => res.resume(), () => res.resume());
          return;
        }
        if (opts.rate) {
          const due = (received / opts.rate) * 1000 - (Date.now() - started);
          if (due > 5) {
            res.pause();
            setTimeout(() => res.resume(), due);
          }
        }
      });
      res.on('end', () => finish({ status: res.statusCode ?? 0, headers: res.headers, complete: res.complete, error: null, chunks }));
      res.on('error', (err) => finish({ status: res.statusCode ?? 0, headers: res.headers, complete: false, error: err.message, chunks }));
      res.on('close', () => finish({ status: res.statusCode ?? 0, headers: res.headers, complete: res.complete, error: res.complete ? null : 'closed', chunks }));
    });
    req.end(payload);
  });
  return { done, received: () => received, status: () => status };
}

describe('large results and slow readers', { timeout: 240_000 }, () => {
  let svc: TestService;
  let admin: string;
  let readOnly: string;
  const data = signal(POINTS);
  let writes = 0;

  /** A write to the shard that holds BIG; it must succeed promptly whatever readers do. */
  async function writeWorks(): Promise<void> {
    const ts = T0 - 86_400_000 + writes++ * 1000;
    const res = await svc.post('/svcapi/write', { ...SCOPE, tags: { PROBE: [[ts, writes]] } }, admin);
    assert.equal(res.status, 200, `write answered ${res.status}: ${res.text}`);
    assert.deepEqual(res.body, { success: true, points: 1 });
  }

  const STALLED = 'closing a streamed response: the client stopped reading';
  const stalledLogged = () => svc.logs().filter((l) => l.msg === STALLED).length;

  /** Settles once the server has logged closing `count` more stalled responses than it has so far. */
  function stalledClosed(count: number): Promise<void> {
    const before = stalledLogged();
    return waitFor(() => stalledLogged() >= before + count, `the server closes ${count} stalled response(s)`, { timeoutMs: 30_000, intervalMs: 50 });
  }

  /** A small query on the same shard answers normally. */
  async function queryWorks(): Promise<void> {
    const res = await svc.get(`/svcapi/fast_query?tags=BIG&start=${T0}&end=${T0 + 2000}&${SCOPE_QS}`, admin);
    assert.equal(res.status, 200, res.text);
    assert.deepEqual(res.body, { BIG: [[T0, data.values[0]], [T0 + 1000, data.values[1]], [T0 + 2000, data.values[2]]] });
  }

  before(async () => {
    svc = await startService({ config: { storage: { shards: 1, resultStallTimeoutMs: STALL_MS, queryMemoryBytes: 64 << 20 } } });
    admin = await svc.adminToken();
    assert.equal((await svc.post('/svcapi/create_collection', SCOPE, admin)).status, 200);
    const batch = 100_000;
    for (let at = 0; at < POINTS; at += batch) {
      const body = encodeBinaryBatch(SCOPE, data.ts.subarray(at, at + batch), [{ name: 'BIG', values: data.values.subarray(at, at + batch) }]);
      const res = await svc.request('POST', '/svcapi/write_fast', { rawBody: Buffer.from(body), token: admin, headers: { 'content-type': 'application/octet-stream' } });
      assert.deepEqual(res.body, { success: true, points: batch });
    }
    // A read-only account granted the unit the collection belongs to.
    const mk = async (url: string, body: object) => (await svc.post(`/svcapi/${url}`, body, admin)).body.id as string;
    const org = await mk('orgs', { name: SCOPE.organization });
    const site = await mk('sites', { name: SCOPE.site, orgsId: org });
    const unit = await mk('units', { name: SCOPE.unit, siteId: site });
    const reader = await mk('users', { email: 'reader@plant.test', password: 'reader-password-1', role: 'read-only' });
    await svc.post('/svcapi/userprofiles', { usersId: reader, accessAllowed: { units: [unit] } }, admin);
    readOnly = await svc.login('reader@plant.test', 'reader-password-1');
  });
  after(() => svc.dispose());

  const rawPath = `/svcapi/fast_query?tags=BIG&start=0&end=9999999999999&${SCOPE_QS}`;

  test('a reader at 4 MB/s gets the whole JSON result, byte-exact, while writes go on', async () => {
    const slow = read(svc, rawPath, { token: admin, rate: 4 << 20 });
    let finished = false;
    void slow.done.then(() => (finished = true));
    for (let i = 0; i < 5; i++) {
      await writeWorks();
      await queryWorks();
    }
    assert.equal(finished, false, 'the writes were answered while the slow read was still going');
    const result = await slow.done;
    assert.equal(result.error, null);
    assert.equal(result.status, 200);
    assert.ok(result.bytes.length > 20 << 20, `result is ${result.bytes.length} bytes`);
    const parsed = JSON.parse(result.bytes.toString('utf8')) as { BIG: Array<[number, number]> };
    assert.equal(parsed.BIG.length, POINTS);
    for (let i = 0; i < POINTS; i += 997) assert.deepEqual(parsed.BIG[i], [data.ts[i], data.values[i]]);
    const fast = await read(svc, rawPath, { token: admin }).done;
    assert.ok(fast.complete);
    assert.ok(fast.bytes.equals(result.bytes), 'slow and fast reads are identical');
  });

  test('msgpack and binary format 1 results reach slow readers byte-exact', async () => {
    const msgpackSlow = read(svc, rawPath, { token: admin, rate: 6 << 20, accept: 'application/msgpack' });
    const binaryPath = `/svcapi/fast_query_binary?tags=BIG&start=0&end=9999999999999&${SCOPE_QS}`;
    const binarySlow = read(svc, binaryPath, { token: readOnly, rate: 6 << 20 });
    await writeWorks();
    const [m, b] = await Promise.all([msgpackSlow.done, binarySlow.done]);
    assert.equal(m.error, null);
    assert.equal(b.error, null);
    const decoded = unpack(m.bytes) as { BIG: Array<[number, number]> };
    assert.equal(decoded.BIG.length, POINTS);
    assert.deepEqual(decoded.BIG[POINTS - 1], [data.ts[POINTS - 1], data.values[POINTS - 1]]);
    const tags = decodeFormat1(b.bytes);
    assert.equal(tags.length, 1);
    assert.equal(tags[0].timestamps.length, POINTS);
    assert.equal(Number(tags[0].timestamps[POINTS - 1]), data.ts[POINTS - 1]);
    assert.equal(tags[0].values[12345], Math.fround(data.values[12345]));
    const fastB = await read(svc, binaryPath, { token: readOnly }).done;
    assert.ok(fastB.bytes.equals(b.bytes));
  });

  test('CSV reaches a slow reader byte-exact, every row; a vanishing CSV reader leaves the shard free', async () => {
    const csvPath = `${rawPath}&format=csv`;
    const slow = read(svc, csvPath, { token: readOnly, rate: 6 << 20 });
    let finished = false;
    void slow.done.then(() => (finished = true));
    await writeWorks();
    await queryWorks();
    assert.equal(finished, false, 'the write and the query were answered while the slow CSV read was still going');
    const csv = await slow.done;
    assert.equal(csv.error, null);
    assert.equal(csv.status, 200);
    assert.equal(csv.headers['content-type'], 'text/csv; charset=utf-8; header=present');
    assert.ok(csv.bytes.length > 20 << 20, `CSV is ${csv.bytes.length} bytes`);
    const lines = csv.bytes.toString('utf8').split('\r\n');
    assert.equal(lines.length, POINTS + 2, 'header, a row per point, and the empty string after the last CRLF');
    assert.equal(lines[0], 'time,tag,value');
    assert.equal(lines.at(-1), '');
    for (let i = 0; i < POINTS; i += 997) assert.equal(lines[i + 1], `${data.ts[i]},BIG,${data.values[i]}`);
    const fast = await read(svc, csvPath, { token: readOnly }).done;
    assert.ok(fast.complete);
    assert.ok(fast.bytes.equals(csv.bytes), 'slow and fast CSV reads are identical');

    const isoPath = `${rawPath}&time_format=iso`;
    const gone = await read(svc, isoPath, { token: admin, accept: 'text/csv', vanishAfter: 2 << 20 }).done;
    assert.equal(gone.error, 'vanished');
    assert.equal(gone.headers['content-type'], 'text/csv; charset=utf-8; header=present');
    assert.ok(gone.bytes.toString('latin1').startsWith(`time,tag,value\r\n${new Date(T0).toISOString()},BIG,`));
    await writeWorks();
    await queryWorks();
    const again = await read(svc, isoPath, { token: admin, accept: 'text/csv' }).done;
    assert.ok(again.complete);
    assert.equal(again.bytes.toString('latin1').split('\r\n').length, POINTS + 2);
  });

  test('binary format 2 and large replies of known size reach slow readers byte-exact', async () => {
    const tablePath = `/svcapi/fast_query_optimised?tags=BIG&start=0&end=9999999999999&${SCOPE_QS}`;
    const slow = read(svc, tablePath, { token: admin, rate: 4 << 20 });
    await writeWorks();
    const table = await slow.done;
    assert.equal(table.error, null);
    assert.equal(table.bytes.subarray(0, 4).toString('latin1'), 'HSB2');
    assert.equal(table.bytes.readUInt32LE(8), POINTS);
    assert.ok((await read(svc, tablePath, { token: admin }).done).bytes.equals(table.bytes));
    assert.equal((await read(svc, tablePath, { token: admin, vanishAfter: 1 << 20 }).done).error, 'vanished');
    await queryWorks();

    // Not streamed: a body of known size (Content-Length) written with tryEnd under backpressure.
    const doc = await read(svc, '/svcapi/openapi.yaml', { token: admin, rate: 256 << 10 }).done;
    assert.equal(doc.error, null);
    assert.ok(doc.bytes.length > 256 << 10, `document is ${doc.bytes.length} bytes`);
    assert.equal(Number(doc.headers['content-length']), doc.bytes.length);
    assert.ok((await read(svc, '/svcapi/openapi.yaml', { token: admin }).done).bytes.equals(doc.bytes));
  });

  test('a paused reader (JSON, then CSV) is cut after the stall timeout; the shard answers throughout', async () => {
    for (const path of [rawPath, `${rawPath}&format=csv`]) await pausedReaderIsCut(path);
  });

  async function pausedReaderIsCut(path: string): Promise<void> {
    const closed = stalledClosed(1);
    const paused = read(svc, path, { token: admin, pauseAfter: 1 << 20, resumeOn: closed });
    await waitFor(() => paused.received() >= 1 << 20, 'the paused reader has its first MiB');
    for (let i = 0; i < 3; i++) {
      await writeWorks();
      await queryWorks();
    }
    await closed;
    const result = await paused.done;
    assert.equal(result.complete, false, 'the server closed the stalled response');
    assert.ok(result.bytes.length < 20 << 20, `got ${result.bytes.length} bytes`);
    await writeWorks();
    await queryWorks();
  }

  test('InfluxQL /query streams statement by statement: a slow reader gets it byte-exact, a paused one is cut, a vanishing one leaves the shard free', async () => {
    // BIG is written without labels: in InfluxQL a measurement of its own name with the field `value`.
    const q = (statement: string) => `/query?db=${encodeURIComponent(Object.values(SCOPE).join('/'))}&epoch=ms&q=${encodeURIComponent(statement)}`;
    const raw = q('SELECT "value" FROM "BIG"; SELECT count("value") FROM "BIG"');
    const fast = await read(svc, raw, { token: admin }).done;
    assert.equal(fast.status, 200);
    assert.ok(fast.complete);
    const answer = JSON.parse(fast.bytes.toString('utf8'));
    assert.equal(answer.results[0].series[0].values.length, POINTS);
    assert.deepEqual(answer.results[1].series[0].values, [[0, POINTS]]);
    const slow = read(svc, raw, { token: admin, rate: 8 << 20 });
    await writeWorks();
    await queryWorks();
    const slowly = await slow.done;
    assert.ok(slowly.complete);
    assert.ok(slowly.bytes.equals(fast.bytes), 'the slow reader got the same bytes');
    await pausedReaderIsCut(q('SELECT "value" FROM "BIG"'));
    const gone = await read(svc, raw, { token: admin, vanishAfter: 2 << 20 }).done;
    assert.equal(gone.error, 'vanished');
    await writeWorks();
    await queryWorks();
  });

  test('PromQL answers stream at the reader\'s pace: a slow reader gets them byte-exact, a paused one is cut, a vanishing one leaves the shard free', async () => {
    // BIG has no labels: in PromQL it is the metric `BIG`. A range vector of all its points (~30 MB).
    const at = (T0 + POINTS * 1000) / 1000;
    const q = `/api/v1/query?${new URLSearchParams({ query: `BIG[${POINTS + 10}s]`, time: String(at) })}`;
    const fast = await read(svc, q, { token: admin }).done;
    assert.equal(fast.status, 200);
    assert.ok(fast.complete);
    const answer = JSON.parse(fast.bytes.toString('utf8'));
    assert.equal(answer.data.resultType, 'matrix');
    assert.equal(answer.data.result[0].values.length, POINTS);
    assert.deepEqual(answer.data.result[0].values[7], [(T0 + 7000) / 1000, String(data.values[7])]);
    const slow = read(svc, q, { token: readOnly, rate: 8 << 20 });
    await writeWorks();
    await queryWorks();
    const slowly = await slow.done;
    assert.ok(slowly.complete);
    assert.ok(slowly.bytes.equals(fast.bytes), 'the slow reader got the same bytes');
    await pausedReaderIsCut(q);
    const gone = await read(svc, q, { token: admin, vanishAfter: 2 << 20 }).done;
    assert.equal(gone.error, 'vanished');
    await writeWorks();
    await queryWorks();
  });

  test('vanishing readers cancel their queries; the next request on the shard answers normally', async () => {
    for (const accept of [undefined, 'application/msgpack', 'text/csv']) {
      const gone = await read(svc, rawPath, { token: admin, vanishAfter: 3 << 20, accept }).done;
      assert.equal(gone.error, 'vanished');
      await writeWorks();
      await queryWorks();
    }
    const full = await read(svc, rawPath, { token: admin }).done;
    assert.ok(full.complete);
    assert.ok(full.bytes.length > 20 << 20);
  });

  test('an aggregation POST from a read-only account, read slowly, does not stall the shard', async () => {
    const body = {
      start_absolute: 1720000000000,
      end_absolute: 1721000000000,
      ...SCOPE,
      metrics: [{ name: 'BIG' }],
      pipeline: [{ name: 'avg', sampling: { value: 1, unit: 'seconds' } }],
    };
    const slow = read(svc, '/svcapi/fast_query', { method: 'POST', body, token: readOnly, rate: 4 << 20 });
    const binaryClosed = stalledClosed(1);
    const binary = read(svc, '/svcapi/fast_query_binary', {
      method: 'POST',
      body: { ...body, pipeline: [{ name: 'avg', sampling: { value: 1, unit: 'seconds' } }, { name: 'scale', factor: 2 }] },
      token: readOnly,
      pauseAfter: 256 << 10,
      resumeOn: binaryClosed,
    });
    await writeWorks();
    await queryWorks();
    const result = await slow.done;
    assert.equal(result.error, null);
    const parsed = JSON.parse(result.bytes.toString()) as { BIG: Array<[number, number]> };
    assert.equal(parsed.BIG.length, POINTS);
    assert.deepEqual(parsed.BIG[7], [data.ts[7], data.values[7]]);
    await binaryClosed;
    assert.equal((await binary.done).complete, false);
    await writeWorks();
    await queryWorks();
  });

  test('gaps at a fine sampling over eleven days is refused, never a stalled shard', async () => {
    // 1 ms: too many buckets for the range (refused before any work); 100 ms: ten million
    // points of output, more than this service's storage.queryMemoryBytes (64 MiB).
    for (const [value, limit] of [[1, /buckets/], [100, /storage\.queryMemoryBytes/]] as const) {
      const res = await svc.post(
        '/svcapi/fast_query',
        { start_absolute: 1720000000000, end_absolute: 1721000000000, ...SCOPE, metrics: [{ name: 'BIG' }], pipeline: [{ name: 'gaps', sampling: { value, unit: 'milliseconds' } }] },
        readOnly,
      );
      assert.equal(res.status, 400, res.text.slice(0, 300));
      assert.match(res.body.error, limit);
      await writeWorks();
    }
    await queryWorks();
  });

  test('more paused readers than the shard runs queries at once: the rest wait or get 503, writes go on', async () => {
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    const stalledBefore = stalledLogged();
    const readers = Array.from({ length: 40 }, () => read(svc, rawPath, { token: admin, pauseAfter: 64 << 10, resumeOn: released }));
    const pausedOrRefused = (r: (typeof readers)[number]) => r.status() === 503 || (r.status() === 200 && r.received() >= 64 << 10);
    await waitFor(() => readers.every(pausedOrRefused), 'every reader is paused on its first 64 KiB or refused');
    await writeWorks();
    await queryWorks();
    const streaming = readers.filter((r) => r.status() === 200).length;
    await waitFor(() => stalledLogged() >= stalledBefore + streaming, 'the server closes every stalled response', { timeoutMs: 30_000, intervalMs: 50 });
    release();
    const results = await Promise.all(readers.map((r) => r.done));
    for (const r of results) assert.ok(r.status === 200 || r.status === 503, `status ${r.status}`);
    await writeWorks();
    await queryWorks();
  });
});

describe('the per-query deadline', { timeout: 120_000 }, () => {
  test('a query still being read when storage.queryTimeoutMs passes is stopped; the shard goes on', async () => {
    const svc = await startService({ config: { storage: { shards: 1, queryTimeoutMs: 3000 } } });
    try {
      const admin = await svc.adminToken();
      await svc.post('/svcapi/create_collection', SCOPE, admin);
      const data = signal(POINTS);
      for (let at = 0; at < POINTS; at += 100_000) {
        const body = encodeBinaryBatch(SCOPE, data.ts.subarray(at, at + 100_000), [{ name: 'BIG', values: data.values.subarray(at, at + 100_000) }]);
        await svc.request('POST', '/svcapi/write_fast', { rawBody: Buffer.from(body), token: admin, headers: { 'content-type': 'application/octet-stream' } });
      }
      // 22 MB read at 1 MB/s would take 22 s (socket buffers hold a few MB of it); the client
      // never stalls, the deadline ends it.
      const slow = await read(svc, `/svcapi/fast_query?tags=BIG&start=0&end=9999999999999&${SCOPE_QS}`, { token: admin, rate: 1 << 20 }).done;
      assert.equal(slow.complete, false);
      assert.ok(slow.bytes.length < 20 << 20, `${slow.bytes.length} bytes arrived`);
      await waitFor(() => svc.logs().some((l) => String(l.err ?? l.reason ?? '').includes('storage.queryTimeoutMs')), 'the deadline is logged');
      const ok = await svc.get(`/svcapi/fast_query?tags=BIG&start=${T0}&end=${T0}&${SCOPE_QS}`, admin);
      assert.deepEqual(ok.body, { BIG: [[T0, data.values[0]]] });
    } finally {
      await svc.dispose();
    }
  });
});
