// Single-producer single-consumer ring of framed messages over one SharedArrayBuffer.
// It carries write bodies from the main thread to a storage worker and results back without
// structured-clone copies. The byte layout is drawn in RING.md beside this file; every slot and
// offset is named here once and nowhere else.
//
// Browser-safe: only SharedArrayBuffer, Atomics and typed arrays (SharedArrayBuffer needs a
// cross-origin-isolated page there, and Atomics.wait is refused on a browser's main thread).

/** Bumped whenever the header or the frame format changes; both sides refuse another version. */
export const RING_LAYOUT_VERSION = 1;

// Header slots, as Int32Array indexes (Atomics.wait and notify need an Int32Array).
// HEAD and TAIL sit on separate 64-byte lines so the producer's and the consumer's stores do not
// keep stealing one cache line from each other.
/** Byte 0: write position (bits 0..30) and the closed flag (bit 31). Only the producer stores it. */
export const SLOT_HEAD = 0;
/** Byte 4: how many producer waits are sleeping on SLOT_TAIL (0 or 1 unless waits overlap). */
export const SLOT_PRODUCER_WAITERS = 1;
/** Byte 64: read position of the last released frame. Only the consumer stores it. */
export const SLOT_TAIL = 16;
/** Byte 68: how many consumer waits are sleeping on SLOT_HEAD. */
export const SLOT_CONSUMER_WAITERS = 17;
/** Byte 128: RING_LAYOUT_VERSION, written once by createRingBuffer. */
export const SLOT_LAYOUT_VERSION = 32;
/** Byte 132: capacity of the data area in bytes, written once by createRingBuffer. */
export const SLOT_CAPACITY = 33;
/** The data area starts after three 64-byte header lines. */
export const RING_HEADER_BYTES = 192;

/**
 * Positions are free-running byte counts modulo 2^31; a position's data offset is
 * `position & (capacity - 1)`. Capacity is a power of two no larger than 2^30, so it divides 2^31
 * and `(head - tail) & POSITION_MASK` is the used byte count even after the counters wrap.
 */
export const POSITION_MASK = 0x7fff_ffff;
/**
 * Set in SLOT_HEAD by RingProducer.close(). Closing changes the very word the consumer sleeps on,
 * so a close that races with the consumer going to sleep can never be missed.
 */
export const HEAD_CLOSED_BIT = 0x8000_0000;

// Frame: u32 payload length, u32 tag, payload, padding to FRAME_ALIGN. Frames start on an 8-byte
// boundary and the capacity is a multiple of 8, so a frame header never straddles the end of the
// data area; only the payload may wrap to the start.
export const FRAME_HEADER_BYTES = 8;
export const FRAME_ALIGN = 8;
/** Uint32 index of the payload length within a frame header. */
export const FRAME_WORD_LENGTH = 0;
/** Uint32 index of the caller's tag within a frame header. */
export const FRAME_WORD_TAG = 1;

export const MIN_RING_CAPACITY = 4096;
export const MAX_RING_CAPACITY = 2 ** 30;

export type RingErrorCode = 'RING_MESSAGE_TOO_LARGE' | 'RING_CLOSED' | 'RING_CORRUPT' | 'RING_BAD_BUFFER';

/** Errors carry a code so the thread that catches one can turn it into 413, 503 or a restart. */
export class RingError extends Error {
  readonly code: RingErrorCode;
  constructor(code: RingErrorCode, message: string) {
    super(message);
    this.name = 'RingError';
    this.code = code;
  }
}

/** 'closed' only once the producer has closed and every frame has been read. */
export type RingWaitResult = 'ok' | 'timed-out' | 'closed';

export interface RingFrame {
  /** The producer's opcode or correlation word, an unsigned 32-bit integer. */
  readonly tag: number;
  /** Valid until the consumer's next release(), and 8-byte aligned; see RingConsumer. */
  readonly payload: Uint8Array;
}

