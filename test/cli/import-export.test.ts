// Issue 32, `historian import` and `historian export` (src/cli/import.ts, export.ts) against the
// real service: CSV and line protocol files (gzip, stdin, precision) into a collection, the tag
// names of line protocol equal to what the ingest route stores for the same lines, exports
// (CSV, ISO times, line protocol) read back into another collection giving the same raw
// answers, bad lines named by number with their chunk unwritten, resuming after an abort and
// after kill -9 without losing or doubling a point, tag globs and ranges, a slow writer, and
// inputs that are not text at all.

import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import https from 'node:https';
import path from 'node:path';
import { Writable } from 'node:stream';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';
import { unpack } from 'msgpackr';
import { exportData, type ExportOptions } from '../../src/cli/export.js';
import { importData, type ImportOptions } from '../../src/cli/import.js';
import { stateFileFor } from '../../src/cli/import-state.js';
import type { Target } from '../../src/cli/target-types.js';
import { startService, tempDir, type TestService } from '../api/harness.js';

const CHILD = fileURLToPath(new URL('./import-child.js', import.meta.url));
const T0 = Date.UTC(2024, 5, 1); // 2024-06-01T00:00:00Z
const MIN = 60_000;
/** The service cuts a streamed reply whose reader takes nothing for this long. */
const STALL_MS = 400;

type Scope = { organization: string; site: string; unit: string; grid: string };
type Points = Record<string, Array<[number, number]>>;

const scopeOf = (unit: string): Scope => ({ organization: 'acme', site: 'north', unit, grid: 'main' });
const idOf = (s: Scope) => `${s.organization}/${s.site}/${s.unit}/${s.grid}`;

