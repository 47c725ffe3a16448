/**
 * Live data over WebSocket (WIRE.md part 2 "Live data over WebSocket"): N subscribers on
 * `GET /svcapi/ws`, each one subscription to the data set's 100 tags (and the marker tag), while
 * the data set's values are written at a fixed rate and then flat out; delivery latency from the
 * write's acknowledgement to the point's arrival, what the subscribers cost ingest, the server's
 * main-thread CPU and peak RSS, and whether every subscriber received every marker.
 *
 *   npm run bench:live -- [--subscribers 1000] [--clients 2] [--format json|binary] [--rate 1000]
 *                         [--seconds 30] [--flat-seconds 15] [--marker-hz 10] [--connections 4]
 *                         [--batch-ms 100] [--phases A,R0,R,F,D] [--quick] [--wait-idle 0] [--keep]
 *
 * Phases, one service throughout (see bench/README.md "Live data"):
 *   A  flat-out ingest, 0 subscribers          (HSW1 over /svcapi/write_fast, 4 connections)
 *   R0 the fixed-rate load, 0 subscribers       (main-thread CPU without the fan-out)
 *   R  the fixed-rate load, N subscribers       (100 tags at rate/100 Hz through /svcapi/write, a
 *                                                marker in every write)
 *   F  flat-out ingest, N subscribers           (as A, plus a marker write at --marker-hz)
 *   D  flat-out ingest, 0 subscribers again     (drift)
 *
 * Markers: tag LIVE-SEQ of the same collection, value = a sequence number. The writer records
 * the time each marker's write was answered 200, every client the time each marker arrived on
 * each socket (clockMs: the machine's monotonic clock, the same in every
 * process); a marker acknowledged but never received on some socket is counted as missing.
 */

import { fork, type ChildProcess } from 'node:child_process';
import { parseArgs } from 'node:util';
import { Dataset, hsw1, tagKeyedJson, type Chunk } from './dataset.js';
import { ask as askClient } from './client-processes.js';
import { clockMs, MARKER_TAG, type FromClient, type PhaseCounts, type ToClient } from './live-ws-client.js';
import { createCollection, scopeFor } from './ours.js';
import { commandLine, describeReply, int, machine, markdownTable, mib, ms, num, percentiles, Phases, runPool, sleep } from './runner.js';
import { cpuMeter, json, processCpuSeconds, startOurService, threadCpuSeconds, vmRssKb, waitForQuiet, type HttpsClient, type Reply } from './service.js';

const { values } = parseArgs({
  options: {
    subscribers: { type: 'string' },
    clients: { type: 'string' },
    format: { type: 'string' },
    rate: { type: 'string' },
    seconds: { type: 'string' },
    'flat-seconds': { type: 'string' },
    'marker-hz': { type: 'string' },
    connections: { type: 'string' },
    'batch-ms': { type: 'string' },
    quick: { type: 'boolean' },
    'wait-idle': { type: 'string' },
    keep: { type: 'boolean' },
    phases: { type: 'string' },
  },
  strict: true,
});
const quick = values.quick === true;
const positive = (name: string, fallback: number, integer = true): number => {
  const raw = (values as Record<string, unknown>)[name];
  if (raw === undefined) return fallback;
  const v = Number(raw);
  if (!(v > 0) || (integer && !Number.isInteger(v))) throw new Error(`--${name} must be a positive ${integer ? 'integer' : 'number'}, got ${String(raw)}`);
  return v;
};
const subscriberCount = positive('subscribers', quick ? 100 : 1000);
const clientCount = Math.min(positive('clients', 2), subscriberCount);
const format = values.format ?? 'json';
if (format !== 'json' && format !== 'binary') throw new Error(`--format must be json or binary, got ${format}`);
const rate = positive('rate', 1000, false);
const rateSeconds = positive('seconds', quick ? 5 : 30, false);
const baselineSeconds = Math.min(rateSeconds, quick ? 3 : 10);
const flatSeconds = positive('flat-seconds', quick ? 3 : 15, false);
const markerHz = positive('marker-hz', 10, false);
const connections = positive('connections', 4);
const batchMs = values['batch-ms'] === undefined ? undefined : positive('batch-ms', 100);
const waitIdle = values['wait-idle'] === undefined ? 0 : positive('wait-idle', 0);

