/**
 * PromQL side by side: our `/api/v1/query_range` and `/api/v1/query` against Prometheus 2.42
 * reading its own TSDB and VictoriaMetrics 1.79, on the same remote-written samples, the same
 * TLS certificate and client.
 *
 *   npm run bench:promql -- [--series 1000] [--hours 24] [--rounds 5] [--quick] [--connections 4]
 *                           [--wait-idle 0] [--systems ours,prometheus,vm] [--no-seal] [--keep]
 *
 * Data (built before any clock starts, deterministic): `--series` counters
 * `x{instance="i<j>",job="bench",line="l<k>"}` over 10 lines, one sample every 15 s for
 * `--hours` from 2024-03-01T00:00Z (each series at its own scrape offset within the 15 s), growing
 * by noisy integer amounts, a quarter of them reset to near zero once. The grouping label is
 * `line`, not `unit`: our remote write reads a `unit` label as the collection's unit (WIRE.md
 * part 3), so a label of that name would spread the series over 10 collections and take the label
 * out of the answers; with `line` every system gets the same series and the same query text.
 *
 * The samples go out as remote write 1.0 bodies (snappy protobuf, labels sorted), each a time
 * slice of 40 samples (10 min) of up to 250 series, in time order as Prometheus sends them:
 * Prometheus' head refuses samples more than an hour behind its newest one. The same bodies are
 * posted to our `/api/v1/write?db=<client>` (API key), Prometheus' `/api/v1/write`
 * (`--web.enable-remote-write-receiver`) and VictoriaMetrics' `/api/v1/write`. Then each system is
 * made to hold its data as it would at rest: ours sealed (`seal_now`; `--no-seal` leaves the
 * day in its day log), VictoriaMetrics flushed and merged, Prometheus'
 * head compacted into blocks (it does so on its own once the head spans more than 3 h; we wait
 * for it), and `sum(count_over_time(x[<hours>h]))` asked of each must count every sample.
 *
 * Queries (GET, one at a time on one keep-alive connection; a warm-up round, then `--rounds`
 * rounds, each round asking every query of every system in turn so that a drift of the machine
 * falls on all of them): range queries over the whole span at step 60 s of
 * `sum by (line) (rate(x[5m]))` (the goal: ≥ 2× Prometheus, ≥ 1× VictoriaMetrics),
 * `rate(x{line=…,instance=…}[5m])` (one series), `avg_over_time(x[10m])` (every series: the answer's
 * bytes dominate), `max by (line) (x)`, and an instant `sum(rate(x[5m]))` at the end of the span.
 * The warm-up answers are compared: series counts, and the largest relative difference of any
 * value from ours (VictoriaMetrics' rate does not extrapolate as Prometheus' does, so it differs
 * by design). Reported: median and best ms per query and system, Prometheus ÷ ours and
 * VictoriaMetrics ÷ ours (> 1: ours is faster), answer bytes, server CPU per query, ingest
 * samples/s, peak RSS during the queries (VmHWM reset before them).
 *
 * Our server's node flags: HISTORIAN_BENCH_NODE_ARGS (e.g. "--cpu-prof --cpu-prof-dir=/tmp/prof").
 */

import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { stringify as toYaml } from 'yaml';
import { encodeWriteRequest, type EncodableSeries, type Label } from '../native-free-codecs/prom-remote.js';
import { snappyCompress } from '../native-free-codecs/snappy.js';
import { PROMETHEUS_BIN } from '../test/support/prometheus.js';
import { prng } from '../test/support/prng.js';
import { createIngestClient, sealNow } from './ours.js';
import { flushAndMergeVictoriaMetrics, requirePeerBinaries, serviceTls, startVictoriaMetrics, VM_BIN, waitReady, type PeerTls } from './peer-servers.js';
import { BenchError, commandLine, describeReply, int, machine, markdownTable, mib, num, otherLoad, Phases, positiveIntOption, Progress, sleep } from './runner.js';
import { cpuMeter, freePort, HttpsClient, json, processCpuSeconds, ServerProcess, startOurService, tempDir, vmHwmKb, waitForQuiet, type OurService, type Reply } from './service.js';

