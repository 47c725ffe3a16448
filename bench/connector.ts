/**
 * Connector backfill throughput (issue 18): recorded values copied from a PI Web API (the
 * simulator of test/support/pi-simulator.ts) into our service, in values/s. Prints one markdown table.
 *
 *   npm run bench:connector -- [--quick] [--tags 10] [--points 200000] [--latency-ms 20]
 *                              [--page-sizes 1000,10000,50000] [--keep] [--wait-idle 120]
 *
 * - PI: the simulator in this process on loopback, HTTPS with its own CA, Basic auth, one element
 *   with `--tags` attributes of `--points` values each at 1 s from 2024-01-01: a slow random walk
 *   plus noise at 2 decimals, about 1 % bad (`Good: false`, a System digital state).
 * - Ours: a fresh service (`startOurService`) per run with `connector.recordedPageSize` set, a
 *   saved connection (`/svcapi/connections`: base_url, basic auth, the simulator's CA as ca_pem),
 *   then `POST /svcapi/connector/backfill {connection_id, attributes, ...collection, start, end}`
 *   and `GET /svcapi/process-log/{job_id}` until the job is done. values/s is the values the job
 *   says it wrote over its finished_ms − started_ms (polling does not count).
 * - Runs: every page size, first with PI answering at once, then with `--latency-ms` added to
 *   every request (a PI server across a network).
 * - Checked after each run: each tag's points counted back (`count` per day through POST
 *   fast_query) equal the good numeric values the simulator holds for it, and the job's written
 *   and skipped counts equal the good and bad values.
 * - Peak RSS: the service's VmHWM before the backfill (after start and setup) and at its end.
 */

import { countStoredPoints, scopeFor, waitForJob, type JobRecord } from './ours.js';
import { BenchError, commandLine, describeReply, int, machine, markdownTable, mib, num, otherLoad, Phases, positiveIntOption, Progress, sizeOptions } from './runner.js';
import { cpuMeter, json, processCpuSeconds, startOurService, waitForQuiet, type OurService } from './service.js';
import { PiSimulator, type PiModelSpec, type RecordedTally } from '../test/support/pi-simulator.js';

const { sizes, values } = sizeOptions({ 'latency-ms': { type: 'string' }, 'page-sizes': { type: 'string' } });
const quick = sizes.quick;
// --tags and --points mean what they mean in the other scripts (how many series, how long each),
// with defaults of this bench's own.
const attributeCount = positiveIntOption(values, 'tags', quick ? 3 : 10);
const valuesPerAttribute = positiveIntOption(values, 'points', quick ? 20_000 : 200_000);
const latencyMs = positiveIntOption(values, 'latency-ms', 20);
const pageSizes = String(values['page-sizes'] ?? '1000,10000,50000')
  .split(',')
  .map((text) => {
    const n = Number(text);
    if (!Number.isInteger(n) || n < 10 || n > 150_000) throw new Error(`--page-sizes: ${text} is not a page size from 10 to 150000 (the simulator's maxCount limit)`);
    return n;
  });

const PI_USER = 'bench-reader';
const PI_PASSWORD = 'bench-pi-password';
const HISTORY_START = Date.UTC(2024, 0, 1);
const INTERVAL_MS = 1000;
const START = HISTORY_START;
const END = HISTORY_START + valuesPerAttribute * INTERVAL_MS - 1;
const SCOPE = scopeFor('pi-backfill');
const ELEMENT = '\\\\PIAF-BENCH\\Plant\\Boiler 1';
/** How often the running job is polled; the figures come from the job's own times. */
const POLL_MS = 100;

const tags = Array.from({ length: attributeCount }, (_, i) => `TI-${1001 + i}`);

/** One element whose attributes are named like the tags they are copied into. */
const spec: PiModelSpec = {
  seed: 18,
  servers: [{
    name: 'PIAF-BENCH',
    databases: [{
      name: 'Plant',
      elements: [{
        name: 'Boiler 1',
        templateName: 'Boiler',
        attributes: tags.map((tag, i) => ({
          name: tag,
          units: { name: 'degree Celsius', abbreviation: '°C' },
          recorded: {
            startMs: HISTORY_START, intervalMs: INTERVAL_MS, count: valuesPerAttribute,
            base: 60 + 10 * i, amplitude: 0, walk: 0.2, walkEveryValues: 60, noise: 0.3, decimals: 2, badRatio: 0.01,
          },
        })),
      }],
    }],
  }],
};

interface RunResult {
  job: JobRecord;
  written: number;
  skipped: number;
  recordedRequests: number;
  serviceCpuSeconds: number;
  simulatorCpuSeconds: number;
  otherCores: number;
  rssBeforeBytes: number;
  rssPeakBytes: number;
}

/** `backfilled N values of K attribute(s) into …; M skipped (…)`, the done message of a backfill. */
function countsOf(job: JobRecord): { written: number; skipped: number } {
  const m = /^backfilled (\d+) values .*; (\d+) skipped/.exec(job.message);
  if (!m) throw new BenchError(`job ${job.id} is done but its message does not say what it wrote: ${job.message}`);
  return { written: Number(m[1]), skipped: Number(m[2]) };
}

async function saveConnection(service: OurService, sim: PiSimulator): Promise<string> {
  const reply = await service.client(1).postJson('/svcapi/connections', {
    name: 'PI bench', base_url: sim.baseUrl, auth: 'basic', username: PI_USER, password: PI_PASSWORD,
    verify_tls: true, ca_pem: sim.caPem, timeout_ms: 60_000,
  });
  if (reply.status !== 200 || json(reply).id === undefined) throw describeReply('POST /svcapi/connections', reply);
  return String(json(reply).id);
}

/** The service's last log lines of each run, for the failure report (the service is gone by then). */
const logTails = new Map<string, string[]>();

