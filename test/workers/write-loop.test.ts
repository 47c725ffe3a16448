// The storage worker's write loop on real rings and a real ShardStore, in this thread: bodies that
// arrive in parts (with other writes between them, with parts lost to a worker restart, given up
// by the main thread), gzip bodies and their decoded-size bound, line protocol with the ingest
// client's scope, and backfilled points kept from the monitor.

import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import zlib from 'node:zlib';
import { after, test } from 'node:test';
import { unpack } from 'msgpackr';
import { createRingBuffer, RingConsumer, RingProducer } from '../../shared/ring.js';
import { MessageChannel } from 'node:worker_threads';
import { CONTROL_FRAMES_TAKEN, CONTROL_PRIORITY_TASKS, FINAL_FRAME_BIT, LINE_PROTOCOL, MONITOR_SAMPLE_STRIDE, writeFrameHead, type WriteFrameHeader, type WriteReply } from '../../shared/protocol.js';
import { WriteAnswers } from '../../workers/answers.js';
import { MonitorWatch } from '../../workers/monitor-watch.js';
import { LiveWatch } from '../../workers/live-watch.js';
import { ShardStore } from '../../workers/shard-store.js';
import { TagScopeReader } from '../../workers/tag-scopes.js';
import { WriteBuffer } from '../../workers/write-buffer.js';
import { silentLog } from '../../workers/worker-log.js';
import { WriteLoop } from '../../workers/write-loop.js';

const dirs: string[] = [];
after(() => dirs.forEach((d) => fs.rmSync(d, { recursive: true, force: true })));

const scope = { organization: 'acme', site: 'north', unit: 'b1', grid: 'main' };
const id = 'acme/north/b1/main';
const T0 = 1_800_000_000_000;
const encoder = new TextEncoder();

/** A store, a monitor watch and a write loop over fresh rings; `frames` are put in the request ring, then it is closed and the loop drained. */
async function runLoop(frames: Array<{ seq: number; header: WriteFrameHeader; body: Uint8Array }>, setup?: (store: ShardStore, watch: MonitorWatch) => void, control?: Int32Array) {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'write-loop-'));
  dirs.push(dataDir);
  const store = new ShardStore({ dataDir, owns: () => true });
  store.recover();
  const watch = new MonitorWatch(store);
  setup?.(store, watch);
  const requestRing = createRingBuffer(1 << 22);
  const resultRing = createRingBuffer(1 << 20);
  const requests = new RingProducer(requestRing);
  for (const { seq, header, body } of frames) assert.ok(requests.tryWrite(seq, [writeFrameHead(header), body]), 'frame fits the ring');
  requests.close();
  const loop = new WriteLoop({
    shardIndex: 0, shardCount: 1, requests: new RingConsumer(requestRing), answers: new WriteAnswers(new RingProducer(resultRing), 1000, silentLog),
    store, buffer: new WriteBuffer(1000, () => {}), monitor: watch, live: new LiveWatch(), tagScopes: new TagScopeReader(dataDir, () => 0), log: silentLog, limits: { minTimestampMs: 0 }, control,
  });
  await loop.run();
  const replies = new Map<number, WriteReply>();
  const results = new RingConsumer(resultRing);
  for (let frame = results.tryRead(); frame; frame = results.tryRead()) {
    assert.ok(frame.tag & FINAL_FRAME_BIT, 'small answers are one final frame');
    replies.set((frame.tag & ~FINAL_FRAME_BIT) >>> 0, unpack(frame.payload.slice()) as WriteReply);
    results.release();
  }
  return { store, watch, replies };
}

const base: WriteFrameHeader = { mode: 'fast', contentType: 'application/json', autoCreate: true, allowedUnits: null };

function parts(seq: number, body: Uint8Array, count: number, header: WriteFrameHeader = base) {
  const size = Math.ceil(body.length / count);
  return Array.from({ length: count }, (_, index) => ({
    seq,
    header: { ...header, part: { index, count, totalBytes: body.length } },
    body: body.subarray(index * size, Math.min(body.length, (index + 1) * size)),
  }));
}

function columnar(tag: string, rows: number, value = (r: number) => r / 4): Uint8Array {
  const timestamps = Array.from({ length: rows }, (_, r) => T0 + r * 1000);
  return encoder.encode(JSON.stringify({ ...scope, timestamps, columns: { [tag]: timestamps.map((_, r) => value(r)) } }));
}

