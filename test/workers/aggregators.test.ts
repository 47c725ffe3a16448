import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import {
  AggregatorError,
  parseAggregators,
  parseTimeUnit,
  relativeToAbsolute,
  type AggregatorSpec,
  type SamplingStep,
} from '../../shared/aggregator-spec.js';
import { addMonthsUtc, BucketGrid, type Sampling } from '../../shared/time-units.js';
import { BucketStream, runPipeline, streamableStep, type Series } from '../../workers/aggregators.js';
import { prng } from '../support/prng.js';

// Every expectation below is worked out by hand in the comment next to it.

const S = 1000;
const MIN = 60 * S;
const H = 60 * MIN;
const D = 24 * H;
const T0 = Date.UTC(2024, 0, 1); // Monday 2024-01-01T00:00Z

type Point = [number, number];

function series(points: Point[]): { ts: Float64Array; vs: Float64Array; n: number } {
  return { ts: Float64Array.from(points, (p) => p[0]), vs: Float64Array.from(points, (p) => p[1]), n: points.length };
}

function pointsOf(s: Series): Point[] {
  const out: Point[] = [];
  for (let i = 0; i < s.count; i++) out.push([s.timestamps[i], s.values[i]]);
  return out;
}

/** Parses the steps (so the tests go through validation) and runs them. */
function run(steps: unknown[], points: Point[], range = { start: T0, end: T0 + D }): Point[] {
  const specs = parseAggregators(steps, 'pipeline');
  const { ts, vs, n } = series(points);
  return pointsOf(runPipeline(specs, ts, vs, n, range));
}

function assertClose(actual: Point[], expected: Point[], tolerance = 1e-12): void {
  assert.equal(actual.length, expected.length, `${JSON.stringify(actual)} vs ${JSON.stringify(expected)}`);
  for (let i = 0; i < expected.length; i++) {
    assert.equal(actual[i][0], expected[i][0], `timestamp ${i}`);
    assert.ok(Math.abs(actual[i][1] - expected[i][1]) <= tolerance * Math.max(1, Math.abs(expected[i][1])), `value ${i}: ${actual[i][1]} vs ${expected[i][1]}`);
  }
}

const minute = (name: string, extra: object = {}) => ({ name, sampling: { value: 1, unit: 'minutes' }, ...extra });

// Seven points over four one-minute buckets from T0; bucket 1 (60..120 s) is empty.
//   bucket 0: 4, 1, 7     bucket 2: 2, 8     bucket 3: 5, -3
const SEVEN: Point[] = [
  [T0, 4],
  [T0 + 20 * S, 1],
  [T0 + 40 * S, 7],
  [T0 + 120 * S, 2],
  [T0 + 150 * S, 8],
  [T0 + 190 * S, 5],
  [T0 + 230 * S, -3],
];
const B0 = T0;
const B2 = T0 + 2 * MIN;
const B3 = T0 + 3 * MIN;

