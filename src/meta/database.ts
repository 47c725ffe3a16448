// The metadata store: one SQLite file (WAL mode) owned by the main thread.
// Schema changes are an append-only list of migrations keyed by
// `PRAGMA user_version`, applied in one transaction at open.

import fs from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import { PRIVATE_DIR_MODE, PRIVATE_FILE_MODE } from '../../shared/file-modes.js';
import { MIGRATIONS } from './migrations.js';

export type Db = Database.Database;

export function openMetadataDb(dataDir: string): Db {
  fs.mkdirSync(dataDir, { recursive: true, mode: PRIVATE_DIR_MODE });
  const file = path.join(dataDir, 'metadata.sqlite');
  // It holds password hashes. SQLite would create it 0644 less the umask; an empty file is an
  // empty database, and SQLite gives the -wal and -shm files the mode of the database file.
  fs.closeSync(fs.openSync(file, 'a', PRIVATE_FILE_MODE));
  const db = new Database(file);
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = NORMAL'); // WAL + NORMAL: durable across process crashes, one fsync per checkpoint
  db.pragma('foreign_keys = ON');
  db.pragma('busy_timeout = 5000');
  migrate(db);
  return db;
}

/** Brings a metadata database to this build's schema (also a backup's copy before it is restored). */
export function migrate(db: Db): void {
  const current = db.pragma('user_version', { simple: true }) as number;
  if (current > MIGRATIONS.length) {
    throw new Error(`metadata.sqlite is at schema version ${current}, newer than this build knows (${MIGRATIONS.length})`);
  }
  db.transaction(() => {
    for (let version = current; version < MIGRATIONS.length; version++) {
      db.exec(MIGRATIONS[version]);
      db.pragma(`user_version = ${version + 1}`);
    }
  })();
}
