// Writes, served straight from the shard's request ring.
//
// Write bodies never travel as piscina tasks: the main thread puts a frame
// (header + body, see shared/protocol.ts) into the request ring and this loop
// takes every frame there is, decodes and appends each, fsyncs once for all
// the sync writes among them (group commit), then answers each on the result
// ring under the frame's sequence number. A frame is released only once its
// points are appended, so a worker that dies mid-way leaves it for the next
// worker, which appends it again (harmless: the last write wins per
// timestamp) and answers it.
//
// A body is decoded here (never on the main thread), checked against the
// caller's units with the scope decoded here, and written all or nothing;
// points of collections another shard owns go back to the main thread as
// HSW1 bodies for it to forward (Prometheus remote-write points as
// uncompressed WriteRequests, which keep NaN values where HSW1 has none).

import zlib from 'node:zlib';
import { unpack } from 'msgpackr';
import { linePointsByCollection } from '../native-free-codecs/write-body-line.js';
import { promPointsByCollection } from '../native-free-codecs/write-body-prom.js';
import { decodeWriteRequest, encodeWriteRequest, type Label } from '../native-free-codecs/prom-remote.js';
import { snappyDecompress, SnappyError } from '../native-free-codecs/snappy.js';
import { LineColumns, LineSeriesCache, parseLineProtocol, partialWriteMessage } from '../native-free-codecs/line-protocol.js';
import { decodeBinaryBatch, decodeJsonWriteBody, decodeRowsObject, decodeWriteObject, encodeBinaryBatch, isRowsObject, WriteBodyError, type DecodeLimits, type PointBatch } from '../native-free-codecs/write-body.js';
import type { RingConsumer } from '../shared/ring.js';
import { duplicateScopeKey } from '../native-free-codecs/scope-peek.js';
import { ServiceError } from '../shared/errors.js';
import { CONTROL_FRAMES_TAKEN, CONTROL_PRIORITY_TASKS, LINE_PROTOCOL, PROM_REMOTE_WRITE, readWriteFrame, type WriteFrameHeader, type WriteMode, type WriteOutcome, type WriteReply } from '../shared/protocol.js';
import { isCompleteScope, SCOPE_FIELDS } from '../shared/scope.js';
import { collectionId as idOf, validateScope } from '../shared/scope-path.js';
import { shardOf } from '../shared/shard-hash.js';
import { toWireError, type WriteAnswers } from './answers.js';
import { batchDays, daysPerWriteMessage } from './day-bounds.js';
import type { ShardStore } from './shard-store.js';
import type { TagScopeReader } from './tag-scopes.js';
import type { WriteBuffer } from './write-buffer.js';
import type { MonitorWatch } from './monitor-watch.js';
import type { LiveWatch } from './live-watch.js';
import type { WorkerLog } from './worker-log.js';

/** Longest the write loop runs before it lets the worker's other tasks in. */
const WRITE_SLICE_MS = 4;

/** Bytes of multi-part bodies (WriteFrameHeader.part) a worker gathers at once; a body beyond it is answered 503. */
const MAX_GATHERED_BYTES = 64 << 20;

/** A body arriving in parts. */
interface Gathering {
  bytes: Uint8Array;
  filled: number;
  next: number;
  /** Why the body cannot be written (answered when its last part comes). */
  failed: string | null;
}

export interface WriteLoopOptions {
  shardIndex: number;
  shardCount: number;
  requests: RingConsumer;
  answers: WriteAnswers;
  store: ShardStore;
  /** The memory buffer of /write_buffered. */
  buffer: WriteBuffer;
  /** Sees every accepted point of watched tags (alarm evaluation between ticks). */
  monitor: MonitorWatch;
  /** Sees every accepted live point of tags a WebSocket subscribed to. */
  live: LiveWatch;
  tagScopes: TagScopeReader;
  log: WorkerLog;
  /** What the body decoders accept (storage.minTimestampMs). */
  limits: DecodeLimits;
  /** storage.maxDaysPerWrite: distinct (collection, UTC day) pairs one request may touch (unbounded when absent: tests). */
  maxDaysPerWrite?: number;
  /** Called when a collection is at storage.maxUnsealedDaysPerCollection: its due days should be sealed soon. */
  sealSoon?: () => void;
  /** The shard's control words (shared/protocol.ts); a loop of its own when absent (tests). */
  control?: Int32Array;
}

export class WriteLoop {
  private readonly control: Int32Array;