describe('sampling aggregators on seven points with an empty bucket', () => {
  test('avg: (4+1+7)/3 = 4, (2+8)/2 = 5, (5-3)/2 = 1; the empty bucket gives no point', () => {
    assert.deepEqual(run([minute('avg')], SEVEN), [[B0, 4], [B2, 5], [B3, 1]]);
  });
  test('min, max, sum, count', () => {
    assert.deepEqual(run([minute('min')], SEVEN), [[B0, 1], [B2, 2], [B3, -3]]);
    assert.deepEqual(run([minute('max')], SEVEN), [[B0, 7], [B2, 8], [B3, 5]]);
    assert.deepEqual(run([minute('sum')], SEVEN), [[B0, 12], [B2, 10], [B3, 2]]);
    assert.deepEqual(run([minute('count')], SEVEN), [[B0, 3], [B2, 2], [B3, 2]]);
  });
  test('first and last by timestamp', () => {
    assert.deepEqual(run([minute('first')], SEVEN), [[B0, 4], [B2, 2], [B3, 5]]);
    assert.deepEqual(run([minute('last')], SEVEN), [[B0, 7], [B2, 8], [B3, -3]]);
  });
  test('dev is the sample standard deviation; one value gives 0', () => {
    // bucket 0: mean 4, squares 0+9+9 = 18, /(3-1) = 9 -> 3
    // bucket 2: mean 5, squares 9+9 = 18, /1 -> sqrt(18); bucket 3: mean 1, 16+16 = 32 -> sqrt(32)
    assertClose(run([minute('dev')], SEVEN), [[B0, 3], [B2, Math.sqrt(18)], [B3, Math.sqrt(32)]]);
    assert.deepEqual(run([minute('dev')], [[T0 + 5 * S, 42]]), [[T0, 0]]);
  });
  test('percentile 0, 0.5 and 1', () => {
    // sorted buckets: [1,4,7], [2,8], [-3,5]; 0.5 -> rank 1 -> 4; rank 0.5 -> 5; rank 0.5 -> 1
    assert.deepEqual(run([minute('percentile', { percentile: 0 })], SEVEN), [[B0, 1], [B2, 2], [B3, -3]]);
    assert.deepEqual(run([minute('percentile', { percentile: 0.5 })], SEVEN), [[B0, 4], [B2, 5], [B3, 1]]);
    assert.deepEqual(run([minute('percentile', { percentile: 1 })], SEVEN), [[B0, 7], [B2, 8], [B3, 5]]);
  });
  test('percentile interpolates linearly between the closest ranks', () => {
    // values 40, 10, 30, 20 -> sorted 10,20,30,40; p 0.25 -> rank 0.75 -> 10 + 0.75*10 = 17.5;
    // p 0.75 -> rank 2.25 -> 30 + 0.25*10 = 32.5
    const pts: Point[] = [[T0, 40], [T0 + S, 10], [T0 + 2 * S, 30], [T0 + 3 * S, 20]];
    assert.deepEqual(run([minute('percentile', { percentile: 0.25 })], pts), [[T0, 17.5]]);
    assert.deepEqual(run([minute('percentile', { percentile: '0.75' })], pts), [[T0, 32.5]]);
  });
  test('gaps keeps every point and marks the empty bucket with NaN at its start', () => {
    assert.deepEqual(run([minute('gaps')], SEVEN), [
      [T0, 4], [T0 + 20 * S, 1], [T0 + 40 * S, 7],
      [T0 + MIN, NaN],
      [T0 + 120 * S, 2], [T0 + 150 * S, 8], [T0 + 190 * S, 5], [T0 + 230 * S, -3],
    ]);
  });
  test('gaps marks only buckets between the first and the last point, several in a row', () => {
    // range starts 5 min early: the five empty buckets before the first point are not marked;
    // points at minutes 0 and 3 -> minutes 1 and 2 are gaps; nothing after minute 3.
    const pts: Point[] = [[T0 + 10 * S, 1], [T0 + 3 * MIN + 10 * S, 2]];
    assert.deepEqual(run([minute('gaps')], pts, { start: T0 - 5 * MIN, end: T0 + 10 * MIN }), [
      [T0 + 10 * S, 1], [T0 + MIN, NaN], [T0 + 2 * MIN, NaN], [T0 + 3 * MIN + 10 * S, 2],
    ]);
    assert.deepEqual(run([minute('gaps')], []), []);
  });
  test('NaN gap markers are skipped by the bucket math and pass through scale', () => {
    // gaps (1 min) then avg over 2 minutes: [0,2min) holds 4,1,7 and the NaN -> 4; [2,4min) -> 3
    assert.deepEqual(run([minute('gaps'), { name: 'avg', sampling: { value: 2, unit: 'minutes' } }], SEVEN), [[T0, 4], [T0 + 2 * MIN, 3]]);
    // a bucket holding only the NaN gives no point
    assert.deepEqual(run([minute('gaps'), minute('count')], SEVEN), [[B0, 3], [B2, 2], [B3, 2]]);
    assert.deepEqual(run([minute('gaps'), { name: 'scale', factor: 2 }], [[T0, 1], [T0 + 2 * MIN, 3]]), [[T0, 2], [T0 + MIN, NaN], [T0 + 2 * MIN, 6]]);
  });
});

