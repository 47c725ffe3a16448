/**
 * Monitor cost (issue 15): 100 collections × 100 tags, one alarm rule per tag, every collection
 * ticking at `--tick-ms` while ingest runs flat out; the same ingest with the monitor off and on.
 *
 *   npm run bench:monitor -- [--seconds 30] [--tick-ms 1000] [--collections 100] [--tags 100]
 *                            [--connections 4] [--rows 100] [--encoding hsw1|json]
 *                            [--alarm-percent 3] [--rounds 1] [--warmup 5] [--wait-idle 0]
 *                            [--keep] [--server-log FILE]
 *
 * - Setup: collections `acme/site-k/unit-k/main`, each tag written once (so it has its index
 *   before its rule is made), one rule per tag (`POST /svcapi/monitor/rule`), every collection
 *   enabled at `--tick-ms` (`PUT /svcapi/monitor/collections/{id}/enable`).
 * - Values: per tag a slow mean-reverting walk plus a little noise, rounded to 2 decimals (the
 *   style of dataset.ts), evolved in data time so its alarms come at a rate that does not depend
 *   on the ingest rate. Most tags have limits 8 σ away from their centre and never alarm;
 *   `--alarm-percent` of them have one limit 2 σ away and cross it now and then. Rules mix
 *   deadbands, on-delays (two ticks) and off-delays (one tick).
 * - Ingest: `--connections` requests in flight for `--seconds`, each one collection × every tag ×
 *   `--rows` rows (10,000 points at the defaults), collections in turn; timestamps follow the
 *   wall clock (1 ms apart, never behind the collection's last one). Bodies are built just before
 *   they are sent (the run is too long to build them beforehand), the same way in both phases.
 * - Phases: a warm-up with the monitor off (not reported), then `--rounds` pairs of "monitor
 *   off" (`PUT /svcapi/monitor/config {enabled:false}`) and "monitor on". After each switch the
 *   script waits two ticks with no ingest, so the first tick's look at what was written while the
 *   monitor was off falls outside the window.
 * - During every phase, the same in both: `GET /svcapi/health` every 10 ms from a worker thread,
 *   and `GET /svcapi/monitor/alarm/summary` every 200 ms, whose distinct `tick_number`s give the
 *   `evaluation_duration_ms` samples. CPU over the window: the server's main thread
 *   (`/proc/<pid>/task/<pid>/stat`), the whole server, this process, other processes.
 * - Events opened: the growth of `total_count` of `GET /svcapi/monitor/alarm/events`.
 */

import fs from 'node:fs';
import { parseArgs } from 'node:util';
import { hsw1, tagKeyedJson, type Chunk, type Scope } from './dataset.js';
import { startHealthProbe } from './health-probe.js';
import { createCollection } from './ours.js';
import { prng } from '../test/support/prng.js';
import { BenchError, commandLine, describeReply, int, machine, markdownTable, mib, ms, num, percentiles, rateLoop, runPool, sleep, type RateResult } from './runner.js';
import { cpuMeter, json, processCpuSeconds, startOurService, threadCpuSplit, waitForQuiet, type HttpsClient, type Reply } from './service.js';

// ---- flags ----------------------------------------------------------------------------------

const { values } = parseArgs({
  options: {
    seconds: { type: 'string' },
    'tick-ms': { type: 'string' },
    collections: { type: 'string' },
    tags: { type: 'string' },
    connections: { type: 'string' },
    rows: { type: 'string' },
    encoding: { type: 'string' },
    'alarm-percent': { type: 'string' },
    rounds: { type: 'string' },
    warmup: { type: 'string' },
    'wait-idle': { type: 'string' },
    'server-log': { type: 'string' },
    keep: { type: 'boolean' },
  },
  strict: true,
});
const flag = (name: string, fallback: number, check: (v: number) => boolean, what: string): number => {
  const raw = (values as Record<string, unknown>)[name];
  if (raw === undefined) return fallback;
  const v = Number(raw);
  if (!check(v)) throw new Error(`--${name} must be ${what}, got ${String(raw)}`);
  return v;
};
const positiveInt = (name: string, fallback: number) => flag(name, fallback, (v) => Number.isInteger(v) && v > 0, 'a positive integer');
const seconds = flag('seconds', 30, (v) => v > 0, 'a positive number');
const tickMs = flag('tick-ms', 1000, (v) => Number.isInteger(v) && v >= 100, 'an integer >= 100 (the service minimum)');
const collectionCount = positiveInt('collections', 100);
const tagCount = positiveInt('tags', 100);
const connections = positiveInt('connections', 4);
const rows = positiveInt('rows', 100);
const rounds = positiveInt('rounds', 1);
const alarmPercent = flag('alarm-percent', 3, (v) => v >= 0 && v <= 100, 'a percentage');
const warmupSeconds = flag('warmup', 5, (v) => v >= 0, 'a number >= 0');
const waitIdle = flag('wait-idle', 0, (v) => v >= 0, 'a number >= 0');
const encoding = values.encoding ?? 'hsw1';
if (encoding !== 'hsw1' && encoding !== 'json') throw new Error(`--encoding must be hsw1 or json, got ${encoding}`);
const pointsPerRequest = tagCount * rows;
const SUMMARY_POLL_MS = 200;

