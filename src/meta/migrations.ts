// Append-only: migration i brings the schema from version i to i + 1.
// Never edit a migration that has shipped; add a new one.

export const MIGRATIONS: readonly string[] = [
  // 1: accounts. Role and other schemaless fields live in meta_data (flat entity convention).
  `CREATE TABLE users (
     id INTEGER PRIMARY KEY AUTOINCREMENT,
     email TEXT NOT NULL UNIQUE,
     password TEXT,
     username TEXT,
     meta_data TEXT NOT NULL DEFAULT '{}'
   );
   -- Deleting an account revokes the tokens issued to it before the deletion.
   CREATE TABLE revoked_subjects (
     email TEXT PRIMARY KEY,
     revoked_at INTEGER NOT NULL
   );`,
  // 2: which collection a tag belongs to, for writes and queries that name no scope.
  `CREATE TABLE tag_scopes (
     tag TEXT PRIMARY KEY,
     collection TEXT NOT NULL,
     learned_at INTEGER NOT NULL
   );
   CREATE INDEX tag_scopes_collection ON tag_scopes (collection);`,
  // 3: external tag specs (from connectors and plant systems) mapped to a storage tag and scope.
  `CREATE TABLE tag_mappings (
     id INTEGER PRIMARY KEY AUTOINCREMENT,
     external TEXT NOT NULL UNIQUE,
     tag TEXT NOT NULL,
     organization TEXT NOT NULL,
     site TEXT NOT NULL,
     unit TEXT NOT NULL,
     grid TEXT NOT NULL,
     meta_data TEXT NOT NULL DEFAULT '{}'
   );`,
  // 4: which notifications each recipient (an email) has had on a stream, as inclusive id ranges
  // (JSON [[lo, hi], ...]); replay on connect sends what these do not cover.
  `CREATE TABLE notification_deliveries (
     recipient TEXT PRIMARY KEY,
     ranges TEXT NOT NULL,
     updated_at INTEGER NOT NULL
   ) WITHOUT ROWID;`,
];
