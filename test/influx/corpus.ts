// The InfluxQL statements the differential test runs against InfluxDB and the service (issue 28;
// WIRE.md part 3 lists the subset): what Grafana's InfluxDB datasource sends (its query editor's
// SELECTs with `$timeFilter` as epoch ms or `now() - 6h`, the SHOW statements behind its
// dropdowns, its health check, `epoch=ms`), what the `influx` CLI sends, then every function,
// fill, GROUP BY form, time form, epoch, ordering and paging, math, regex and multiple FROM,
// multiple statements, and a few errors.
//
// Times are absolute, taken from the dataset (dataset.ts), wherever the answer would otherwise
// depend on the second the test runs. The few `now()`-relative statements either have answers
// that do not (every point lies inside the window and no empty bucket reaches now), or are
// marked `dependsOnNow`: their empty trailing buckets run up to now(), so the two servers agree
// unless a bucket boundary passes between the two requests; such a pair is asked again once.

import { QUERY_FORMS, type QueryForm } from '../support/influxd.js';
import type { Dataset } from './dataset.js';

export interface CorpusEntry {
  /** Short and unique: names the statement in reports. */
  id: string;
  /** One or more statements, as sent in `q`. */
  q: string;
  /** The `epoch` parameter; none = RFC 3339 times. */
  epoch?: string;
  /** How the request is sent (every form is used across the corpus, in turn). */
  form: QueryForm;
  /** The `db` parameter when it is not the dataset's database; null = none sent. */
  db?: string | null;
  /** The answer may change with the second it is asked in (see above). */
  dependsOnNow?: boolean;
  /** What it exercises. */
  about: string;
  /**
   * Why the service answers this differently on purpose (README lists it): the differential
   * test then reports the differences without failing. Unset: any difference fails.
   */
  differs?: string;
}

/** Why boolean and integer fields answer differently (README "InfluxQL" lists it). */
const BOOLEANS =
  'booleans are stored as 1 and 0 and integers as doubles (README: the store keeps doubles), so boolean fields answer 1/0 and SHOW FIELD KEYS says float';

const SECOND = 1000;
const MINUTE = 60 * SECOND;
const HOUR = 60 * MINUTE;

/** An epoch ms literal as Grafana writes `$timeFilter`: `1700000000000ms`. */
const ms = (t: number) => `${t}ms`;
/** An RFC 3339 string literal: `'2026-01-12T08:00:00Z'`. */
const rfc = (t: number) => `'${new Date(t).toISOString().replace('.000Z', 'Z')}'`;

