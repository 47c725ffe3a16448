// Entry of a storage worker thread (one per shard, managed by piscina). On
// load it recovers the shard from disk (torn tails cut, indexes and last
// values rebuilt) before it takes any task. It is the only thread that
// touches its collections' files. Write bodies arrive through the request
// ring and are decoded here, never on the main thread; query results leave
// through the result ring in chunks.

import { workerData } from 'node:worker_threads';
import { pack, unpack } from 'msgpackr';
import { JsonPointWriter } from '../native-free-codecs/json-points.js';
import { isComplete } from '../native-free-codecs/scope-peek.js';
import { MsgpackPointWriter } from '../native-free-codecs/msgpack-points.js';
import { encodeFormat2, Format1Writer } from '../native-free-codecs/query-formats.js';
import { BucketStream, runPipeline, streamableStep, type AggregatorSpec } from './aggregators.js';
import { SeriesBuffer } from './series-buffer.js';
import { decodeBinaryBatch, decodeJsonWriteBody, decodeWriteObject, encodeBinaryBatch, WriteBodyError, type PointBatch } from '../native-free-codecs/points.js';
import { RingConsumer, RingProducer } from '../native-free-codecs/ring.js';
import { CONTROL_CANCEL_SEQ, CONTROL_TAGMAP_VERSION, FINAL_FRAME_BIT, OP, readWriteFrame, type WriteFrameHeader, type BufferStats, type ResultFormat, type StorageWorkerData, type StorageTask, type TaskReply, type WireError, type WriteMode, type WriteOutcome } from './protocol.js';
import { collectionId as idOf } from './scope-path.js';
import { shardOf } from './shard-hash.js';
import { ShardStore, StorageError } from './shard-store.js';
import { TagScopeReader } from './tag-scopes.js';
import { WriteBuffer } from './write-buffer.js';


const data = workerData as StorageWorkerData;
/** "HSB1" + u32 tag count: written once by the main thread, so each tag's fragment starts after it. */
const FORMAT1_HEADER_BYTES = 8;
const control = new Int32Array(data.control);
const requests = new RingConsumer(data.requestRing);
const results = new RingProducer(data.resultRing);
const log = (obj: object, msg: string) => process.stdout.write(`${JSON.stringify({ level: 30, time: Date.now(), shard: data.shardIndex, ...obj, msg })}\n`);

const store = new ShardStore({
  dataDir: data.dataDir,
  owns: (id) => shardOf(id, data.shardCount) === data.shardIndex,
  log,
});
const recovered = store.recover();
log({ ...recovered }, 'shard recovered');

const tagScopes = new TagScopeReader(data.dataDir, () => Atomics.load(control, CONTROL_TAGMAP_VERSION));
const buffer = new WriteBuffer(
  data.bufferCapacityPoints,
  (collectionId, batch) => store.append(collectionId, batch, 'os'),
  (err, collectionId, points) => log({ err: String(err), collectionId, points }, 'buffered points could not be written at flush'),
);
const flushTimer = setInterval(() => flushBuffer(), data.flushIntervalMs);
flushTimer.unref();
const sealTimer = setInterval(() => {
  try {
    store.seal({ now: Date.now(), graceMs: data.sealGraceMs, force: false });
  } catch (err) {
    log({ err: String(err) }, 'background seal failed');
  }
}, Math.min(60_000, Math.max(1000, data.sealGraceMs / 4)));
sealTimer.unref();

let flushes = 0;
let lastFlushMs: number | null = null;
function flushBuffer(): void {
  if (buffer.pendingPoints === 0) return;
  buffer.flush();
  flushes++;
  lastFlushMs = Date.now();
}