const ALL_PHASES = ['A', 'R0', 'R', 'F', 'D'] as const;
const wanted = new Set((values.phases ?? ALL_PHASES.join(',')).split(',').map((p) => p.trim()));
for (const p of wanted) if (!(ALL_PHASES as readonly string[]).includes(p)) throw new Error(`--phases: ${p} is not one of ${ALL_PHASES.join(',')}`);
const TAGS = 100;
const scope = scopeFor('live');
/** The 100 tags' noisy values; the fixed-rate run takes its values from here, timestamps from the clock. */
const rateDataset = new Dataset({ tags: TAGS, points: 1, tagsPerRequest: TAGS, pointsPerRequest: 1 });
const tagNames = rateDataset.tagNames;

// Fixed rate: `rate` points/s over the 100 tags, i.e. rate/100 Hz per tag. Writes go out at that
// frequency up to 100 a second; above it each write carries several timestamps per tag.
const perTagHz = Math.min(1000, rate / TAGS);
const writesPerSecond = Math.min(100, perTagHz);
const rowsPerWrite = Math.max(1, Math.round(perTagHz / writesPerSecond));
const rowStepMs = Math.max(1, Math.round(1000 / perTagHz));
const rateRoute = '/svcapi/write';

// Flat out: the data set's bodies (10 tags × 1,000 points of HSW1), built once before any
// clock; each further lap over them moves their timestamps on by the lap's length in place.
const lapPoints = quick ? 8640 : 86_400;
const flatDataset = new Dataset({ tags: TAGS, points: lapPoints, tagsPerRequest: 10, pointsPerRequest: 1000 });
const flatRoute = '/svcapi/write_fast';

const phases = new Phases();
const rows: string[][] = [];

// ---- the service ------------------------------------------------------------------------------

if (waitIdle > 0) await waitForQuiet(waitIdle);
process.stderr.write(`starting the service; ${int(subscriberCount)} subscribers (${format}) from ${clientCount} client processes\n`);
const service = await startOurService({
  // Every subscriber is the same user here: the per-user bounds are lifted to the run's size.
  ws: { ...(batchMs !== undefined ? { batchMs } : {}), maxSocketsPerUser: Math.max(16, subscriberCount), maxWatchedTagsPerUser: Math.max(10_000, subscriberCount * (tagNames.length + 1)) },
});
const serverPid = service.process.pid;
const admin = service.client(2);
const flatClient = service.client(connections);
const rateClient = service.client(8);
const markerClient = service.client(4);
await createCollection(admin, scope);
// Every tag exists before anyone subscribes (the same values a first write would bring).
{
  const seed = await admin.postJson(rateRoute, { ...scope, tags: Object.fromEntries([...tagNames, MARKER_TAG].map((t) => [t, [[Date.UTC(2023, 11, 31), 0]]])) });
  if (seed.status !== 200) throw describeReply(`POST ${rateRoute} (seed)`, seed);
}

// ---- bodies -----------------------------------------------------------------------------------

interface FlatBody {
  bytes: Uint8Array;
  points: number;
  /** The body's timestamps as a view into `bytes`, moved on lap by lap. */
  timestamps: Float64Array;
  lap: number;
}
const buildStart = performance.now();
const flatBodies: FlatBody[] = [];
for (const chunk of flatDataset.chunks()) {
  const bytes = hsw1(scope, chunk);
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const rowsInBody = view.getUint32(8, true);
  // HSW1: 14-byte header, the scope JSON, padding to 8, then the rows' f64 timestamps.
  const at = (14 + view.getUint16(12, true) + 7) & ~7;
  const timestamps = new Float64Array(bytes.buffer, bytes.byteOffset + at, rowsInBody);
  if (timestamps[0] !== chunk.timestamps[0] || timestamps[rowsInBody - 1] !== chunk.timestamps[rowsInBody - 1]) throw new Error('HSW1 layout: timestamps not where expected');
  flatBodies.push({ bytes, points: chunk.points, timestamps, lap: 0 });
}
const lapMs = lapPoints * 1000;
let flatLap = 0;
process.stderr.write(`  ${int(flatBodies.length)} flat-out bodies (${mib(flatBodies.reduce((n, b) => n + b.bytes.byteLength, 0))}) built in ${num((performance.now() - buildStart) / 1000)} s\n`);