function stored(store: ShardStore, collectionId: string, tag: string): Array<[number, number]> {
  const index = store.tagIndex(collectionId, tag);
  if (index < 0) return [];
  const out = new Float64Array(MONITOR_SAMPLE_STRIDE).fill(NaN);
  store.lastValuesInto(collectionId, Int32Array.of(index), out, MONITOR_SAMPLE_STRIDE);
  return [[out[0], out[1]]];
}

test('a body in parts, with another write between its parts, is written once whole and answered once', async () => {
  const big = parts(7, columnar('TI-1', 5000), 3);
  const small = { seq: 8, header: base, body: columnar('TI-2', 3) };
  const { store, replies } = await runLoop([big[0], big[1], small, big[2]]);
  assert.deepEqual([...replies.keys()].sort(), [7, 8]);
  const whole = replies.get(7)!;
  assert.ok(whole.ok && whole.value.points === 5000, JSON.stringify(whole));
  assert.ok(replies.get(8)!.ok);
  assert.deepEqual(stored(store, id, 'TI-1'), [[T0 + 4999 * 1000, 4999 / 4]]);
});

test('parts whose beginning went to a worker that died are answered 503 and write nothing', async () => {
  const lost = parts(9, columnar('TI-1', 5000), 3).slice(1);
  const { store, replies } = await runLoop(lost);
  const reply = replies.get(9)!;
  assert.ok(!reply.ok && reply.error.code === 'UNAVAILABLE' && /restarted/.test(reply.error.message), JSON.stringify(reply));
  assert.equal(store.getCollection(id), null);
});

test('an aborted body is dropped without an answer; a bad value in its last part refuses all of it', async () => {
  const aborted = parts(10, columnar('TI-1', 3000), 3).slice(0, 2);
  const abort = { seq: 10, header: { ...base, part: { index: 2, count: 3, totalBytes: 1, abort: true } }, body: new Uint8Array(0) };
  const poisoned = parts(11, columnar('TI-3', 3000, (r) => (r === 2999 ? ('x' as unknown as number) : r)), 4);
  const { store, replies } = await runLoop([...aborted, abort, ...poisoned]);
  assert.equal(replies.has(10), false);
  const reply = replies.get(11)!;
  assert.ok(reply.ok && reply.value.refused && reply.value.points === 0, JSON.stringify(reply));
  assert.deepEqual(stored(store, id, 'TI-3'), []);
});

test('gzip bodies are decoded in the worker, bounded by the decoded-size limit', async () => {
  const body = columnar('TI-1', 2000);
  const gz = { ...base, contentEncoding: 'gzip' as const, maxDecodedBytes: body.length, maxDecodedSetting: 'ingest.maxBodyBytes' };
  const { replies } = await runLoop([
    { seq: 1, header: gz, body: zlib.gzipSync(body) },
    { seq: 2, header: { ...gz, maxDecodedBytes: body.length - 1 }, body: zlib.gzipSync(body) },
    { seq: 3, header: gz, body: encoder.encode('not gzip') },
  ]);
  const ok = replies.get(1)!;
  assert.ok(ok.ok && ok.value.points === 2000);
  const big = replies.get(2)!;
  assert.ok(!big.ok && big.error.code === 'PAYLOAD_TOO_LARGE' && big.error.message.includes('ingest.maxBodyBytes'), JSON.stringify(big));
  const bad = replies.get(3)!;
  assert.ok(!bad.ok && bad.error.code === 'BAD_REQUEST' && /gzip/.test(bad.error.message));
});

