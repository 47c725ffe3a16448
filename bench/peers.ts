/**
 * Our service side by side with VictoriaMetrics and InfluxDB 1.x, one after
 * the other on the same machine, with the same data set, the same client
 * code, the same number of connections and the same request size.
 *
 *   npm run bench:peers -- [--tags 100] [--points 86400] [--connections 4]
 *                          [--tags-per-request 10] [--points-per-request 1000] [--quick] [--keep]
 *                          [--wait-idle 120]
 *
 * Needs the Debian packages (the script installs nothing):
 *   apt-get install -y victoria-metrics influxdb
 *
 * Every server talks HTTPS with the certificate our service generated, so
 * TLS costs the same everywhere. Each server runs alone: ours is stopped
 * (its data dir kept for the certificate) before VictoriaMetrics starts.
 */

import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { Dataset, influxLines, vmImportLines, type Chunk } from './dataset.js';
import { createCollection, ingestOurs, rawQueryBinary, rawQueryJson, sealAndMeasure, scopeFor, withHealthProbe } from './ours.js';
import { commandLine, describeReply, describeRounds, ingest, int, machine, markdownTable, mib, ms, num, Phases, rawQuery, sizeOptions, sleep, type IngestResult, type RawQueryResult } from './runner.js';
import { diskUsage, freePort, HttpsClient, ServerProcess, startOurService, tempDir, waitForQuiet, type DiskUsage, type Reply } from './service.js';

const VM_BIN = '/usr/bin/victoria-metrics';
const INFLUX_BIN = '/usr/bin/influxd';

const missing = [VM_BIN, INFLUX_BIN].filter((bin) => !fs.existsSync(bin));
if (missing.length > 0) {
  process.stderr.write(`missing ${missing.join(' and ')}; install the peers first:\n  apt-get install -y victoria-metrics influxdb\n`);
  process.exit(1);
}

const { sizes } = sizeOptions();
const { connections } = sizes;
const dataset = new Dataset(sizes);
const scope = scopeFor('boiler-json');
const phases = new Phases();
const logTails = new Map<string, () => string[]>();
/** Temp dirs and files of the peers, removed at the end unless --keep. */
const leftovers: string[] = [];

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
const tls = { crt: path.join(service.dataDir, 'tls', 'server.crt'), key: path.join(service.dataDir, 'tls', 'server.key'), ca: service.ca };
logTails.set('ours', () => service.process.logTail(30));

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
  const dir = tempDir('bench-vm-');
  leftovers.push(dir);
  const port = await freePort();
  const proc = new ServerProcess('victoria-metrics', VM_BIN, [
    `-storageDataPath=${dir}`,
    `-httpListenAddr=127.0.0.1:${port}`,
    '-tls',
    `-tlsCertFile=${tls.crt}`,
    `-tlsKeyFile=${tls.key}`,
    '-retentionPeriod=100y', // the data set is dated 2024-01-01
    '-search.disableCache', // every query reads storage, as ours does
  ]);
  logTails.set('VictoriaMetrics', () => proc.logTail(30));
  const client = new HttpsClient(port, tls.ca, connections);
  try {
    await waitReady(proc, () => client.get('/health'), (r) => r.status === 200);
    const version = packageVersion('victoria-metrics');
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
    // Rows ingested are buffered in memory for about a second: flush, then merge every part.
    const flushStart = performance.now();
    const disk = await phases.run('VictoriaMetrics: flush and merge', async () => {
      expectStatus('GET /internal/force_flush', 200)(await client.get('/internal/force_flush'));
      expectStatus('GET /internal/force_merge', 200)(await client.get('/internal/force_merge'));
      // force_merge only starts a background merge: wait until no merge runs,
      // nothing is pending and the folder has stopped changing.
      let last = -1;
      let steady = 0;
      await waitFor(180, async () => {
        const metrics = (await client.get('/metrics')).body.toString();
        const busy = /^vm_(active_force_merges|active_merges|pending_rows)(\{[^}]*\})? [1-9]/m.test(metrics);
        const bytes = diskUsage(dir).bytes;
        steady = !busy && bytes === last ? steady + 1 : 0;
        last = bytes;
        return steady >= 3;
      });
      return diskUsage(dir);
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
    const cipher = await client.tlsCipher('/health');
    return { ingest: ingested, query, disk, flushNote: `force_flush + force_merge, ${num(flushSeconds)} s (whole -storageDataPath)`, peakRss: proc.peakRssBytes(), version, cipher };
  } finally {
    client.close();
    await proc.stop();
  }
});

