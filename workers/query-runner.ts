// Query execution in a storage worker, as asynchronous tasks that may pause.
//
// A query encodes its result into the shard's result ring frame by frame, but only as far
// as its credit goes: the main thread grants credit (QUERY_CREDIT in the query's control
// slot) as the client takes bytes. Out of credit, the query awaits it, and the worker meanwhile
// serves writes and other queries; a slow client slows only its own query. It stops when
// the main thread cancels it (client gone or stalled), when no credit comes for
// storage.resultStallTimeoutMs, or at its deadline (storage.queryTimeoutMs); every buffer it
// holds is its own and goes back when it stops.
//
// Raw JSON and raw CSV stream as the days are scanned, and so does raw binary format 1 over at
// most one UTC day (its count is the day's). Other results are materialised per tag first
// (binary format 1 and msgpack need the point count up front; pipelines need the whole series),
// charged to the shard's storage.queryMemoryBytes, then encoded a slice at a time.

import { CsvPointWriter } from '../native-free-codecs/result-csv.js';
import { isCsv } from '../native-free-codecs/result-envelope.js';
import { JsonPointWriter } from '../native-free-codecs/result-json.js';
import { MsgpackPointWriter } from '../native-free-codecs/result-msgpack.js';
import { encodeFormat2, Format1Writer } from '../native-free-codecs/result-binary.js';
import { waitForChangeAsync, type RingProducer } from '../shared/ring.js';
import type { AggregatorSpec, PromqlWindowStep, SamplingStep } from '../shared/aggregator-spec.js';
import { BucketGrid, isCalendarUnit, UNIT_MS } from '../shared/time-units.js';
import { StepAggregate } from '../shared/promql-windows.js';
import { encodeF64Fragment } from '../native-free-codecs/result-f64.js';
import { OP, QUERY_CANCELLED, QUERY_CREDIT, QUERY_SEQ, querySlotWord, type TaskOf } from '../shared/protocol.js';
import { BucketStream, PointLimitError, runPipeline, streamableStep } from './aggregators.js';
import { type QueryAllowance, type QueryMemory, SeriesBuffer } from './series-buffer.js';
import type { ShardStore } from './shard-store.js';
import type { TagScan } from './tag-scan.js';
import { ServiceError } from '../shared/errors.js';
import { RESULT_CHUNK_BYTES, resultFrameBytes } from './answers.js';
import { SUMMARY_SLOT_MS, type SummaryKind } from './sealed-summary.js';

type QueryTask = TaskOf<typeof OP.QUERY>;
type TableTask = TaskOf<typeof OP.QUERY_TABLE>;

/** Bytes an encoder gathers before they go out as a frame. */
const CHUNK_BYTES = RESULT_CHUNK_BYTES;
/** Points encoded between checks of the cancel flag and the writer's size. */
const POINTS_PER_STEP = 4096;
/** Idle encoders kept per format for the next queries. */
const MAX_IDLE_WRITERS = 4;

export interface QueryRunnerOptions {
  store: ShardStore;
  results: RingProducer;
  control: Int32Array;
  stallTimeoutMs: number;
  memory: QueryMemory;
  /** False: min and max buckets never use sealed summaries (tests compare both ways). */
  summaries?: boolean;
}

export class QueryRunner {
  private readonly frameBytes: number;
  private readonly idleJson: JsonPointWriter[] = [];
  private readonly idleMsgpack: MsgpackPointWriter[] = [];
  private readonly idleFormat1: Format1Writer[] = [];
  private readonly idleCsv: CsvPointWriter[] = [];

  constructor(private readonly opts: QueryRunnerOptions) {
    this.frameBytes = resultFrameBytes(opts.results);
  }