  constructor(private readonly opts: WriteLoopOptions) {
    this.control = opts.control ?? new Int32Array(4);
  }

  /**
   * Whether the main thread has a priority task out (CONTROL_PRIORITY_TASKS): the loop then lets
   * the event loop run after every frame, so the task's message is taken within one frame. The
   * count falls only when the main thread has the answer, so for that short while writes go one
   * frame per turn of the event loop, still in order and all of them.
   */
  private priorityWaiting(): boolean {
    return Atomics.load(this.control, CONTROL_PRIORITY_TASKS) !== 0;
  }

  /** Write frames taken from the request ring so far (CONTROL_FRAMES_TAKEN, Int32 wrapping). */
  get framesTaken(): number {
    return Atomics.load(this.control, CONTROL_FRAMES_TAKEN);
  }

  /** Serves write frames until the request ring is closed. */
  async run(): Promise<void> {
    const { requests, answers, store } = this.opts;
    let sliceStart = performance.now();
    for (;;) {
      // Under continuous ingest the ring is never empty: without a pause now and then, the
      // worker's other tasks (queries, monitor samples, seals) would wait until ingest stops.
      // A priority task (a monitor tick's sample) sent meanwhile ends the slice at once.
      if (this.priorityWaiting() || performance.now() - sliceStart > WRITE_SLICE_MS) {
        await new Promise<void>((resolve) => setImmediate(resolve));
        sliceStart = performance.now();
      }
      let frame = requests.tryRead();
      if (!frame) {
        if ((await requests.waitForDataAsync(60_000)) === 'closed') return;
        sliceStart = performance.now();
        continue;
      }
      const awaitingSync: Array<{ seq: number; reply: WriteReply }> = [];
      while (frame) {
        const seq = frame.tag;
        Atomics.add(this.control, CONTROL_FRAMES_TAKEN, 1);
        const handled = this.handleFrame(seq, frame.payload);
        requests.release();
        if (handled !== null) {
          const { mode, reply } = handled;
          if (mode === 'sync' && reply.ok && reply.value.points > 0) awaitingSync.push({ seq, reply });
          else answers.send(seq, reply);
        }
        frame = this.priorityWaiting() || performance.now() - sliceStart > WRITE_SLICE_MS ? null : requests.tryRead();
      }
      if (awaitingSync.length === 0) continue;
      let failure: WriteReply | null = null;
      try {
        store.syncPending();
      } catch (err) {
        failure = { ok: false, error: toWireError(err, this.opts.log) };
      }
      for (const { seq, reply } of awaitingSync) answers.send(seq, failure ?? reply);
    }
  }

  /** A frame's answer, or null for a part of a body still arriving (answered with its last part). */
  private handleFrame(seq: number, payload: Uint8Array): { mode: WriteMode; reply: WriteReply } | null {
    let header: WriteFrameHeader;
    let body: Uint8Array;
    try {
      ({ header, body } = readWriteFrame(payload));
    } catch (err) {
      return { mode: 'fast', reply: { ok: false, error: { code: 'INTERNAL', message: `bad write frame: ${(err as Error).message}` } } };
    }
    if (header.part) {
      const whole = this.gather(seq, header, body);
      if (whole === null) return null;
      if (typeof whole === 'string') return { mode: header.mode, reply: { ok: false, error: { code: 'UNAVAILABLE', message: whole } } };
      body = whole;
    }
    try {
      if (header.contentEncoding === 'gzip') body = gunzip(body, header);
      else if (header.contentEncoding === 'snappy') body = unsnappy(body, header);
      const outcome = header.collectionId ? this.writeDecoded(header, body) : this.writeBody(header, body);
      return { mode: header.mode, reply: { ok: true, value: outcome } };
    } catch (err) {
      return { mode: header.mode, reply: { ok: false, error: toWireError(err, this.opts.log) } };
    }
  }

  /** Series sections of line protocol bodies already taken apart (collectors send the same ones every batch). */
  private readonly seriesCache = new LineSeriesCache();
  /** Parsed points of one body at a time: linePointsByCollection copies them out before the next. */
  private readonly lineColumns = new LineColumns();
  private readonly gathering = new Map<number, Gathering>();
  private gatheredBytes = 0;

