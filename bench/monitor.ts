/**
 * Monitor cost (issue 15): 100 collections × 100 tags, one alarm rule per tag, every collection
 * ticking at `--tick-ms` while ingest runs flat out; the same ingest with the monitor off and on.
 *
 *   npm run bench:monitor -- [--seconds 30] [--tick-ms 1000] [--collections 100] [--tags 100]
 *                            [--connections 4] [--rows 100] [--encoding hsw1|json]
 *                            [--alarm-percent 3] [--warmup 10] [--wait-idle 0]
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
 * - Phases, each with the same ingest: a warm-up (not reported); "monitor off", with
 *   `PUT /svcapi/monitor/config {enabled:false}` from before the first rule was made, so no tick
 *   has run and the storage workers watch nothing; "monitor on"; "monitor off again" (switched
 *   off after running, which shows what switching it off leaves behind). After switching on the
 *   script waits two ticks with no ingest, so the first tick's look at what was written while
 *   the monitor was off falls outside the window.
 * - During every phase alike: `GET /svcapi/health` every 10 ms from a worker thread,
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
import { cpuMeter, json, processCpuSeconds, startOurService, threadCpuSplit, vmRssKb, waitForQuiet, type HttpsClient, type Reply } from './service.js';

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
const alarmPercent = flag('alarm-percent', 3, (v) => v >= 0 && v <= 100, 'a percentage');
const warmupSeconds = flag('warmup', 10, (v) => v >= 0, 'a number >= 0');
const waitIdle = flag('wait-idle', 0, (v) => v >= 0, 'a number >= 0');
const encoding = values.encoding ?? 'hsw1';
if (encoding !== 'hsw1' && encoding !== 'json') throw new Error(`--encoding must be hsw1 or json, got ${encoding}`);
const pointsPerRequest = tagCount * rows;
const SUMMARY_POLL_MS = 200;

// ---- the signals and their rules ------------------------------------------------------------

const round2 = (x: number) => Math.round(x * 100) / 100;

/**
 * Unit noise for the walks: uniform, mean 0, variance 1 (summed over many steps it is as good as
 * Gaussian here), drawn once. Each signal reads it from its own offset: two
 * PRNG calls per point cost the client as much CPU as encoding the body.
 */
