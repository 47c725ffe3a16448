// The comparison of two InfluxDB 1.x answers the differential test relies on: it must find
// every kind of difference (or the differential test could pass on wrong answers) and say
// where, and let through only what the rules allow (floats within 1e-9 relative).

import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { compareAnswers, compareHttpAnswers, formatDifferences, type Difference } from './compare.js';

const series = (name: string, tags: Record<string, string> | undefined, columns: string[], values: unknown[][]) => ({ name, ...(tags ? { tags } : {}), columns, values });
const answer = (...results: unknown[]) => ({ results });
const result = (id: number, ...s: unknown[]) => ({ statement_id: id, series: s });

const cpuA = () => series('cpu', { host: 'a' }, ['time', 'mean'], [['2026-01-01T00:00:00Z', 1.5], ['2026-01-01T00:00:10Z', 2.25], ['2026-01-01T00:00:20Z', null]]);
const cpuB = () => series('cpu', { host: 'b' }, ['time', 'mean'], [['2026-01-01T00:00:00Z', 7], ['2026-01-01T00:00:10Z', 8]]);
/** Loosely typed: the tests edit its copies freely. */
const base = (): any => answer(result(0, cpuA(), cpuB()), result(1, series('databases', undefined, ['name'], [['plant']])));

/** The differences' paths and messages, for matching. */
const text = (diffs: Difference[]) => formatDifferences(diffs);

