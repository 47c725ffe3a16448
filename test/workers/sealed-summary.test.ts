// Sealed summaries (sealed file format 3) on real files and a real ShardStore: min and max
// buckets answered with summaries against the same query forced to read points, and against a
// plain reference computed here from what was written; bad summaries, format 2 files, late logs.

import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { PointBatch } from '../../native-free-codecs/write-body.js';
import { decodeF64Fragments } from '../../native-free-codecs/result-f64.js';
import { parseAggregators, type SamplingStep } from '../../shared/aggregator-spec.js';
import { OP, QUERY_CREDIT, QUERY_SEQ, querySlotWord, CONTROL_SLOTS } from '../../shared/protocol.js';
import { createRingBuffer, RingConsumer, RingProducer } from '../../shared/ring.js';
import type { CollectionScope } from '../../shared/scope.js';
import { collectionDir } from '../../shared/scope-path.js';
import { FIRST_MONDAY_MS, UNIT_MS, type TimeUnit } from '../../shared/time-units.js';
import { BucketStream } from '../../workers/aggregators.js';
import { crc32c } from '../../workers/crc32.js';
import { QueryRunner, summaryAggregate } from '../../workers/query-runner.js';
import { SealedIndex } from '../../workers/sealed-file.js';
import { SUMMARY_SLOT_MS } from '../../workers/sealed-summary.js';
import { editSummary, resealWithCodec3 } from '../support/sealed-summary-edit.js';
import { QueryMemory } from '../../workers/series-buffer.js';
import { ShardStore } from '../../workers/shard-store.js';
import { DAY_MS, formatDay } from '../../workers/utc-day.js';
import { silentLog, type WorkerLog } from '../../workers/worker-log.js';
import { prng } from '../support/prng.js';

const roots: string[] = [];
after(() => roots.forEach((dir) => fs.rmSync(dir, { recursive: true, force: true })));

const H = 3_600_000;
const D0 = Date.UTC(2024, 5, 3); // Monday 2024-06-03
const day = (i: number) => D0 + i * DAY_MS;
const SCOPE: CollectionScope = { organization: 'acme', site: 'north', unit: 'b1', grid: 'main' };
const ID = 'acme/north/b1/main';
const TAGS = ['a', 'b', 'n', 'x', 'z'];

type Point = [number, number];

/** What was written, later write winning, to compute the reference from. */
class Truth {
  readonly tags = new Map<string, Map<number, number>>();
  private readonly sorted = new Map<string, Point[]>();

  batch(points: Record<string, Point[]>): PointBatch {
    const tagNames = Object.keys(points);
    this.sorted.clear();
    const n = tagNames.reduce((k, t) => k + points[t]!.length, 0);
    const timestamps = new Float64Array(n);
    const values = new Float64Array(n);
    const tagStart = new Uint32Array(tagNames.length + 1);
    let p = 0;
    tagNames.forEach((tag, i) => {
      tagStart[i] = p;
      const into = this.tags.get(tag) ?? new Map<number, number>();
      this.tags.set(tag, into);
      for (const [t, v] of points[tag]!) {
        timestamps[p] = t;
        values[p++] = v;
        into.set(t, v);
      }
    });
    tagStart[tagNames.length] = p;
    return { scope: {}, tagNames, tagStart, timestamps, values, pointCount: n };
  }

  points(tag: string): Point[] {
    let points = this.sorted.get(tag);
    if (points === undefined) this.sorted.set(tag, (points = [...(this.tags.get(tag) ?? new Map<number, number>())].sort((x, y) => x[0] - y[0])));
    return points;
  }
}

interface Store {
  dataDir: string;
  store: ShardStore;
  warnings: string[];
}

function openStore(dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'sealed-summary-'))): Store {
  if (!roots.includes(dataDir)) roots.push(dataDir);
  const warnings: string[] = [];
  const log: WorkerLog = { ...silentLog, warn: (obj, msg) => warnings.push(`${msg} ${JSON.stringify(obj)}`) };
  const store = new ShardStore({ dataDir, owns: () => true, log });
  store.recover();
  return { dataDir, store, warnings };
}

function sealedPath(dataDir: string, i: number): string {
  return path.join(collectionDir(dataDir, SCOPE), `sealed-${formatDay(day(i) / DAY_MS)}.hsd`);
}

