// Prometheus remote write in the storage worker's write loop, on real rings and a real
// ShardStore in this thread: snappy bodies decoded under the size bound, and the values of
// every kind (the stale marker 0x7ff0000000000002, other NaN payloads, ±Inf, -0) read back bit
// for bit from the day log, after a seal, after a reopen, through the write buffer and through a
// forward to another shard. The monitor and the live watch see them too (what each makes of a
// NaN is asserted here).

import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, test } from 'node:test';
import { unpack } from 'msgpackr';
import { encodeWriteRequest } from '../../native-free-codecs/prom-remote.js';
import { snappyCompress } from '../../native-free-codecs/snappy.js';
import { createRingBuffer, RingConsumer, RingProducer } from '../../shared/ring.js';
import { FINAL_FRAME_BIT, MONITOR_SAMPLE_STRIDE, PROM_REMOTE_WRITE, writeFrameHead, type WriteFrameHeader, type WriteReply } from '../../shared/protocol.js';
import { compileGlob } from '../../shared/glob.js';
import { shardOf } from '../../shared/shard-hash.js';
import { WriteAnswers } from '../../workers/answers.js';
import { LiveWatch } from '../../workers/live-watch.js';
import { MonitorWatch } from '../../workers/monitor-watch.js';
import { ShardStore } from '../../workers/shard-store.js';
import { TagScopeReader } from '../../workers/tag-scopes.js';
import { WriteBuffer } from '../../workers/write-buffer.js';
import { silentLog } from '../../workers/worker-log.js';
import { WriteLoop } from '../../workers/write-loop.js';

const dirs: string[] = [];
after(() => dirs.forEach((d) => fs.rmSync(d, { recursive: true, force: true })));

const CLIENT = { organization: 'acme', site: 'north', unit: 'b1', grid: 'default' };
const ID = 'acme/north/b1/default';
const T0 = Date.UTC(2026, 0, 12, 8);
const TAG = 'special{job="j"}';
/** The stale marker, other NaNs, the infinities, -0 and two plain numbers, as bit patterns. */
const BITS = [0x3ff8000000000000n, 0x7ff0000000000002n, 0x7ff8000000000000n, 0x7ff800000000beefn, 0xfff8000000000001n, 0x7ff0000000000000n, 0xfff0000000000000n, 0x8000000000000000n, 0x4004000000000000n];
const VALUES = new Float64Array(BigUint64Array.from(BITS).buffer);
const TIMES = BITS.map((_, i) => T0 + i * 1000);

const header = (extra: Partial<WriteFrameHeader> = {}): WriteFrameHeader => ({
  mode: 'fast', contentType: PROM_REMOTE_WRITE, autoCreate: true, allowedUnits: null, defaultScope: CLIENT,
  contentEncoding: 'snappy', maxDecodedBytes: 1 << 20, maxDecodedSetting: 'ingest.maxBodyBytes', ...extra,
});

function body(labels: Array<[string, string]> = [['__name__', 'special'], ['job', 'j']]): Uint8Array {
  return snappyCompress(encodeWriteRequest([{ labels, timestamps: TIMES, values: VALUES }]));
}

interface Loop {
  store: ShardStore;
  dataDir: string;
  replies: Map<number, WriteReply>;
}

