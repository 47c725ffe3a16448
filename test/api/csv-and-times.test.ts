// Issue 27, "Time parameters and CSV", against the real service: start and end of every GET
// query route as epoch ms, ISO 8601 or relative to the service clock (end defaulting to now),
// and CSV answers (format=csv, Accept: text/csv) on the routes that answer points per tag,
// checked against the msgpack answer of the same query (float64 values, -0 included, which
// JSON cannot carry) and read back by real readers: Python's csv module and pandas, pandas
// fetching the export itself over HTTPS with a token, trusting the service's CA the way the
// README tells a data scientist to.

import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { unpack } from 'msgpackr';
import { parse as parseYaml } from 'yaml';
import { encodeBinaryBatch } from '../../native-free-codecs/write-body.js';
import { decodeFormat1, decodeFormat2 } from '../../native-free-codecs/result-binary.js';
import { startService, tempDir, type HttpResult, type TestService } from './harness.js';

const A = { organization: 'acme', site: 'north', unit: 'boiler-1', grid: 'main' };
const B = { organization: 'acme', site: 'north', unit: 'boiler-2', grid: 'main' };
const T0 = Date.UTC(2024, 5, 1); // 2024-06-01T00:00:00Z
const MIN = 60_000;
const HOUR = 60 * MIN;

/** Values a CSV writer can get wrong: shortest round trip, tiny, huge, negative zero. */
const AWKWARD_VALUES = [0.1, -0, 1e-300, 123456789.123, 5e-324, 1.7976931348623157e308, -3.07, 71.25, 0.1 + 0.2, 1e21, 2 ** 53, -123.456e-7];
/** Tag names that need quoting (or look as if they might): commas, quotes, spaces, non-ASCII. */
const AWKWARD_TAGS = ['TI-101', 'flow,total', 'say "hi"', ' spaced ', 'ünï ✓', '"quoted, twice"'];
const CSV_TYPE = 'text/csv; charset=utf-8; header=present';
const FORMS = /epoch milliseconds.*ISO 8601.*now-15m/;

const qs = (params: Record<string, string | number | string[]>) => {
  const search = new URLSearchParams();
  for (const [key, value] of Object.entries(params)) for (const v of Array.isArray(value) ? value : [value]) search.append(key, String(v));
  return search.toString();
};

/** Records of an RFC 4180 text, read by a reader written here (quotes doubled, CRLF ends). */
function csvRecords(text: string): string[][] {
  const records: string[][] = [];
  let record: string[] = [];
  let field = '';
  let quoted = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (quoted) {
      if (c === '"' && text[i + 1] === '"') {
        field += '"';
        i++;
      } else if (c === '"') quoted = false;
      else field += c;
    } else if (c === '"') quoted = true;
    else if (c === ',') {
      record.push(field);
      field = '';
    } else if (c === '\r' && text[i + 1] === '\n') {
      record.push(field);
      records.push(record);
      record = [];
      field = '';
      i++;
    } else {
      assert.notEqual(c, '\n', `bare LF at ${i}`);
      field += c;
    }
  }
  assert.equal(field + record.join(''), '', 'the text ends with CRLF');
  return records;
}

/** Rows of a CSV answer as [time, tag, value] with numbers; the header checked. */
function csvRows(res: HttpResult): Array<[number, string, number | null]> {
  assert.equal(res.status, 200, res.text.slice(0, 300));
  assert.equal(res.headers['content-type'], CSV_TYPE);
  const [header, ...rows] = csvRecords(res.text);
  assert.deepEqual(header, ['time', 'tag', 'value']);
  return rows.map(([time, tag, value]) => [Number(time), tag, value === '' ? null : Number(value)]);
}

/** A msgpack-decoded (or JSON) map as the rows CSV should hold, tags in `order`. */
function asRows(map: Record<string, Array<[number, number | null]>>, order: string[]): Array<[number, string, number | null]> {
  return order.flatMap((tag) => map[tag].map(([t, v]): [number, string, number | null] => [t, tag, v]));
}