/**
 * Six days of four tags. a: noisy analog at irregular 2..8 s steps with a five-hour hole on day
 * 1 and nothing on day 3; b: every few minutes, the same value twice in places, ±0; n: NaN in
 * places, a whole 6-hour block of NaN only on day 3, +Infinity on day 1 and -Infinity on day 5; x: one
 * point a day; z: 0 and -0 only (which of equal values a bucket keeps shows). Some points are written twice (the second write wins). Days 0..5 sealed; day 6
 * (today) stays in its active log.
 */
function fill(s: Store, truth: Truth): void {
  const random = prng(20240603);
  s.store.createCollection(SCOPE);
  for (let i = 0; i <= 6; i++) {
    const points: Record<string, Point[]> = { a: [], b: [], n: [], x: [], z: [] };
    let v = 50;
    for (let t = day(i) + Math.floor(random() * 4000); t < day(i + 1); t += 2000 + Math.floor(random() * 6000)) {
      if (i === 3 || (i === 1 && t >= day(1) + 7 * H && t < day(1) + 12 * H)) continue;
      v += (random() - 0.5) * 0.4;
      points.a!.push([t, Math.round((v + (random() - 0.5) * 0.4) * 100) / 100]);
    }
    for (let t = day(i) + Math.floor(random() * 60_000); t < day(i + 1); t += 60_000 + Math.floor(random() * 400_000)) {
      const r = random();
      points.b!.push([t, r < 0.1 ? 0 : r < 0.2 ? -0 : Math.round(r * 40) / 4]);
    }
    for (let t = day(i) + 500; t < day(i + 1); t += 7_000 + Math.floor(random() * 20_000)) {
      const allNaN = i === 3 && t >= day(3) + 6 * H && t < day(3) + 12 * H;
      points.n!.push([t, allNaN || random() < 0.3 ? NaN : Math.round(random() * 1e4) / 100 - 50]);
    }
    points.n!.push([day(i) + 13 * H + 1, i === 1 ? Infinity : i === 5 ? -Infinity : NaN]);
    points.x!.push([day(i) + Math.floor(random() * DAY_MS), random()]);
    for (let t = day(i) + 1; t < day(i + 1); t += 100_000 + Math.floor(random() * 900_000)) points.z!.push([t, random() < 0.5 ? 0 : -0]);
    s.store.append(ID, truth.batch(points), 'os');
    // Rewrites of a few points of each tag: the later write wins.
    const again: Record<string, Point[]> = {};
    for (const tag of ['a', 'b', 'n']) again[tag] = points[tag]!.filter(([, v], k) => k % 97 === 3 && !Number.isNaN(v)).map(([t]) => [t, Math.round(random() * 10_000) / 100 - 20]);
    s.store.append(ID, truth.batch(again), 'os');
  }
  assert.equal(s.store.seal({ now: day(6) + H, graceMs: 0, force: true }).sealedDays, 6);
}

/** The buckets a plain reading of the written points gives (README "Aggregation"). */
function reference(points: Point[], name: 'min' | 'max', step: SamplingStep, start: number, end: number): Point[] {
  const width = step.sampling.value * UNIT_MS[step.sampling.unit];
  const epoch = step.sampling.unit === 'weeks' ? FIRST_MONDAY_MS : 0;
  const origin = step.align_sampling ? epoch + Math.floor((start - epoch) / width) * width : start;
  const buckets = new Map<number, number>();
  for (const [t, v] of points) {
    if (t < start || t > end || Number.isNaN(v)) continue;
    const i = Math.floor((t - origin) / width);
    const held = buckets.get(i);
    // In time order, only a strictly smaller (larger) value replaces the one held.
    if (held === undefined || (name === 'min' ? v < held : v > held)) buckets.set(i, v);
  }
  const atEnd = step.align_end_time && !step.align_start_time ? width : 0;
  return [...buckets].map(([i, v]) => [origin + i * width + atEnd, v]);
}

/** One result ring for every query here, large enough for a whole answer, drained after each. */
const ring = createRingBuffer(1 << 22);