// ---- the signals and their rules ------------------------------------------------------------

const round2 = (x: number) => Math.round(x * 100) / 100;

/**
 * Unit noise for the walks: uniform on [-√3, √3] (mean 0, variance 1; summed over many steps it
 * is as good as Gaussian here), drawn once. Each signal reads it from its own offset: two
 * PRNG calls per point cost the client as much CPU as encoding the body.
 */
const NOISE_SIZE = 1 << 16;
const NOISE = (() => {
  const r = prng(1515);
  return Float64Array.from({ length: NOISE_SIZE }, () => (r() - 0.5) * 3.4641016151377544);
})();

/**
 * One analog tag: an Ornstein-Uhlenbeck walk around `centre` with stationary deviation `sigma`
 * and correlation time `tauMs`, evolved exactly over each gap between timestamps, plus
 * measurement noise of a few hundredths; values rounded to 2 decimals.
 */
class AnalogSignal {
  readonly centre: number;
  readonly sigma: number;
  private readonly tauMs: number;
  private readonly noise: number;
  private readonly oneMsDecay: number;
  private readonly oneMsStep: number;
  private x: number;
  private at: number;
  private lastTs = NaN;

  constructor(seed: number) {
    const r = prng(seed);
    this.centre = Math.round(50 + r() * 400);
    this.sigma = round2(0.5 + r() * 4.5);
    this.tauMs = 5_000 + r() * 25_000;
    this.noise = 0.01 + r() * 0.02;
    this.oneMsDecay = Math.exp(-1 / this.tauMs);
    this.oneMsStep = this.sigma * Math.sqrt(1 - this.oneMsDecay * this.oneMsDecay);
    this.at = Math.floor(r() * NOISE_SIZE);
    this.x = this.centre + this.sigma * NOISE[this.at];
  }

  fill(timestamps: Float64Array, out: Float64Array): void {
    const { centre, oneMsDecay, oneMsStep } = this;
    const noise100 = this.noise * 100;
    let x = this.x;
    let at = this.at;
    let lastTs = this.lastTs;
    for (let i = 0; i < timestamps.length; i++) {
      const dt = Number.isNaN(lastTs) ? 1 : timestamps[i] - lastTs;
      lastTs = timestamps[i];
      let decay = oneMsDecay;
      let step = oneMsStep;
      if (dt !== 1) {
        decay = Math.exp(-dt / this.tauMs);
        step = this.sigma * Math.sqrt(1 - decay * decay);
      }
      x = centre + (x - centre) * decay + step * NOISE[at];
      at = (at + 1) & (NOISE_SIZE - 1);
      out[i] = Math.round(x * 100 + noise100 * NOISE[at ^ 0x5a5a]) / 100;
    }
    this.x = x;
    this.at = at;
    this.lastTs = lastTs;
  }
}

const SEVERITIES = ['warn', 'error', 'critical', 'info'] as const;

interface RuleBody {
  collection_id: string;
  tag: string;
  name: string;
  limHi: number;
  limLo: number;
  deadband: number;
  on_delay_ms: number;
  off_delay_ms: number;
  severity: string;
}

