// `historian check`'s library (src/cli/check.ts) on data dirs the real service made: writes over
// several days, sealed by seal_now, late and active day logs, a stop. Each case copies that dir,
// damages one thing as a disk or a crash would, and expects the check to name it; and the check
// itself changes nothing, also beside a running service and after a kill -9.

import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import Database from 'better-sqlite3';
import { checkDataDir, type CheckReport } from '../../src/cli/check.js';
import { uncompressSync } from 'lz4-napi';
import { ByteReader, decodeTimestamps, VALUES_MODE_SCALED_PREDICTED } from '../../native-free-codecs/columns.js';
import { crc32c } from '../../workers/crc32.js';
import { SealedIndex } from '../../workers/sealed-file.js';
import { prng } from '../support/prng.js';
import { editSummary, resealWithCodec3 } from '../support/sealed-summary-edit.js';
import { parseDay } from '../../workers/utc-day.js';
import { startService, tempDir, type TestService } from '../api/harness.js';

const DAY = 86_400_000;
const T0 = Date.UTC(2026, 0, 10);
const A = { organization: 'acme', site: 'north', unit: 'boiler-1', grid: 'main' };
const B = { organization: 'acme', site: 'south', unit: 'pump-7', grid: 'main' };
const A_DIR = path.join('ts', 'acme', 'north', 'boiler-1', 'main');
const B_DIR = path.join('ts', 'acme', 'south', 'pump-7', 'main');

const series = (start: number, count: number, stepMs: number, f: (i: number) => number) => Array.from({ length: count }, (_, i) => [start + i * stepMs, f(i)]);
const queryUrl = (scope: Record<string, string>, tag: string, start: number, end: number) =>
  `/svcapi/fast_query?tags=${encodeURIComponent(tag)}&start=${start}&end=${end}&${new URLSearchParams(scope).toString()}`;

/** Every entry under `dir` (folders too) with the sha256 of each file's bytes. */
function snapshot(dir: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const rel of (fs.readdirSync(dir, { recursive: true }) as string[]).sort()) {
    const full = path.join(dir, rel);
    out.set(rel, fs.statSync(full).isDirectory() ? 'folder' : crypto.createHash('sha256').update(fs.readFileSync(full)).digest('hex'));
  }
  return out;
}

function namesIn(dir: string, pattern: RegExp): string[] {
  return fs.readdirSync(dir).filter((n) => pattern.test(n)).sort();
}

/** The offsets of a day log's blocks, from their length fields. */
function blockOffsets(file: string): number[] {
  const bytes = fs.readFileSync(file);
  const offsets: number[] = [];
  for (let at = 16; at + 8 <= bytes.length; at += 8 + bytes.readUInt32LE(at)) offsets.push(at);
  return offsets;
}

function flipByte(file: string, at: number): void {
  const bytes = fs.readFileSync(file);
  bytes[at] ^= 0x5a;
  fs.writeFileSync(file, bytes);
}

/** A format 3 sealed file rewritten as the older writers made it: no summary, 12-byte trailer. */
function downgrade(file: string, version: 1 | 2): void {
  const bytes = fs.readFileSync(file);
  const n = bytes.length;
  assert.ok([3, 4].includes(bytes.readUInt16LE(4)));
  const footerBytes = bytes.readUInt32LE(n - 12);
  const footerAt = n - 20 - footerBytes;
  const summaryAt = footerAt - bytes.readUInt32LE(n - 20);
  const out = Buffer.concat([bytes.subarray(0, summaryAt), bytes.subarray(footerAt, footerAt + footerBytes), bytes.subarray(n - 12)]);
  out.writeUInt16LE(version, 4);
  out.writeUInt32LE(crc32c(out, 0, 12), 12);
  fs.writeFileSync(file, out);
}

/** The value mode (high nibble of the values header) of each block of a sealed file. */
function valueModes(file: string): number[] {
  const index = sealedIndex(file);
  const bytes = fs.readFileSync(file);
  return Array.from(index.tagIds, (_, e) => {
    const columns = uncompressSync(bytes.subarray(index.offsets[e]!, index.offsets[e]! + index.lengths[e]!));
    const r = new ByteReader(columns);
    decodeTimestamps(r, index.counts[e]!, new Float64Array(index.counts[e]!));
    return columns[r.pos]! >> 4;
  });
}