/** Ring bytes one message of `payloadBytes` occupies: header, payload and padding. */
export function frameBytesFor(payloadBytes: number): number {
  return (FRAME_HEADER_BYTES + payloadBytes + FRAME_ALIGN - 1) & -FRAME_ALIGN;
}

/** The largest payload a ring of `capacity` carries: one frame filling the whole data area. */
export function maxPayloadBytesFor(capacity: number): number {
  return capacity - FRAME_HEADER_BYTES;
}

/** A zeroed ring with a data area of `capacity` bytes (a power of two, 4 KiB to 1 GiB). */
export function createRingBuffer(capacity: number): SharedArrayBuffer {
  if (
    !Number.isInteger(capacity) ||
    capacity < MIN_RING_CAPACITY ||
    capacity > MAX_RING_CAPACITY ||
    (capacity & (capacity - 1)) !== 0
  ) {
    throw new RangeError(
      `ring: capacity must be a power of two from ${MIN_RING_CAPACITY} to ${MAX_RING_CAPACITY} bytes, got ${capacity}`,
    );
  }
  const sab = new SharedArrayBuffer(RING_HEADER_BYTES + capacity);
  const slots = new Int32Array(sab, 0, RING_HEADER_BYTES / Int32Array.BYTES_PER_ELEMENT);
  slots[SLOT_LAYOUT_VERSION] = RING_LAYOUT_VERSION;
  slots[SLOT_CAPACITY] = capacity;
  // The buffer reaches the other thread by postMessage, which orders these plain stores.
  return sab;
}

/** Views both ends share; checks the buffer is a ring made by createRingBuffer. */
class RingView {
  readonly capacity: number;
  readonly maxPayloadBytes: number;
  protected readonly mask: number;
  protected readonly slots: Int32Array;
  /** The data area as bytes, for payloads. */
  protected readonly bytes: Uint8Array;
  /** The data area as words, for frame headers (frames are 8-byte aligned). */
  protected readonly words: Uint32Array;

  constructor(sab: SharedArrayBuffer) {
    if (!(sab instanceof SharedArrayBuffer) || sab.byteLength < RING_HEADER_BYTES + MIN_RING_CAPACITY) {
      throw new RingError('RING_BAD_BUFFER', 'ring: expected a SharedArrayBuffer made by createRingBuffer');
    }
    this.slots = new Int32Array(sab, 0, RING_HEADER_BYTES / Int32Array.BYTES_PER_ELEMENT);
    const version = this.slots[SLOT_LAYOUT_VERSION];
    const capacity = this.slots[SLOT_CAPACITY];
    if (version !== RING_LAYOUT_VERSION || capacity !== sab.byteLength - RING_HEADER_BYTES) {
      throw new RingError(
        'RING_BAD_BUFFER',
        `ring: buffer has layout version ${version} and capacity ${capacity}, expected version ` +
          `${RING_LAYOUT_VERSION} and capacity ${sab.byteLength - RING_HEADER_BYTES}`,
      );
    }
    this.capacity = capacity;
    this.maxPayloadBytes = maxPayloadBytesFor(capacity);
    this.mask = capacity - 1;
    this.bytes = new Uint8Array(sab, RING_HEADER_BYTES, capacity);
    this.words = new Uint32Array(sab, RING_HEADER_BYTES, capacity / Uint32Array.BYTES_PER_ELEMENT);
  }
}

/**
 * The writing end. Exactly one thread may own a RingProducer for a given buffer.
 *
 * Publishing a frame: write the frame header and payload with plain stores, then
 * Atomics.store(SLOT_HEAD). Atomics.store is sequentially consistent, so every plain store before
 * it happens-before anything the consumer does after an Atomics.load that sees the new HEAD: the
 * consumer can never read a frame whose bytes are not all there. Free space is computed from an
 * Atomics.load(SLOT_TAIL); the consumer stores TAIL only after it is done with the bytes, so the
 * producer never overwrites bytes still being read.
 */
export class RingProducer extends RingView {
  private writePosition: number;
  private closed: boolean;
  private readonly emptySegment: Uint8Array;