/** The fixed-rate writes' values: one row of the 100 tags per timestamp, drawn from the data set. */
const rateValues = (() => {
  const d = new Dataset({ tags: TAGS, points: Math.ceil(rateSeconds * writesPerSecond * rowsPerWrite) + Math.ceil(baselineSeconds * writesPerSecond * rowsPerWrite) + 10, tagsPerRequest: TAGS, pointsPerRequest: rowsPerWrite });
  return d.chunks();
})();

// ---- client processes -------------------------------------------------------------------------

interface Client {
  child: ChildProcess;
  first: number;
  sockets: number;
}
const clients: Client[] = [];
for (let c = 0, first = 0; c < clientCount; c++) {
  const sockets = Math.floor(subscriberCount / clientCount) + (c < subscriberCount % clientCount ? 1 : 0);
  clients.push({ child: fork(new URL('./live-ws-client.js', import.meta.url), [], { serialization: 'advanced', execArgv: [], stdio: ['ignore', 'inherit', 'inherit', 'ipc'] }), first, sockets });
  first += sockets;
}
const killClients = () => {
  for (const c of clients) if (c.child.exitCode === null && c.child.signalCode === null) c.child.kill();
};
process.on('exit', killClients);

const ask = <Op extends FromClient['op']>(client: Client, message: ToClient, op: Op) => askClient<FromClient, Op>(client.child, message, op);
const askAll = <Op extends FromClient['op']>(message: ToClient, op: Op) => Promise.all(clients.map((c) => ask(c, message, op)));
const clientCpuSeconds = async () => (clients.length && clients[0].child.connected ? (await askAll({ op: 'cpu' }, 'cpu')).reduce((sum, r) => sum + r.seconds, 0) : 0);

// ---- markers ----------------------------------------------------------------------------------

const rateWrites = Math.round(rateSeconds * writesPerSecond);
const flatMarkers = Math.ceil(flatSeconds * markerHz) + 50;
/** Seq 0 .. rateWrites-1: the fixed-rate run's writes; then the flat-out run's marker writes. */
const maxSeq = rateWrites + flatMarkers;
const ackedAt = new Float64Array(maxSeq).fill(NaN);
/** Which phase's table row each seq belongs to. */
const RATE_PHASE = 1;
const FLAT_PHASE = 2;

// ---- measuring a window -----------------------------------------------------------------------

interface Window {
  seconds: number;
  mainCpu: number;
  serverCpu: number;
  clientCpu: number;
  selfCpu: number;
  otherCores: number;
  maxRss: number;
}

/** Runs `work` and reads the CPU of the server's main thread, the whole server, the clients and this process over it; samples RSS every 100 ms. */
async function measured<T>(work: () => Promise<T>): Promise<{ result: T; window: Window }> {
  const other = cpuMeter();
  const before = { main: threadCpuSeconds(serverPid), server: processCpuSeconds(serverPid), clients: await clientCpuSeconds(), self: process.cpuUsage() };
  let maxRssKb = vmRssKb(serverPid) ?? 0;
  const sampler = setInterval(() => (maxRssKb = Math.max(maxRssKb, vmRssKb(serverPid) ?? 0)), 100);
  const start = performance.now();
  try {
    const result = await work();
    const seconds = (performance.now() - start) / 1000;
    const self = process.cpuUsage(before.self);
    const clientsNow = await clientCpuSeconds();
    return {
      result,
      window: {
        seconds,
        mainCpu: threadCpuSeconds(serverPid) - before.main,
        serverCpu: processCpuSeconds(serverPid) - before.server,
        clientCpu: clientsNow - before.clients,
        selfCpu: (self.user + self.system) / 1e6,
        otherCores: Math.max(0, other() - (clientsNow - before.clients) / seconds),
        maxRss: Math.max(maxRssKb, vmRssKb(serverPid) ?? 0) * 1024,
      },
    };
  } finally {
    clearInterval(sampler);
  }
}

/** Two decimals, or three significant digits below 0.1 (a subscriber-bound rate is a small fraction of A's). */
const ratio = (x: number) => `${x >= 0.1 || !(x > 0) ? num(x) : x.toPrecision(3)}×`;
const cores = (cpu: number, w: Window) => `${num(cpu / w.seconds)} cores (${num(cpu, 1)} CPU-s in ${num(w.seconds, 1)} s)`;

// ---- flat-out ingest --------------------------------------------------------------------------

interface FlatResult {
  points: number;
  requests: number;
  retries: number;
  seconds: number;
  pointsPerSecond: number;
  latency: { p50: number; p99: number; max: number };
  failure?: string;
}