/** A noisy 4-decimal measurement (level 12.5, noise 0.0005), whose sealed blocks take value mode 5. */
function noisy(seed: number): (i: number) => number {
  const rnd = prng(seed);
  const gauss = () => Math.sqrt(-2 * Math.log(1 - rnd())) * Math.cos(2 * Math.PI * rnd());
  return () => Math.round((12.5 + gauss() * 0.0005) * 1e4) / 1e4;
}

function sealedIndex(file: string): SealedIndex {
  return SealedIndex.read(file, parseDay(/sealed-(\d+)\.hsd$/.exec(file)![1]!)!);
}

function problemsOf(report: CheckReport, file: string): string[] {
  return report.problems.filter((p) => p.file === file).map((p) => p.problem);
}

describe('historian check', () => {
  /** The data dir as the stopped service left it; every case works on a copy. */
  let pristine: string;
  const copies: string[] = [];
  const answers = new Map<string, string>();
  let todayLog: string;

  const copy = (): string => {
    const dir = tempDir('historian-check-');
    fs.cpSync(pristine, dir, { recursive: true });
    copies.push(dir);
    return dir;
  };

  before(async () => {
    const svc = await startService();
    pristine = svc.dataDir;
    try {
      await fill(svc);
    } finally {
      await svc.stop('SIGKILL'); // only if the fill failed: a stopped service is left as it is
    }
    todayLog = namesIn(path.join(pristine, A_DIR), /^active-/)[0]!;
    assert.ok(todayLog, 'the stopped service left an active day log');
    assert.ok(fs.statSync(path.join(pristine, A_DIR, 'tags.log')).size > 0, 'NEW-1 is still in the tag log');
  });

  /** Writes over three old days into two collections, seals them, then a late point and today's points; stops. */
  const fill = async (svc: TestService) => {
    const admin = await svc.adminToken();
    const write = async (scope: object, tags: Record<string, number[][]>) => {
      const res = await svc.post('/svcapi/write', { ...scope, tags }, admin);
      assert.equal(res.body?.success, true, res.text);
    };
    for (const scope of [A, B]) assert.equal((await svc.post('/svcapi/create_collection', scope, admin)).body.success, true);
    for (let d = 0; d < 3; d++) {
      await write(A, {
        'TI-1': series(T0 + d * DAY, 2000, 30_000, (i) => 50 + Math.sin(i / 40) * 10),
        'TI-2': series(T0 + d * DAY + 7_000, 1500, 45_000, (i) => (i % 7 === 0 ? -0 : i * 0.25)),
        'TI-3': series(T0 + d * DAY, 100, 600_000, (i) => -i),
        'PI-4': series(T0 + d * DAY, 2000, 40_000, noisy(d + 1)),
      });
      await write(B, { 'P-1': series(T0 + d * DAY, 500, 120_000, (i) => i % 13) });
    }
    // More than one sealed block for a tag (16,384 points a block).
    await write(A, { FAST: series(T0 + DAY, 20_000, 4_000, (i) => Math.round(Math.cos(i / 500) * 1000) / 10) });
    const sealed = await svc.post('/svcapi/seal_now', {}, admin);
    assert.ok(sealed.body.sealedDays >= 6, sealed.text);
    // A late point for a sealed day, and today's active log in several writes (a new tag in the first).
    await write(A, { 'TI-1': [[T0 + 60_000, 999]] });
    const now = Date.now() - 120_000;
    await write(A, { 'TI-1': series(now, 5, 1000, (i) => i), 'NEW-1': [[now, 1]] });
    await write(A, { 'TI-1': series(now + 10_000, 5, 1000, (i) => i * 2) });
    await write(A, { 'TI-1': series(now + 20_000, 5, 1000, (i) => i * 3) });
    for (const [scope, tag, day] of [[A, 'TI-1', 0], [A, 'TI-2', 0], [A, 'FAST', 1], [B, 'P-1', 2], [A, 'PI-4', 0], [A, 'PI-4', 2]] as const) {
      answers.set(`${tag}/${day}`, (await svc.get(queryUrl(scope, tag, T0 + day * DAY, T0 + (day + 1) * DAY - 1), admin)).text);
    }
    assert.deepEqual(await svc.stop(), { code: 0, signal: null });
  };

  after(() => {
    for (const dir of [pristine, ...copies]) {
      if (!dir) continue;
      fs.rmSync(dir, { recursive: true, force: true });
      fs.rmSync(path.join(dir, '..', `${path.basename(dir)}.config.json`), { force: true });
    }
  });

  test('a healthy data dir: ok, everything counted, progress up to the total, nothing changed', async () => {
    const before = snapshot(pristine);
    const progress: Array<[number, number, string]> = [];
    const report = await checkDataDir(pristine, { onProgress: (done, total, file) => progress.push([done, total, file]) });
    assert.deepEqual(report.problems, []);
    assert.equal(report.ok, true);
    assert.deepEqual(report.notes, []);
    assert.deepEqual({ ...report.checked, bytes: 0 }, { dayFiles: 2, sealedFiles: 6, dictionaries: 2, sqlite: 1, bytes: 0 });
    assert.ok(report.checked.bytes > 100_000, String(report.checked.bytes));
    const [lastDone, lastTotal] = progress.at(-1)!;
    assert.equal(lastTotal, report.checked.bytes);
    assert.equal(lastDone, lastTotal);
    for (let i = 1; i < progress.length; i++) assert.ok(progress[i]![0] >= progress[i - 1]![0], 'progress never goes back');
    assert.ok(progress.some(([, , file]) => file === path.join(A_DIR, todayLog)), 'progress names the files');
    assert.deepEqual(snapshot(pristine), before);
  });

  test('a flipped byte inside a sealed block is named with its file, block and offset', async () => {
    const dir = copy();
    const name = namesIn(path.join(dir, A_DIR), /^sealed-/)[1]!;
    const file = path.join(dir, A_DIR, name);
    const index = sealedIndex(file);
    flipByte(file, index.offsets[1]! + Math.floor(index.lengths[1]! / 2));
    const report = await checkDataDir(dir);
    assert.equal(report.ok, false);
    assert.deepEqual(report.problems.map((p) => p.file), [path.join(A_DIR, name)]);
    assert.match(report.problems[0]!.problem, new RegExp(`^block 1 \\(tag ${index.tagIds[1]}\\) at byte ${index.offsets[1]}: fails its checksum`));
  });

  test('a sealed file cut short (its footer gone) is a problem', async () => {
    const dir = copy();
    const name = namesIn(path.join(dir, B_DIR), /^sealed-/)[0]!;
    const file = path.join(dir, B_DIR, name);
    fs.truncateSync(file, fs.statSync(file).size - 30);
    const report = await checkDataDir(dir);
    assert.equal(report.ok, false);
    assert.equal(report.problems.length, 1, JSON.stringify(report.problems));
    assert.equal(report.problems[0]!.file, path.join(B_DIR, name));
    assert.match(report.problems[0]!.problem, /^trailer at byte \d+: bad footer magic/);
  });

  test('summaries: a damaged one, and one whose checksums pass but whose values are not the points', async () => {
    const dir = copy();
    const [first, second] = namesIn(path.join(dir, A_DIR), /^sealed-/);
    // Damaged: a byte of the first tag's slot values.
    const damaged = path.join(dir, A_DIR, first!);
    const span = sealedIndex(damaged).summarySpan!;
    const tags = fs.readFileSync(damaged).readUInt32LE(span.offset + 8);
    flipByte(damaged, span.offset + 16 + tags * 16 + 3);
    // Forged: the first tag's first slot min set to -12345, every checksum made to match.
    const forged = path.join(dir, A_DIR, second!);
    let tagId = -1;
    editSummary(forged, (id, mins) => {
      if (tagId >= 0) return;
      tagId = id;
      mins[0] = -12345;
    });

    const report = await checkDataDir(dir);
    assert.match(problemsOf(report, path.join(A_DIR, first!)).join('\n'), /^summary of tag \d+ at byte \d+ fails its checksum/);
    assert.match(problemsOf(report, path.join(A_DIR, second!)).join('\n'), new RegExp(`^summary of tag ${tagId}, slot \\d+: min -12345 where the points give -?\\d`));
    assert.equal(report.problems.length, 2, JSON.stringify(report.problems));
  });

  test('dictionaries: meta.json that is not JSON; ids the files name but the dictionary lost; a tag log damaged or torn', async () => {
    const broken = copy();
    fs.writeFileSync(path.join(broken, B_DIR, 'meta.json'), '{"version": 2, "collection": {');
    let report = await checkDataDir(broken);
    assert.deepEqual(report.problems.map((p) => p.file), [path.join(B_DIR, 'meta.json')]);
    assert.match(report.problems[0]!.problem, /cannot read: .*JSON.*; the service cannot open this collection/);

    // The last tag of meta.json and the whole tag log gone: sealed files and today's log name them.
    const lost = copy();
    const meta = JSON.parse(fs.readFileSync(path.join(lost, A_DIR, 'meta.json'), 'utf8'));
    const kept = meta.tags.length - 1;
    fs.writeFileSync(path.join(lost, A_DIR, 'meta.json'), JSON.stringify({ ...meta, tags: meta.tags.slice(0, kept) }));
    fs.writeFileSync(path.join(lost, A_DIR, 'tags.log'), '');
    report = await checkDataDir(lost);
    assert.equal(report.ok, false);
    const sealedProblems = report.problems.filter((p) => /sealed-/.test(p.file));
    assert.ok(sealedProblems.length >= 1);
    for (const p of sealedProblems) assert.match(p.problem, new RegExp(`names tag id ${kept}, which is not in the dictionary \\(${kept} tags\\)`));
    assert.match(problemsOf(report, path.join(A_DIR, todayLog)).join('\n'), new RegExp(`^block at byte \\d+: tag id ${kept + 1} is not in the dictionary \\(${kept} tags\\); the next start cuts the file there`));

    // A tag log whose record is damaged with a good one after it, and one torn at its end.
    const damaged = copy();
    const logFile = path.join(damaged, A_DIR, 'tags.log');
    const line = fs.readFileSync(logFile, 'utf8');
    fs.writeFileSync(logFile, `${line.replace('NEW-1', 'NEW-X')}${line}`);
    report = await checkDataDir(damaged);
    assert.match(problemsOf(report, path.join(A_DIR, 'tags.log')).join('\n'), /^record at byte 0 is damaged: the next start cuts the log there, losing \d+ bytes \(a good record follows at byte \d+\)/);
    const torn = copy();
    fs.truncateSync(path.join(torn, A_DIR, 'tags.log'), fs.statSync(path.join(torn, A_DIR, 'tags.log')).size - 3);
    report = await checkDataDir(torn);
    assert.deepEqual(problemsOf(report, path.join(A_DIR, 'tags.log')), []);
    assert.ok(report.notes.some((n) => n.startsWith(`${path.join(A_DIR, 'tags.log')}: torn last record at byte 0`)), report.notes.join('\n'));
  });

  test('day logs: damage in a middle block is a problem; a torn tail is a note, and recovery cuts exactly there', async () => {
    const dir = copy();
    const log = path.join(dir, A_DIR, todayLog);
    const offsets = blockOffsets(log);
    assert.ok(offsets.length >= 4, `today's log has ${offsets.length} blocks`);
    flipByte(log, offsets[2]! + 20);
    let report = await checkDataDir(dir);
    assert.deepEqual(problemsOf(report, path.join(A_DIR, todayLog)), [
      `block at byte ${offsets[2]}: checksum mismatch; the next start cuts the file there, losing ${fs.statSync(log).size - offsets[2]!} bytes (an intact block follows at byte ${offsets[3]})`,
    ]);
    assert.equal(report.problems.length, 1);

    const torn = copy();
    const tornLog = path.join(torn, A_DIR, todayLog);
    const last = blockOffsets(tornLog).at(-1)!;
    fs.truncateSync(tornLog, last + 20);
    const before = snapshot(torn);
    report = await checkDataDir(torn);
    assert.deepEqual(report.problems, []);
    assert.equal(report.ok, true);
    const note = `${path.join(A_DIR, todayLog)}: torn tail at byte ${last} (a block of`;
    assert.ok(report.notes.some((n) => n.startsWith(note) && n.endsWith('20 bytes will be truncated at next start')), report.notes.join('\n'));
    assert.deepEqual(snapshot(torn), before, 'the check cut nothing');
    const running = await checkDataDir(torn, { serviceRunning: true });
    assert.ok(running.notes.some((n) => n.startsWith(`${path.join(A_DIR, todayLog)}: last block at byte ${last} is incomplete`)), running.notes.join('\n'));

    // The storage's own recovery agrees: it cuts the file where the note said.
    const svc = await startService({ dataDir: torn });
    await svc.stop();
    assert.equal(fs.statSync(tornLog).size, last);
    report = await checkDataDir(torn);
    assert.equal(report.ok, true);
    assert.deepEqual(report.notes, []);
  });

  test('metadata.sqlite: a damaged page fails integrity_check, an orphan row foreign_key_check', async () => {
    const dir = copy();
    const db = path.join(dir, 'metadata.sqlite');
    // Find the users_email index page on a copy outside the data dir, then damage the email in it.
    const scratch = path.join(tempDir('historian-check-scratch-'), 'm.sqlite');
    fs.copyFileSync(db, scratch);
    const probe = new Database(scratch, { readonly: true });
    const page = probe.prepare("SELECT pageno FROM dbstat WHERE name = 'users_email'").pluck().get() as number;
    const pageSize = probe.pragma('page_size', { simple: true }) as number;
    probe.close();
    fs.rmSync(path.dirname(scratch), { recursive: true });
    const bytes = fs.readFileSync(db);
    const at = bytes.indexOf('admin@historian.test', (page - 1) * pageSize);
    assert.ok(at > 0 && at < page * pageSize);
    bytes[at] ^= 1;
    fs.writeFileSync(db, bytes);
    let report = await checkDataDir(dir);
    assert.deepEqual(report.problems, [{ file: 'metadata.sqlite', problem: 'integrity_check: row 1 missing from index users_email' }]);

    const orphan = copy();
    const writer = new Database(path.join(orphan, 'metadata.sqlite'));
    writer.pragma('foreign_keys = OFF');
    writer.prepare('INSERT INTO blob_keys (key, sha256, content_type, created_ms) VALUES (?, ?, ?, ?)').run('orphan', 'ab'.repeat(32), 'text/plain', 0);
    writer.close();
    report = await checkDataDir(orphan);
    assert.equal(report.problems.length, 1, JSON.stringify(report.problems));
    assert.match(report.problems[0]!.problem, /^foreign_key_check: row \(without rowid\) of blob_keys refers to a row of blob_contents that does not exist/);
  });

  test('beside a running service: no problems and no file of its own; after kill -9 (a WAL left behind) the same, and nothing changed', async () => {
    const dir = copy();
    let svc: TestService | null = await startService({ dataDir: dir });
    try {
      const admin = await svc.adminToken();
      assert.equal((await svc.post('/svcapi/write', { ...A, tags: { 'TI-1': [[Date.now() - 1000, 7]], 'LIVE-1': [[Date.now() - 1000, 8]] } }, admin)).body.success, true);
      const names = new Set(snapshot(dir).keys());
      const running = await checkDataDir(dir, { serviceRunning: true });
      assert.deepEqual(running.problems, []);
      assert.ok(running.checked.sealedFiles === 6 && running.checked.sqlite === 1, JSON.stringify(running.checked));
      const added = [...snapshot(dir).keys()].filter((n) => !names.has(n));
      assert.deepEqual(added, [], 'the check made no file beside the running service');
      await svc.stop('SIGKILL');
      svc = null;
    } finally {
      await svc?.stop('SIGKILL');
    }
    assert.ok(fs.existsSync(path.join(dir, 'metadata.sqlite-wal')), 'the kill left the WAL');
    const before = snapshot(dir);
    const report = await checkDataDir(dir);
    assert.deepEqual(report.problems, []);
    assert.equal(report.checked.sqlite, 1);
    assert.deepEqual(snapshot(dir), before, 'names and bytes are as they were');
  });

  test('format 1 and 2 sealed files (no summaries) are checked too, and the service reads them alike', async () => {
    const dir = copy();
    const [day0, day1] = namesIn(path.join(dir, A_DIR), /^sealed-/);
    downgrade(path.join(dir, A_DIR, day0!), 1); // every tag has one block that day, as format 1 had
    downgrade(path.join(dir, A_DIR, day1!), 2); // FAST has two blocks
    assert.equal(sealedIndex(path.join(dir, A_DIR, day1!)).entryCount, sealedIndex(path.join(pristine, A_DIR, day1!)).entryCount);
    let report = await checkDataDir(dir);
    assert.deepEqual(report.problems, []);
    assert.equal(report.checked.sealedFiles, 6);

    const svc = await startService({ dataDir: dir });
    try {
      const admin = await svc.adminToken();
      for (const [key, expected] of answers) {
        const [tag, day] = key.split('/') as [string, string];
        const scope = tag === 'P-1' ? B : A;
        const got = await svc.get(queryUrl(scope, tag, T0 + Number(day) * DAY, T0 + (Number(day) + 1) * DAY - 1), admin);
        assert.equal(got.text, expected, key);
      }
    } finally {
      await svc.stop();
    }

    const format2 = path.join(dir, A_DIR, day1!);
    const index = sealedIndex(format2);
    assert.equal(index.version, 2);
    flipByte(format2, index.offsets[0]! + 5);
    const format1 = path.join(dir, A_DIR, day0!);
    flipByte(format1, fs.statSync(format1).size - 20); // inside the footer
    report = await checkDataDir(dir);
    assert.match(problemsOf(report, path.join(A_DIR, day1!)).join('\n'), new RegExp(`^block 0 \\(tag ${index.tagIds[0]}\\) at byte ${index.offsets[0]}: fails its checksum`));
    assert.match(problemsOf(report, path.join(A_DIR, day0!)).join('\n'), /^footer at byte \d+: checksum mismatch/);
    assert.equal(report.problems.length, 2, JSON.stringify(report.problems));
  });

  test('column codec 3 sealed files (no value mode 5) are checked too, and the service reads them alike', async () => {
    const dir = copy();
    const names = namesIn(path.join(dir, A_DIR), /^sealed-/);
    for (const name of names) assert.ok(valueModes(path.join(dir, A_DIR, name)).includes(VALUES_MODE_SCALED_PREDICTED), `${name} has a mode 5 block`);
    const old = path.join(dir, A_DIR, names[2]!);
    resealWithCodec3(old);
    assert.equal(fs.readFileSync(old).readUInt16LE(6), 3);
    assert.ok(!valueModes(old).includes(VALUES_MODE_SCALED_PREDICTED));
    assert.ok(fs.statSync(old).size > fs.statSync(path.join(pristine, A_DIR, names[2]!)).size, 'codec 3 is larger on noisy values');
    let report = await checkDataDir(dir);
    assert.deepEqual(report.problems, []);
    assert.equal(report.checked.sealedFiles, 6);

    const svc = await startService({ dataDir: dir });
    try {
      const admin = await svc.adminToken();
      for (const [key, expected] of answers) {
        const [tag, day] = key.split('/') as [string, string];
        const scope = tag === 'P-1' ? B : A;
        const got = await svc.get(queryUrl(scope, tag, T0 + Number(day) * DAY, T0 + (Number(day) + 1) * DAY - 1), admin);
        assert.equal(got.text, expected, key);
      }
    } finally {
      await svc.stop();
    }

    // Damage in a codec 3 block is found as in any other.
    const index = sealedIndex(old);
    flipByte(old, index.offsets[0]! + 5);
    report = await checkDataDir(dir);
    assert.match(problemsOf(report, path.join(A_DIR, names[2]!)).join('\n'), new RegExp(`^block 0 \\(tag ${index.tagIds[0]}\\) at byte ${index.offsets[0]}: fails its checksum`));
  });
});
