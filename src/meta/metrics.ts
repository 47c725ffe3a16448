// The metadata store's families for GET /metrics: the size of its SQLite file and WAL (a stat
// of each at scrape time) and what the background checkpoints took (read from the buffer the
// checkpoint worker writes, checkpointer.ts).

import fs from 'node:fs';
import { counter, epochSeconds, gauge, type MetricSource } from '../metric-source.js';
import type { CheckpointStats } from './checkpointer.js';

/** A file's size, 0 when it is not there (no WAL right after a full checkpoint). */
function sizeOf(file: string): number {
  try {
    return fs.statSync(file).size;
  } catch {
    return 0;
  }
}

export function metadataMetricSources(databaseFile: string, checkpoints: () => CheckpointStats): MetricSource[] {
  return [
    gauge('historian_metadata_sqlite_bytes', 'Size of the metadata SQLite database file and of its write-ahead log, in bytes.', () => [
      { labels: { file: 'database' }, value: sizeOf(databaseFile) },
      { labels: { file: 'wal' }, value: sizeOf(`${databaseFile}-wal`) },
    ]),
    counter('historian_metadata_checkpoints_total', 'Background checkpoints of the metadata WAL since start (one a second).', () => checkpoints().count),
    counter('historian_metadata_checkpoint_seconds_total', 'Time spent in background checkpoints of the metadata WAL since start, in seconds.', () => checkpoints().totalMs / 1000),
    gauge('historian_metadata_last_checkpoint_duration_seconds', 'How long the last checkpoint of the metadata WAL took, in seconds.', () => checkpoints().lastDurationMs / 1000),
    gauge('historian_metadata_last_checkpoint_timestamp_seconds', 'When the last checkpoint of the metadata WAL ran (Unix seconds; 0: none yet).', () => epochSeconds(checkpoints().lastAtMs)),
    gauge('historian_metadata_wal_frames', 'Frames in the metadata WAL at the last checkpoint.', () => checkpoints().walFrames),
  ];
}
