// Per client and tag group counters of the ingest routes, for GET /svcapi/ingest/stats. In
// memory since the service started; bounded (a client inventing tag groups cannot grow it
// without end: past MAX_ENTRIES its new tag groups are counted under OTHER_GROUPS).

import type { IngestClient } from './clients.js';

const MAX_ENTRIES = 10_000;
const OTHER_GROUPS = '(other tag groups)';

export interface IngestCounters {
  clientId: string;
  tagGroup: string;
  requests: number;
  points: number;
  rejectedLines: number;
  skippedStringFields: number;
  /** Requests answered with an error or `success: false`. */
  rejectedRequests: number;
  /** Requests refused with 429. */
  rateLimited: number;
  /** Epoch ms of the last request, or null. */
  lastSeen: number | null;
}

interface Entry {
  counters: IngestCounters;
  /** The client's unit, for the caller's grant. */
  scope: { organization: string; site: string; unit: string };
}

export class IngestStats {
  readonly since = Date.now();
  private readonly entries = new Map<string, Entry>();

  /** The counters of one client and tag group, created on first use. */
  of(client: IngestClient, tagGroup: string): IngestCounters {
    let key = `${client.clientId}\u0000${tagGroup}`;
    let entry = this.entries.get(key);
    if (!entry && this.entries.size >= MAX_ENTRIES) {
      key = `${client.clientId}\u0000${OTHER_GROUPS}`;
      tagGroup = OTHER_GROUPS;
      entry = this.entries.get(key);
    }
    if (!entry) {
      entry = {
        counters: { clientId: client.clientId, tagGroup, requests: 0, points: 0, rejectedLines: 0, skippedStringFields: 0, rejectedRequests: 0, rateLimited: 0, lastSeen: null },
        scope: { organization: client.organization, site: client.site, unit: client.unit },
      };
      this.entries.set(key, entry);
    }
    return entry.counters;
  }

  /** Every client and tag group's counters as they are (GET /metrics reads them at scrape time). */
  *counters(): IterableIterator<Readonly<IngestCounters>> {
    for (const entry of this.entries.values()) yield entry.counters;
  }

  /** Copies of the counters whose client unit `visible` accepts, by client id then tag group. */
  list(visible: (scope: Entry['scope']) => boolean): IngestCounters[] {
    return [...this.entries.values()]
      .filter((e) => visible(e.scope))
      .map((e) => ({ ...e.counters }))
      .sort((a, b) => (a.clientId < b.clientId ? -1 : a.clientId > b.clientId ? 1 : a.tagGroup < b.tagGroup ? -1 : a.tagGroup > b.tagGroup ? 1 : 0));
  }
}
