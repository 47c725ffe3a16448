// Load-generation pieces every benchmark script shares: a fixed number of
// concurrent request loops over a lazy job list, timed rate loops with
// latency percentiles, progress lines on stderr, and the markdown table.
// Nothing here knows which server it talks to.

import { execFileSync } from 'node:child_process';
import os from 'node:os';
import { parseArgs } from 'node:util';
import { cpuMeter, type Reply } from './service.js';
import { DATASET_KINDS, type DatasetKind } from './dataset.js';

/** A reply that is not what the phase expects; carries what the server said. */
export class BenchError extends Error {
  constructor(message: string, readonly details: string[] = []) {
    super(message);
    this.name = 'BenchError';
  }
}

export function describeReply(what: string, reply: Reply): BenchError {
  const text = reply.body.subarray(0, 600).toString('utf8');
  return new BenchError(`${what} answered HTTP ${reply.status}`, [`${what} -> ${reply.status} ${JSON.stringify(reply.headers['content-type'] ?? '')}`, `body: ${text}`]);
}

/** Runs `connections` loops that each take the next job, so at most that many requests are in flight. */
export async function runPool<T>(connections: number, jobs: Iterator<T>, run: (job: T) => Promise<void>): Promise<void> {
  let failure: unknown = null;
  const loop = async () => {
    while (failure === null) {
      const next = jobs.next();
      if (next.done) return;
      try {
        await run(next.value);
      } catch (err) {
        failure ??= err;
      }
    }
  };
  await Promise.all(Array.from({ length: connections }, loop));
  if (failure !== null) throw failure;
}

export const sleep = (millis: number) => new Promise<void>((resolve) => setTimeout(resolve, millis));

// ---- ingest ---------------------------------------------------------------------------------

export interface Body {
  bytes: string | Uint8Array;
  points: number;
}

export interface IngestResult {
  points: number;
  requests: number;
  seconds: number;
  pointsPerSecond: number;
  bytesSent: number;
  /** 503 answers that were retried. */
  retries: number;
  /** Client CPU spent building bodies; outside the timed window unless `encodeWhileSending`. */
  encodeMs: number;
  encodeWhileSending: boolean;
  /** Cores other processes kept busy meanwhile (see cpuMeter). */
  otherCores: number;
  /** CPU seconds (user + system) this process used in the timed window. */
  clientCpuSeconds: number;
  /** Latency of every request sent (retried ones too), from issue to the reply's last byte. */
  latency: { p50: number; p99: number; max: number };
}

export interface IngestOptions<C> {
  label: string;
  connections: number;
  chunks: Iterator<C>;
  totalPoints: number;
  /**
   * false (the default): every body is built into a Buffer before the clock
   * starts, so the timed phase measures the server and the transfer, not the
   * client's string building on the cores the server needs. true: each body is
   * built just before it is sent, inside the timed window.
   */
  encodeWhileSending?: boolean;
  encode(chunk: C): Body;
  send(body: Body): Promise<Reply>;
  /** Throws when the reply is not a success for `body`. 503 never reaches it: those are retried. */
  check(reply: Reply, body: Body): void;
}

/** Sends every chunk and retries on 503 (backpressure). */
export async function ingest<C>(o: IngestOptions<C>): Promise<IngestResult> {
  let points = 0;
  let requests = 0;
  let bytesSent = 0;
  let retries = 0;
  let encodeMs = 0;
  const latencies: number[] = [];
  const encodeWhileSending = o.encodeWhileSending === true;
  const toBody = (chunk: C): Body => {
    const t = performance.now();
    const body = o.encode(chunk);
    const bytes = typeof body.bytes === 'string' ? Buffer.from(body.bytes) : body.bytes;
    encodeMs += performance.now() - t;
    return { bytes, points: body.points };
  };
  let jobs: Iterator<Body>;
  if (encodeWhileSending) {
    jobs = (function* () {
      for (let next = o.chunks.next(); !next.done; next = o.chunks.next()) yield toBody(next.value);
    })();
  } else {
    const bodies: Body[] = [];
    for (let next = o.chunks.next(); !next.done; next = o.chunks.next()) bodies.push(toBody(next.value));
    process.stderr.write(`  ${o.label}: ${int(bodies.length)} bodies built in ${(encodeMs / 1000).toFixed(2)} s before the clock\n`);
    // Drop each body once sent so the client does not hold them all to the end.
    jobs = (function* () {
      for (let i = 0; i < bodies.length; i++) {
        const body = bodies[i];
        bodies[i] = EMPTY_BODY;
        yield body;
      }
    })();
  }
  const progress = new Progress(o.label, o.totalPoints, 'points');
  const other = cpuMeter();
  const clientCpu = process.cpuUsage();
  const start = performance.now();
  await runPool(o.connections, jobs, async (body) => {
    for (let attempt = 0; ; attempt++) {
      const reply = await o.send(body);
      requests++;
      latencies.push(reply.ms);
      if (reply.status === 503 && attempt < 200) {
        retries++;
        await sleep(Math.min(200, 10 * (attempt + 1)));
        continue;
      }
      o.check(reply, body);
      break;
    }
    bytesSent += typeof body.bytes === 'string' ? Buffer.byteLength(body.bytes) : body.bytes.byteLength;
    points += body.points;
    progress.update(points);
  });
  const seconds = (performance.now() - start) / 1000;
  const { user, system } = process.cpuUsage(clientCpu);
  progress.done(points, seconds);
  return { points, requests, seconds, pointsPerSecond: points / seconds, bytesSent, retries, encodeMs, encodeWhileSending, otherCores: other(), clientCpuSeconds: (user + system) / 1e6, latency: percentiles(latencies) };
}

