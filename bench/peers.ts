/**
 * Our service side by side with VictoriaMetrics and InfluxDB 1.x, one after
 * the other on the same machine, with the same data set, the same client
 * code, the same number of connections and the same request size.
 *
 *   npm run bench:peers -- [--tags 100] [--points 86400] [--connections 4]
 *                          [--tags-per-request 10] [--points-per-request 1000] [--quick] [--keep]
 *                          [--wait-idle 120] [--dataset plant|noisy]
 *
 * Needs the Debian packages (the script installs nothing):
 *   apt-get install -y victoria-metrics influxdb
 *
 * Every server talks HTTPS with the certificate our service generated, so
 * TLS costs the same everywhere. Each server runs alone: ours is stopped
 * (its data dir kept for the certificate) before VictoriaMetrics starts.
 */

import { Dataset, influxLines, vmImportLines, type Chunk } from './dataset.js';
import { createCollection, ingestOurs, rawQueryBinary, rawQueryJson, sealAndMeasure, scopeFor, withHealthProbe } from './ours.js';
import {
  countInfluxChunk, countLines, describeInfluxCompaction, expectStatus, flushAndMergeVictoriaMetrics, INFLUX_DB, requirePeerBinaries, serviceTls,
  startInfluxDb, startVictoriaMetrics, SystemRuns, waitInfluxCompaction,
} from './peer-servers.js';
import { commandLine, describeRounds, ingest, int, machine, markdownTable, mib, ms, num, rawQuery, sizeOptions, type IngestResult, type RawQueryResult } from './runner.js';
import { diskUsage, startOurService, waitForQuiet, type DiskUsage } from './service.js';

requirePeerBinaries();

const { sizes } = sizeOptions();
const { connections } = sizes;
const dataset = new Dataset(sizes);
const scope = scopeFor('boiler-json');
const runs = new SystemRuns(sizes.waitIdle);
const { phases } = runs;

/** What each system reports; null where its phase failed. */
interface Figures {
  ingest: IngestResult | null;
  query: RawQueryResult | null;
  disk: DiskUsage | null;
  /** How the data was made compact before `disk` was measured, and how long it took. */
  flushNote: string;
  peakRss: number;
  version: string;
  /** TLS cipher suite agreed with the bench client (each system should pay the same for TLS). */
  cipher: string;
}

// ---- ours -----------------------------------------------------------------------------------

process.stderr.write(`data set ${int(dataset.options.tags)} tags × ${int(dataset.options.points)} points = ${int(dataset.totalPoints)} points, ${connections} connections\n`);
process.stderr.write('our service\n');
await waitForQuiet(sizes.waitIdle);
const service = await startOurService({});
const tls = serviceTls(service);
runs.watch('ours', service.process);

const ours = await (async () => {
  const client = service.client(connections);
  const binaryScope = scopeFor('boiler-hsw1');
  await phases.run('ours: create collections', async () => {
    await createCollection(client, scope);
    await createCollection(client, binaryScope);
  });
  const json = await phases.run('ours: ingest JSON', () =>
    withHealthProbe(service, () => ingestOurs({ label: 'ours JSON write_fast', client, connections, dataset, scope, encoding: 'json', encodeWhileSending: sizes.encodeWhileSending })),
  );
  const binary = await phases.run('ours: ingest HSW1', () => ingestOurs({ label: 'ours HSW1 write_fast', client, connections, dataset, scope: binaryScope, encoding: 'hsw1', encodeWhileSending: sizes.encodeWhileSending }));
  const sealStart = performance.now();
  const sealed = await phases.run('ours: seal_now', () => sealAndMeasure(client, service, scope));
  const sealSeconds = (performance.now() - sealStart) / 1000;
  const query = await phases.run('ours: raw query JSON', () => rawQueryJson('ours fast_query', client, sizes, dataset, scope));
  const queryBinary = await phases.run('ours: raw query binary', () => rawQueryBinary('ours fast_query_binary', client, sizes, dataset, scope));
  const figures: Figures = {
    ingest: json?.result ?? null,
    query,
    disk: sealed?.disk ?? null,
    flushNote: `seal_now (both collections), ${num(sealSeconds)} s (JSON collection folder)`,
    peakRss: service.process.peakRssBytes(),
    version: 'this commit',
    cipher: await client.tlsCipher('/ingest/health'),
  };
  const exit = await service.stop();
  if (exit.code !== 0) phases.failures.push({ phase: 'ours: shutdown', error: new Error(`service exited with ${exit.code ?? exit.signal}`) });
  return { figures, binary, queryBinary, health: json?.health ?? null };
})();