  constructor(sab: SharedArrayBuffer) {
    super(sab);
    const head = Atomics.load(this.slots, SLOT_HEAD);
    this.writePosition = head & POSITION_MASK;
    this.closed = (head & HEAD_CLOSED_BIT) !== 0;
    this.emptySegment = this.bytes.subarray(0, 0);
  }

  /** Bytes free right now; a message needs frameBytesFor(payload length) of them. */
  freeBytes(): number {
    return this.freeBytesAfter(Atomics.load(this.slots, SLOT_TAIL));
  }

  /**
   * Appends one message made of `payload` (or the concatenation of its parts) and wakes the
   * consumer. Never blocks: false means the ring is too full right now (the main thread answers
   * 503). Throws RingError RING_MESSAGE_TOO_LARGE when the message could never fit, and
   * RING_CLOSED after close().
   */
  tryWrite(tag: number, payload: Uint8Array | readonly Uint8Array[]): boolean {
    let payloadBytes: number;
    if (payload instanceof Uint8Array) {
      payloadBytes = payload.length;
    } else {
      payloadBytes = 0;
      for (const part of payload) payloadBytes += part.length;
    }
    let offset = this.reserve(tag, payloadBytes);
    if (offset < 0) return false;
    if (payload instanceof Uint8Array) {
      this.copyIn(offset, payload);
    } else {
      for (const part of payload) offset = this.copyIn(offset, part);
    }
    this.publish(payloadBytes);
    return true;
  }

  /**
   * Zero-copy variant: reserves `payloadBytes` and lets `fill` write the payload straight into the
   * ring. A payload that wraps past the end of the data area arrives as two segments, `first`
   * (at the end) then `second` (at the start); otherwise `second` is empty. The frame is
   * published when `fill` returns; if `fill` throws nothing is published. Same results and errors
   * as tryWrite.
   */
  tryWriteWith(tag: number, payloadBytes: number, fill: (first: Uint8Array, second: Uint8Array) => void): boolean {
    const offset = this.reserve(tag, payloadBytes);
    if (offset < 0) return false;
    const end = offset + payloadBytes;
    if (end <= this.capacity) {
      fill(this.bytes.subarray(offset, end), this.emptySegment);
    } else {
      fill(this.bytes.subarray(offset), this.bytes.subarray(0, end - this.capacity));
    }
    this.publish(payloadBytes);
    return true;
  }

  /**
   * Blocks (Atomics.wait, so not on a browser's main thread) until a message of `payloadBytes`
   * fits or `timeoutMs` passes. Woken by the consumer's release().
   */
  waitForSpace(payloadBytes: number, timeoutMs: number): 'ok' | 'timed-out' {
    this.checkWritable(payloadBytes);
    const need = frameBytesFor(payloadBytes);
    return blockOnSlot(this.slots, SLOT_TAIL, SLOT_PRODUCER_WAITERS, timeoutMs, (tail) => this.spaceAfter(tail, need));
  }

  /** waitForSpace without blocking the thread (Atomics.waitAsync). */
  async waitForSpaceAsync(payloadBytes: number, timeoutMs: number): Promise<'ok' | 'timed-out'> {
    this.checkWritable(payloadBytes);
    const need = frameBytesFor(payloadBytes);
    return awaitOnSlot(this.slots, SLOT_TAIL, SLOT_PRODUCER_WAITERS, timeoutMs, (tail) => this.spaceAfter(tail, need));
  }