/** The rule of tag `t` of a collection; `alarming` tags get one limit 2 σ from the centre. */
function ruleFor(collectionId: string, tag: string, t: number, signal: AnalogSignal, alarming: boolean): RuleBody {
  const { centre, sigma } = signal;
  const nearHigh = t % 2 === 0;
  const hiK = alarming && nearHigh ? 2 : 8;
  const loK = alarming && !nearHigh ? 2 : 8;
  return {
    collection_id: collectionId,
    tag,
    name: `${tag} ${alarming ? (nearHigh ? 'high' : 'low') : 'range'}`,
    limHi: round2(centre + hiK * sigma),
    limLo: round2(centre - loK * sigma),
    deadband: t % 3 === 0 ? 0 : round2(0.25 * sigma),
    on_delay_ms: t % 4 === 1 ? 2 * tickMs : 0,
    off_delay_ms: t % 5 === 2 ? tickMs : 0,
    severity: SEVERITIES[t % SEVERITIES.length],
  };
}

interface Collection {
  id: string;
  scope: Scope;
  signals: AnalogSignal[];
  /** Last timestamp written; the next request starts after it. */
  cursorMs: number;
}

const tagNames = Array.from({ length: tagCount }, (_, t) => `TI-${1001 + t}`);
const random = prng(15);
const collections: Collection[] = Array.from({ length: collectionCount }, (_, k) => {
  const scope: Scope = { organization: 'acme', site: `site-${k}`, unit: `unit-${k}`, grid: 'main' };
  return { id: `${scope.organization}/${scope.site}/${scope.unit}/${scope.grid}`, scope, signals: tagNames.map((_, t) => new AnalogSignal(15_000 + k * 1009 + t)), cursorMs: 0 };
});
/** Which tags have a limit near their walk: a fixed draw, the same every run. */
const alarming = collections.map(() => tagNames.map(() => random() * 100 < alarmPercent));
const alarmingCount = alarming.flat().filter(Boolean).length;

/** The next request of a collection: `rows` timestamps 1 ms apart ending at the wall clock, or right after the last ones if those are newer. */
function nextChunk(c: Collection, rowCount: number): Chunk {
  const first = Math.max(c.cursorMs + 1, Date.now() - rowCount + 1);
  const timestamps = new Float64Array(rowCount);
  for (let i = 0; i < rowCount; i++) timestamps[i] = first + i;
  c.cursorMs = first + rowCount - 1;
  const columns = c.signals.map((signal, t) => {
    const values = new Float64Array(rowCount);
    signal.fill(timestamps, values);
    return { name: tagNames[t], values };
  });
  return { timestamps, columns, points: rowCount * columns.length };
}

const contentType = encoding === 'json' ? 'application/json' : 'application/octet-stream';
const encode = (c: Collection, chunk: Chunk): string | Uint8Array => (encoding === 'json' ? tagKeyedJson(c.scope, chunk) : hsw1(c.scope, chunk));

// ---- the service and the setup --------------------------------------------------------------

if (waitIdle > 0) await waitForQuiet(waitIdle);
process.stderr.write(`starting the service; ${int(collectionCount)} collections × ${int(tagCount)} tags, ${int(alarmingCount)} tags with a limit near their walk\n`);
const service = await startOurService({});
if (values['server-log']) {
  const log = fs.createWriteStream(values['server-log']);
  service.process.child.stdout!.pipe(log);
  service.process.child.stderr!.pipe(log);
}
// A failure anywhere below (a wrong answer, a route missing) ends the run with what the server
// said and the tail of its log, and the data dir goes unless --keep.
process.once('uncaughtException', (error) => {
  process.stderr.write(`\nFAILED: ${error instanceof Error ? error.message : String(error)}\n`);
  if (error instanceof BenchError) process.stderr.write(`${error.details.join('\n')}\n`);
  else if (error instanceof Error && error.stack) process.stderr.write(`${error.stack}\n`);
  process.stderr.write(`--- server log (last lines) ---\n${service.process.logTail(30).join('\n')}\n`);
  void (values.keep ? service.stop() : service.dispose()).finally(() => process.exit(1));
});
const admin = service.client(8);
const MONITOR = '/svcapi/monitor';
const enc = encodeURIComponent;