function checkWrite(route: string, reply: Reply, points: number): void {
  if (reply.status !== 200) throw describeReply(`POST ${route}`, reply);
  const answer = json(reply) as { success?: boolean; points?: number };
  if (answer.success !== true || answer.points !== points) throw describeReply(`POST ${route} (${points} points sent)`, reply);
}

/** Sends the data set's bodies lap after lap, `connections` at a time, until `seconds` have passed; 503 is retried. */
async function flatOut(label: string, seconds: number): Promise<FlatResult> {
  let points = 0;
  let requests = 0;
  let retries = 0;
  const latencies: number[] = [];
  const start = performance.now();
  const deadline = start + seconds * 1000;
  let lastAck = start;
  let next = 0;
  const jobs = (function* () {
    while (performance.now() < deadline) {
      const body = flatBodies[next];
      if (body.lap !== flatLap) {
        const shift = (flatLap - body.lap) * lapMs;
        const ts = body.timestamps;
        for (let i = 0; i < ts.length; i++) ts[i] += shift;
        body.lap = flatLap;
      }
      yield body;
      if (++next === flatBodies.length) {
        next = 0;
        flatLap++;
      }
    }
  })();
  let reported = start;
  await runPool(connections, jobs, async (body) => {
    for (let attempt = 0; ; attempt++) {
      const reply = await flatClient.request('POST', flatRoute, body.bytes, { 'content-type': 'application/octet-stream' });
      requests++;
      latencies.push(reply.ms);
      if (reply.status === 503 && attempt < 200) {
        retries++;
        await sleep(Math.min(200, 10 * (attempt + 1)));
        continue;
      }
      checkWrite(flatRoute, reply, body.points);
      break;
    }
    points += body.points;
    lastAck = performance.now();
    if (lastAck - reported > 2000) {
      reported = lastAck;
      process.stderr.write(`  ${label}: ${int(points)} points, ${int(points / ((lastAck - start) / 1000))}/s\n`);
    }
  });
  // Leave the next phase a fresh lap, so no body is shared between phases.
  if (next !== 0) {
    next = 0;
    flatLap++;
  }
  const elapsed = (lastAck - start) / 1000;
  return { points, requests, retries, seconds: elapsed, pointsPerSecond: points / elapsed, latency: percentiles(latencies) };
}

/** A marker write every 1/markerHz s (not waiting for the previous answer) until `stop` resolves; seq from `firstSeq`. */
async function markerWrites(firstSeq: number, count: number, stop: Promise<unknown>): Promise<{ sent: number; failed: string[] }> {
  let stopped = false;
  void stop.finally(() => (stopped = true));
  const failed: string[] = [];
  const inFlight: Array<Promise<void>> = [];
  const start = performance.now();
  let k = 0;
  for (; k < count && !stopped; k++) {
    const wait = start + (k * 1000) / markerHz - performance.now();
    if (wait > 1) await sleep(wait);
    if (stopped) break;
    const seq = firstSeq + k;
    inFlight.push(
      markerClient.postJson(rateRoute, { ...scope, tags: { [MARKER_TAG]: [[Date.now(), seq]] } }).then(
        (reply) => {
          if (reply.status === 200) ackedAt[seq] = clockMs();
          else failed.push(`marker ${seq}: HTTP ${reply.status} ${reply.body.subarray(0, 200).toString()}`);
        },
        (err: unknown) => void failed.push(`marker ${seq}: ${err instanceof Error ? err.message : String(err)}`),
      ),
    );
  }
  await Promise.all(inFlight);
  return { sent: k, failed };
}

// ---- fixed rate -------------------------------------------------------------------------------

interface RateResult {
  /** Each write's latency by its index (NaN: no 200). */
  writeMs: Float64Array;
  writes: number;
  ok: number;
  failed: string[];
  seconds: number;
  latency: { p50: number; p99: number; max: number };
}

