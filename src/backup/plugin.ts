// Backups and restores of the metadata store and the time series, their schedule, and the
// admin routes. While a metadata restore runs, other mutating requests answer 503 (its request
// gate); while a time-series restore runs, only changes to the time series do (the storage gate).

import { BLOB_CONTENTS } from '../files/api.js';
import { definePlugin, provide } from '../host/plugin.js';
import { PROCESS_LOG } from '../jobs/api.js';
import { NOTIFY } from '../notifications/api.js';
import { STORE_MAINTENANCE } from '../storage/api.js';
import { ServiceError } from '../../shared/errors.js';
import { mutates } from '../http/route.js';
import { TIMESERIES_SNAPSHOTS } from './api.js';
import { backupMetricSources } from './metrics.js';
import { recoverInterruptedRestore } from './restore-marker.js';
import { backupRoutes } from './routes.js';
import { BackupService } from './service.js';

export const backupPlugin = definePlugin({
  name: 'backup',
  settings: (config) => ({
    dataDir: config.dataDir,
    maxRestoreBytes: config.backup.maxRestoreBytes,
    restoreStepDelayMs: config.debug.restoreStepDelayMs,
    openRoutes: config.compat.openMonitorAndBackup,
  }),
  needs: { maintenance: STORE_MAINTENANCE, contents: BLOB_CONTENTS, notify: NOTIFY, jobs: PROCESS_LOG },
  provides: [TIMESERIES_SNAPSHOTS],
  create({ settings, needs, meta, clock, log }) {
    // Every plugin is built before any starts: a restore a crash interrupted is finished or undone
    // here, before the storage workers open the ts folder.
    const recovered = recoverInterruptedRestore(settings.dataDir);
    if (recovered) log.warn({ dataDir: settings.dataDir }, recovered);
    const backups = new BackupService({ settings, store: meta.wholeStore, ...needs, clock, log });
    if (settings.openRoutes) log.warn('compat.openMonitorAndBackup is on: the monitor and backup routes answer without a token');
    return {
      provide: [provide(TIMESERIES_SNAPSHOTS, backups)],
      routes: backupRoutes(backups, settings.openRoutes),
      // A metadata restore replaces the store under everyone's feet: other changes wait for it.
      admit(route) {
        if (!mutates(route) || route.maintenanceExempt) return null;
        const restoring = backups.maintenanceReason();
        return restoring ? new ServiceError('UNAVAILABLE', restoring, { headers: { 'retry-after': '5' } }) : null;
      },
      start: () => backups.start(),
      stop: () => backups.stop(),
      health: () => backups.health(),
      metrics: backupMetricSources(backups),
    };
  },
});
