// What the backup subsystem offers the others: a cluster's full snapshot of a node's time series
// travels as a timeseries backup archive, made and installed by the backup's own code.

import { capability } from '../host/plugin.js';
import type { BackupFileInfo } from './files.js';

export interface TimeseriesSnapshots {
  /** A timeseries archive of this node's store (the format of a timeseries backup), written into `dir`, the caller's to remove. */
  snapshotTimeseries(dir: string, by: string): Promise<BackupFileInfo>;
  /** Replaces the time-series store by a snapshot archive (every file checked against its manifest). */
  installTimeseriesSnapshot(file: string, from: string): Promise<unknown>;
}

export const TIMESERIES_SNAPSHOTS = capability<TimeseriesSnapshots>('backup.timeseries-snapshots');
