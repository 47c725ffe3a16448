// The storage subsystem's families for GET /metrics. What the main thread knows is read as it is
// (points and bytes written, query bytes, request-ring fill and queue depth, worker restarts,
// free disk). What only the workers know (days sealed, bytes of day logs and sealed files,
// buffered points) comes from a BUFFER_STATS task per shard. A scrape never waits for it once
// numbers are known: it asks for fresh ones and shows the last, so what it shows is one scrape
// old, and a worker busy with ingest never holds a scrape up.

import { counter, gauge, type MetricSource, type Sample } from '../metric-source.js';
import type { BufferStats } from '../../shared/protocol.js';
import type { DiskGuard } from './disk-guard.js';
import type { FreedMemoryStats } from './freed-memory.js';
import type { ShardGateway } from './gateway.js';
import type { ShardPool } from './shards.js';
import type { RouteWrites } from './write-counters.js';

/** Longest the first scrape waits for the workers' numbers: a short wait then beats families with no samples. */
const FIRST_WORKER_STATS_WAIT_MS = 250;

/** The workers' statistics, asked for at most once at a time, with the last answer kept. */
class WorkerStats {
  private last: readonly BufferStats[] | null = null;
  private asking: Promise<void> | null = null;

  constructor(private readonly ask: () => Promise<BufferStats[]>) {}

  /** The last numbers the workers gave, asking them for fresh ones (none while they never answered). */
  async read(): Promise<readonly BufferStats[]> {
    this.asking ??= this.ask().then(
      (stats) => {
        this.last = stats;
        this.asking = null;
      },
      () => {
        this.asking = null; // a shard restarting or closed: the last numbers stand
      },
    );
    if (this.last) return this.last;
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([this.asking, new Promise<void>((resolve) => (timer = setTimeout(resolve, FIRST_WORKER_STATS_WAIT_MS)))]);
    clearTimeout(timer);
    return this.last ?? [];
  }

  /** One sample per shard, read by the same (shared) ask. */
  perShard(value: (stats: BufferStats) => number): () => Promise<Sample[]> {
    return async () => (await this.read()).map((stats) => ({ labels: { shard: String(stats.shard) }, value: value(stats) }));
  }
}

export function storageMetricSources(shards: ShardPool, gateway: ShardGateway, disk: DiskGuard, freedMemory: FreedMemoryStats): MetricSource[] {
  const workers = new WorkerStats(() => gateway.bufferStats());
  const perShard = (value: (shard: ShardPool['shards'][number]) => number) => (): Sample[] =>
    shards.shards.map((shard) => ({ labels: { shard: String(shard.index) }, value: value(shard) }));
  const byRoute = (samples: (counts: RouteWrites) => Sample[]) => (): Sample[] => [...gateway.writes.all()].flatMap(samples);
  return [
    counter('historian_points_written_total', 'Points stored, by the route that wrote them (or "(replication)", "(connector backfill)") and durability (sync: fsynced, fast: handed to the OS, buffered).', byRoute((counts) =>
      (['sync', 'fast', 'buffered'] as const).filter((mode) => counts.points[mode] > 0).map((mode) => ({ labels: { route: counts.route, durability: mode }, value: counts.points[mode] })),
    )),
    counter('historian_write_bytes_total', 'Body bytes of the writes stored, by route, as they reached the storage (before decoding).', byRoute((counts) => [{ labels: { route: counts.route }, value: counts.bytes }])),
    counter('historian_query_bytes_total', 'Bytes of query results the storage workers streamed out, by shard.', perShard((shard) => shard.queryBytes)),
    gauge('historian_shard_request_ring_fill_ratio', 'Share of each shard\'s request ring (storage.requestRingBytes) taken by writes its worker has not taken yet (0 to 1; full is 503).', perShard((shard) => shard.requestRingFill)),
    gauge('historian_shard_queue_depth', 'What waits on each shard: answers expected from its worker (writes and query streams), tasks not yet handed to it, queries waiting for a slot.', () =>
      shards.shards.flatMap((shard) => {
        const depth = shard.queueDepth();
        const labels = (queue: string) => ({ shard: String(shard.index), queue });
        return [
          { labels: labels('answers'), value: depth.answers },
          { labels: labels('tasks'), value: depth.tasks },
          { labels: labels('query_slots'), value: depth.querySlots },
        ];
      }),
    ),
    counter('historian_storage_worker_restarts_total', 'Storage workers that died and were replaced since start, by shard.', perShard((shard) => shard.restarts)),
    counter('historian_seals_total', 'UTC days sealed into compressed day files, by shard (since its worker started).', workers.perShard((stats) => stats.sealedDays)),
    gauge('historian_storage_sealed_bytes', 'Bytes of sealed day files on disk, by shard.', workers.perShard((stats) => stats.sealedBytes)),
    gauge('historian_storage_active_bytes', 'Bytes of day logs (days not sealed yet, and late points) on disk, by shard.', workers.perShard((stats) => stats.activeBytes)),
    gauge('historian_storage_day_log_blocks', 'Blocks the day logs of each shard index in memory (36 bytes each); storage.dayLogCompactBlocks bounds them.', workers.perShard((stats) => stats.logBlocks)),
    counter('historian_storage_compactions_total', 'Day logs compacted into part files before their day was sealed, by shard (since its worker started).', workers.perShard((stats) => stats.compactions)),
    gauge('historian_storage_worker_heap_used_bytes', 'V8 heap in use in each shard\'s storage worker (its own isolate; nodejs_heap_size_used_bytes is the main thread\'s).', workers.perShard((stats) => stats.heapUsedBytes)),
    gauge('historian_storage_worker_array_buffer_bytes', 'ArrayBuffer memory (typed arrays, buffers) each shard\'s storage worker holds.', workers.perShard((stats) => stats.arrayBufferBytes)),
    gauge('historian_storage_compaction_heap_used_bytes', 'V8 heap in use in each shard\'s compaction thread when it last answered (0 while it does not run).', workers.perShard((stats) => stats.compactionHeapUsedBytes)),
    gauge('historian_storage_compaction_array_buffer_bytes', 'ArrayBuffer memory each shard\'s compaction thread held when it last answered (0 while it does not run).', workers.perShard((stats) => stats.compactionArrayBufferBytes)),
    counter('historian_monitor_samples_total', 'Monitor tick samples each shard\'s worker answered (since it started).', workers.perShard((stats) => stats.monitorSamples)),
    counter('historian_monitor_sample_waited_frames_total', 'Write frames each shard\'s worker took between a monitor sample\'s sending and its running, summed over the samples (since it started).', workers.perShard((stats) => stats.monitorSampleWaitedFrames)),
    gauge('historian_write_buffer_points', 'Points waiting in each shard\'s write buffer (/svcapi/write_buffered) for the next flush.', workers.perShard((stats) => stats.pendingPoints)),
    counter('historian_freed_memory_trims_total', 'Times memory freed by the service\'s threads was handed back to the system (malloc_trim; storage.trimFreedMemoryMs).', () => [{ value: freedMemory.trims }]),
    counter('historian_freed_memory_returned_bytes_total', 'What those trims gave back: resident memory before each less after, summed.', () => [{ value: freedMemory.returnedBytes }]),
    counter('historian_freed_memory_trim_seconds_total', 'Time those trims took (each holds the C library\'s arenas in turn).', () => [{ value: freedMemory.trimSeconds }]),
    gauge('historian_disk_free_bytes', 'Free bytes on the data volume (writes are refused below storage.minFreeBytes).', (): Sample[] => {
      const free = disk.freeBytes();
      return free === null ? [] : [{ value: free }];
    }),
  ];
}