function expectOk(what: string, reply: Reply, statuses = [200, 201]): any {
  if (!statuses.includes(reply.status)) throw describeReply(what, reply);
  return json(reply);
}
const put = (client: HttpsClient, path: string, body: unknown) => client.request('PUT', path, JSON.stringify(body), { 'content-type': 'application/json' });

/** Writes one chunk of a collection; 503 (backpressure) is retried like the ingest benches do. */
async function write(client: HttpsClient, c: Collection, rowCount: number): Promise<{ reply: Reply; retries: number }> {
  const chunk = nextChunk(c, rowCount);
  const body = encode(c, chunk);
  for (let attempt = 0; ; attempt++) {
    const reply = await client.request('POST', '/svcapi/write_fast', body, { 'content-type': contentType });
    if (reply.status === 503 && attempt < 200) {
      await sleep(Math.min(200, 10 * (attempt + 1)));
      continue;
    }
    if (reply.status !== 200 || json(reply).success !== true || json(reply).points !== chunk.points) throw describeReply(`POST /svcapi/write_fast (${c.id}, ${chunk.points} points)`, reply);
    return { reply, retries: attempt };
  }
}

const setupStart = performance.now();
process.stderr.write('setup: collections, one write of every tag, rules, monitoring at the tick rate\n');
await runPool(8, collections.values(), (c) => createCollection(admin, c.scope));
await runPool(8, collections.values(), async (c) => void (await write(admin, c, 1)));
const ruleJobs = collections.flatMap((c, k) => tagNames.map((tag, t) => ruleFor(c.id, tag, t, c.signals[t], alarming[k][t])));
let rulesMade = 0;
await runPool(8, ruleJobs.values(), async (rule) => {
  expectOk(`POST ${MONITOR}/rule (${rule.collection_id} ${rule.tag})`, await admin.postJson(`${MONITOR}/rule`, rule), [201]);
  if (++rulesMade % 2000 === 0) process.stderr.write(`  ${int(rulesMade)} rules\n`);
});
await runPool(8, collections.values(), async (c) => {
  expectOk(`PUT ${MONITOR}/collections/${c.id}/enable`, await put(admin, `${MONITOR}/collections/${enc(c.id)}/enable`, { tick_rate_ms: tickMs }), [200]);
});
// Every rule must have found its tag, or the monitor would be evaluating fewer tags than it says.
let rulesWithoutTag = 0;
let rulesListed = 0;
await runPool(8, collections.values(), async (c) => {
  const listed = expectOk(`GET ${MONITOR}/rule?collection_id=${c.id}`, await admin.get(`${MONITOR}/rule?collection_id=${enc(c.id)}`), [200]) as Array<{ tag_index: number | null }>;
  rulesListed += listed.length;
  rulesWithoutTag += listed.filter((r) => r.tag_index === null || r.tag_index === undefined).length;
});
const statusAtStart = expectOk(`GET ${MONITOR}/status`, await admin.get(`${MONITOR}/status`), [200]) as MonitorStatus;
const setupSeconds = (performance.now() - setupStart) / 1000;
process.stderr.write(
  `  ${int(rulesListed)} rules listed (${rulesWithoutTag} without a tag index); status: ${statusAtStart.collection_count} collections monitored, ${statusAtStart.rule_count} rules; setup took ${num(setupSeconds, 1)} s\n`,
);
if (rulesListed !== ruleJobs.length || statusAtStart.collection_count !== collectionCount) {
  process.stderr.write(`  ⚠ expected ${ruleJobs.length} rules and ${collectionCount} monitored collections\n`);
}

// ---- one phase ------------------------------------------------------------------------------

interface MonitorStatus {
  enabled: boolean;
  collection_count: number;
  rule_count: number;
  last_snapshot_ms: number;
  tick_number: number;
}

interface Summary {
  collection_count: number;
  triggered_tags: number;
  timestamp_ms: number;
  tick_number: number;
  evaluation_duration_ms: number;
}

interface PhaseFigures {
  label: string;
  monitorOn: boolean;
  ingest: RateResult;
  points: number;
  pointsPerSecond: number;
  retries: number;
  seconds: number;
  mainUser: number;
  mainSystem: number;
  serverCpu: number;
  selfCpu: number;
  otherCores: number;
  health: { latencies: number[]; failures: string[] };
  /** tick_number → evaluation_duration_ms, from the summary polls. */
  ticks: Map<number, number>;
  tickAdvance: number;
  summaryFailures: string[];
  lastTriggered: number;
  eventsOpened: number;
  activeAtEnd: number;
}