/** A QueryRunner's answer of the buckets of `tags`; `summaries` false forces points. */
async function query(store: ShardStore, tags: string[], step: SamplingStep, start: number, end: number, summaries: boolean): Promise<Map<string, Point[]>> {
  const control = new Int32Array(new SharedArrayBuffer(CONTROL_SLOTS * 4));
  control[querySlotWord(0, QUERY_SEQ)] = 7;
  control[querySlotWord(0, QUERY_CREDIT)] = 1 << 30;
  const runner = new QueryRunner({ store, results: new RingProducer(ring), control, stallTimeoutMs: 10_000, memory: new QueryMemory(1 << 28), summaries });
  await runner.query({ op: OP.QUERY, seq: 7, slot: 0, deadline: Date.now() + 60_000, collectionId: ID, series: tags.map((tag) => ({ tag, pipeline: [step] })), start, end, format: 'f64', first: true });
  const consumer = new RingConsumer(ring);
  const parts: Uint8Array[] = [];
  for (let frame = consumer.tryRead(); frame; frame = consumer.tryRead()) {
    parts.push(frame.payload.slice());
    consumer.release();
  }
  const out = new Map<string, Point[]>();
  for (const [key, { ts, values }] of decodeF64Fragments(Buffer.concat(parts))) out.set(key, Array.from(ts, (t, k) => [t, values[k]!]));
  return out;
}

function assertSame(actual: Point[], expected: Point[], what: string): void {
  assert.equal(actual.length, expected.length, `${what}: ${actual.length} buckets, expected ${expected.length}`);
  for (let k = 0; k < expected.length; k++) {
    assert.equal(actual[k]![0], expected[k]![0], `${what}: bucket ${k} time`);
    assert.ok(Object.is(actual[k]![1], expected[k]![1]), `${what}: bucket ${k} at ${expected[k]![0]}: ${actual[k]![1]} vs ${expected[k]![1]}`);
  }
}

function stepOf(name: 'min' | 'max', value: number, unit: TimeUnit, alignSampling: boolean, alignEnd = false): SamplingStep {
  return parseAggregators([{ name, sampling: { value, unit }, align_sampling: alignSampling, align_end_time: alignEnd }], 'p')[0] as SamplingStep;
}

/** Runs one tag's scan through a BucketStream as the query runner does; the scan's day counters with the buckets. */
function scanBuckets(store: ShardStore, tag: string, step: SamplingStep, start: number, end: number, summary: boolean): { buckets: Point[]; summaryDays: number; pointDays: number } {
  const buckets: Point[] = [];
  const stream = new BucketStream(step, { start, end }, (t, v) => buckets.push([t, v]));
  const scan = store.openScan(ID, tag, start, end, summary ? { summary: step.name as 'min' | 'max' } : {});
  try {
    for (let d = scan.nextDay(); d; d = scan.nextDay()) stream.push(d.ts, d.values, d.count);
    stream.finish();
    return { buckets, summaryDays: scan.summaryDays, pointDays: scan.pointDays };
  } finally {
    scan.close();
  }
}

/** Byte positions of a format 3 file's summary section (from its trailer). */
function sectionOf(file: string): { bytes: Buffer; summaryOffset: number; summaryLength: number; footerOffset: number } {
  const bytes = fs.readFileSync(file);
  const n = bytes.length;
  const footerOffset = n - 20 - bytes.readUInt32LE(n - 12);
  const summaryLength = bytes.readUInt32LE(n - 20);
  return { bytes, summaryOffset: footerOffset - summaryLength, summaryLength, footerOffset };
}

/** A format 2 file of the same points, as the previous writer made it: no summary, 12-byte trailer. */
function toFormat2(file: string): void {
  const { bytes, summaryOffset, footerOffset } = sectionOf(file);
  assert.ok([3, 4].includes(bytes.readUInt16LE(4)));
  const out = Buffer.concat([bytes.subarray(0, summaryOffset), bytes.subarray(footerOffset, bytes.length - 20), bytes.subarray(bytes.length - 12)]);
  out.writeUInt16LE(2, 4);
  out.writeUInt32LE(crc32c(out, 0, 12), 12);
  fs.writeFileSync(file, out);
}

/** Sets every slot min and max of the tag in the file to `value`, with checksums that pass. */
function forgeSummary(file: string, tagId: number, value: number): void {
  editSummary(file, (id, mins, maxs) => {
    if (id !== tagId) return;
    mins.fill(value);
    maxs.fill(value);
  });
}

// ---------------------------------------------------------------------------------------------