  /** Encodes each requested series as a fragment of the chosen format; the main thread writes the envelope. */
  async query(task: QueryTask): Promise<number> {
    const flow = new ResultFlow(this.opts, this.frameBytes, task.seq, task.slot, task.deadline);
    const allowance = this.opts.memory.account();
    const json = this.idleJson.pop() ?? new JsonPointWriter(1 << 16);
    json.reset();
    const csv = isCsv(task.format) ? (this.idleCsv.pop() ?? new CsvPointWriter(1 << 16)) : null;
    csv?.reset();
    csv?.setTimeFormat(task.format === 'csv-iso' ? 'iso' : 'ms');
    try {
      let total = 0;
      let first = task.first;
      // PromQL aggregations across series (promql_window steps with a group): one result per group.
      const groups = new Map<string, StepAggregate>();
      for (const { tag, pipeline, label } of task.series) {
        const key = label ?? tag;
        let oneDay: TagScan | undefined;
        const group = task.format === 'f64' && pipeline.length === 1 && pipeline[0]!.name === 'promql_window' ? pipeline[0]!.group : undefined;
        if (group) {
          const step = pipeline[0] as PromqlWindowStep;
          const series = this.evaluate(flow, allowance, task.collectionId, tag, pipeline, task.start, task.end);
          total += series.count;
          let into = groups.get(group.key);
          if (!into) groups.set(group.key, (into = new StepAggregate(group.op, step.steps)));
          for (let k = 0; k < series.count; k++) into.add(series.timestamps[k]!, series.values[k]!);
          series.dispose();
          continue;
        }
        if (task.format === 'json' && pipeline.length === 0) {
          total += await this.streamRawJson(flow, json, task, tag, key, first);
        } else if (csv && pipeline.length === 0) {
          total += await this.streamRawCsv(flow, csv, task, tag, key);
        } else if (task.format === 'binary1' && pipeline.length === 0 && (oneDay = this.opts.store.openScan(task.collectionId, tag, task.start, task.end)).daysLeft <= 1) {
          total += await this.rawFormat1Day(flow, oneDay, key);
        } else {
          oneDay?.close();
          const series = this.evaluate(flow, allowance, task.collectionId, tag, pipeline, task.start, task.end);
          total += series.count;
          if (task.format === 'json') await this.jsonFragment(flow, json, key, series, first);
          else if (csv) await this.csvFragment(flow, csv, key, series);
          else if (task.format === 'msgpack') await this.msgpackFragment(flow, key, series);
          else if (task.format === 'f64') await flow.send(encodeF64Fragment(key, series.timestamps, series.values, series.count));
          else await this.format1Fragment(flow, key, series);
          series.dispose();
        }
        first = false;
      }
      for (const [key, aggregate] of groups) await flow.send(groupFragment(key, aggregate));
      await flow.emit(csv ?? json);
      await flow.end();
      return total;
    } finally {
      allowance.releaseAll();
      json.reset();
      if (this.idleJson.length < MAX_IDLE_WRITERS && json.capacity <= 4 * CHUNK_BYTES) this.idleJson.push(json);
      if (csv) {
        csv.reset();
        if (this.idleCsv.length < MAX_IDLE_WRITERS && csv.capacity <= 4 * CHUNK_BYTES) this.idleCsv.push(csv);
      }
    }
  }

  /** Binary format 2 for one collection: every series materialised, then one table. */
  async queryTable(task: TableTask): Promise<number> {
    const flow = new ResultFlow(this.opts, this.frameBytes, task.seq, task.slot, task.deadline);
    const allowance = this.opts.memory.account();
    try {
      const series = task.series.map(({ tag, pipeline, label }) => {
        const s = this.evaluate(flow, allowance, task.collectionId, tag, pipeline, task.start, task.end);
        return { name: label ?? tag, timestamps: s.timestamps.subarray(0, s.count), values: s.values.subarray(0, s.count) };
      });
      const table = encodeFormat2(series);
      allowance.reserve(table.length);
      await flow.send(table);
      await flow.end();
      return series.reduce((n, s) => n + s.timestamps.length, 0);
    } finally {
      allowance.releaseAll();
    }
  }

