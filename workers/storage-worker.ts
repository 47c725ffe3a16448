// Entry of a storage worker thread (one per shard, managed by piscina), and
// its task dispatch. On load it recovers the shard from disk (torn tails cut,
// indexes and last values rebuilt) before it takes any task. It is the only
// thread that touches its collections' files.
//
//   storage-worker.ts  this file: the shard's parts, timers, and one handler per task opcode
//   write-loop.ts      writes from the request ring: decode, check, append, group commit
//   query-runner.ts    queries: result fragments into the result ring, on the client's credit
//   answers.ts         write answers on the result ring, and errors as they cross threads

import { compileGlob } from '../shared/glob.js';
import { workerData } from 'node:worker_threads';
import { RingConsumer, RingProducer } from '../shared/ring.js';
import { CONTROL_FRAMES_TAKEN, CONTROL_TAGMAP_VERSION, OP, type BufferStats, type ReplyOf, type StorageOp, type StorageTask, type StorageWorkerData, type TaskOf, type TaskReply } from '../shared/protocol.js';
import { shardOf } from '../shared/shard-hash.js';
import { toWireError, WriteAnswers } from './answers.js';
import { QueryRunner } from './query-runner.js';
import { QueryMemory } from './series-buffer.js';
import { ShardStore } from './shard-store.js';
import { threadMemoryNow } from './compaction-client.js';
import { TagScopeReader } from './tag-scopes.js';
import { WriteBuffer } from './write-buffer.js';
import { WriteLoop } from './write-loop.js';
import { MonitorWatch } from './monitor-watch.js';
import { LiveWatch } from './live-watch.js';
import { workerLog } from './worker-log.js';
import { debugPause } from './debug-pause.js';

const data = workerData as StorageWorkerData;
const control = new Int32Array(data.control);
const requests = new RingConsumer(data.requestRing);
const results = new RingProducer(data.resultRing);
const log = workerLog(data.logLevel, { shard: data.shardIndex }, data.logToStderr ? (line) => void process.stderr.write(line) : undefined, data.logFormat);

const store = new ShardStore({
  dataDir: data.dataDir,
  owns: (id) => shardOf(id, data.shardCount) === data.shardIndex,
  log,
  maxSeriesPerCollection: data.maxSeriesPerCollection,
  maxUnsealedDaysPerCollection: data.maxUnsealedDaysPerCollection,
  dayLogCompactBlocks: data.dayLogCompactBlocks,
  dayLogCompactBytes: data.dayLogCompactBytes,
});
const recovered = store.recover();
log.info({ ...recovered }, 'shard recovered');

const monitor = new MonitorWatch(store);
const live = new LiveWatch();
// A restarted worker takes writes from the ring before its first task: it must know the watched tags already.
for (const [collectionId, tags] of data.liveWatches) live.change(collectionId, [...tags], [], true);
const queries = new QueryRunner({ store, results, control, stallTimeoutMs: data.resultStallTimeoutMs, memory: new QueryMemory(data.queryMemoryBytes) });

const tagScopes = new TagScopeReader(data.dataDir, () => Atomics.load(control, CONTROL_TAGMAP_VERSION));
// Points reach the monitor when they are accepted (buffered ones before their flush).
const buffer = new WriteBuffer(
  data.bufferCapacityPoints,
  (collectionId, batch) => store.append(collectionId, batch, 'os'),
  (err, collectionId, points) => log.error({ err: String(err), collectionId, points }, 'buffered points could not be written at flush'),
);
const flushTimer = setInterval(() => {
  flushBuffer();
  // A compaction made a part: parts of similar size may be due for a merge (runs in slices). The
  // flag stays while a pass is under way (it may have passed that day already), for the next one.
  if (store.maintenanceWanted && !backgroundSealing) {
    store.maintenanceWanted = false;
    backgroundSeal();
  }
}, data.flushIntervalMs);
flushTimer.unref();
/** Days sealed since this worker started (BUFFER_STATS, and so GET /metrics). */
let sealedDays = 0;
/** Longest one slice of sealing holds the shard's thread before writes and queries get a turn. */
const SEAL_SLICE_MS = 50;
/** Bumped whenever collections are closed or (re)opened: a sealing under way stops rather than reopen one. */
let storeEpoch = 0;
let backgroundSealing = false;
/** A write was refused for storage.maxUnsealedDaysPerCollection: the background pass stops yielding to writes. */
let urgentSeal = false;
/**
 * A background pass (timer or compaction) runs its next slice once writes pause (whenWritesIdle),
 * or after this long at most: merges and seals yield to ingest (a merge of parts in the
 * middle of a burst cost it a third of its rate) yet get a slice a second under any load.
 */
