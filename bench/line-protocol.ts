/**
 * InfluxDB line protocol ingest (issue 16): our `/ingest/v2/write`, VictoriaMetrics' own line
 * protocol endpoint `/write` and InfluxDB 1.x `/write`, one after the other on the same machine,
 * with the same request bodies, the same number of connections and the same TLS certificate.
 *
 *   npm run bench:line-protocol -- [--quick] [--systems ours,vm,influx] [--lines-per-request 5000]
 *                                  [--line-order time|tag] [--connections 4] [--tags 100] [--points 86400]
 *                                  [--tags-per-request N --points-per-request M] [--keep] [--wait-idle 120]
 *                                  [--encode-while-sending]
 *
 * Needs the Debian packages of the peers (the script installs nothing):
 *   apt-get install -y victoria-metrics influxdb
 *
 * Each system runs alone: started, written to, its data made compact the way it does that,
 * its stored points counted by its own query, stopped; then its data dir is measured.
 */

import path from 'node:path';
import { Dataset, influxLines, type Chunk, type LineOrder } from './dataset.js';
import { countStoredPoints, createIngestClient, scopeFor, sealNow } from './ours.js';
import {
  describeInfluxCompaction, expectStatus, flushAndMergeVictoriaMetrics, generatedTls, INFLUX_BIN, INFLUX_DB, influxSeries, requirePeerBinaries, serviceTls,
  startInfluxDb, startVictoriaMetrics, SystemRuns, VM_BIN, waitInfluxCompaction, type PeerServer, type PeerTls,
} from './peer-servers.js';
import { commandLine, describeReply, ingest, int, machine, markdownTable, mib, num, positiveIntOption, sizeOptions, type IngestResult } from './runner.js';
import { diskUsage, json, processCpuSeconds, startOurService, tempDir, type DiskUsage, type HttpsClient, type OurService } from './service.js';

const MEASUREMENT = 'sensor';
/** The ingestconfigs row our service resolves `db=` to. */
const CLIENT_ID = 'bench-lp';
/** Both peers' line protocol write; VictoriaMetrics makes `db` a label (its docs say so). */
const PEER_WRITE_PATH = `/write?db=${INFLUX_DB}&precision=ms`;
/**
 * Our service's settings for the run: the per-client ingest limit (default 1,000 requests a
 * minute) set far above the bench's own rate (the full run sends 1,728 requests in a few
 * seconds), so the limiter never answers 429 and what is measured is ingest alone.
 */
const OUR_SETTINGS = { ingest: { rateLimitPerMinute: 1_000_000 } };

const SYSTEM_NAMES = { ours: 'ours', vm: 'VictoriaMetrics', influx: 'InfluxDB' } as const;
type System = keyof typeof SYSTEM_NAMES;

const { sizes, values } = sizeOptions({ systems: { type: 'string' }, 'lines-per-request': { type: 'string' }, 'line-order': { type: 'string' } });
const systems = new Set(String(values.systems ?? 'ours,vm,influx').split(',').map((s) => s.trim()));
for (const s of systems) if (!(s in SYSTEM_NAMES)) throw new Error(`--systems takes a comma list of ours, vm and influx; got "${s}"`);
const selected = (s: System) => systems.has(s);
requirePeerBinaries([...(selected('vm') ? [VM_BIN] : []), ...(selected('influx') ? [INFLUX_BIN] : [])]);

const lineOrder = (values['line-order'] ?? 'time') as LineOrder;
if (lineOrder !== 'time' && lineOrder !== 'tag') throw new Error(`--line-order takes time or tag; got "${String(lineOrder)}"`);
// 5,000 lines a request by default: every tag × as many timestamps as fit, as a collector
// polling all its tags each second sends its batches (100 tags × 50 s; --quick 10 × 500 s).
const linesPerRequest = positiveIntOption(values, 'lines-per-request', 5000);
const tagsPerRequest = values['tags-per-request'] === undefined ? Math.min(sizes.tags, linesPerRequest) : sizes.tagsPerRequest;
const pointsPerRequest = values['points-per-request'] === undefined ? Math.max(1, Math.floor(linesPerRequest / tagsPerRequest)) : sizes.pointsPerRequest;
const dataset = new Dataset({ ...sizes, tagsPerRequest, pointsPerRequest });
const { connections } = sizes;
const total = dataset.totalPoints;
const scope = scopeFor('boiler-lp');
const runs = new SystemRuns(sizes.waitIdle);