// ---- InfluxDB -------------------------------------------------------------------------------

const influx = await runPeer('InfluxDB', async () => {
  const dir = tempDir('bench-influx-');
  const port = await freePort();
  const rpcPort = await freePort();
  const configFile = `${dir}.conf`;
  leftovers.push(dir, configFile);
  // Defaults except: our own dirs and ports, HTTPS, no telemetry or self
  // monitoring (it would add its own data), and short "cold" delays so the
  // cache is snapshotted and fully compacted within seconds of the ingest
  // instead of after 10 minutes and 4 hours.
  fs.writeFileSync(
    configFile,
    [
      'reporting-enabled = false',
      `bind-address = "127.0.0.1:${rpcPort}"`,
      '[meta]',
      `  dir = "${dir}/meta"`,
      '  logging-enabled = false',
      '[data]',
      `  dir = "${dir}/data"`,
      `  wal-dir = "${dir}/wal"`,
      '  query-log-enabled = false',
      '  cache-snapshot-write-cold-duration = "2s"',
      '  compact-full-write-cold-duration = "5s"',
      '[monitor]',
      '  store-enabled = false',
      '[continuous_queries]',
      '  enabled = false',
      '[http]',
      '  enabled = true',
      `  bind-address = "127.0.0.1:${port}"`,
      '  log-enabled = false',
      '  https-enabled = true',
      `  https-certificate = "${tls.crt}"`,
      `  https-private-key = "${tls.key}"`,
      '',
    ].join('\n'),
  );
  const proc = new ServerProcess('influxd', INFLUX_BIN, ['-config', configFile]);
  logTails.set('InfluxDB', () => proc.logTail(30));
  const client = new HttpsClient(port, tls.ca, connections);
  try {
    await waitReady(proc, () => client.get('/ping'), (r) => r.status === 204);
    const version = packageVersion('influxdb');
    const created = await client.request('POST', '/query', `q=${encodeURIComponent('CREATE DATABASE bench')}`, { 'content-type': 'application/x-www-form-urlencoded' });
    expectStatus('POST /query CREATE DATABASE', 200)(created);
    const ingested = await phases.run('InfluxDB: ingest', () =>
      ingest<Chunk>({
        label: 'InfluxDB /write',
        connections,
        chunks: dataset.chunks(),
        totalPoints: dataset.totalPoints,
        encodeWhileSending: sizes.encodeWhileSending,
        encode: (chunk) => ({ bytes: influxLines('sensor', scope, chunk), points: chunk.points }),
        send: (body) => client.request('POST', '/write?db=bench&precision=ms', body.bytes, { 'content-type': 'text/plain' }),
        check: expectStatus('POST /write', 204),
      }),
    );
    const compactStart = performance.now();
    const compaction = await phases.run('InfluxDB: compaction', () => waitInfluxCompaction(dir));
    const compactSeconds = (performance.now() - compactStart) / 1000;
    const where = (tag: string) =>
      `"tag"='${tag}' AND "organization"='${scope.organization}' AND "site"='${scope.site}' AND "unit"='${scope.unit}' AND "grid"='${scope.grid}' AND time >= ${dataset.startMs}ms AND time <= ${dataset.endMs}ms`;
    const query = await phases.run('InfluxDB: raw query', () =>
      rawQuery({
        label: 'InfluxDB /query',
        load: sizes,
        tags: dataset.tagNames,
        request: (tag) => client.get(`/query?db=bench&epoch=ms&chunked=true&chunk_size=10000&q=${encodeURIComponent(`SELECT "value" FROM "sensor" WHERE ${where(tag)}`)}`),
        count: (body) => countLines(body, countInfluxChunk),
      }),
    );
    return {
      ingest: ingested,
      query,
      disk: compaction?.disk ?? null,
      flushNote: compaction
        ? `${compaction.settled ? 'WAL snapshotted and fully compacted' : `NOT fully compacted (${compaction.tsmFiles} TSM files, ${int(compaction.walBytes)} WAL bytes)`} after ${num(compactSeconds)} s (data + wal + meta)`
        : 'compaction wait failed',
      peakRss: proc.peakRssBytes(),
      version,
      cipher: await client.tlsCipher('/ping'),
    };
  } finally {
    client.close();
    await proc.stop();
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
console.log(`data set ${int(dataset.options.tags)} tags × ${int(dataset.options.points)} points at 1 s (${int(total)} points), ${sizes.tagsPerRequest} tags × ${sizes.pointsPerRequest} points per request, ${connections} keep-alive HTTPS connections, every server on the same TLS certificate`);
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
console.log(phases.report((phase) => logTails.get(phase.split(':')[0])?.() ?? []));

if (sizes.keep) {
  process.stderr.write(`data dirs kept: ${[service.dataDir, ...leftovers].join(' ')}\n`);
} else {
  await service.dispose();
  for (const p of leftovers) fs.rmSync(p, { recursive: true, force: true });
}
process.exitCode = phases.failures.length > 0 ? 1 : 0;

// ---- helpers --------------------------------------------------------------------------------

/** Runs one peer; a failure to start is recorded and the peer's column shows FAILED. */
async function runPeer(name: string, run: () => Promise<Figures>): Promise<{ figures: Figures } | null> {
  process.stderr.write(`${name}\n`);
  await waitForQuiet(sizes.waitIdle);
  const figures = await phases.run(`${name}: run`, run);
  return figures ? { figures } : null;
}

function expectStatus(what: string, status: number): (reply: Reply) => void {
  return (reply) => {
    if (reply.status !== status) throw describeReply(what, reply);
  };
}

async function waitReady(proc: ServerProcess, probe: () => Promise<Reply>, ok: (r: Reply) => boolean): Promise<void> {
  const deadline = Date.now() + 60_000;
  for (;;) {
    if (!proc.running) throw new Error(`${proc.name} exited while starting:\n${proc.logTail().join('\n')}`);
    try {
      if (ok(await probe())) return;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) throw new Error(`${proc.name} not ready after 60 s:\n${proc.logTail().join('\n')}`);
    await sleep(100);
  }
}

async function waitFor(seconds: number, done: () => Promise<boolean>): Promise<void> {
  const deadline = Date.now() + seconds * 1000;
  while (!(await done())) {
    if (Date.now() > deadline) throw new Error(`still not done after ${seconds} s`);
    await sleep(500);
  }
}

/** The Debian package's version (VictoriaMetrics' own -version prints nothing in this build). */
function packageVersion(pkg: string): string {
  try {
    return `${pkg} ${execFileSync('dpkg-query', ['-W', '-f', '${Version}', pkg], { encoding: 'utf8' }).trim()}`;
  } catch {
    return `${pkg} (version unknown)`;
  }
}

function countLines(body: Buffer, count: (line: string) => number): number {
  let n = 0;
  for (const line of body.toString('utf8').split('\n')) if (line.trim() !== '') n += count(line);
  return n;
}

/** One chunk of a chunked InfluxQL answer; an error inside it is an error of the query. */
function countInfluxChunk(line: string): number {
  const chunk = JSON.parse(line) as { error?: string; results: Array<{ error?: string; series?: Array<{ values: unknown[] }> }> };
  if (chunk.error) throw new Error(`InfluxDB query error: ${chunk.error}`);
  let n = 0;
  for (const result of chunk.results) {
    if (result.error) throw new Error(`InfluxDB query error: ${result.error}`);
    for (const series of result.series ?? []) n += series.values.length;
  }
  return n;
}

/**
 * Waits until the WAL is empty and the shard is one TSM file with no
 * compaction in progress (size unchanged for 3 polls), or 180 s.
 */
async function waitInfluxCompaction(dir: string): Promise<{ disk: DiskUsage; settled: boolean; tsmFiles: number; walBytes: number }> {
  const deadline = Date.now() + 180_000;
  let lastBytes = -1;
  let steady = 0;
  for (;;) {
    await sleep(1000);
    const files = listFiles(path.join(dir, 'data'));
    const tsmFiles = files.filter((f) => f.endsWith('.tsm')).length;
    const compacting = files.some((f) => f.endsWith('.tmp'));
    const walBytes = diskUsage(path.join(dir, 'wal')).bytes;
    const disk = diskUsage(dir);
    steady = disk.bytes === lastBytes ? steady + 1 : 0;
    lastBytes = disk.bytes;
    const settled = walBytes === 0 && tsmFiles === 1 && !compacting && steady >= 3;
    if (settled || Date.now() > deadline) return { disk, settled, tsmFiles, walBytes };
    process.stderr.write(`  InfluxDB: waiting for compaction (${tsmFiles} TSM files, WAL ${int(walBytes)} bytes)\n`);
  }
}

function listFiles(dir: string): string[] {
  const out: string[] = [];
  const walk = (p: string) => {
    for (const entry of fs.readdirSync(p, { withFileTypes: true })) {
      if (entry.isDirectory()) walk(path.join(p, entry.name));
      else out.push(path.join(p, entry.name));
    }
  };
  if (fs.existsSync(dir)) walk(dir);
  return out;
}
