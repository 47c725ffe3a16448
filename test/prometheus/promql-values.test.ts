// Pieces of the PromQL answers that must read exactly as Prometheus writes them: times as
// seconds with three decimals, values as Go's FormatFloat(v, 'f', -1, 64), label order; and the
// window functions' edge rules (both window edges included, stale markers skipped).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { quantileOfSorted, slideWindow, WINDOW_FUNCTIONS } from '../../shared/promql-windows.js';
import { goFloatText } from '../../native-free-codecs/number-text.js';
import { isStaleMarker, STALE_MARKER } from '../../src/prometheus/promql/values.js';
import { compareLabels, formatTime } from '../../src/prometheus/results.js';
import { parseTime } from '../../src/prometheus/routes.js';

test('times are seconds with three decimals when the milliseconds are not zero', () => {
  assert.equal(formatTime(1_700_000_000_000), '1700000000');
  assert.equal(formatTime(1_700_000_000_500), '1700000000.500');
  assert.equal(formatTime(1_700_000_000_007), '1700000000.007');
  assert.equal(formatTime(-1_500), '-1.500');
});

test('values never use an exponent, and name NaN and the infinities as Go does', () => {
  assert.equal(goFloatText(1e21), '1000000000000000000000');
  assert.equal(goFloatText(1.5e-7), '0.00000015');
  assert.equal(goFloatText(-2.5), '-2.5');
  assert.equal(goFloatText(NaN), 'NaN');
  assert.equal(goFloatText(Infinity), '+Inf');
  assert.equal(goFloatText(-Infinity), '-Inf');
  assert.equal(goFloatText(0.1 + 0.2), '0.30000000000000004');
});

test('label sets order name by name, then value, a prefix first', () => {
  assert.ok(compareLabels([['a', '1']], [['a', '2']]) < 0);
  assert.ok(compareLabels([['a', '1']], [['a', '1'], ['b', '1']]) < 0);
  assert.ok(compareLabels([['b', '0']], [['a', '9'], ['b', '1']]) > 0);
});

test('time parameters: unix seconds keep milliseconds, RFC 3339 with offsets, anything else is refused naming the parameter', () => {
  assert.equal(parseTime('1700000000.123', 'time'), 1_700_000_000_123);
  assert.equal(parseTime('1700000000', 'time'), 1_700_000_000_000);
  assert.equal(parseTime('2026-01-05T08:00:00Z', 'time'), Date.UTC(2026, 0, 5, 8));
  assert.equal(parseTime('2026-01-05T10:00:00+02:00', 'time'), Date.UTC(2026, 0, 5, 8));
  assert.throws(() => parseTime('yesterday', 'start'), /invalid parameter "start": cannot parse "yesterday" to a valid timestamp/);
});

test('the stale marker is one NaN payload among others', () => {
  assert.ok(isStaleMarker(STALE_MARKER));
  assert.ok(!isStaleMarker(NaN));
  assert.ok(!isStaleMarker(0));
});

test('a window holds both of its edges and skips stale markers', () => {
  const ts = Float64Array.from([0, 10_000, 20_000, 30_000]);
  const values = Float64Array.from([1, 2, 0, 4]);
  values[2] = STALE_MARKER; // a JavaScript array would have made it a plain NaN
  const got: Array<[number, number]> = [];
  slideWindow(ts, values, 4, 20_000, (i) => 20_000 + i * 10_000, 2, WINDOW_FUNCTIONS.get('count_over_time')!, () => NaN, (i, v) => got.push([i, v]));
  // [0, 20 s] holds 0 and 10 s (20 s is stale); [10 s, 30 s] holds 10 s and 30 s.
  assert.deepEqual(got, [[0, 2], [1, 2]]);
});

test('rate extrapolates to the window edges as Prometheus 2 does, and never below a counter\'s zero', () => {
  const rate = WINDOW_FUNCTIONS.get('rate')!;
  const ts = Float64Array.from([15_000, 30_000, 45_000, 60_000]);
  // 10 per 15 s, samples 15 s apart: a 60 s window (0..60 s) extrapolates to its start.
  assert.equal(rate(ts, Float64Array.from([10, 20, 30, 40]), 0, 4, 0, 60_000, 60_000, NaN), 40 / 60);
  // Starting at 100, the counter's zero point lies far before the window: the window's start limits the extrapolation.
  const v = rate(ts, Float64Array.from([100, 110, 120, 130]), 0, 4, 0, 60_000, 60_000, NaN)!;
  assert.ok(Math.abs(v - 40 / 60) < 1e-12);
  // A reset adds the value before it.
  assert.equal(WINDOW_FUNCTIONS.get('increase')!(ts, Float64Array.from([5, 10, 2, 4]), 0, 4, 15_000, 60_000, 45_000, NaN), 9);
});

test('quantiles interpolate between ranks; φ outside 0..1 gives the infinities', () => {
  assert.equal(quantileOfSorted(0.5, [1, 2, 3, 4]), 2.5);
  assert.equal(quantileOfSorted(1.5, [1]), Infinity);
  assert.equal(quantileOfSorted(-1, [1]), -Infinity);
  assert.ok(Number.isNaN(quantileOfSorted(0.5, [])));
});