export default async function handle(task: StorageTask): Promise<TaskReply> {
  try {
    switch (task.op) {
      case OP.PING:
        return { ok: true };
      case OP.CREATE_COLLECTION:
        return { ok: true, collection: store.createCollection(task.scope, task.extra) };
      case OP.UPDATE_COLLECTION:
        return { ok: true, collection: store.updateCollection(task.id, task.fields) };
      case OP.QUERY:
      case OP.QUERY_TABLE:
        try {
          return { ok: true, points: task.op === OP.QUERY ? query(task) : queryTable(task) };
        } finally {
          collected.shrink();
          scratch.shrink();
        }
      case OP.LAST_VALUES:
        return { ok: true, last: task.tags.map((tag) => store.lastValue(task.collectionId, tag)) };
      case OP.SEAL: {
        flushBuffer();
        const { sealedDays } = store.seal({ collectionId: task.collectionId ?? undefined, now: Date.now(), graceMs: data.sealGraceMs, force: task.force });
        return { ok: true, sealedDays };
      }
      case OP.BUFFER_STATS:
        return { ok: true, stats: bufferStats() };
      case OP.FLUSH:
        flushBuffer();
        store.syncPending();
        return { ok: true };
      case OP.CLOSE_COLLECTION:
        flushBuffer();
        store.closeCollection(task.id);
        return { ok: true };
      case OP.OPEN_COLLECTION:
        store.openCollection(task.id);
        return { ok: true };
      case OP.REMOVE_COLLECTION:
        buffer.drop(task.id);
        store.closeCollection(task.id);
        return { ok: true };
    }
  } catch (err) {
    return { ok: false, error: toWireError(err) };
  }
}

// ---- writes: served straight from the request ring ------------------------
//
// Write bodies never travel as piscina tasks: the main thread puts a frame
// (header + body, see protocol.ts) into the request ring and this loop takes
// every frame there is, decodes and appends each, fsyncs once for all the
// sync writes among them (group commit), then answers each on the result
// ring under the frame's sequence number. A frame is released only once its
// points are appended, so a worker that dies mid-way leaves it for the next
// worker, which appends it again (harmless: the last write wins per
// timestamp) and answers it.

async function serveWrites(): Promise<void> {
  for (;;) {
    let frame = requests.tryRead();
    if (!frame) {
      if ((await requests.waitForDataAsync(60_000)) === 'closed') return;
      continue;
    }
    const awaitingSync: Array<{ seq: number; reply: TaskReply }> = [];
    while (frame) {
      const seq = frame.tag;
      const { mode, reply } = handleWriteFrame(frame.payload);
      requests.release();
      if (mode === 'sync' && reply.ok && (reply.write?.points ?? 0) > 0) awaitingSync.push({ seq, reply });
      else answer(seq, reply);
      frame = requests.tryRead();
    }
    if (awaitingSync.length === 0) continue;
    let failure: TaskReply | null = null;
    try {
      store.syncPending();
    } catch (err) {
      failure = { ok: false, error: toWireError(err) };
    }
    for (const { seq, reply } of awaitingSync) answer(seq, failure ?? reply);
  }
}

/** The reply as msgpack: one final frame, or chunks and an empty end frame when it is large. */
function answer(seq: number, reply: TaskReply): void {
  try {
    const bytes = pack(reply);
    if (bytes.length <= FRAME_BYTES) {
      emitFrame((seq | FINAL_FRAME_BIT) >>> 0, bytes, seq);
    } else {
      emitChunks(seq, bytes);
      emitFrame(seq, new Uint8Array(0));
    }
  } catch (err) {
    log({ err: String(err), seq }, 'could not answer a write');
  }
}

function handleWriteFrame(payload: Uint8Array): { mode: WriteMode; reply: TaskReply } {
  let header: WriteFrameHeader;
  let body: Uint8Array;
  try {
    ({ header, body } = readWriteFrame(payload));
  } catch (err) {
    return { mode: 'fast', reply: { ok: false, error: { code: 'INTERNAL', message: `bad write frame: ${(err as Error).message}` } } };
  }
  try {
    const write = header.collectionId ? writeDecoded(header, body) : writeBody(header, body);
    return { mode: header.mode, reply: { ok: true, write } };
  } catch (err) {
    return { mode: header.mode, reply: { ok: false, error: toWireError(err) } };
  }
}

function writeBody(header: WriteFrameHeader, body: Uint8Array): WriteOutcome {
  const outcome: WriteOutcome = { points: 0, learned: [], created: [], forward: [] };
  let batch: PointBatch;
  try {
    batch = decode(body, header.contentType);
  } catch (err) {
    if (err instanceof WriteBodyError) {
      if (err.kind === 'rejected') return { ...outcome, refused: err.message };
      return { ...outcome, error: { code: 'BAD_REQUEST', message: err.message } };
    }
    throw err;
  }
  try {
    const groups = resolveCollections(batch);
    // Validate everything before writing anything (all or nothing per request).
    for (const { collectionId } of groups) {
      if (header.allowed && !header.allowed.includes(collectionId)) {
        return { ...outcome, error: { code: 'FORBIDDEN', message: `collection ${collectionId} is outside your access grant` } };
      }
      if (isLocal(collectionId) && !header.autoCreate && !store.getCollection(collectionId)) {
        return { ...outcome, refused: `collection ${collectionId} does not exist (create it first, or enable storage.autoCreateCollections)` };
      }
    }
    for (const { collectionId, batch: part } of groups) {
      if (isLocal(collectionId)) appendLocal(collectionId, part, header.mode, header.autoCreate, outcome);
      else outcome.forward.push({ collectionId, body: toBinary(collectionId, part) });
    }
  } catch (err) {
    if (err instanceof StorageError && err.code === 'BAD_REQUEST') return { ...outcome, refused: err.message };
    throw err;
  }
  return outcome;
}