describe('alignment', () => {
  // Range starts mid-hour at 10:25; points at 10:30 (1), 10:50 (3), 11:10 (5).
  const start = T0 + 10 * H + 25 * MIN;
  const range = { start, end: start + 3 * H };
  const pts: Point[] = [[T0 + 10 * H + 30 * MIN, 1], [T0 + 10 * H + 50 * MIN, 3], [T0 + 11 * H + 10 * MIN, 5]];
  const hourly = (extra: object = {}) => ({ name: 'avg', sampling: { value: 1, unit: 'hours' }, ...extra });

  test('without align_sampling buckets start at the range start', () => {
    // one bucket [10:25, 11:25) holds all three -> 3 at 10:25
    assert.deepEqual(run([hourly()], pts, range), [[start, 3]]);
  });
  test('align_sampling puts buckets on the hour', () => {
    // [10:00, 11:00): 1, 3 -> 2;  [11:00, 12:00): 5
    assert.deepEqual(run([hourly({ align_sampling: true })], pts, range), [[T0 + 10 * H, 2], [T0 + 11 * H, 5]]);
  });
  test('align_sampling with 15 minutes: multiples of 15 min since the epoch', () => {
    // origin 10:15; [10:15,10:30) empty; 10:30 -> 1; 10:45 -> 3; 11:00 -> 5
    const q = { name: 'avg', sampling: { value: 15, unit: 'minutes' }, align_sampling: true };
    assert.deepEqual(run([q], pts, range), [[T0 + 10 * H + 30 * MIN, 1], [T0 + 10 * H + 45 * MIN, 3], [T0 + 11 * H, 5]]);
  });
  test('align_end_time stamps each bucket with its (exclusive) end', () => {
    assert.deepEqual(run([hourly({ align_end_time: true })], pts, range), [[start + H, 3]]);
    assert.deepEqual(run([hourly({ align_sampling: true, align_end_time: true })], pts, range), [[T0 + 11 * H, 2], [T0 + 12 * H, 5]]);
  });
  test('align_start_time is the default; with align_end_time too, start wins', () => {
    assert.deepEqual(run([hourly({ align_sampling: true, align_start_time: true })], pts, range), [[T0 + 10 * H, 2], [T0 + 11 * H, 5]]);
    assert.deepEqual(run([hourly({ align_sampling: true, align_start_time: true, align_end_time: true })], pts, range), [[T0 + 10 * H, 2], [T0 + 11 * H, 5]]);
  });
  test('weeks align on Monday 00:00 UTC', () => {
    // range from Wednesday 2024-01-03 12:00; 2024-01-01 is a Monday; next Monday is Jan 8
    const wed = Date.UTC(2024, 0, 3, 12);
    const q = { name: 'count', sampling: { value: 1, unit: 'weeks' }, align_sampling: true };
    assert.deepEqual(run([q], [[wed, 1], [Date.UTC(2024, 0, 7, 23), 1], [Date.UTC(2024, 0, 8), 1]], { start: wed, end: wed + 14 * D }), [
      [Date.UTC(2024, 0, 1), 2],
      [Date.UTC(2024, 0, 8), 1],
    ]);
  });
  test('days align on multiples of the width since the epoch', () => {
    // 2 days: 2024-01-01 is day 19723 (odd), so the bucket holding it starts Dec 31
    const q = { name: 'count', sampling: { value: 2, unit: 'days' }, align_sampling: true };
    assert.deepEqual(run([q], [[T0 + H, 1]], { start: T0, end: T0 + D }), [[Date.UTC(2023, 11, 31), 1]]);
  });
});

