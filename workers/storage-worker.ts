// Entry of a storage worker thread (one per shard, managed by piscina). On
// load it recovers the shard from disk (torn tails cut, indexes and last
// values rebuilt) before it takes any task. It is the only thread that
// touches its collections' files. Write bodies arrive through the request
// ring and are decoded here, never on the main thread; query results leave
// through the result ring in chunks, each query only as far as its client's
// credit goes (query-runner.ts), so a slow client pauses only its own query.

import { workerData } from 'node:worker_threads';
import { pack, unpack } from 'msgpackr';
import { duplicateScopeKey } from '../native-free-codecs/scope-peek.js';
import { isCompleteScope } from '../shared/scope.js';
import { QueryMemory } from './series-buffer.js';
import { QueryRunner } from './query-runner.js';
import { decodeBinaryBatch, decodeJsonWriteBody, decodeWriteObject, encodeBinaryBatch, WriteBodyError, type PointBatch } from '../native-free-codecs/points.js';
import { RingConsumer, RingProducer } from '../native-free-codecs/ring.js';
import { CONTROL_TAGMAP_VERSION, FINAL_FRAME_BIT, OP, readWriteFrame, type WriteFrameHeader, type BufferStats, type StorageWorkerData, type StorageOp, type StorageTask, type TaskOf, type ReplyOf, type TaskReply, type WireError, type WriteReply, type WriteMode, type WriteOutcome } from '../shared/protocol.js';
import { collectionId as idOf } from '../shared/scope-path.js';
import { shardOf } from '../shared/shard-hash.js';
import { ShardStore } from './shard-store.js';
import { asStorageError, StorageError } from '../shared/errors.js';
import { TagScopeReader } from './tag-scopes.js';
import { WriteBuffer } from './write-buffer.js';


const data = workerData as StorageWorkerData;
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

const queries = new QueryRunner({ store, results, control, stallTimeoutMs: data.resultStallTimeoutMs, memory: new QueryMemory(data.queryMemoryBytes) });

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

/** One handler per opcode, typed by it: what each returns is what ReplyOf says its caller gets. */
const handlers: { [Op in StorageOp]: (task: TaskOf<Op>) => ReplyOf<Op> | Promise<ReplyOf<Op>> } = {
  [OP.PING]: () => null,
  [OP.CREATE_COLLECTION]: (task) => store.createCollection(task.scope, task.extra),
  [OP.UPDATE_COLLECTION]: (task) => store.updateCollection(task.id, task.fields),
  [OP.QUERY]: (task) => queries.query(task),
  [OP.QUERY_TABLE]: (task) => queries.queryTable(task),
  [OP.LAST_VALUES]: (task) => task.tags.map((tag) => store.lastValue(task.collectionId, tag)),
  [OP.SEAL]: (task) => {
    flushBuffer();
    return store.seal({ collectionId: task.collectionId ?? undefined, now: Date.now(), graceMs: data.sealGraceMs, force: task.force }).sealedDays;
  },
  [OP.BUFFER_STATS]: () => bufferStats(),
  [OP.FLUSH]: () => {
    flushBuffer();
    store.syncPending();
    return null;
  },
  [OP.CLOSE_COLLECTION]: (task) => {
    flushBuffer();
    store.closeCollection(task.id);
    return null;
  },
  [OP.OPEN_COLLECTION]: (task) => {
    store.openCollection(task.id);
    return null;
  },
  [OP.REMOVE_COLLECTION]: (task) => {
    buffer.drop(task.id);
    store.closeCollection(task.id);
    return null;
  },
};

export default async function handle(task: StorageTask): Promise<TaskReply> {
  try {
    const run = handlers[task.op] as (task: StorageTask) => ReplyOf<StorageOp> | Promise<ReplyOf<StorageOp>>;
    return { ok: true, value: await run(task) };
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
    const awaitingSync: Array<{ seq: number; reply: WriteReply }> = [];
    while (frame) {
      const seq = frame.tag;
      const { mode, reply } = handleWriteFrame(frame.payload);
      requests.release();
      if (mode === 'sync' && reply.ok && reply.value.points > 0) awaitingSync.push({ seq, reply });
      else answer(seq, reply);
      frame = requests.tryRead();
    }
    if (awaitingSync.length === 0) continue;
    let failure: WriteReply | null = null;
    try {
      store.syncPending();
    } catch (err) {
      failure = { ok: false, error: toWireError(err) };
    }
    for (const { seq, reply } of awaitingSync) answer(seq, failure ?? reply);
  }
}