  private async streamRawJson(flow: ResultFlow, w: JsonPointWriter, task: QueryTask, tag: string, key: string, first: boolean): Promise<number> {
    if (!first) w.raw(0x2c);
    w.key(key);
    w.raw(0x5b);
    let open = false;
    const total = await this.streamScan(flow, w, task, tag, (ts, values, from, to) => {
      w.points(ts, values, from, to, open);
      open = true;
    });
    w.raw(0x5d);
    return total;
  }

  /** A tag's rows as the days are scanned: nothing of the series is held beyond one frame's worth of text. */
  private streamRawCsv(flow: ResultFlow, w: CsvPointWriter, task: QueryTask, tag: string, key: string): Promise<number> {
    w.beginSeries(key);
    return this.streamScan(flow, w, task, tag, (ts, values, from, to) => w.rows(ts, values, from, to));
  }

  /**
   * Scans a tag's raw points day by day into `w` (through `write`, a step at a time), sending a
   * frame whenever a chunk is full; the points sent.
   */
  private async streamScan(flow: ResultFlow, w: JsonPointWriter | CsvPointWriter, task: QueryTask, tag: string, write: (ts: Float64Array, values: Float64Array, from: number, to: number) => void): Promise<number> {
    let total = 0;
    const scan = this.opts.store.openScan(task.collectionId, tag, task.start, task.end);
    try {
      // The day's points are views of the scan's own buffers: pausing in the middle of a day is safe.
      for (let day = scan.nextDay(); day; day = scan.nextDay()) {
        flow.check();
        for (let from = 0; from < day.count; from += POINTS_PER_STEP) {
          write(day.ts, day.values, from, Math.min(day.count, from + POINTS_PER_STEP));
          if (w.length >= CHUNK_BYTES) await flow.emit(w);
        }
        total += day.count;
      }
    } finally {
      scan.close();
    }
    return total;
  }

  /** One tag's series after its pipeline, in buffers charged to the query's allowance. */
  private evaluate(flow: ResultFlow, allowance: QueryAllowance, collectionId: string, tag: string, pipeline: AggregatorSpec[], start: number, end: number): SeriesBuffer {
    const collected = new SeriesBuffer(allowance);
    const step = streamableStep(pipeline);
    const summary = step !== null && this.opts.summaries !== false ? summaryAggregate(step, start) : null;
    const scan = this.opts.store.openScan(collectionId, tag, start, end, summary === null ? {} : { summary });
    try {
      if (step) {
        // One sampling step runs bucket by bucket during the scan: no raw points are kept.
        const stream = new BucketStream(step, { start, end }, (ts, value) => collected.push(ts, value));
        for (let day = scan.nextDay(); day; day = scan.nextDay()) {
          flow.check();
          stream.push(day.ts, day.values, day.count);
        }
        stream.finish();
        return collected;
      }
      for (let day = scan.nextDay(); day; day = scan.nextDay()) {
        flow.check();
        collected.append(day.ts, day.values, day.count);
      }
    } catch (err) {
      collected.dispose();
      throw err;
    } finally {
      scan.close();
    }
    if (pipeline.length === 0) return collected;
    let out;
    try {
      out = runPipeline(pipeline, collected.timestamps, collected.values, collected.count, { start, end }, allowance.remainingPoints());
    } catch (err) {
      collected.dispose();
      throw err instanceof PointLimitError ? allowance.tooLarge() : err;
    }
    const result = new SeriesBuffer(allowance);
    result.append(out.timestamps, out.values, out.count);
    collected.dispose();
    return result;
  }

  private async jsonFragment(flow: ResultFlow, w: JsonPointWriter, key: string, series: SeriesBuffer, first: boolean): Promise<void> {
    if (!first) w.raw(0x2c);
    w.key(key);
    w.raw(0x5b);
    for (let from = 0; from < series.count; from += POINTS_PER_STEP) {
      w.points(series.timestamps, series.values, from, Math.min(series.count, from + POINTS_PER_STEP), from > 0);
      if (w.length >= CHUNK_BYTES) await flow.emit(w);
    }
    w.raw(0x5d);
    if (w.length >= CHUNK_BYTES) await flow.emit(w);
  }

