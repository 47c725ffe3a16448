// A merge of parts goes a window at a time (day-compaction.ts, DayFileJob.writeTag): the file it
// writes must be the very file that the whole-day merge of each tag, handed to the writer at
// once, gives (blocks, summary, footer: byte for byte), for parts that overlap in time, repeat
// timestamps (the newer part wins) and hold tags the others lack; and the merger must hold a
// few blocks, not a busy tag's whole day.

import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { DayFileJob } from '../../workers/day-compaction.js';
import { DayMerger } from '../../workers/day-merge.js';
import { SEALED_BLOCK_POINTS, SealedFileWriter, SealedIndex } from '../../workers/sealed-file.js';
import { dayOf } from '../../workers/utc-day.js';
import { prng } from '../support/prng.js';

const DAY0 = Date.UTC(2025, 2, 3);
const DAY = dayOf(DAY0);
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'merge-windows-'));
after(() => fs.rmSync(dir, { recursive: true, force: true }));

type Points = Map<number, number>; // ts -> value
type PartData = Map<number, Points>; // tag -> points

function writeFile(file: string, data: PartData, effort: 'best' | 'fast' = 'fast'): void {
  const writer = new SealedFileWriter(file, DAY, undefined, effort);
  for (const tag of [...data.keys()].sort((a, b) => a - b)) {
    const points = [...data.get(tag)!.entries()].sort((a, b) => a[0] - b[0]);
    if (points.length === 0) continue;
    writer.addTag(tag, Float64Array.from(points, (p) => p[0]), Float64Array.from(points, (p) => p[1]), points.length);
  }
  writer.finish();
}

/** Random parts: each tag's points in a time span of its own per part, spans overlapping across parts, some timestamps in several parts. */
function randomParts(seed: number, parts: number): PartData[] {
  const rnd = prng(seed);
  return Array.from({ length: parts }, (_, p) => {
    const data: PartData = new Map();
    for (let tag = 0; tag < 6; tag++) {
      if (rnd() < 0.2) continue; // this part lacks the tag
      const points: Points = new Map();
      const count = [1, 7, SEALED_BLOCK_POINTS - 1, SEALED_BLOCK_POINTS, SEALED_BLOCK_POINTS + 1, 40_000][Math.floor(rnd() * 6)]!;
      // Within the day: at most 40,000 points 2 s apart after the first hour.
      const start = DAY0 + Math.floor(rnd() * 3_600_000);
      const step = 1 + Math.floor(rnd() * 2);
      for (let i = 0; i < count; i++) points.set(start + i * step * 1000 + (rnd() < 0.5 ? 0 : 500), Math.round((p * 100 + tag + rnd()) * 100) / 100);
      if (rnd() < 0.3) points.set(DAY0 + 5 * 3_600_000, p + 0.5); // the same timestamp in several parts: the newest part's value wins
      data.set(tag, points);
    }
    return data;
  });
}

/** What the merge must give: per tag, every timestamp of the parts, the newest part's value. */
function mergedReference(parts: PartData[]): PartData {
  const out: PartData = new Map();
  for (const part of parts) {
    for (const [tag, points] of part) {
      const merged = out.get(tag) ?? new Map<number, number>();
      for (const [ts, value] of points) merged.set(ts, value);
      out.set(tag, merged);
    }
  }
  return out;
}

/** Random parts written as files, the whole-day merge of them written as the expected file, and where the job writes. */
function mergeCase(name: string, seed: number, parts: number): { inputs: SealedIndex[]; expected: string; output: string } {
  const data = randomParts(seed, parts);
  const inputs = data.map((part, p) => {
    const file = path.join(dir, `${name}-part${p}.hsd`);
    writeFile(file, part);
    return SealedIndex.read(file, DAY);
  });
  const expected = path.join(dir, `${name}-expected.hsd`);
  writeFile(expected, mergedReference(data));
  return { inputs, expected, output: path.join(dir, `${name}-merged.hsd`) };
}

test('merged a window at a time, the file is byte for byte the whole-day merge (random overlapping parts, stepped slice by slice)', () => {
  const merger = new DayMerger();
  for (let seed = 1; seed <= 12; seed++) {
    const { inputs, expected, output } = mergeCase(`s${seed}`, seed, 2 + (seed % 4));
    const job = new DayFileJob(DAY, 'part', output, inputs, [], merger);
    // A deadline already passed: one tag per step, as the shard's sliced merges go.
    let steps = 1;
    while (!job.step(0)) steps++;
    job.finish();
    assert.ok(steps > 1, `seed ${seed}: the job went in slices`);
    assert.ok(fs.readFileSync(output).equals(fs.readFileSync(expected)), `seed ${seed}: the merged file differs from the whole-day merge`);
  }
});

test("two jobs of one thread stepped in turns write what each writes alone (each open tag holds its own pending block from the thread's spares)", () => {
  const merger = new DayMerger();
  const jobs = [21, 22].map((seed) => {
    const { inputs, expected, output } = mergeCase(`t${seed}`, seed, 3);
    return { job: new DayFileJob(DAY, 'part', output, inputs, [], merger), output, expected, done: false };
  });
  while (jobs.some((j) => !j.done)) {
    for (const j of jobs) if (!j.done && j.job.step(0)) j.done = true;
  }
  for (const j of jobs) {
    j.job.finish();
    assert.ok(fs.readFileSync(j.output).equals(fs.readFileSync(j.expected)), `${j.output} differs`);
  }
});

test("a busy tag's merge holds a block of each part in the merger, not the tag's day", () => {
  const parts = 4;
  const perPart = 150_000;
  const inputs = Array.from({ length: parts }, (_, p) => {
    const file = path.join(dir, `busy-part${p}.hsd`);
    const writer = new SealedFileWriter(file, DAY, undefined, 'fast');
    const ts = Float64Array.from({ length: perPart }, (_, i) => DAY0 + (p * perPart + i) * 100);
    const values = Float64Array.from({ length: perPart }, (_, i) => Math.round(Math.sin(i / 300) * 1000) / 100);
    writer.addTag(7, ts, values, perPart);
    writer.finish();
    return SealedIndex.read(file, DAY);
  });
  const merger = new DayMerger();
  const job = new DayFileJob(DAY, 'part', path.join(dir, 'busy-merged.hsd'), inputs, [], merger);
  assert.equal(job.step(), true);
  // Read before finish(), which drops buffers grown past a million points.
  assert.ok(merger.tsBuffer.length <= parts * SEALED_BLOCK_POINTS, `the merger grew to ${merger.tsBuffer.length} points for a tag of ${parts * perPart}`);
  const index = job.finish();
  assert.equal(job.points, parts * perPart);
  assert.deepEqual([...index.counts].slice(0, -1).every((n) => n === SEALED_BLOCK_POINTS), true, 'full blocks but the last');
});
