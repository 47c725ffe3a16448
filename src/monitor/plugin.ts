// The monitor (SPEC "Monitoring"): alarm rules on tags, evaluated at each collection's tick rate
// on the node that leads, events, and notifications for the collection's unit.

import { definePlugin } from '../host/plugin.js';
import { gauge, histogram } from '../metric-source.js';
import { NOTIFY } from '../notifications/api.js';
import { COLLECTIONS, MONITOR_SAMPLER } from '../storage/api.js';
import { derivedRuleHooks } from './derived-rules.js';
import { monitorRoutes } from './routes.js';
import { TickScheduler } from './scheduler.js';
import { MonitorService } from './service.js';

const MONITOR_TABLES = ['monitor_rules', 'monitor_events', 'monitor_collections', 'monitor_settings'];
/** A batch of replicated rows reloads the rules once, not once per row. */
const RELOAD_DELAY_MS = 200;

export const monitorPlugin = definePlugin({
  name: 'monitor',
  settings: (config) => ({ ...config.monitor, openRoutes: config.compat.openMonitorAndBackup }),
  needs: { collections: COLLECTIONS, sampler: MONITOR_SAMPLER, notify: NOTIFY },
  create({ settings, needs, meta, clock, log, leadership }) {
    let monitor!: MonitorService;
    const scheduler = new TickScheduler({
      tables: meta.alarms,
      sampler: needs.sampler,
      leadership,
      clock,
      log,
      defaultTickRateMs: settings.defaultTickRateMs,
      notify: (transition) => monitor.notifyTransition(transition),
    });
    monitor = new MonitorService({ tables: meta.alarms, scheduler, ...needs, clock, log, defaultTickRateMs: settings.defaultTickRateMs });
    // Rules changed outside the entity store (a restore, a cluster snapshot, replicated rows) are read again.
    let reload: NodeJS.Timeout | null = null;
    meta.events.replaced.subscribe((tables) => {
      if (MONITOR_TABLES.some((t) => tables.has(t))) scheduler.reload();
    });
    meta.events.tablesChanged.subscribe((change) => {
      if (!MONITOR_TABLES.some((t) => change.tables.has(t))) return;
      reload ??= setTimeout(() => {
        reload = null;
        scheduler.reload();
      }, RELOAD_DELAY_MS);
    });
    return {
      routes: monitorRoutes(monitor, settings.openRoutes, meta.grantAll('monitor-compat')),
      entityHooks: derivedRuleHooks(monitor, meta.alarms, needs.collections, scheduler, clock.now),
      metrics: [
        histogram('historian_monitor_tick_duration_seconds', 'Time a monitor tick took on this node (sampling the workers, evaluating, recording events).', () => [{ histogram: scheduler.tickDurations }]),
        gauge('historian_monitor_rules', 'Enabled alarm rules the monitor evaluates.', () => scheduler.ruleCount),
        gauge('historian_monitor_enabled', 'Whether the monitor is switched on (1) or off (0).', () => (scheduler.isEnabled ? 1 : 0)),
      ],
      start() {
        scheduler.start();
        log.info({ enabled: scheduler.isEnabled, rules: meta.alarms.ruleCount(), openEvents: meta.alarms.openEventCount(), collections: scheduler.watchedCollections }, 'monitor started');
      },
      async stop() {
        if (reload) clearTimeout(reload);
        await scheduler.stop();
      },
    };
  },
});
