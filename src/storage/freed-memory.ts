// Gives memory the service's threads freed back to the system. glibc keeps what a thread frees in
// its malloc arena for reuse and returns only the top of an arena on its own, so a burst (a
// storage worker's death and its successor's start, a large merge) leaves RSS at its high point
// for the rest of the process's life: in the 30-minute soak about 45-50 MiB of the arenas stayed
// free after the first killed worker (bench/README.md, "Issue 34"). `malloc_trim(0)` hands every
// whole free page of every arena back (madvise), which no environment setting does. Node has no
// binding for it, so it is called through koffi's prebuilt FFI (no compiler at install); where
// that cannot be had (not Linux with glibc), trimming is off and the start's log line says why.

import { createRequire } from 'node:module';
import type { Logger } from '../log.js';

type MallocTrim = (pad: number) => number;

/** glibc's malloc_trim, or why it is not available here. */
function loadMallocTrim(): MallocTrim | string {
  if (process.platform !== 'linux') return `not Linux (${process.platform})`;
  // Another C library has no libc.so.6, or no malloc_trim in it: either way the load throws.
  try {
    const koffi = createRequire(import.meta.url)('koffi') as { load(path: string): { func(signature: string): MallocTrim } };
    return koffi.load('libc.so.6').func('int malloc_trim(size_t pad)');
  } catch (err) {
    return `koffi could not load malloc_trim: ${(err as Error).message}`;
  }
}

export interface FreedMemoryStats {
  /** Trims made since start. */
  trims: number;
  /** What they gave back: the process's RSS before less after, summed (a trim that gave nothing adds 0). */
  returnedBytes: number;
  /** Time spent in them; each holds the C library's arenas in turn, so other threads' allocations may wait. */
  trimSeconds: number;
}

export class FreedMemory implements FreedMemoryStats {
  trims = 0;
  returnedBytes = 0;
  trimSeconds = 0;
  private readonly trim: MallocTrim | null;
  private timer: NodeJS.Timeout | null = null;

  /** `intervalMs`: storage.trimFreedMemoryMs; 0 turns trimming off (also after a worker restart). */
  constructor(private readonly intervalMs: number, private readonly log: Logger) {
    const loaded = intervalMs > 0 ? loadMallocTrim() : null;
    this.trim = typeof loaded === 'function' ? loaded : null;
    if (typeof loaded === 'string') log.info({ reason: loaded }, 'freed memory is left to the C library (malloc_trim not available)');
  }

  get available(): boolean {
    return this.trim !== null;
  }

  start(): void {
    if (!this.trim) return;
    this.timer = setInterval(() => this.now('interval'), this.intervalMs);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }

  /** Trims at once; `reason` goes in the log line. Takes a few milliseconds, holding each arena in turn. */
  now(reason: string): void {
    if (!this.trim) return;
    const before = process.memoryUsage.rss();
    const started = performance.now();
    this.trim(0);
    const ms = performance.now() - started;
    const returned = Math.max(0, before - process.memoryUsage.rss());
    this.trims++;
    this.returnedBytes += returned;
    this.trimSeconds += ms / 1000;
    this.log.debug({ reason, returnedBytes: returned, rssBytes: before - returned, ms: Math.round(ms * 1000) / 1000 }, 'freed memory given back to the system');
  }
}