/** `writes` writes of the 100 tags (each `rowsPerWrite` timestamps) plus the marker, one every 1/writesPerSecond s, not waiting for earlier answers. */
async function rateRun(label: string, writes: number, firstSeq: number | null): Promise<RateResult> {
  const bodies: string[] = [];
  let ts = Math.ceil(Date.now() / 1000) * 1000 + 1000;
  for (let k = 0; k < writes; k++) {
    const chunk = rateValues.next().value as Chunk;
    const timestamps = new Float64Array(rowsPerWrite);
    for (let i = 0; i < rowsPerWrite; i++, ts += rowStepMs) timestamps[i] = ts;
    const columns = [...chunk.columns];
    if (firstSeq !== null) columns.push({ name: MARKER_TAG, values: new Float64Array(rowsPerWrite).fill(firstSeq + k) });
    bodies.push(tagKeyedJson(scope, { timestamps, columns, points: rowsPerWrite * columns.length }));
  }
  const failed: string[] = [];
  const latencies: number[] = [];
  const writeMs = new Float64Array(writes).fill(NaN);
  let ok = 0;
  const inFlight: Array<Promise<void>> = [];
  const start = performance.now();
  for (let k = 0; k < writes; k++) {
    const wait = start + (k * 1000) / writesPerSecond - performance.now();
    if (wait > 1) await sleep(wait);
    const seq = firstSeq === null ? null : firstSeq + k;
    const points = rowsPerWrite * (TAGS + (seq === null ? 0 : 1));
    inFlight.push(
      rateClient.request('POST', rateRoute, bodies[k], { 'content-type': 'application/json' }).then(
        (reply) => {
          const at = clockMs();
          try {
            checkWrite(rateRoute, reply, points);
            ok++;
            latencies.push(reply.ms);
            writeMs[k] = reply.ms;
            if (seq !== null) ackedAt[seq] = at;
          } catch (err) {
            failed.push(err instanceof Error ? err.message : String(err));
          }
        },
        (err: unknown) => void failed.push(err instanceof Error ? err.message : String(err)),
      ),
    );
    if (k > 0 && k % Math.round(writesPerSecond * 5) === 0) process.stderr.write(`  ${label}: ${int(k)} writes\n`);
  }
  await Promise.all(inFlight);
  return { writeMs, writes, ok, failed, seconds: (performance.now() - start) / 1000, latency: percentiles(latencies) };
}

/** Waits until every acknowledged marker in [from, to) has reached every open socket, or nothing new came for 5 s (at most 60 s). */
async function drain(from: number, to: number, sockets: number): Promise<void> {
  let acked = 0;
  for (let s = from; s < to; s++) if (!Number.isNaN(ackedAt[s])) acked++;
  let last = -1;
  let lastChange = performance.now();
  const started = performance.now();
  for (;;) {
    const counts = await askAll({ op: 'count' }, 'count');
    const now = counts.reduce((n, c) => n + c.markers, 0);
    if (now !== last) lastChange = performance.now();
    last = now;
    if (now >= markersOwedBefore + acked * sockets) return;
    if (performance.now() - lastChange > 5000 || performance.now() - started > 60_000) {
      process.stderr.write(`  drain: stopped waiting with ${int(markersOwedBefore + acked * sockets - now)} marker deliveries missing\n`);
      return;
    }
    await sleep(100);
  }
}
/** Marker deliveries owed by the phases before the current one (the clients count over the whole run). */
let markersOwedBefore = 0;

// ---- the run ----------------------------------------------------------------------------------

const flatRow = (label: string, r: FlatResult | null, w: Window | null, base: number | null) =>
  rows.push([
    label,
    r ? `${int(r.pointsPerSecond)} points/s${base ? ` (${ratio(r.pointsPerSecond / base)} A)` : ''}` : 'FAILED',
    r && w
      ? `${int(r.points)} points in ${num(r.seconds, 1)} s, ${int(r.requests)} requests (${r.retries} retried on 503), request p50 ${ms(r.latency.p50)}, p99 ${ms(r.latency.p99)}; server main thread ${cores(w.mainCpu, w)}, all threads ${cores(w.serverCpu, w)}; max RSS ${mib(w.maxRss)}${w.otherCores >= 0.1 ? `; ⚠ other processes kept ${num(w.otherCores, 1)} cores busy` : ''}`
      : '',
  ]);

if (wanted.has('A')) process.stderr.write(`A: flat-out ingest, 0 subscribers, ${flatSeconds} s\n`);
const a = !wanted.has('A') ? null : await phases.run('A flat-out, 0 subscribers', () => measured(() => flatOut('A', flatSeconds)));
if (wanted.has('A')) flatRow('**A** flat-out ingest, 0 subscribers (HSW1, /svcapi/write_fast)', a?.result ?? null, a?.window ?? null, null);
const baseRate = a?.result.pointsPerSecond ?? null;

