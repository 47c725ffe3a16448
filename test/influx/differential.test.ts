// The differential test of the InfluxDB 1.x API (issue 28): the same generated points
// (dataset.ts) written through `/write` to Debian's influxd, the reference, and to the service
// (the root `/write` with an API key, db = an ingest client id), then every statement of the
// corpus (corpus.ts) asked of both `/query` endpoints, GET or POST form as the corpus says, and
// the JSON answers compared field by field (compare.ts: floats to 1e-9 relative).
//
// Skipped when influxd is not installed. First the write path is compared: every point of every
// series, read back from both. A statement the service answers differently on purpose has its
// reason in the corpus (`differs`): its differences are reported as a diagnostic, not a failure.

import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { Influxd, influxdSkip } from '../support/influxd.js';
import { compareHttpAnswers, formatDifferences, type QueryAnswer } from './compare.js';
import { makeCorpus, type CorpusEntry } from './corpus.js';
import { makeDataset, type Dataset } from './dataset.js';
import { PLANT, startOurService, type OurService } from './our-service.js';

/** The Influx database on both sides: on ours, the ingest client id. */
const DB = 'plant';

describe('InfluxDB 1.x API: the service against influxd', { skip: influxdSkip }, () => {
  let influxd: Influxd;
  let ours: OurService;
  let ds: Dataset;

  before(async () => {
    ds = makeDataset();
    const [reference, service] = await Promise.allSettled([Influxd.start(), startOurService(DB)]);
    if (reference.status === 'fulfilled') influxd = reference.value;
    if (service.status === 'fulfilled') ours = service.value;
    if (reference.status === 'rejected') throw reference.reason;
    if (service.status === 'rejected') throw service.reason;
    await influxd.createDatabase(DB);
    await influxd.write(DB, ds.lines, 'ms');
    await ours.write(DB, ds.lines, 'ms');
  });
  after(async () => {
    await Promise.all([influxd?.stop(), ours?.svc.dispose()]);
  });

  test('the dataset reached both: every point of every series, read back from influxd (SELECT *) and from the service (fast_query)', async () => {
    // influxd: each measurement's points per series, times in ms.
    const expected = new Map<string, Array<[number, number]>>();
    for (const measurement of ['cpu', 'boiler', 'pump', 'ambient']) {
      const res = await influxd.query(`SELECT * FROM "${measurement}" GROUP BY *`, { db: DB, epoch: 'ms' });
      assert.equal(res.status, 200, res.text);
      const series = res.json.results[0].series as Array<{ name: string; tags?: Record<string, string>; columns: string[]; values: unknown[][] }>;
      for (const s of series) {
        const tags = Object.keys(s.tags ?? {}).sort().map((k) => `,${k}=${s.tags![k]}`).join('');
        s.columns.forEach((column, i) => {
          if (column === 'time') return;
          const points = s.values.filter((row) => row[i] !== null).map((row): [number, number] => [row[0] as number, typeof row[i] === 'boolean' ? Number(row[i]) : (row[i] as number)]);
          expected.set(`${s.name}${tags}.${column}`, points);
        });
      }
    }
    assert.equal(expected.size, 15, `15 series and fields in influxd: ${[...expected.keys()].join(' ')}`);
    const total = [...expected.values()].reduce((n, p) => n + p.length, 0);
    const written = ds.points.reduce((n, p) => n + Object.keys(p.fields).length, 0);
    assert.equal(total, written, 'influxd holds every value of the dataset');

    const qs = new URLSearchParams({ start: String(ds.startMs - 60_000), end: String(ds.endMs + 60_000), ...PLANT });
    for (const tag of expected.keys()) qs.append('tags', tag);
    const res = await ours.svc.get(`/svcapi/fast_query?${qs}`, ours.admin);
    assert.equal(res.status, 200, res.text);
    for (const [tag, points] of expected) {
      const got = res.body[tag] as Array<[number, number]> | undefined;
      assert.ok(Array.isArray(got), `the service has ${tag}`);
      assert.equal(got.length, points.length, `${tag}: ${got.length} points in the service, ${points.length} in influxd`);
      const first = points.findIndex(([t, v], i) => got[i][0] !== t || got[i][1] !== v);
      assert.equal(first, -1, first < 0 ? '' : `${tag}: point ${first} is ${JSON.stringify(got[first])} in the service, ${JSON.stringify(points[first])} in influxd`);
    }
  });

  test('the corpus: each statement answered alike by the service and by influxd', async (t) => {
    const corpus = makeCorpus(ds, DB);
    assert.ok(corpus.length > 100, `the corpus has ${corpus.length} statements`);
    for (const entry of corpus) {
      await t.test(`${entry.id}: ${entry.q.length > 120 ? `${entry.q.slice(0, 120)}…` : entry.q}`, async (st) => {
        let diffs = await askBoth(entry);
        // An answer with empty buckets up to now(): asked again when a bucket boundary passed between the two requests.
        if (diffs.length > 0 && entry.dependsOnNow) diffs = await askBoth(entry);
        if (diffs.length === 0) return;
        const text = formatDifferences(diffs, `${entry.id} (${entry.about}), ${entry.form}${entry.epoch ? ` epoch=${entry.epoch}` : ''}:\n  ${entry.q}`);
        if (entry.differs) {
          st.diagnostic(`differs as known (${entry.differs}):\n${text}`);
          return;
        }
        assert.fail(text);
      });
    }
  });

  /** The differences between influxd's answer to `entry` and ours. */
  async function askBoth(entry: CorpusEntry) {
    const opts = { db: entry.db === null ? undefined : entry.db ?? DB, epoch: entry.epoch, form: entry.form };
    const [reference, service] = await Promise.all([influxd.query(entry.q, opts), ours.query(entry.q, opts)]);
    const expected: QueryAnswer = { status: reference.status, json: reference.json, text: reference.text };
    const actual: QueryAnswer = { status: service.status, json: service.body, text: service.text };
    return compareHttpAnswers(expected, actual);
  }
});
