// The notification streams' families for GET /metrics: SSE streams open, and the events they
// were handed or lost (counted by the stream hub as it fans out, read at scrape time).

import { counter, gauge, type MetricSource } from '../metric-source.js';
import type { StreamHub } from './stream-hub.js';

export function notificationMetricSources(hub: StreamHub): MetricSource[] {
  return [
    gauge('historian_sse_streams_open', 'Notification streams (SSE, /svcapi/notifications/stream) open now.', () => hub.streamCount),
    counter('historian_sse_events_delivered_total', 'Notification events handed to streams, replayed and live.', () => hub.eventsDelivered),
    counter('historian_sse_events_dropped_total', 'Live notification events lost with a stream cut for reading too slowly (notifications.streamQueueBytes); its client gets them again with Last-Event-ID.', () => hub.eventsDropped),
  ];
}