/** Points another shard decoded (and the main thread forwarded), as an HSW1 body. */
function writeDecoded(header: WriteFrameHeader, body: Uint8Array): WriteOutcome {
  const outcome: WriteOutcome = { points: 0, learned: [], created: [], forward: [] };
  appendLocal(header.collectionId!, decodeBinaryBatch(body), header.mode, header.autoCreate, outcome);
  return outcome;
}

function appendLocal(collectionId: string, batch: PointBatch, mode: WriteMode, autoCreate: boolean, outcome: WriteOutcome): void {
  if (!store.getCollection(collectionId)) {
    if (!autoCreate) throw new StorageError('BAD_REQUEST', `collection ${collectionId} does not exist`);
    const [organization, site, unit, grid] = collectionId.split('/');
    outcome.created.push(store.createCollection({ organization, site, unit, grid }, {}));
  }
  if (mode === 'buffered') {
    if (!buffer.add(collectionId, batch)) {
      throw new StorageError('UNAVAILABLE', `write buffer of shard ${data.shardIndex} is full (${buffer.pendingPoints} of ${buffer.capacityPoints} points); retry after the next flush`);
    }
    outcome.points += batch.pointCount;
    const known = new Set(store.tagNames(collectionId));
    const fresh = batch.tagNames.filter((t) => !known.has(t));
    if (fresh.length > 0) outcome.learned.push({ collectionId, tags: fresh });
    return;
  }
  const { points, newTags } = store.append(collectionId, batch, mode === 'sync' ? 'fsync' : 'os');
  outcome.points += points;
  if (newTags.length > 0) outcome.learned.push({ collectionId, tags: newTags });
}

function isLocal(collectionId: string): boolean {
  return shardOf(collectionId, data.shardCount) === data.shardIndex;
}

function decode(body: Uint8Array, contentType: string): PointBatch {
  if (contentType.startsWith('application/octet-stream')) return decodeBinaryBatch(body);
  if (contentType.startsWith('application/msgpack') || contentType.startsWith('application/x-msgpack')) {
    let value: unknown;
    try {
      value = unpack(body);
    } catch (err) {
      throw new WriteBodyError('malformed', `malformed msgpack body: ${(err as Error).message}`);
    }
    return decodeWriteObject(value);
  }
  return decodeJsonWriteBody(body);
}

/** Scope from the body when it names all four fields, otherwise per tag from the tag-to-scope map. */
function resolveCollections(batch: PointBatch): Array<{ collectionId: string; batch: PointBatch }> {
  if (isComplete(batch.scope)) return [{ collectionId: idOf(batch.scope), batch }];
  const byCollection = new Map<string, number[]>();
  for (let t = 0; t < batch.tagNames.length; t++) {
    const collectionId = tagScopes.collectionOf(batch.tagNames[t]);
    if (!collectionId) {
      throw new StorageError('BAD_REQUEST', `unknown tag "${batch.tagNames[t]}": no scope in the body and the tag is in no collection yet; send organization, site, unit and grid`);
    }
    let tags = byCollection.get(collectionId);
    if (!tags) byCollection.set(collectionId, (tags = []));
    tags.push(t);
  }
  if (byCollection.size === 1) return [{ collectionId: [...byCollection.keys()][0], batch }];
  return [...byCollection].map(([collectionId, tagIndexes]) => ({ collectionId, batch: selectTags(batch, tagIndexes) }));
}

