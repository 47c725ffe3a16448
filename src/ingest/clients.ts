// Ingest clients: the `ingestconfigs` rows (generic entity CRUD) that name a collector by its
// `clientId` and give the collection its data goes to (WIRE.md part 2 "Ingest"). Looked up on
// every request (an index search by clientId, meta/tables/ingest-clients.ts), so an admin's
// change takes effect on the next request.

import type { IngestClientsTable } from '../meta/tables/ingest-clients.js';
import { ServiceError, notFound } from '../../shared/errors.js';

export interface IngestClient {
  clientId: string;
  organization: string;
  site: string;
  unit: string;
  /** The row's grid, or null: the tag group (path segment, `rp`, bucket suffix) then names it. */
  grid: string | null;
}

export class IngestClients {
  constructor(private readonly table: IngestClientsTable) {}

  /** The names of the enabled clients whose rows are sound (one row each), sorted. */
  names(): string[] {
    const counts = new Map<string, number>();
    for (const text of this.table.all()) {
      try {
        const row = JSON.parse(text) as Record<string, unknown>;
        if (typeof row.clientId === 'string' && row.clientId !== '') counts.set(row.clientId, (counts.get(row.clientId) ?? 0) + 1);
      } catch {
        // not JSON: no client
      }
    }
    return [...counts].filter(([, n]) => n === 1).map(([name]) => name).filter((name) => {
      try {
        this.resolve(name);
        return true;
      } catch {
        return false;
      }
    }).sort();
  }

  /** The enabled client named `clientId`: 404 when there is none or it is disabled, 409 when two rows claim the name. */
  resolve(clientId: string): IngestClient {
    const rows = this.table.named(clientId);
    const named = JSON.stringify(clientId);
    if (rows.length === 0) throw notFound(`ingest client ${named} not found (no ingestconfigs row has this clientId)`);
    if (rows.length > 1) throw new ServiceError('CONFLICT', `ingest client ${named} is named by ${rows.length} ingestconfigs rows; keep one`);
    const row = JSON.parse(rows[0]) as Record<string, unknown>;
    if (row.enabled === false || row.enabled === 0 || row.enabled === 'false') throw notFound(`ingest client ${named} is disabled (ingestconfigs enabled: false)`);
    for (const field of ['organization', 'site', 'unit'] as const) {
      if (typeof row[field] !== 'string' || row[field] === '') throw notFound(`ingest client ${named} is not usable: its ingestconfigs row has no "${field}"`);
    }
    return {
      clientId,
      organization: row.organization as string,
      site: row.site as string,
      unit: row.unit as string,
      grid: typeof row.grid === 'string' && row.grid !== '' ? row.grid : null,
    };
  }
}