const MAINTENANCE_YIELD_MS = 1000;

/** Writes idle: no write frame taken for this long (a ring empty for an instant is no pause: the next request is on its way). */
const WRITES_IDLE_MS = 100;

/** Waits until the write loop took no frame for WRITES_IDLE_MS, for at most MAINTENANCE_YIELD_MS; false if writes never paused. */
async function whenWritesIdle(): Promise<boolean> {
  const since = performance.now();
  while (!urgentSeal && performance.now() - since < MAINTENANCE_YIELD_MS) {
    const frames = Atomics.load(control, CONTROL_FRAMES_TAKEN);
    await new Promise<void>((resolve) => setTimeout(resolve, WRITES_IDLE_MS));
    if (Atomics.load(control, CONTROL_FRAMES_TAKEN) === frames && requests.usedBytes() === 0) return true;
  }
  return urgentSeal;
}

/**
 * Seals due days in slices of about SEAL_SLICE_MS with the event loop free in between, so a
 * collection with hundreds of days to seal does not hold every other collection of the shard
 * (1000 days took 17 s in one piece). Returns the days sealed.
 */
/** `nowMs`: the service clock's time for seal_now (the debug clock may be ahead); the wall clock otherwise. */
async function sealInSlices(collectionId: string | undefined, force: boolean, nowMs?: number, yieldToWrites = false): Promise<number> {
  const epoch = storeEpoch;
  const now = nowMs ?? Date.now();
  let total = 0;
  const sealedThisPass = new Set<string>();
  for (;;) {
    let writesBusy = false;
    if (yieldToWrites) {
      writesBusy = !(await whenWritesIdle());
      if (storeEpoch !== epoch) return total;
    }
    const { sealedDays: n, more } = store.seal({ ...(collectionId !== undefined ? { collectionId } : {}), now, graceMs: data.sealGraceMs, force, budgetMs: SEAL_SLICE_MS, sealedThisPass, writesBusy });
    total += n;
    sealedDays += n;
    if (!more) return total;
    await new Promise<void>((resolve) => setImmediate(resolve));
    if (storeEpoch !== epoch) return total;
  }
}

/**
 * A background pass over every open collection, unless one is under way; it yields to waiting
 * writes (whenWritesIdle) unless `urgent` (a write refused until days are sealed).
 */
function backgroundSeal(urgent = false): void {
  if (urgent) urgentSeal = true;
  if (backgroundSealing) return;
  backgroundSealing = true;
  sealInSlices(undefined, false, undefined, true)
    .catch((err) => log.error({ err: String(err) }, 'background seal failed'))
    .finally(() => {
      backgroundSealing = false;
      urgentSeal = false;
    });
}
const sealTimer = setInterval(() => backgroundSeal(), Math.min(60_000, Math.max(1000, data.sealGraceMs / 4)));
sealTimer.unref();