describe('sealed summaries', () => {
  test('which bucket queries may use summaries', () => {
    const start = day(0) + 6 * H;
    assert.equal(summaryAggregate(stepOf('min', 6, 'hours', false), start), 'min');
    assert.equal(summaryAggregate(stepOf('max', 30, 'minutes', false), start), 'max');
    assert.equal(summaryAggregate(stepOf('max', 1, 'weeks', true), start + 17), 'max'); // Monday-aligned weeks
    assert.equal(summaryAggregate(stepOf('min', 6, 'hours', false), start + 1), null, 'origin off the slots');
    assert.equal(summaryAggregate(stepOf('min', 6, 'hours', true), start + 1), 'min', 'aligned origin');
    assert.equal(summaryAggregate(stepOf('min', 20, 'minutes', true), start), null, 'width not whole slots');
    assert.equal(summaryAggregate(stepOf('min', 45, 'minutes', true), start), null);
    assert.equal(summaryAggregate(stepOf('min', 1, 'months', true), start), null, 'calendar units');
    const avg = parseAggregators([{ name: 'avg', sampling: { value: 1, unit: 'hours' } }], 'p')[0] as SamplingStep;
    assert.equal(summaryAggregate(avg, start), null, 'other aggregators');
  });

  test('min and max buckets with summaries equal the same query on points and the reference', async () => {
    const s = openStore();
    const truth = new Truth();
    fill(s, truth);
    // A late log on day 2 after sealing: rewrites and new extremes (that day must be read from points).
    s.store.append(ID, truth.batch({ a: truth.points('a').filter(([t]) => t >= day(2) && t < day(3)).filter((_, k) => k % 50 === 0).map(([t]) => [t, 1000 - (t % 7)]), n: [[day(2) + 9 * H, -999]] }), 'os');
    // Day 4 as the previous writer left it: format 2, no summary.
    s.store.close();
    toFormat2(sealedPath(s.dataDir, 4));
    const t = openStore(s.dataDir);

    const widths: Array<[number, TimeUnit]> = [[30, 'minutes'], [1, 'hours'], [90, 'minutes'], [3, 'hours'], [6, 'hours'], [12, 'hours'], [1, 'days'], [2, 'days'], [7, 'days'], [1, 'weeks'], [20, 'minutes'], [45, 'minutes'], [7, 'minutes']];
    const ranges: Array<[number, number]> = [
      [day(0), day(7) - 1], // everything, today's active day included
      [day(0) + 5 * H + 17 * 60_000 + 3, day(5) + 13 * H], // cuts both ends off the slots
      [day(0) + 6 * H, day(5) + 18 * H - 1], // the console's: start aligned to 6 h
      [day(1), day(5) - 1], // whole days exactly, end inclusive
      [day(1) + SUMMARY_SLOT_MS, day(5) + 1],
      [day(5) - 1, day(6)], // one day and a millisecond either side
    ];
    let withSummaries = 0;
    let compared = 0;
    let queries = 0;
    for (const [value, unit] of widths) {
      for (const [start, end] of ranges) {
        for (const align of [false, true]) {
          for (const name of ['min', 'max'] as const) {
            const step = stepOf(name, value, unit, align, queries++ % 3 === 1);
            if (summaryAggregate(step, start) !== null) withSummaries++;
            const fast = await query(t.store, TAGS, step, start, end, true);
            const slow = await query(t.store, TAGS, step, start, end, false);
            for (const tag of TAGS) {
              const what = `${tag} ${name} ${value} ${unit} align ${align} [${start}, ${end}]`;
              const expected = reference(truth.points(tag), name, step, start, end);
              assertSame(slow.get(tag)!, expected, `${what} (points)`);
              assertSame(fast.get(tag)!, expected, `${what} (summaries)`);
              compared++;
            }
          }
        }
      }
    }
    assert.ok(withSummaries >= 150, `${withSummaries} of the queries could use summaries`);
    assert.ok(truth.points('n').some(([, v]) => Number.isNaN(v)) && truth.points('b').some(([, v]) => Object.is(v, -0)));
    assert.deepEqual(t.warnings, [], 'no summary was found bad');
    t.store.close();
  });

  test('which days a summary scan answers from summaries', () => {
    const s = openStore();
    const truth = new Truth();
    fill(s, truth);
    const step = stepOf('min', 6, 'hours', false);
    const run = (start: number, end: number) => scanBuckets(s.store, 'a', step, start, end, true);
    // Days 0..5 sealed and whole in range; a has no points on day 3 (nothing to read either way); day 6 is active.
    assert.deepEqual(pick(run(day(0), day(7) - 1)), { summaryDays: 6, pointDays: 1 });
    // A summary day itself: (slot start, slot min) per slot that has a value.
    const scan = s.store.openScan(ID, 'n', day(0), day(7), { summary: 'min' });
    const first = scan.nextDay()!;
    const slots = reference(truth.points('n'), 'min', stepOf('min', 30, 'minutes', true), day(0), day(1) - 1);
    assert.deepEqual(Array.from(first.ts.subarray(0, first.count)), slots.map(([t]) => t));
    assert.deepEqual(Array.from(first.values.subarray(0, first.count)), slots.map(([, v]) => v));
    assert.equal(scan.summaryDays, 1);
    scan.close();
    assert.deepEqual(pick(run(day(0) + 1, day(6) - 2)), { summaryDays: 4, pointDays: 2 }, 'days cut by the range');
    s.store.append(ID, truth.batch({ a: [[day(1) + 3, -1000]] }), 'os'); // late log on day 1
    assert.deepEqual(pick(run(day(0), day(6) - 1)), { summaryDays: 5, pointDays: 1 });
    assert.deepEqual(pick(scanBuckets(s.store, 'a', step, day(0), day(6) - 1, false)), { summaryDays: 0, pointDays: 6 });
    // Merged by the next seal, day 1 is summarised again, with the late point in it.
    assert.equal(s.store.seal({ now: day(6) + H, graceMs: 0, force: true }).sealedDays, 1);
    const after = run(day(0), day(6) - 1);
    assert.deepEqual(pick(after), { summaryDays: 6, pointDays: 0 });
    assertSame(after.buckets, reference(truth.points('a'), 'min', step, day(0), day(6) - 1), 'after the re-seal');
    assert.equal(after.buckets.find(([t]) => t === day(1))![1], -1000);
    s.store.close();
  });

  test('the summary is what answers the whole sealed days, and only those', async () => {
    const s = openStore();
    fill(s, new Truth());
    s.store.close();
    forgeSummary(sealedPath(s.dataDir, 2), 0, -12_345); // tag a is id 0
    const t = openStore(s.dataDir);
    const step = stepOf('min', 1, 'days', true);
    const forged = async (start: number, end: number, summaries = true) => (await query(t.store, ['a'], step, start, end, summaries)).get('a')!.filter(([, v]) => v === -12_345).map(([ts]) => ts);
    assert.deepEqual(await forged(day(0), day(6) - 1), [day(2)], 'a whole sealed day comes from its summary');
    assert.deepEqual(await forged(day(0), day(6) - 1, false), [], 'forced to points');
    assert.deepEqual(await forged(day(2) + 1, day(3) + 1), [], 'a day cut by the range comes from its points');
    assert.deepEqual(await forged(day(0), day(3) - 2), [], 'likewise cut by one millisecond at the end');
    assert.deepEqual(await forged(day(0), day(3) - 1), [day(2)]);
    const avg = parseAggregators([{ name: 'avg', sampling: { value: 1, unit: 'days' } }], 'p')[0] as SamplingStep;
    assert.ok((await query(t.store, ['a'], avg, day(0), day(6) - 1, true)).get('a')!.every(([, v]) => v > -100), 'avg never reads summaries');
    t.store.append(ID, new Truth().batch({ b: [[day(2) + 5, 1]] }), 'os'); // a late log of the day, for another tag
    assert.deepEqual(await forged(day(0), day(6) - 1), [], 'a day with a late log comes from its points');
    assert.deepEqual(t.warnings, []);
    t.store.close();
  });

  test('a damaged summary answers exactly from the points and is logged', async () => {
    const s = openStore();
    const truth = new Truth();
    fill(s, truth);
    s.store.close();
    const step = stepOf('max', 2, 'hours', true);
    const expected = (tag: string) => reference(truth.points(tag), 'max', step, day(0), day(6) - 1);
    const damage: Array<[string, (x: ReturnType<typeof sectionOf>) => number]> = [
      ['a value of tag a', (x) => x.summaryOffset + 16 + x.bytes.readUInt32LE(x.summaryOffset + 8) * 16 + 1],
      ['the directory', (x) => x.summaryOffset + 16 + 16 + 5],
      ['the section header', (x) => x.summaryOffset + 4],
      ['the summary length in the trailer', (x) => x.bytes.length - 19],
      ['the summary checksum in the trailer', (x) => x.bytes.length - 15],
    ];
    for (const [what, where] of damage) {
      const file = sealedPath(s.dataDir, 1);
      const original = fs.readFileSync(file);
      const x = sectionOf(file);
      x.bytes[where(x)]! ^= 0x5a;
      fs.writeFileSync(file, x.bytes);
      const t = openStore(s.dataDir);
      const got = await query(t.store, TAGS, step, day(0), day(6) - 1, true);
      for (const tag of TAGS) assertSame(got.get(tag)!, expected(tag), `${what}: ${tag}`);
      const scan = scanBuckets(t.store, 'a', step, day(0), day(6) - 1, true);
      assert.deepEqual(pick(scan), { summaryDays: 5, pointDays: 1 }, `${what}: day 1 read from its points`);
      assert.ok(t.warnings.length >= 1 && t.warnings.every((w) => w.includes('sealed summary fails its checks') && w.includes(path.basename(file))), `${what}: ${t.warnings.join('\n')}`);
      t.store.close();
      fs.writeFileSync(file, original);
    }
  });

  test('format 4 files read back; format 3 (as before issue 33) and format 2 files still read, and a late point re-seals them as format 4', async () => {
    const s = openStore();
    const truth = new Truth();
    fill(s, truth);
    s.store.close();
    const file = sealedPath(s.dataDir, 3);
    const v3 = SealedIndex.read(file, day(3) / DAY_MS);
    assert.equal(fs.readFileSync(file).readUInt16LE(4), 4);
    assert.ok(v3.summarySpan !== null && v3.summarySpan.length > 16);
    toFormat2(file);
    const v2 = SealedIndex.read(file, day(3) / DAY_MS);
    assert.equal(v2.summarySpan, null);
    assert.deepEqual([...v2.counts], [...v3.counts]);
    assert.deepEqual([...v2.offsets], [...v3.offsets]);
    assert.ok(fs.statSync(file).size < v3.fileBytes);
    // Day 2 as the builds before issue 33 wrote it: format 3, raw summary values, column codec 3.
    const format3 = sealedPath(s.dataDir, 2);
    resealWithCodec3(format3);
    assert.equal(fs.readFileSync(format3).readUInt16LE(4), 3);
    assert.equal(fs.readFileSync(format3).readUInt16LE(6), 3);

    const t = openStore(s.dataDir);
    const step = stepOf('max', 30, 'minutes', false);
    for (const tag of TAGS) {
      const old = scanBuckets(t.store, tag, step, day(2), day(3) - 1, true);
      assertSame(old.buckets, reference(truth.points(tag), 'max', step, day(2), day(3) - 1), `format 3 day, ${tag}`);
      assert.deepEqual(pick(old), { summaryDays: 1, pointDays: 0 }, `format 3 day, ${tag}: from its summary`);
    }
    for (const tag of TAGS) {
      const got = scanBuckets(t.store, tag, step, day(3), day(4) - 1, true);
      assertSame(got.buckets, reference(truth.points(tag), 'max', step, day(3), day(4) - 1), `format 2 day, ${tag}`);
      if (tag !== 'a') assert.deepEqual(pick(got), { summaryDays: 0, pointDays: 1 }, `format 2 day, ${tag}`);
    }
    const raw: number[] = [];
    t.store.scanTag(ID, 'b', day(3), day(4) - 1, (ts, values, n) => raw.push(...values.subarray(0, n)));
    assert.deepEqual(raw, truth.points('b').filter(([ts]) => ts >= day(3) && ts < day(4)).map(([, v]) => v));
    t.store.append(ID, truth.batch({ b: [[day(3) + 42, 99]] }), 'os');
    assert.equal(t.store.seal({ now: day(6) + H, graceMs: 0, force: true }).sealedDays, 1);
    assert.equal(fs.readFileSync(file).readUInt16LE(4), 4, 're-sealed as format 4');
    const again = scanBuckets(t.store, 'b', step, day(3), day(4) - 1, true);
    assert.deepEqual(pick(again), { summaryDays: 1, pointDays: 0 });
    assertSame(again.buckets, reference(truth.points('b'), 'max', step, day(3), day(4) - 1), 'after the re-seal');
    assert.deepEqual(t.warnings, [], 'a format 2 file is not a bad summary');
    t.store.close();
  });
});

function pick(x: { summaryDays: number; pointDays: number }): { summaryDays: number; pointDays: number } {
  return { summaryDays: x.summaryDays, pointDays: x.pointDays };
}