describe('calendar months and years', () => {
  const countMonth = { name: 'count', sampling: { value: 1, unit: 'months' }, align_end_time: true };

  test('a month from Jan 31 ends on Feb 29 in a leap year and Feb 28 otherwise', () => {
    // 2024: [Jan 31, Feb 29) is 29 days, then [Feb 29, Mar 31), then [Mar 31, Apr 30)
    const jan31 = Date.UTC(2024, 0, 31);
    const pts: Point[] = [[Date.UTC(2024, 1, 28, 23), 1], [Date.UTC(2024, 1, 29), 1], [Date.UTC(2024, 2, 30), 1], [Date.UTC(2024, 2, 31), 1]];
    const out = run([countMonth], pts, { start: jan31, end: Date.UTC(2024, 4, 1) });
    assert.deepEqual(out, [[Date.UTC(2024, 1, 29), 1], [Date.UTC(2024, 2, 31), 2], [Date.UTC(2024, 3, 30), 1]]);
    assert.equal(out[0][0] - jan31, 29 * D);
    // 2023: [Jan 31, Feb 28) is 28 days
    const jan31b = Date.UTC(2023, 0, 31);
    const out2 = run([countMonth], [[Date.UTC(2023, 1, 27), 1]], { start: jan31b, end: Date.UTC(2023, 3, 1) });
    assert.deepEqual(out2, [[Date.UTC(2023, 1, 28), 1]]);
    assert.equal(out2[0][0] - jan31b, 28 * D);
  });
  test('a month bucket keeps the time of day of its origin', () => {
    const start = Date.UTC(2024, 0, 31, 10, 30);
    assert.deepEqual(run([countMonth], [[start, 1]], { start, end: start + D }), [[Date.UTC(2024, 1, 29, 10, 30), 1]]);
  });
  test('align_sampling with months starts buckets on the 1st; February 2024 has 29 days', () => {
    const q = { name: 'sum', sampling: { value: 1, unit: 'months' }, align_sampling: true };
    const start = Date.UTC(2024, 1, 10);
    const pts: Point[] = [[Date.UTC(2024, 1, 10), 1], [Date.UTC(2024, 1, 29, 23, 59), 2], [Date.UTC(2024, 2, 1), 4]];
    assert.deepEqual(run([q], pts, { start, end: start + 60 * D }), [[Date.UTC(2024, 1, 1), 3], [Date.UTC(2024, 2, 1), 4]]);
    const ends = run([{ ...q, align_end_time: true }], pts, { start, end: start + 60 * D });
    assert.deepEqual(ends, [[Date.UTC(2024, 2, 1), 3], [Date.UTC(2024, 3, 1), 4]]);
    assert.equal(ends[0][0] - Date.UTC(2024, 1, 1), 29 * D);
  });
  test('a one-year bucket across a leap day is 366 days, otherwise 365', () => {
    const year = { name: 'count', sampling: { value: 1, unit: 'years' }, align_end_time: true };
    const jul1 = Date.UTC(2023, 6, 1);
    const out = run([year], [[Date.UTC(2024, 1, 29), 1], [Date.UTC(2024, 5, 30), 1], [Date.UTC(2024, 6, 1), 1]], { start: jul1, end: jul1 + 400 * D });
    assert.deepEqual(out, [[Date.UTC(2024, 6, 1), 2], [Date.UTC(2025, 6, 1), 1]]);
    assert.equal(out[0][0] - jul1, 366 * D);
    assert.equal(out[1][0] - out[0][0], 365 * D);
    // from Feb 29 the year ends on Feb 28 (clamped)
    const feb29 = Date.UTC(2024, 1, 29);
    assert.deepEqual(run([year], [[feb29, 1]], { start: feb29, end: feb29 + D }), [[Date.UTC(2025, 1, 28), 1]]);
  });
  test('align_sampling with years starts on January 1st', () => {
    const q = { name: 'max', sampling: { value: 1, unit: 'years' }, align_sampling: true };
    const start = Date.UTC(2024, 4, 5);
    assert.deepEqual(run([q], [[start, 1], [Date.UTC(2024, 11, 31, 23), 2], [Date.UTC(2025, 0, 1), 3]], { start, end: start + 400 * D }), [
      [Date.UTC(2024, 0, 1), 2],
      [Date.UTC(2025, 0, 1), 3],
    ]);
  });
  test('the grid finds buckets before the origin and clamps day of month from the origin', () => {
    const grid = new BucketGrid({ value: 1, unit: 'months' }, false, Date.UTC(2024, 0, 31));
    assert.equal(grid.startOf(1), Date.UTC(2024, 1, 29));
    assert.equal(grid.startOf(2), Date.UTC(2024, 2, 31));
    assert.equal(grid.startOf(-1), Date.UTC(2023, 11, 31));
    assert.equal(grid.startOf(-2), Date.UTC(2023, 10, 30));
    assert.equal(grid.indexOf(Date.UTC(2024, 1, 28, 23)), 0);
    assert.equal(grid.indexOf(Date.UTC(2024, 1, 29)), 1);
    assert.equal(grid.indexOf(Date.UTC(2023, 11, 30)), -2);
    assert.equal(addMonthsUtc(Date.UTC(2024, 2, 31, 12), -1), Date.UTC(2024, 1, 29, 12));
  });
});

