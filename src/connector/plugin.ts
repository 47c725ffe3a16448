// The asset-hierarchy connector (SPEC "Asset-hierarchy connector"): browsing a PI Web API and
// backfilling its recorded values, saved connections with sealed secrets; backfills run on the
// node that leads and resume there after a restart or a change of leader.

import { ACCOUNTS } from '../auth/api.js';
import { definePlugin } from '../host/plugin.js';
import { gauge } from '../metric-source.js';
import { PROCESS_LOG } from '../jobs/api.js';
import { COLLECTIONS, POINT_WRITER } from '../storage/api.js';
import { connectorRoutes } from './routes.js';
import { ConnectorService } from './service.js';

export const connectorPlugin = definePlugin({
  name: 'connector',
  settings: (config) => ({ ...config.connector, dataDir: config.dataDir }),
  needs: { writer: POINT_WRITER, collections: COLLECTIONS, accounts: ACCOUNTS, jobs: PROCESS_LOG },
  create({ settings, needs, meta, log, leadership }) {
    const connector = new ConnectorService({ settings, meta, ...needs, log });
    leadership.onLeading(() => connector.resumeInterrupted());
    leadership.onFollowing(() => connector.pauseAll());
    return {
      routes: connectorRoutes(connector),
      entityRules: { connections: connector.connections.entityRules() },
      stop: () => connector.stop(),
      // Their points are counted in historian_points_written_total{route="(connector backfill)"}.
      metrics: [gauge('historian_connector_backfills_running', 'PI Web API backfills running on this node now.', () => connector.runningBackfills)],
    };
  },
});
