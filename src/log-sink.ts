// Where pino's lines go: standard output, in batches. A write per request line showed up in the
// main thread's profile under ingest (bench:ingest), so lines are gathered and written at 8 KiB,
// at least every 200 ms, and synchronously before the process exits.
//
// Written here rather than with pino.destination (sonic-boom) because its flushSync retries a
// failed write forever when the error is not EAGAIN: a reader that closed our stdout (a log
// shipper gone, `| head`) turned every shutdown into a hang. Here a reader that went away costs
// the lines it would have read, never the process: any error other than EAGAIN stops writing
// for good, and EAGAIN at exit is retried for a bounded time only.

import fs from 'node:fs';

const BATCH_BYTES = 8192;
const FLUSH_INTERVAL_MS = 200;
/** How long an exit waits for a reader that is slow (EAGAIN), in total. */
const EXIT_WAIT_MS = 2000;
/** Lines kept while the reader is slow; beyond this the oldest go (logs must not take the memory). */
const MAX_PENDING_BYTES = 8 << 20;

export class LogSink {
  private pending: string[] = [];
  private pendingBytes = 0;
  private writing = false;
  private broken = false;
  private readonly sleeper = new Int32Array(new SharedArrayBuffer(4));

  constructor(private readonly fd: number) {
    setInterval(() => this.flush(), FLUSH_INTERVAL_MS).unref();
  }

  /** pino calls this with one line (newline included). */
  write(line: string): boolean {
    if (this.broken) return true;
    this.pending.push(line);
    this.pendingBytes += line.length;
    while (this.pendingBytes > MAX_PENDING_BYTES && this.pending.length > 1) this.pendingBytes -= this.pending.shift()!.length;
    if (this.pendingBytes >= BATCH_BYTES) this.flush();
    return true;
  }

  /** Starts an asynchronous write of what is pending (one at a time). */
  flush(): void {
    if (this.writing || this.broken || this.pending.length === 0) return;
    const text = this.take();
    this.writing = true;
    const bytes = Buffer.from(text);
    const writeFrom = (offset: number) => {
      fs.write(this.fd, bytes, offset, bytes.length - offset, null, (err, written) => {
        if (err) {
          if ((err as NodeJS.ErrnoException).code === 'EAGAIN') return void setTimeout(() => writeFrom(offset), 10);
          this.writing = false;
          this.broken = true;
          return;
        }
        if (offset + written < bytes.length) return writeFrom(offset + written);
        this.writing = false;
        if (this.pendingBytes >= BATCH_BYTES) this.flush();
      });
    };
    writeFrom(0);
  }

  /**
   * Writes what is pending before the process exits. Never blocks for long: a slow reader gets
   * EXIT_WAIT_MS, a reader that went away nothing. An asynchronous write still under way may
   * land after these lines; at exit that costs order, not lines.
   */
  flushSync(): void {
    if (this.broken || this.pending.length === 0) return;
    const bytes = Buffer.from(this.take());
    let offset = 0;
    const until = Date.now() + EXIT_WAIT_MS;
    while (offset < bytes.length) {
      try {
        offset += fs.writeSync(this.fd, bytes, offset, bytes.length - offset);
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'EAGAIN' || Date.now() > until) {
          this.broken = true;
          return;
        }
        Atomics.wait(this.sleeper, 0, 0, 5);
      }
    }
  }

  private take(): string {
    const text = this.pending.join('');
    this.pending = [];
    this.pendingBytes = 0;
    return text;
  }
}
