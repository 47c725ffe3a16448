// Plant collectors (subsystem `collectors`, WIRE.md part 3 "Plant collectors"): OPC UA and MQTT
// clients the service runs itself, saved in /svcapi/collectors, run on the node that leads, each
// writing through the same storage path as every write (live watches and the monitor see it).
// Drivers (drivers.ts) talk to servers and brokers; this folder owns definitions and running.

import path from 'node:path';
import { ACCOUNTS } from '../auth/api.js';
import { definePlugin } from '../host/plugin.js';
import { counter, gauge, type Sample } from '../metric-source.js';
import { NOTIFY } from '../notifications/api.js';
import { COLLECTIONS, POINT_READER, POINT_WRITER } from '../storage/api.js';
import type { CollectorState } from './driver.js';
import { DRIVERS } from './drivers.js';
import { collectorRoutes } from './routes.js';
import { CollectorService } from './service.js';

const STATES: readonly CollectorState[] = ['connecting', 'connected', 'reconnecting', 'failed'];

export const collectorsPlugin = definePlugin({
  name: 'collectors',
  settings: (config) => ({ dataDir: config.dataDir }),
  needs: { writer: POINT_WRITER, reader: POINT_READER, collections: COLLECTIONS, accounts: ACCOUNTS, notify: NOTIFY },
  create({ settings, needs, meta, clock, log, leadership }) {
    const env = { secretsDir: path.join(settings.dataDir, 'secrets'), stateDir: path.join(settings.dataDir, 'collectors'), now: () => clock.now() };
    const service = new CollectorService({
      meta, ...needs, drivers: DRIVERS, dataDir: settings.dataDir, leads: () => leadership.leads(), now: () => clock.now(), log,
    });
    leadership.onLeading(() => service.startAll());
    leadership.onFollowing(() => void service.stopAll());
    meta.events.replaced.subscribe((tables) => {
      if (tables.has('collectors')) void service.followRestore().catch((err: Error) => log.error({ err: err.message }, 'collectors did not restart after the metadata store was replaced'));
    });
    // Per kind only: a collector's id or name would tell every scraper about other tenants.
    const byKind = (pick: (s: CollectorService) => Map<string, number>): Sample[] => {
      const totals = pick(service);
      return [...DRIVERS.keys()].map((kind) => ({ labels: { kind }, value: totals.get(kind) ?? 0 }));
    };
    const sum = (which: 'stored' | 'skipped') => (s: CollectorService) => {
      const totals = new Map(s.retired[which]);
      for (const run of s.runningCollectors()) {
        const value = which === 'stored' ? run.status.values_stored : run.status.values_skipped;
        totals.set(run.definition.kind, (totals.get(run.definition.kind) ?? 0) + value);
      }
      return totals;
    };
    return {
      routes: collectorRoutes(service, DRIVERS, env),
      start: () => service.open(),
      stop: () => service.stop(),
      health: () => ({ status: 'ok' as const }),
      metrics: [
        counter('historian_collector_values_stored_total', 'Values the plant collectors of this node stored, by kind.', () => byKind(sum('stored'))),
        counter('historian_collector_values_skipped_total', 'Values the plant collectors of this node saw and did not store (bad status, not numeric, undecodable), by kind.', () => byKind(sum('skipped'))),
        gauge('historian_collectors', 'Collectors running on this node, by kind and state.', () => {
          const counts = new Map<string, number>();
          for (const run of service.runningCollectors()) counts.set(`${run.definition.kind}\u0000${run.status.state}`, (counts.get(`${run.definition.kind}\u0000${run.status.state}`) ?? 0) + 1);
          return [...DRIVERS.keys()].flatMap((kind) => STATES.map((state) => ({ labels: { kind, state }, value: counts.get(`${kind}\u0000${state}`) ?? 0 })));
        }),
      ],
    };
  },
});