describe('point-wise aggregators', () => {
  // dt 10 s, 20 s, 40 s; dv 5, 20, 20
  const pts: Point[] = [[0, 0], [10 * S, 5], [30 * S, 25], [70 * S, 45]];

  test('diff: v[i] - v[i-1] at t[i], first point dropped', () => {
    assert.deepEqual(run([{ name: 'diff' }], [[T0, 4], [T0 + 20 * S, 1], [T0 + 40 * S, 7]]), [[T0 + 20 * S, -3], [T0 + 40 * S, 6]]);
    assert.deepEqual(run([{ name: 'diff' }], [[T0, 4]]), []);
  });
  test('rate per second and per minute', () => {
    // per second: 5/10 = 0.5, 20/20 = 1, 20/40 = 0.5; per minute: 60 times that
    assert.deepEqual(run([{ name: 'rate', unit: 'seconds' }], pts), [[10 * S, 0.5], [30 * S, 1], [70 * S, 0.5]]);
    assert.deepEqual(run([{ name: 'rate', unit: 'minutes' }], pts), [[10 * S, 30], [30 * S, 60], [70 * S, 30]]);
  });
  test('rate: months are 30 days, years 365', () => {
    // +1 per day
    assert.deepEqual(run([{ name: 'rate', unit: 'months' }], [[0, 0], [D, 1]]), [[D, 30]]);
    assert.deepEqual(run([{ name: 'rate', unit: 'years' }], [[0, 0], [D, 1]]), [[D, 365]]);
  });
  test('rate skips a repeated timestamp, which becomes the previous point', () => {
    // 10 s: 10/10 = 1; the second 10 s point (20) gives nothing; 20 s: (30-20)/10 = 1
    assert.deepEqual(run([{ name: 'rate', unit: 'seconds' }], [[0, 0], [10 * S, 10], [10 * S, 20], [20 * S, 30]]), [[10 * S, 1], [20 * S, 1]]);
  });
  test('sampler: v[i] * unit / (t[i] - t[i-1])', () => {
    // per second: 5/10 = 0.5, 25/20 = 1.25, 45/40 = 1.125; per minute: 30, 75, 67.5
    assert.deepEqual(run([{ name: 'sampler', unit: 'seconds' }], pts), [[10 * S, 0.5], [30 * S, 1.25], [70 * S, 1.125]]);
    assert.deepEqual(run([{ name: 'sampler', unit: 'minutes' }], pts), [[10 * S, 30], [30 * S, 75], [70 * S, 67.5]]);
  });
  test('scale and div', () => {
    const three: Point[] = [[1, 4], [2, 1], [3, 7]];
    assert.deepEqual(run([{ name: 'scale', factor: 2 }], three), [[1, 8], [2, 2], [3, 14]]);
    assert.deepEqual(run([{ name: 'div', divisor: 4 }], three), [[1, 1], [2, 0.25], [3, 1.75]]);
  });
  test('filter removes the points for which the comparison holds; NaN is always kept', () => {
    const five: Point[] = [[1, 1], [2, 2], [3, 3], [4, 4], [5, 5], [6, NaN]];
    const kept = (op: string) => run([{ name: 'filter', filter_op: op, threshold: 3 }], five).map((p) => p[1]);
    assert.deepEqual(kept('lt'), [3, 4, 5, NaN]);
    assert.deepEqual(kept('lte'), [4, 5, NaN]);
    assert.deepEqual(kept('gt'), [1, 2, 3, NaN]);
    assert.deepEqual(kept('gte'), [1, 2, NaN]);
    assert.deepEqual(kept('equal'), [1, 2, 4, 5, NaN]);
    assert.deepEqual(kept('ne'), [3, NaN]);
  });
  test('trim first, last, both', () => {
    const three: Point[] = [[1, 10], [2, 20], [3, 30]];
    assert.deepEqual(run([{ name: 'trim', trim: 'first' }], three), [[2, 20], [3, 30]]);
    assert.deepEqual(run([{ name: 'trim', trim: 'last' }], three), [[1, 10], [2, 20]]);
    assert.deepEqual(run([{ name: 'trim', trim: 'both' }], three), [[2, 20]]);
    assert.deepEqual(run([{ name: 'trim', trim: 'both' }], [[1, 10]]), []);
    assert.deepEqual(run([{ name: 'trim', trim: 'first' }], []), []);
  });
});

describe('pipelines', () => {
  test('order matters: scale(-2) then max differs from max then scale(-2)', () => {
    // values -1, -5, 3: scaled 2, 10, -6 -> max 10; max 3 -> scaled -6
    const pts: Point[] = [[T0, -1], [T0 + S, -5], [T0 + 2 * S, 3]];
    assert.deepEqual(run([{ name: 'scale', factor: -2 }, minute('max')], pts), [[T0, 10]]);
    assert.deepEqual(run([minute('max'), { name: 'scale', factor: -2 }], pts), [[T0, -6]]);
  });
  test('a sampling step after another buckets the first one\'s timestamps', () => {
    // 1-min sums 12, 10, 2 at minutes 0, 2, 3 -> 2-min max: [0,2) 12, [2,4) 10
    assert.deepEqual(run([minute('sum'), { name: 'max', sampling: { value: 2, unit: 'minutes' } }], SEVEN), [[T0, 12], [T0 + 2 * MIN, 10]]);
  });
  test('the input arrays are never written; an empty pipeline copies', () => {
    const { ts, vs, n } = series(SEVEN);
    const specs = parseAggregators([{ name: 'scale', factor: 10 }, { name: 'diff' }, { name: 'trim', trim: 'both' }], 'pipeline');
    const out = runPipeline(specs, ts, vs, n, { start: T0, end: T0 + D });
    // scaled 40,10,70,20,80,50,-30 -> diffs -30,60,-50,60,-30,-80 -> trimmed 60,-50,60,-30
    assert.deepEqual(pointsOf(out), [[T0 + 40 * S, 60], [T0 + 120 * S, -50], [T0 + 150 * S, 60], [T0 + 190 * S, -30]]);
    assert.deepEqual(Array.from(vs), SEVEN.map((p) => p[1]));
    assert.deepEqual(Array.from(ts), SEVEN.map((p) => p[0]));
    const copy = runPipeline([], ts, vs, n, { start: T0, end: T0 + D });
    assert.notEqual(copy.values, vs);
    assert.deepEqual(pointsOf(copy), SEVEN);
  });
  test('streamableStep: only a pipeline of exactly one sampling step', () => {
    const avg = parseAggregators([minute('avg')], 'p');
    assert.equal(streamableStep(avg), avg[0]);
    assert.equal(streamableStep(parseAggregators([minute('gaps')], 'p'))?.name, 'gaps');
    assert.equal(streamableStep([]), null);
    assert.equal(streamableStep(parseAggregators([{ name: 'diff' }], 'p')), null);
    assert.equal(streamableStep(parseAggregators([minute('avg'), minute('max')], 'p')), null);
  });
});