  /**
   * Adds one part of a multi-part body: the whole body once its last part is in, a reason to
   * refuse it (parts lost to a worker restart, too many bodies gathering), or null meanwhile.
   */
  private gather(seq: number, header: WriteFrameHeader, part: Uint8Array): Uint8Array | string | null {
    const { index, count, totalBytes, abort } = header.part!;
    let g = this.gathering.get(seq);
    const drop = () => {
      if (!g) return;
      this.gathering.delete(seq);
      this.gatheredBytes -= g.bytes.length;
    };
    if (abort) {
      drop(); // the main thread gave up on this body and answered its client
      return null;
    }
    if (index === 0) {
      drop(); // a sequence number reused after an abort that never arrived
      const fits = this.gatheredBytes + totalBytes <= MAX_GATHERED_BYTES;
      g = { bytes: new Uint8Array(fits ? totalBytes : 0), filled: 0, next: 0, failed: fits ? null : `storage shard ${this.opts.shardIndex} is receiving too many large bodies at once; retry shortly` };
      this.gathering.set(seq, g);
      this.gatheredBytes += g.bytes.length;
    }
    if (!g || g.next !== index) {
      // Earlier parts went to a worker that died: this one cannot put the body together.
      if (index === count - 1) {
        drop();
        return `storage shard ${this.opts.shardIndex} restarted while the body was arriving; retry the request`;
      }
      return null;
    }
    if (g.failed === null) {
      if (g.filled + part.length > g.bytes.length) g.failed = 'write body parts longer than announced';
      else g.bytes.set(part, g.filled);
    }
    g.filled += part.length;
    g.next++;
    if (index < count - 1) return null;
    drop();
    if (g.failed === null && g.filled !== totalBytes) g.failed = 'write body parts shorter than announced';
    return g.failed ?? g.bytes;
  }

  private writeBody(header: WriteFrameHeader, body: Uint8Array): WriteOutcome {
    if (header.contentType === LINE_PROTOCOL) return this.writeLines(header, body);
    if (header.contentType === PROM_REMOTE_WRITE) return this.writeRemote(header, body);
    const outcome: WriteOutcome = { points: 0, learned: [], created: [], forward: [] };
    // msgpack maps and the HSW1 scope object keep the last of two equal keys without a word.
    const repeated = isJson(header.contentType) ? null : duplicateScopeKey(body, header.contentType);
    if (repeated) return { ...outcome, error: { code: 'BAD_REQUEST', message: `"${repeated}" appears more than once` } };
    let batch: PointBatch;
    try {
      batch = decode(body, header.contentType, this.opts.limits, header.rows === true);
    } catch (err) {
      if (err instanceof WriteBodyError) {
        if (err.kind === 'rejected') return { ...outcome, refused: err.message };
        return { ...outcome, error: { code: 'BAD_REQUEST', message: err.message } };
      }
      throw err;
    }
    if (header.defaultScope) batch = { ...batch, scope: { ...header.defaultScope, ...batch.scope } };
    try {
      return this.writeGroups(header, this.resolveCollections(batch), outcome);
    } catch (err) {
      if (err instanceof ServiceError && err.code === 'BAD_REQUEST') return { ...outcome, refused: err.message };
      throw err;
    }
  }

  /**
   * A line protocol body: the good lines are written (all of them or none), the bad ones
   * dropped and counted; each series goes to the collection its scope tags name over the
   * ingest client's scope.
   */
  private writeLines(header: WriteFrameHeader, body: Uint8Array): WriteOutcome {
    const outcome: WriteOutcome = { points: 0, learned: [], created: [], forward: [] };
    const { precision, nowMs } = header.lineProtocol!;
    const lines = parseLineProtocol(body, { precision, nowMs, minTimestampMs: this.opts.limits.minTimestampMs, seriesCache: this.seriesCache, columns: this.lineColumns });
    outcome.lines = { accepted: lines.acceptedLines, rejected: lines.rejectedLines, stringFields: lines.stringFields, partialError: partialWriteMessage(lines) };
    const groups = linePointsByCollection(lines, header.defaultScope!).map(({ scope, batch }) => {
      try {
        validateScope(scope); // names from line tags become folder names
      } catch (err) {
        const field = SCOPE_FIELDS.find((f) => scope[f] !== header.defaultScope![f]);
        throw new ServiceError('BAD_REQUEST', `line tag ${field ?? 'grid'}: ${(err as Error).message}`);
      }
      return { collectionId: idOf(scope), batch };
    });
    return this.writeGroups(header, groups, outcome);
  }