  /** No more messages. The consumer still reads what is in the ring, then sees 'closed'. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    Atomics.or(this.slots, SLOT_HEAD, HEAD_CLOSED_BIT);
    Atomics.notify(this.slots, SLOT_HEAD);
  }

  private freeBytesAfter(tail: number): number {
    return this.capacity - ((this.writePosition - tail) & POSITION_MASK);
  }

  private spaceAfter(tail: number, need: number): 'ok' | null {
    return this.freeBytesAfter(tail) >= need ? 'ok' : null;
  }

  private checkWritable(payloadBytes: number): void {
    if (this.closed) throw new RingError('RING_CLOSED', 'ring: write after close');
    if (!Number.isInteger(payloadBytes) || payloadBytes < 0 || payloadBytes > this.maxPayloadBytes) {
      throw new RingError(
        'RING_MESSAGE_TOO_LARGE',
        `ring: a message of ${payloadBytes} bytes does not fit a ring that carries at most ` +
          `${this.maxPayloadBytes}; send it in chunks or refuse it`,
      );
    }
  }

  /** Writes the frame header and returns the payload's data offset, or -1 when there is no room. */
  private reserve(tag: number, payloadBytes: number): number {
    this.checkWritable(payloadBytes);
    if (tag >>> 0 !== tag) throw new RangeError(`ring: tag must be an unsigned 32-bit integer, got ${tag}`);
    if (this.freeBytes() < frameBytesFor(payloadBytes)) return -1;
    const frameOffset = this.writePosition & this.mask;
    const frameWord = frameOffset >>> 2;
    this.words[frameWord + FRAME_WORD_LENGTH] = payloadBytes;
    this.words[frameWord + FRAME_WORD_TAG] = tag;
    return (frameOffset + FRAME_HEADER_BYTES) & this.mask;
  }

  /** Copies `source` to data offset `offset`, wrapping to the start; returns the next offset. */
  private copyIn(offset: number, source: Uint8Array): number {
    const room = this.capacity - offset;
    if (source.length <= room) {
      this.bytes.set(source, offset);
    } else {
      this.bytes.set(source.subarray(0, room), offset);
      this.bytes.set(source.subarray(room), 0);
    }
    return (offset + source.length) & this.mask;
  }

  private publish(payloadBytes: number): void {
    this.writePosition = (this.writePosition + frameBytesFor(payloadBytes)) & POSITION_MASK;
    // Release point: everything written above becomes visible to a consumer that loads this HEAD.
    Atomics.store(this.slots, SLOT_HEAD, this.writePosition);
    if (Atomics.load(this.slots, SLOT_CONSUMER_WAITERS) !== 0) Atomics.notify(this.slots, SLOT_HEAD);
  }
}

/**
 * The reading end. Exactly one thread may own a RingConsumer for a given buffer.
 *
 * tryRead() returns a view, not a copy: the payload is a subarray of the shared data area (or,
 * for the one frame per lap whose payload wraps past the end, of a scratch buffer this consumer
 * reuses). Views stay valid until release(), which hands every frame read so far back to the
 * producer; several frames may be read before one release(). Copy (`payload.slice()`) anything
 * kept longer. Always release() before waiting, or a producer waiting for that space never wakes.
 * A view over shared memory is refused by some browser APIs (TextDecoder.decode); copy it first.
 * Every payload starts 8-byte aligned in its buffer (`payload.byteOffset % 8 === 0`), so its whole
 * words can be viewed as a Float64Array or BigInt64Array without a copy.
 *
 * Reading: Atomics.load(SLOT_HEAD) first, then plain reads of the frames below that position;
 * the load synchronises with the producer's Atomics.store, so those bytes are complete. release()
 * stores SLOT_TAIL only after the caller is done with the views; from then on the producer may
 * overwrite them.
 */
export class RingConsumer extends RingView {
  /** Next frame to read; runs ahead of SLOT_TAIL until release(). */
  private readPosition: number;
  private releasedPosition: number;
  private wrapScratch: Uint8Array;

  constructor(sab: SharedArrayBuffer) {
    super(sab);
    this.readPosition = Atomics.load(this.slots, SLOT_TAIL) & POSITION_MASK;
    this.releasedPosition = this.readPosition;
    this.wrapScratch = new Uint8Array(0);
  }

  /** Bytes the producer cannot use yet: published frames not yet released. */
  usedBytes(): number {
    return (Atomics.load(this.slots, SLOT_HEAD) - this.releasedPosition) & POSITION_MASK;
  }