  private async csvFragment(flow: ResultFlow, w: CsvPointWriter, key: string, series: SeriesBuffer): Promise<void> {
    w.beginSeries(key);
    for (let from = 0; from < series.count; from += POINTS_PER_STEP) {
      flow.check();
      w.rows(series.timestamps, series.values, from, Math.min(series.count, from + POINTS_PER_STEP));
      if (w.length >= CHUNK_BYTES) await flow.emit(w);
    }
  }

  private async msgpackFragment(flow: ResultFlow, key: string, series: SeriesBuffer): Promise<void> {
    const w = this.idleMsgpack.pop() ?? new MsgpackPointWriter(1 << 16);
    try {
      w.reset();
      w.str(key);
      w.arrayHeader(series.count);
      for (let from = 0; from < series.count; from += POINTS_PER_STEP) {
        flow.check();
        w.points(series.timestamps, series.values, from, Math.min(series.count, from + POINTS_PER_STEP));
        if (w.length >= CHUNK_BYTES) await flow.emit(w);
      }
      await flow.emit(w);
    } finally {
      w.reset();
      if (this.idleMsgpack.length < MAX_IDLE_WRITERS && w.capacity <= 4 * CHUNK_BYTES) this.idleMsgpack.push(w);
    }
  }

  /**
   * Raw format 1 of a scan over at most one UTC day: the point count is the day's, so the day's
   * points are encoded straight from the scan's buffers (which stay valid while the query waits
   * for credit), not first copied into a SeriesBuffer grown by doubling. Closes the scan.
   */
  private async rawFormat1Day(flow: ResultFlow, scan: TagScan, key: string): Promise<number> {
    const w = this.idleFormat1.pop() ?? new Format1Writer(1 << 16, { header: false });
    try {
      const day = scan.nextDay();
      const count = day?.count ?? 0;
      w.reset();
      w.beginTag(key, count);
      for (let from = 0; from < count; from += POINTS_PER_STEP) {
        flow.check();
        w.pointsFrom(day!.ts, day!.values, from, Math.min(count, from + POINTS_PER_STEP));
        if (w.length >= CHUNK_BYTES) await flow.send(w.take());
      }
      await flow.send(w.take());
      return count;
    } finally {
      scan.close();
      w.reset();
      if (this.idleFormat1.length < MAX_IDLE_WRITERS && w.capacity <= 4 * CHUNK_BYTES) this.idleFormat1.push(w);
    }
  }

  private async format1Fragment(flow: ResultFlow, key: string, series: SeriesBuffer): Promise<void> {
    const w = this.idleFormat1.pop() ?? new Format1Writer(1 << 16, { header: false });
    try {
      w.reset();
      w.beginTag(key, series.count);
      for (let from = 0; from < series.count; from += POINTS_PER_STEP) {
        flow.check();
        w.pointsFrom(series.timestamps, series.values, from, Math.min(series.count, from + POINTS_PER_STEP));
        if (w.length >= CHUNK_BYTES) await flow.send(w.take());
      }
      await flow.send(w.take());
    } finally {
      w.reset();
      if (this.idleFormat1.length < MAX_IDLE_WRITERS && w.capacity <= 4 * CHUNK_BYTES) this.idleFormat1.push(w);
    }
  }
}

/**
 * 'min' or 'max' when a bucket stream of `step` over a range starting at `start` may take sealed
 * summaries: every bucket is then a union of whole summary slots (origin and width multiples of
 * the slot), so each slot's min or max falls into the one bucket all its points fall into, and
 * the bucket's min or max is the same. Else null (other aggregators, months and years).
 */
export function summaryAggregate(step: SamplingStep, start: number): SummaryKind | null {
  if ((step.name !== 'min' && step.name !== 'max') || isCalendarUnit(step.sampling.unit)) return null;
  const width = step.sampling.value * UNIT_MS[step.sampling.unit];
  const origin = new BucketGrid(step.sampling, step.align_sampling, start).origin;
  return Number.isSafeInteger(width) && Number.isSafeInteger(origin) && width % SUMMARY_SLOT_MS === 0 && origin % SUMMARY_SLOT_MS === 0 ? step.name : null;
}