  /**
   * A Prometheus remote write (WIRE.md part 3): each series goes to the collection its labels
   * organization/site/unit/grid name over the ingest client's scope, as the tag of its canonical
   * series text, with its labels. A body that does not decode is a 400 (WriteBodyError).
   */
  private writeRemote(header: WriteFrameHeader, body: Uint8Array): WriteOutcome {
    const base = header.defaultScope;
    if (!base) throw new ServiceError('BAD_REQUEST', `${PROM_REMOTE_WRITE} bodies are taken only by POST /api/v1/write`);
    const request = decodeWriteRequest(body, this.opts.limits);
    const groups = promPointsByCollection(request, base).map(({ scope, batch }) => {
      try {
        validateScope(scope); // names from labels become folder names
      } catch (err) {
        const field = SCOPE_FIELDS.find((f) => scope[f] !== base[f]);
        throw new ServiceError('BAD_REQUEST', `label ${field ?? 'grid'}: ${(err as Error).message}`);
      }
      return { collectionId: idOf(scope), batch };
    });
    return this.writeGroups(header, groups, { points: 0, learned: [], created: [], forward: [] });
  }

  /** Checks every collection (grant, existence) before appending anything, then appends or forwards each. */
  private writeGroups(header: WriteFrameHeader, groups: Array<{ collectionId: string; batch: PointBatch }>, outcome: WriteOutcome): WriteOutcome {
    {
      const allowed = header.allowedUnits ? new Set(header.allowedUnits) : null;
      // Validate everything before writing anything (all or nothing per request).
      for (const { collectionId } of groups) {
        if (allowed && !allowed.has(collectionId.slice(0, collectionId.lastIndexOf('/')))) {
          return { ...outcome, error: { code: 'FORBIDDEN', message: `collection ${collectionId} is outside your access grant` } };
        }
        if (this.isLocal(collectionId) && !header.autoCreate && !this.opts.store.getCollection(collectionId)) {
          return { ...outcome, refused: `collection ${collectionId} does not exist (create it first, or enable storage.autoCreateCollections)` };
        }
      }
      for (const { collectionId, batch } of groups) {
        // Buffered points count with the series they will add at the flush, so a flush is never refused.
        const tooMany = this.isLocal(collectionId) ? this.opts.store.seriesLimitProblem(collectionId, batch, header.mode === 'buffered' ? this.opts.buffer.newSeries(collectionId) : undefined) : null;
        if (tooMany !== null) return refusal(outcome, tooMany);
      }
      // Every day of a collection is a day log to open now and to seal later on this thread:
      // bounded per request (forwarded parts included) and per collection, before any write.
      const max = this.opts.maxDaysPerWrite ?? Infinity;
      const days: Array<Set<number>> = [];
      let total = 0;
      for (const { batch } of groups) {
        const set = batchDays(batch, max - total);
        total += set.size;
        if (total > max) return refusal(outcome, daysPerWriteMessage(max));
        days.push(set);
      }
      for (let g = 0; g < groups.length; g++) {
        const problem = this.unsealedDaysProblem(groups[g]!.collectionId, days[g]!, header);
        if (problem !== null) return refusal(outcome, problem);
      }
      for (let g = 0; g < groups.length; g++) {
        const { collectionId, batch: part } = groups[g]!;
        if (this.isLocal(collectionId)) this.appendLocal(collectionId, part, header, outcome, days[g]);
        else if (header.contentType === PROM_REMOTE_WRITE) outcome.forward.push({ collectionId, body: toRemoteWrite(collectionId, part), contentType: PROM_REMOTE_WRITE });
        else outcome.forward.push({ collectionId, body: toBinary(collectionId, part), ...(part.labels ? { labels: part.labels } : {}) });
      }
    }
    return outcome;
  }

  /**
   * Points another shard decoded (and the main thread forwarded), as an HSW1 body or a remote-write
   * one. The request's day count was checked where it was decoded; this collection's unsealed days
   * only its owner knows.
   */
  private writeDecoded(header: WriteFrameHeader, body: Uint8Array): WriteOutcome {
    const outcome: WriteOutcome = { points: 0, learned: [], created: [], forward: [] };
    const collectionId = header.collectionId!;
    let batches: PointBatch[];
    if (header.contentType === PROM_REMOTE_WRITE) {
      const [organization, site, unit, grid] = collectionId.split('/');
      const groups = promPointsByCollection(decodeWriteRequest(body, this.opts.limits), { organization, site, unit, grid });
      for (const { scope } of groups) {
        if (idOf(scope) !== collectionId) throw new ServiceError('INTERNAL', `forwarded remote-write points for ${collectionId} name collection ${idOf(scope)}`);
      }
      batches = groups.map((g) => g.batch);
    } else {
      const batch = decodeBinaryBatch(body, this.opts.limits);
      // The labels travel beside the HSW1 body, which has no place for them.
      if (header.labels && header.labels.length === batch.tagNames.length) batch.labels = header.labels;
      batches = [batch];
    }
    const days = new Set<number>();
    for (const batch of batches) for (const day of batchDays(batch, Infinity)) days.add(day);
    const problem = this.unsealedDaysProblem(collectionId, days, header);
    if (problem !== null) return { ...outcome, refused: problem };
    for (const batch of batches) this.appendLocal(collectionId, batch, header, outcome, days);
    return outcome;
  }

