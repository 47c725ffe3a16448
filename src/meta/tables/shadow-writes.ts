// The `shadow_writes_applied` table (migration 8): the (epoch, seq) of every shadow write this node
// applied, with the points it stored, so a repeated one answers as the first did and writes nothing.

import type { Db } from '../database.js';

export class ShadowWritesTable {
  private readonly applied;
  private readonly record;

  constructor(db: Db) {
    this.applied = db.prepare<[number, number], number>('SELECT points FROM shadow_writes_applied WHERE epoch = ? AND seq = ?').pluck();
    this.record = db.prepare<[number, number, number, number]>('INSERT OR IGNORE INTO shadow_writes_applied (epoch, seq, points, applied_ms) VALUES (?, ?, ?, ?)');
  }

  /** The points stored by the shadow write (epoch, seq), or undefined when it was not applied here. */
  pointsOf(epoch: number, seq: number): number | undefined {
    return this.applied.get(epoch, seq);
  }

  recordApplied(epoch: number, seq: number, points: number, at: number): void {
    this.record.run(epoch, seq, points, at);
  }
}
