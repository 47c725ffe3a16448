// The growable output buffer the result writers (JSON, msgpack) build on:
// one Uint8Array reused across queries, doubled when a write needs more room,
// with a DataView for multi-byte numbers. Subclasses reserve space with
// ensure() once per item and then write without bounds checks of their own.

export class GrowableBytes {
  protected buf: Uint8Array;
  protected view: DataView;
  protected len = 0;

  constructor(initialCapacity: number) {
    this.buf = new Uint8Array(Math.max(16, initialCapacity));
    this.view = new DataView(this.buf.buffer);
  }

  get length(): number {
    return this.len;
  }

  /** Bytes the buffer holds before it must grow. */
  get capacity(): number {
    return this.buf.length;
  }

  /** The bytes written since the last reset (a view; copy before reuse). */
  bytes(): Uint8Array {
    return this.buf.subarray(0, this.len);
  }

  reset(): void {
    this.len = 0;
  }

  /** Makes room for `extra` more bytes. */
  protected ensure(extra: number): void {
    if (this.len + extra <= this.buf.length) return;
    let size = this.buf.length * 2;
    while (size < this.len + extra) size *= 2;
    const grown = new Uint8Array(size);
    grown.set(this.buf.subarray(0, this.len));
    this.buf = grown;
    this.view = new DataView(grown.buffer);
  }
}
