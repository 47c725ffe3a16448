import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Worker } from 'node:worker_threads';
import {
  FRAME_ALIGN,
  FRAME_HEADER_BYTES,
  HEAD_CLOSED_BIT,
  POSITION_MASK,
  RING_HEADER_BYTES,
  RingConsumer,
  RingError,
  RingProducer,
  SLOT_HEAD,
  SLOT_LAYOUT_VERSION,
  SLOT_TAIL,
  createRingBuffer,
  frameBytesFor,
  type RingFrame,
} from '../../shared/ring.js';
import {
  consumeTrafficAsync,
  produceTraffic,
  type TrafficPlan,
  type TrafficReport,
  type WorkerTask,
} from './ring-worker.js';

const CAPACITY = 4096;

function ring(capacity = CAPACITY): { sab: SharedArrayBuffer; producer: RingProducer; consumer: RingConsumer } {
  const sab = createRingBuffer(capacity);
  return { sab, producer: new RingProducer(sab), consumer: new RingConsumer(sab) };
}

/** Bytes that say which frame and which index they are, so a misplaced copy shows. */
function patterned(length: number, salt: number): Uint8Array {
  const bytes = new Uint8Array(length);
  for (let i = 0; i < length; i++) bytes[i] = (i * 7 + salt * 13 + (i >>> 8)) & 0xff;
  return bytes;
}

function readOne(consumer: RingConsumer): RingFrame {
  const frame = consumer.tryRead();
  assert.ok(frame !== null, 'a frame is readable');
  return frame;
}

function assertRingError(run: () => unknown, code: RingError['code']): void {
  assert.throws(run, (err: unknown) => err instanceof RingError && err.code === code);
}

/** Moves both ends to data offset `target` by passing one filler frame (or none). */
function advanceTo(producer: RingProducer, consumer: RingConsumer, position: { value: number }, target: number): void {
  const gap = (target - position.value) & (producer.capacity - 1);
  if (gap === 0) return;
  assert.ok(producer.tryWrite(0, new Uint8Array(gap - FRAME_HEADER_BYTES)));
  readOne(consumer);
  consumer.release();
  position.value = target;
}

test('createRingBuffer accepts powers of two from 4 KiB and refuses anything else', () => {
  for (const capacity of [4096, 8192, 1 << 20]) {
    assert.equal(createRingBuffer(capacity).byteLength, RING_HEADER_BYTES + capacity);
  }
  for (const capacity of [0, 2048, 4095, 4097, 6144, 1.5 * 4096, 2 ** 31, Number.NaN]) {
    assert.throws(() => createRingBuffer(capacity), RangeError, `capacity ${capacity}`);
  }
});

test('both ends refuse a buffer that is not a ring of this layout version', () => {
  assertRingError(() => new RingProducer(new SharedArrayBuffer(RING_HEADER_BYTES + CAPACITY)), 'RING_BAD_BUFFER');
  assertRingError(() => new RingConsumer(new SharedArrayBuffer(16)), 'RING_BAD_BUFFER');
  const sab = createRingBuffer(CAPACITY);
  new Int32Array(sab)[SLOT_LAYOUT_VERSION] += 1;
  assertRingError(() => new RingConsumer(sab), 'RING_BAD_BUFFER');
});

test('frames of every size round-trip, at every start offset, exact fits and wraps included', () => {
  const { producer, consumer } = ring();
  const position = { value: 0 };
  let salt = 0;
  let wrapped = 0;
  for (let start = 0; start < CAPACITY; start += FRAME_ALIGN) {
    const room = CAPACITY - start - FRAME_HEADER_BYTES; // payload bytes before the end of the data area
    const lengths = [0, 1, 7, 8, 9, 63, room - 1, room, room + 1, room + 7, room + 8, producer.maxPayloadBytes];
    for (const length of lengths) {
      if (length < 0 || length > producer.maxPayloadBytes) continue;
      advanceTo(producer, consumer, position, start);
      const payload = patterned(length, ++salt);
      assert.ok(producer.tryWrite(salt, payload), `write ${length} bytes at offset ${start}`);
      assert.equal(consumer.usedBytes(), frameBytesFor(length));
      const frame = readOne(consumer);
      assert.equal(frame.tag, salt);
      assert.deepEqual(frame.payload, payload, `${length} bytes at offset ${start}`);
      assert.equal(frame.payload.byteOffset % FRAME_ALIGN, 0, 'payloads start 8-byte aligned');
      if (length > room) wrapped++;
      assert.equal(consumer.tryRead(), null);
      consumer.release();
      assert.equal(producer.freeBytes(), CAPACITY);
      position.value = (start + frameBytesFor(length)) & (CAPACITY - 1);
    }
  }
  assert.ok(wrapped > CAPACITY / FRAME_ALIGN, `payloads wrapped ${wrapped} times`);
});