const eventsTotal = async () => Number(expectOk(`GET ${MONITOR}/alarm/events`, await admin.get(`${MONITOR}/alarm/events?limit=1`), [200]).total_count);
const activeTotal = async () => Number(expectOk(`GET ${MONITOR}/alarm/events/active`, await admin.get(`${MONITOR}/alarm/events/active`), [200]).total_count);
const monitorStatus = async () => expectOk(`GET ${MONITOR}/status`, await admin.get(`${MONITOR}/status`), [200]) as MonitorStatus;

async function setMonitor(on: boolean): Promise<void> {
  expectOk(`PUT ${MONITOR}/config`, await put(admin, `${MONITOR}/config`, { enabled: on }), [200]);
  const status = await monitorStatus();
  if (status.enabled !== on) throw new Error(`PUT ${MONITOR}/config {enabled: ${on}} answered ok but /status says enabled: ${status.enabled}`);
}

/** Polls the summary until `stop()`; each distinct tick number keeps its evaluation time. */
function pollSummary(): { stop(): Promise<{ ticks: Map<number, number>; failures: string[]; lastTriggered: number }> } {
  const client = service.client(1);
  const ticks = new Map<number, number>();
  const failures: string[] = [];
  let lastTriggered = NaN;
  let stopping = false;
  const loop = (async () => {
    while (!stopping) {
      const started = performance.now();
      try {
        const reply = await client.get(`${MONITOR}/alarm/summary`);
        if (reply.status !== 200) failures.push(`HTTP ${reply.status}: ${reply.body.subarray(0, 200).toString()}`);
        else {
          const s = json(reply) as Summary;
          if (Number.isFinite(s.tick_number) && s.tick_number > 0 && !ticks.has(s.tick_number)) ticks.set(s.tick_number, s.evaluation_duration_ms);
          lastTriggered = s.triggered_tags;
        }
      } catch (err) {
        failures.push(err instanceof Error ? err.message : String(err));
      }
      const wait = SUMMARY_POLL_MS - (performance.now() - started);
      if (wait > 0 && !stopping) await sleep(wait);
    }
  })();
  return {
    async stop() {
      stopping = true;
      await loop;
      client.close();
      return { ticks, failures: failures.slice(0, 20), lastTriggered };
    },
  };
}

async function phase(label: string, monitorOn: boolean, phaseSeconds: number): Promise<PhaseFigures> {
  await setMonitor(monitorOn);
  // Two ticks without ingest: the first tick after switching on looks at everything written while
  // the monitor was off; its events and its duration belong to the switch, not to the phase.
  await sleep(2 * tickMs + 200);
  const eventsBefore = await eventsTotal();
  const tickBefore = (await monitorStatus()).tick_number;
  const pid = service.process.pid;
  const other = cpuMeter();
  const before = { main: threadCpuSplit(pid), server: processCpuSeconds(pid), self: process.cpuUsage() };
  const probe = startHealthProbe(service.port, service.ca, 10, '/svcapi/health');
  const summaries = pollSummary();
  const client = service.client(connections);
  let next = 0;
  let retries = 0;
  const ingest = await rateLoop({
    label: `${label}: ingest ${encoding.toUpperCase()} into ${int(collectionCount * tagCount)} tags`,
    connections,
    seconds: phaseSeconds,
    request: async () => {
      const written = await write(client, collections[next++ % collections.length], rows);
      retries += written.retries;
      return written.reply;
    },
    check: () => {},
  });
  const after = { main: threadCpuSplit(pid), server: processCpuSeconds(pid), self: process.cpuUsage(before.self) };
  const otherCores = other();
  const polled = await summaries.stop();
  const health = await probe.stop();
  client.close();
  const tickAfter = (await monitorStatus()).tick_number;
  const eventsOpened = (await eventsTotal()) - eventsBefore;
  const activeAtEnd = await activeTotal();
  const points = ingest.requests * pointsPerRequest;
  const figures: PhaseFigures = {
    label,
    monitorOn,
    ingest,
    points,
    pointsPerSecond: points / ingest.seconds,
    retries,
    seconds: ingest.seconds,
    mainUser: after.main.user - before.main.user,
    mainSystem: after.main.system - before.main.system,
    serverCpu: after.server - before.server,
    selfCpu: (after.self.user + after.self.system) / 1e6,
    otherCores,
    health,
    ticks: polled.ticks,
    tickAdvance: tickAfter - tickBefore,
    summaryFailures: polled.failures,
    lastTriggered: polled.lastTriggered,
    eventsOpened,
    activeAtEnd,
  };
  process.stderr.write(
    `  ${label}: ${int(figures.pointsPerSecond)} points/s, main thread ${num((figures.mainUser + figures.mainSystem) / figures.seconds)} cores, ${figures.tickAdvance} ticks (${figures.ticks.size} sampled), ${figures.eventsOpened} events opened\n`,
  );
  return figures;
}

