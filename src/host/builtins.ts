// Capabilities the code that runs the host provides itself (main.ts), not a plugin: what the
// service knows of itself (its health, its routes, its port, its CA), the metric families of
// every part of it, and the cluster's side of leadership.

import type { MetricSource } from '../metric-source.js';
import { capability, type Route } from './plugin.js';
import type { ServiceHealth } from './host.js';
import type { LeadershipControl } from './leadership.js';

export interface ServiceInfo {
  /** Health of every subsystem (GET /svcapi/health). */
  health(): ServiceHealth;
  /** Every mounted route (the OpenAPI document). */
  routes(): readonly Route[];
  /** The port actually bound (differs from the setting when it is 0). */
  port(): number;
  /** The CA certificate the server certificate was made with; null on configured certificates without one. */
  readonly caFile: string | null;
}

/**
 * Every metric family of the service (GET /metrics): the HTTP server's, the metadata store's,
 * the host's and each plugin's (Mounted.metrics). Gathered here rather than handed around, so
 * no subsystem depends on the one that exposes them, and none imports prom-client.
 */
export interface MetricSources {
  /** The families as they are now (the HTTP server's appear once it is made). */
  all(): readonly MetricSource[];
}

export const SERVICE_INFO = capability<ServiceInfo>('host.service-info');
export const METRIC_SOURCES = capability<MetricSources>('host.metric-sources');
export const LEADERSHIP_CONTROL = capability<LeadershipControl>('host.leadership-control');
