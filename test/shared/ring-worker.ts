// Traffic for the threaded ring tests: a producer that writes pseudo-random frames derived from
// a seed and a sequence number, and a consumer that regenerates and checks every byte. The test
// runs one side on its own thread and the other here, in a worker_threads Worker. Imported by the
// test for the other side, in which case nothing below the exports runs.
import { isMainThread, parentPort, workerData } from 'node:worker_threads';
import { RingConsumer, RingProducer } from '../../shared/ring.js';

export interface TrafficPlan {
  readonly frames: number;
  readonly seed: number;
  readonly maxPayloadBytes: number;
  /** How long any single wait may last before the side gives up (a stuck peer, not backoff). */
  readonly stallMs: number;
}

export interface TrafficReport {
  readonly frames: number;
  readonly payloadBytes: number;
  /** Over every payload byte in order; both sides must agree. */
  readonly checksum: number;
  /** Times this side found the ring full (producer) or empty (consumer) and waited. */
  readonly waits: number;
  /** The first mismatch the consumer saw, if any. */
  readonly error: string | null;
}

export interface WorkerTask {
  readonly role: 'produce' | 'consume';
  readonly sab: SharedArrayBuffer;
  readonly plan: TrafficPlan;
}

/** A 32-bit mix of seed and sequence number (a murmur3 finaliser), so neighbours differ wholly. */
function mix(seed: number, sequence: number): number {
  let h = Math.imul(seed ^ sequence, 0x9e3779b1);
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  return (h ^ (h >>> 16)) >>> 0;
}

function payloadLengthOf(plan: TrafficPlan, sequence: number): number {
  return mix(plan.seed, sequence) % (plan.maxPayloadBytes + 1);
}

// A payload is the words of a linear congruential generator seeded per frame: word k is the
// generator's (k+1)th output, and the last 1..3 bytes are the low bytes of one more output.
// Working a word at a time keeps the test within its time budget; it relies on payloads starting
// 8-byte aligned in their buffer, which the ring guarantees.

function firstStateOf(plan: TrafficPlan, sequence: number): number {
  return mix(plan.seed ^ 0x5bd1e995, sequence);
}

function nextState(state: number): number {
  return (Math.imul(state, 1664525) + 1013904223) >>> 0;
}

function foldIn(checksum: number, value: number): number {
  return (Math.imul(checksum, 31) + value) | 0;
}

/** The low `count` bytes of `word`, as a number: how a payload's last 1..3 bytes are checked. */
function lowBytes(word: number, count: number): number {
  return word & ((1 << (8 * count)) - 1);
}

/**
 * Fills `target` (4-byte aligned, and a whole number of words unless it ends the payload) from
 * the generator at `state`, folding every value into `checksum`. Returns [state, checksum].
 */
function generate(target: Uint8Array, state: number, checksum: number): [number, number] {
  const wordCount = target.length >>> 2;
  const words = new Uint32Array(target.buffer, target.byteOffset, wordCount);
  for (let k = 0; k < wordCount; k++) {
    state = nextState(state);
    words[k] = state;
    checksum = foldIn(checksum, state);
  }
  const trailing = target.length & 3;
  if (trailing !== 0) {
    state = nextState(state);
    for (let j = 0; j < trailing; j++) target[4 * wordCount + j] = (state >>> (8 * j)) & 0xff;
    checksum = foldIn(checksum, lowBytes(state, trailing));
  }
  return [state, checksum];
}

/**
 * Writes plan.frames frames, tag = sequence number, then closes. Rotates through the three write
 * paths: one buffer, two parts, and filling the ring in place. Backs off on a full ring with
 * Atomics.wait on the ring's TAIL slot (waitForSpace), never with a timer.
 */
export function produceTraffic(producer: RingProducer, plan: TrafficPlan): TrafficReport {
  const staging = new Uint8Array(plan.maxPayloadBytes);
  let checksum = 0;
  let payloadBytes = 0;
  let waits = 0;
  for (let sequence = 0; sequence < plan.frames; sequence++) {
    const length = payloadLengthOf(plan, sequence);
    const state = firstStateOf(plan, sequence);
    const checksumBefore = checksum;
    const path = sequence % 3;
    let payload: Uint8Array | Uint8Array[] | null = null;
    if (path !== 2) {
      const body = staging.subarray(0, length);
      checksum = generate(body, state, checksum)[1];
      const split = length >>> 1;
      payload = path === 0 ? body : [body.subarray(0, split), body.subarray(split)];
    }
    for (;;) {
      const written =
        payload !== null
          ? producer.tryWrite(sequence, payload)
          : producer.tryWriteWith(sequence, length, (first, second) => {
              const [afterFirst, checksumAfterFirst] = generate(first, state, checksumBefore);
              checksum = generate(second, afterFirst, checksumAfterFirst)[1];
            });
      if (written) break;
      waits++;
      if (producer.waitForSpace(length, plan.stallMs) === 'timed-out') {
        throw new Error(`producer: no space for frame ${sequence} within ${plan.stallMs} ms`);
      }
    }
    payloadBytes += length;
  }
  producer.close();
  return { frames: plan.frames, payloadBytes, checksum, waits, error: null };
}