const EMPTY_BODY: Body = { bytes: new Uint8Array(0), points: 0 };

// ---- raw range queries ----------------------------------------------------------------------

export interface RawQueryResult {
  points: number;
  requests: number;
  /** Transfer time of the median round: first request sent to last byte received. */
  seconds: number;
  pointsPerSecond: number;
  bytesReceived: number;
  otherCores: number;
  /** points/s of every round, in the order run; the figures above are the median round's. */
  roundRates: number[];
}

/** How hard a raw query phase pulls: connections in flight and how many times the whole scan runs. */
export type QueryLoad = Pick<SizeOptions, 'connections' | 'queryRounds'>;

export interface RawQueryOptions {
  label: string;
  load: QueryLoad;
  tags: readonly string[];
  request(tag: string): Promise<Reply>;
  count(body: Buffer, tag: string): number;
}

/**
 * One request per tag, `rounds` times over; replies are kept and counted after
 * the clock stops, so the client's parsing does not slow the transfer being
 * measured. A scan of this size lasts about a second, so one stray scheduler
 * hiccup moves it by tens of percent: the median round is reported.
 */
export async function rawQuery(o: RawQueryOptions): Promise<RawQueryResult> {
  const results: RawQueryResult[] = [];
  for (let round = 1; round <= o.load.queryRounds; round++) {
    const label = o.load.queryRounds > 1 ? `${o.label} (round ${round} of ${o.load.queryRounds})` : o.label;
    results.push(await rawQueryRound({ ...o, label }));
  }
  const roundRates = results.map((r) => r.pointsPerSecond);
  const median = [...results].sort((a, b) => a.pointsPerSecond - b.pointsPerSecond)[(results.length - 1) >> 1];
  return { ...median, roundRates };
}

/** ' (median of 5 rounds, 9.1–11.8 M)' for a table cell; '' for a single round. */
export function describeRounds(r: RawQueryResult): string {
  if (r.roundRates.length < 2) return '';
  const millions = (v: number) => num(v / 1e6, 1);
  return ` (median of ${r.roundRates.length} rounds, ${millions(Math.min(...r.roundRates))}–${millions(Math.max(...r.roundRates))} M)`;
}

async function rawQueryRound(o: RawQueryOptions): Promise<RawQueryResult> {
  const bodies: Array<{ tag: string; reply: Reply }> = [];
  let bytesReceived = 0;
  const progress = new Progress(o.label, o.tags.length, 'tags');
  const other = cpuMeter();
  const start = performance.now();
  await runPool(o.load.connections, o.tags.values(), async (tag) => {
    const reply = await o.request(tag);
    if (reply.status !== 200) throw describeReply(`${o.label} for ${tag}`, reply);
    bodies.push({ tag, reply });
    bytesReceived += reply.bodyLength;
    progress.update(bodies.length);
  });
  const seconds = (performance.now() - start) / 1000;
  const otherCores = other();
  progress.done(bodies.length, seconds);
  let points = 0;
  for (const { tag, reply } of bodies.splice(0)) points += o.count(reply.body, tag);
  const pointsPerSecond = points / seconds;
  return { points, requests: o.tags.length, seconds, pointsPerSecond, bytesReceived, otherCores, roundRates: [pointsPerSecond] };
}

// ---- request rate with latency --------------------------------------------------------------