// ---- VictoriaMetrics ------------------------------------------------------------------------

const vm = await runPeer('VictoriaMetrics', async () => {
  const server = await startVictoriaMetrics(tls, connections);
  runs.removeAtEnd(...server.paths);
  runs.watch('VictoriaMetrics', server.proc);
  const { client } = server;
  try {
    const ingested = await phases.run('VictoriaMetrics: ingest', () =>
      ingest<Chunk>({
        label: 'VictoriaMetrics /api/v1/import',
        connections,
        chunks: dataset.chunks(),
        totalPoints: dataset.totalPoints,
        encodeWhileSending: sizes.encodeWhileSending,
        encode: (chunk) => ({ bytes: vmImportLines(scope, chunk), points: chunk.points }),
        send: (body) => client.request('POST', '/api/v1/import', body.bytes, { 'content-type': 'application/json' }),
        check: expectStatus('POST /api/v1/import', 204),
      }),
    );
    const flushStart = performance.now();
    const disk = await phases.run('VictoriaMetrics: flush and merge', async () => {
      await flushAndMergeVictoriaMetrics(server);
      return diskUsage(server.dataDir);
    });
    const flushSeconds = (performance.now() - flushStart) / 1000;
    const selector = (tag: string) =>
      `{__name__=${JSON.stringify(tag)},organization=${JSON.stringify(scope.organization)},site=${JSON.stringify(scope.site)},unit=${JSON.stringify(scope.unit)},grid=${JSON.stringify(scope.grid)}}`;
    const seconds = (t: number) => (t / 1000).toFixed(3);
    const query = await phases.run('VictoriaMetrics: raw query', () =>
      rawQuery({
        label: 'VictoriaMetrics /api/v1/export',
        load: sizes,
        tags: dataset.tagNames,
        request: (tag) => client.get(`/api/v1/export?match[]=${encodeURIComponent(selector(tag))}&start=${seconds(dataset.startMs)}&end=${seconds(dataset.endMs)}`),
        // One JSON line per block of a series; a series may span several lines.
        count: (body) => countLines(body, (line) => (JSON.parse(line) as { values: unknown[] }).values.length),
      }),
    );
    const cipher = await client.tlsCipher(server.probePath);
    return { ingest: ingested, query, disk, flushNote: `force_flush + force_merge, ${num(flushSeconds)} s (whole -storageDataPath)`, peakRss: server.proc.peakRssBytes(), version: server.version, cipher };
  } finally {
    await server.stop();
  }
});

// ---- InfluxDB -------------------------------------------------------------------------------

