// Not a test: starts Debian's influxd, writes the dataset, runs the corpus and prints influxd's
// answers, to check that the corpus asks sensible things (answers with series, errors where
// meant). With --self, starts a second influxd with the same points and compares the two with
// compare.ts, as the differential test compares the service: no statement may differ (a
// statement whose answer depends on the second it runs must be marked dependsOnNow).
//
//   node dist/test/influx/run-against-influxd.js [--full] [--self] [id regex]

import { compareHttpAnswers, formatDifferences } from './compare.js';
import { makeCorpus } from './corpus.js';
import { makeDataset } from './dataset.js';
import { Influxd, influxdSkip, type QueryOptions } from '../support/influxd.js';

const DB = 'plant';
const args = process.argv.slice(2);
const full = args.includes('--full');
const self = args.includes('--self');
const only = args.find((a) => !a.startsWith('--'));
const pattern = only ? new RegExp(only) : null;

if (influxdSkip) {
  console.error(influxdSkip);
  process.exit(1);
}
const ds = makeDataset();
const corpus = makeCorpus(ds, DB).filter((e) => !pattern || pattern.test(e.id));
const servers = await Promise.all((self ? [0, 1] : [0]).map(() => Influxd.start()));
let failed = 0;
try {
  for (const server of servers) {
    await server.createDatabase(DB);
    await server.write(DB, ds.lines, 'ms');
  }
  const [server, twin] = servers;
  console.log(`influxd ${server.url}: ${ds.lines.length} lines, ${new Date(ds.startMs).toISOString()} .. ${new Date(ds.endMs).toISOString()}, ${corpus.length} statements\n`);
  for (const entry of corpus) {
    const opts: QueryOptions = { db: entry.db === null ? undefined : entry.db ?? DB, epoch: entry.epoch, form: entry.form };
    if (twin) {
      const ask = () => Promise.all([server.query(entry.q, opts), twin.query(entry.q, opts)]);
      let [a, b] = await ask();
      let diffs = compareHttpAnswers({ ...a }, { ...b }, { names: ['first', 'second'] });
      if (diffs.length > 0 && entry.dependsOnNow) {
        [a, b] = await ask();
        diffs = compareHttpAnswers({ ...a }, { ...b }, { names: ['first', 'second'] });
      }
      if (diffs.length > 0) failed++;
      console.log(diffs.length === 0 ? `same   ${entry.id}` : formatDifferences(diffs, `DIFFERS ${entry.id}: ${entry.q}`));
      continue;
    }
    const res = await server.query(entry.q, opts);
    const results = (res.json?.results ?? []) as Array<{ series?: Array<{ values?: unknown[] }>; error?: string }>;
    const shape = results.map((r) => (r.error ? 'error' : `${r.series?.length ?? 0} series/${(r.series ?? []).reduce((n, s) => n + (s.values?.length ?? 0), 0)} rows`));
    const body = full || res.text.length <= 700 ? res.text.trimEnd() : `${res.text.slice(0, 700)}… (${res.text.length} bytes)`;
    console.log(`== ${entry.id} [${entry.form}${entry.epoch ? ` epoch=${entry.epoch}` : ''}${entry.db !== undefined ? ` db=${entry.db}` : ''}] ${entry.about}\n${entry.q}\n-> ${res.status} ${shape.join('; ')}\n${body}\n`);
  }
} finally {
  await Promise.all(servers.map((s) => s.stop()));
}
if (failed > 0) {
  console.log(`\n${failed} statements differ between two influxd with the same points`);
  process.exitCode = 1;
}