/** The reply as msgpack: one final frame, or chunks and an empty end frame when it is large. */
function answer(seq: number, reply: WriteReply): void {
  try {
    const bytes = pack(reply);
    if (bytes.length <= FRAME_BYTES) {
      emitFrame((seq | FINAL_FRAME_BIT) >>> 0, bytes);
    } else {
      emitChunks(seq, bytes);
      emitFrame(seq, new Uint8Array(0));
    }
  } catch (err) {
    log({ err: String(err), seq }, 'could not answer a write');
  }
}

function handleWriteFrame(payload: Uint8Array): { mode: WriteMode; reply: WriteReply } {
  let header: WriteFrameHeader;
  let body: Uint8Array;
  try {
    ({ header, body } = readWriteFrame(payload));
  } catch (err) {
    return { mode: 'fast', reply: { ok: false, error: { code: 'INTERNAL', message: `bad write frame: ${(err as Error).message}` } } };
  }
  try {
    const outcome = header.collectionId ? writeDecoded(header, body) : writeBody(header, body);
    return { mode: header.mode, reply: { ok: true, value: outcome } };
  } catch (err) {
    return { mode: header.mode, reply: { ok: false, error: toWireError(err) } };
  }
}

function writeBody(header: WriteFrameHeader, body: Uint8Array): WriteOutcome {
  const outcome: WriteOutcome = { points: 0, learned: [], created: [], forward: [] };
  // msgpack maps and the HSW1 scope object keep the last of two equal keys without a word.
  const repeated = isJson(header.contentType) ? null : duplicateScopeKey(body, header.contentType);
  if (repeated) return { ...outcome, error: { code: 'BAD_REQUEST', message: `"${repeated}" appears more than once` } };
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
    const allowed = header.allowedUnits ? new Set(header.allowedUnits) : null;
    // Validate everything before writing anything (all or nothing per request).
    for (const { collectionId } of groups) {
      if (allowed && !allowed.has(collectionId.slice(0, collectionId.lastIndexOf('/')))) {
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

function isJson(contentType: string): boolean {
  return !contentType.startsWith('application/octet-stream') && !contentType.startsWith('application/msgpack') && !contentType.startsWith('application/x-msgpack');
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
  if (isCompleteScope(batch.scope)) return [{ collectionId: idOf(batch.scope), batch }];
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

// ---- answers of writes -------------------------------------------------------

/** Frames of at most half the ring, so one frame never needs the whole ring free. */
const FRAME_BYTES = Math.min(1 << 18, results.maxPayloadBytes >>> 1);

function emitChunks(seq: number, bytes: Uint8Array): void {
  for (let at = 0; at < bytes.length; at += FRAME_BYTES) emitFrame(seq, bytes.subarray(at, Math.min(bytes.length, at + FRAME_BYTES)));
}

/**
 * Puts one answer frame in the result ring, blocking this worker while the ring is full. The
 * main thread copies every frame out as it comes (queries only produce what their client
 * has room for), so the ring frees within moments; a main thread that took no frame for
 * storage.resultStallTimeoutMs is not coming back for this one.
 */
function emitFrame(tag: number, payload: Uint8Array): void {
  const deadline = Date.now() + data.resultStallTimeoutMs;
  while (!results.tryWrite(tag, payload)) {
    if (Date.now() > deadline) throw new StorageError('UNAVAILABLE', 'the result ring stayed full; answer dropped');
    results.waitForSpace(payload.length, 50);
  }
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

/** What a task or write failed with, as it crosses to the main thread; anything unexpected is logged here. */
function toWireError(err: unknown): WireError {
  if (err instanceof WriteBodyError) return { code: 'BAD_REQUEST', message: err.message };
  const mapped = asStorageError(err);
  if (mapped instanceof StorageError) {
    if (mapped.cause !== undefined) log({ err: String(mapped.cause) }, mapped.message);
    return mapped.toWire();
  }
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