const influx = await runPeer('InfluxDB', async () => {
  const server = await startInfluxDb(tls, connections);
  runs.removeAtEnd(...server.paths);
  runs.watch('InfluxDB', server.proc);
  const { client } = server;
  try {
    const ingested = await phases.run('InfluxDB: ingest', () =>
      ingest<Chunk>({
        label: 'InfluxDB /write',
        connections,
        chunks: dataset.chunks(),
        totalPoints: dataset.totalPoints,
        encodeWhileSending: sizes.encodeWhileSending,
        encode: (chunk) => ({ bytes: influxLines('sensor', scope, chunk), points: chunk.points }),
        send: (body) => client.request('POST', `/write?db=${INFLUX_DB}&precision=ms`, body.bytes, { 'content-type': 'text/plain' }),
        check: expectStatus('POST /write', 204),
      }),
    );
    const compactStart = performance.now();
    const compaction = await phases.run('InfluxDB: compaction', () => waitInfluxCompaction(server.dataDir));
    const compactSeconds = (performance.now() - compactStart) / 1000;
    const where = (tag: string) =>
      `"tag"='${tag}' AND "organization"='${scope.organization}' AND "site"='${scope.site}' AND "unit"='${scope.unit}' AND "grid"='${scope.grid}' AND time >= ${dataset.startMs}ms AND time <= ${dataset.endMs}ms`;
    const query = await phases.run('InfluxDB: raw query', () =>
      rawQuery({
        label: 'InfluxDB /query',
        load: sizes,
        tags: dataset.tagNames,
        request: (tag) => client.get(`/query?db=${INFLUX_DB}&epoch=ms&chunked=true&chunk_size=10000&q=${encodeURIComponent(`SELECT "value" FROM "sensor" WHERE ${where(tag)}`)}`),
        count: (body) => countLines(body, countInfluxChunk),
      }),
    );
    return {
      ingest: ingested,
      query,
      disk: compaction?.disk ?? null,
      flushNote: compaction ? `${describeInfluxCompaction(compaction, compactSeconds)} (data + wal + meta)` : 'compaction wait failed',
      peakRss: server.proc.peakRssBytes(),
      version: server.version,
      cipher: await client.tlsCipher(server.probePath),
    };
  } finally {
    await server.stop();
  }
});

// ---- report ---------------------------------------------------------------------------------

const total = dataset.totalPoints;
const cell = {
  rate: (r: { pointsPerSecond: number } | null | undefined) => (r ? `${int(r.pointsPerSecond)} points/s` : 'FAILED'),
  scan: (r: RawQueryResult | null | undefined) => (r ? `${int(r.pointsPerSecond)} points/s${describeRounds(r)}` : 'FAILED'),
  perPoint: (d: DiskUsage | null | undefined) => (d ? `${num(d.bytes / total)} B/point` : 'FAILED'),
  sent: (r: IngestResult | null | undefined) => (r ? `${num(r.bytesSent / r.points, 1)} B/point` : 'FAILED'),
};
/** ours ÷ VictoriaMetrics; above 1 is better for rates, below 1 for sizes. */
const ratio = (a: number | undefined, b: number | undefined) => (a !== undefined && b !== undefined && b > 0 && Number.isFinite(a) ? `${num(a / b)}×` : 'n/a');
const busy = (f: Figures | undefined) => (f ? `${f.ingest ? num(f.ingest.otherCores, 1) : '?'} / ${f.query ? num(f.query.otherCores, 1) : '?'}` : 'FAILED');
const vmF = vm?.figures;
const inF = influx?.figures;
const o = ours.figures;

const checkCount = (name: string, r: RawQueryResult | null | undefined) => {
  if (r && r.points !== total) phases.failures.push({ phase: `${name}: raw query`, error: new Error(`returned ${r.points} points, expected ${total}`) });
};
checkCount('ours', o.query);
checkCount('ours binary', typeof ours.queryBinary === 'object' ? ours.queryBinary : null);
checkCount('VictoriaMetrics', vmF?.query);
checkCount('InfluxDB', inF?.query);