test('payload views point into the ring except for a wrapped payload, and live until release()', () => {
  const { sab, producer, consumer } = ring();
  const sizes = [1000, 1500, 1200, 2000];
  const sent = sizes.map((size, i) => patterned(size, i));
  // 1000 + 1500 + 1200 bytes of frames, then free them so the fourth frame wraps.
  for (let i = 0; i < 3; i++) assert.ok(producer.tryWrite(i, sent[i]!));
  for (let i = 0; i < 3; i++) readOne(consumer);
  consumer.release();
  assert.ok(producer.tryWrite(3, sent[3]!));
  assert.ok(producer.tryWrite(4, sent[0]!));
  const wrappedFrame = readOne(consumer);
  const nextFrame = readOne(consumer);
  assert.notEqual(wrappedFrame.payload.buffer, sab, 'a wrapped payload is joined in scratch');
  assert.equal(nextFrame.payload.buffer, sab, 'a contiguous payload is a view of the ring');
  // Both views held at once, before release: the producer cannot reuse their bytes yet.
  assert.equal(producer.tryWrite(5, new Uint8Array(producer.freeBytes())), false);
  assert.deepEqual(wrappedFrame.payload, sent[3]);
  assert.deepEqual(nextFrame.payload, sent[0]);
  consumer.release();
  assert.equal(producer.freeBytes(), CAPACITY);
});

test('gather writes and in-place writes produce the same frames as a single buffer', () => {
  const { producer, consumer } = ring();
  const position = { value: 0 };
  for (const start of [0, 2048, CAPACITY - 64, CAPACITY - 8]) {
    advanceTo(producer, consumer, position, start);
    const whole = patterned(1000, start);
    const parts = [whole.subarray(0, 10), new Uint8Array(0), whole.subarray(10, 999), whole.subarray(999)];
    assert.ok(producer.tryWrite(1, parts));
    let segments: [number, number] = [-1, -1];
    assert.ok(
      producer.tryWriteWith(2, whole.length, (first, second) => {
        segments = [first.length, second.length];
        first.set(whole.subarray(0, first.length));
        second.set(whole.subarray(first.length));
      }),
    );
    assert.equal(segments[0] + segments[1], whole.length);
    for (const tag of [1, 2]) {
      const frame = readOne(consumer);
      assert.equal(frame.tag, tag);
      assert.deepEqual(frame.payload, whole, `tag ${tag} at offset ${start}`);
    }
    consumer.release();
    position.value = (start + 2 * frameBytesFor(whole.length)) & (CAPACITY - 1);
  }
});

test('an in-place write that wraps is offered two segments; one that throws publishes nothing', () => {
  const { producer, consumer } = ring();
  const position = { value: 0 };
  advanceTo(producer, consumer, position, CAPACITY - 32);
  assert.throws(() =>
    producer.tryWriteWith(9, 100, () => {
      throw new Error('fill failed');
    }),
  );
  assert.equal(consumer.tryRead(), null);
  assert.ok(
    producer.tryWriteWith(10, 100, (first, second) => {
      assert.equal(first.length, 32 - FRAME_HEADER_BYTES);
      assert.equal(second.length, 100 - first.length);
      first.fill(1);
      second.fill(2);
    }),
  );
  const frame = readOne(consumer);
  assert.equal(frame.tag, 10);
  assert.deepEqual([...frame.payload.subarray(22, 26)], [1, 1, 2, 2]);
});

