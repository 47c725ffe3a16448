// Every task the main thread sends a storage worker, and every reply, as one
// discriminated union. Opcodes are only ever appended. Large payloads never
// travel in these messages: write bodies go through the shard's request ring
// (the task names the frame by `seq`), query results come back through the
// result ring (frames tagged with the task's `seq`).
//
// It lives in shared/ because it is the contract between the two threads:
// src/storage/shards.ts writes what workers/storage-worker.ts reads, and
// neither side owns it.

import type { Precision } from '../native-free-codecs/line-protocol.js';
import type { SeriesLabels } from '../native-free-codecs/point-batch.js';
export type { SeriesLabels };
import type { ResultFormat } from '../native-free-codecs/result-envelope.js';
import type { AggregatorSpec } from './aggregator-spec.js';
import type { WireError } from './errors.js';
import type { CollectionScope } from './scope.js';

export type { WireError } from './errors.js';

export const OP = {
  CREATE_COLLECTION: 1,
  UPDATE_COLLECTION: 2,
  /** No longer sent: writes go through the request ring (WriteFrameHeader). */
  WRITE: 3,
  QUERY: 4,
  LAST_VALUES: 5,
  SEAL: 6,
  BUFFER_STATS: 7,
  FLUSH: 8,
  CLOSE_COLLECTION: 9,
  OPEN_COLLECTION: 10,
  /** No longer sent, see WRITE. */
  WRITE_DECODED: 11,
  REMOVE_COLLECTION: 12,
  PING: 13,
  QUERY_TABLE: 14,
  MONITOR_SAMPLE: 15,
  TAG_INDEXES: 16,
  BACKUP_MARK: 17,
  DETACH: 18,
  ATTACH: 19,
  /** The tags of a collection whose written points go back to the main thread (live data). */
  LIVE_WATCH: 20,
  /** Series of some collections whose tag names match a glob, with labels and last values. */
  LIST_SERIES: 21,
} as const;

/** One requested series: a tag and the aggregators to run on it, in order (empty: raw points). */
export interface SeriesRequest {
  tag: string;
  pipeline: AggregatorSpec[];
  /** Key of this series in the result when it differs from the tag (tag mappings). */
  label?: string;
}

/** How the result frames of a QUERY are encoded (fragments: the main thread writes the envelope, native-free-codecs/result-envelope.ts). */
export type { ResultFormat } from '../native-free-codecs/result-envelope.js';

/** What each storage worker is started with (piscina workerData). */
export interface StorageWorkerData {
  shardIndex: number;
  shardCount: number;
  dataDir: string;
  requestRing: SharedArrayBuffer;
  resultRing: SharedArrayBuffer;
  /** Int32 slots shared with the main thread: see CONTROL_* below. */
  control: SharedArrayBuffer;
  bufferCapacityPoints: number;
  flushIntervalMs: number;
  sealGraceMs: number;
  resultStallTimeoutMs: number;
  /** Bytes of materialised query series (pipelines, binary and msgpack results) a shard holds at once. */
  queryMemoryBytes: number;
  /** storage.maxSeriesPerCollection. */
  maxSeriesPerCollection: number;
  /** storage.maxDaysPerWrite: distinct (collection, UTC day) pairs one write request may touch. */
  maxDaysPerWrite: number;
  /** storage.maxUnsealedDaysPerCollection: day logs one collection may have open at once. */
  maxUnsealedDaysPerCollection: number;
  /** storage.dayLogCompactBlocks / dayLogCompactBytes: a day's logs past either are compacted into a part. */
  dayLogCompactBlocks: number;
  dayLogCompactBytes: number;
  /** The log.level setting (pino level name): the worker writes no line below it. */
  logLevel: string;
  /** log.format: the workers write their lines in the main thread's format. */
  logFormat: 'json' | 'pretty';
  /** Lines to stderr instead of stdout (the historian command's own service). */
  logToStderr: boolean;
  /** storage.minTimestampMs: writes with an earlier timestamp are refused. */
  minTimestampMs: number;
  /**
   * The live-watched tags of this shard's collections, kept current by the main thread: piscina
   * hands a restarted worker this object as it is then, so the writes it takes from the ring
   * before its first task are shown to live subscribers too.
   */
  liveWatches: Map<string, Set<string>>;
}