interface Drainable {
  bytes(): Uint8Array;
  reset(): void;
  readonly length: number;
}

/**
 * One query's side of the result ring: frames go out only as far as the query's credit
 * allows, and every wait checks whether the query should stop.
 */
class ResultFlow {
  private produced = 0;
  private readonly creditWord: number;
  private readonly cancelWord: number;

  constructor(
    private readonly opts: QueryRunnerOptions,
    private readonly frameBytes: number,
    private readonly seq: number,
    slot: number,
    private readonly deadline: number,
  ) {
    this.creditWord = querySlotWord(slot, QUERY_CREDIT);
    this.cancelWord = querySlotWord(slot, QUERY_CANCELLED);
    if (Atomics.load(opts.control, querySlotWord(slot, QUERY_SEQ)) !== seq) {
      throw new ServiceError('INTERNAL', `query ${seq} does not hold control slot ${slot}`);
    }
  }

  /** Throws when the query must stop: cancelled by the main thread, or past its deadline. */
  check(): void {
    if (Atomics.load(this.opts.control, this.cancelWord) !== 0) throw new ServiceError('UNAVAILABLE', 'query cancelled: the client went away or stopped reading');
    if (Date.now() > this.deadline) throw new ServiceError('UNAVAILABLE', 'query stopped: it ran longer than storage.queryTimeoutMs');
  }

  /** Sends what the writer holds, then empties it. */
  async emit(w: Drainable): Promise<void> {
    if (w.length === 0) return;
    await this.send(w.bytes());
    w.reset();
  }

  /** Sends bytes as frames of this query (the bytes must not change until this resolves). */
  async send(bytes: Uint8Array): Promise<void> {
    for (let at = 0; at < bytes.length; at += this.frameBytes) {
      await this.frame(bytes.subarray(at, Math.min(bytes.length, at + this.frameBytes)));
    }
  }

  /** The empty frame that ends the query's result. */
  end(): Promise<void> {
    return this.frame(new Uint8Array(0));
  }

  private async frame(payload: Uint8Array): Promise<void> {
    const { control, results } = this.opts;
    let waitingSince = 0;
    let seenCredit = 0;
    for (;;) {
      this.check();
      const credit = Atomics.load(control, this.creditWord);
      if (((credit - this.produced - payload.length) | 0) >= 0) break;
      const now = Date.now();
      if (waitingSince === 0 || credit !== seenCredit) {
        waitingSince = now;
        seenCredit = credit;
      } else if (now - waitingSince > 2 * this.opts.stallTimeoutMs) {
        // A backstop: the main thread closes a stalled client's response after one stall
        // timeout and cancels the query; this fires only if that never came.
        throw new ServiceError('UNAVAILABLE', 'query abandoned: no credit came for twice storage.resultStallTimeoutMs');
      }
      await waitForChangeAsync(control, this.creditWord, credit, 250);
    }
    while (!results.tryWrite(this.seq, payload)) {
      this.check();
      await results.waitForSpaceAsync(payload.length, 50);
    }
    this.produced = (this.produced + payload.length) | 0;
  }
}

/**
 * A group's partial aggregate as an f64 fragment: timestamps are the step indexes where it has a
 * value, and each value is followed by the number of series counted (the main thread merges the
 * partials of several shards with them): 2 × points values.
 */
function groupFragment(key: string, aggregate: StepAggregate): Uint8Array {
  const steps: number[] = [];
  for (let i = 0; i < aggregate.counts.length; i++) if (aggregate.counts[i]! > 0) steps.push(i);
  const ts = new Float64Array(steps.length * 2);
  const values = new Float64Array(steps.length * 2);
  steps.forEach((i, k) => {
    ts[2 * k] = i;
    ts[2 * k + 1] = i;
    values[2 * k] = aggregate.values[i]!;
    values[2 * k + 1] = aggregate.counts[i]!;
  });
  return encodeF64Fragment(key, ts, values, ts.length);
}
