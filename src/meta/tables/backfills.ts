// The `connector_backfills` table: each connector backfill's request and how far each of its
// attributes has come, so a restart resumes it (connector/service.ts).

import type { Db } from '../database.js';

export interface BackfillRow {
  id: string;
  owner: string;
  request: string;
  cursor: string;
  written: number;
  skipped: number;
  status: string;
}

export class BackfillsTable {
  private readonly running;
  private readonly insert;
  private readonly save;

  constructor(db: Db) {
    this.running = db.prepare<[], BackfillRow>("SELECT * FROM connector_backfills WHERE status = 'running'");
    this.insert = db.prepare<[string, string, string, string, number]>(
      "INSERT INTO connector_backfills (id, owner, request, cursor, written, skipped, status, updated_ms) VALUES (?, ?, ?, ?, 0, 0, 'running', ?)",
    );
    this.save = db.prepare<[string, number, number, string, number, string]>('UPDATE connector_backfills SET cursor = ?, written = ?, skipped = ?, status = ?, updated_ms = ? WHERE id = ?');
  }

  /** Backfills a stop, a crash or a lost lead left running. */
  unfinished(): BackfillRow[] {
    return this.running.all();
  }

  create(id: string, owner: string, requestJson: string, cursorJson: string, now: number): void {
    this.insert.run(id, owner, requestJson, cursorJson, now);
  }

  /** Records how far a backfill came, and its status. */
  progress(id: string, cursorJson: string, written: number, skipped: number, status: string, now: number): void {
    this.save.run(cursorJson, written, skipped, status, now, id);
  }
}