  /** True once the producer has closed, even if frames remain to be read. */
  isClosed(): boolean {
    return (Atomics.load(this.slots, SLOT_HEAD) & HEAD_CLOSED_BIT) !== 0;
  }

  /** The next frame, or null when none is published. Never blocks. */
  tryRead(): RingFrame | null {
    const head = Atomics.load(this.slots, SLOT_HEAD) & POSITION_MASK;
    const available = (head - this.readPosition) & POSITION_MASK;
    if (available === 0) return null;
    const frameOffset = this.readPosition & this.mask;
    const frameWord = frameOffset >>> 2;
    const payloadBytes = this.words[frameWord + FRAME_WORD_LENGTH];
    const tag = this.words[frameWord + FRAME_WORD_TAG];
    if (payloadBytes > this.maxPayloadBytes || frameBytesFor(payloadBytes) > available) {
      throw new RingError(
        'RING_CORRUPT',
        `ring: frame at position ${this.readPosition} claims ${payloadBytes} bytes but ${available} are published`,
      );
    }
    const start = (frameOffset + FRAME_HEADER_BYTES) & this.mask;
    const end = start + payloadBytes;
    const payload = end <= this.capacity ? this.bytes.subarray(start, end) : this.joinWrapped(start, payloadBytes);
    this.readPosition = (this.readPosition + frameBytesFor(payloadBytes)) & POSITION_MASK;
    return { tag, payload };
  }

  /** Gives every frame read so far back to the producer and wakes it if it waits for space. */
  release(): void {
    if (this.releasedPosition === this.readPosition) return;
    this.releasedPosition = this.readPosition;
    // Release point: the producer that loads this TAIL may overwrite everything before it.
    Atomics.store(this.slots, SLOT_TAIL, this.releasedPosition);
    if (Atomics.load(this.slots, SLOT_PRODUCER_WAITERS) !== 0) Atomics.notify(this.slots, SLOT_TAIL);
  }

  /**
   * Blocks (Atomics.wait: Node workers, Node's main thread, browser workers) until a frame is
   * readable ('ok'), the producer has closed and everything was read ('closed'), or `timeoutMs`
   * passes ('timed-out').
   */
  waitForData(timeoutMs: number): RingWaitResult {
    return blockOnSlot(this.slots, SLOT_HEAD, SLOT_CONSUMER_WAITERS, timeoutMs, (head) => this.readiness(head));
  }

  /** waitForData without blocking the thread, for a main thread (Atomics.waitAsync). */
  waitForDataAsync(timeoutMs: number): Promise<RingWaitResult> {
    return awaitOnSlot(this.slots, SLOT_HEAD, SLOT_CONSUMER_WAITERS, timeoutMs, (head) => this.readiness(head));
  }

  private readiness(head: number): RingWaitResult | null {
    if ((head & POSITION_MASK) !== this.readPosition) return 'ok';
    return (head & HEAD_CLOSED_BIT) !== 0 ? 'closed' : null;
  }

  /** Copies a payload that wraps past the end into the reusable scratch buffer. */
  private joinWrapped(start: number, payloadBytes: number): Uint8Array {
    if (this.wrapScratch.length < payloadBytes) {
      // Only one frame per lap wraps, so the scratch holds at most one live view.
      this.wrapScratch = new Uint8Array(Math.min(this.maxPayloadBytes, 2 ** Math.ceil(Math.log2(payloadBytes))));
    }
    const firstBytes = this.capacity - start;
    this.wrapScratch.set(this.bytes.subarray(start), 0);
    this.wrapScratch.set(this.bytes.subarray(0, payloadBytes - firstBytes), firstBytes);
    return this.wrapScratch.subarray(0, payloadBytes);
  }
}

