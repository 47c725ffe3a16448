/**
 * Our service alone: ingest (JSON and HSW1 over /write_fast, JSON over the
 * fsyncing /write), raw range queries (JSON, binary, msgpack, format 2, CSV),
 * a CSV export of the whole data set in one request with the server's RSS
 * meanwhile, bytes on disk before and after sealing, small-range and lastlist
 * request rates, main-thread responsiveness during ingest, and peak RSS.
 * Prints one markdown table.
 *
 *   npm run bench:ingest -- [--tags 100] [--points 86400] [--connections 4]
 *                           [--tags-per-request 10] [--points-per-request 1000]
 *                           [--seconds 5] [--quick] [--keep] [--wait-idle 120]
 *
 * --quick is 10 tags × 8,640 points with 2 s rate loops; --keep leaves the data dir;
 * --wait-idle waits up to that many seconds for other processes to go quiet first.
 */

import { Dataset } from './dataset.js';
import {
  createCollection,
  ingestOurs,
  lastlistQueries,
  aggregatedQuery,
  rawQueryBinary,
  rawQueryCsv,
  rawQueryJson,
  rawQueryMsgpack,
  rawQueryOptimised,
  sealAndMeasure,
  scopeFor,
  smallRangeQueries,
  withHealthProbe,
  collectionDir,
  csvExport,
} from './ours.js';
import { commandLine, describeRounds, int, machine, markdownTable, mib, ms, num, otherLoad, Phases, sizeOptions, type IngestResult, type RateResult, type RawQueryResult } from './runner.js';
import { diskUsage, startOurService, waitForQuiet, type DiskUsage } from './service.js';

const { sizes } = sizeOptions();
const { connections } = sizes;
const dataset = new Dataset(sizes);
// The fsync path gets a slice (at most 10 tags) so the run stays short.
const syncDataset = new Dataset({ ...sizes, tags: Math.min(10, sizes.tags) });
const jsonScope = scopeFor('boiler-json');
const binaryScope = scopeFor('boiler-hsw1');
const syncScope = scopeFor('boiler-sync');

const rows: string[][] = [];
const phases = new Phases();
const shape = (d: Dataset) => `${int(d.options.tags)} tags × ${int(d.options.points)} points`;

await waitForQuiet(sizes.waitIdle);
process.stderr.write(`starting the service; data set ${shape(dataset)} = ${int(dataset.totalPoints)} points, ${connections} connections\n`);
const service = await startOurService({});
const client = service.client(connections);
const admin = service.client(1);

const ingestRow = (label: string, r: IngestResult | null, d: Dataset) =>
  rows.push([
    label,
    r ? `${int(r.pointsPerSecond)} points/s` : 'FAILED',
    r ? `${shape(d)} in ${num(r.seconds)} s; ${int(r.requests)} requests, ${mib(r.bytesSent)} sent, ${r.retries} retried (503); client encode ${num(r.encodeMs / 1000)} s ${r.encodeWhileSending ? 'inside' : 'before'} the clock${otherLoad(r.otherCores)}` : '',
  ]);
/** `null`: the phase failed (see Failures); 'absent': the route answered 404. */
const queryRow = (label: string, r: RawQueryResult | 'absent' | null, d: Dataset) => {
  if (r === null) return rows.push([label, 'FAILED', '']);
  if (r === 'absent') return rows.push([label, 'n/a', 'route answered 404']);
  const short = r.points === d.totalPoints ? '' : ` — expected ${int(d.totalPoints)} points!`;
  if (short) phases.failures.push({ phase: label, error: new Error(`returned ${r.points} points, expected ${d.totalPoints}`) });
  rows.push([label, `${int(r.pointsPerSecond)} points/s`, `${int(r.points)} points, ${r.requests} requests (1 tag, whole range each) in ${num(r.seconds)} s${describeRounds(r)}, ${mib(r.bytesReceived)} received${short}${otherLoad(r.otherCores)}`]);
};
const diskRow = (label: string, disk: DiskUsage | null, points: number) =>
  rows.push([label, disk ? `${num(disk.bytes / points)} bytes/point` : 'FAILED', disk ? `${int(disk.bytes)} bytes in ${disk.files} files (allocated ${num(disk.allocated / points)} bytes/point)` : '']);