/**
 * The control buffer: Int32 words shared by the main thread and one storage worker.
 *
 *   word 0                 unused (was the single cancel slot of layout 1)
 *   word 1                 CONTROL_TAGMAP_VERSION: bumped by the main thread when the tag map changes
 *   word 2                 CONTROL_PRIORITY_TASKS: latency-critical tasks (monitor samples) the main
 *                          thread has sent and not had answered yet; while it is not 0 the write
 *                          loop ends its slice after the frame in hand, so they wait behind at most
 *                          one write frame instead of a whole slice
 *   word 3                 CONTROL_FRAMES_TAKEN: write frames the worker has taken from the request
 *                          ring (Int32, wrapping); a monitor sample carries the value it saw when
 *                          sent, so the worker counts the frames the sample waited behind
 *   words 4 + 4*q ..       query slot q (0 <= q < QUERY_SLOTS), one per query streaming results:
 *     + QUERY_SEQ            the seq of the query holding the slot (main thread, before the task)
 *     + QUERY_CREDIT         bytes of result frames the worker may have produced so far; the main
 *                            thread adds to it as the client takes bytes, and notifies this word
 *     + QUERY_CANCELLED      1 when the query must stop (client gone, stalled, past its deadline);
 *                            the main thread notifies QUERY_CREDIT after setting it
 *
 * A worker emits a result frame of n bytes only while produced + n <= credit (Int32 wrapping
 * arithmetic), so no query can fill the shared result ring, and a client that stops reading
 * stops its own query without holding up anyone else's frames.
 */
export const CONTROL_TAGMAP_VERSION = 1;
export const CONTROL_PRIORITY_TASKS = 2;
export const CONTROL_FRAMES_TAKEN = 3;
export const QUERY_SLOTS = 64;
export const QUERY_SLOT_BASE = 4;
export const QUERY_SLOT_WORDS = 4;
export const QUERY_SEQ = 0;
export const QUERY_CREDIT = 1;
export const QUERY_CANCELLED = 2;
export const CONTROL_SLOTS = QUERY_SLOT_BASE + QUERY_SLOTS * QUERY_SLOT_WORDS;

/** Index of a word of query slot `slot` in the control buffer. */
export function querySlotWord(slot: number, word: number): number {
  return QUERY_SLOT_BASE + slot * QUERY_SLOT_WORDS + word;
}

/** Result bytes a query may have in flight before its client takes some: four frames. */
export const QUERY_CREDIT_BYTES = 1 << 20;

export type WriteMode = 'sync' | 'fast' | 'buffered';

export type StorageTask =
  | { op: typeof OP.CREATE_COLLECTION; scope: CollectionScope; extra: Record<string, unknown> }
  | { op: typeof OP.UPDATE_COLLECTION; id: string; fields: Record<string, unknown> }
  | {
      op: typeof OP.QUERY;
      seq: number;
      /** Control slot carrying this query's credit and cancel flag. */
      slot: number;
      /** Epoch ms after which the query stops (storage.queryTimeoutMs). */
      deadline: number;
      collectionId: string;
      series: SeriesRequest[];
      start: number;
      end: number;
      format: ResultFormat;
      /** Whether this is the first fragment of the JSON object (no leading comma). */
      first: boolean;
    }
  | { op: typeof OP.QUERY_TABLE; seq: number; slot: number; deadline: number; collectionId: string; series: SeriesRequest[]; start: number; end: number }
  | { op: typeof OP.LAST_VALUES; collectionId: string; tags: string[] }
  /** nowMs: the service clock's now (the day it is in is not sealed); the worker's wall clock when absent. */
  | { op: typeof OP.SEAL; collectionId: string | null; force: boolean; nowMs?: number }
  | { op: typeof OP.BUFFER_STATS }
  | { op: typeof OP.FLUSH }
  | { op: typeof OP.CLOSE_COLLECTION; id: string }
  | { op: typeof OP.OPEN_COLLECTION; id: string }
  | { op: typeof OP.REMOVE_COLLECTION; id: string }
  /** `framesTaken`: CONTROL_FRAMES_TAKEN when the main thread sent the task (for the counters of BufferStats). */
  | { op: typeof OP.MONITOR_SAMPLE; collections: MonitorSampleRequest[]; framesTaken?: number }
  | { op: typeof OP.TAG_INDEXES; collectionId: string; tags: string[] }
  /** Flush, then hard-link every file of the shard under `stagingDir` (a time-series backup's instant). */
  | { op: typeof OP.BACKUP_MARK; stagingDir: string }
  /** Flush and close every collection (a restore is about to swap the ts folder). */
  | { op: typeof OP.DETACH }
  /** Open the shard's collections from disk again (after a restore's swap, or its undoing). */
  | { op: typeof OP.ATTACH }
  /**
   * Changes the live-watched tags of a collection by a delta (what one subscription adds or
   * drops), so an update costs its own tags, not the whole list; `replace` first forgets the
   * collection's list (a restarted worker told everything again).
   */
  | { op: typeof OP.LIVE_WATCH; collectionId: string; add: string[]; remove: string[]; replace?: boolean }
  /** `collections` in the order the listing gives them; at most `limit` series come back. */
  | { op: typeof OP.LIST_SERIES; collections: string[]; glob: string; limit: number }
  | { op: typeof OP.PING };