test('a full ring refuses writes until the consumer releases, then accepts them', () => {
  const { producer, consumer } = ring();
  const payload = patterned(1000, 1);
  let written = 0;
  while (producer.tryWrite(written, payload)) written++;
  assert.equal(written, Math.floor(CAPACITY / frameBytesFor(payload.length)));
  assert.equal(producer.freeBytes(), CAPACITY - written * frameBytesFor(payload.length));
  assert.equal(producer.waitForSpace(payload.length, 0), 'timed-out');
  readOne(consumer);
  assert.equal(producer.tryWrite(written, payload), false, 'reading alone does not free space');
  consumer.release();
  assert.equal(producer.waitForSpace(payload.length, 0), 'ok');
  assert.ok(producer.tryWrite(written, payload));
  for (let tag = 1; tag <= written; tag++) assert.equal(readOne(consumer).tag, tag);
  assert.equal(consumer.tryRead(), null);
});

test('the largest message fills the ring exactly; one byte more is refused with a clear error', () => {
  const { producer, consumer } = ring();
  const largest = patterned(producer.maxPayloadBytes, 3);
  assert.equal(frameBytesFor(largest.length), CAPACITY);
  assert.ok(producer.tryWrite(1, largest));
  assert.equal(producer.freeBytes(), 0);
  assert.equal(producer.tryWrite(2, new Uint8Array(0)), false);
  assert.deepEqual(readOne(consumer).payload, largest);
  consumer.release();
  const oneTooMany = new Uint8Array(CAPACITY - FRAME_HEADER_BYTES + 1);
  assertRingError(() => producer.tryWrite(1, oneTooMany), 'RING_MESSAGE_TOO_LARGE');
  assertRingError(() => producer.tryWrite(1, [new Uint8Array(CAPACITY), new Uint8Array(1)]), 'RING_MESSAGE_TOO_LARGE');
  assertRingError(() => producer.tryWriteWith(1, CAPACITY, () => {}), 'RING_MESSAGE_TOO_LARGE');
  assertRingError(() => producer.waitForSpace(CAPACITY, 0), 'RING_MESSAGE_TOO_LARGE');
  assert.throws(() => producer.tryWrite(-1, new Uint8Array(1)), RangeError);
  assert.throws(() => producer.tryWrite(2 ** 32, new Uint8Array(1)), RangeError);
  assert.ok(producer.tryWrite(2 ** 32 - 1, new Uint8Array(1)));
  assert.equal(readOne(consumer).tag, 2 ** 32 - 1);
});

test('positions keep working when the 31-bit counters wrap', () => {
  const sab = createRingBuffer(CAPACITY);
  const slots = new Int32Array(sab);
  const nearWrap = POSITION_MASK + 1 - 3 * CAPACITY - 24;
  slots[SLOT_HEAD] = nearWrap;
  slots[SLOT_TAIL] = nearWrap;
  const producer = new RingProducer(sab);
  const consumer = new RingConsumer(sab);
  for (let i = 0; i < 40; i++) {
    const payload = patterned(700 + i * 11, i);
    assert.ok(producer.tryWrite(i, payload));
    assert.ok(producer.tryWrite(i, payload));
    for (let copy = 0; copy < 2; copy++) assert.deepEqual(readOne(consumer).payload, payload);
    consumer.release();
    assert.equal(producer.freeBytes(), CAPACITY);
  }
  assert.ok(Atomics.load(slots, SLOT_HEAD) < nearWrap, 'HEAD wrapped past 2^31');
});

test('close is seen after the remaining frames are read, and writing after it throws', async () => {
  const { sab, producer, consumer } = ring();
  assert.equal(consumer.waitForData(0), 'timed-out');
  assert.equal(await consumer.waitForDataAsync(0), 'timed-out');
  assert.ok(producer.tryWrite(7, patterned(10, 7)));
  producer.close();
  producer.close();
  assert.ok(consumer.isClosed());
  assert.equal(consumer.waitForData(0), 'ok', 'a frame is still readable');
  assert.equal(readOne(consumer).tag, 7);
  assert.equal(consumer.waitForData(1000), 'closed');
  assert.equal(await consumer.waitForDataAsync(1000), 'closed');
  assertRingError(() => producer.tryWrite(8, new Uint8Array(1)), 'RING_CLOSED');
  assertRingError(() => new RingProducer(sab).tryWrite(8, new Uint8Array(1)), 'RING_CLOSED');
});