// ---- flags ------------------------------------------------------------------------------------

const { values: flags } = parseArgs({
  options: {
    series: { type: 'string' },
    hours: { type: 'string' },
    rounds: { type: 'string' },
    connections: { type: 'string' },
    'wait-idle': { type: 'string' },
    systems: { type: 'string' },
    quick: { type: 'boolean' },
    keep: { type: 'boolean' },
    'no-seal': { type: 'boolean' },
  },
  strict: true,
});
const all = flags as Record<string, string | boolean | undefined>;
const quick = flags.quick === true;
const SERIES = positiveIntOption(all, 'series', quick ? 100 : 1000);
const HOURS = positiveIntOption(all, 'hours', quick ? 6 : 24);
const ROUNDS = positiveIntOption(all, 'rounds', 5);
const CONNECTIONS = positiveIntOption(all, 'connections', 4);
/** Ours at rest is the day sealed (`seal_now`), as the peers are flushed, merged and compacted; --no-seal queries the day log. */
const SEAL = flags['no-seal'] !== true;
const WAIT_IDLE = all['wait-idle'] === undefined ? 0 : positiveIntOption(all, 'wait-idle', 0);
type System = 'ours' | 'prometheus' | 'vm';
const SYSTEM_NAMES: Record<System, string> = { ours: 'ours', prometheus: 'Prometheus', vm: 'VictoriaMetrics' };
const SYSTEMS = ((flags.systems ?? 'ours,prometheus,vm').split(',').map((s) => s.trim()) as System[]);
for (const s of SYSTEMS) if (!(s in SYSTEM_NAMES)) throw new Error(`--systems: unknown system ${JSON.stringify(s)} (ours, prometheus, vm)`);
if (!SYSTEMS.includes('ours')) throw new Error('--systems must include ours (the ratios are to ours)');

// ---- the data set -----------------------------------------------------------------------------

const START_MS = Date.UTC(2024, 2, 1);
const END_MS = START_MS + HOURS * 3_600_000;
const SCRAPE_MS = 15_000;
const SAMPLES = HOURS * (3_600_000 / SCRAPE_MS);
const LINES = Math.min(10, SERIES);
const GROUP = 'line';
/** Samples of one series in one body (10 min at 15 s). */
const SLICE = 40;
/** A shard may run this many slices ahead of the slowest one (Prometheus' head refuses samples over an hour behind its newest). */
const LEAD_SLICES = 2;

interface GeneratedSeries {
  labels: Label[];
  ts: Float64Array;
  values: Float64Array;
}

function seriesLabels(k: number): Label[] {
  // Sorted by name, as Prometheus sends them.
  return [['__name__', 'x'], ['instance', `i${Math.floor(k / LINES)}`], ['job', 'bench'], [GROUP, `l${k % LINES}`]];
}

function generate(): GeneratedSeries[] {
  const out: GeneratedSeries[] = [];
  for (let k = 0; k < SERIES; k++) {
    const random = prng(1000 + k);
    const phase = Math.floor(random() * SCRAPE_MS);
    const perSecond = 0.5 + random() * 200;
    const resetAt = random() < 0.25 ? 1 + Math.floor(random() * (SAMPLES - 1)) : -1;
    const ts = new Float64Array(SAMPLES);
    const values = new Float64Array(SAMPLES);
    let v = Math.floor(random() * 1e6);
    for (let i = 0; i < SAMPLES; i++) {
      ts[i] = START_MS + phase + i * SCRAPE_MS;
      if (i === resetAt) v = Math.floor(random() * 10);
      else if (i > 0) v += Math.round(perSecond * (SCRAPE_MS / 1000) * (0.5 + random()));
      values[i] = v;
    }
    out.push({ labels: seriesLabels(k), ts, values });
  }
  return out;
}

interface WriteBody {
  bytes: Uint8Array;
  points: number;
}