function selectTags(batch: PointBatch, tagIndexes: number[]): PointBatch {
  const total = tagIndexes.reduce((n, t) => n + batch.tagStart[t + 1] - batch.tagStart[t], 0);
  const timestamps = new Float64Array(total);
  const values = new Float64Array(total);
  const tagStart = new Uint32Array(tagIndexes.length + 1);
  let at = 0;
  tagIndexes.forEach((t, i) => {
    tagStart[i] = at;
    const from = batch.tagStart[t];
    const to = batch.tagStart[t + 1];
    timestamps.set(batch.timestamps.subarray(from, to), at);
    values.set(batch.values.subarray(from, to), at);
    at += to - from;
  });
  tagStart[tagIndexes.length] = at;
  return { scope: batch.scope, tagNames: tagIndexes.map((t) => batch.tagNames[t]), tagStart, timestamps, values, pointCount: total };
}

/** One collection's points as an HSW1 body (one row per point, NaN elsewhere) for the owning shard. */
function toBinary(collectionId: string, batch: PointBatch): Uint8Array {
  const [organization, site, unit, grid] = collectionId.split('/');
  const rows = batch.pointCount;
  const timestamps = batch.timestamps.slice(0, rows);
  const columns = batch.tagNames.map((name, t) => {
    const values = new Float64Array(rows).fill(NaN);
    for (let i = batch.tagStart[t]; i < batch.tagStart[t + 1]; i++) values[i] = batch.values[i];
    return { name, values };
  });
  return encodeBinaryBatch({ organization, site, unit, grid }, timestamps, columns);
}

// ---- queries ---------------------------------------------------------------

const CHUNK_BYTES = 1 << 18;
const jsonWriter = new JsonPointWriter(1 << 20);
const msgpackWriter = new MsgpackPointWriter(1 << 20);
const format1Writer = new Format1Writer(1 << 20);
/** One tag's result when it must be whole before encoding (counts up front, pipelines). */
const collected = new SeriesBuffer();
const scratch = new SeriesBuffer();

/**
 * Encodes each requested series as a fragment of the chosen format into the
 * result ring, then an empty end frame. Raw JSON streams point chunks as the
 * day files are scanned; a one-step sampling pipeline aggregates bucket by
 * bucket during the scan; other pipelines materialise the tag's raw points.
 */
function query(task: Extract<StorageTask, { op: typeof OP.QUERY }>): number {
  jsonWriter.reset(); // a query that failed half-way may have left bytes behind
  let total = 0;
  let first = task.first;
  for (const { tag, pipeline, label } of task.series) {
    if (task.format === 'json' && pipeline.length === 0) {
      total += streamRawJson(task, tag, label ?? tag, first);
    } else {
      const series = evaluate(task.collectionId, tag, pipeline, task.start, task.end);
      total += series.count;
      writeFragment(task.format, task.seq, label ?? tag, series, first);
    }
    first = false;
  }
  flushWriter(jsonWriter, task.seq);
  emitFrame(task.seq, new Uint8Array(0));
  return total;
}

function streamRawJson(task: Extract<StorageTask, { op: typeof OP.QUERY }>, tag: string, key: string, first: boolean): number {
  const w = jsonWriter;
  if (!first) w.raw(0x2c);
  w.key(key);
  w.raw(0x5b);
  let open = false;
  const count = store.scanTag(task.collectionId, tag, task.start, task.end, (ts, values, n) => {
    for (let from = 0; from < n; from += 4096) {
      const to = Math.min(n, from + 4096);
      w.points(ts, values, from, to, open);
      open = true;
      if (w.length >= CHUNK_BYTES) flushWriter(w, task.seq);
    }
  });
  w.raw(0x5d);
  return count;
}

/** One tag's series after its pipeline, in `collected` (valid until the next call). */
function evaluate(collectionId: string, tag: string, pipeline: AggregatorSpec[], start: number, end: number): SeriesBuffer {
  collected.reset();
  const step = streamableStep(pipeline);
  if (step) {
    const stream = new BucketStream(step, { start, end }, (ts, value) => collected.push(ts, value));
    store.scanTag(collectionId, tag, start, end, (ts, values, n) => stream.push(ts, values, n));
    stream.finish();
    return collected;
  }
  store.scanTag(collectionId, tag, start, end, (ts, values, n) => collected.append(ts, values, n));
  if (pipeline.length === 0) return collected;
  const out = runPipeline(pipeline, collected.timestamps, collected.values, collected.count, { start, end });
  scratch.reset();
  scratch.append(out.timestamps, out.values, out.count);
  return scratch;
}