describe('parsing', () => {
  test('defaults, loose numbers, case-insensitive units, unknown keys ignored', () => {
    assert.deepEqual(parseAggregators(undefined, 'pipeline'), []);
    assert.deepEqual(parseAggregators([{ name: 'avg', sampling: { value: '5', unit: 'MINUTES' }, colour: 'red' }], 'pipeline'), [
      { name: 'avg', sampling: { value: 5, unit: 'minutes' }, align_sampling: false, align_start_time: false, align_end_time: false },
    ]);
    assert.deepEqual(parseAggregators([{ name: 'div', divisor: '2.5' }, { name: 'rate', sampling: { unit: 'seconds' } }], 'p'), [
      { name: 'div', divisor: 2.5 },
      { name: 'rate', unit: 'seconds' },
    ]);
    assert.equal(parseTimeUnit('Hours', 'u'), 'hours');
  });

  const fails = (input: unknown, message: string) =>
    assert.throws(() => parseAggregators(input, 'metrics[0].aggregators'), (err: unknown) => {
      assert.ok(err instanceof AggregatorError, String(err));
      assert.ok(err.message.startsWith(message), `"${err.message}" should start with "${message}"`);
      return true;
    });

  test('errors name the offending aggregator and field', () => {
    fails({ name: 'avg' }, 'metrics[0].aggregators: must be an array');
    fails([minute('avg'), { name: 'median' }], 'metrics[0].aggregators[1]: unknown aggregator "median"');
    fails([{ sampling: {} }], 'metrics[0].aggregators[0].name: must be one of avg');
    fails([{ name: 'avg', sampling: { value: 1, unit: 'fortnights' } }], 'metrics[0].aggregators[0].sampling.unit: must be one of milliseconds, seconds, minutes, hours, days, weeks, months, years, got "fortnights"');
    fails([{ name: 'max' }], 'metrics[0].aggregators[0].sampling: is required for "max"');
    fails([{ name: 'avg', sampling: { value: 0, unit: 'hours' } }], 'metrics[0].aggregators[0].sampling.value: must be a positive integer, got 0');
    fails([{ name: 'avg', sampling: { value: 1.5, unit: 'hours' } }], 'metrics[0].aggregators[0].sampling.value: must be a positive integer');
    fails([{ name: 'avg', sampling: { value: '1h', unit: 'hours' } }], 'metrics[0].aggregators[0].sampling.value: must be a positive integer');
    fails([{ name: 'percentile', sampling: { value: 1, unit: 'hours' } }], 'metrics[0].aggregators[0].percentile: must be a number from 0 to 1');
    fails([minute('percentile', { percentile: 1.5 })], 'metrics[0].aggregators[0].percentile: must be a number from 0 to 1, got 1.5');
    fails([{ name: 'div', divisor: 0 }], 'metrics[0].aggregators[0].divisor: must be a non-zero number');
    fails([{ name: 'div' }], 'metrics[0].aggregators[0].divisor: must be a non-zero number');
    fails([{ name: 'scale', factor: 'big' }], 'metrics[0].aggregators[0].factor: must be a finite number');
    fails([{ name: 'filter', filter_op: 'eq', threshold: 1 }], 'metrics[0].aggregators[0].filter_op: must be one of lt, lte, gt, gte, equal, ne, got "eq"');
    fails([{ name: 'filter', filter_op: 'lt' }], 'metrics[0].aggregators[0].threshold: must be a finite number');
    fails([{ name: 'trim', trim: 'middle' }], 'metrics[0].aggregators[0].trim: must be one of first, last, both');
    fails([{ name: 'rate' }], 'metrics[0].aggregators[0].unit: is required');
    fails([{ name: 'sampler', unit: 'ages' }], 'metrics[0].aggregators[0].unit: must be one of');
    fails([minute('avg', { align_sampling: 'yes' })], 'metrics[0].aggregators[0].align_sampling: must be true or false');
    fails([42], 'metrics[0].aggregators[0]: must be an aggregator object');
    assert.throws(() => parseTimeUnit('fortnights', 'pipeline[0].sampling.unit'), /^AggregatorError: pipeline\[0\]\.sampling\.unit: must be one of/);
  });

  test('relativeToAbsolute counts back from now, months and years by the calendar', () => {
    const now = Date.UTC(2024, 2, 31, 12);
    assert.equal(relativeToAbsolute({ value: 2, unit: 'hours' }, now), now - 2 * H);
    assert.equal(relativeToAbsolute({ value: 1, unit: 'weeks' }, now), now - 7 * D);
    assert.equal(relativeToAbsolute({ value: 1, unit: 'months' }, now), Date.UTC(2024, 1, 29, 12));
    assert.equal(relativeToAbsolute({ value: 13, unit: 'months' }, now), Date.UTC(2023, 1, 28, 12));
    assert.equal(relativeToAbsolute({ value: 1, unit: 'years' }, Date.UTC(2024, 1, 29)), Date.UTC(2023, 1, 28));
    assert.equal(relativeToAbsolute({ value: 0, unit: 'days' }, now), now);
  });
});