// ---- the run --------------------------------------------------------------------------------

if (warmupSeconds > 0) await phase('warm-up (monitor off)', false, warmupSeconds);
const offPhases: PhaseFigures[] = [];
const onPhases: PhaseFigures[] = [];
for (let round = 1; round <= rounds; round++) {
  const suffix = rounds > 1 ? ` (round ${round} of ${rounds})` : '';
  offPhases.push(await phase(`monitor off${suffix}`, false, seconds));
  onPhases.push(await phase(`monitor on${suffix}`, true, seconds));
}
const peakRss = service.process.peakRssBytes();

// ---- figures ----------------------------------------------------------------------------------

/** The phases of one kind as one: sums over the windows, percentiles over every sample. */
function merged(list: PhaseFigures[]) {
  const sum = (f: (p: PhaseFigures) => number) => list.reduce((s, p) => s + f(p), 0);
  const secondsAll = sum((p) => p.seconds);
  const evaluations = list.flatMap((p) => [...p.ticks.values()]).filter((v) => Number.isFinite(v));
  const requestMs = percentiles(list.flatMap((p) => (p.ingest.requests > 0 ? [p.ingest.p50] : [])));
  return {
    seconds: secondsAll,
    points: sum((p) => p.points),
    pointsPerSecond: sum((p) => p.points) / secondsAll,
    requests: sum((p) => p.ingest.requests),
    requestP99: Math.max(...list.map((p) => p.ingest.p99)),
    requestP50: requestMs.p50,
    retries: sum((p) => p.retries),
    mainUser: sum((p) => p.mainUser),
    mainSystem: sum((p) => p.mainSystem),
    serverCpu: sum((p) => p.serverCpu),
    selfCpu: sum((p) => p.selfCpu),
    otherCores: sum((p) => p.otherCores * p.seconds) / secondsAll,
    health: percentiles(list.flatMap((p) => p.health.latencies)),
    healthSamples: sum((p) => p.health.latencies.length),
    healthFailures: list.flatMap((p) => p.health.failures),
    evaluation: percentiles(evaluations),
    evaluationSamples: evaluations.length,
    tickAdvance: sum((p) => p.tickAdvance),
    summaryFailures: list.flatMap((p) => p.summaryFailures),
    eventsOpened: sum((p) => p.eventsOpened),
    activeAtEnd: list.at(-1)!.activeAtEnd,
    lastTriggered: list.at(-1)!.lastTriggered,
  };
}
const off = merged(offPhases);
const on = merged(onPhases);
const ratio = on.pointsPerSecond / off.pointsPerSecond;
const cost = 1 - ratio;
const cores = (cpuSeconds: number, over: number) => `${num(cpuSeconds / over)} cores`;
const cpuPerMillion = (m: typeof off) => `${num((m.serverCpu / m.points) * 1e6, 3)} CPU-s`;
const both = (f: (m: typeof off) => string): [string, string] => [f(off), f(on)];
const evaluationCell = (m: typeof off) =>
  m.evaluationSamples === 0 ? 'no tick' : `p50 ${ms(m.evaluation.p50)}, p99 ${ms(m.evaluation.p99)}, max ${ms(m.evaluation.max)} (${int(m.evaluationSamples)} of ${int(m.tickAdvance)} ticks)`;
