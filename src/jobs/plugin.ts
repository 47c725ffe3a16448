// The process log: every long job (backup, restore, seal, purge, backfill) with its progress,
// and the routes an admin reads it through.

import { definePlugin, provide } from '../host/plugin.js';
import { PROCESS_LOG } from './api.js';
import { JobLog } from './job-log.js';
import { processLogRoutes } from './routes.js';

export const processLogPlugin = definePlugin({
  name: 'process-log',
  settings: (config) => config.processLog,
  provides: [PROCESS_LOG],
  create({ settings, meta, clock, log }) {
    const jobs = new JobLog(meta.jobs, clock, log, settings.retentionDays, meta.events);
    return {
      provide: [provide(PROCESS_LOG, jobs)],
      routes: processLogRoutes(jobs),
      start: () => jobs.start(),
      stop: () => jobs.stop(),
    };
  },
});
