// The integrity of the SQLite files of a data dir, for `historian check` (src/cli/check.ts):
// metadata.sqlite (whose tables include the cluster's replication log) and any other SQLite
// database in the data dir, such as backups, get `PRAGMA integrity_check` and
// `PRAGMA foreign_key_check`.
//
// Nothing in the data dir is written or created. SQLite creates `-wal` and `-shm` files beside
// a WAL database even when it is opened read-only, so such a file is checked in place only while
// the service holds it open (both files exist then, and a reader adds none); otherwise it is
// copied, with its WAL, to a temporary folder outside the data dir and the copy is checked.

import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import type { CheckProblem } from '../../shared/check-protocol.js';

const SQLITE_MAGIC = Buffer.from('SQLite format 3\0', 'latin1');
/** Rows of integrity_check and foreign_key_check listed per database. */
const MAX_ROWS = 20;

export interface SqliteFile {
  abs: string;
  rel: string;
  /** The database and its WAL. */
  bytes: number;
  wal: boolean;
}

/**
 * Every SQLite database in the data dir but the time series (`ts/`) and blob contents (`blobs/`),
 * found by its header. `service.lock` is the process lock, an empty database held exclusively.
 */
export function findSqliteFiles(root: string): SqliteFile[] {
  const found: SqliteFile[] = [];
  const header = Buffer.alloc(SQLITE_MAGIC.length + 4);
  const walk = (dir: string): void => {
    const entries = fs.readdirSync(dir, { withFileTypes: true }).sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    for (const entry of entries) {
      const abs = path.join(dir, entry.name);
      if (entry.isDirectory()) {
        if (dir !== root || (entry.name !== 'ts' && entry.name !== 'blobs')) walk(abs);
        continue;
      }
      if (!entry.isFile() || /-(wal|shm|journal)$/.test(entry.name) || (dir === root && entry.name === 'service.lock')) continue;
      let n = 0;
      try {
        const fd = fs.openSync(abs, 'r');
        try {
          n = fs.readSync(fd, header, 0, header.length, 0);
        } finally {
          fs.closeSync(fd);
        }
      } catch {
        continue; // removed meanwhile, or not ours to read
      }
      if (n < header.length || !header.subarray(0, SQLITE_MAGIC.length).equals(SQLITE_MAGIC)) continue;
      const walFile = sizeOf(`${abs}-wal`);
      // Header bytes 18 and 19 are 2 in WAL mode.
      const wal = header[18] === 2 || header[19] === 2;
      found.push({ abs, rel: path.relative(root, abs), bytes: sizeOf(abs) + Math.max(0, walFile), wal });
    }
  };
  walk(root);
  return found;
}

/** integrity_check and foreign_key_check of one database, in place when that creates nothing, else on a copy. */
export function checkSqliteFile(file: SqliteFile, serviceRunning: boolean, problems: CheckProblem[], notes: string[]): void {
  const hasWal = sizeOf(`${file.abs}-wal`) >= 0;
  const hasShm = sizeOf(`${file.abs}-shm`) >= 0;
  const hasJournal = sizeOf(`${file.abs}-journal`) >= 0;
  // A reader of a WAL database needs its -wal and -shm and creates them if absent; a hot rollback
  // journal would have to be played back. Neither may happen in the data dir.
  const inPlace = file.wal ? serviceRunning && hasWal && hasShm : !hasJournal;
  let copyDir: string | null = null;
  let db: Database.Database | null = null;
  try {
    if (inPlace) {
      db = new Database(file.abs, { readonly: true, fileMustExist: true, timeout: 5000 });
    } else {
      try {
        copyDir = fs.mkdtempSync(path.join(os.tmpdir(), 'historian-check-'));
        const copy = path.join(copyDir, path.basename(file.abs));
        fs.copyFileSync(file.abs, copy);
        if (hasWal) fs.copyFileSync(`${file.abs}-wal`, `${copy}-wal`);
        if (hasJournal) fs.copyFileSync(`${file.abs}-journal`, `${copy}-journal`);
        // Read-write on the copy only: SQLite may apply the WAL or roll back the journal there.
        db = new Database(copy, { fileMustExist: true });
      } catch (err) {
        if ((err as { code?: string }).code?.startsWith('SQLITE_')) throw err;
        notes.push(`${file.rel}: not checked: it could not be copied to ${os.tmpdir()} for a check that leaves the data dir untouched (${(err as Error).message}); set TMPDIR to a folder with room`);
        return;
      }
    }
    const integrity = db.prepare('PRAGMA integrity_check').pluck().all() as string[];
    if (!(integrity.length === 1 && integrity[0] === 'ok')) {
      for (const row of integrity.slice(0, MAX_ROWS)) problems.push({ file: file.rel, problem: `integrity_check: ${row}` });
      if (integrity.length > MAX_ROWS) problems.push({ file: file.rel, problem: `integrity_check: ${integrity.length - MAX_ROWS} more lines not listed` });
    }
    const orphans = db.prepare('PRAGMA foreign_key_check').all() as Array<{ table: string; rowid: number | null; parent: string; fkid: number }>;
    for (const row of orphans.slice(0, MAX_ROWS)) {
      problems.push({ file: file.rel, problem: `foreign_key_check: row ${row.rowid ?? '(without rowid)'} of ${row.table} refers to a row of ${row.parent} that does not exist (foreign key ${row.fkid})` });
    }
    if (orphans.length > MAX_ROWS) problems.push({ file: file.rel, problem: `foreign_key_check: ${orphans.length - MAX_ROWS} more rows not listed` });
  } catch (err) {
    const code = (err as { code?: string }).code ?? '';
    if (inPlace && serviceRunning && /^SQLITE_(BUSY|LOCKED|CANTOPEN)/.test(code)) {
      notes.push(`${file.rel}: not checked while the service runs (${code}: ${(err as Error).message}); stop it and check again`);
    } else {
      problems.push({ file: file.rel, problem: `${code ? `${code}: ` : ''}${(err as Error).message}` });
    }
  } finally {
    db?.close();
    if (copyDir !== null) fs.rmSync(copyDir, { recursive: true, force: true });
  }
}

/** The file's size, or -1 when there is none. */
function sizeOf(file: string): number {
  try {
    return fs.statSync(file).size;
  } catch {
    return -1;
  }
}