/** What each system reports. */
interface Figures {
  /** null where the phase failed. */
  ingest: IngestResult | null;
  /** Points the system holds after the ingest, counted by its own query; null where that failed. */
  stored: number | null;
  /** Its data dir after it stopped. */
  disk: DiskUsage;
  /** How its data was made compact before it stopped, and what of it was measured. */
  diskNote: string;
  peakRss: number;
  version: string;
  /** TLS cipher suite agreed with the bench client (each system should pay the same for TLS). */
  cipher: string;
  /** CPU seconds (user + system) the server used over the ingest phase (it is idle while the bodies are built). */
  ingestServerCpu: number;
}

/** One system under test, started; `server.dataDir` is measured after it stops. */
interface Contender {
  server: PeerServer;
  writePath: string;
  /** Makes the stored data compact the way the system does it; answers how, for the report. */
  settle(): Promise<string>;
  /** Points stored, by the system's own query. */
  count(): Promise<number>;
  /** What the disk figure covers, read after the stop. */
  measured(): string;
}

process.stderr.write(
  `data set ${int(dataset.options.tags)} tags × ${int(dataset.options.points)} points = ${int(total)} points; ` +
    `${tagsPerRequest} tags × ${pointsPerRequest} points = ${int(tagsPerRequest * pointsPerRequest)} lines a request (${lineOrder} order), ${connections} connections\n`,
);

const started: { service?: OurService } = {};
const ours = selected('ours') ? await measure('ours', startOurs) : null;
const tls: PeerTls = started.service ? serviceTls(started.service) : certificateWithoutOurs();
const vm = selected('vm')
  ? await measure('VictoriaMetrics', async () => {
      const server = await startVictoriaMetrics(tls, connections);
      return { server, writePath: PEER_WRITE_PATH, settle: () => settleVictoriaMetrics(server), count: () => countVictoriaMetrics(server), measured: () => describeVictoriaMetricsDir(server) };
    })
  : null;
const influx = selected('influx')
  ? await measure('InfluxDB', async () => {
      const server = await startInfluxDb(tls, connections);
      return { server, writePath: PEER_WRITE_PATH, settle: () => settleInfluxDb(server), count: () => countInfluxDb(server), measured: () => 'data + wal + meta' };
    })
  : null;

// ---- report ---------------------------------------------------------------------------------

for (const [name, f] of [['ours', ours], ['VictoriaMetrics', vm], ['InfluxDB', influx]] as const) {
  if (f && f.stored !== null && f.stored !== total) runs.phases.failures.push({ phase: `${name}: count`, error: new Error(`holds ${int(f.stored)} points after the ingest, expected ${int(total)}`) });
}

const notRun = (s: System) => (selected(s) ? 'FAILED' : 'not run');
const column = (s: System, f: Figures | null, cell: (f: Figures) => string) => (f ? cell(f) : notRun(s));
const columns = (cell: (f: Figures) => string) => [column('ours', ours, cell), column('vm', vm, cell), column('influx', influx, cell)];
/** ours ÷ peer: above 1 is better for rates, below 1 for bytes and memory. */
const ratio = (value: (f: Figures) => number | undefined, peer: Figures | null, goal?: number) => {
  const a = ours ? value(ours) : undefined;
  const b = peer ? value(peer) : undefined;
  if (a === undefined || b === undefined || !(b > 0) || !Number.isFinite(a)) return 'n/a';
  const r = a / b;
  return goal === undefined ? `${num(r)}×` : `**${num(r)}×** (goal ≥ ${goal}×: ${r >= goal ? 'met' : 'NOT met'})`;
};
const ratios = (value: (f: Figures) => number | undefined, goals: [number?, number?] = []) => [ratio(value, vm, goals[0]), ratio(value, influx, goals[1])];
const perPoint = (bytes: number) => `${num(bytes / total)} B/point (${mib(bytes)})`;
const ingested = (cell: (r: IngestResult) => string) => columns((f) => (f.ingest ? cell(f.ingest) : 'FAILED'));

const rows: string[][] = [
  ['ingest, points/s (ours `/ingest/v2/write`, VM `/write`, Influx `/write`)', ...ingested((r) => `${int(r.pointsPerSecond)} points/s`), ...ratios((f) => f.ingest?.pointsPerSecond, [1.5, 4])],
  ['ingest time; requests (of them 503 retried)', ...ingested((r) => `${num(r.seconds)} s; ${int(r.requests)} (${r.retries})`), '', ''],
  ['request body (the same bytes for all three)', ...ingested((r) => `${num(r.bytesSent / r.points, 1)} B/point`), '', ''],
  ['points stored, counted by its own query after the ingest', ...columns((f) => (f.stored === null ? 'FAILED' : int(f.stored))), '', ''],
  ['disk after stop, file sizes', ...columns((f) => perPoint(f.disk.bytes)), ...ratios((f) => f.disk.bytes)],
  ['disk after stop, allocated blocks', ...columns((f) => perPoint(f.disk.allocated)), ...ratios((f) => f.disk.allocated)],
  ['before the stop; what was measured', ...columns((f) => f.diskNote), '', ''],
  ['peak RSS (VmHWM), whole run', ...columns((f) => mib(f.peakRss)), ...ratios((f) => f.peakRss)],
  ['TLS cipher suite agreed with the bench client', ...columns((f) => f.cipher), '', ''],
  ['CPU in the ingest, core-seconds per million points: server / bench client', ...columns((f) => `${num(f.ingestServerCpu / (total / 1e6), 3)} / ${f.ingest ? num(f.ingest.clientCpuSeconds / (total / 1e6), 3) : '?'}`), ...ratios((f) => f.ingestServerCpu)],
  ['cores other processes kept busy during the ingest', ...ingested((r) => num(r.otherCores, 1)), '', ''],
];

