// The cluster's families for GET /metrics: this node's role and epoch, and per peer (on the
// leader) how far behind it is and the bytes of log queued for it. Read from the same status as
// GET /svcapi/cluster/status, once per scrape (its peer figures cost a query of the log).

import { gauge, type MetricSource, type Sample } from '../metric-source.js';
import type { ClusterService, ClusterStatus } from './service.js';

/** Status reads within this long of each other share one (the families of one scrape). */
const STATUS_REUSE_MS = 100;

export function clusterMetricSources(cluster: ClusterService): MetricSource[] {
  let read: { at: number; status: ClusterStatus } | null = null;
  const status = (): ClusterStatus => {
    const now = performance.now();
    if (!read || now - read.at > STATUS_REUSE_MS) read = { at: now, status: cluster.status() };
    return read.status;
  };
  const perPeer = (value: (peer: ClusterStatus['peers'][number]) => number | null) => (): Sample[] =>
    status().peers.flatMap((peer) => {
      const v = value(peer);
      return v === null ? [] : [{ labels: { peer: peer.node_id }, value: v }];
    });
  return [
    gauge('historian_cluster_role', 'This node\'s role: 1 for the role it has (leader, secondary), 0 for the other; a single node is a leader.', () => {
      const role = status().role;
      return [{ labels: { role: 'leader' }, value: role === 'leader' ? 1 : 0 }, { labels: { role: 'secondary' }, value: role === 'secondary' ? 1 : 0 }];
    }),
    gauge('historian_cluster_epoch', 'The leadership epoch this node knows (0 on a single node).', () => status().epoch),
    gauge('historian_cluster_peer_lag_seconds', 'On the leader, per peer: age of the oldest change it lacks, in seconds (absent while unknown).', perPeer((peer) => (peer.lag_ms === null ? null : peer.lag_ms / 1000))),
    gauge('historian_cluster_peer_queued_bytes', 'On the leader, per peer: bytes of the replication log it has not acknowledged yet.', perPeer((peer) => peer.queued_bytes)),
  ];
}