// Waiting. The condition is checked, then the waiter registers in its waiters slot, then the
// condition is checked again before every sleep. The other side stores its position and only
// then loads the waiters slot, notifying when it is non-zero. All four are sequentially
// consistent, so either the storing side sees the registration and notifies, or the waiter's
// re-check sees the new position and does not sleep; a wake-up is never lost, and the hot path
// skips Atomics.notify (which takes a process-wide lock) while nobody sleeps: a one-thread loop
// writing, reading and releasing 64-byte frames went from 160 to 115 ns a frame (Node 20). Atomics.wait
// compares the slot with the word the condition was checked against atomically with going to
// sleep, so a store between the check and the sleep makes it return at once. A notify meant for
// an earlier store can wake a later waiter, hence the loop.

/** What a waiter needs of the slot's word: a result to return, or null to keep waiting. */
type WaitCondition<Result> = (slotWord: number) => Result | null;

function deadlineAfter(timeoutMs: number): number {
  if (!(timeoutMs >= 0)) throw new RangeError(`ring: timeout must be a non-negative number of ms, got ${timeoutMs}`);
  return Date.now() + timeoutMs;
}

function blockOnSlot<Result extends RingWaitResult>(
  slots: Int32Array,
  slot: number,
  waitersSlot: number,
  timeoutMs: number,
  ready: WaitCondition<Result>,
): Result | 'timed-out' {
  const deadline = deadlineAfter(timeoutMs);
  const settled = ready(Atomics.load(slots, slot));
  if (settled !== null) return settled;
  Atomics.add(slots, waitersSlot, 1);
  try {
    for (;;) {
      const word = Atomics.load(slots, slot);
      const result = ready(word);
      if (result !== null) return result;
      const left = deadline - Date.now();
      if (left <= 0) return 'timed-out';
      Atomics.wait(slots, slot, word, left);
    }
  } finally {
    Atomics.sub(slots, waitersSlot, 1);
  }
}

type WaitAsyncResult =
  | { async: false; value: 'not-equal' | 'timed-out' }
  | { async: true; value: Promise<'ok' | 'timed-out'> };
type WaitAsync = (slots: Int32Array, index: number, expected: number, timeoutMs: number) => WaitAsyncResult;

// Not in the ES2022 lib typings; Node 20 and Chromium have it, some browsers do not yet.
const atomicsWaitAsync: WaitAsync | undefined = (Atomics as unknown as { waitAsync?: WaitAsync }).waitAsync?.bind(
  Atomics,
);
/** How often awaitOnSlot re-checks where Atomics.waitAsync is missing. */
const POLL_WITHOUT_WAIT_ASYNC_MS = 1;

/**
 * Resolves once `slots[index]` may no longer hold `expected` (a notify, or a change seen), or
 * after `timeoutMs`, without blocking the thread: Atomics.waitAsync where there is one, a short
 * poll elsewhere. The caller re-reads the word and decides.
 */
export async function waitForChangeAsync(slots: Int32Array, index: number, expected: number, timeoutMs: number): Promise<void> {
  if (atomicsWaitAsync === undefined) {
    await new Promise<void>((resolve) => setTimeout(resolve, Math.min(timeoutMs, POLL_WITHOUT_WAIT_ASYNC_MS)));
    return;
  }
  const waiting = atomicsWaitAsync(slots, index, expected, timeoutMs);
  if (waiting.async) await waiting.value;
}

async function awaitOnSlot<Result extends RingWaitResult>(
  slots: Int32Array,
  slot: number,
  waitersSlot: number,
  timeoutMs: number,
  ready: WaitCondition<Result>,
): Promise<Result | 'timed-out'> {
  const deadline = deadlineAfter(timeoutMs);
  const settled = ready(Atomics.load(slots, slot));
  if (settled !== null) return settled;
  Atomics.add(slots, waitersSlot, 1);
  try {
    for (;;) {
      const word = Atomics.load(slots, slot);
      const result = ready(word);
      if (result !== null) return result;
      const left = deadline - Date.now();
      if (left <= 0) return 'timed-out';
      await waitForChangeAsync(slots, slot, word, left);
    }
  } finally {
    Atomics.sub(slots, waitersSlot, 1);
  }
}