describe('historian import and export', () => {
  let svc: TestService;
  let token: string;
  let target: Target;
  let dir: string;

  before(async () => {
    svc = await startService({ config: { storage: { resultStallTimeoutMs: STALL_MS } } });
    token = await svc.adminToken();
    target = { baseUrl: svc.baseUrl, authorization: `Bearer ${token}`, agent: new https.Agent({ ca: svc.ca, keepAlive: true }) };
    dir = tempDir('historian-impexp-');
  });
  after(async () => {
    target.agent.destroy();
    await svc.dispose();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  const file = (name: string, content: string | Buffer) => {
    const p = path.join(dir, name);
    fs.writeFileSync(p, content);
    return p;
  };
  const create = async (s: Scope) => {
    const res = await svc.post('/svcapi/create_collection', s, token);
    assert.equal(res.body?.success, true, res.text);
    return idOf(s);
  };
  const write = async (s: Scope, tags: Points) => {
    const res = await svc.post('/svcapi/write', { ...s, tags }, token);
    assert.equal(res.body?.success, true, res.text);
  };
  const tagsOf = async (s: Scope): Promise<string[]> => {
    const res = await svc.get(`/svcapi/series?collection=${encodeURIComponent(idOf(s))}&limit=100000`, token);
    assert.equal(res.status, 200, res.text);
    return (res.body.series as Array<{ tag: string }>).map((x) => x.tag);
  };
  /** Every point of every tag of the collection, as msgpack carries them (float64, -0 kept). */
  const raw = async (s: Scope, tags?: string[]): Promise<Points> => {
    const names = tags ?? (await tagsOf(s));
    if (names.length === 0) return {};
    const body = { start_absolute: 0, end_absolute: 2 ** 53 - 1, ...s, metrics: names.map((name) => ({ name })) };
    const res = await svc.request('POST', '/svcapi/fast_query', { body, token, headers: { accept: 'application/msgpack' } });
    assert.equal(res.status, 200, res.text);
    return unpack(res.bytes) as Points;
  };
  const count = async (s: Scope) => Object.values(await raw(s)).reduce((n, points) => n + points.length, 0);
  const run = (opts: ImportOptions) => importData(target, opts);
  const exportTo = async (p: string, opts: Omit<ExportOptions, 'out'>) => {
    const out = fs.createWriteStream(p);
    const result = await exportData(target, { ...opts, out });
    await new Promise<void>((resolve, reject) => out.end((err?: Error | null) => (err ? reject(err) : resolve())));
    return result;
  };

  test('CSV: header (after a byte order mark), quoted names, RFC 3339 and epoch ms times, CRLF; a later line wins', async () => {
    const s = scopeOf('csv');
    const collection = await create(s);
    const input = file('plant.csv', [
      '\uFEFFtime,tag,value',
      '1717200000000,TI-101,71.25',
      '2024-06-01T00:00:01.500Z,TI-101,-0',
      '2024-06-01T02:00:02+02:00,"flow,total",1e21',
      '2024-06-01 00:00:03.123456+00:00,"say ""hi""",5e-324',
      '1717200004000,ünï ✓,0.30000000000000004',
      '2024-06-01,TI-101,3',
      '',
    ].join('\r\n'));
    const result = await run({ collection, input });
    assert.deepEqual({ ...result, bytes: 0 }, { format: 'csv', lines: 7, points: 6, bytes: 0, resumedFromByte: 0, requests: 1 });
    assert.deepEqual(await raw(s), {
      'TI-101': [[T0, 3], [T0 + 1500, -0]],
      'flow,total': [[T0 + 2000, 1e21]],
      'say "hi"': [[T0 + 3123, 5e-324]],
      'ünï ✓': [[T0 + 4000, 0.30000000000000004]],
    });
    assert.equal(fs.existsSync(stateFileFor(input)), false, 'a completed import leaves no state');
  });

  test('line protocol: the tags and values the ingest route stores for the same lines; gzip; precision s and ms', async () => {
    const reference = { organization: 'acme', site: 'north', unit: 'lp-ref', grid: 'main' };
    const res = await svc.post('/svcapi/ingestconfigs', { clientId: 'impexp-ref', ...reference, enabled: true }, token);
    assert.equal(res.status, 200, res.text);
    const seconds = Math.floor(T0 / 1000);
    const text = [
      '# a comment, then a blank line',
      '',
      `cpu,rack=7,host=a usage=1.5,idle=2i,ok=true,note="skipped" ${seconds}`,
      `esc\\ m,x=a\\,b v=-3.25 ${seconds + 1}`,
      `weather,site=north,organization=acme temp=12.5,hum=81u ${seconds + 2}`,
      `cpu,host=a,rack=7 usage=1.75 ${seconds + 3}`,
      '',
    ].join('\n');
    const written = await svc.request('POST', '/ingest/v2/write?db=impexp-ref&precision=s', { rawBody: text, token, headers: { 'content-type': 'text/plain' } });
    assert.equal(written.status, 204, written.text);

    const s = scopeOf('lp-imp');
    const collection = await create(s);
    const result = await run({ collection, input: file('telegraf.lp.gz', gzipSync(text)), precision: 's' });
    assert.equal(result.format, 'lp');
    assert.equal(result.points, 7);
    const names = await tagsOf(s);
    assert.deepEqual(names, await tagsOf(reference));
    assert.ok(names.includes('cpu,host=a,rack=7.usage') && names.includes('esc m,x=a,b.v') && names.includes('weather.temp'), names.join(' | '));
    assert.deepEqual(await raw(s, names), await raw(reference, names));

    const ms = scopeOf('lp-ms');
    await run({ collection: await create(ms), input: file('ms.txt', `m f=1 ${T0 + 7}\nm f=2 ${T0 + 8}\n`), precision: 'ms' });
    assert.deepEqual(await raw(ms), { 'm.f': [[T0 + 7, 1], [T0 + 8, 2]] });
  });

  test('round trip: CSV, CSV with ISO times and line protocol exports, imported into other collections, answer the same raw points', async () => {
    const source = scopeOf('source');
    await create(source);
    const tags = ['TI-101', 'flow,total', 'say "hi"', ' spaced ', 'ünï ✓', '#hash', 'back\\slash', 'a.b c=d', '"quoted, twice"', 'x\\,y z'];
    const values = [0.1, -0, 1e-300, 123456789.123, 5e-324, 1.7976931348623157e308, -3.07, 71.25, 0.1 + 0.2, 1e21, 2 ** 53, -123.456e-7];
    const times = [1e11, T0, T0 + 1, T0 + 999, 8.64e15, 2 ** 53 - 1];
    const points: Points = {};
    // Each tag its own times (the last one counting down from 2^53-1): sparse, so the import writes tag-keyed JSON.
    tags.forEach((tag, t) => (points[tag] = times.map((ts, i) => [i === times.length - 1 ? ts - t : ts + t, values[(t + i) % values.length]])));
    await write(source, points);
    const expected = await raw(source);
    assert.equal(Object.keys(expected).length, tags.length);

    for (const [name, form] of [['csv', { format: 'csv' }], ['iso.csv', { format: 'csv', timeFormat: 'iso' }], ['lp', { format: 'lp' }]] as const) {
      const p = path.join(dir, `export.${name}`);
      const exported = await exportTo(p, { collection: idOf(source), ...form });
      assert.deepEqual([exported.points, exported.series, exported.skipped], [tags.length * times.length, tags.length, 0]);
      const copy = scopeOf(`copy-${name.replace('.', '-')}`);
      const imported = await run({ collection: await create(copy), input: p });
      assert.equal(imported.points, tags.length * times.length, name);
      assert.equal(imported.format, name === 'lp' ? 'lp-export' : 'csv');
      assert.deepEqual(await raw(copy), expected, name);
    }
  });

  test('a bad line stops the import naming its line and problem; nothing of its chunk is written, the chunks before it are', async () => {
    const s = scopeOf('bad-line');
    const collection = await create(s);
    // Lines of one length, chunks of ten lines: lines 41-50 are the fifth request.
    const lines = Array.from({ length: 100 }, (_, i) => `${T0 + i * 1000},T-${String(i % 7).padStart(3, '0')},${(i % 90 + 10).toFixed(2)}`);
    const chunkBytes = 10 * (lines[0].length + 1);
    assert.ok(lines.every((l) => l.length === lines[0].length));
    lines[46] = `${T0 + 46_000},T-004,abcde`;
    const input = file('bad.csv', `${lines.join('\n')}\n`);
    const notices: string[] = [];
    await assert.rejects(run({ collection, input, chunkBytes }), (err: Error) => {
      assert.equal(err.message, `${input}: line 47: value "abcde" is not a finite number`);
      return true;
    });
    assert.equal(await count(s), 40, 'the four chunks before the bad one, and nothing else');

    // Fixed, the file is another file: the import starts over (harmless: the same points again).
    lines[46] = `${T0 + 46_000},T-004,47.00`;
    fs.writeFileSync(input, `${lines.join('\n')}\n`);
    const result = await run({ collection, input, chunkBytes, onNotice: (m) => notices.push(m) });
    assert.equal(result.resumedFromByte, 0);
    assert.match(notices.join('\n'), /changed since the interrupted import.*starting from the beginning/);
    assert.equal(await count(s), 100);

    // Line protocol through the ingest parser: the line number counts from the file's start.
    const lp = Array.from({ length: 30 }, (_, i) => `m,k=v${i % 3} f=${i} ${(T0 + i) * 1e6}`);
    lp[22] = `m,k=v1 f=oops ${T0 * 1e6}`;
    await assert.rejects(run({ collection, input: file('bad.lp', lp.join('\n')), chunkBytes: 200 }), /bad\.lp: line 23: .*oops/);
  });

  test('resume after an abort: the rerun starts at the acknowledged offset and ends with every point once', async () => {
    const s = scopeOf('resume-abort');
    const collection = await create(s);
    const lines = Array.from({ length: 400 }, (_, i) => `${T0 + i * 1000},R-${i % 5},${i}`);
    const input = file('resume.csv', `time,tag,value\n${lines.join('\n')}\n`);
    const controller = new AbortController();
    let acks = 0;
    await assert.rejects(
      run({ collection, input, chunkBytes: 256, concurrency: 2, signal: controller.signal, onProgress: () => ++acks === 5 && controller.abort() }),
      { name: 'AbortError' },
    );
    const state = JSON.parse(fs.readFileSync(stateFileFor(input), 'utf8')) as { ackedBytes: number; lines: number };
    assert.ok(state.ackedBytes > 0 && state.lines > 0, JSON.stringify(state));
    const notices: string[] = [];
    const result = await run({ collection, input, chunkBytes: 256, onNotice: (m) => notices.push(m) });
    assert.equal(result.resumedFromByte, state.ackedBytes);
    assert.match(notices.join('\n'), new RegExp(`resuming .* at byte ${state.ackedBytes} \\(line ${state.lines + 1}\\)`));
    assert.deepEqual([result.lines, result.points], [401, 400]);
    assert.deepEqual(await raw(s), expectedRows(lines));
    assert.equal(fs.existsSync(stateFileFor(input)), false);
  });

  test('resume after kill -9 of the importing process, requests in flight; a state dir of its own', async () => {
    const s = scopeOf('resume-kill');
    const collection = await create(s);
    const lines = Array.from({ length: 3000 }, (_, i) => `${T0 + i * 1000},K-${i % 4},${(i * 0.25).toFixed(2)}`);
    const input = file('kill.csv', `${lines.join('\n')}\n`);
    const stateDir = path.join(dir, 'state');
    fs.mkdirSync(stateDir);
    const options: ImportOptions = { collection, input, chunkBytes: 1024, concurrency: 3, stateDir };
    const child = spawn(process.execPath, [CHILD, JSON.stringify({ baseUrl: svc.baseUrl, authorization: target.authorization, ca: svc.ca, options, hangAfterAcks: 4 })], { stdio: ['ignore', 'pipe', 'inherit'] });
    const exited = new Promise((resolve) => child.once('exit', (code, signal) => resolve(signal ?? code)));
    await new Promise<void>((resolve, reject) => {
      let out = '';
      child.stdout.on('data', (c: Buffer) => {
        out += c.toString();
        if (out.includes('{"acks":4}')) resolve();
      });
      child.once('exit', () => reject(new Error(`the child ended before its fourth acknowledgement: ${out}`)));
    });
    child.kill('SIGKILL');
    assert.equal(await exited, 'SIGKILL');
    const stateFile = stateFileFor(input, stateDir);
    assert.ok(!fs.existsSync(stateFileFor(input)), 'the state is in the state dir, not beside the input');
    const state = JSON.parse(fs.readFileSync(stateFile, 'utf8')) as { ackedBytes: number };
    assert.ok(state.ackedBytes >= 4 * 900, `four chunks acknowledged: ${state.ackedBytes}`);
    const result = await run(options);
    assert.equal(result.resumedFromByte, state.ackedBytes);
    assert.equal(result.points, 3000);
    assert.deepEqual(await raw(s), expectedRows(lines));
    assert.equal(fs.existsSync(stateFile), false);
  });

  test('stdin, gzip: read through a pipe (no resume state)', async () => {
    const s = scopeOf('stdin');
    const collection = await create(s);
    const lines = Array.from({ length: 50 }, (_, i) => `${T0 + i},S-${i % 2},${i / 4}`);
    const child = spawn(process.execPath, [CHILD, JSON.stringify({ baseUrl: svc.baseUrl, authorization: target.authorization, ca: svc.ca, options: { collection, input: '-' } })], { stdio: ['pipe', 'pipe', 'inherit'] });
    child.stdin.end(gzipSync(`${lines.join('\n')}\n`));
    let out = '';
    child.stdout.on('data', (c: Buffer) => (out += c.toString()));
    await new Promise((resolve) => child.once('exit', resolve));
    const last = JSON.parse(out.trim().split('\n').at(-1)!) as { result?: { points: number; format: string } };
    assert.deepEqual([last.result?.points, last.result?.format], [50, 'csv'], out);
    assert.deepEqual(await raw(s), expectedRows(lines));
  });

  test('export: tag globs and a range (RFC 3339 start, epoch ms end), both ends included', async () => {
    const s = scopeOf('globs');
    await create(s);
    const minutes = (base: number) => Array.from({ length: 10 }, (_, i): [number, number] => [T0 + i * MIN, base + i]);
    await write(s, { 'A-1': minutes(100), 'A-2': minutes(200), 'B-1': minutes(300) });
    const p = path.join(dir, 'globs.csv');
    const result = await exportTo(p, { collection: idOf(s), tags: ['A-*', 'none*'], from: '2024-06-01T00:02:00Z', to: T0 + 5 * MIN, format: 'csv' });
    const rows = (tag: string, base: number) => [2, 3, 4, 5].map((i) => `${T0 + i * MIN},${tag},${base + i}\r\n`).join('');
    assert.equal(fs.readFileSync(p, 'utf8'), `time,tag,value\r\n${rows('A-1', 100)}${rows('A-2', 200)}`);
    assert.deepEqual(result, { points: 8, series: 2, tags: 2, unmatched: ['none*'], skipped: 0, requests: 1 });
  });

  test('export to a slow writer: every point, the writer never holding more than a piece, a stalled reply asked again', async () => {
    const s = scopeOf('slow');
    await create(s);
    const tags = Array.from({ length: 8 }, (_, t) => `flow-${t}`);
    const perTag = 50_000;
    for (const tag of tags) {
      await write(s, { [tag]: Array.from({ length: perTag }, (_, i): [number, number] => [T0 + i * 1000, Math.round(Math.sin(i / 100) * 1e4) / 100]) });
    }
    let maxQueued = 0;
    let received = 0;
    let paused = false;
    const chunks: Buffer[] = [];
    const out = new Writable({
      highWaterMark: 16 * 1024,
      write(chunk: Buffer, _encoding, done) {
        chunks.push(chunk);
        received += chunk.length;
        maxQueued = Math.max(maxQueued, this.writableLength);
        // Once, a pause longer than the service waits for a reader: it cuts the reply.
        if (!paused && received > 2 << 20) {
          paused = true;
          setTimeout(done, STALL_MS * 3);
        } else setImmediate(done);
      },
    });
    const result = await exportData(target, { collection: idOf(s), format: 'csv', out });
    assert.equal(result.points, tags.length * perTag);
    assert.ok(maxQueued <= 256 * 1024, `the writer held ${maxQueued} bytes`);
    const text = Buffer.concat(chunks).toString('utf8');
    const rows = text.split('\r\n');
    assert.equal(rows.length, tags.length * perTag + 2); // header, rows, and the empty text after the last CRLF
    assert.equal(new Set(rows).size, rows.length, 'no row twice');
    assert.ok(result.requests > 1, `the stalled reply was asked again (requests: ${result.requests})`);
    const s2 = scopeOf('slow-copy');
    await run({ collection: await create(s2), input: file('slow.csv', text) });
    assert.deepEqual(await raw(s2, tags), await raw(s, tags));
  });

  test('inputs that are not what they claim: clean errors naming the line, nothing written', async () => {
    const s = scopeOf('garbage');
    const collection = await create(s);
    const cases: Array<[string, string | Buffer, RegExp, Partial<ImportOptions>?]> = [
      ['long.lp', 'x'.repeat(3 << 20), /long\.lp: line 1: longer than \d+ bytes without a line break/],
      ['random.bin', Buffer.from(Array.from({ length: 100_000 }, (_, i) => (i * 7919 + 13) % 256)), /random\.bin: line \d+: a NUL byte: binary data/],
      ['cut.csv.gz', gzipSync(`${T0},A,1\n`.repeat(10_000)).subarray(0, 200), /cut\.csv\.gz: not a valid gzip file/],
      ['seconds.csv', '1717200000,A,1\n', /line 1: time 1717200000 is before storage\.minTimestampMs \(100000000000\): epoch seconds\?/],
      ['fields.csv', `${T0},A\n`, /line 1: expected 3 fields time,tag,value, found 2/],
      ['quote.csv', `${T0},"A,1\n`, /line 1: a quoted field is not closed on its line/],
      ['nots.lp', `m f=1 ${T0 * 1e6}\nm f=2\n`, /nots\.lp: line 2: no timestamp/],
      ['scope.lp', `m,unit=elsewhere f=1 ${T0 * 1e6}\n`, /line 1: line tag unit=elsewhere names another collection/],
      ['export.lp', `# historian export v1\nm,k=v value=1 ${T0 * 1e6}\n`, /line 2: the tag has an unescaped comma/],
    ];
    for (const [name, content, expected, extra] of cases) {
      await assert.rejects(run({ collection, input: file(name, content), ...extra }), expected, name);
    }
    assert.deepEqual(await tagsOf(s), [], 'nothing written');
    // A long line after a chunk's worth of good ones: those were a request of their own.
    const later = scopeOf('garbage-later');
    const good = Array.from({ length: 40_000 }, (_, i) => `${T0 + i},A,${i}`);
    await assert.rejects(run({ collection: await create(later), input: file('long-later.csv', `${good.join('\n')}\n${'9'.repeat(3 << 20)}`), chunkBytes: 64 * 1024 }), /long-later\.csv: line 40001: longer than/);
    assert.deepEqual(await raw(later), expectedRows(good));
    await assert.rejects(run({ collection: 'acme/north/missing/main', input: file('ok.csv', `${T0},A,1\n`) }), /collection acme\/north\/missing\/main not found/);
    await assert.rejects(run({ collection: 'acme/north', input: file('ok2.csv', `${T0},A,1\n`) }), /collection "acme\/north": collection id must be organization\/site\/unit\/grid/);
    const created = await run({ collection: 'acme/north/made/main', input: file('ok3.csv', `${T0},A,1\n`), createCollection: true });
    assert.equal(created.points, 1);
  });
});

/** What a raw query answers for CSV lines `time,tag,value` (each tag's points in time order). */
function expectedRows(lines: string[]): Points {
  const out: Points = {};
  for (const line of lines) {
    const [time, tag, value] = line.split(',');
    (out[tag] ??= []).push([Number(time), Number(value)]);
  }
  for (const points of Object.values(out)) points.sort((a, b) => a[0] - b[0]);
  return out;
}
