// High availability (WIRE.md part 2 "Cluster"): leader election and fencing through etcd, the
// replication log shipped to the secondaries, catch-up and snapshots, and the node-to-node
// routes. With cluster.enabled false this node is a single node that leads, and nothing here
// costs anything. Built after what it replicates; started last (it campaigns once everything
// serves) and stopped first (a clean stop hands leadership on at once).

import { CREDENTIALS, SIGNING_SECRET } from '../auth/api.js';
import { TIMESERIES_SNAPSHOTS } from '../backup/api.js';
import { LEADERSHIP_CONTROL, SERVICE_INFO } from '../host/builtins.js';
import { definePlugin } from '../host/plugin.js';
import { mutates } from '../http/route.js';
import { DELIVERY_MARKS } from '../notifications/api.js';
import { POINT_WRITER, REPLICATION_HOOKS } from '../storage/api.js';
import { clusterMetricSources } from './metrics.js';
import { clusterRoutes } from './routes.js';
import { ClusterService } from './service.js';

export const clusterPlugin = definePlugin({
  name: 'cluster',
  settings: (config) => ({ ...config.cluster, dataDir: config.dataDir }),
  needs: {
    writer: POINT_WRITER,
    replication: REPLICATION_HOOKS,
    marks: DELIVERY_MARKS,
    snapshots: TIMESERIES_SNAPSHOTS,
    credentials: CREDENTIALS,
    secret: SIGNING_SECRET,
    leadership: LEADERSHIP_CONTROL,
    service: SERVICE_INFO,
  },
  create({ settings, needs, meta, log }) {
    const cluster = new ClusterService({ settings, meta, ...needs, caFile: needs.service.caFile, log });
    return {
      routes: clusterRoutes({
        cluster,
        meta,
        writer: needs.writer,
        marks: needs.marks,
        snapshots: needs.snapshots,
        tokens: needs.credentials,
        clusterSecret: settings.enabled ? needs.secret : null,
        dataDir: settings.dataDir,
      }),
      // Mutations go to the leader: elsewhere they answer 503 naming it (login and shadow writes excepted).
      admit: (route) => (route.anyNode || !mutates(route) ? null : cluster.notLeader()),
      start: () => cluster.start(),
      stop: () => cluster.stop(),
      health: () => cluster.health(),
      metrics: clusterMetricSources(cluster),
    };
  },
});