/** Runs a write loop over `frames` on shard `shardIndex` of `shardCount`, with a store, buffer, monitor and live watch that `setup` may prepare. */
async function runLoop(
  frames: Array<{ seq: number; header: WriteFrameHeader; body: Uint8Array }>,
  opts: { shardIndex?: number; shardCount?: number; dataDir?: string; setup?: (parts: { store: ShardStore; monitor: MonitorWatch; live: LiveWatch }) => void; buffer?: (store: ShardStore) => WriteBuffer } = {},
): Promise<Loop> {
  const dataDir = opts.dataDir ?? fs.mkdtempSync(path.join(os.tmpdir(), 'remote-write-loop-'));
  dirs.push(dataDir);
  const store = new ShardStore({ dataDir, owns: () => true });
  store.recover();
  const monitor = new MonitorWatch(store);
  const live = new LiveWatch();
  opts.setup?.({ store, monitor, live });
  const requestRing = createRingBuffer(1 << 22);
  const resultRing = createRingBuffer(1 << 20);
  const requests = new RingProducer(requestRing);
  for (const f of frames) assert.ok(requests.tryWrite(f.seq, [writeFrameHead(f.header), f.body]), 'frame fits the ring');
  requests.close();
  await new WriteLoop({
    shardIndex: opts.shardIndex ?? 0, shardCount: opts.shardCount ?? 1, requests: new RingConsumer(requestRing),
    answers: new WriteAnswers(new RingProducer(resultRing), 1000, silentLog), store, buffer: opts.buffer?.(store) ?? new WriteBuffer(1000, () => {}),
    monitor, live, tagScopes: new TagScopeReader(dataDir, () => 0), log: silentLog, limits: { minTimestampMs: 1e11 },
  }).run();
  const replies = new Map<number, WriteReply>();
  const results = new RingConsumer(resultRing);
  for (let frame = results.tryRead(); frame; frame = results.tryRead()) {
    replies.set((frame.tag & ~FINAL_FRAME_BIT) >>> 0, unpack(frame.payload.slice()) as WriteReply);
    results.release();
  }
  return { store, dataDir, replies };
}

/** The tag's points in the store as [ts, value bits]. */
function storedBits(store: ShardStore, collectionId = ID, tag = TAG): Array<[number, bigint]> {
  const out: Array<[number, bigint]> = [];
  store.scanTag(collectionId, tag, 0, Number.MAX_SAFE_INTEGER, (ts, values, count) => {
    const bits = new BigUint64Array(values.buffer, values.byteOffset, values.length);
    for (let i = 0; i < count; i++) out.push([ts[i], bits[i]]);
  });
  return out;
}

const EXPECTED = TIMES.map((t, i) => [t, BITS[i]] as [number, bigint]);

function accepted(reply: WriteReply | undefined, points: number): asserts reply is Extract<WriteReply, { ok: true }> {
  assert.ok(reply?.ok && !reply.value.error && !reply.value.refused, JSON.stringify(reply));
  assert.equal(reply.value.points, points);
}

test('every value, the stale marker included, is stored bit for bit: in the day log, after a seal and after a reopen', async () => {
  const { store, dataDir, replies } = await runLoop([{ seq: 1, header: header(), body: body() }]);
  accepted(replies.get(1), BITS.length);
  assert.deepEqual(storedBits(store), EXPECTED, 'from the day log');
  assert.equal(store.seal({ now: T0 + 2 * 86_400_000, graceMs: 0, force: true }).sealedDays, 1);
  assert.deepEqual(storedBits(store), EXPECTED, 'from the sealed file');
  store.close();
  const reopened = new ShardStore({ dataDir, owns: () => true });
  reopened.recover();
  assert.deepEqual(storedBits(reopened), EXPECTED, 'after a reopen');
  assert.deepEqual(reopened.listSeries([ID], compileGlob('*'), 10).series.map((s) => s.labels), [{ __name__: 'special', job: 'j' }]);
});

test('buffered writes keep the bits through the write buffer', async () => {
  let buffer: WriteBuffer | null = null;
  const { store, replies } = await runLoop([{ seq: 1, header: header({ mode: 'buffered' }), body: body() }], {
    buffer: (s) => (buffer = new WriteBuffer(1000, (collectionId, batch) => void s.append(collectionId, batch, 'os'))),
  });
  accepted(replies.get(1), BITS.length);
  assert.deepEqual(storedBits(store), [], 'nothing before the flush');
  buffer!.flush();
  assert.deepEqual(storedBits(store), EXPECTED);
});