console.log('# Line protocol ingest: ours vs VictoriaMetrics vs InfluxDB\n');
console.log(`\`${commandLine()}\`\n`);
console.log(machine());
console.log(
  `data set ${int(dataset.options.tags)} tags × ${int(dataset.options.points)} points at 1 s (${int(total)} points), ` +
    `${tagsPerRequest} tags × ${pointsPerRequest} points = ${int(tagsPerRequest * pointsPerRequest)} lines a request in ${lineOrder} order, ` +
    `precision ms, ${connections} keep-alive HTTPS connections, every server on the same TLS certificate`,
);
console.log(`peers: ${vm?.version ?? `VictoriaMetrics (${notRun('vm')})`}; ${influx?.version ?? `InfluxDB (${notRun('influx')})`}\n`);
console.log(markdownTable(['figure', 'ours', 'VictoriaMetrics', 'InfluxDB', 'ours ÷ VM', 'ours ÷ Influx'], rows));
console.log(
  [
    '',
    `Lines: \`${MEASUREMENT},grid=…,organization=…,site=…,tag=<tag>,unit=… value=<v> <ms>\`; our service stores \`${MEASUREMENT},tag=<tag>.value\` in the scope of the tags,`,
    `VictoriaMetrics \`${MEASUREMENT}_value\` with the tags (and \`db\`) as labels, InfluxDB measurement \`${MEASUREMENT}\` field \`value\`.`,
    'Durability when a write is answered: ours = handed to the OS (write_fast, no fsync); VictoriaMetrics = in its memory buffer',
    '(on disk within about a second, no fsync per request); InfluxDB = WAL appended and fsynced (its default).',
    sizes.encodeWhileSending
      ? 'Ingest figures include the client building each body just before sending it, on the same cores as the server (--encode-while-sending).'
      : 'Every request body was built before the clock started (the same bytes for all three); the timed phase is sending, parsing and storing.',
    `Our service ran with ingest.rateLimitPerMinute ${int(OUR_SETTINGS.ingest.rateLimitPerMinute)} (default 1,000), so its per-client limiter did not throttle the run.`,
    'InfluxDB preallocates sparse series-file segments, so its file sizes exceed its allocated blocks; the allocated row is the fair one for it.',
    'CPU in the ingest: the server process (all threads) and this client over the timed window; on a shared machine the server figure moves less than points/s.',
    'ours ÷ peer: above 1 is better for rates, below 1 is better for bytes, memory and CPU.',
  ].join('\n'),
);
console.log(runs.report());
await runs.finish(sizes.keep, started.service);

// ---- one system -----------------------------------------------------------------------------

/**
 * Starts a system, sends it the line protocol bodies, settles and counts its data, stops it and
 * measures its data dir. A failure to start is recorded and its column shows FAILED.
 */
function measure(name: string, start: () => Promise<Contender>): Promise<Figures | null> {
  return runs.system(name, async () => {
    const { server, writePath, settle, count, measured } = await start();
    runs.removeAtEnd(...server.paths);
    runs.watch(name, server.proc);
    let ingest: IngestResult | null = null;
    let stored: number | null = null;
    let settled: string | null = null;
    let cipher = 'FAILED';
    let ingestServerCpu = NaN;
    try {
      const cpu0 = processCpuSeconds(server.proc.pid);
      ingest = await runs.phases.run(`${name}: ingest`, () => ingestLines(`${name} ${writePath}`, server.client, writePath));
      ingestServerCpu = processCpuSeconds(server.proc.pid) - cpu0;
      settled = await runs.phases.run(`${name}: flush`, settle);
      stored = await runs.phases.run(`${name}: count`, count);
      cipher = await server.client.tlsCipher(server.probePath);
    } finally {
      await server.stop();
    }
    const diskNote = `${settled ?? 'flush FAILED'}; ${measured()}`;
    return { ingest, stored, disk: diskUsage(server.dataDir), diskNote, peakRss: server.proc.peakRssBytes(), version: server.version, cipher, ingestServerCpu };
  });
}