/** One series of a listing (WIRE.md part 3, `GET /svcapi/series`). */
export interface SeriesListing {
  collection: string;
  tag: string;
  labels?: SeriesLabels;
  last_ms: number | null;
  last_value: number | null;
}

/**
 * One collection of a monitor tick. The worker keeps, per watched tag, the extremes of what was
 * written since the last sample; `tags` comes only when the watch list changed (`version`), and a
 * worker that does not hold `version` (it restarted) answers `resend` for that collection.
 */
export interface MonitorSampleRequest {
  collectionId: string;
  version: number;
  tags?: string[];
}

/** Numbers per tag in MonitorSample.values: last ts, last value, max ts, max value, min ts, min value, points. */
export const MONITOR_SAMPLE_STRIDE = 7;

export interface MonitorSample {
  collectionId: string;
  /** The worker does not hold this version of the watch list: send the tags again. */
  resend?: boolean;
  /** The collection does not exist (any more) on this shard. */
  missing?: boolean;
  /** Per tag of the watch list, in its order, MONITOR_SAMPLE_STRIDE numbers (NaN: none). */
  values?: Float64Array;
  /** Each tag's index in the collection's tag dictionary (-1: never written); sent with a new watch list. */
  tagIndexes?: number[];
}

/**
 * A write in the request ring: frame tag = sequence number, payload = u32
 * header length, the header as UTF-8 JSON, zero padding to a multiple of 8
 * (so an HSW1 body stays 8-byte aligned), then the body bytes. The answer is
 * one frame on the result ring with the same tag: a msgpack WriteReply.
 */
export interface WriteFrameHeader {
  mode: WriteMode;
  contentType: string;
  /** Create missing collections instead of refusing the write. */
  autoCreate: boolean;
  /**
   * The units a non-admin caller may write to, as `organization/site/unit` (a collection id
   * without its grid); null for admins. The worker checks every collection the body resolves to
   * against this list with the scope it decoded itself, so what is checked is what is written.
   */
  allowedUnits: string[] | null;
  /** Set for points another shard decoded: an HSW1 (or PROM_REMOTE_WRITE) body for this collection. */
  collectionId?: string;
  /** With collectionId: the label set of each of the body's tags (HSW1 has no place for them). */
  labels?: ReadonlyArray<SeriesLabels | null>;
  /** Ingest: the scope fields a body (or a line) does not name come from here, the ingest client's collection. */
  defaultScope?: CollectionScope;
  /** Ingest: rows (`{ts, values}` or an array of them) are a body shape too. */
  rows?: boolean;
  /** Set when contentType is LINE_PROTOCOL: the timestamp unit and the time of lines without one. */
  lineProtocol?: { precision: Precision; nowMs: number };
  /**
   * The body is gzip- or snappy-compressed (snappy: Prometheus remote write); decoded, it may have
   * at most `maxDecodedBytes` (else 413 naming `maxDecodedSetting`).
   */
  contentEncoding?: 'gzip' | 'snappy';
  maxDecodedBytes?: number;
  maxDecodedSetting?: string;
  /** Historical data: the monitor does not see these points (backfill never raises alarms). */
  backfill?: boolean;
  /**
   * Applied from another node of a cluster, which accepted it: storage.maxUnsealedDaysPerCollection
   * is not checked again (the nodes seal at their own times; the same write must land on each).
   */
  replicated?: boolean;
  /**
   * One part of a body larger than a frame may carry: parts share the frame tag and come in
   * order (frames of other writes may come between them); the worker gathers them and answers
   * once, after the last. `abort` (on a part of no bytes) drops what was gathered.
   */
  part?: { index: number; count: number; totalBytes: number; abort?: boolean };
}