const binaryQuery = ours.queryBinary === 'absent' ? 'n/a (404)' : cell.scan(ours.queryBinary);
const rows: string[][] = [
  ['ingest (ours: tag-keyed JSON /write_fast; VM: /api/v1/import JSON lines; Influx: line protocol /write)', cell.rate(o.ingest), cell.rate(vmF?.ingest), cell.rate(inF?.ingest), ratio(o.ingest?.pointsPerSecond, vmF?.ingest?.pointsPerSecond)],
  ['ingest, ours HSW1 binary /write_fast (peers: same as above)', cell.rate(ours.binary), cell.rate(vmF?.ingest), cell.rate(inF?.ingest), ratio(ours.binary?.pointsPerSecond, vmF?.ingest?.pointsPerSecond)],
  ['request body size', `${cell.sent(o.ingest)} (HSW1 ${cell.sent(ours.binary)})`, cell.sent(vmF?.ingest), cell.sent(inF?.ingest), ratio(o.ingest ? o.ingest.bytesSent / o.ingest.points : undefined, vmF?.ingest ? vmF.ingest.bytesSent / vmF.ingest.points : undefined)],
  ['raw range query, 1 tag × whole range per request (ours: fast_query JSON; VM: /api/v1/export; Influx: chunked /query)', cell.scan(o.query), cell.scan(vmF?.query), cell.scan(inF?.query), ratio(o.query?.pointsPerSecond, vmF?.query?.pointsPerSecond)],
  ['raw range query, ours binary fast_query_binary (peers: same as above)', binaryQuery, cell.rate(vmF?.query), cell.rate(inF?.query), ratio(typeof ours.queryBinary === 'object' ? ours.queryBinary?.pointsPerSecond : undefined, vmF?.query?.pointsPerSecond)],
  ['bytes on disk per point after flush (file sizes)', cell.perPoint(o.disk), cell.perPoint(vmF?.disk), cell.perPoint(inF?.disk), ratio(o.disk?.bytes, vmF?.disk?.bytes)],
  ['bytes on disk per point after flush (allocated blocks)', o.disk ? `${num(o.disk.allocated / total)} B/point` : 'FAILED', vmF?.disk ? `${num(vmF.disk.allocated / total)} B/point` : 'FAILED', inF?.disk ? `${num(inF.disk.allocated / total)} B/point` : 'FAILED', ratio(o.disk?.allocated, vmF?.disk?.allocated)],
  ['how the data was flushed before measuring', o.flushNote, vmF?.flushNote ?? 'FAILED', inF?.flushNote ?? 'FAILED', ''],
  ['peak RSS (VmHWM), whole run', mib(o.peakRss), vmF ? mib(vmF.peakRss) : 'FAILED', inF ? mib(inF.peakRss) : 'FAILED', ratio(o.peakRss, vmF?.peakRss)],
  ['TLS cipher suite agreed with the bench client', o.cipher, vmF?.cipher ?? 'FAILED', inF?.cipher ?? 'FAILED', ''],
  ['cores other processes kept busy during ingest / raw query', busy(o), busy(vmF), busy(inF), ''],
  ['/ingest/health during our JSON ingest (probe every 10 ms)', ours.health ? `p50 ${ms(ours.health.p50)}, p99 ${ms(ours.health.p99)}, max ${ms(ours.health.max)}` : 'FAILED', '', '', ''],
];

console.log('# Ours vs VictoriaMetrics vs InfluxDB\n');
console.log(`\`${commandLine()}\`\n`);
console.log(`${machine()}`);
console.log(`data set ${sizes.dataset}: ${int(dataset.options.tags)} tags × ${int(dataset.options.points)} points at 1 s (${int(total)} points), ${sizes.tagsPerRequest} tags × ${sizes.pointsPerRequest} points per request, ${connections} keep-alive HTTPS connections, every server on the same TLS certificate`);
console.log(`peers: ${vmF?.version ?? 'VictoriaMetrics (failed)'}; ${inF?.version ?? 'InfluxDB (failed)'}\n`);
console.log(markdownTable(['figure', 'ours', 'VictoriaMetrics', 'InfluxDB', 'ours ÷ VM'], rows));
console.log(
  [
    '',
    'Durability when a write is answered: ours /write_fast = handed to the OS (no fsync); VictoriaMetrics = in its memory buffer',
    '(on disk within about a second, no fsync per request); InfluxDB = WAL appended and fsynced (its default).',
    sizes.encodeWhileSending
      ? 'Ingest figures include the client building each body just before sending it, on the same cores as the server (--encode-while-sending).'
      : 'Every ingest body was built before the clock started (the same for all three); the timed phase is sending, parsing and storing.',
    'InfluxDB preallocates sparse series-file segments, so its file sizes exceed its allocated blocks; the allocated row is the fair one for it.',
    'ours ÷ VM: above 1 is better for rates, below 1 is better for bytes and memory.',
  ].join('\n'),
);
console.log(runs.report());

await runs.finish(sizes.keep, service);

// ---- helpers --------------------------------------------------------------------------------

/** Runs one peer; a failure to start is recorded and the peer's column shows FAILED. */
async function runPeer(name: string, run: () => Promise<Figures>): Promise<{ figures: Figures } | null> {
  const figures = await runs.system(name, run);
  return figures ? { figures } : null;
}