/**
 * Remote write bodies as Prometheus' remote write sends them: the series split into one shard
 * per connection (contiguous groups), each shard's bodies time slice after time slice, so every
 * series arrives in time order (Prometheus' head refuses an older sample after a newer one).
 */
function shardBodies(data: GeneratedSeries[], shards: number): WriteBody[][] {
  const perShard = Math.ceil(data.length / shards);
  const out: WriteBody[][] = [];
  for (let g = 0; g < data.length; g += perShard) {
    const list: WriteBody[] = [];
    for (let from = 0; from < SAMPLES; from += SLICE) {
      const to = Math.min(SAMPLES, from + SLICE);
      const group: EncodableSeries[] = data.slice(g, g + perShard).map((s) => ({ labels: s.labels, timestamps: s.ts.subarray(from, to), values: s.values.subarray(from, to) }));
      list.push({ bytes: snappyCompress(encodeWriteRequest(group)), points: group.length * (to - from) });
    }
    out.push(list);
  }
  return out;
}

const TOTAL_SAMPLES = SERIES * SAMPLES;
process.stderr.write(`building ${int(SERIES)} series × ${int(SAMPLES)} samples (${int(TOTAL_SAMPLES)} samples)\n`);
const built = performance.now();
const data = generate();
const writeBodies = shardBodies(data, CONNECTIONS);
const bodyCount = writeBodies.reduce((n, list) => n + list.length, 0);
const bodyBytes = writeBodies.flat().reduce((n, b) => n + b.bytes.byteLength, 0);
const SERIES_PER_BODY = Math.ceil(SERIES / CONNECTIONS);
process.stderr.write(`  ${int(bodyCount)} remote write bodies, ${mib(bodyBytes)} snappy, built in ${((performance.now() - built) / 1000).toFixed(1)} s\n`);
const ONE_SERIES = Math.min(SERIES - 1, Math.floor(SERIES / 2) + 3);
const oneSelector = `x{${GROUP}="l${ONE_SERIES % LINES}",instance="i${Math.floor(ONE_SERIES / LINES)}"}`;
data.length = 0; // the bodies hold everything now

// ---- queries ----------------------------------------------------------------------------------

interface Query {
  name: string;
  path: string;
  /** Relative differences above this from ours are flagged (values of the same definition should agree to rounding). */
  goal?: string;
}

const secs = (msValue: number) => String(msValue / 1000);
const rangeQuery = (q: string) => `/api/v1/query_range?query=${encodeURIComponent(q)}&start=${secs(START_MS)}&end=${secs(END_MS)}&step=60`;
const QUERIES: Query[] = [
  { name: `sum by (${GROUP}) (rate(x[5m]))`, path: rangeQuery(`sum by (${GROUP}) (rate(x[5m]))`), goal: '≥ 2× Prometheus, ≥ 1× VM' },
  { name: `rate(${oneSelector}[5m])`, path: rangeQuery(`rate(${oneSelector}[5m])`) },
  { name: 'avg_over_time(x[10m])', path: rangeQuery('avg_over_time(x[10m])') },
  { name: `max by (${GROUP}) (x)`, path: rangeQuery(`max by (${GROUP}) (x)`) },
  { name: 'instant sum(rate(x[5m]))', path: `/api/v1/query?query=${encodeURIComponent('sum(rate(x[5m]))')}&time=${secs(END_MS)}` },
];

// ---- the servers ------------------------------------------------------------------------------

interface Server {
  system: System;
  proc: ServerProcess;
  /** One connection for the timed queries. */
  query: HttpsClient;
  /** CONNECTIONS connections for the ingest. */
  write: HttpsClient;
  writePath: string;
  version: string;
  stop(): Promise<void>;
  paths: string[];
}

function packageVersion(pkg: string): string {
  try {
    return `${pkg} ${execFileSync('dpkg-query', ['-W', '-f', '${Version}', pkg], { encoding: 'utf8' }).trim()}`;
  } catch {
    return `${pkg} (version unknown)`;
  }
}