const healthCell = (m: typeof off) =>
  `p50 ${ms(m.health.p50)}, p99 ${ms(m.health.p99)}, max ${ms(m.health.max)}, ${int(m.healthSamples)} answers${m.healthFailures.length ? `; ${m.healthFailures.length} failed: ${m.healthFailures[0]}` : ''}`;

const table: string[][] = [
  ['**ingest, points/s**', ...both((m) => `**${int(m.pointsPerSecond)}**`), `on ÷ off = **${num(ratio, 3)}** (monitor cost ${num(cost * 100, 1)}%; goal < 5%)`],
  ['points written, requests (503 retried)', ...both((m) => `${int(m.points)} in ${num(m.seconds, 1)} s, ${int(m.requests)} requests (${int(m.retries)})`), ''],
  ['write request latency', ...both((m) => `p50 ${ms(m.requestP50)}, p99 ${ms(m.requestP99)}`), `${connections} connections in flight`],
  ['**tick `evaluation_duration_ms`**', ...both(evaluationCell), `${int(collectionCount * tagCount)} rules over ${collectionCount} collections at ${tickMs} ms; goal p99 < 20 ms`],
  ['ticks during the window (`tick_number` advance)', ...both((m) => int(m.tickAdvance)), `sampled every ${SUMMARY_POLL_MS} ms from /alarm/summary`],
  ['events opened', ...both((m) => int(m.eventsOpened)), `${int(alarmingCount)} tags (${num(alarmPercent, 1)}%) have a limit 2 σ from their centre`],
  ['unresolved events at the end, `triggered_tags` in the last summary', ...both((m) => `${int(m.activeAtEnd)}, ${Number.isFinite(m.lastTriggered) ? int(m.lastTriggered) : 'n/a'}`), ''],
  ['**server main thread CPU**', ...both((m) => `**${cores(m.mainUser + m.mainSystem, m.seconds)}** (user ${num(m.mainUser, 1)} s, system ${num(m.mainSystem, 1)} s)`), ''],
  ['server process CPU (all threads)', ...both((m) => cores(m.serverCpu, m.seconds)), ''],
  ['server CPU per million points', ...both(cpuPerMillion), ''],
  ['**GET /svcapi/health** (every 10 ms)', ...both(healthCell), ''],
  ['this process CPU (bodies, TLS, probes)', ...both((m) => cores(m.selfCpu, m.seconds)), ''],
  ['other processes on the machine', ...both((m) => `${num(m.otherCores)} cores`), ''],
];
if (on.summaryFailures.length || off.summaryFailures.length) {
  table.push(['/alarm/summary failures', ...both((m) => `${m.summaryFailures.length}${m.summaryFailures.length ? `: ${m.summaryFailures[0]}` : ''}`), '']);
}

console.log('# Monitor cost under ingest\n');
console.log(`\`${commandLine()}\`\n`);
console.log(
  `${machine()}; default settings; ${collectionCount} collections × ${tagCount} tags, one rule each (${int(rulesListed)} listed, ${rulesWithoutTag} without a tag index), ` +
    `${encoding.toUpperCase()} bodies of ${tagCount} tags × ${rows} rows over /svcapi/write_fast built while sending, ${connections} connections, ${rounds} × ${seconds} s per phase after a ${warmupSeconds} s warm-up; setup ${num(setupSeconds, 1)} s\n`,
);
console.log(markdownTable(['figure', 'monitor off', 'monitor on', ''], table));
console.log('');
console.log(`Goals of issue 15: monitor cost ${num(cost * 100, 1)}% of ingest throughput (goal < 5%): ${cost < 0.05 ? 'met' : 'NOT met'}; p99 evaluation ${ms(on.evaluation.p99)} (goal < 20 ms): ${on.evaluation.p99 < 20 ? 'met' : 'NOT met'}.`);
if (rounds > 1) {
  console.log('');
  console.log(`Per round, points/s off → on: ${offPhases.map((p, i) => `${int(p.pointsPerSecond)} → ${int(onPhases[i].pointsPerSecond)} (${num(onPhases[i].pointsPerSecond / p.pointsPerSecond, 3)})`).join('; ')}`);
}
console.log('');
console.log(`Server peak RSS (VmHWM): ${mib(peakRss)}.`);

admin.close();
if (values.keep) process.stderr.write(`data dir kept: ${service.dataDir}\n`);
else await service.dispose();