describe('compare: InfluxDB 1.x answers', () => {
  test('equal answers have no difference; a deep copy is equal', () => {
    assert.deepEqual(compareAnswers(base(), base()), []);
    assert.deepEqual(compareAnswers(JSON.parse(JSON.stringify(base())), base()), []);
    assert.deepEqual(compareAnswers({ error: 'x' }, { error: 'x' }), []);
  });

  test('floats within 1e-9 relative are equal; beyond, the difference names path, time and both values', () => {
    const near = base();
    near.results[0].series[0].values[0][1] = 1.5 * (1 + 5e-10);
    near.results[0].series[1].values[1][1] = 8 - 8 * 9e-10;
    assert.deepEqual(compareAnswers(base(), near), []);

    const far = base();
    far.results[0].series[0].values[1][1] = 2.25 * (1 + 2e-9);
    const diffs = compareAnswers(base(), far);
    assert.equal(diffs.length, 1, text(diffs));
    assert.equal(diffs[0].path, 'results[0].series[0]{cpu,host=a}.values[1].mean');
    assert.match(diffs[0].message, /^influxd 2\.25, ours 2\.25000000\d+ \(relative difference 2\.00e-9\) \(time "2026-01-01T00:00:10Z"\)$/);
    // The tolerance is a setting.
    assert.deepEqual(compareAnswers(base(), far, { relTolerance: 1e-8 }), []);
    // Zero is equal only to zero.
    const zero = answer(result(0, series('m', undefined, ['time', 'v'], [['t', 0]])));
    const tiny = answer(result(0, series('m', undefined, ['time', 'v'], [['t', 1e-300]])));
    assert.equal(compareAnswers(zero, tiny).length, 1);
  });

  test('times are exact, also as epoch numbers, where 1e-9 relative would allow seconds', () => {
    const at = (ms: number) => answer(result(0, series('m', undefined, ['time', 'v'], [[ms, 1.5]])));
    const diffs = compareAnswers(at(1_795_687_690_250), at(1_795_687_690_251));
    assert.equal(diffs.length, 1, text(diffs));
    assert.equal(diffs[0].path, 'results[0].series[0]{m}.values[0].time');
    const seconds = compareAnswers(at(1_795_687_690), at(1_795_687_691));
    assert.equal(seconds.length, 1, text(seconds));
    // The values beside them keep the tolerance.
    const value = answer(result(0, series('m', undefined, ['time', 'v'], [[1, 1.5 * (1 + 1e-10)]])));
    assert.deepEqual(compareAnswers(answer(result(0, series('m', undefined, ['time', 'v'], [[1, 1.5]]))), value), []);
  });

  test('null against a number, a string against a number, true against 1: all differences', () => {
    const other = base();
    other.results[0].series[0].values[2][1] = 0;
    other.results[0].series[0].values[0][0] = 1767225600000;
    other.results[1].series[0].values[0][0] = true;
    const diffs = compareAnswers(base(), other);
    assert.deepEqual(diffs.map((d) => d.path), [
      'results[0].series[0]{cpu,host=a}.values[0].time',
      'results[0].series[0]{cpu,host=a}.values[2].mean',
      'results[1].series[0]{databases}.values[0].name',
    ]);
    assert.match(diffs[1].message, /^influxd null, ours 0/);
    assert.match(diffs[2].message, /^influxd "plant", ours true/);
    const bool = compareAnswers(answer(result(0, series('p', undefined, ['time', 'on'], [['t', true]]))), answer(result(0, series('p', undefined, ['time', 'on'], [['t', 1]]))));
    assert.equal(bool.length, 1);
  });

  test('a key that is null on one side and missing on the other is noted as such', () => {
    const withNull = answer({ statement_id: 0, series: [{ ...cpuB(), tags: null }] });
    const without = answer({ statement_id: 0, series: [series('cpu', undefined, ['time', 'mean'], cpuB().values)] });
    const diffs = compareAnswers(withNull, without);
    assert.equal(diffs.length, 1, text(diffs));
    assert.equal(diffs[0].path, 'results[0].series[0]{cpu}.tags');
    assert.match(diffs[0].message, /only influxd has it: null \(null vs missing\)/);
    const missingSeries = compareAnswers(answer({ statement_id: 0 }), answer({ statement_id: 0, series: [] }));
    assert.equal(missingSeries.length, 1);
    assert.match(missingSeries[0].message, /only ours has it: \[\]/);
  });

  test('statement_id, error, partial, messages, the result count and a whole-query error are compared', () => {
    const other = base() as any;
    other.results[1].statement_id = 2;
    other.results[0].partial = true;
    other.results[0].messages = [{ level: 'warning', text: 'deprecated' }];
    const diffs = compareAnswers(base(), other);
    assert.deepEqual(diffs.map((d) => d.path).sort(), ['results[0].messages', 'results[0].partial', 'results[1].statement_id']);

    const failed = answer({ statement_id: 0, error: 'database not found: x' });
    const failedOther = answer({ statement_id: 0, error: 'database not found: y' });
    assert.deepEqual(compareAnswers(failed, failedOther).map((d) => d.path), ['results[0].error']);
    const errorVsSeries = compareAnswers(failed, answer(result(0, cpuB())));
    assert.deepEqual(errorVsSeries.map((d) => d.path).sort(), ['results[0].error', 'results[0].series']);

    const fewer = compareAnswers(base(), answer(result(0, cpuA(), cpuB())));
    assert.equal(fewer.length, 1);
    assert.equal(fewer[0].message, '2 results from influxd, 1 from ours');

    const parseError = compareAnswers({ error: 'error parsing query: found EOF, expected identifier at line 1, char 18' }, base());
    assert.deepEqual(parseError.map((d) => d.path).sort(), ['error', 'results']);
  });

  test('name, tags and columns are compared; a series is matched by name and tags', () => {
    const renamed = base();
    renamed.results[0].series[1].tags = { host: 'c' };
    const diffs = compareAnswers(base(), renamed);
    assert.deepEqual(diffs.map((d) => d.message), ['series only in influxd: cpu,host=b', 'series only in ours: cpu,host=c']);

    const columns = base();
    columns.results[0].series[0].columns = ['time', 'mean_usage'];
    const colDiffs = compareAnswers(base(), columns);
    assert.deepEqual(colDiffs.map((d) => d.path), ['results[0].series[0]{cpu,host=a}.columns[1]']);
    assert.match(colDiffs[0].message, /influxd "mean", ours "mean_usage"/);

    const name = base();
    name.results[1].series[0].name = 'dbs';
    assert.match(text(compareAnswers(base(), name)), /series only in influxd: databases/);
  });

  test('series order: one difference naming both orders, then the series compared by key', () => {
    const swapped = base();
    swapped.results[0].series.reverse();
    swapped.results[0].series[0].values[0][1] = 70;
    const diffs = compareAnswers(base(), swapped);
    assert.equal(diffs.length, 2, text(diffs));
    assert.equal(diffs[0].message, 'series order differs: influxd cpu,host=a | cpu,host=b; ours cpu,host=b | cpu,host=a');
    assert.equal(diffs[1].path, 'results[0].series[1]{cpu,host=b}.values[0].mean');
  });

  test('rows of a time series are matched by time when their counts differ; other rows by position', () => {
    const fewer = base();
    fewer.results[0].series[0].values.splice(1, 1);
    fewer.results[0].series[0].values.push(['2026-01-01T00:00:30Z', 4]);
    fewer.results[0].series[0].values.push(['2026-01-01T00:00:40Z', 5]);
    const diffs = compareAnswers(base(), fewer);
    assert.equal(diffs.length, 1, text(diffs));
    assert.equal(diffs[0].path, 'results[0].series[0]{cpu,host=a}.values');
    assert.equal(diffs[0].message, '3 rows from influxd, 4 from ours; times only in influxd: "2026-01-01T00:00:10Z"; times only in ours: "2026-01-01T00:00:30Z" | "2026-01-01T00:00:40Z"');

    const show = answer(result(0, series('measurements', undefined, ['name'], [['a'], ['b']])));
    const showMore = answer(result(0, series('measurements', undefined, ['name'], [['a'], ['c'], ['d']])));
    assert.deepEqual(text(compareAnswers(show, showMore)).split('\n'), [
      '  results[0].series[0]{measurements}.values: 2 rows from influxd, 3 from ours',
      '  results[0].series[0]{measurements}.values[1].name: influxd "b", ours "c"',
    ]);
  });

  test('series without a name (SHOW SERIES, SHOW RETENTION POLICIES) are compared by position', () => {
    const keys = answer(result(0, { columns: ['key'], values: [['cpu,host=a'], ['cpu,host=b']] }));
    const other = answer(result(0, { columns: ['key'], values: [['cpu,host=a'], ['cpu,host=c']] }));
    const diffs = compareAnswers(keys, other);
    assert.deepEqual(diffs.map((d) => d.path), ['results[0].series[0]{}.values[1].key']);
  });

  test('the list stops at maxDifferences and says how many more there were', () => {
    const many = (k: number) => answer(result(0, series('m', undefined, ['time', 'v'], Array.from({ length: 30 }, (_, i) => [i, i * k]))));
    const diffs = compareAnswers(many(1), many(2), { maxDifferences: 5 });
    assert.equal(diffs.length, 6);
    assert.equal(diffs[5].message, '… and 24 more differences');
  });

  test('HTTP answers: the status first, then the bodies; a body that is not JSON is compared as text; names are settable', () => {
    assert.deepEqual(compareHttpAnswers({ status: 200, json: base() }, { status: 200, json: base() }), []);
    const status = compareHttpAnswers({ status: 400, json: { error: 'x' } }, { status: 200, json: { error: 'x' } });
    assert.deepEqual(status, [{ path: 'status', message: 'influxd 400, ours 200' }]);
    const notJson = compareHttpAnswers({ status: 404, json: undefined, text: '404 page not found\n' }, { status: 404, json: { error: 'no route for /x' } }, { names: ['reference', 'service'] });
    assert.equal(notJson.length, 1);
    assert.equal(notJson[0].message, 'reference text "404 page not found\\n", service JSON {"error":"no route for /x"}');
    const formatted = formatDifferences(status, 'SELECT 1');
    assert.equal(formatted, 'SELECT 1\n  status: influxd 400, ours 200');
  });
});