/** The first python3 that imports `module` (pyenv's and Debian's may differ), or null. */
function pythonWith(module: string): string | null {
  for (const python of ['python3', '/usr/bin/python3']) {
    const probe = spawnSync(python, ['-c', `import ${module}`], { encoding: 'utf8' });
    if (probe.status === 0) return python;
  }
  return null;
}

const PYTHON = pythonWith('csv');

function runPython(python: string, script: string, env: Record<string, string> = {}): unknown {
  const run = spawnSync(python, ['-c', script], { encoding: 'utf8', env: { ...process.env, ...env }, timeout: 60_000 });
  assert.equal(run.status, 0, `${python} failed:\n${run.stderr}`);
  return JSON.parse(run.stdout);
}

describe('time parameters and CSV', { timeout: 180_000 }, () => {
  let svc: TestService;
  let admin: string;
  let now: number;
  const get = (p: string, headers: Record<string, string> = {}) => svc.request('GET', p, { token: admin, headers });
  /** The same query answered in msgpack: the exact doubles to compare CSV with. */
  const exact = async (method: 'GET' | 'POST', p: string, body?: unknown): Promise<Record<string, Array<[number, number | null]>>> => {
    const res = await svc.request(method, p, { token: admin, body, headers: { accept: 'application/msgpack' } });
    assert.equal(res.status, 200, res.text.slice(0, 200));
    return unpack(res.bytes) as Record<string, Array<[number, number | null]>>;
  };

  before(async () => {
    svc = await startService({ config: { storage: { shards: 2 }, debug: { clockRoute: true } } });
    admin = await svc.adminToken();
    for (const scope of [A, B]) assert.equal((await svc.post('/svcapi/create_collection', scope, admin)).status, 200);
    // Binary batches carry every double exactly, -0 included.
    const ts = AWKWARD_VALUES.map((_, i) => T0 + i * MIN);
    const columns = AWKWARD_TAGS.map((name, k) => ({ name, values: AWKWARD_VALUES.map((v, i) => (k === 0 ? v : v / (k + 1) + i)) }));
    for (const [scope, cols] of [[A, columns], [B, [{ name: 'PI-202', values: ts.map((_, i) => i / 4) }]]] as const) {
      const res = await svc.request('POST', '/svcapi/write', { rawBody: Buffer.from(encodeBinaryBatch(scope, ts, cols)), token: admin, headers: { 'content-type': 'application/octet-stream' } });
      assert.deepEqual(res.body, { success: true, points: ts.length * cols.length });
    }
    // Points around the present, for relative times: 2 h ago, 30 min ago, 2 h ahead.
    now = Date.now();
    const recent = await svc.post('/svcapi/write', { ...A, tags: { RECENT: [[now - 2 * HOUR, 1], [now - 30 * MIN, 2], [now + 2 * HOUR, 3]] } }, admin);
    assert.deepEqual(recent.body, { success: true, points: 3 });
  });
  after(() => svc?.dispose());

  describe('start and end', () => {
    const TAGS = ['TI-101'];

    test('ISO 8601 (Z, offsets, fractions, a date alone) selects what the same epoch ms select', async () => {
      const byMs = await get(`/svcapi/fast_query?${qs({ ...A, tags: TAGS, start: T0 + MIN, end: T0 + 3 * MIN })}`);
      assert.equal(byMs.status, 200, byMs.text);
      assert.equal(byMs.body['TI-101'].length, 3);
      for (const [start, end] of [
        ['2024-06-01T00:01:00Z', '2024-06-01T00:03:00.000Z'],
        ['2024-06-01T02:01:00+02:00', '2024-05-31T20:03:00-04:00'],
        ['2024-06-01T00:00:59.001Z', '2024-06-01T00:03:00.999999Z'],
      ]) {
        const res = await get(`/svcapi/fast_query?${qs({ ...A, tags: TAGS, start, end })}`);
        assert.equal(res.status, 200, `${start}..${end}: ${res.text}`);
        assert.deepEqual(res.body, byMs.body, `${start}..${end}`);
      }
      // A "+" left unencoded in the URL arrives as a space, and is read as the "+" it was.
      const raw = await get(`/svcapi/fast_query?${qs({ ...A, tags: TAGS })}&start=2024-06-01T02:01:00+02:00&end=2024-06-01T02:03:00+02:00`);
      assert.deepEqual(raw.body, byMs.body);
      const day = await get(`/svcapi/fast_query?${qs({ ...A, tags: TAGS, start: '2024-06-01', end: '2024-06-02' })}`);
      assert.equal(day.body['TI-101'].length, AWKWARD_VALUES.length);
    });

    test('relative times and a missing end mean the service clock now', async () => {
      const points = async (params: Record<string, string | number>) => {
        const res = await get(`/svcapi/fast_query?${qs({ ...A, tags: 'RECENT', ...params })}`);
        assert.equal(res.status, 200, res.text);
        return (res.body.RECENT as Array<[number, number]>).map(([, v]) => v);
      };
      assert.deepEqual(await points({ start: 'now-1h' }), [2], 'end defaults to now: the point 2 h ahead is not there yet');
      assert.deepEqual(await points({ start: 'now-3h' }), [1, 2]);
      assert.deepEqual(await points({ start: 'now-3h', end: 'now+3h' }), [1, 2, 3]);
      assert.deepEqual(await points({ start: 'now-2h30m', end: 'now-1h' }), [1]);
      assert.deepEqual(await points({ start: 'now-100000w', end: 'now' }), [1, 2]);
      assert.deepEqual(await points({ start: now - 3 * HOUR }), [1, 2], 'epoch ms with end left out');
    });

    test('every GET query route reads the same forms: JSON, binary format 1 and format 2 agree', async () => {
      const params = { ...A, tags: TAGS, start: '2024-06-01T00:00:00Z' };
      const json = await get(`/svcapi/fast_query?${qs({ ...params, end: 'now' })}`);
      const binary = await get(`/svcapi/fast_query_binary?${qs({ ...params, end: 'now-1s' })}`);
      const table = await get(`/svcapi/fast_query_optimised?${qs(params)}`);
      for (const res of [json, binary, table]) assert.equal(res.status, 200, res.text.slice(0, 200));
      const expected = (json.body['TI-101'] as Array<[number, number]>).map(([t]) => t);
      assert.equal(expected.length, AWKWARD_VALUES.length);
      assert.deepEqual([...decodeFormat1(binary.bytes)[0].timestamps], expected);
      assert.deepEqual([...decodeFormat2(table.bytes).timestamps].map(Number), expected);
    });

    test('a bad start or end is a 400 naming the parameter and the accepted forms, on every GET query route', async () => {
      for (const route of ['fast_query', 'fast_query_binary', 'fast_query_optimised']) {
        const cases: Array<[Record<string, string>, RegExp]> = [
          [{ start: 'yesterday' }, /query parameter 'start' is not a time/],
          [{ start: '1', end: 'tomorrow' }, /query parameter 'end' is not a time/],
          [{ start: '2024-06-01T00:00:00' }, /'start' is not a time \(a time of day needs its UTC offset/],
          [{ start: '2024-02-30' }, /'start' is not a time \(2024-02 has no day 30\)/],
          [{ start: 'now-1.5h' }, /'start' is not a time/],
          [{ start: 'now-30m1h' }, /largest first/],
          [{ start: '-5' }, /'start' is not a time/],
        ];
        for (const [times, message] of cases) {
          const res = await get(`/svcapi/${route}?${qs({ ...A, tags: TAGS, ...times })}`);
          assert.equal(res.status, 400, `${route} ${JSON.stringify(times)}: ${res.status} ${res.text}`);
          assert.match(res.body.error, message);
          assert.match(res.body.error, FORMS, 'the error lists the accepted forms');
        }
        const missing = await get(`/svcapi/${route}?${qs({ ...A, tags: TAGS })}`);
        assert.equal(missing.status, 400);
        assert.match(missing.body.error, /missing query parameter 'start'/);
        const backwards = await get(`/svcapi/${route}?${qs({ ...A, tags: TAGS, start: 'now', end: 'now-1h' })}`);
        assert.equal(backwards.status, 400);
        assert.match(backwards.body.error, /end must not be before start/);
      }
    });

    test('the OpenAPI document describes the forms, end is optional with default now, and format lists csv', async () => {
      const doc = parseYaml((await svc.get('/svcapi/openapi.yaml')).text) as { paths: Record<string, Record<string, { parameters: Array<{ name: string; required: boolean; description?: string; schema: Record<string, unknown> }> }>> };
      for (const route of ['/svcapi/fast_query', '/svcapi/fast_query_binary', '/svcapi/fast_query_optimised']) {
        const params = doc.paths[route].get.parameters;
        const start = params.find((p) => p.name === 'start')!;
        const end = params.find((p) => p.name === 'end')!;
        assert.equal(start.required, true);
        assert.equal(end.required, false);
        assert.equal(end.schema.default, 'now');
        assert.match(start.description ?? '', FORMS);
        assert.equal(start.schema.type, 'string');
      }
      const format = doc.paths['/svcapi/fast_query'].get.parameters.find((p) => p.name === 'format')!;
      assert.deepEqual(format.schema.enum, ['json', 'msgpack', 'csv']);
      assert.ok(doc.paths['/svcapi/fast_query'].post.parameters.some((p) => p.name === 'time_format'));
    });
  });

  describe('CSV', () => {
    test('format=csv: header, CRLF rows in time order, tags quoted as RFC 4180 says, values exact', async () => {
      const params = { ...A, tags: AWKWARD_TAGS, start: T0, end: T0 + HOUR };
      const res = await get(`/svcapi/fast_query?${qs({ ...params, format: 'csv' })}`);
      const rows = csvRows(res);
      assert.ok(res.text.startsWith('time,tag,value\r\n1717200000000,TI-101,0.1\r\n1717200060000,TI-101,-0\r\n1717200120000,TI-101,1e-300\r\n'), res.text.slice(0, 200));
      assert.match(res.text, /\r\n1717200000000,"flow,total",/);
      assert.match(res.text, /\r\n1717200000000,"say ""hi""",/);
      assert.match(res.text, /\r\n1717200000000,"""quoted, twice""",/);
      assert.match(res.text, /\r\n1717200000000, spaced ,/);
      assert.equal(rows.length, AWKWARD_TAGS.length * AWKWARD_VALUES.length);
      assert.deepEqual(rows, asRows(await exact('GET', `/svcapi/fast_query?${qs(params)}`), AWKWARD_TAGS));
      assert.deepEqual(rows.slice(0, AWKWARD_VALUES.length).map(([, , v]) => v), AWKWARD_VALUES, 'the values written, -0 included');
    });

    test('Accept: text/csv chooses CSV when format is absent; format wins; JSON stays the default', async () => {
      const path = `/svcapi/fast_query?${qs({ ...A, tags: 'TI-101', start: T0, end: T0 + MIN })}`;
      const cases: Array<[Record<string, string>, string, string]> = [
        [{ accept: 'text/csv' }, '', 'csv'],
        [{ accept: 'text/csv;q=0.9, application/json;q=0.5' }, '', 'csv'],
        [{ accept: 'application/json, text/csv;q=0.5' }, '', 'json'],
        [{ accept: 'text/csv' }, '&format=json', 'json'],
        [{ accept: 'text/csv' }, '&format=msgpack', 'msgpack'],
        [{ accept: 'application/msgpack' }, '&format=csv', 'csv'],
        [{ accept: '*/*' }, '', 'json'],
        [{}, '', 'json'],
      ];
      for (const [headers, extra, want] of cases) {
        const res = await get(path + extra, headers);
        assert.equal(res.status, 200, res.text);
        const type = String(res.headers['content-type']);
        assert.ok(type.startsWith({ csv: 'text/csv', json: 'application/json', msgpack: 'application/msgpack' }[want]!), `${JSON.stringify(headers)}${extra}: ${type}`);
      }
    });

    test('the binary routes answer CSV too when asked (format=csv or Accept: text/csv), GET and POST; their binary stays the default', async () => {
      const params = { ...A, tags: AWKWARD_TAGS, start: T0, end: T0 + HOUR };
      const want = csvRows(await get(`/svcapi/fast_query?${qs({ ...params, format: 'csv' })}`));
      const body = { start_absolute: T0, end_absolute: T0 + HOUR, ...A, metrics: AWKWARD_TAGS.map((name) => ({ name })) };
      for (const route of ['fast_query_binary', 'fast_query_optimised']) {
        for (const res of [
          await get(`/svcapi/${route}?${qs({ ...params, format: 'csv' })}`),
          await get(`/svcapi/${route}?${qs(params)}`, { accept: 'text/csv' }),
          await svc.request('POST', `/svcapi/${route}?format=csv`, { body, token: admin }),
        ]) {
          assert.equal(res.status, 200, `${route}: ${res.text.slice(0, 200)}`);
          assert.ok(String(res.headers['content-type']).startsWith('text/csv'), `${route}: ${res.headers['content-type']}`);
          assert.deepEqual(csvRows(res), want, route);
        }
        const iso = await get(`/svcapi/${route}?${qs({ ...params, format: 'csv', time_format: 'iso' })}`);
        assert.ok(iso.text.startsWith('time,tag,value\r\n2024-06-01T00:00:00.000Z,TI-101,0.1\r\n'), `${route} iso: ${iso.text.slice(0, 80)}`);
        const binary = await get(`/svcapi/${route}?${qs(params)}`);
        assert.equal(binary.headers['content-type'], 'application/octet-stream', route);
        assert.equal(binary.bytes.subarray(0, 3).toString('latin1'), 'HSB', route);
        for (const [extra, message] of [[{ format: 'json' }, /'format' must be one of binary, csv/], [{ time_format: 'iso' }, /time_format applies to CSV only/]] as const) {
          const bad = await get(`/svcapi/${route}?${qs({ ...params, ...extra })}`);
          assert.equal(bad.status, 400, `${route} ${JSON.stringify(extra)}: ${bad.text}`);
          assert.match(bad.body.error, message);
        }
      }
    });

    test('time_format=iso writes ISO 8601 UTC with milliseconds', async () => {
      const res = await get(`/svcapi/fast_query?${qs({ ...A, tags: 'TI-101', start: T0, end: T0 + 2 * MIN, format: 'csv', time_format: 'iso' })}`);
      assert.equal(res.text, 'time,tag,value\r\n2024-06-01T00:00:00.000Z,TI-101,0.1\r\n2024-06-01T00:01:00.000Z,TI-101,-0\r\n2024-06-01T00:02:00.000Z,TI-101,1e-300\r\n');
      const accepted = await get(`/svcapi/fast_query?${qs({ ...A, tags: 'TI-101', start: T0, end: T0, time_format: 'iso' })}`, { accept: 'text/csv' });
      assert.equal(accepted.text, 'time,tag,value\r\n2024-06-01T00:00:00.000Z,TI-101,0.1\r\n');
    });

    test('tags come in the order asked, across collections; a tag without points has no rows, the header stays', async () => {
      const order = ['say "hi"', 'PI-202', 'TI-101'];
      const params = { tags: order, start: T0, end: T0 + 2 * MIN };
      const rows = csvRows(await get(`/svcapi/fast_query?${qs({ ...params, format: 'csv' })}`));
      assert.deepEqual(rows, asRows(await exact('GET', `/svcapi/fast_query?${qs(params)}`), order));
      assert.deepEqual([...new Set(rows.map(([, tag]) => tag))], order);
      const empty = await get(`/svcapi/fast_query?${qs({ ...A, tags: 'TI-101', start: 1, end: 2, format: 'csv' })}`);
      assert.equal(empty.text, 'time,tag,value\r\n');
    });

    test('POST fast_query with aggregators answers CSV rows equal to its JSON; gaps are empty fields', async () => {
      const body = {
        start_absolute: T0, end_absolute: T0 + HOUR,
        metrics: [
          { name: 'PI-202', tags: { organization: ['acme'], site: ['north'], unit: ['boiler-2'], grid: ['main'] }, aggregators: [{ name: 'max', sampling: { value: 3, unit: 'minutes' } }] },
          { name: 'TI-101', tags: { organization: ['acme'], site: ['north'], unit: ['boiler-1'], grid: ['main'] }, aggregators: [{ name: 'scale', factor: 0.5 }] },
        ],
      };
      const csv = await svc.request('POST', '/svcapi/fast_query?format=csv', { body, token: admin });
      assert.deepEqual(csvRows(csv), asRows(await exact('POST', '/svcapi/fast_query', body), ['PI-202', 'TI-101']));
      const viaAccept = await svc.request('POST', '/svcapi/fast_query', { body, token: admin, headers: { accept: 'text/csv' } });
      assert.equal(viaAccept.text, csv.text);
      const gaps = await svc.request('POST', '/svcapi/fast_query?format=csv', {
        token: admin,
        body: { start_absolute: T0, end_absolute: T0 + 30 * MIN, ...B, metrics: [{ name: 'PI-202', aggregators: [{ name: 'gaps', sampling: { value: 30, unit: 'seconds' } }] }] },
      });
      const gapRows = csvRows(gaps);
      assert.deepEqual(gapRows.slice(0, 3), [[T0, 'PI-202', 0], [T0 + 30_000, 'PI-202', null], [T0 + MIN, 'PI-202', 0.25]]);
      assert.match(gaps.text, /\r\n1717200030000,PI-202,\r\n/);
      // Doubling the largest double overflows: CSV says Infinity where JSON and msgpack can only say null.
      const overflow = { start_absolute: T0 + 5 * MIN, end_absolute: T0 + 5 * MIN, ...A, metrics: [{ name: 'TI-101', aggregators: [{ name: 'scale', factor: -2 }] }] };
      const overflowCsv = await svc.request('POST', '/svcapi/fast_query?format=csv', { body: overflow, token: admin });
      assert.equal(overflowCsv.text, 'time,tag,value\r\n1717200300000,TI-101,-Infinity\r\n');
      assert.deepEqual((await svc.request('POST', '/svcapi/fast_query', { body: overflow, token: admin })).body, { 'TI-101': [[T0 + 5 * MIN, null]] });
    });

    test('tag-mapping queries answer CSV with the external spec in the tag column, in the order asked', async () => {
      for (const [external, tag, scope] of [['\\\\PI-SRV\\TI101, main', 'TI-101', A], ['opc:ns=2;s="PI"', 'PI-202', B]] as const) {
        const res = await svc.post('/svcapi/tag_mappings', { external, tag, ...scope }, admin);
        assert.equal(res.status < 300, true, res.text);
      }
      const body = { tags: ['opc:ns=2;s="PI"', '\\\\PI-SRV\\TI101, main'], start: T0, end: T0 + MIN, format: 'csv' };
      const res = await svc.post('/svcapi/fast_query_tag_mapping', body, admin);
      assert.deepEqual(csvRows(res), [
        [T0, 'opc:ns=2;s="PI"', 0], [T0 + MIN, 'opc:ns=2;s="PI"', 0.25],
        [T0, '\\\\PI-SRV\\TI101, main', 0.1], [T0 + MIN, '\\\\PI-SRV\\TI101, main', -0],
      ]);
      assert.match(res.text, /^time,tag,value\r\n1717200000000,"opc:ns=2;s=""PI""",0\r\n/);
      const iso = await svc.post('/svcapi/fast_query_tag_mapping', { ...body, time_format: 'iso' }, admin);
      assert.ok(iso.text.endsWith('\r\n2024-06-01T00:01:00.000Z,"\\\\PI-SRV\\TI101, main",-0\r\n'), iso.text);
      const refused = await svc.post('/svcapi/fast_query_tag_mapping', { ...body, format: 'binary', time_format: 'iso' }, admin);
      assert.equal(refused.status, 400);
      assert.match(refused.body.error, /time_format applies to CSV only/);
    });

    test('a bad format or time_format is a 400 naming it', async () => {
      const base = { ...A, tags: 'TI-101', start: T0 };
      const cases: Array<[Record<string, string>, RegExp]> = [
        [{ format: 'xml' }, /query parameter 'format' must be one of json, msgpack, csv/],
        [{ format: 'csv', time_format: 'seconds' }, /query parameter 'time_format' must be one of ms, iso/],
        [{ time_format: 'iso' }, /query parameter time_format applies to CSV only/],
        [{ format: 'json', time_format: 'ms' }, /time_format applies to CSV only/],
      ];
      for (const [extra, message] of cases) {
        const res = await get(`/svcapi/fast_query?${qs({ ...base, ...extra })}`);
        assert.equal(res.status, 400, `${JSON.stringify(extra)}: ${res.text}`);
        assert.match(res.body.error, message);
      }
      const post = await svc.request('POST', '/svcapi/fast_query?format=tsv', { body: { start_absolute: T0, ...A, metrics: [{ name: 'TI-101' }] }, token: admin });
      assert.equal(post.status, 400);
      assert.match(post.body.error, /'format'/);
      const mapping = await svc.post('/svcapi/fast_query_tag_mapping', { tags: ['x'], start: T0, end: T0, format: 'xlsx' }, admin);
      assert.equal(mapping.status, 400);
      assert.match(mapping.body.error, /format/);
    });

    test("Python's csv module reads the export back to the same numbers", { skip: PYTHON ? false : 'python3 is not installed' }, async () => {
      const res = await get(`/svcapi/fast_query?${qs({ ...A, tags: AWKWARD_TAGS, start: T0, end: T0 + HOUR, format: 'csv' })}`);
      assert.equal(res.status, 200);
      const dir = tempDir('historian-csv-');
      try {
        const file = path.join(dir, 'export.csv');
        fs.writeFileSync(file, res.bytes);
        // newline='' as the csv module asks; each value through float() and back out by repr (shortest round trip).
        const script = `
import csv, json, sys
with open(${JSON.stringify(file)}, newline='', encoding='utf-8') as f:
    rows = list(csv.reader(f, strict=True))
print(json.dumps({"header": rows[0], "rows": [[int(t), tag, repr(float(v))] for t, tag, v in rows[1:]]}))
`;
        const read = runPython(PYTHON!, script) as { header: string[]; rows: Array<[number, string, string]> };
        assert.deepEqual(read.header, ['time', 'tag', 'value']);
        // repr() is the shortest text of the double Python read ("-0.0" for negative zero).
        const expected = asRows(await exact('GET', `/svcapi/fast_query?${qs({ ...A, tags: AWKWARD_TAGS, start: T0, end: T0 + HOUR })}`), AWKWARD_TAGS);
        assert.deepEqual(read.rows.map(([t, tag, value]) => [t, tag, Number(value)]), expected);
        assert.deepEqual(read.rows.slice(0, AWKWARD_VALUES.length).map(([, , value]) => Number(value)), AWKWARD_VALUES);
      } finally {
        fs.rmSync(dir, { recursive: true, force: true });
      }
    });

    test('pandas reads the export straight from the service with a token, trusting its CA (the README lines)', { skip: PYTHON ? false : 'python3 is not installed' }, async () => {
      const python = pythonWith('pandas');
      assert.ok(python, 'pandas is not installed for python3: apt-get install -y python3-pandas (.ci/run installs it when missing)');
      const dir = tempDir('historian-pandas-');
      try {
        const caFile = path.join(dir, 'historian-ca.crt');
        fs.writeFileSync(caFile, svc.ca);
        const url = `${svc.baseUrl}/svcapi/fast_query?${qs({ ...A, tags: AWKWARD_TAGS, start: '2024-06-01', end: '2024-06-01T01:00:00Z', format: 'csv' })}`;
        const isoUrl = `${svc.baseUrl}/svcapi/fast_query?${qs({ tags: ['PI-202', 'TI-101'], start: '2024-06-01', end: '2024-06-01T00:02:00Z', format: 'csv', time_format: 'iso' })}`;
        // The README's lines, with the token from the environment instead of a literal.
        // float_precision='round_trip': pandas' default float parser is faster but not exact
        // (it reads 0.30000000000000004 as 0.3 and 0.03333333333333333 a few ulps off).
        const script = `
import json, os
import pandas as pd
os.environ['SSL_CERT_FILE'] = ${JSON.stringify(caFile)}
df = pd.read_csv(${JSON.stringify(url)}, storage_options={'Authorization': f"Bearer {os.environ['TOKEN']}"}, float_precision='round_trip')
iso = pd.read_csv(${JSON.stringify(isoUrl)}, storage_options={'Authorization': f"Bearer {os.environ['TOKEN']}"}, float_precision='round_trip', parse_dates=['time'])
print(json.dumps({
    "columns": list(df.columns), "dtypes": [str(t) for t in df.dtypes],
    "rows": [[int(t), tag, repr(float(v))] for t, tag, v in df.itertuples(index=False)],
    "iso_dtype": str(iso['time'].dtype),
    "iso": [[int(t.value // 1000000), tag, float(v)] for t, tag, v in iso.itertuples(index=False)],
}))
`;
        const read = runPython(python!, script, { TOKEN: admin }) as { columns: string[]; dtypes: string[]; rows: Array<[number, string, string]>; iso_dtype: string; iso: Array<[number, string, number]> };
        assert.deepEqual(read.columns, ['time', 'tag', 'value']);
        assert.deepEqual(read.dtypes, ['int64', 'object', 'float64']);
        const expected = asRows(await exact('GET', `/svcapi/fast_query?${qs({ ...A, tags: AWKWARD_TAGS, start: T0, end: T0 + HOUR })}`), AWKWARD_TAGS);
        assert.deepEqual(read.rows.map(([t, tag, value]) => [t, tag, Number(value)]), expected);
        assert.deepEqual(read.rows.slice(0, AWKWARD_VALUES.length).map(([, , value]) => Number(value)), AWKWARD_VALUES);
        assert.equal(read.iso_dtype, 'datetime64[ns, UTC]');
        assert.deepEqual(read.iso, asRows(await exact('GET', `/svcapi/fast_query?${qs({ tags: ['PI-202', 'TI-101'], start: T0, end: T0 + 2 * MIN })}`), ['PI-202', 'TI-101']));
      } finally {
        fs.rmSync(dir, { recursive: true, force: true });
      }
    });

    test('relative times follow the service clock when it moves (debug.clockRoute)', async () => {
      await svc.advanceAuthClock(24 * 3600, admin);
      admin = await svc.adminToken(); // a day on, the old token has expired
      const res = await get(`/svcapi/fast_query?${qs({ ...A, tags: 'RECENT', start: 'now-25h', format: 'csv' })}`);
      // The service's now is a day ahead of the wall clock: now-25h is about an hour ago, and the
      // point written 2 h ahead of the wall clock is now in the past.
      assert.deepEqual(csvRows(res).map(([, , v]) => v), [2, 3]);
      const lastHour = await get(`/svcapi/fast_query?${qs({ ...A, tags: 'RECENT', start: 'now-1h' })}`);
      assert.deepEqual(lastHour.body, { RECENT: [] });
    });
  });
});
