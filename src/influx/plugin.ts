// InfluxDB 1.x compatibility at the root (WIRE.md part 3): the InfluxQL `/query` the `influx`
// CLI and Grafana's InfluxDB datasource speak. (`/ping` and `/write` belong to ingest, whose
// handlers they share.) A `db` names an ingest client or a collection the caller can reach.

import { definePlugin } from '../host/plugin.js';
import { INFLUX_CREDENTIALS, INGEST_CLIENTS } from '../ingest/api.js';
import { COLLECTIONS, POINT_READER } from '../storage/api.js';
import { collectionId as idOf, parseCollectionId } from '../../shared/scope-path.js';
import { Executor } from './executor.js';
import { influxRoutes } from './routes.js';

/** Most buckets one GROUP BY time statement may make. */
const MAX_BUCKETS = 1_000_000;

export const influxPlugin = definePlugin({
  name: 'influx',
  settings: (config) => ({ maxQueryBytes: config.storage.queryMemoryBytes }),
  needs: { reader: POINT_READER, collections: COLLECTIONS, credentials: INFLUX_CREDENTIALS, clients: INGEST_CLIENTS },
  create({ settings, needs, clock }) {
    const { reader, collections, clients } = needs;
    /** The collection a `db` names for this caller: a collection id it reaches, or an ingest client's collection. */
    const database = (grant: Parameters<typeof collections.canReach>[0], name: string): string | null => {
      if (name.split('/').length === 4) {
        try {
          parseCollectionId(name);
        } catch {
          return null;
        }
        return collections.canReach(grant, name) ? name : null;
      }
      try {
        const client = clients.resolve(name);
        const scope = { organization: client.organization, site: client.site, unit: client.unit, grid: client.grid ?? 'default' };
        return collections.reachesUnit(grant, scope) ? idOf(scope) : null;
      } catch {
        return null;
      }
    };
    /** The ingest clients the caller reaches, and the collections it sees that no such client names. */
    const databases = (grant: Parameters<typeof collections.visible>[0]): string[] => {
      const names: string[] = [];
      const named = new Set<string>();
      for (const name of clients.names()) {
        const id = database(grant, name);
        if (id === null) continue;
        names.push(name);
        named.add(id);
      }
      for (const record of collections.visible(grant)) if (!named.has(idOf(record))) names.push(idOf(record));
      return names.sort();
    };
    const executor = new Executor({ reader, database, databases, now: () => clock.now(), maxRawBytes: settings.maxQueryBytes, maxBuckets: MAX_BUCKETS });
    return { routes: influxRoutes(executor, needs.credentials, () => clock.now()) };
  },
});