const rateRow = (label: string, r: RateResult | null) =>
  rows.push([label, r ? `${int(r.perSecond)} requests/s` : 'FAILED', r ? `p50 ${ms(r.p50)}, p99 ${ms(r.p99)}, max ${ms(r.max)}; ${int(r.requests)} requests in ${num(r.seconds)} s${otherLoad(r.otherCores)}` : '']);

await phases.run('create collections', async () => {
  for (const scope of [jsonScope, binaryScope, syncScope]) await createCollection(admin, scope);
});

process.stderr.write('ingest: tag-keyed JSON over /svcapi/write_fast\n');
const jsonIngest = await phases.run('ingest JSON /write_fast', () =>
  withHealthProbe(service, () => ingestOurs({ label: 'JSON write_fast', client, connections, dataset, scope: jsonScope, encoding: 'json', encodeWhileSending: sizes.encodeWhileSending })),
);
ingestRow('ingest, tag-keyed JSON, /svcapi/write_fast', jsonIngest?.result ?? null, dataset);
if (jsonIngest) {
  const h = jsonIngest.health;
  rows.push([
    '/ingest/health latency during JSON ingest',
    `p50 ${ms(h.p50)}, p99 ${ms(h.p99)}`,
    `max ${ms(h.max)}; ${int(h.samples)} probes, one every 10 ms on its own connection${h.failures.length ? `; ${h.failures.length} failed: ${h.failures[0]}` : ''}`,
  ]);
}
diskRow('disk, JSON collection, before seal', await phases.run('disk before seal', async () => diskUsage(collectionDir(service, jsonScope))), dataset.totalPoints);

process.stderr.write('ingest: HSW1 binary over /svcapi/write_fast\n');
const binaryIngest = await phases.run('ingest HSW1 /write_fast', () => ingestOurs({ label: 'HSW1 write_fast', client, connections, dataset, scope: binaryScope, encoding: 'hsw1', encodeWhileSending: sizes.encodeWhileSending }));
ingestRow('ingest, HSW1 binary, /svcapi/write_fast', binaryIngest, dataset);

process.stderr.write('ingest: tag-keyed JSON over /svcapi/write (fsync)\n');
const syncIngest = await phases.run('ingest JSON /write', () =>
  ingestOurs({ label: 'JSON write (fsync)', client, connections, dataset: syncDataset, scope: syncScope, encoding: 'json', route: '/svcapi/write', encodeWhileSending: sizes.encodeWhileSending }),
);
ingestRow('ingest, tag-keyed JSON, /svcapi/write (fsync)', syncIngest, syncDataset);

process.stderr.write('raw range queries, active day\n');
queryRow('raw range query, JSON fast_query, active day', await phases.run('raw query JSON (active)', () => rawQueryJson('fast_query active', client, sizes, dataset, jsonScope)), dataset);
queryRow('raw range query, binary fast_query_binary, active day', await phases.run('raw query binary (active)', () => rawQueryBinary('fast_query_binary active', client, sizes, dataset, jsonScope)), dataset);

rateRow('1-minute range queries, active day (1 tag, 60 points, JSON)', await phases.run('small-range queries (active)', () => smallRangeQueries('1-minute queries active', client, connections, sizes.seconds, dataset, jsonScope)));

process.stderr.write('seal_now\n');
const sealed = await phases.run('seal_now', () => sealAndMeasure(admin, service, jsonScope));
diskRow(`disk, JSON collection, after seal_now (it sealed ${sealed?.sealedDays ?? '?'} day files in all collections)`, sealed?.disk ?? null, dataset.totalPoints);

