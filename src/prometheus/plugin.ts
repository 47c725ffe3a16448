// Prometheus compatibility (WIRE.md part 3): the query API Grafana's Prometheus datasource and
// promtool speak, and remote read, over every series the caller's grant reaches. (Remote write
// belongs to ingest, like every write path; /metrics to the metrics subsystem.)

import { definePlugin } from '../host/plugin.js';
import { INFLUX_CREDENTIALS } from '../ingest/api.js';
import { COLLECTIONS, POINT_READER } from '../storage/api.js';
import { remoteReadRoute } from './remote-read.js';
import { prometheusRoutes } from './routes.js';
import { SeriesSource } from './series-source.js';

export const prometheusPlugin = definePlugin({
  name: 'prometheus',
  settings: (config) => ({ ...config.promql, maxQueryBytes: config.storage.queryMemoryBytes }),
  needs: { reader: POINT_READER, collections: COLLECTIONS, credentials: INFLUX_CREDENTIALS },
  create({ settings, needs, clock }) {
    const source = new SeriesSource(needs.reader, needs.collections, { maxSeries: settings.maxSeries, maxBytes: settings.maxQueryBytes });
    return { routes: [...prometheusRoutes(source, needs.credentials, settings, () => clock.now()), remoteReadRoute(source, needs.credentials, settings.maxSamples)] };
  },
});