// ---------------------------------------------------------------------------------------------
// Streaming

/** Plain reference for fixed units: group by bucket index with arrays, then reduce. */
function reference(spec: SamplingStep, points: Point[], rangeStart: number): Point[] {
  const width = spec.sampling.value * { milliseconds: 1, seconds: S, minutes: MIN, hours: H, days: D }[spec.sampling.unit as 'seconds'];
  const origin = spec.align_sampling ? Math.floor(rangeStart / width) * width : rangeStart;
  const buckets = new Map<number, Point[]>();
  for (const p of points) {
    const i = Math.floor((p[0] - origin) / width);
    if (!buckets.has(i)) buckets.set(i, []);
    buckets.get(i)!.push(p);
  }
  const indexes = [...buckets.keys()].sort((a, b) => a - b);
  const out: Point[] = [];
  for (let k = 0; k < indexes.length; k++) {
    const i = indexes[k];
    const start = origin + i * width;
    const all = buckets.get(i)!;
    if (spec.name === 'gaps') {
      if (k > 0) for (let g = indexes[k - 1] + 1; g < i; g++) out.push([origin + g * width, NaN]);
      out.push(...all);
      continue;
    }
    const vs = all.map((p) => p[1]).filter((v) => !Number.isNaN(v));
    if (vs.length === 0) continue;
    const mean = vs.reduce((a, b) => a + b, 0) / vs.length;
    const sorted = [...vs].sort((a, b) => a - b);
    let value: number;
    switch (spec.name) {
      case 'avg': value = mean; break;
      case 'sum': value = vs.reduce((a, b) => a + b, 0); break;
      case 'count': value = vs.length; break;
      case 'min': value = Math.min(...vs); break;
      case 'max': value = Math.max(...vs); break;
      case 'first': value = vs[0]; break;
      case 'last': value = vs[vs.length - 1]; break;
      case 'dev': value = vs.length > 1 ? Math.sqrt(vs.reduce((a, v) => a + (v - mean) ** 2, 0) / (vs.length - 1)) : 0; break;
      case 'percentile': {
        const rank = spec.percentile * (vs.length - 1);
        const lo = Math.floor(rank);
        value = lo === rank ? sorted[lo] : sorted[lo] + (rank - lo) * (sorted[lo + 1] - sorted[lo]);
        break;
      }
    }
    const atEnd = spec.align_end_time && !spec.align_start_time;
    out.push([atEnd ? start + width : start, value]);
  }
  return out;
}

