// The ingest subsystem's families for GET /metrics, read at scrape time from the per client and
// tag group counters the ingest routes keep anyway (stats.ts), summed per client: a collector's
// requests, refusals and when it was last heard from.

import { counter, epochSeconds, gauge, type MetricSource, type Sample } from '../metric-source.js';
import type { IngestCounters, IngestStats } from './stats.js';

type Summed = Pick<IngestCounters, 'requests' | 'points' | 'rejectedLines' | 'rejectedRequests' | 'rateLimited'> & { lastSeen: number | null };

function perClient(stats: IngestStats): Map<string, Summed> {
  const clients = new Map<string, Summed>();
  for (const c of stats.counters()) {
    const sum = clients.get(c.clientId);
    if (!sum) {
      clients.set(c.clientId, { requests: c.requests, points: c.points, rejectedLines: c.rejectedLines, rejectedRequests: c.rejectedRequests, rateLimited: c.rateLimited, lastSeen: c.lastSeen });
      continue;
    }
    sum.requests += c.requests;
    sum.points += c.points;
    sum.rejectedLines += c.rejectedLines;
    sum.rejectedRequests += c.rejectedRequests;
    sum.rateLimited += c.rateLimited;
    if (c.lastSeen !== null && (sum.lastSeen === null || c.lastSeen > sum.lastSeen)) sum.lastSeen = c.lastSeen;
  }
  return clients;
}

export function ingestMetricSources(stats: IngestStats): MetricSource[] {
  const samples = (value: (sum: Summed) => number) => (): Sample[] => [...perClient(stats)].map(([client, sum]) => ({ labels: { client }, value: value(sum) }));
  return [
    counter('historian_ingest_requests_total', 'Requests to the ingest routes, by ingest client.', samples((s) => s.requests)),
    counter('historian_ingest_points_total', 'Points the ingest routes stored, by ingest client.', samples((s) => s.points)),
    counter('historian_ingest_rejected_lines_total', 'Line protocol lines refused (the others of their request were written), by ingest client.', samples((s) => s.rejectedLines)),
    counter('historian_ingest_rejected_requests_total', 'Ingest requests answered with an error or success false (429s included), by ingest client.', samples((s) => s.rejectedRequests)),
    counter('historian_ingest_rate_limited_total', 'Ingest requests refused with 429 (over ingest.rateLimitPerMinute), by ingest client.', samples((s) => s.rateLimited)),
    gauge('historian_ingest_client_last_seen_timestamp_seconds', 'When each ingest client (collector) last sent a request (Unix seconds).', samples((s) => epochSeconds(s.lastSeen))),
  ];
}