const CLIENT_ID = 'bench-promql';
const SCOPE = { organization: 'bench', site: 'plant-1', unit: 'promql', grid: 'main' };
/** Labels our service adds to every series from its collection: left out when answers are compared. */
const SCOPE_LABELS = new Set(['organization', 'site', 'unit', 'grid']);

async function ours(service: OurService): Promise<Server> {
  const admin = service.client(1);
  await createIngestClient(admin, CLIENT_ID, SCOPE);
  const made = await admin.postJson('/svcapi/api_keys', { name: 'bench promql' });
  if (made.status !== 201) throw describeReply('POST /svcapi/api_keys', made);
  const key = json(made).key as string;
  const client = (sockets: number) => {
    const c = new HttpsClient(service.port, service.ca, sockets);
    c.headers.authorization = `Bearer ${key}`;
    return c;
  };
  const query = client(1);
  const write = client(CONNECTIONS);
  admin.close();
  return {
    system: 'ours', proc: service.process, query, write, writePath: `/api/v1/write?db=${CLIENT_ID}`, version: 'ours', paths: [],
    async stop() {
      query.close();
      write.close();
    },
  };
}

/** Prometheus on HTTPS (our certificate, through --web.config.file) with the remote write receiver, nothing to scrape. */
async function prometheus(tls: PeerTls): Promise<Server> {
  const dir = tempDir('bench-prometheus-');
  const port = await freePort();
  fs.writeFileSync(path.join(dir, 'prometheus.yml'), toYaml({ global: { scrape_interval: '1h', evaluation_interval: '1h' } }));
  fs.writeFileSync(path.join(dir, 'web.yml'), toYaml({ tls_server_config: { cert_file: tls.crt, key_file: tls.key } }));
  const proc = new ServerProcess('prometheus', PROMETHEUS_BIN, [
    `--config.file=${path.join(dir, 'prometheus.yml')}`,
    `--web.config.file=${path.join(dir, 'web.yml')}`,
    `--storage.tsdb.path=${path.join(dir, 'data')}`,
    `--web.listen-address=127.0.0.1:${port}`,
    '--web.enable-remote-write-receiver',
  ]);
  const query = new HttpsClient(port, tls.ca, 1);
  const write = new HttpsClient(port, tls.ca, CONNECTIONS);
  const server: Server = {
    system: 'prometheus', proc, query, write, writePath: '/api/v1/write', version: packageVersion('prometheus'), paths: [dir],
    async stop() {
      query.close();
      write.close();
      await proc.stop();
    },
  };
  try {
    await waitReady(proc, () => query.get('/-/ready'), (r) => r.status === 200);
  } catch (err) {
    await server.stop();
    throw err;
  }
  return server;
}

async function victoriaMetrics(tls: PeerTls): Promise<{ server: Server; settle: () => Promise<void> }> {
  const vm = await startVictoriaMetrics(tls, CONNECTIONS);
  const query = new HttpsClient(vm.client.port, tls.ca, 1);
  const server: Server = {
    system: 'vm', proc: vm.proc, query, write: vm.client, writePath: '/api/v1/write', version: vm.version, paths: vm.paths,
    async stop() {
      query.close();
      await vm.stop();
    },
  };
  return { server, settle: () => flushAndMergeVictoriaMetrics(vm) };
}

function metricValue(metrics: string, name: string): number {
  const m = new RegExp(`^${name}(?:\\{[^}]*\\})? (\\S+)$`, 'm').exec(metrics);
  return m ? Number(m[1]) : NaN;
}

/**
 * Prometheus compacts its head into 2 h blocks once the head spans more than 3 h (triggered by
 * the appends themselves), then merges blocks: waits until the head spans at most 3 h and no
 * compaction has run for 3 s (180 s at most). Answers what it found, for the report.
 */
