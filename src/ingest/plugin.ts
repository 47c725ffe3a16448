// External ingest (WIRE.md part 2 "Ingest"): collectors write through their ingest client, in
// any write format, rows, or InfluxDB line protocol (/ingest/v2 for Telegraf and the Influx
// client libraries), with per-client rate limits and counters.

import { ACCOUNTS, CREDENTIALS, PASSWORD_CHECK } from '../auth/api.js';
import { definePlugin, provide } from '../host/plugin.js';
import { INFLUX_CREDENTIALS, INGEST_CLIENTS } from './api.js';
import { COLLECTIONS, POINT_WRITER } from '../storage/api.js';
import { ingestMetricSources } from './metrics.js';
import { ingestRoutes } from './routes.js';
import { IngestService } from './service.js';

export const ingestPlugin = definePlugin({
  name: 'ingest',
  settings: (config) => config.ingest,
  needs: { writer: POINT_WRITER, collections: COLLECTIONS, credentials: CREDENTIALS, passwords: PASSWORD_CHECK, accounts: ACCOUNTS },
  provides: [INFLUX_CREDENTIALS, INGEST_CLIENTS],
  create({ settings, needs, meta, clock }) {
    const ingest = new IngestService({ settings, clients: meta.ingestClients, clock, ...needs });
    return {
      provide: [provide(INFLUX_CREDENTIALS, ingest.credentials), provide(INGEST_CLIENTS, ingest.clients)],
      routes: ingestRoutes(ingest, settings.maxBodyBytes),
      metrics: ingestMetricSources(ingest.stats),
    };
  },
});