/** Internal content type of InfluxDB line protocol bodies (clients send text/plain). */
export const LINE_PROTOCOL = 'text/x-influx-line-protocol';

/**
 * Internal content type of Prometheus remote write 1.0 bodies (clients send
 * `application/x-protobuf` with `Content-Encoding: snappy`): a prompb WriteRequest, decoded in
 * the worker (native-free-codecs/prom-remote.ts). Also the body of points another shard decoded
 * from one, forwarded uncompressed with `collectionId`: unlike HSW1 it keeps NaN values (the
 * stale marker) and costs no row per point per tag.
 */
export const PROM_REMOTE_WRITE = 'application/x-prometheus-remote-write';

/** What a line protocol write reports besides its points (partial writes, skipped string fields). */
export interface LineCounts {
  accepted: number;
  rejected: number;
  stringFields: number;
  /** WIRE's `partial write: … dropped=<n>` text, or null when every line was good. */
  partialError: string | null;
}

const headerEncoder = new TextEncoder();
const headerDecoder = new TextDecoder();

export function writeFrameHead(header: WriteFrameHeader): Uint8Array {
  const json = headerEncoder.encode(JSON.stringify(header));
  const head = new Uint8Array((4 + json.length + 7) & ~7);
  new DataView(head.buffer).setUint32(0, json.length, true);
  head.set(json, 4);
  return head;
}

export function readWriteFrame(payload: Uint8Array): { header: WriteFrameHeader; body: Uint8Array } {
  const length = new DataView(payload.buffer, payload.byteOffset, payload.byteLength).getUint32(0, true);
  const header = JSON.parse(headerDecoder.decode(payload.subarray(4, 4 + length))) as WriteFrameHeader;
  return { header, body: payload.subarray((4 + length + 7) & ~7) };
}

/** A collection as meta.json records it and replies carry it: its scope, times, and the caller's fields. */
export interface CollectionRecord extends CollectionScope {
  createdAt: number;
  updatedAt: number;
  [k: string]: unknown;
}

export interface WriteOutcome {
  /** Accepted points; 0 when refused. */
  points: number;
  /** A refusal of a well-formed body: HTTP 200 with success false (WIRE.md). */
  refused?: string;
  /** A malformed body or a transport-level problem: an HTTP error. */
  error?: WireError;
  /** Tags each collection saw for the first time, for the tag-to-scope map. */
  learned: Array<{ collectionId: string; tags: string[] }>;
  /** Collections created by this write (autoCreate). */
  created: CollectionRecord[];
  /**
   * Points for collections owned by other shards, for the main thread to forward: HSW1 binary
   * bodies, or PROM_REMOTE_WRITE ones (`contentType`) for points of a remote write.
   */
  forward: Array<{ collectionId: string; body: Uint8Array; labels?: ReadonlyArray<SeriesLabels | null>; contentType?: string }>;
  /** Line protocol bodies only. */
  lines?: LineCounts;
  /** Points of live-watched tags this write appended (not for backfills). */
  live?: LivePoints[];
}

/** Written points of a collection's live-watched tags: tag i has counts[i] points, in order, in timestamps/values. */
export interface LivePoints {
  collectionId: string;
  tags: string[];
  counts: number[];
  timestamps: number[];
  values: number[];
}