async function settlePrometheus(server: Server): Promise<string> {
  const deadline = Date.now() + 180_000;
  let last = -1;
  let steady = 0;
  for (;;) {
    const metrics = (await server.query.get('/metrics')).body.toString('utf8');
    const span = metricValue(metrics, 'prometheus_tsdb_head_max_time') - metricValue(metrics, 'prometheus_tsdb_head_min_time');
    const compactions = metricValue(metrics, 'prometheus_tsdb_compactions_total');
    const blocks = metricValue(metrics, 'prometheus_tsdb_blocks_loaded');
    steady = compactions === last ? steady + 1 : 0;
    last = compactions;
    if ((span <= 3 * 3_600_000 && steady >= 3) || Date.now() > deadline) {
      return `${blocks} blocks and a head of ${(span / 3_600_000).toFixed(1)} h after ${compactions} compactions${Date.now() > deadline ? ' (NOT settled after 180 s)' : ''}`;
    }
    await sleep(1000);
  }
}

// ---- answers ----------------------------------------------------------------------------------

/** An answer's series by label set (scope labels left out), each its values by time (seconds). */
type Answer = Map<string, Map<number, number>>;

function parseAnswer(what: string, reply: Reply): Answer {
  const body = JSON.parse(reply.body.toString('utf8')) as { status: string; data?: { resultType: string; result: Array<{ metric: Record<string, string>; values?: Array<[number, string]>; value?: [number, string] }> } };
  if (body.status !== 'success' || !body.data) throw new BenchError(`${what}: not a success`, [reply.body.subarray(0, 400).toString()]);
  const out: Answer = new Map();
  for (const s of body.data.result) {
    const key = Object.entries(s.metric).filter(([k]) => !SCOPE_LABELS.has(k) && k !== '__name__').sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([k, v]) => `${k}=${JSON.stringify(v)}`).join(',');
    const points = new Map<number, number>();
    for (const [t, v] of s.values ?? (s.value ? [s.value] : [])) points.set(t, Number(v));
    out.set(key, points);
  }
  return out;
}

interface Agreement {
  series: [number, number];
  /** Label sets in one answer only. */
  unmatched: number;
  /** Points (series, time) in one answer only. */
  missingPoints: number;
  points: number;
  maxRelative: number;
}

function compareAnswers(a: Answer, b: Answer): Agreement {
  let unmatched = 0;
  let missingPoints = 0;
  let points = 0;
  let maxRelative = 0;
  for (const key of new Set([...a.keys(), ...b.keys()])) {
    const pa = a.get(key);
    const pb = b.get(key);
    if (!pa || !pb) {
      unmatched++;
      continue;
    }
    for (const t of new Set([...pa.keys(), ...pb.keys()])) {
      const va = pa.get(t);
      const vb = pb.get(t);
      if (va === undefined || vb === undefined) {
        missingPoints++;
        continue;
      }
      points++;
      const scale = Math.max(Math.abs(va), Math.abs(vb));
      const rel = va === vb || (Number.isNaN(va) && Number.isNaN(vb)) ? 0 : scale === 0 ? Infinity : Math.abs(va - vb) / scale;
      if (!(rel <= maxRelative)) maxRelative = rel;
    }
  }
  return { series: [a.size, b.size], unmatched, missingPoints, points, maxRelative };
}

function describeAgreement(g: Agreement | undefined): string {
  if (!g) return 'n/a';
  const rel = g.maxRelative === 0 ? '0' : g.maxRelative.toExponential(1);
  const extra = [g.unmatched ? `${g.unmatched} series unmatched` : '', g.missingPoints ? `${int(g.missingPoints)} points in one only` : ''].filter(Boolean).join(', ');
  return `${g.series[0]} / ${g.series[1]} series, max rel. diff ${rel}${extra ? `, ${extra}` : ''}`;
}

// ---- run --------------------------------------------------------------------------------------

interface Timing {
  ms: number[];
  bytes: number;
  cpuMs: number[];
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length === 0 ? NaN : s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
};