export interface RateResult {
  requests: number;
  seconds: number;
  perSecond: number;
  p50: number;
  p99: number;
  max: number;
  otherCores: number;
}

/** Keeps `connections` requests in flight for `seconds`; `check` throws on a wrong reply. */
export async function rateLoop(o: {
  label: string;
  connections: number;
  seconds: number;
  request(i: number): Promise<Reply>;
  check(reply: Reply): void;
}): Promise<RateResult> {
  const latencies: number[] = [];
  let issued = 0;
  const deadline = performance.now() + o.seconds * 1000;
  function* jobs() {
    while (performance.now() < deadline) yield issued++;
  }
  process.stderr.write(`${o.label}: ${o.seconds} s with ${o.connections} connections\n`);
  const other = cpuMeter();
  const start = performance.now();
  await runPool(o.connections, jobs(), async (i) => {
    const reply = await o.request(i);
    o.check(reply);
    latencies.push(reply.ms);
  });
  const seconds = (performance.now() - start) / 1000;
  return { requests: latencies.length, seconds, perSecond: latencies.length / seconds, ...percentiles(latencies), otherCores: other() };
}

export function percentiles(samples: ArrayLike<number>): { p50: number; p99: number; max: number } {
  if (samples.length === 0) return { p50: NaN, p99: NaN, max: NaN };
  const sorted = Float64Array.from(samples).sort();
  const at = (p: number) => sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))];
  return { p50: at(0.5), p99: at(0.99), max: sorted[sorted.length - 1] };
}

// ---- progress -------------------------------------------------------------------------------

/** Progress lines on stderr at most every 2 s, so long phases show they are alive. */
export class Progress {
  private readonly start = performance.now();
  private last = this.start;

  constructor(private readonly label: string, private readonly total: number, private readonly unit: string) {}

  update(done: number): void {
    const now = performance.now();
    if (now - this.last < 2000) return;
    this.last = now;
    const rate = done / ((now - this.start) / 1000);
    process.stderr.write(`  ${this.label}: ${Math.round((100 * done) / this.total)}% ${int(done)} ${this.unit}, ${int(rate)} ${this.unit}/s\n`);
  }

  done(done: number, seconds: number): void {
    process.stderr.write(`  ${this.label}: ${int(done)} ${this.unit} in ${seconds.toFixed(2)} s\n`);
  }
}

// ---- formatting -----------------------------------------------------------------------------

export const int = (n: number) => (Number.isFinite(n) ? Math.round(n).toLocaleString('en-US') : 'n/a');
export const num = (n: number, digits = 2) => (Number.isFinite(n) ? n.toFixed(digits) : 'n/a');
export const ms = (n: number) => (Number.isFinite(n) ? `${n.toFixed(n < 10 ? 2 : 1)} ms` : 'n/a');
/** A phase's note on foreign load; empty when the machine was otherwise idle. */
export const otherLoad = (cores: number) => (cores >= 0.1 ? `; ⚠ other processes kept ${cores.toFixed(1)} cores busy` : '');
export const mib = (bytes: number) => (Number.isFinite(bytes) ? `${(bytes / 2 ** 20).toFixed(1)} MiB` : 'n/a');

export function markdownTable(header: string[], rows: string[][]): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: string[]) => `| ${cells.map((c, i) => (c ?? '').padEnd(widths[i])).join(' | ')} |`;
  return [line(header), `|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|`, ...rows.map(line)].join('\n');
}

/** The command as typed, for the report. */
export function commandLine(): string {
  const script = process.argv[1]?.replace(`${process.cwd()}/`, '') ?? '';
  return ['node', script, ...process.argv.slice(2)].join(' ');
}