function ingestLines(label: string, client: HttpsClient, writePath: string): Promise<IngestResult> {
  return ingest<Chunk>({
    label,
    connections,
    chunks: dataset.chunks(),
    totalPoints: total,
    encodeWhileSending: sizes.encodeWhileSending,
    encode: (chunk) => ({ bytes: influxLines(MEASUREMENT, scope, chunk, lineOrder), points: chunk.points }),
    // The content type Telegraf's influxdb output sends.
    send: (body) => client.request('POST', writePath, body.bytes, { 'content-type': 'text/plain; charset=utf-8' }),
    check: expectStatus(`POST ${writePath}`, 204),
  });
}

// ---- ours -----------------------------------------------------------------------------------

/** Our service with an ingest client row, as an operator sets up a collector. */
async function startOurs(): Promise<Contender> {
  const service = await startOurService(OUR_SETTINGS);
  started.service = service;
  const client = service.client(connections);
  const server: PeerServer = {
    proc: service.process,
    client,
    dataDir: path.join(service.dataDir, 'ts'),
    paths: [],
    version: 'this commit',
    probePath: '/ingest/health',
    async stop() {
      const exit = await service.stop();
      if (exit.code !== 0) runs.phases.failures.push({ phase: 'ours: shutdown', error: new Error(`our service exited with ${exit.code ?? exit.signal}`) });
    },
  };
  try {
    const ping = await client.get('/ingest/v2/ping');
    if (ping.status !== 204) throw describeReply('GET /ingest/v2/ping (is /ingest/v2 in this build?)', ping);
    await createIngestClient(client, CLIENT_ID, { organization: scope.organization, site: scope.site, unit: scope.unit });
  } catch (err) {
    await server.stop();
    throw err;
  }
  // `<measurement>,<line tags other than the scope>.<field>` (WIRE part 2, Ingest).
  const tagNames = dataset.tagNames.map((name) => `${MEASUREMENT},tag=${name}.value`);
  return {
    server,
    writePath: `/ingest/v2/write?db=${CLIENT_ID}&precision=ms`,
    settle: async () => {
      const days = await sealNow(client);
      return `seal_now (${days} day${days === 1 ? '' : 's'} sealed)`;
    },
    count: async () => [...(await countStoredPoints(client, scope, tagNames, dataset.startMs, dataset.endMs)).values()].reduce((a, b) => a + b, 0),
    measured: () => '`ts/` (metadata.sqlite and tls/ left out)',
  };
}

/** The same kind of certificate our service makes, for a run without it (--systems vm,influx). */
function certificateWithoutOurs(): PeerTls {
  const dir = tempDir('bench-tls-');
  runs.removeAtEnd(dir);
  return generatedTls(dir);
}

// ---- VictoriaMetrics ------------------------------------------------------------------------

async function settleVictoriaMetrics(server: PeerServer): Promise<string> {
  await flushAndMergeVictoriaMetrics(server);
  return 'force_flush + force_merge';
}

/** Every sample of `<measurement>_value` in the data set's range, counted by MetricsQL. */
async function countVictoriaMetrics(server: PeerServer): Promise<number> {
  const windowSeconds = Math.ceil((dataset.endMs - dataset.startMs) / 1000) + 2;
  const query = `sum(count_over_time({__name__="${MEASUREMENT}_value"}[${windowSeconds}s]))`;
  const reply = await server.client.get(`/api/v1/query?query=${encodeURIComponent(query)}&time=${Math.floor(dataset.endMs / 1000) + 1}`);
  expectStatus('GET /api/v1/query (count)', 200)(reply);
  const result = (json(reply) as { data: { result: Array<{ value: [number, string] }> } }).data.result;
  return Number(result[0]?.value[1] ?? 0);
}

/** VictoriaMetrics writes its caches into the data dir when it stops: counted, and named. */
function describeVictoriaMetricsDir(server: PeerServer): string {
  return `whole -storageDataPath, of which \`cache/\` (saved at stop) ${mib(diskUsage(path.join(server.dataDir, 'cache')).bytes)}`;
}

// ---- InfluxDB -------------------------------------------------------------------------------

async function settleInfluxDb(server: PeerServer): Promise<string> {
  const begin = performance.now();
  const compaction = await waitInfluxCompaction(server.dataDir);
  return describeInfluxCompaction(compaction, (performance.now() - begin) / 1000);
}

async function countInfluxDb(server: PeerServer): Promise<number> {
  const reply = await server.client.get(`/query?db=${INFLUX_DB}&q=${encodeURIComponent(`SELECT count("value") FROM "${MEASUREMENT}"`)}`);
  expectStatus('GET /query (count)', 200)(reply);
  return Number(influxSeries(reply.body.toString('utf8'))[0]?.values[0]?.[1] ?? 0);
}
