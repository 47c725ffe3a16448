// The backup subsystem's families for GET /metrics: per kind (sqlite, timeseries) when a backup
// last succeeded, how long the last attempt took and whether it succeeded, and whether one runs.

import { epochSeconds, gauge, type MetricSource } from '../metric-source.js';
import type { BackupService } from './service.js';

export function backupMetricSources(backups: BackupService): MetricSource[] {
  const perKind = (value: (r: ReturnType<BackupService['results']>[number]) => number | null) => () =>
    backups.results().flatMap((r) => {
      const v = value(r);
      return v === null ? [] : [{ labels: { kind: r.kind }, value: v }];
    });
  return [
    gauge('historian_backup_last_success_timestamp_seconds', 'When the last successful backup of each kind (sqlite, timeseries) finished (Unix seconds; 0: none known).', perKind((r) => epochSeconds(r.lastSuccess?.at_ms))),
    gauge('historian_backup_last_duration_seconds', 'How long the last backup attempt of each kind took, in seconds (absent before the first).', perKind((r) => (r.last ? r.last.duration_ms / 1000 : null))),
    gauge('historian_backup_last_ok', 'Whether the last backup attempt of each kind succeeded (1) or failed (0) (absent before the first).', perKind((r) => (r.last ? (r.last.ok ? 1 : 0) : null))),
    gauge('historian_backup_running', 'Whether a backup is running now (1) or not (0).', () => (backups.running ? 1 : 0)),
  ];
}