  /** Why writing on `days` would open too many day logs in a collection of this shard (buffered days counted), or null. */
  private unsealedDaysProblem(collectionId: string, days: ReadonlySet<number>, header: WriteFrameHeader): string | null {
    if (!this.isLocal(collectionId) || header.replicated) return null;
    const problem = this.opts.store.unsealedDaysProblem(collectionId, days, header.mode === 'buffered' ? this.opts.buffer.newDays(collectionId) : undefined);
    // Old days are due at once: sealing them now, not at the next pass, makes a retry succeed sooner.
    if (problem !== null) this.opts.sealSoon?.();
    return problem;
  }

  private appendLocal(collectionId: string, batch: PointBatch, header: WriteFrameHeader, outcome: WriteOutcome, days?: ReadonlySet<number>): void {
    const { mode, autoCreate } = header;
    // Backfilled points are kept from the monitor, live ones shown to it.
    const monitor = this.opts.monitor;
    const observe = header.backfill
      ? () => {}
      : () => {
          monitor.observe(collectionId, batch);
          const live = this.opts.live.collect(collectionId, batch);
          if (live) (outcome.live ??= []).push(live);
        };
    if (header.backfill) monitor.beforeBackfill(collectionId, batch);
    if (!this.opts.store.getCollection(collectionId)) {
      if (!autoCreate) throw new ServiceError('BAD_REQUEST', `collection ${collectionId} does not exist`);
      const [organization, site, unit, grid] = collectionId.split('/');
      outcome.created.push(this.opts.store.createCollection({ organization, site, unit, grid }, {}));
    }
    if (mode === 'buffered') {
      const fresh = batch.tagNames.filter((t) => this.opts.store.tagIndex(collectionId, t) < 0);
      if (!this.opts.buffer.add(collectionId, batch, fresh, days)) {
        throw new ServiceError('UNAVAILABLE', `write buffer of shard ${this.opts.shardIndex} is full (${this.opts.buffer.pendingPoints} of ${this.opts.buffer.capacityPoints} points); retry after the next flush`);
      }
      outcome.points += batch.pointCount;
      observe();
      if (fresh.length > 0) outcome.learned.push({ collectionId, tags: fresh });
      return;
    }
    const { points, newTags } = this.opts.store.append(collectionId, batch, mode === 'sync' ? 'fsync' : 'os');
    outcome.points += points;
    observe();
    if (newTags.length > 0) outcome.learned.push({ collectionId, tags: newTags });
  }

  /** Scope from the body when it names all four fields, otherwise per tag from the tag-to-scope map. */
  private resolveCollections(batch: PointBatch): Array<{ collectionId: string; batch: PointBatch }> {
    if (isCompleteScope(batch.scope)) return [{ collectionId: idOf(batch.scope), batch }];
    const byCollection = new Map<string, number[]>();
    for (let t = 0; t < batch.tagNames.length; t++) {
      const collectionId = this.opts.tagScopes.collectionOf(batch.tagNames[t]);
      if (!collectionId) {
        throw new ServiceError('BAD_REQUEST', `unknown tag "${batch.tagNames[t]}": no scope in the body and the tag is in no collection yet; send organization, site, unit and grid`);
      }
      let tags = byCollection.get(collectionId);
      if (!tags) byCollection.set(collectionId, (tags = []));
      tags.push(t);
    }
    if (byCollection.size === 1) return [{ collectionId: [...byCollection.keys()][0], batch }];
    return [...byCollection].map(([collectionId, tagIndexes]) => ({ collectionId, batch: selectTags(batch, tagIndexes) }));
  }

  private isLocal(collectionId: string): boolean {
    return shardOf(collectionId, this.opts.shardCount) === this.opts.shardIndex;
  }
}

/** A refused write's outcome; a line protocol body's reads as a partial write that dropped every line. */
function refusal(outcome: WriteOutcome, message: string): WriteOutcome {
  return { ...outcome, refused: outcome.lines ? `partial write: ${message} dropped=${outcome.lines.accepted + outcome.lines.rejected}` : message };
}