test('points of a collection another shard owns are forwarded as a WriteRequest, and the owner stores the same bits', async () => {
  const grid = Array.from({ length: 50 }, (_, i) => `g${i}`).find((g) => shardOf(`acme/north/b1/${g}`, 2) === 1)!;
  const collectionId = `acme/north/b1/${grid}`;
  const first = await runLoop([{ seq: 1, header: header(), body: body([['__name__', 'special'], ['grid', grid], ['job', 'j']]) }], { shardIndex: 0, shardCount: 2 });
  const reply = first.replies.get(1);
  accepted(reply, 0);
  assert.equal(reply.value.forward.length, 1);
  const forward = reply.value.forward[0];
  assert.equal(forward.collectionId, collectionId);
  assert.equal(forward.contentType, PROM_REMOTE_WRITE);
  // What the main thread sends the owner (ShardGateway.settle).
  const owner = await runLoop([{ seq: 2, header: { mode: 'fast', contentType: forward.contentType!, autoCreate: true, allowedUnits: null, collectionId }, body: new Uint8Array(forward.body) }], { shardIndex: 1, shardCount: 2 });
  accepted(owner.replies.get(2), BITS.length);
  assert.deepEqual(storedBits(owner.store, collectionId), EXPECTED);
  assert.deepEqual(owner.store.listSeries([collectionId], compileGlob('*'), 10).series.map((s) => [s.tag, s.labels]), [[TAG, { __name__: 'special', job: 'j' }]], 'same tag, same labels, scope labels left out');
});

test('the monitor skips NaN values (no number to compare) and takes the infinities; the live watch hands every point back', async () => {
  let monitorRef: MonitorWatch | null = null;
  const { replies } = await runLoop([{ seq: 1, header: header(), body: body() }], {
    setup: ({ store, monitor, live }) => {
      monitorRef = monitor;
      store.createCollection(CLIENT, {}); // a watch is set on a collection that exists
      monitor.sample([{ collectionId: ID, version: 1, tags: [TAG] }]);
      live.change(ID, [TAG], [], false);
    },
  });
  const reply = replies.get(1);
  accepted(reply, BITS.length);
  const [sample] = monitorRef!.sample([{ collectionId: ID, version: 1 }]);
  const [lastTs, last, maxTs, max, minTs, min, points] = [...sample.values!.subarray(0, MONITOR_SAMPLE_STRIDE)];
  assert.deepEqual({ lastTs, last, maxTs, max, minTs, min, points }, { lastTs: TIMES[8], last: 2.5, maxTs: TIMES[5], max: Infinity, minTs: TIMES[6], min: -Infinity, points: 5 });
  const [livePoints] = reply.value.live!;
  assert.deepEqual(livePoints.timestamps, TIMES);
  // The live path carries plain numbers (msgpack, then JSON or float32 to the sockets): NaN stays NaN, its payload and the sign of zero do not matter there.
  assert.deepEqual(livePoints.values.map((v) => (Number.isNaN(v) ? 'NaN' : v === 0 ? 0 : v)), [1.5, 'NaN', 'NaN', 'NaN', 'NaN', Infinity, -Infinity, 0, 2.5]);
});

test('snappy in the worker: a claimed size over the bound is 413 naming the setting, corrupt snappy and bad protobuf are 400', async () => {
  const good = body();
  const { replies, store } = await runLoop([
    { seq: 1, header: header({ maxDecodedBytes: 10 }), body: good },
    { seq: 2, header: header(), body: Uint8Array.of(0x05, 0x00, 0x61, 0x02, 0x09, 0x00) },
    { seq: 3, header: header(), body: snappyCompress(Uint8Array.of(0x0a, 0x09, 0x01)) },
    { seq: 4, header: header({ defaultScope: undefined }), body: good },
  ]);
  const tooLarge = replies.get(1)!;
  assert.ok(!tooLarge.ok && tooLarge.error.code === 'PAYLOAD_TOO_LARGE' && /more than 10 bytes \(ingest.maxBodyBytes\)/.test(tooLarge.error.message), JSON.stringify(tooLarge));
  const corrupt = replies.get(2)!;
  assert.ok(!corrupt.ok && corrupt.error.code === 'BAD_REQUEST' && /not valid snappy/.test(corrupt.error.message), JSON.stringify(corrupt));
  const protobuf = replies.get(3)!;
  assert.ok(!protobuf.ok && protobuf.error.code === 'BAD_REQUEST' && /protobuf:/.test(protobuf.error.message), JSON.stringify(protobuf));
  const noClient = replies.get(4)!;
  assert.ok(!noClient.ok && noClient.error.code === 'BAD_REQUEST' && /only by POST \/api\/v1\/write/.test(noClient.error.message), JSON.stringify(noClient));
  assert.equal(store.getCollection(ID), null, 'nothing written');
});