process.stderr.write('raw range queries, sealed day\n');
queryRow('raw range query, JSON fast_query, sealed day', await phases.run('raw query JSON (sealed)', () => rawQueryJson('fast_query sealed', client, sizes, dataset, jsonScope)), dataset);
queryRow('raw range query, msgpack fast_query, sealed day', await phases.run('raw query msgpack (sealed)', () => rawQueryMsgpack('fast_query msgpack sealed', client, sizes, dataset, jsonScope)), dataset);
queryRow('raw range query, format 2 fast_query_optimised, sealed day', await phases.run('raw query format 2 (sealed)', () => rawQueryOptimised('fast_query_optimised sealed', client, sizes, dataset, jsonScope)), dataset);
queryRow('one-step aggregation (avg per minute), raw points in, sealed day', await phases.run('aggregation (sealed)', () => aggregatedQuery('avg 1 min sealed', client, sizes, dataset, jsonScope)), dataset);
queryRow('raw range query, binary fast_query_binary, sealed day', await phases.run('raw query binary (sealed)', () => rawQueryBinary('fast_query_binary sealed', client, sizes, dataset, jsonScope)), dataset);
queryRow('raw range query, CSV fast_query (format=csv), sealed day', await phases.run('raw query CSV (sealed)', () => rawQueryCsv('fast_query csv sealed', client, sizes, dataset, jsonScope)), dataset);

process.stderr.write('CSV export of the whole data set in one request\n');
const exported = await phases.run('CSV export (one request)', () => csvExport(service, dataset, jsonScope));
if (exported && exported.points !== dataset.totalPoints) phases.failures.push({ phase: 'CSV export', error: new Error(`exported ${exported.points} points, expected ${dataset.totalPoints}`) });
rows.push([
  `CSV export, every tag in one request (${int(dataset.totalPoints)} points), sealed day`,
  exported ? `${int(exported.pointsPerSecond)} points/s` : 'FAILED',
  exported ? `${int(exported.points)} rows, ${mib(exported.bytes)} in ${num(exported.seconds)} s, read as it streams; server RSS ${mib(exported.rssBeforeBytes)} before, at most ${mib(exported.rssPeakBytes)} during (VmRSS every 20 ms)${otherLoad(exported.otherCores)}` : '',
]);

rateRow('1-minute range queries, sealed day (1 tag, 60 points, JSON)', await phases.run('small-range queries (sealed)', () => smallRangeQueries('1-minute queries sealed', client, connections, sizes.seconds, dataset, jsonScope)));
rateRow('lastlist, 10 tags (JSON collection)', await phases.run('lastlist', () => lastlistQueries('lastlist', client, connections, sizes.seconds, dataset, jsonScope)));

const peak = service.process.peakRssBytes();
rows.push(['peak RSS of the service (VmHWM)', mib(peak), 'main thread + every storage worker, whole run']);
const stopStart = performance.now();
const exit = await service.stop();
rows.push(['shutdown (SIGTERM)', exit.code === 0 ? 'exit 0' : `exit ${exit.code ?? exit.signal}`, `${num(performance.now() - stopStart, 0)} ms`]);
if (exit.code !== 0) phases.failures.push({ phase: 'shutdown', error: new Error(`service exited with ${exit.code ?? exit.signal}`) });

console.log(`# Ingest and query: our service\n`);
console.log(`\`${commandLine()}\`\n`);
console.log(`${machine()}; data set ${shape(dataset)} at 1 s (${int(dataset.totalPoints)} points), ${sizes.tagsPerRequest} tags × ${sizes.pointsPerRequest} points per request, ${connections} connections, default settings (storage.shards = one per core)\n`);
console.log(markdownTable(['figure', 'value', 'detail'], rows));
console.log(phases.report(() => service.process.logTail(30)));

if (sizes.keep) process.stderr.write(`data dir kept: ${service.dataDir}\n`);
else await service.dispose();
process.exitCode = phases.failures.length > 0 ? 1 : 0;
