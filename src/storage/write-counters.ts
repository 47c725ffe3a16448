// Points and body bytes the storage stored, by the route that wrote them and its durability,
// for GET /metrics. One map lookup per write request (the route pattern is a constant string of
// the route's declaration, never built per request), then plain additions; nothing per point.

import type { WriteMode } from '../../shared/protocol.js';

/** The route label of a write that named none: replicated from another node, or a caller that does not say. */
export const REPLICATED_WRITES = '(replication)';
export const UNNAMED_WRITES = '(other)';

export interface RouteWrites {
  readonly route: string;
  /** Points stored, by durability. */
  readonly points: Record<WriteMode, number>;
  /** Body bytes of the stored writes, as they reached the storage (compressed ones compressed). */
  bytes: number;
}

export class WriteCounters {
  private readonly byRoute = new Map<string, RouteWrites>();

  count(route: string, mode: WriteMode, points: number, bytes: number): void {
    let counts = this.byRoute.get(route);
    if (!counts) this.byRoute.set(route, (counts = { route, points: { sync: 0, fast: 0, buffered: 0 }, bytes: 0 }));
    counts.points[mode] += points;
    counts.bytes += bytes;
  }

  all(): IterableIterator<RouteWrites> {
    return this.byRoute.values();
  }
}