const baselineWrites = Math.round(baselineSeconds * writesPerSecond);
if (wanted.has('R0')) process.stderr.write(`R0: ${int(rate)} points/s, 0 subscribers, ${baselineSeconds} s\n`);
const r0 = !wanted.has('R0') ? null : await phases.run('R0 fixed rate, 0 subscribers', () => measured(() => rateRun('R0', baselineWrites, null)));

process.stderr.write(`opening ${int(subscriberCount)} subscriptions from ${clientCount} client processes\n`);
const subscribeMessage = { ...scope, tags: [...tagNames, MARKER_TAG], format };
const openStart = performance.now();
const opened = await Promise.all(
  clients.map((c) =>
    ask(c, { op: 'open', url: `wss://localhost:${service.port}/svcapi/ws`, ca: service.ca, token: service.token, sockets: c.sockets, first: c.first, concurrency: 25, subscribe: subscribeMessage, maxSeq }, 'opened'),
  ),
);
const openSeconds = (performance.now() - openStart) / 1000;
const subscribedMs = opened.flatMap((o) => o.subscribedMs);
const openFailed = opened.reduce((n, o) => n + o.failed, 0);
const openFailures = opened.flatMap((o) => o.failures);
const subscribed = subscribedMs.length;
process.stderr.write(`  ${int(subscribed)} subscribed in ${num(openSeconds, 1)} s${openFailed ? `; ${openFailed} failed: ${openFailures[0]}` : ''}\n`);

for (const c of clients) c.child.send({ op: 'phase', index: RATE_PHASE } satisfies ToClient);
if (wanted.has('R')) process.stderr.write(`R: ${int(rate)} points/s (${writesPerSecond} writes/s of ${TAGS} tags × ${rowsPerWrite} + marker), ${int(subscribed)} subscribers, ${rateSeconds} s\n`);
const r = !wanted.has('R') ? null : await phases.run('R fixed rate, subscribers', () =>
  measured(async () => {
    const result = await rateRun('R', rateWrites, 0);
    await drain(0, rateWrites, subscribed);
    return result;
  }),
);
markersOwedBefore += Array.from(ackedAt.subarray(0, rateWrites)).filter((t) => !Number.isNaN(t)).length * subscribed;

for (const c of clients) c.child.send({ op: 'phase', index: FLAT_PHASE } satisfies ToClient);
if (wanted.has('F')) process.stderr.write(`F: flat-out ingest, ${int(subscribed)} subscribers, ${flatSeconds} s, markers at ${markerHz}/s\n`);
let markerOutcome: { sent: number; failed: string[] } | null = null;
const f = !wanted.has('F') ? null : await phases.run('F flat-out, subscribers', () =>
  measured(async () => {
    let ended!: () => void;
    const flatEnded = new Promise<void>((resolve) => (ended = resolve));
    const markersDone = markerWrites(rateWrites, flatMarkers, flatEnded);
    const result = await flatOut('F', flatSeconds).finally(ended);
    markerOutcome = await markersDone;
    await drain(rateWrites, maxSeq, subscribed);
    return result;
  }),
);

process.stderr.write('closing the subscribers\n');
const clientCpuTotal = await clientCpuSeconds().catch(() => NaN);
const results = await askAll({ op: 'finish' }, 'result');
await sleep(2000); // the server sees the sockets go

if (wanted.has('D')) process.stderr.write(`D: flat-out ingest, 0 subscribers again, ${flatSeconds} s\n`);
const d = !wanted.has('D') ? null : await phases.run('D flat-out, 0 subscribers again', () => measured(() => flatOut('D', flatSeconds)));

const peakRss = service.process.peakRssBytes();
const healthAtEnd = await admin.get('/svcapi/health').then((h) => String(h.status), (err: unknown) => `no answer: ${String(err)}`);

// ---- figures ----------------------------------------------------------------------------------