/** One line naming the machine, Node and the code measured (BENCH_COMMIT names it outside a checkout). */
export function machine(): string {
  let commit = process.env.BENCH_COMMIT ?? 'unknown commit';
  try {
    const git = (...args: string[]) => execFileSync('git', args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
    commit = `commit ${git('rev-parse', '--short', 'HEAD')}${git('status', '--porcelain', '--untracked-files=no') ? ' with uncommitted changes' : ''}`;
  } catch {
    // not a checkout
  }
  const cpu = os.cpus()[0]?.model.trim() ?? 'unknown CPU';
  // The load average shows whether something else was using the cores during the run.
  const load = os.loadavg().map((l) => l.toFixed(2)).join(' ');
  return `${os.availableParallelism()} cores (${cpu}), ${(os.totalmem() / 2 ** 30).toFixed(0)} GiB RAM, Linux ${os.release()}, Node ${process.version}, ${commit}, ${new Date().toISOString().slice(0, 16)}Z, load average at the end ${load}`;
}

// ---- options --------------------------------------------------------------------------------

export interface SizeOptions {
  tags: number;
  points: number;
  connections: number;
  tagsPerRequest: number;
  pointsPerRequest: number;
  /** Length of each rate loop. */
  seconds: number;
  quick: boolean;
  keep: boolean;
  /** Seconds to wait for other processes to go quiet before each server starts (0: do not wait). */
  waitIdle: number;
  /** Build each ingest body inside the timed window, just before sending it (see IngestOptions). */
  encodeWhileSending: boolean;
  /** Times each raw range scan is repeated; the median round is reported. */
  queryRounds: number;
  /** Which generator makes the values (`--dataset plant|noisy`, plant by default). */
  dataset: DatasetKind;
}

/** The size flags every script takes; `--quick` is 10 tags × 8,640 points and 2 s rate loops. */
export function sizeOptions(extra: Record<string, { type: 'string' | 'boolean' }> = {}): { sizes: SizeOptions; values: Record<string, string | boolean | undefined> } {
  const { values } = parseArgs({
    options: {
      tags: { type: 'string' },
      points: { type: 'string' },
      connections: { type: 'string' },
      'tags-per-request': { type: 'string' },
      'points-per-request': { type: 'string' },
      seconds: { type: 'string' },
      quick: { type: 'boolean' },
      keep: { type: 'boolean' },
      'wait-idle': { type: 'string' },
      'encode-while-sending': { type: 'boolean' },
      'query-rounds': { type: 'string' },
      dataset: { type: 'string' },
      ...extra,
    },
    strict: true,
  });
  const quick = values.quick === true;
  const all = values as Record<string, string | boolean | undefined>;
  const n = (name: string, fallback: number): number => positiveIntOption(all, name, fallback);
  const sizes: SizeOptions = {
    tags: n('tags', quick ? 10 : 100),
    points: n('points', quick ? 8640 : 86_400),
    connections: n('connections', 4),
    tagsPerRequest: n('tags-per-request', 10),
    pointsPerRequest: n('points-per-request', 1000),
    seconds: n('seconds', quick ? 2 : 5),
    quick,
    keep: values.keep === true,
    waitIdle: all['wait-idle'] === undefined ? 0 : n('wait-idle', 0),
    encodeWhileSending: values['encode-while-sending'] === true,
    queryRounds: n('query-rounds', 5),
    dataset: datasetOption(all.dataset),
  };
  return { sizes, values: all };
}

function datasetOption(raw: string | boolean | undefined): DatasetKind {
  if (raw === undefined) return 'plant';
  if (typeof raw === 'string' && (DATASET_KINDS as readonly string[]).includes(raw)) return raw as DatasetKind;
  throw new Error(`--dataset must be one of ${DATASET_KINDS.join(', ')}, got ${String(raw)}`);
}

/** The flag `--<name>` as a positive integer, `fallback` when it is absent. */
export function positiveIntOption(values: Record<string, string | boolean | undefined>, name: string, fallback: number): number {
  const raw = values[name];
  if (raw === undefined) return fallback;
  const v = Number(raw);
  if (!Number.isInteger(v) || v <= 0) throw new Error(`--${name} must be a positive integer, got ${String(raw)}`);
  return v;
}

/** Runs one phase; a failure is recorded (for the report) instead of ending the run. */
export class Phases {
  readonly failures: Array<{ phase: string; error: unknown }> = [];

  async run<T>(phase: string, fn: () => Promise<T>): Promise<T | null> {
    try {
      return await fn();
    } catch (error) {
      process.stderr.write(`  ${phase}: FAILED: ${error instanceof Error ? error.message : String(error)}\n`);
      this.failures.push({ phase, error });
      return null;
    }
  }

  /** Markdown section with every failure and what the server said, or '' when none. */
  report(logTail: (phase: string) => string[] = () => []): string {
    if (this.failures.length === 0) return '';
    const out = ['', '## Failures', ''];
    for (const { phase, error } of this.failures) {
      out.push(`### ${phase}`, '', '```');
      out.push(error instanceof Error ? error.message : String(error));
      if (error instanceof BenchError) out.push(...error.details);
      else if (error instanceof Error && error.stack) out.push(error.stack);
      const tail = logTail(phase);
      if (tail.length > 0) out.push('--- server log (last lines) ---', ...tail);
      out.push('```', '');
    }
    return out.join('\n');
  }
}