let flushes = 0;
/** BUFFER_STATS: monitor samples answered, and the write frames taken between their sending and their running. */
let monitorSamples = 0;
let monitorSampleWaitedFrames = 0;
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
  [OP.MONITOR_SAMPLE]: (task) => {
    if (task.framesTaken !== undefined) {
      monitorSamples++;
      monitorSampleWaitedFrames += (Atomics.load(control, CONTROL_FRAMES_TAKEN) - task.framesTaken) | 0;
    }
    return monitor.sample(task.collections);
  },
  [OP.TAG_INDEXES]: (task) => task.tags.map((tag) => store.tagIndex(task.collectionId, tag)),
  [OP.LIVE_WATCH]: (task) => live.change(task.collectionId, task.add, task.remove, task.replace === true),
  [OP.CREATE_COLLECTION]: (task) => store.createCollection(task.scope, task.extra),
  [OP.UPDATE_COLLECTION]: (task) => store.updateCollection(task.id, task.fields),
  [OP.QUERY]: (task) => queries.query(task),
  [OP.QUERY_TABLE]: (task) => queries.queryTable(task),
  [OP.LIST_SERIES]: (task) => store.listSeries(task.collections, compileGlob(task.glob), task.limit),
  [OP.LAST_VALUES]: (task) => task.tags.map((tag) => store.lastValue(task.collectionId, tag)),
  [OP.SEAL]: (task) => {
    flushBuffer();
    return sealInSlices(task.collectionId ?? undefined, task.force, task.nowMs ?? undefined);
  },
  [OP.BUFFER_STATS]: () => bufferStats(),
  [OP.FLUSH]: () => {
    flushBuffer();
    store.syncPending();
    return null;
  },
  [OP.BACKUP_MARK]: (task) => {
    flushBuffer();
    const mark = store.backupMark(task.stagingDir);
    debugPause('backup-marked');
    return mark;
  },
  [OP.DETACH]: () => {
    storeEpoch++;
    flushBuffer();
    store.close();
    monitor.reset();
    return null;
  },
  [OP.ATTACH]: () => {
    storeEpoch++;
    return store.recover().collections;
  },
  [OP.CLOSE_COLLECTION]: async (task) => {
    storeEpoch++;
    flushBuffer();
    store.closeCollection(task.id);
    // The caller may move or delete the folder next: no part of the compaction thread's may be
    // written into it after that (its answers for a closed collection are dropped with their file).
    await store.compactionsSettled();
    return null;
  },
  [OP.OPEN_COLLECTION]: (task) => {
    storeEpoch++;
    store.openCollection(task.id);
    return null;
  },
  [OP.REMOVE_COLLECTION]: async (task) => {
    storeEpoch++;
    buffer.drop(task.id);
    store.closeCollection(task.id);
    await store.compactionsSettled(); // as for CLOSE_COLLECTION: the folder is deleted next
    return null;
  },
};

export default async function handle(task: StorageTask): Promise<TaskReply> {
  try {
    const run = handlers[task.op] as (task: StorageTask) => ReplyOf<StorageOp> | Promise<ReplyOf<StorageOp>>;
    return { ok: true, value: await run(task) };
  } catch (err) {
    return { ok: false, error: toWireError(err, log) };
  }
}

function bufferStats(): BufferStats {
  const files = store.stats();
  return {
    shard: data.shardIndex,
    capacityPoints: buffer.capacityPoints,
    pendingPoints: buffer.pendingPoints,
    fill: buffer.capacityPoints === 0 ? 0 : buffer.pendingPoints / buffer.capacityPoints,
    flushes,
    lastFlushMs,
    ringBytes: requests.capacity,
    ringUsedBytes: requests.usedBytes(),
    sealedDays,
    activeBytes: files.activeBytes,
    logBlocks: files.logBlocks,
    compactions: store.compactions,
    sealedBytes: files.sealedBytes,
    monitorSamples,
    monitorSampleWaitedFrames,
    ...threadMemoryNow(),
    compactionHeapUsedBytes: store.compactionMemory.heapUsedBytes,
    compactionArrayBufferBytes: store.compactionMemory.arrayBufferBytes,
  };
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

const writes = new WriteLoop({ shardIndex: data.shardIndex, shardCount: data.shardCount, requests, answers: new WriteAnswers(results, data.resultStallTimeoutMs, log), store, buffer, monitor, live, tagScopes, log, limits: { minTimestampMs: data.minTimestampMs }, maxDaysPerWrite: data.maxDaysPerWrite, sealSoon: () => setImmediate(() => backgroundSeal(true)), control });
void writes.run().catch((err) => {
  // The loop never ends on its own; a failure here is a bug: crash so piscina starts a fresh worker.
  log.fatal({ err: String((err as Error)?.stack ?? err) }, 'write loop failed');
  process.exit(70);
});
