// Capabilities the code that runs the host provides itself (main.ts), not a plugin: what the
// service knows of itself (its health, its routes, its port, its CA), and the cluster's side of
// leadership.

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

export const SERVICE_INFO = capability<ServiceInfo>('host.service-info');
export const LEADERSHIP_CONTROL = capability<LeadershipControl>('host.leadership-control');