const NOISE_SIZE = 1 << 18;
const NOISE = (() => {
  const r = prng(1515);
  const table = Float64Array.from({ length: NOISE_SIZE }, () => r() - 0.5);
  // Exactly mean 0 and variance 1: a walk sums about √(2 τ) draws' worth of the table's mean
  // (τ in ms), so a leftover mean of 0.004 would move every walk off its centre by about σ.
  const mean = table.reduce((a, b) => a + b, 0) / NOISE_SIZE;
  const deviation = Math.sqrt(table.reduce((a, b) => a + (b - mean) ** 2, 0) / NOISE_SIZE);
  return table.map((v) => (v - mean) / deviation);
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

const monitorStatus = async () => expectOk(`GET ${MONITOR}/status`, await admin.get(`${MONITOR}/status`), [200]) as MonitorStatus;
const eventsTotal = async () => Number(expectOk(`GET ${MONITOR}/alarm/events`, await admin.get(`${MONITOR}/alarm/events?limit=1`), [200]).total_count);
const activeTotal = async () => Number(expectOk(`GET ${MONITOR}/alarm/events/active`, await admin.get(`${MONITOR}/alarm/events/active`), [200]).total_count);

/**
 * Monitor samples the workers answered and the write frames they waited behind (taken between a
 * sample's sending and its running), summed over the shards. /metrics shows the workers' numbers
 * one scrape old, so the second scrape has the ones the first asked for.
 */
async function sampleWaits(): Promise<{ samples: number; frames: number }> {
  await admin.get('/metrics');
  await sleep(300);
  const text = (await admin.get('/metrics')).body.toString();
  const sum = (name: string) => [...text.matchAll(new RegExp(`^${name}\\{[^}]*\\} (\\S+)$`, 'gm'))].reduce((n, m) => n + Number(m[1]), 0);
  return { samples: sum('historian_monitor_samples_total'), frames: sum('historian_monitor_sample_waited_frames_total') };
}

async function setMonitor(on: boolean): Promise<void> {
  expectOk(`PUT ${MONITOR}/config`, await put(admin, `${MONITOR}/config`, { enabled: on }), [200]);
  const status = await monitorStatus();
  if (status.enabled !== on) throw new Error(`PUT ${MONITOR}/config {enabled: ${on}} answered ok but /status says enabled: ${status.enabled}`);
}

/** Resolves once `count` more ticks have run (`tick_number` advanced); fails after 20 ticks' time. */
async function waitForTicks(count: number): Promise<void> {
  const first = (await monitorStatus()).tick_number;
  const deadline = performance.now() + tickMs * (count + 20);
  for (;;) {
    const now = (await monitorStatus()).tick_number;
    if (now >= first + count) return;
    if (performance.now() > deadline) throw new Error(`the monitor is enabled but tick_number went from ${first} to ${now} in ${num((tickMs * (count + 20)) / 1000, 1)} s (${count} ticks expected)`);
    await sleep(Math.min(100, tickMs / 4));
  }
}

// ---- setup ----------------------------------------------------------------------------------

const setupStart = performance.now();
process.stderr.write('setup: monitor off, collections, one write of every tag, rules, monitoring at the tick rate\n');
// Off before the first rule: no tick has run, so the storage workers watch nothing and the "off"
// phase is the service without a monitor.
await setMonitor(false);
await runPool(8, collections.values(), (c) => createCollection(admin, c.scope));
await runPool(8, collections.values(), async (c) => void (await write(admin, c, 1)));
const ruleJobs = collections.flatMap((c, k) => tagNames.map((tag, t) => ruleFor(c.id, tag, t, c.signals[t], alarming[k][t])));
let rulesMade = 0;
const rulesStart = performance.now();
let lapStart = rulesStart;
const ruleLaps: number[] = [];
await runPool(8, ruleJobs.values(), async (rule) => {
  expectOk(`POST ${MONITOR}/rule (${rule.collection_id} ${rule.tag})`, await admin.postJson(`${MONITOR}/rule`, rule), [201]);
  if (++rulesMade % 1000 === 0) {
    const now = performance.now();
    ruleLaps.push((now - lapStart) / 1000);
    process.stderr.write(`  ${int(rulesMade)} rules, the last 1,000 in ${num(ruleLaps.at(-1)!, 1)} s\n`);
    lapStart = now;
  }
});
const rulesSeconds = (performance.now() - rulesStart) / 1000;
await runPool(8, collections.values(), async (c) => {
  expectOk(`PUT ${MONITOR}/collections/${c.id}/enable`, await put(admin, `${MONITOR}/collections/${enc(c.id)}/enable`, { tick_rate_ms: tickMs }), [200]);
});
const statusAtStart = await monitorStatus();
const setupSeconds = (performance.now() - setupStart) / 1000;
process.stderr.write(`  status: ${statusAtStart.collection_count} collections monitored, ${statusAtStart.rule_count} rules; setup took ${num(setupSeconds, 1)} s\n`);
if (statusAtStart.rule_count !== ruleJobs.length || statusAtStart.collection_count !== collectionCount) {
  throw new Error(`GET ${MONITOR}/status counts ${statusAtStart.rule_count} rules and ${statusAtStart.collection_count} monitored collections; ${ruleJobs.length} and ${collectionCount} were made`);
}

/** Rules listed per collection and those whose tag has no index (the service learns it at a tick). */
async function checkRules(): Promise<{ listed: number; withoutTag: number }> {
  let listed = 0;
  let withoutTag = 0;
  await runPool(8, collections.values(), async (c) => {
    const rules = expectOk(`GET ${MONITOR}/rule?collection_id=${c.id}`, await admin.get(`${MONITOR}/rule?collection_id=${enc(c.id)}`), [200]) as Array<{ tag_index: number | null }>;
    listed += rules.length;
    withoutTag += rules.filter((r) => typeof r.tag_index !== 'number').length;
  });
  return { listed, withoutTag };
}

// ---- one phase ------------------------------------------------------------------------------

interface PhaseFigures {
  label: string;
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
  /** Per-shard monitor samples answered in the window, and the write frames they waited behind in all. */
  samples: number;
  waitedFrames: number;
  summaryFailures: string[];
  lastTriggered: number;
  eventsOpened: number;
  activeAtEnd: number;
  /** The server's resident memory at the end of the window. */
  rssBytes: number;
}

/** Polls the summary until `stop()`; each distinct tick number after `afterTick` keeps its evaluation time. */
function pollSummary(afterTick: number): { stop(): Promise<{ ticks: Map<number, number>; failures: string[]; lastTriggered: number }> } {
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
          // Ticks that ran before the window (the summary keeps the last one) are not the phase's.
          if (Number.isFinite(s.tick_number) && s.tick_number > afterTick && !ticks.has(s.tick_number)) ticks.set(s.tick_number, s.evaluation_duration_ms);
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
  // On: two ticks without ingest first, since the first tick after switching on looks at
  // everything written while the monitor was off. Off: a tick under way finishes.
  if (monitorOn) await waitForTicks(2);
  else await sleep(tickMs + 200);
  const eventsBefore = await eventsTotal();
  const tickBefore = (await monitorStatus()).tick_number;
  const waitsBefore = await sampleWaits();
  const pid = service.process.pid;
  const other = cpuMeter();
  const before = { main: threadCpuSplit(pid), server: processCpuSeconds(pid), self: process.cpuUsage() };
  const probe = startHealthProbe(service.port, service.ca, 10, '/svcapi/health');
  const summaries = pollSummary(tickBefore);
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
  const waitsAfter = await sampleWaits();
  const points = ingest.requests * pointsPerRequest;
  const figures: PhaseFigures = {
    label,
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
    rssBytes: (vmRssKb(pid) ?? NaN) * 1024,
    samples: waitsAfter.samples - waitsBefore.samples,
    waitedFrames: waitsAfter.frames - waitsBefore.frames,
  };
  process.stderr.write(
    `  ${label}: ${int(figures.pointsPerSecond)} points/s, main thread ${num((figures.mainUser + figures.mainSystem) / figures.seconds)} cores, ${figures.tickAdvance} ticks (${figures.ticks.size} sampled), ${figures.eventsOpened} events opened\n`,
  );
  return figures;
}

// ---- the run --------------------------------------------------------------------------------

if (warmupSeconds > 0) await phase('warm-up', false, warmupSeconds);
const off = await phase('monitor off', false, seconds);
await setMonitor(true);
await waitForTicks(2);
// Every rule must have found its tag by now, or the monitor would evaluate fewer tags than it says.
const ruleCheck = await checkRules();
process.stderr.write(`  ${int(ruleCheck.listed)} rules listed, ${ruleCheck.withoutTag} without a tag index\n`);
// What a tick costs with nothing else going on, to tell evaluation from waiting behind writes.
const IDLE_TICKS = 5;
const idlePoll = pollSummary((await monitorStatus()).tick_number);
await waitForTicks(IDLE_TICKS);
await sleep(SUMMARY_POLL_MS * 2);
const idleTicks = (await idlePoll.stop()).ticks;
process.stderr.write(`  ${IDLE_TICKS} ticks without ingest: ${[...idleTicks.values()].map((v) => num(v, 1)).join(', ')} ms\n`);
const on = await phase('monitor on', true, seconds);
const offAgain = await phase('monitor off again', false, seconds);
const peakRss = service.process.peakRssBytes();

// ---- figures ----------------------------------------------------------------------------------

const ratio = on.pointsPerSecond / off.pointsPerSecond;
const cost = 1 - ratio;
// The "on" window sits between the two "off" ones: against their mean, a drift over the run
// (the machine, the JIT, the store growing) cancels out.
const bracketed = on.pointsPerSecond / ((off.pointsPerSecond + offAgain.pointsPerSecond) / 2);
const idleEvaluation = percentiles([...idleTicks.values()]);
const idleCell = idleTicks.size === 0 ? 'none sampled' : `p50 ${ms(idleEvaluation.p50)}, max ${ms(idleEvaluation.max)} (${idleTicks.size} ticks)`;
const evaluation = (p: PhaseFigures) => percentiles([...p.ticks.values()].filter((v) => Number.isFinite(v)));
const onEvaluation = evaluation(on);
const all = [off, on, offAgain];
const each = (f: (p: PhaseFigures) => string): string[] => all.map(f);
const cores = (cpuSeconds: number, p: PhaseFigures) => `${num(cpuSeconds / p.seconds)} cores`;
const evaluationCell = (p: PhaseFigures) => {
  if (p.ticks.size === 0) return p.tickAdvance === 0 ? 'no tick' : `${int(p.tickAdvance)} ticks, none sampled`;
  const e = evaluation(p);
  return `p50 ${ms(e.p50)}, p99 ${ms(e.p99)}, max ${ms(e.max)} (${int(p.ticks.size)} of ${int(p.tickAdvance)} ticks)`;
};
const healthCell = (p: PhaseFigures) => {
  const h = percentiles(p.health.latencies);
  return `p50 ${ms(h.p50)}, p99 ${ms(h.p99)}, max ${ms(h.max)}${p.health.failures.length ? `; ${p.health.failures.length} failed: ${p.health.failures[0]}` : ''}`;
};

const table: string[][] = [
  ['**ingest, points/s**', ...each((p) => `**${int(p.pointsPerSecond)}**`), `on ÷ off **${num(ratio, 3)}** (monitor cost ${num(cost * 100, 1)}%, goal < 5%); on ÷ mean of both off ${num(bracketed, 3)}; off again ÷ off ${num(offAgain.pointsPerSecond / off.pointsPerSecond, 3)}`],
  ['points written in the window, requests (503 retried)', ...each((p) => `${int(p.points)} in ${num(p.seconds, 1)} s, ${int(p.ingest.requests)} (${int(p.retries)})`), `${tagCount} tags × ${rows} rows a request`],
  ['write request latency', ...each((p) => `p50 ${ms(p.ingest.p50)}, p99 ${ms(p.ingest.p99)}`), `${connections} requests in flight`],
  ['**tick `evaluation_duration_ms`**', ...each(evaluationCell), `${int(ruleJobs.length)} rules in ${collectionCount} collections at ${tickMs} ms; goal p99 < 20 ms`],
  ['write frames a tick\'s sample waited behind (per shard sample)', ...each((p) => (p.samples === 0 ? 'no sample' : `${num(p.waitedFrames / p.samples, 2)} (${int(p.waitedFrames)} over ${int(p.samples)})`)), 'taken by the worker between the sample\'s sending and its running: a count, not a duration'],
  ['tick `evaluation_duration_ms` without ingest', '', idleCell, '', `the ${IDLE_TICKS} ticks before the "on" window`],
  ['events opened in the window', ...each((p) => int(p.eventsOpened)), `${int(alarmingCount)} tags (${num(alarmPercent, 1)}%) have a limit 2 σ from their centre`],
  ['unresolved events at the end, `triggered_tags` in the last summary', ...each((p) => `${int(p.activeAtEnd)}, ${Number.isFinite(p.lastTriggered) ? int(p.lastTriggered) : 'n/a'}`), ''],
  ['**server main thread CPU**', ...each((p) => `**${cores(p.mainUser + p.mainSystem, p)}** (user ${num(p.mainUser, 1)} s, system ${num(p.mainSystem, 1)} s)`), ''],
  ['server process CPU (all threads)', ...each((p) => cores(p.serverCpu, p)), ''],
  ['server CPU per million points', ...each((p) => `${num((p.serverCpu / p.points) * 1e6, 3)} CPU-s`), ''],
  ['**GET /svcapi/health** (every 10 ms)', ...each(healthCell), ''],
  ['this process CPU (bodies, TLS, probes)', ...each((p) => cores(p.selfCpu, p)), ''],
  ['other processes on the machine', ...each((p) => `${num(p.otherCores)} cores`), ''],
  ['server RSS at the end of the window', ...each((p) => mib(p.rssBytes)), ''],
];
if (all.some((p) => p.summaryFailures.length > 0)) table.push(['/alarm/summary failures', ...each((p) => `${p.summaryFailures.length}${p.summaryFailures.length ? `: ${p.summaryFailures[0]}` : ''}`), '']);

console.log('# Monitor cost under ingest\n');
console.log(`\`${commandLine()}\`\n`);
console.log(
  `${machine()}; default settings; ${collectionCount} collections × ${tagCount} tags, one rule each (${int(ruleCheck.listed)} listed, ${ruleCheck.withoutTag} without a tag index), ` +
    `${encoding.toUpperCase()} bodies over /svcapi/write_fast built while sending, ${connections} connections, ${seconds} s per phase after a ${warmupSeconds} s warm-up; setup ${num(setupSeconds, 1)} s. ` +
    `"monitor off": \`PUT /svcapi/monitor/config {enabled: false}\` from before the first rule, so no tick has ever run; "off again": switched off after the "on" phase\n`,
);
console.log(markdownTable(['figure', 'monitor off', 'monitor on', 'monitor off again', ''], table));
console.log('');
console.log(
  `Goals of issue 15: monitor cost ${num(cost * 100, 1)}% of ingest throughput (goal < 5%): ${cost < 0.05 ? 'met' : 'NOT met'} (${num((1 - bracketed) * 100, 1)}% against the mean of both "off" windows); p99 evaluation ${ms(onEvaluation.p99)} (goal < 20 ms): ${onEvaluation.p99 < 20 ? 'met' : 'NOT met'}.`,
);
const disturbed = all.filter((p) => p.otherCores >= 0.1);
if (disturbed.length > 0) {
  console.log('');
  console.log(`⚠ Other processes used the cores during ${disturbed.map((p) => `"${p.label}" (${num(p.otherCores, 1)} cores)`).join(', ')}: those windows are not comparable; run it again on a quiet machine.`);
}
console.log('');
// A slow tick shows here as one bad value, a tick that grows with the backlog as a climb.
console.log(`\`evaluation_duration_ms\` of each tick of the "on" window, in order (ms): ${[...on.ticks.values()].map((v) => num(v, 1)).join(' ')}`);
console.log('');
console.log(`Server peak RSS (VmHWM, setup included): ${mib(peakRss)}; rule setup ${num(rulesSeconds, 1)} s for ${int(ruleJobs.length)} \`POST /svcapi/monitor/rule\` (8 at a time): ${ruleLaps.map((v) => num(v, 1)).join(', ')} s per 1,000.`);

admin.close();
if (values.keep) process.stderr.write(`data dir kept: ${service.dataDir}\n`);
else await service.dispose();