function writeFragment(format: ResultFormat, seq: number, tag: string, series: SeriesBuffer, first: boolean): void {
  if (format === 'json') {
    const w = jsonWriter;
    if (!first) w.raw(0x2c);
    w.key(tag);
    w.raw(0x5b);
    w.points(series.timestamps, series.values, 0, series.count, false);
    w.raw(0x5d);
    if (w.length >= CHUNK_BYTES) flushWriter(w, seq);
    return;
  }
  if (format === 'msgpack') {
    const w = msgpackWriter;
    w.reset();
    w.str(tag);
    w.arrayHeader(series.count);
    w.points(series.timestamps, series.values, 0, series.count);
    emitChunks(seq, w.bytes());
    return;
  }
  const w = format1Writer;
  w.reset();
  w.beginTag(tag, series.count);
  w.pointsFrom(series.timestamps, series.values, 0, series.count);
  emitChunks(seq, w.finish().subarray(FORMAT1_HEADER_BYTES));
}

/** Binary format 2 for one collection: every series materialised, then one table. */
function queryTable(task: Extract<StorageTask, { op: typeof OP.QUERY_TABLE }>): number {
  const series = task.series.map(({ tag, pipeline, label }) => {
    const s = evaluate(task.collectionId, tag, pipeline, task.start, task.end);
    return { name: label ?? tag, timestamps: s.timestamps.slice(0, s.count), values: s.values.slice(0, s.count) };
  });
  emitChunks(task.seq, encodeFormat2(series));
  emitFrame(task.seq, new Uint8Array(0));
  return series.reduce((n, s) => n + s.timestamps.length, 0);
}

function flushWriter(w: JsonPointWriter, seq: number): void {
  if (w.length === 0) return;
  const bytes = w.bytes();
  w.reset();
  emitChunks(seq, bytes);
}

/** Frames of at most half the ring, so one slow frame never needs the whole ring free. */
const FRAME_BYTES = Math.min(CHUNK_BYTES, results.maxPayloadBytes >>> 1);

function emitChunks(seq: number, bytes: Uint8Array): void {
  for (let at = 0; at < bytes.length; at += FRAME_BYTES) emitFrame(seq, bytes.subarray(at, Math.min(bytes.length, at + FRAME_BYTES)));
}

/** Waits (blocking this worker) while the main thread drains the ring; gives up if the client stalls too long. */
function emitFrame(tag: number, payload: Uint8Array, seq = tag): void {
  const deadline = Date.now() + data.resultStallTimeoutMs;
  while (!results.tryWrite(tag, payload)) {
    if (Atomics.load(control, CONTROL_CANCEL_SEQ) === seq) throw new StorageError('UNAVAILABLE', 'query cancelled: the client went away');
    if (Date.now() > deadline) throw new StorageError('UNAVAILABLE', 'query abandoned: the client did not read its results');
    results.waitForSpace(payload.length, 50);
  }
  if (Atomics.load(control, CONTROL_CANCEL_SEQ) === seq) throw new StorageError('UNAVAILABLE', 'query cancelled: the client went away');
}

function bufferStats(): BufferStats {
  return {
    shard: data.shardIndex,
    capacityPoints: buffer.capacityPoints,
    pendingPoints: buffer.pendingPoints,
    fill: buffer.capacityPoints === 0 ? 0 : buffer.pendingPoints / buffer.capacityPoints,
    flushes,
    lastFlushMs,
    ringBytes: requests.capacity,
    ringUsedBytes: requests.usedBytes(),
  };
}

function toWireError(err: unknown): WireError {
  if (err instanceof StorageError) return { code: err.code as WireError['code'], message: err.message };
  if (err instanceof WriteBodyError) return { code: 'BAD_REQUEST', message: err.message };
  const code = (err as NodeJS.ErrnoException)?.code;
  if (code === 'ENOSPC') return { code: 'INSUFFICIENT_STORAGE', message: 'no space left on the data volume' };
  log({ err: String((err as Error)?.stack ?? err) }, 'storage task failed');
  return { code: 'INTERNAL', message: 'storage error' };
}

process.on('exit', () => {
  try {
    flushBuffer();
    store.syncPending();
    store.close();
  } catch {
    // exiting anyway
  }
});

void serveWrites().catch((err) => {
  // The loop never ends on its own; a failure here is a bug: crash so piscina starts a fresh worker.
  log({ err: String((err as Error)?.stack ?? err) }, 'write loop failed');
  process.exit(70);
});