async function timed(server: Server, query: Query): Promise<{ reply: Reply; cpuMs: number }> {
  const cpu0 = processCpuSeconds(server.proc.pid);
  const reply = await server.query.get(query.path);
  const cpuMs = (processCpuSeconds(server.proc.pid) - cpu0) * 1000;
  if (reply.status !== 200) throw describeReply(`${SYSTEM_NAMES[server.system]} ${query.name}`, reply);
  return { reply, cpuMs };
}

function resetPeakRss(pid: number): boolean {
  try {
    fs.writeFileSync(`/proc/${pid}/clear_refs`, '5');
    return true;
  } catch {
    return false;
  }
}

requirePeerBinaries([...(SYSTEMS.includes('vm') ? [VM_BIN] : []), ...(SYSTEMS.includes('prometheus') ? [PROMETHEUS_BIN] : [])]);
const phases = new Phases();
const servers = new Map<System, Server>();
const ingests = new Map<System, IngestFigures>();
const settled = new Map<System, string>();
const counted = new Map<System, number>();
const timings = new Map<string, Timing>(); // `${system} ${query}`
const answers = new Map<string, Answer>();
let peakReset = true;
let queryOtherCores = NaN;

interface IngestFigures {
  samplesPerSecond: number;
  seconds: number;
  requests: number;
  retries: number;
  otherCores: number;
}

/**
 * Sends every shard's bodies in order, one connection per shard, a shard never more than
 * LEAD_SLICES ahead of the slowest; 429 and 503 are retried (the retries are part of the time).
 */
async function remoteWrite(server: Server): Promise<IngestFigures> {
  const name = SYSTEM_NAMES[server.system];
  const done = writeBodies.map(() => 0);
  let waiters: Array<() => void> = [];
  let requests = 0;
  let retries = 0;
  let samples = 0;
  const progress = new Progress(`${name} remote write`, TOTAL_SAMPLES, 'samples');
  const other = cpuMeter();
  const started = performance.now();
  await Promise.all(writeBodies.map(async (list, shard) => {
    for (let slice = 0; slice < list.length; slice++) {
      while (Math.min(...done) < slice - LEAD_SLICES) await new Promise<void>((resolve) => waiters.push(resolve));
      const body = list[slice]!;
      for (let attempt = 0; ; attempt++) {
        const reply = await server.write.request('POST', server.writePath, body.bytes, {
          'content-type': 'application/x-protobuf',
          'content-encoding': 'snappy',
          'x-prometheus-remote-write-version': '0.1.0',
        });
        requests++;
        if ((reply.status === 503 || reply.status === 429) && attempt < 200) {
          retries++;
          await sleep(Math.min(200, 10 * (attempt + 1)));
          continue;
        }
        if (reply.status !== 204 && reply.status !== 200) throw describeReply(`${name} POST ${server.writePath} (shard ${shard}, slice ${slice})`, reply);
        break;
      }
      samples += body.points;
      progress.update(samples);
      done[shard] = slice + 1;
      const wake = waiters;
      waiters = [];
      for (const w of wake) w();
    }
  }));
  const seconds = (performance.now() - started) / 1000;
  progress.done(samples, seconds);
  return { samplesPerSecond: samples / seconds, seconds, requests, retries, otherCores: other() };
}