async function backfillRun(label: string, sim: PiSimulator, pageSize: number, latency: number, expected: Map<string, RecordedTally>): Promise<RunResult> {
  await waitForQuiet(sizes.waitIdle);
  process.stderr.write(`${label}: starting the service\n`);
  const service = await startOurService({ connector: { recordedPageSize: pageSize } });
  try {
    const admin = service.client(1);
    const connectionId = await saveConnection(service, sim);
    const attributes = tags.map((tag) => ({ web_id: sim.webIdOf(`${ELEMENT}|${tag}`), tag }));
    sim.clearRequests();
    sim.setLatency(latency);
    const rssBeforeBytes = service.process.peakRssBytes();
    const other = cpuMeter();
    const serviceCpu = processCpuSeconds(service.process.pid);
    const simulatorCpu = process.cpuUsage();

    const started = await admin.postJson('/svcapi/connector/backfill', { connection_id: connectionId, attributes, ...SCOPE, start: START, end: END });
    if (started.status !== 200) throw describeReply('POST /svcapi/connector/backfill', started);
    const total = attributeCount * valuesPerAttribute;
    const progress = new Progress(label, total, 'values read');
    const job = await waitForJob(admin, json(started).job_id as string, POLL_MS, (running) => progress.update(Math.round(running.progress * total)));

    const serviceCpuSeconds = processCpuSeconds(service.process.pid) - serviceCpu;
    const { user, system } = process.cpuUsage(simulatorCpu);
    const otherCores = other();
    const rssPeakBytes = service.process.peakRssBytes();
    sim.setLatency(0);
    const { written, skipped } = countsOf(job);
    progress.done(written + skipped, (job.finished_ms! - job.started_ms) / 1000);

    const stored = await countStoredPoints(admin, SCOPE, tags, START, END);
    const wrong = tags.filter((tag) => stored.get(tag) !== expected.get(tag)!.goodNumeric);
    if (wrong.length > 0) {
      throw new BenchError(`points read back differ from the good numeric values the simulator holds: ${wrong.map((t) => `${t} ${stored.get(t)} ≠ ${expected.get(t)!.goodNumeric}`).join(', ')}`);
    }
    const goodNumeric = tags.reduce((n, t) => n + expected.get(t)!.goodNumeric, 0);
    const bad = tags.reduce((n, t) => n + expected.get(t)!.bad + expected.get(t)!.goodNonNumeric, 0);
    if (written !== goodNumeric || skipped !== bad) throw new BenchError(`the job wrote ${written} and skipped ${skipped}; the simulator holds ${goodNumeric} good numeric and ${bad} other values`);

    return {
      job, written, skipped, recordedRequests: sim.count('/recorded'), serviceCpuSeconds,
      simulatorCpuSeconds: (user + system) / 1e6, otherCores, rssBeforeBytes, rssPeakBytes,
    };
  } finally {
    sim.setLatency(0);
    logTails.set(label, service.process.logTail(30));
    if (sizes.keep) {
      await service.stop();
      process.stderr.write(`data dir kept: ${service.dataDir}\n`);
    } else await service.dispose();
  }
}

const sim = await PiSimulator.start({ tls: true, auth: { basic: { username: PI_USER, password: PI_PASSWORD } } }, spec);
const expected = new Map(tags.map((tag) => [tag, sim.tally(`${ELEMENT}|${tag}`, START, END)]));
const phases = new Phases();
const rows: string[][] = [];

for (const latency of [0, latencyMs]) {
  for (const pageSize of pageSizes) {
    const phase = `backfill, page ${pageSize}, latency ${latency} ms`;
    const r = await phases.run(phase, () => backfillRun(phase, sim, pageSize, latency, expected));
    const cells = [`${latency} ms`, int(pageSize)];
    if (!r) {
      rows.push([...cells, 'FAILED', '', '', '', '', '', '', '']);
      continue;
    }
    const seconds = (r.job.finished_ms! - r.job.started_ms) / 1000;
    rows.push([
      ...cells,
      `**${int(r.written / seconds)}**`,
      `${num(seconds)} s`,
      `${int(r.written)} / ${int(r.skipped)}`,
      int(r.recordedRequests),
      num((r.serviceCpuSeconds / r.written) * 1e6),
      num((r.simulatorCpuSeconds / r.written) * 1e6),
      `${mib(r.rssBeforeBytes)} → ${mib(r.rssPeakBytes)}`,
      `${int(r.written)} ✓${otherLoad(r.otherCores)}`,
    ]);
  }
}
await sim.stop();

const totals = tags.map((t) => expected.get(t)!);
const sum = (pick: (t: RecordedTally) => number) => totals.reduce((n, t) => n + pick(t), 0);
console.log(`# Connector backfill: PI Web API simulator → our service\n`);
console.log(`\`${commandLine()}\`\n`);
console.log(
  `${machine()}; ${attributeCount} attributes × ${int(valuesPerAttribute)} values at 1 s (${int(sum((t) => t.total))} values, ${int(sum((t) => t.goodNumeric))} good numeric, ${int(sum((t) => t.bad))} bad), a slow walk plus noise at 2 decimals; the simulator in the bench process over HTTPS with Basic auth, its CA as the saved connection's ca_pem; a fresh service per run, settings default but connector.recordedPageSize\n`,
);
console.log(
  markdownTable(
    ['PI latency', 'page size', 'values/s', 'job time', 'written / skipped', 'recorded requests', 'service CPU s per M values', 'simulator CPU s per M values', 'service peak RSS before → after', 'points read back'],
    rows,
  ),
);
console.log(phases.report((phase) => logTails.get(phase) ?? []));
process.exitCode = phases.failures.length > 0 ? 1 : 0;
