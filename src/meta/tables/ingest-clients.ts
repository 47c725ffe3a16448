// The `ingestconfigs` rows by the `clientId` a collector names (ingest/clients.ts reads them on
// every ingest request, so an admin's change takes effect on the next one), through the index of
// migration 13: a lookup costs the same with five rows or fifty thousand.

import type { Db } from '../database.js';

/** The expression of migration 13's index, word for word, so the lookup is an index search, not a scan. */
const BY_CLIENT_ID = "SELECT meta_data FROM ingestconfigs WHERE (CASE WHEN json_valid(meta_data) THEN json_extract(meta_data, '$.clientId') END) = ? ORDER BY id";

export class IngestClientsTable {
  private readonly byClientId;
  private readonly every;
  private readonly plan;

  constructor(db: Db) {
    this.every = db.prepare<[], string>('SELECT meta_data FROM ingestconfigs ORDER BY id').pluck();
    this.byClientId = db
      .prepare<[string], string>(BY_CLIENT_ID)
      .pluck();
    this.plan = db.prepare<[string], { detail: string }>(`EXPLAIN QUERY PLAN ${BY_CLIENT_ID}`);
  }

  /** How SQLite runs the lookup (tests: it must search the clientId index, never scan the table). */
  lookupPlan(): string[] {
    return this.plan.all('x').map((row) => row.detail);
  }

  /** The meta_data of every row (InfluxQL's SHOW DATABASES lists the clients). */
  all(): string[] {
    return this.every.all();
  }

  /** The meta_data of every row naming `clientId` (one, when the rows are sound). */
  named(clientId: string): string[] {
    return this.byClientId.all(clientId);
  }
}