/** Latencies (receive − ack) and missing deliveries of the markers [from, to). */
function markerFigures(from: number, to: number) {
  const latencies: number[] = [];
  let acked = 0;
  let missing = 0;
  const socketsMissing = new Set<number>();
  results.forEach((res, c) => {
    const sockets = clients[c].sockets;
    for (let s = 0; s < sockets; s++) {
      for (let seq = from; seq < to; seq++) {
        const ack = ackedAt[seq];
        if (Number.isNaN(ack)) continue;
        const got = res.received[s * maxSeq + seq];
        if (Number.isNaN(got)) {
          missing++;
          socketsMissing.add(clients[c].first + s);
          continue;
        }
        const latency = got - ack;
        latencies.push(latency);
      }
    }
  });
  for (let seq = from; seq < to; seq++) if (!Number.isNaN(ackedAt[seq])) acked++;
  return { acked, latencies, missing, socketsMissing: socketsMissing.size, p: percentiles(latencies), min: latencies.reduce((lo, v) => Math.min(lo, v), latencies.length ? Infinity : NaN) };
}
const sumPhase = (index: number): PhaseCounts => results.reduce((sum, res) => ({ messages: sum.messages + (res.phases[index]?.messages ?? 0), bytes: sum.bytes + (res.phases[index]?.bytes ?? 0), points: sum.points + (res.phases[index]?.points ?? 0) }), { messages: 0, bytes: 0, points: 0 });
const closedIn = (index: number) => results.flatMap((res) => res.closed.filter((c) => c.phase === index));
const describeClosed = (list: Array<{ code: number; reason: string }>) => {
  const by = new Map<string, number>();
  for (const c of list) by.set(`${c.code} ${c.reason}`, (by.get(`${c.code} ${c.reason}`) ?? 0) + 1);
  return [...by].map(([k, n]) => `${int(n)} × ${k}`).join('; ');
};

const delivery = (label: string, m: ReturnType<typeof markerFigures>, counts: PhaseCounts, seconds: number, closedList: Array<{ code: number; reason: string }>, expectedPoints: number | null) => {
  rows.push([
    `${label}: delivery latency (write answered 200 → marker received)`,
    `**p50 ${ms(m.p.p50)}, p99 ${ms(m.p.p99)}, max ${ms(m.p.max)}**`,
    `${int(m.latencies.length)} deliveries; min ${ms(m.min)}`,
  ]);
  rows.push([
    `${label}: markers received`,
    m.missing === 0 ? `all: ${int(m.acked)} markers × ${int(subscribed)} subscribers` : `**${int(m.missing)} of ${int(m.acked * subscribed)} MISSING** (on ${int(m.socketsMissing)} subscribers)`,
    `${int(counts.messages)} messages, ${mib(counts.bytes)} (${mib(counts.bytes / seconds)}/s), ${int(counts.points)} points received${expectedPoints !== null ? ` of ${int(expectedPoints)} owed` : ''}${closedList.length ? `; sockets closed by the server: ${describeClosed(closedList)}` : '; no socket closed'}`,
  ]);
};

const windowRow = (label: string, w: Window) =>
  rows.push([
    `${label}: CPU`,
    `server main thread **${cores(w.mainCpu, w)}**`,
    `server all threads ${cores(w.serverCpu, w)}; client processes ${cores(w.clientCpu, w)}; this process ${cores(w.selfCpu, w)}; max RSS ${mib(w.maxRss)}${w.otherCores >= 0.1 ? `; ⚠ other processes kept ${num(w.otherCores, 1)} cores busy` : ''}`,
  ]);