await waitForQuiet(WAIT_IDLE);
const service = await startOurService({ ingest: { rateLimitPerMinute: 1_000_000 } });
const tls = serviceTls(service);
let vmSettle: (() => Promise<void>) | null = null;
try {
  servers.set('ours', await ours(service));
  if (SYSTEMS.includes('prometheus')) {
    const p = await phases.run('Prometheus: start', () => prometheus(tls));
    if (p) servers.set('prometheus', p);
  }
  if (SYSTEMS.includes('vm')) {
    const v = await phases.run('VictoriaMetrics: start', () => victoriaMetrics(tls));
    if (v) {
      servers.set('vm', v.server);
      vmSettle = v.settle;
    }
  }

  for (const server of servers.values()) {
    const name = SYSTEM_NAMES[server.system];
    await waitForQuiet(WAIT_IDLE);
    const result = await phases.run(`${name}: ingest`, () => remoteWrite(server));
    if (result) ingests.set(server.system, result);
  }

  // Every system at rest, and every sample counted back.
  process.stderr.write('settling\n');
  if (vmSettle) {
    const t = performance.now();
    await phases.run('VictoriaMetrics: flush and merge', vmSettle);
    settled.set('vm', `flushed and merged in ${((performance.now() - t) / 1000).toFixed(1)} s`);
  }
  const prom = servers.get('prometheus');
  if (prom) {
    const outcome = await phases.run('Prometheus: compaction', () => settlePrometheus(prom));
    if (outcome) settled.set('prometheus', outcome);
  }
  if (SEAL) {
    const t = performance.now();
    const days = await phases.run('ours: seal', () => sealNow(service.client(1)));
    if (days !== null) settled.set('ours', `${days} day(s) sealed (\`seal_now\`) in ${((performance.now() - t) / 1000).toFixed(1)} s`);
  } else {
    settled.set('ours', 'as written (the day in its day log, --no-seal)');
  }
  const countPath = `/api/v1/query?query=${encodeURIComponent(`sum(count_over_time(x[${HOURS}h]))`)}&time=${secs(END_MS)}`;
  for (const server of servers.values()) {
    await phases.run(`${SYSTEM_NAMES[server.system]}: count`, async () => {
      const reply = await server.query.get(countPath);
      if (reply.status !== 200) throw describeReply(`${SYSTEM_NAMES[server.system]} count`, reply);
      const [points] = [...parseAnswer('count', reply).values()];
      counted.set(server.system, points ? [...points.values()][0]! : 0);
    });
  }

  // Warm-up round (answers kept and compared), then the timed rounds, every system in turn per query.
  await waitForQuiet(WAIT_IDLE);
  for (const server of servers.values()) peakReset = resetPeakRss(server.proc.pid) && peakReset;
  const other = cpuMeter();
  for (let round = 0; round <= ROUNDS; round++) {
    process.stderr.write(round === 0 ? 'warm-up round\n' : `round ${round} of ${ROUNDS}\n`);
    for (const query of QUERIES) {
      for (const server of servers.values()) {
        const key = `${server.system} ${query.name}`;
        await phases.run(`${SYSTEM_NAMES[server.system]}: ${query.name}`, async () => {
          const { reply, cpuMs } = await timed(server, query);
          process.stderr.write(`  ${SYSTEM_NAMES[server.system].padEnd(15)} ${reply.ms.toFixed(1).padStart(8)} ms ${int(reply.bodyLength).padStart(12)} bytes  ${query.name}\n`);
          if (round === 0) {
            answers.set(key, parseAnswer(key, reply));
            timings.set(key, { ms: [], bytes: reply.bodyLength, cpuMs: [] });
          } else {
            timings.get(key)?.ms.push(reply.ms);
            timings.get(key)?.cpuMs.push(cpuMs);
          }
        });
      }
    }
  }
  queryOtherCores = other();
} finally {
  const peaks = new Map<System, number>();
  for (const server of servers.values()) peaks.set(server.system, (vmHwmKb(server.proc.pid) ?? NaN) * 1024);

  // ---- report ---------------------------------------------------------------------------------
  const present = [...servers.keys()];
  const cell = (system: System, query: Query) => {
    const t = timings.get(`${system} ${query.name}`);
    if (!t || t.ms.length === 0) return 'n/a';
    return `${num(median(t.ms), 1)} (best ${num(Math.min(...t.ms), 1)})`;
  };
  const ratio = (system: System, query: Query) => {
    const mine = timings.get(`ours ${query.name}`);
    const theirs = timings.get(`${system} ${query.name}`);
    if (!mine?.ms.length || !theirs?.ms.length) return 'n/a';
    return `${num(median(theirs.ms) / median(mine.ms))}×`;
  };
  const peers = present.filter((s) => s !== 'ours');
  console.log(`# PromQL: ours vs ${peers.map((s) => SYSTEM_NAMES[s]).join(' and ')}\n\n\`${commandLine()}\`\n\n${machine()}\n`);
  console.log(`${int(SERIES)} counters × ${int(SAMPLES)} samples at 15 s (${int(TOTAL_SAMPLES)} samples, ${HOURS} h from ${new Date(START_MS).toISOString().slice(0, 10)}), grouped by \`${GROUP}\` (${LINES} values); ${int(bodyCount)} remote write bodies (one shard of series per connection, each shard in time order) of up to ${SERIES_PER_BODY} series × ${SLICE} samples (${mib(bodyBytes)} snappy) sent on ${CONNECTIONS} connections; range queries over the ${HOURS} h at step 60 s (${int(HOURS * 60 + 1)} steps); one query at a time on one connection, a warm-up round then ${ROUNDS} rounds; ${present.map((s) => servers.get(s)!.version).join(', ')}; every server on our certificate (HTTPS)${otherLoad(queryOtherCores)}\n`);
  const header = ['query', ...present.map((s) => `${SYSTEM_NAMES[s]} ms, median (best)`), ...peers.map((s) => `${SYSTEM_NAMES[s]} ÷ ours`)];
  console.log(markdownTable(header, QUERIES.map((q) => [`\`${q.name}\`${q.goal ? ` (goal ${q.goal})` : ''}`, ...present.map((s) => cell(s, q)), ...peers.map((s) => ratio(s, q))])));
  console.log('');
  console.log(markdownTable(['query', ...present.map((s) => `${SYSTEM_NAMES[s]}: answer bytes, server CPU ms (median)`)], QUERIES.map((q) => [
    `\`${q.name}\``,
    ...present.map((s) => {
      const t = timings.get(`${s} ${q.name}`);
      return t ? `${int(t.bytes)} B, ${num(median(t.cpuMs), 0)} ms` : 'n/a';
    }),
  ])));
  console.log('');
  console.log(markdownTable(['query', ...peers.map((s) => `ours vs ${SYSTEM_NAMES[s]}`)], QUERIES.map((q) => [
    `\`${q.name}\``,
    ...peers.map((s) => {
      const a = answers.get(`ours ${q.name}`);
      const b = answers.get(`${s} ${q.name}`);
      return a && b ? describeAgreement(compareAnswers(a, b)) : 'n/a';
    }),
  ])));
  console.log('');
  console.log(markdownTable(['figure', ...present.map((s) => SYSTEM_NAMES[s])], [
    ['remote write ingest, samples/s', ...present.map((s) => {
      const r = ingests.get(s);
      return r ? `${int(r.samplesPerSecond)}${r.retries ? ` (${r.retries} retries)` : ''}${otherLoad(r.otherCores)}` : 'n/a';
    })],
    ['at rest before the queries', ...present.map((s) => settled.get(s) ?? 'n/a')],
    [`\`sum(count_over_time(x[${HOURS}h]))\` (expected ${int(TOTAL_SAMPLES)})`, ...present.map((s) => (counted.has(s) ? int(counted.get(s)!) : 'n/a'))],
    [`peak RSS ${peakReset ? 'during the queries (VmHWM reset before them)' : 'of the whole run'}`, ...present.map((s) => mib(peaks.get(s) ?? NaN))],
  ]));
  console.log(phases.report((phase) => {
    const system = present.find((s) => phase.startsWith(SYSTEM_NAMES[s]));
    return system ? servers.get(system)!.proc.logTail(30) : [];
  }));

  for (const server of servers.values()) await server.stop().catch(() => {});
  if (flags.keep === true) {
    process.stderr.write(`data dirs kept: ${[service.dataDir, ...[...servers.values()].flatMap((s) => s.paths)].join(' ')}\n`);
    await service.stop();
  } else {
    await service.dispose();
    for (const server of servers.values()) for (const p of server.paths) fs.rmSync(p, { recursive: true, force: true });
  }
  process.exitCode = phases.failures.length > 0 ? 1 : 0;
}