/** Checks frames as they arrive; releases every second frame, and always before waiting. */
class TrafficChecker {
  frames = 0;
  payloadBytes = 0;
  checksum = 0;
  waits = 0;
  error: string | null = null;

  constructor(
    private readonly consumer: RingConsumer,
    private readonly plan: TrafficPlan,
  ) {}

  /** Reads and checks every frame published so far. */
  drain(): void {
    for (let frame = this.consumer.tryRead(); frame !== null; frame = this.consumer.tryRead()) {
      if (this.error === null) this.check(frame.tag, frame.payload);
      this.frames++;
      this.payloadBytes += frame.payload.length;
      if (this.frames % 2 === 0) this.consumer.release();
    }
    this.consumer.release();
  }

  report(): TrafficReport {
    if (this.error === null && this.frames !== this.plan.frames) {
      this.error = `consumer: saw ${this.frames} frames, expected ${this.plan.frames}`;
    }
    const { frames, payloadBytes, checksum, waits, error } = this;
    return { frames, payloadBytes, checksum, waits, error };
  }

  private check(tag: number, payload: Uint8Array): void {
    const sequence = this.frames;
    if (tag !== sequence) {
      this.error = `consumer: frame ${sequence} arrived with tag ${tag}`;
      return;
    }
    const length = payloadLengthOf(this.plan, sequence);
    if (payload.length !== length) {
      this.error = `consumer: frame ${sequence} has ${payload.length} bytes, expected ${length}`;
      return;
    }
    let state = firstStateOf(this.plan, sequence);
    let checksum = this.checksum;
    const wordCount = length >>> 2;
    const words = new Uint32Array(payload.buffer, payload.byteOffset, wordCount);
    for (let k = 0; k < wordCount; k++) {
      state = nextState(state);
      const received = words[k]!;
      if (received !== state) {
        this.error = `consumer: frame ${sequence} word ${k} is ${received}, expected ${state}`;
        return;
      }
      checksum = foldIn(checksum, received);
    }
    const trailing = length & 3;
    if (trailing !== 0) {
      state = nextState(state);
      let received = 0;
      for (let j = 0; j < trailing; j++) received |= payload[4 * wordCount + j]! << (8 * j);
      if (received !== lowBytes(state, trailing)) {
        this.error = `consumer: frame ${sequence} ends in ${received}, expected ${lowBytes(state, trailing)}`;
        return;
      }
      checksum = foldIn(checksum, received);
    }
    this.checksum = checksum;
  }
}

/** Consumes until the producer closes, sleeping in Atomics.wait when the ring is empty. */
export function consumeTraffic(consumer: RingConsumer, plan: TrafficPlan): TrafficReport {
  const checker = new TrafficChecker(consumer, plan);
  for (;;) {
    checker.drain();
    const woke = consumer.waitForData(plan.stallMs);
    if (woke === 'closed') break;
    if (woke === 'timed-out') throw new Error(`consumer: nothing arrived within ${plan.stallMs} ms`);
    checker.waits++;
  }
  return checker.report();
}

/** consumeTraffic for a thread that must not block: waits with Atomics.waitAsync. */
export async function consumeTrafficAsync(consumer: RingConsumer, plan: TrafficPlan): Promise<TrafficReport> {
  const checker = new TrafficChecker(consumer, plan);
  for (;;) {
    checker.drain();
    const woke = await consumer.waitForDataAsync(plan.stallMs);
    if (woke === 'closed') break;
    if (woke === 'timed-out') throw new Error(`consumer: nothing arrived within ${plan.stallMs} ms`);
    checker.waits++;
  }
  return checker.report();
}

if (!isMainThread && parentPort !== null) {
  const task = workerData as WorkerTask;
  const report =
    task.role === 'produce'
      ? produceTraffic(new RingProducer(task.sab), task.plan)
      : consumeTraffic(new RingConsumer(task.sab), task.plan);
  parentPort.postMessage(report);
}