test('line protocol: series go to the client scope or the one their scope tags name; bad lines dropped and counted', async () => {
  const header: WriteFrameHeader = { ...base, contentType: LINE_PROTOCOL, defaultScope: scope, lineProtocol: { precision: 'ms', nowMs: T0 } };
  const body = encoder.encode([`cpu,host=a usage=1.5,state="on" ${T0}`, 'cpu,host=a usage=oops', `cpu,host=a,unit=b2 usage=2 ${T0 + 1}`, 'mem free=7u'].join('\n'));
  const { store, replies } = await runLoop([{ seq: 1, header, body }]);
  const reply = replies.get(1)!;
  assert.ok(reply.ok, JSON.stringify(reply));
  assert.equal(reply.value.points, 3);
  assert.deepEqual(reply.value.lines, { accepted: 3, rejected: 1, stringFields: 1, partialError: reply.value.lines!.partialError });
  assert.match(reply.value.lines!.partialError!, /^partial write: line 2: .* dropped=1$/);
  assert.deepEqual(stored(store, id, 'cpu,host=a.usage'), [[T0, 1.5]]);
  assert.deepEqual(stored(store, id, 'mem.free'), [[T0, 7]]); // no timestamp: the request's time
  assert.deepEqual(stored(store, 'acme/north/b2/main', 'cpu,host=a.usage'), [[T0 + 1, 2]]);
});

test('line protocol: a line outside the caller units refuses the whole body', async () => {
  const header: WriteFrameHeader = { ...base, contentType: LINE_PROTOCOL, defaultScope: scope, allowedUnits: ['acme/north/b1'], lineProtocol: { precision: 'ms', nowMs: T0 } };
  const body = encoder.encode(`m v=1 ${T0}\nm,organization=other v=2 ${T0}`);
  const { store, replies } = await runLoop([{ seq: 1, header, body }]);
  const reply = replies.get(1)!;
  assert.ok(reply.ok && reply.value.error?.code === 'FORBIDDEN', JSON.stringify(reply));
  assert.equal(store.getCollection(id), null);
});

test('backfilled points are not shown to the monitor, even when they become the tag newest', async () => {
  const live = encoder.encode(JSON.stringify({ ...scope, tags: { 'TI-1': [[T0, 50]] } }));
  const backfill = encoder.encode(JSON.stringify({ ...scope, tags: { 'TI-1': [[T0 - 5000, 999], [T0 + 5000, 998]] } }));
  const { watch, replies } = await runLoop(
    [
      { seq: 1, header: base, body: live },
      { seq: 2, header: { ...base, backfill: true }, body: backfill },
    ],
    (store, watch) => {
      store.createCollection(scope, {});
      watch.sample([{ collectionId: id, version: 1, tags: ['TI-1'] }]); // the monitor's first tick: the watch list
    },
  );
  assert.ok(replies.get(1)!.ok && replies.get(2)!.ok);
  const [tick] = watch.sample([{ collectionId: id, version: 1 }]);
  const v = tick.values!;
  assert.deepEqual([v[0], v[1]], [T0, 50], 'the newest live point stands for the tag, not the backfilled 998');
  assert.deepEqual([v[3], v[5], v[6]], [50, 50, 1], 'extremes and count of live points only');
});

test('a priority task (a monitor sample) is let in after the write frame in hand, not at the end of the slice', async () => {
  // 40 writes queued: without the lane the loop takes frames for 4 ms before it lets the event
  // loop run, which on any machine fast enough is all 40. The task's message is a real
  // MessagePort message, delivered only by the event loop, as piscina's tasks are.
  // One tag, so that no frame but the first waits on a new series' fdatasync.
  const frames = Array.from({ length: 40 }, (_, i) => ({ seq: i + 1, header: base, body: columnar('TI-1', 200, (r) => i * 1000 + r) }));
  const control = new Int32Array(4);
  Atomics.add(control, CONTROL_PRIORITY_TASKS, 1); // the main thread, as it sends the sample
  const channel = new MessageChannel();
  let framesBeforeTask = -1;
  channel.port2.once('message', () => {
    framesBeforeTask = Atomics.load(control, CONTROL_FRAMES_TAKEN);
    Atomics.sub(control, CONTROL_PRIORITY_TASKS, 1); // the main thread, once answered
    channel.port2.close();
  });
  channel.port1.postMessage('sample');
  const { replies } = await runLoop(frames, undefined, control);
  // The loop looks before every frame; the message may need one more turn of the event loop.
  assert.ok(framesBeforeTask >= 0 && framesBeforeTask <= 2, `the task ran after ${framesBeforeTask} of 40 frames`);
  assert.equal(Atomics.load(control, CONTROL_FRAMES_TAKEN), 40);
  assert.equal(replies.size, 40);
  for (const [seq, reply] of replies) assert.ok(reply.ok && reply.value.points === 200, `write ${seq}: ${JSON.stringify(reply)}`);
});