function isJson(contentType: string): boolean {
  return !contentType.startsWith('application/octet-stream') && !contentType.startsWith('application/msgpack') && !contentType.startsWith('application/x-msgpack');
}

/** The body as points; `rows` lets the ingest routes' rows shape through as well. */
function decode(body: Uint8Array, contentType: string, limits: DecodeLimits, rows: boolean): PointBatch {
  if (contentType.startsWith('application/octet-stream')) return decodeBinaryBatch(body, limits);
  if (contentType.startsWith('application/msgpack') || contentType.startsWith('application/x-msgpack')) {
    let value: unknown;
    try {
      value = unpack(body);
    } catch (err) {
      throw new WriteBodyError('malformed', `malformed msgpack body: ${(err as Error).message}`);
    }
    return rows && isRowsObject(value) ? decodeRowsObject(value, limits) : decodeWriteObject(value, limits);
  }
  if (rows && startsLikeRows(body)) {
    let value: unknown;
    try {
      value = JSON.parse(Buffer.from(body.buffer, body.byteOffset, body.byteLength).toString('utf8'));
    } catch (err) {
      throw new WriteBodyError('malformed', `malformed JSON body: ${(err as Error).message}`);
    }
    return decodeRowsObject(value, limits);
  }
  return decodeJsonWriteBody(body, limits);
}

/** A JSON body that opens with `[`, or with an object whose first key is "ts" or "values" (a row). */
function startsLikeRows(body: Uint8Array): boolean {
  const head = Buffer.from(body.buffer, body.byteOffset, Math.min(body.byteLength, 64)).toString('latin1');
  return /^\s*(\[|\{\s*"(ts|values)")/.test(head);
}

/** A gzip body decoded, at most header.maxDecodedBytes long. */
function gunzip(body: Uint8Array, header: WriteFrameHeader): Uint8Array {
  const limit = header.maxDecodedBytes ?? Number.MAX_SAFE_INTEGER;
  try {
    return zlib.gunzipSync(body, { maxOutputLength: Math.min(limit, 2 ** 31 - 1) });
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ERR_BUFFER_TOO_LARGE') throw tooLarge(limit, header);
    throw new ServiceError('BAD_REQUEST', `the body is not valid gzip (Content-Encoding: gzip): ${(err as Error).message}`);
  }
}

/** A snappy body (Prometheus remote write) decoded, refused before any allocation when it claims more than header.maxDecodedBytes. */
function unsnappy(body: Uint8Array, header: WriteFrameHeader): Uint8Array {
  const limit = header.maxDecodedBytes ?? Number.MAX_SAFE_INTEGER;
  try {
    return snappyDecompress(body, limit);
  } catch (err) {
    if (!(err instanceof SnappyError)) throw err;
    if (err.kind === 'too-large') {
      throw new ServiceError('PAYLOAD_TOO_LARGE', `the decoded (snappy) body would be ${err.claimedBytes} bytes, more than ${limit} bytes (${header.maxDecodedSetting ?? 'the route limit'})`);
    }
    throw new ServiceError('BAD_REQUEST', `the body is not valid snappy (Content-Encoding: snappy): ${err.message}`);
  }
}

function tooLarge(limit: number, header: WriteFrameHeader): ServiceError {
  return new ServiceError('PAYLOAD_TOO_LARGE', `the decoded (gunzipped) body is larger than ${limit} bytes (${header.maxDecodedSetting ?? 'the route limit'})`);
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

/**
 * One collection's remote-written points as an uncompressed WriteRequest for the owning shard:
 * each tag's labels with the collection's scope labels, so the owner maps it to the same tag in
 * the same collection; values bit for bit (NaN payloads kept, unlike HSW1's NaN = no value).
 */
function toRemoteWrite(collectionId: string, batch: PointBatch): Uint8Array {
  const [organization, site, unit, grid] = collectionId.split('/');
  const scopeLabels: Label[] = [['grid', grid], ['organization', organization], ['site', site], ['unit', unit]];
  return encodeWriteRequest(
    batch.tagNames.map((_, t) => {
      const from = batch.tagStart[t];
      const to = batch.tagStart[t + 1];
      return { labels: [...Object.entries(batch.labels?.[t] ?? {}), ...scopeLabels], timestamps: batch.timestamps.subarray(from, to), values: batch.values.subarray(from, to) };
    }),
  );
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
