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
  // 5: the monitor: alarm rules with their evaluation state (so a restart resumes pending delays
  // and open events), alarm events, monitored collections, and monitor settings.
  `CREATE TABLE monitor_rules (
     id TEXT PRIMARY KEY,
     collection_id TEXT NOT NULL,
     tag TEXT NOT NULL,
     tag_index INTEGER,
     name TEXT NOT NULL DEFAULT '',
     enabled INTEGER NOT NULL DEFAULT 1,
     limHi REAL,
     limLo REAL,
     deadband REAL NOT NULL DEFAULT 0,
     on_delay_ms INTEGER NOT NULL DEFAULT 0,
     off_delay_ms INTEGER NOT NULL DEFAULT 0,
     stale_after_ms INTEGER,
     severity TEXT NOT NULL DEFAULT 'warn',
     notify INTEGER NOT NULL DEFAULT 1,
     tagmetaId TEXT,
     origin TEXT NOT NULL DEFAULT 'api',
     created_ms INTEGER NOT NULL,
     updated_ms INTEGER NOT NULL,
     phase TEXT NOT NULL DEFAULT 'normal',
     kind TEXT,
     since_ms INTEGER,
     event_id TEXT
   );
   CREATE INDEX monitor_rules_collection ON monitor_rules (collection_id);
   CREATE INDEX monitor_rules_tagmeta ON monitor_rules (tagmetaId) WHERE tagmetaId IS NOT NULL;
   CREATE TABLE monitor_events (
     id TEXT PRIMARY KEY,
     rule_id TEXT NOT NULL,
     collection_id TEXT NOT NULL,
     tag TEXT NOT NULL,
     tag_index INTEGER,
     kind TEXT NOT NULL,
     status TEXT NOT NULL,
     severity TEXT NOT NULL,
     value REAL,
     "limit" REAL,
     started_ms INTEGER NOT NULL,
     resolved_ms INTEGER,
     acked_ms INTEGER,
     acked_by TEXT,
     message TEXT NOT NULL
   );
   CREATE INDEX monitor_events_started ON monitor_events (started_ms);
   CREATE INDEX monitor_events_open ON monitor_events (status) WHERE status <> 'resolved';
   CREATE INDEX monitor_events_rule ON monitor_events (rule_id);
   CREATE TABLE monitor_collections (
     collection_id TEXT PRIMARY KEY,
     enabled INTEGER NOT NULL,
     tick_rate_ms INTEGER NOT NULL
   );
   CREATE TABLE monitor_settings (
     key TEXT PRIMARY KEY,
     value TEXT NOT NULL
   );`,
  // 6: the process log (src/jobs/job-log.ts): long work with its progress and outcome.
  `CREATE TABLE process_jobs (
     id TEXT PRIMARY KEY,
     kind TEXT NOT NULL,
     status TEXT NOT NULL,
     started_ms INTEGER NOT NULL,
     finished_ms INTEGER,
     progress REAL NOT NULL,
     message TEXT NOT NULL,
     error TEXT
   );
   CREATE INDEX process_jobs_started ON process_jobs (started_ms);`,
  // 7: connector backfills (src/connector/service.ts), resumable after a restart.
  `CREATE TABLE connector_backfills (
     id TEXT PRIMARY KEY,
     owner TEXT NOT NULL,
     request TEXT NOT NULL,
     cursor TEXT NOT NULL,
     written INTEGER NOT NULL,
     skipped INTEGER NOT NULL,
     status TEXT NOT NULL,
     updated_ms INTEGER NOT NULL
   );`,
  // 8: shadow writes applied, by (epoch, seq), so a repeated one is not applied twice.
  `CREATE TABLE shadow_writes_applied (
     epoch INTEGER NOT NULL,
     seq INTEGER NOT NULL,
     points INTEGER NOT NULL,
     applied_ms INTEGER NOT NULL,
     PRIMARY KEY (epoch, seq)
   ) WITHOUT ROWID;`,
  // 9: the cluster's replication log (src/cluster/change-log.ts): every accepted write and metadata
  // row change, by (epoch, seq) (a write is logged pending before it is stored, and committed after), kept on every node (bounded by size and age) so it can be shipped,
  // pulled by a new leader, and re-shipped; per-epoch high-water marks; each peer's acknowledged
  // position; and this node's recording term (the triggers append only while it leads).
  `CREATE TABLE cluster_log (
     id INTEGER PRIMARY KEY AUTOINCREMENT,
     epoch INTEGER NOT NULL,
     seq INTEGER NOT NULL,
     kind TEXT NOT NULL,
     meta TEXT NOT NULL,
     body BLOB,
     bytes INTEGER NOT NULL,
     created_ms INTEGER NOT NULL,
     pending INTEGER NOT NULL DEFAULT 0
   );
   CREATE UNIQUE INDEX cluster_log_position ON cluster_log (epoch, seq);
   CREATE TABLE cluster_epochs (
     epoch INTEGER PRIMARY KEY,
     max_seq INTEGER NOT NULL
   );
   CREATE TABLE cluster_peers (
     node_id TEXT PRIMARY KEY,
     url TEXT NOT NULL,
     acked_id INTEGER NOT NULL,
     acked_ms INTEGER,
     updated_ms INTEGER NOT NULL
   );
   CREATE TABLE cluster_term (
     only INTEGER PRIMARY KEY CHECK (only = 1),
     epoch INTEGER NOT NULL,
     recording INTEGER NOT NULL,
     log_bytes INTEGER NOT NULL
   );
   INSERT INTO cluster_term (only, epoch, recording, log_bytes) VALUES (1, 0, 0, 0);`,
  // 10: blobs and attachments (src/files/): content files under <dataDir>/blobs named by their
  // sha256, one row each; keys and attachments refer to a content (identical bytes stored once);
  // a content nothing refers to any more goes, row and file.
  `CREATE TABLE blob_contents (
     sha256 TEXT PRIMARY KEY,
     size_bytes INTEGER NOT NULL,
     created_ms INTEGER NOT NULL
   ) WITHOUT ROWID;
   CREATE TABLE blob_keys (
     key TEXT PRIMARY KEY,
     sha256 TEXT NOT NULL REFERENCES blob_contents (sha256),
     content_type TEXT NOT NULL,
     created_ms INTEGER NOT NULL
   ) WITHOUT ROWID;
   CREATE INDEX blob_keys_sha256 ON blob_keys (sha256);
   CREATE TABLE attachments (
     id TEXT PRIMARY KEY,
     entity TEXT NOT NULL,
     entity_id TEXT NOT NULL,
     name TEXT NOT NULL,
     sha256 TEXT NOT NULL REFERENCES blob_contents (sha256),
     content_type TEXT NOT NULL,
     created_ms INTEGER NOT NULL
   );
   CREATE INDEX attachments_entity ON attachments (entity, entity_id);
   CREATE INDEX attachments_sha256 ON attachments (sha256);`,
  // 11: API keys (src/auth/api-keys.ts): long-lived credentials for tools, stored only as the
  // SHA-256 of the key. `owner_id` is the users row the key was made by: an account deleted and
  // made again under the same email gets a new id, so its old keys stay dead. No foreign key:
  // a restore or a snapshot replaces tables one by one, and a cascade would empty this one.
  `CREATE TABLE api_keys (
     id TEXT PRIMARY KEY,
     owner TEXT NOT NULL,
     owner_id INTEGER NOT NULL,
     name TEXT NOT NULL,
     role TEXT NOT NULL,
     key_hash TEXT NOT NULL UNIQUE,
     prefix TEXT NOT NULL,
     created_ms INTEGER NOT NULL,
     expires_ms INTEGER,
     last_used_ms INTEGER
   );
   CREATE INDEX api_keys_owner_id ON api_keys (owner_id);`,
  // 12: plant collectors (src/collectors/): one row per saved OPC UA or MQTT collector. `owner` is
  // the account it runs as (its grant at each write). `connection` is JSON with its secrets
  // sealed (enc:v1:…, the connections key); `items` is JSON.
  `CREATE TABLE collectors (
     id TEXT PRIMARY KEY,
     owner TEXT NOT NULL,
     name TEXT NOT NULL,
     kind TEXT NOT NULL,
     enabled INTEGER NOT NULL,
     organization TEXT NOT NULL,
     site TEXT NOT NULL,
     unit TEXT NOT NULL,
     grid TEXT NOT NULL,
     connection TEXT NOT NULL,
     items TEXT NOT NULL,
     created_ms INTEGER NOT NULL,
     updated_ms INTEGER NOT NULL
   );`,
  // 13: ingest clients by clientId (meta/tables/ingest-clients.ts): every ingest request looks its
  // client up, and a scan of a large ingestconfigs table slowed every tenant's ingest. Not UNIQUE:
  // a store from before may hold two rows of one name (ingest answers 409 for it until one goes);
  // the entity rules refuse a second one from now on. The table is the registry's (schema.ts
  // makes it after the migrations, adding its columns); made here first on a new store so the
  // index has a table. The expression is the one the lookups use, word for word.
  `CREATE TABLE IF NOT EXISTS ingestconfigs (id INTEGER PRIMARY KEY AUTOINCREMENT, meta_data TEXT NOT NULL DEFAULT '{}');
   CREATE INDEX ingestconfigs_client_id ON ingestconfigs ((CASE WHEN json_valid(meta_data) THEN json_extract(meta_data, '$.clientId') END));`,
  // 14: who uploaded each blob key and attachment (the token's subject), for blob.quotaBytesPerUser
  // and so only the uploader (or an admin) replaces or deletes a key. Rows from before have no
  // owner: only an admin changes those.
  `ALTER TABLE blob_keys ADD COLUMN owner TEXT;
   ALTER TABLE attachments ADD COLUMN owner TEXT;
   CREATE INDEX blob_keys_owner ON blob_keys (owner);
   CREATE INDEX attachments_owner ON attachments (owner);`,
];