if (r0) {
  rows.push([`**R0** ${int(rate)} points/s, 0 subscribers`, `${int(r0.result.ok)} of ${int(r0.result.writes)} writes answered 200`, `write p50 ${ms(r0.result.latency.p50)}, p99 ${ms(r0.result.latency.p99)}${r0.result.failed.length ? `; ${r0.result.failed.length} failed: ${r0.result.failed[0]}` : ''}`]);
  windowRow('R0', r0.window);
}
rows.push([
  `subscribers (${format}, ${TAGS} tags + marker each, one socket each)`,
  `${int(subscribed)} of ${int(subscriberCount)} subscribed`,
  `from ${clientCount} client processes, 25 at a time each, in ${num(openSeconds, 1)} s; connect → subscribed p50 ${ms(percentiles(subscribedMs).p50)}, p99 ${ms(percentiles(subscribedMs).p99)}${openFailed ? `; ${openFailed} failed: ${openFailures[0]}` : ''}`,
]);
if (r) {
  const res = r.result;
  rows.push([`**R** ${int(rate)} points/s, ${int(subscribed)} subscribers`, `${int(res.ok)} of ${int(res.writes)} writes answered 200`, `${writesPerSecond} writes/s of ${TAGS} tags × ${rowsPerWrite} rows + marker through ${rateRoute}; write p50 ${ms(res.latency.p50)}, p99 ${ms(res.latency.p99)}${res.failed.length ? `; ${res.failed.length} failed: ${res.failed[0]}` : ''}`]);
  delivery('R', markerFigures(0, rateWrites), sumPhase(RATE_PHASE), res.seconds, closedIn(RATE_PHASE), res.ok * rowsPerWrite * (TAGS + 1) * subscribed);
  windowRow('R', r.window);
}
if (f) {
  flatRow(`**F** flat-out ingest, ${int(subscribed)} subscribers`, f.result, f.window, baseRate);
  const mo = markerOutcome as { sent: number; failed: string[] } | null;
  const m = markerFigures(rateWrites, maxSeq);
  delivery(`F (a marker write every ${num(1000 / markerHz, 0)} ms beside the ingest)`, m, sumPhase(FLAT_PHASE), f.window.seconds, closedIn(FLAT_PHASE), null);
  if (mo && mo.failed.length) rows.push(['F: marker writes that failed', `${mo.failed.length} of ${mo.sent}`, mo.failed[0]]);
  windowRow('F', f.window);
}
if (wanted.has('D')) flatRow('**D** flat-out ingest, 0 subscribers again', d?.result ?? null, d?.window ?? null, baseRate);
rows.push(['server peak RSS (VmHWM, whole run)', mib(peakRss), `GET /svcapi/health at the end: ${healthAtEnd}`]);
rows.push(['client processes CPU, whole run', `${num(clientCpuTotal, 1)} CPU-s`, '']);
const dup = results.reduce((n, res) => n + res.duplicates, 0);
const unexpected = results.reduce((n, res) => n + res.unexpected, 0);
const odd = results.flatMap((res) => res.odd);
const errors = results.flatMap((res) => res.errors);
if (dup || unexpected || odd.length || errors.length) rows.push(['oddities', `${dup} duplicate markers, ${unexpected} unknown markers`, `${odd.length ? `messages not understood: ${odd[0]}` : ''}${errors.length ? ` socket errors: ${errors.join('; ')}` : ''}`]);

console.log('# Live data over WebSocket\n');
console.log(`\`${commandLine()}\`\n`);
console.log(`${machine()}; ${batchMs !== undefined ? `default settings except \`ws.batchMs\` ${batchMs}` : 'default settings'}\n`);
console.log(markdownTable(['figure', 'value', 'detail'], rows));
// Where in the window the slow ones were: a stall shows as a few bad seconds, a server that
// cannot keep up as a steady climb.
const list = (xs: number[]) => xs.map((v) => (Number.isFinite(v) ? Math.round(v).toString() : '-')).join(' ');
function worstPerSecond(from: number, count: number, perSecond: number, latencyOf: (k: number) => number[]): number[] {
  const out = new Array<number>(Math.ceil(count / perSecond)).fill(NaN);
  for (let k = 0; k < count; k++) for (const v of latencyOf(from + k)) if (!(out[Math.floor(k / perSecond)] >= v)) out[Math.floor(k / perSecond)] = v;
  return out;
}
const deliveriesOf = (seq: number): number[] => {
  const out: number[] = [];
  if (Number.isNaN(ackedAt[seq])) return out;
  results.forEach((res, c) => {
    for (let s = 0; s < clients[c].sockets; s++) {
      const got = res.received[s * maxSeq + seq];
      if (!Number.isNaN(got)) out.push(got - ackedAt[seq]);
    }
  });
  return out;
};
if (r) {
  console.log('');
  console.log(`R, slowest write (issue → 200) of each second (ms): ${list(worstPerSecond(0, rateWrites, writesPerSecond, (k) => [r.result.writeMs[k]]))}`);
  console.log('');
  console.log(`R, slowest delivery of the markers written in each second (ms): ${list(worstPerSecond(0, rateWrites, writesPerSecond, deliveriesOf))}`);
}
if (f) {
  console.log('');
  console.log(`F, slowest delivery of the markers written in each second (ms): ${list(worstPerSecond(rateWrites, flatMarkers, markerHz, deliveriesOf))}`);
}
console.log(phases.report(() => service.process.logTail(30)));

killClients();
for (const c of [admin, flatClient, rateClient, markerClient]) c.close();
if (values.keep) process.stderr.write(`data dir kept: ${service.dataDir}\n`);
else await service.dispose();
process.exitCode = phases.failures.length > 0 ? 1 : 0;