export interface BufferStats {
  shard: number;
  capacityPoints: number;
  pendingPoints: number;
  fill: number;
  flushes: number;
  lastFlushMs: number | null;
  ringBytes: number;
  ringUsedBytes: number;
  /** Days sealed by this shard's worker since it started (background and seal_now). */
  sealedDays: number;
  /** Bytes of the day logs (active and late) and of the sealed day files the shard holds. */
  activeBytes: number;
  sealedBytes: number;
  /** Blocks the day logs' indexes hold in memory (36 bytes each), and day logs compacted into parts since the worker started. */
  logBlocks: number;
  compactions: number;
  /** MONITOR_SAMPLE tasks answered since the worker started, and the write frames they waited behind in all (taken after the task was sent, before it ran). */
  monitorSamples: number;
  monitorSampleWaitedFrames: number;
  /** The worker's own V8 heap in use and the ArrayBuffer memory (typed arrays, buffers) it holds, when asked. */
  heapUsedBytes: number;
  arrayBufferBytes: number;
  /** The same two of the shard's compaction thread, as it last answered (zeros when it does not run). */
  compactionHeapUsedBytes: number;
  compactionArrayBufferBytes: number;
}

/** What a shard holds at a backup's instant: its files (paths relative to the data dir) and per-collection totals. */
export interface BackupMark {
  /** `growing`: a day log, of which only the first `size` bytes belong to the backup. */
  files: Array<{ path: string; size: number; growing: boolean }>;
  collections: Array<{ id: string; points: number; first_ms: number | null; last_ms: number | null }>;
}

export type StorageOp = StorageTask['op'];
export type TaskOf<Op extends StorageOp> = Extract<StorageTask, { op: Op }>;

/** What a task answers when it succeeds, by opcode (a missing opcode fails to compile at ReplyOf). */
interface ReplyValues {
  [OP.CREATE_COLLECTION]: CollectionRecord;
  [OP.UPDATE_COLLECTION]: CollectionRecord;
  /** Points sent. */
  [OP.QUERY]: number;
  /** Points sent. */
  [OP.QUERY_TABLE]: number;
  /** Per requested tag, in order: its last [ts, value], or null. */
  [OP.LAST_VALUES]: Array<[number, number] | null>;
  /** Days sealed. */
  [OP.SEAL]: number;
  [OP.BUFFER_STATS]: BufferStats;
  [OP.FLUSH]: null;
  [OP.CLOSE_COLLECTION]: null;
  [OP.OPEN_COLLECTION]: null;
  [OP.REMOVE_COLLECTION]: null;
  [OP.MONITOR_SAMPLE]: MonitorSample[];
  /** Per requested tag, its index in the collection's tag dictionary, or -1. */
  [OP.TAG_INDEXES]: number[];
  [OP.BACKUP_MARK]: BackupMark;
  [OP.DETACH]: null;
  /** Collections opened. */
  [OP.ATTACH]: number;
  /** Tags this worker watches now, every collection together. */
  [OP.LIVE_WATCH]: number;
  /** The first `limit` matching series, and how many match in all. */
  [OP.LIST_SERIES]: { series: SeriesListing[]; total: number };
  [OP.PING]: null;
}

export type ReplyOf<Op extends StorageOp> = ReplyValues[Op];

/** A worker's answer: the value, or the error that crosses threads in its place. */
export type Reply<T> = { ok: true; value: T } | { ok: false; error: WireError };

/** The answer of any task, as piscina carries it (Shard.call gives it its opcode's type back). */
export type TaskReply = Reply<ReplyOf<StorageOp>>;

/** The answer of a write frame, on the result ring. */
export type WriteReply = Reply<WriteOutcome>;

/**
 * Result-ring frames carry the task's sequence number as their tag (below 2^31).
 * A stream ends with an empty frame, or with a frame whose tag has this bit
 * set: its payload is the last chunk (a write's whole answer saves a frame and
 * a cross-thread wake-up that way).
 */
export const FINAL_FRAME_BIT = 0x8000_0000;
