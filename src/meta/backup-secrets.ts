// The one row of sealed secrets a sqlite backup may carry (backup/secrets.ts seals and opens it):
//
//   backup_secrets (id = 1, format, kdf JSON, salt, nonce, ciphertext, tag)
//
// It lives in the backup's own file, added after the online backup made the copy and before its
// sha256 is taken, so a backup stays one file. The live store never has this table: a restore
// copies only the tables the live store has (WholeStore.replaceFrom), so it is never restored
// into the live store, nor replicated.

import Database from 'better-sqlite3';

export interface SealedSecretsRow {
  format: number;
  /** The key derivation and its parameters, as JSON (they travel with the backup). */
  kdf: string;
  salt: Buffer;
  nonce: Buffer;
  ciphertext: Buffer;
  tag: Buffer;
}

const TABLE = 'backup_secrets';

/** Adds the row to the backup copy `file` (a plain one-file database no one else has open). */
export function writeSealedSecrets(file: string, row: SealedSecretsRow): void {
  const db = new Database(file, { fileMustExist: true });
  try {
    db.exec(`CREATE TABLE IF NOT EXISTS ${TABLE} (
      id INTEGER PRIMARY KEY CHECK (id = 1), format INTEGER NOT NULL, kdf TEXT NOT NULL,
      salt BLOB NOT NULL, nonce BLOB NOT NULL, ciphertext BLOB NOT NULL, tag BLOB NOT NULL)`);
    db.prepare(`INSERT OR REPLACE INTO ${TABLE} (id, format, kdf, salt, nonce, ciphertext, tag) VALUES (1, ?, ?, ?, ?, ?, ?)`)
      .run(row.format, row.kdf, row.salt, row.nonce, row.ciphertext, row.tag);
  } finally {
    db.close();
  }
}

/** The row of the backup (or copy) `file`, or null when it carries no secrets; throws when the file is not a database. */
export function readSealedSecrets(file: string): SealedSecretsRow | null {
  const db = new Database(file, { readonly: true, fileMustExist: true });
  try {
    const exists = db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?").get(TABLE);
    if (!exists) return null;
    const row = db.prepare(`SELECT format, kdf, salt, nonce, ciphertext, tag FROM ${TABLE} WHERE id = 1`).get() as SealedSecretsRow | undefined;
    return row ?? null;
  } finally {
    db.close();
  }
}
