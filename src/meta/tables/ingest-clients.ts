// The `ingestconfigs` rows by the `clientId` a collector names (ingest/clients.ts reads them on
// every ingest request, so an admin's change takes effect on the next one).

import type { Db } from '../database.js';

export class IngestClientsTable {
  private readonly byClientId;
  private readonly every;

  constructor(db: Db) {
    this.every = db.prepare<[], string>('SELECT meta_data FROM ingestconfigs ORDER BY id').pluck();
    this.byClientId = db
      .prepare<[string], string>("SELECT meta_data FROM ingestconfigs WHERE CASE WHEN json_valid(meta_data) THEN json_extract(meta_data, '$.clientId') END = ? ORDER BY id")
      .pluck();
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