/** The corpus for `ds`, written to the database `db`. */
export function makeCorpus(ds: Dataset, db: string): CorpusEntry[] {
  const E = ds.endMs - (ds.endMs % (10 * SECOND)); // the cpu, boiler and ambient series end here
  // A 41-minute window over 1 s boiler data, not aligned to any bucket, holding line B's gap.
  const gap = ds.gaps.find((g) => g.measurement === 'boiler')!;
  const w1 = { from: gap.fromMs - 31 * MINUTE - 13 * SECOND, to: gap.toMs + 2 * MINUTE + 7 * SECOND };
  // A window that starts before the boiler and pump data (empty buckets at the start edge).
  const edge = { from: E - 3 * HOUR - 7 * MINUTE - 30 * SECOND, to: E - 2 * HOUR - 48 * MINUTE };
  // Two hours of cpu data, as Grafana's time picker gives it (epoch ms, both ends inclusive).
  const grafana = { from: E - 3 * HOUR - 20 * SECOND, to: E - HOUR - 40 * SECOND };
  // A couple of minutes of raw points.
  const raw = { from: E - 90 * MINUTE + 3 * SECOND, to: E - 88 * MINUTE };
  const pumpRaw = { from: E - 150 * MINUTE, to: E - 148 * MINUTE };
  const tw = (w: { from: number; to: number }) => `time >= ${ms(w.from)} AND time <= ${ms(w.to)}`;
  const twRfc = (w: { from: number; to: number }) => `time >= ${rfc(w.from)} AND time <= ${rfc(w.to)}`;
  const whole = `time >= ${ms(E - 7 * HOUR)} AND time <= ${ms(E + MINUTE)}`;

  const out: CorpusEntry[] = [];
  let n = 0;
  const add = (id: string, q: string, about: string, extra: Partial<CorpusEntry> = {}) => {
    // Each request form in turn, so each kind of statement is sent in several forms somewhere.
    out.push({ id, q, about, form: QUERY_FORMS[n++ % QUERY_FORMS.length], ...extra });
  };

  // ---- SHOW: Grafana's dropdowns and health check, the CLI --------------------------------------
  add('show-databases', 'SHOW DATABASES', 'the CLI and Grafana list databases', { db: null });
  add('show-databases-db', 'SHOW DATABASES', 'with a db parameter, as the CLI sends it when started with -database');
  add('show-measurements', 'SHOW MEASUREMENTS', 'every measurement');
  add('show-measurements-limit', 'SHOW MEASUREMENTS LIMIT 100', 'Grafana: the FROM dropdown');
  add('show-measurements-limit-1', 'SHOW MEASUREMENTS LIMIT 1', 'the smallest page');
  add('show-measurements-regex', 'SHOW MEASUREMENTS WITH MEASUREMENT =~ /oi/ LIMIT 100', 'Grafana: the FROM dropdown while typing');
  add('show-tag-keys', 'SHOW TAG KEYS', 'every measurement\'s tag keys (ambient has none)');
  add('show-tag-keys-from', 'SHOW TAG KEYS FROM "cpu"', 'Grafana: the WHERE and GROUP BY tag dropdown');
  add('show-tag-keys-from-rp', 'SHOW TAG KEYS FROM "autogen"."cpu"', 'Grafana with a retention policy chosen');
  add('show-tag-values', 'SHOW TAG VALUES FROM "cpu" WITH KEY = "host"', 'Grafana: the tag value dropdown');
  add('show-tag-values-all', 'SHOW TAG VALUES WITH KEY = "host"', 'no FROM');
  add('show-tag-values-in', 'SHOW TAG VALUES FROM "cpu" WITH KEY IN ("host", "region")', 'several keys');
  add('show-tag-values-regex', 'SHOW TAG VALUES FROM "cpu" WITH KEY =~ /reg/', 'keys by regex');
  add('show-tag-values-where', 'SHOW TAG VALUES FROM "cpu" WITH KEY = "host" WHERE "region" = \'eu\'', 'Grafana: the value dropdown of a second condition sends the others as WHERE');
  add('show-tag-values-none', 'SHOW TAG VALUES FROM "ambient" WITH KEY = "host"', 'a measurement without the key: no series');
  add('show-field-keys', 'SHOW FIELD KEYS', 'every measurement\'s fields and types (integer, boolean, float)', { differs: BOOLEANS });
  add('show-field-keys-from', 'SHOW FIELD KEYS FROM "cpu"', 'Grafana: the SELECT field dropdown');
  add('show-series', 'SHOW SERIES', 'every series key');
  add('show-series-from', 'SHOW SERIES FROM "boiler"', 'one measurement');
  add('show-series-limit', 'SHOW SERIES FROM "cpu" LIMIT 2', 'a page of series');
  add('show-rp-on', `SHOW RETENTION POLICIES ON "${db}"`, 'Grafana\'s older health check and the CLI');
  add('show-rp', 'SHOW RETENTION POLICIES', 'the db parameter names the database');
  add('show-two', 'SHOW MEASUREMENTS; SHOW TAG KEYS FROM "boiler"', 'two SHOW statements in one request');

  // ---- Grafana's query editor --------------------------------------------------------------------
  add('grafana-panel', `SELECT mean("usage_user") FROM "cpu" WHERE ("host" =~ /^a$/) AND ${tw(grafana).replace(' AND ', ' and ')} GROUP BY time(10s), "host" fill(null)`,
    'a dashboard panel: $timeFilter in epoch ms, epoch=ms', { epoch: 'ms', form: 'POST grafana' });
  add('grafana-panel-1m', `SELECT mean("usage_user") FROM "cpu" WHERE ("host" =~ /^(a|c)$/) AND ${tw(grafana)} GROUP BY time(1m), "host" fill(null)`,
    'two hosts, host c ends before the window does (empty trailing buckets)', { epoch: 'ms', form: 'GET' });
  add('grafana-panel-rfc', `SELECT mean("usage_user") FROM "cpu" WHERE ("host" =~ /^a$/) AND ${twRfc(grafana)} GROUP BY time(10m), "host" fill(null)`, 'RFC 3339 bounds and times');
  add('grafana-relative-6h', `SELECT mean("usage_user") FROM "cpu" WHERE ("host" =~ /^a$/) AND time >= now() - 6h GROUP BY time(10s), "host" fill(null)`,
    'the editor\'s default query for "last 6 hours", as the issue quotes it', { epoch: 'ms', dependsOnNow: true });
  add('grafana-relative-7h-none', `SELECT mean("usage_user") FROM "cpu" WHERE ("host" =~ /^a$/) AND time >= now() - 7h GROUP BY time(10s), "host" fill(none)`,
    'now()-relative with every point inside and no empty buckets: stable', { epoch: 'ms' });
  add('grafana-two-fields', `SELECT mean("usage_user") AS "user", mean("usage_system") AS "system" FROM "cpu" WHERE ${tw(grafana)} GROUP BY time(15m) fill(null)`, 'aliases, all hosts together');
  add('grafana-raw', `SELECT "usage_user" FROM "autogen"."cpu" WHERE ("host" = 'b') AND ${tw(raw)}`, 'raw values, the editor with a retention policy', { epoch: 'ms' });

  // ---- now()-relative, stable ----------------------------------------------------------------------
  // (Without GROUP BY time an aggregate reports the window start, now() - 1d to the nanosecond: not stable. Per day it is.)
  add('now-count', 'SELECT count("usage_user") FROM "cpu" WHERE time > now() - 1d GROUP BY time(1d), "host" fill(none)', 'every point counted, per host and day');
  add('now-last', 'SELECT last("temp") FROM "boiler" WHERE time >= now() - 12h GROUP BY "line"', 'the last value and its time');
  add('now-max-1h', 'SELECT max("temp") FROM "boiler" WHERE time >= now() - 4h GROUP BY time(1h) fill(none)', 'hourly buckets, none empty');
  add('now-raw-desc', 'SELECT * FROM "pump" WHERE time > now() - 1h ORDER BY time DESC LIMIT 3', 'the newest raw points', { differs: BOOLEANS });
  add('now-raw-desc-numbers', 'SELECT "starts" FROM "pump" WHERE time > now() - 1h ORDER BY time DESC LIMIT 3', 'the newest raw points of a number field', { dependsOnNow: true });

  // ---- every function, per 5 minutes and line, over a window that is not bucket-aligned ------------
  for (const fn of ['mean', 'median', 'min', 'max', 'sum', 'count', 'first', 'last', 'spread', 'stddev']) {
    add(`fn-${fn}`, `SELECT ${fn}("temp") FROM "boiler" WHERE ${tw(w1)} GROUP BY time(5m), "line"`, `${fn} per bucket, line B with a gap`);
  }
  add('fn-percentile', `SELECT percentile("temp", 90) FROM "boiler" WHERE ${tw(w1)} GROUP BY time(5m), "line"`, 'percentile per bucket');
  add('fn-percentile-50', `SELECT percentile("pressure", 50) FROM "boiler" WHERE "line" = 'A' AND ${tw(w1)} GROUP BY time(7m)`, 'percentile 50 against median, 7 m buckets');
  // Without GROUP BY time: the time a selector reports is its point's, an aggregate's the window start.
  for (const fn of ['mean', 'median', 'min', 'max', 'sum', 'count', 'first', 'last', 'spread', 'stddev']) {
    add(`whole-${fn}`, `SELECT ${fn}("usage_user") FROM "cpu" WHERE ${tw(grafana)} GROUP BY "host"`, `${fn} over the window, per host: which time it reports`);
  }
  add('whole-percentile', `SELECT percentile("usage_user", 25) FROM "cpu" WHERE ${tw(grafana)} GROUP BY "host"`, 'percentile over the window', {
    differs: 'of equal values, the point whose time percentile() reports differs: influxd sorts with Go\'s unstable sort; the value is the same',
  });
  add('whole-selectors', `SELECT min("temp"), max("temp") FROM "boiler" WHERE ${tw(w1)} GROUP BY "line"`, 'two selectors together: the time becomes the window start');
  add('whole-mixed', `SELECT mean("temp"), last("temp"), count("temp") FROM "boiler" WHERE ${tw(w1)}`, 'aggregates and a selector, both lines together');
  add('integer-aggregates', `SELECT mean("starts"), sum("starts"), spread("starts"), max("starts") FROM "pump" WHERE ${whole} GROUP BY "id"`, 'an integer field: mean is a float, sum an integer');
  add('boolean-selectors', `SELECT count("running"), first("running"), last("running") FROM "pump" WHERE ${whole} GROUP BY "id"`, 'a boolean field', { differs: BOOLEANS });

  // ---- derivative, non_negative_derivative, difference ---------------------------------------------
  add('derivative-raw', `SELECT derivative("usage_user") FROM "cpu" WHERE "host" = 'a' AND ${tw(raw)}`, 'per second (the default unit) over raw points');
  add('derivative-raw-unit', `SELECT derivative("usage_user", 1m) FROM "cpu" WHERE "host" = 'a' AND ${tw(raw)}`, 'per minute');
  add('derivative-mean', `SELECT derivative(mean("temp"), 1m) FROM "boiler" WHERE ${tw(w1)} GROUP BY time(1m), "line"`, 'over an aggregate; line B\'s empty buckets');
  add('nnd-raw', `SELECT non_negative_derivative("starts") FROM "pump" WHERE "id" = 'p1' AND ${whole}`, 'a counter with a reset (the negative step is left out)');
  add('nnd-max', `SELECT non_negative_derivative(max("starts"), 1h) FROM "pump" WHERE ${whole} GROUP BY time(10m), "id"`, 'over max per bucket; p2 has a 1 h gap');
  add('difference-raw', `SELECT difference("temp") FROM "boiler" WHERE "line" = 'B' AND time >= ${ms(gap.fromMs - 3 * SECOND)} AND time <= ${ms(gap.toMs + 3 * SECOND)}`, 'across line B\'s gap');
  add('difference-mean', `SELECT difference(mean("usage_system")) FROM "cpu" WHERE ${tw(grafana)} GROUP BY time(10m), "host"`, 'over an aggregate');
  add('difference-int', `SELECT difference("starts") FROM "pump" WHERE "id" = 'p1' AND ${whole} AND "starts" < 5`, 'integers after the reset (a field condition)');

  // ---- fill ------------------------------------------------------------------------------------------
  const fillWindow = `"line" = 'B' AND time >= ${ms(gap.fromMs - 2 * MINUTE - 30 * SECOND)} AND time <= ${ms(gap.toMs + 90 * SECOND)}`;
  for (const [id, fill] of [['default', ''], ['null', ' fill(null)'], ['none', ' fill(none)'], ['previous', ' fill(previous)'], ['linear', ' fill(linear)'], ['zero', ' fill(0)'], ['number', ' fill(-1.5)']]) {
    add(`fill-${id}`, `SELECT mean("temp") FROM "boiler" WHERE ${fillWindow} GROUP BY time(1m)${fill}`, `fill ${id || 'default'} over line B's 10-minute gap`);
  }
  for (const [id, fill] of [['null', 'fill(null)'], ['previous', 'fill(previous)'], ['linear', 'fill(linear)'], ['zero', 'fill(0)']]) {
    add(`edge-${id}`, `SELECT max("pressure") FROM "boiler" WHERE ${tw(edge)} GROUP BY time(2m), "line" ${fill}`, `${fill} with empty buckets before the first point`);
  }
  add('fill-int', `SELECT max("starts") FROM "pump" WHERE "id" = 'p2' AND time >= ${ms(E - 2 * HOUR - 10 * MINUTE)} AND time <= ${ms(E - HOUR + 10 * MINUTE)} GROUP BY time(10m) fill(previous)`, 'fill(previous) of an integer over p2\'s gap');

  // ---- GROUP BY forms, tz ------------------------------------------------------------------------------
  add('group-offset', `SELECT mean("usage_user") FROM "cpu" WHERE ${tw(grafana)} GROUP BY time(1h, 15m), "host"`, 'buckets with an offset');
  add('group-offset-neg', `SELECT count("temp") FROM "boiler" WHERE ${tw(w1)} GROUP BY time(10m, -3m)`, 'a negative offset');
  add('group-star', `SELECT max("usage_system") FROM "cpu" WHERE ${tw(grafana)} GROUP BY time(30m), *`, 'GROUP BY * (every tag)');
  add('group-tags-raw', `SELECT "usage_user" FROM "cpu" WHERE ${tw(raw)} GROUP BY "host"`, 'raw points per host');
  add('group-two-tags', `SELECT last("usage_user") FROM "cpu" WHERE ${tw(grafana)} GROUP BY "region", "host"`, 'two tag keys');
  add('tz-utc', `SELECT mean("temp") FROM "boiler" WHERE ${tw(w1)} GROUP BY time(10m) tz('UTC')`, 'tz(\'UTC\')');
  add('tz-utc-raw', `SELECT "temp" FROM "ambient" WHERE ${tw(raw)} tz('UTC')`, 'tz on raw points');

  // ---- raw SELECT, *, WHERE forms ----------------------------------------------------------------------
  add('raw-star', `SELECT * FROM "cpu" WHERE ${tw(raw)}`, 'every field and tag as columns');
  add('raw-star-pump', `SELECT * FROM "pump" WHERE ${tw(pumpRaw)}`, 'integers, booleans, times 250 ms after the second', { differs: BOOLEANS });
  add('raw-numbers-pump', `SELECT "starts" FROM "pump" WHERE ${tw(pumpRaw)}`, 'integers, times 250 ms after the second');
  add('raw-no-tags', `SELECT "temp" FROM "ambient" WHERE ${tw(raw)}`, 'a measurement without tags');
  add('raw-tag-column', `SELECT "usage_user", "host" FROM "cpu" WHERE ${tw(raw)}`, 'a tag selected as a column');
  add('where-rfc3339', `SELECT "temp" FROM "boiler" WHERE "line" = 'A' AND time >= ${rfc(raw.from)} AND time < ${rfc(raw.from + 20 * SECOND)}`, 'RFC 3339 bounds, the upper exclusive');
  add('where-s', `SELECT "temp" FROM "boiler" WHERE "line" = 'A' AND time >= ${Math.floor(raw.from / 1000)}s AND time <= ${Math.floor(raw.from / 1000) + 10}s`, 'epoch seconds');
  add('where-u', `SELECT "temp" FROM "boiler" WHERE "line" = 'A' AND time >= ${raw.from}000u AND time <= ${raw.from + 10 * SECOND}000u`, 'epoch microseconds');
  add('where-ns', `SELECT "temp" FROM "boiler" WHERE "line" = 'A' AND time >= ${raw.from}000000 AND time <= ${raw.from + 10 * SECOND}000000`, 'epoch nanoseconds without a unit');
  add('where-ne', `SELECT max("usage_user") FROM "cpu" WHERE "host" != 'a' AND ${tw(grafana)} GROUP BY "host"`, 'tag !=');
  add('where-not-regex', `SELECT max("usage_user") FROM "cpu" WHERE "host" !~ /^(a|b)$/ AND ${tw(grafana)} GROUP BY "host"`, 'tag !~');
  add('where-or', `SELECT count("usage_user") FROM "cpu" WHERE ("host" = 'a' OR "host" = 'c') AND ${tw(grafana)} GROUP BY "host"`, 'OR in parentheses');
  add('where-field', `SELECT "usage_user" FROM "cpu" WHERE "usage_user" > 75 AND ${tw(raw)}`, 'a field condition on raw points');
  add('where-field-agg', `SELECT count("temp") FROM "boiler" WHERE "temp" >= 77 AND "temp" < 78 AND ${tw(w1)} GROUP BY time(10m), "line" fill(0)`, 'field conditions under an aggregate; line B has no such value, so no series even with fill(0)');
  add('where-bool', `SELECT count("starts") FROM "pump" WHERE "running" = true AND ${whole} GROUP BY "id"`, 'a boolean field condition');

  // ---- FROM forms ----------------------------------------------------------------------------------------
  add('from-regex', `SELECT mean("temp") FROM /^(boiler|ambient)$/ WHERE ${tw(w1)} GROUP BY time(10m)`, 'FROM /regex/: one series per measurement');
  add('from-two', `SELECT max("temp") FROM "boiler", "ambient" WHERE ${tw(w1)}`, 'two measurements');
  add('from-qualified', `SELECT mean("temp") FROM "${db}"."autogen"."boiler" WHERE ${tw(w1)} GROUP BY "line"`, '"db"."rp"."measurement"');
  add('from-db-default-rp', `SELECT mean("temp") FROM "${db}".."boiler" WHERE ${tw(w1)}`, '"db".."measurement" (the default policy)');

  // ---- math ------------------------------------------------------------------------------------------------
  add('math-raw', `SELECT "usage_user" * 2 + 1 FROM "cpu" WHERE "host" = 'c' AND ${tw(raw)}`, 'arithmetic on raw values');
  add('math-agg', `SELECT mean("usage_user") / 100 FROM "cpu" WHERE ${tw(grafana)} GROUP BY time(20m), "host"`, 'arithmetic on an aggregate');
  add('math-paren', `SELECT (max("temp") - min("temp")) * 1.8 AS "spread_f" FROM "boiler" WHERE ${tw(w1)} GROUP BY time(10m), "line"`, 'two aggregates, parentheses, an alias');
  add('math-fields', `SELECT "usage_user" + "usage_system" AS "busy" FROM "cpu" WHERE "host" = 'a' AND ${tw(raw)}`, 'two fields added');

  // ---- ordering and paging -----------------------------------------------------------------------------------
  add('desc-limit', `SELECT "temp" FROM "boiler" WHERE "line" = 'A' AND ${tw(raw)} ORDER BY time DESC LIMIT 5`, 'the newest five');
  add('desc-limit-offset', `SELECT "temp" FROM "boiler" WHERE "line" = 'A' AND ${tw(raw)} ORDER BY time DESC LIMIT 5 OFFSET 3`, 'DESC with OFFSET');
  add('limit-offset', `SELECT "usage_user" FROM "cpu" WHERE ${tw(raw)} GROUP BY "host" LIMIT 3 OFFSET 2`, 'LIMIT and OFFSET per series');
  add('desc-buckets', `SELECT mean("temp") FROM "boiler" WHERE ${tw(w1)} GROUP BY time(5m), "line" ORDER BY time DESC LIMIT 4`, 'buckets newest first');
  add('slimit', `SELECT mean("usage_user") FROM "cpu" WHERE ${tw(grafana)} GROUP BY time(30m), "host" SLIMIT 2`, 'the first two series');
  add('slimit-soffset', `SELECT mean("usage_user") FROM "cpu" WHERE ${tw(grafana)} GROUP BY time(30m), "host" SLIMIT 1 SOFFSET 1`, 'the second series');
  add('limit-buckets', `SELECT max("temp") FROM "boiler" WHERE ${tw(w1)} GROUP BY time(1m), "line" fill(none) LIMIT 2 OFFSET 1`, 'LIMIT on buckets');

  // ---- epoch ----------------------------------------------------------------------------------------------------
  for (const epoch of ['ns', 'u', 'µ', 'ms', 's', 'm', 'h']) {
    add(`epoch-${epoch === 'µ' ? 'mu' : epoch}`, `SELECT "starts" FROM "pump" WHERE "id" = 'p1' AND ${tw(pumpRaw)}`, `epoch=${epoch}: times 250 ms after the second, rounded down`, {
      epoch,
      // influxd 1.6 answers an epoch it does not know (µ among them, also when sent as u's UTF-8 twin) in ns; WIRE.md lists µ as microseconds.
      ...(epoch === 'µ' ? { differs: 'epoch=µ is microseconds (WIRE.md); influxd 1.6 does not know µ and answers ns' } : {}),
    });
  }
  add('epoch-none', `SELECT "starts" FROM "pump" WHERE "id" = 'p1' AND ${tw(pumpRaw)}`, 'RFC 3339 with fractional seconds');
  add('epoch-buckets-s', `SELECT mean("temp") FROM "boiler" WHERE ${tw(w1)} GROUP BY time(10m), "line"`, 'bucket times in seconds', { epoch: 's' });

  // ---- several statements, errors, edge answers ----------------------------------------------------------------
  add('multi', `SELECT mean("usage_user") FROM "cpu" WHERE ${tw(grafana)} GROUP BY "host"; SELECT max("temp") FROM "boiler" WHERE ${tw(w1)}; SHOW MEASUREMENTS`, 'three statements, three results in order');
  add('multi-error', `SELECT mean("usage_user") FROM "cpu" WHERE ${tw(grafana)}; SELECT mean("temp") FROM "nothere" WHERE ${tw(w1)}`, 'a statement with no series beside one with');
  add('unknown-measurement', `SELECT mean("temp") FROM "nothere" WHERE ${tw(w1)}`, 'no series: a result with only statement_id');
  add('unknown-field', `SELECT "nope" FROM "cpu" WHERE ${tw(raw)}`, 'an unknown field: no series');
  add('db-not-found', 'SHOW MEASUREMENTS', 'a database that does not exist', {
    db: 'no-such-db',
    differs: 'WIRE.md: a db the caller cannot see (or that does not exist) is "database not found" on every statement; influxd 1.6 answers SHOW MEASUREMENTS of a missing database with no series',
  });
  add('select-db-not-found', `SELECT mean("temp") FROM "boiler" WHERE ${tw(w1)}`, 'SELECT from a database that does not exist', { db: 'no-such-db' });
  add('parse-error', 'SELECT FROM "cpu"', 'a malformed query: 400 with the position');
  add('parse-error-where', `SELECT mean("temp") FROM "boiler" WHERE time >`, 'a malformed condition');
  return out;
}
