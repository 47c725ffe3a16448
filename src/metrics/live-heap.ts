// The main thread's V8 heap as a full collection leaves it: what survives. The heap in use
// (nodejs_heap_size_used_bytes) also counts garbage not collected yet, and V8 lets a busy heap
// grow to several times what survives before it collects: in the 30-minute soak it swung between
// 46 and 157 MiB from one minute to the next, which says little about growth. This does.

import { constants, PerformanceObserver } from 'node:perf_hooks';
import v8 from 'node:v8';

export class LiveHeap {
  /** Heap in use as seen right after the last full (mark-compact) collection; null before the first. */
  bytes: number | null = null;
  private observer: PerformanceObserver | null = null;

  start(): void {
    if (this.observer) return;
    // GC entries are delivered shortly after the collection; what was allocated in between is
    // counted too, a small part of a heap that is collected at tens of MiB.
    this.observer = new PerformanceObserver((list) => {
      const major = list.getEntries().some((entry) => (entry as unknown as { detail?: { kind?: number } }).detail?.kind === constants.NODE_PERFORMANCE_GC_MAJOR);
      if (major) this.bytes = v8.getHeapStatistics().used_heap_size;
    });
    this.observer.observe({ entryTypes: ['gc'] });
  }

  stop(): void {
    this.observer?.disconnect();
    this.observer = null;
  }
}