describe('BucketStream', () => {
  const NAMES = ['avg', 'min', 'max', 'sum', 'count', 'first', 'last', 'dev', 'gaps', 'percentile'] as const;

  test('equals runPipeline and a plain reference on random series in random chunks', () => {
    const rnd = prng(20240601);
    for (let round = 0; round < 300; round++) {
      // sorted unique timestamps with short steps and occasional long holes; a few NaN values
      const n = Math.floor(rnd() * 400);
      const points: Point[] = [];
      let t = T0 + Math.floor(rnd() * 10 * MIN);
      for (let i = 0; i < n; i++) {
        t += 1 + Math.floor(rnd() < 0.05 ? rnd() * 30 * MIN : rnd() * 20 * S);
        points.push([t, rnd() < 0.03 ? NaN : Math.round((rnd() - 0.5) * 2000) / 8]);
      }
      const name = NAMES[Math.floor(rnd() * NAMES.length)];
      const unit = (['seconds', 'minutes', 'hours'] as const)[Math.floor(rnd() * 3)];
      const sampling: Sampling = { value: 1 + Math.floor(rnd() * (unit === 'hours' ? 2 : 15)), unit };
      const raw = { name, sampling, align_sampling: rnd() < 0.5, align_start_time: rnd() < 0.3, align_end_time: rnd() < 0.5, percentile: Math.floor(rnd() * 101) / 100 };
      const [spec] = parseAggregators([raw], 'random') as [SamplingStep];
      const range = { start: T0 + Math.floor(rnd() * 5 * MIN), end: t };

      const { ts, vs } = series(points);
      const whole = pointsOf(runPipeline([spec], ts, vs, n, range));

      const streamed: Point[] = [];
      const stream = new BucketStream(spec, range, (ts, v) => streamed.push([ts, v]));
      // random chunk sizes, empty chunks included, each copied into one reused pair of arrays
      const chunkT = new Float64Array(64);
      const chunkV = new Float64Array(64);
      for (let i = 0; i < n; ) {
        const size = Math.min(n - i, Math.floor(rnd() * 64));
        chunkT.set(ts.subarray(i, i + size));
        chunkV.set(vs.subarray(i, i + size));
        stream.push(chunkT, chunkV, size);
        i += size;
      }
      stream.finish();
      const context = `round ${round}: ${JSON.stringify(raw)}`;
      assert.deepEqual(streamed, whole, context);
      // points before the range start land in buckets with negative indexes in both
      const expected = reference(spec, points, range.start);
      // the reference sums in a different order, so compare values with a tolerance
      assert.equal(whole.length, expected.length, context);
      for (let i = 0; i < whole.length; i++) {
        assert.equal(whole[i][0], expected[i][0], context);
        const [a, b] = [whole[i][1], expected[i][1]];
        assert.ok(Object.is(a, b) || Math.abs(a - b) <= 1e-9 * Math.max(1, Math.abs(b)), `${context}: ${a} vs ${b}`);
      }
    }
  });

  test('calendar buckets stream the same as runPipeline', () => {
    const rnd = prng(7);
    for (let round = 0; round < 50; round++) {
      const points: Point[] = [];
      let t = Date.UTC(2023, 0, 31) + Math.floor(rnd() * 40 * D);
      for (let i = 0; i < 300; i++) {
        t += 1 + Math.floor(rnd() * 4 * D);
        points.push([t, Math.floor(rnd() * 100)]);
      }
      const raw = { name: NAMES[round % NAMES.length], sampling: { value: 1 + (round % 3), unit: round % 2 ? 'months' : 'years' }, align_sampling: rnd() < 0.5, align_end_time: rnd() < 0.5, percentile: 0.3 };
      const [spec] = parseAggregators([raw], 'random') as [SamplingStep];
      const range = { start: Date.UTC(2023, 0, 31), end: t };
      const { ts, vs, n } = series(points);
      const whole = pointsOf(runPipeline([spec], ts, vs, n, range));
      const streamed: Point[] = [];
      const stream = new BucketStream(spec, range, (ts, v) => streamed.push([ts, v]));
      for (let i = 0; i < n; i += 7) stream.push(ts.subarray(i, Math.min(n, i + 7)), vs.subarray(i, Math.min(n, i + 7)), Math.min(7, n - i));
      stream.finish();
      assert.deepEqual(streamed, whole, JSON.stringify(raw));
      assert.ok(whole.length > 0);
    }
  });

  test('a year of 1 s points through avg over 1 h: 8,760 points, bounded memory', (t) => {
    const start = Date.UTC(2023, 0, 1); // 2023 has 365 days: 31,536,000 seconds
    const total = 365 * 86_400;
    const chunk = 86_400;
    const [spec] = parseAggregators([{ name: 'avg', sampling: { value: 1, unit: 'hours' } }], 'pipeline') as [SamplingStep];
    const outT = new Float64Array(8_760);
    const outV = new Float64Array(8_760);
    let count = 0;
    const stream = new BucketStream(spec, { start, end: start + total * S - 1 }, (ts, v) => {
      outT[count] = ts;
      outV[count] = v;
      count++;
    });
    const ts = new Float64Array(chunk);
    const vs = new Float64Array(chunk);
    const heapBefore = process.memoryUsage().heapUsed;
    let heapPeak = heapBefore;
    const began = performance.now();
    for (let first = 0; first < total; first += chunk) {
      for (let i = 0; i < chunk; i++) {
        ts[i] = start + (first + i) * S;
        vs[i] = (first + i) % 100; // each hour holds 0..99 36 times: avg 49.5
      }
      stream.push(ts, vs, chunk);
      if ((first / chunk) % 16 === 0) heapPeak = Math.max(heapPeak, process.memoryUsage().heapUsed);
    }
    stream.finish();
    const ms = performance.now() - began;
    heapPeak = Math.max(heapPeak, process.memoryUsage().heapUsed);
    t.diagnostic(`one year of 1 s points (31,536,000) through avg/1 h: ${ms.toFixed(0)} ms including generation, heap growth ${((heapPeak - heapBefore) / 1e6).toFixed(1)} MB`);

    assert.equal(count, 8_760);
    for (let i = 0; i < count; i++) {
      assert.equal(outT[i], start + i * H);
      assert.equal(outV[i], 49.5);
    }
    assert.ok(heapPeak - heapBefore < 50e6, `heap grew by ${heapPeak - heapBefore} bytes`);
  });
});

describe('typing', () => {
  test('parsed specs are plain data that survive structured cloning', () => {
    const specs: AggregatorSpec[] = parseAggregators([minute('percentile', { percentile: 0.9 }), { name: 'filter', filter_op: 'gt', threshold: 3 }], 'p');
    assert.deepEqual(structuredClone(specs), specs);
  });
});