test('an async waiter wakes on a write and on close', async () => {
  const { sab, producer, consumer } = ring();
  const forData = consumer.waitForDataAsync(5000);
  assert.ok(producer.tryWrite(1, new Uint8Array(3)));
  assert.equal(await forData, 'ok');
  readOne(consumer);
  consumer.release();
  const forClose = consumer.waitForDataAsync(5000);
  producer.close();
  assert.equal(await forClose, 'closed');
  assert.ok((Atomics.load(new Int32Array(sab), SLOT_HEAD) & HEAD_CLOSED_BIT) !== 0);
});

test('overlapping async waits all wake, and a producer can wait for space asynchronously', async () => {
  const { producer, consumer } = ring();
  const waits = [consumer.waitForDataAsync(5000), consumer.waitForDataAsync(5000)];
  assert.ok(producer.tryWrite(1, new Uint8Array(CAPACITY / 2)));
  assert.deepEqual(await Promise.all(waits), ['ok', 'ok']);
  const forSpace = producer.waitForSpaceAsync(CAPACITY / 2, 5000);
  assert.ok(producer.tryWrite(2, new Uint8Array(100)));
  readOne(consumer);
  consumer.release();
  assert.equal(await forSpace, 'ok');
  await assert.rejects(
    producer.waitForSpaceAsync(CAPACITY, 0),
    (err: unknown) => err instanceof RingError && err.code === 'RING_MESSAGE_TOO_LARGE',
  );
});

test('a corrupt frame header is reported, not read past the published data', () => {
  const { sab, producer, consumer } = ring();
  assert.ok(producer.tryWrite(1, new Uint8Array(16)));
  new Uint32Array(sab, RING_HEADER_BYTES)[0] = 64;
  assertRingError(() => consumer.tryRead(), 'RING_CORRUPT');
});

// --- Real threads. Every wait below is Atomics.wait / Atomics.waitAsync on a ring slot.

const THREADED_PLAN: TrafficPlan = { frames: 200_000, seed: 0x2545f491, maxPayloadBytes: 5000, stallMs: 10_000 };
const THREADED_CAPACITY = 16 * 1024;

function startWorker(task: WorkerTask): Promise<TrafficReport> {
  const worker = new Worker(new URL('./ring-worker.js', import.meta.url), { workerData: task });
  return new Promise((resolve, reject) => {
    worker.once('message', (report: TrafficReport) => resolve(report));
    worker.once('error', reject);
    worker.once('exit', (code) => reject(new Error(`ring worker exited with code ${code} before reporting`)));
  });
}

function assertSameTraffic(sent: TrafficReport, received: TrafficReport): void {
  assert.equal(received.error, null);
  assert.equal(received.frames, THREADED_PLAN.frames);
  assert.equal(received.payloadBytes, sent.payloadBytes);
  assert.equal(received.checksum, sent.checksum);
}

function throughputLine(sent: TrafficReport, received: TrafficReport, wallMs: number): string {
  const megabytes = sent.payloadBytes / 1e6;
  return (
    `${sent.frames} frames, ${megabytes.toFixed(0)} MB in ${wallMs.toFixed(0)} ms: ` +
    `${(megabytes / (wallMs / 1000)).toFixed(0)} MB/s, ${(sent.frames / (wallMs / 1000)).toFixed(0)} frames/s; ` +
    `producer waited ${sent.waits} times, consumer ${received.waits}`
  );
}

test('main thread → worker: every frame arrives intact through a 16 KiB ring', async (t) => {
  const sab = createRingBuffer(THREADED_CAPACITY);
  const started = performance.now();
  const received = startWorker({ role: 'consume', sab, plan: THREADED_PLAN });
  // Node lets its main thread block in Atomics.wait; the service's main thread would answer 503.
  const sent = produceTraffic(new RingProducer(sab), THREADED_PLAN);
  const report = await received;
  const wallMs = performance.now() - started;
  assertSameTraffic(sent, report);
  t.diagnostic(throughputLine(sent, report, wallMs));
});

test('worker → main thread: every frame arrives intact, the main thread waiting asynchronously', async (t) => {
  const sab = createRingBuffer(THREADED_CAPACITY);
  const started = performance.now();
  const sentByWorker = startWorker({ role: 'produce', sab, plan: THREADED_PLAN });
  const received = await consumeTrafficAsync(new RingConsumer(sab), THREADED_PLAN);
  const sent = await sentByWorker;
  const wallMs = performance.now() - started;
  assertSameTraffic(sent, received);
  t.diagnostic(throughputLine(sent, received, wallMs));
});
