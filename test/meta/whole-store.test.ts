// The whole-store operations on real SQLite files: a SQLite restore replaces every row of the
// data (and tells the caches through the store's events, before and after), but keeps this
// node's own bookkeeping (the cluster's replication log, its position, term and peers, the
// shadow writes it applied), which describes the node and not the data.

import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, test } from 'node:test';
import { ServiceClock } from '../../src/clock.js';
import { createLogger } from '../../src/log.js';
import { MetaStore } from '../../src/meta/store.js';
import { UnsoundCopyError } from '../../src/meta/whole-store.js';

const dirs: string[] = [];
after(() => dirs.forEach((d) => fs.rmSync(d, { recursive: true, force: true })));

function open(): MetaStore {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'whole-store-'));
  dirs.push(dir);
  return MetaStore.open({ dataDir: dir, maxListRows: 1000, regexpBudgetSteps: 100_000 }, new ServiceClock(), createLogger('silent'));
}

const bookkeeping = (meta: MetaStore) => ({
  log: meta.db.prepare('SELECT epoch, seq, kind FROM cluster_log ORDER BY id').all(),
  epochs: meta.db.prepare('SELECT epoch, max_seq FROM cluster_epochs ORDER BY epoch').all(),
  term: meta.db.prepare('SELECT epoch, recording, log_bytes FROM cluster_term').all(),
  peers: meta.db.prepare('SELECT node_id, url FROM cluster_peers ORDER BY node_id').all(),
  shadow: meta.db.prepare('SELECT epoch, seq, points FROM shadow_writes_applied ORDER BY epoch, seq').all(),
  nextLogId: meta.db.prepare("SELECT seq FROM sqlite_sequence WHERE name = 'cluster_log'").pluck().get(),
});

function appendLog(meta: MetaStore, epoch: number, seq: number): void {
  meta.db.prepare("INSERT INTO cluster_log (epoch, seq, kind, meta, body, bytes, created_ms) VALUES (?, ?, 'row', '{}', NULL, 2, 0)").run(epoch, seq);
  meta.db.prepare('INSERT INTO cluster_epochs (epoch, max_seq) VALUES (?, ?) ON CONFLICT (epoch) DO UPDATE SET max_seq = excluded.max_seq').run(epoch, seq);
}

test('a SQLite restore replaces the data and keeps the node\'s cluster bookkeeping; the caches hear of it before and after', async () => {
  const meta = open();
  const grant = meta.grantAll('test');
  const orgs = meta.registry.table('orgs');
  meta.entities.create(orgs, grant, { name: 'in-the-backup' });
  appendLog(meta, 7, 1);
  meta.db.prepare('UPDATE cluster_term SET epoch = 7, recording = 0, log_bytes = 2').run();
  meta.shadowWrites.recordApplied(7, 1, 10, 0);

  const backup = path.join(path.dirname(meta.db.name), 'backup.sqlite');
  await meta.wholeStore.backupTo(backup, () => {});

  // After the backup: the data moves on, and so does the node's log.
  meta.entities.create(orgs, grant, { name: 'after-the-backup' });
  appendLog(meta, 7, 2);
  appendLog(meta, 9, 1);
  meta.db.prepare('UPDATE cluster_term SET epoch = 9, recording = 1, log_bytes = 6').run();
  meta.db.prepare("INSERT INTO cluster_peers (node_id, url, acked_id, acked_ms, updated_ms) VALUES ('b', 'https://b:3030', 3, NULL, 0)").run();
  meta.shadowWrites.recordApplied(9, 1, 20, 0);
  const nodeOwn = bookkeeping(meta);

  const heard: string[] = [];
  meta.events.replacing.subscribe(() => heard.push('replacing'));
  meta.events.replaced.subscribe((tables) => heard.push(`replaced orgs:${tables.has('orgs')} cluster_log:${tables.has('cluster_log')}`));

  const copy = path.join(path.dirname(meta.db.name), 'copy.sqlite');
  fs.copyFileSync(backup, copy);
  meta.wholeStore.prepareCopy(copy);
  const restored = meta.wholeStore.replaceFrom(copy);
  assert.ok(restored.tables > 10 && restored.rows > 0, JSON.stringify(restored));

  assert.deepEqual(meta.entities.list(orgs, grant).map((o) => o.name), ['in-the-backup'], 'the data is the backup\'s');
  assert.deepEqual(bookkeeping(meta), nodeOwn, 'the log, position, term, peers and applied shadow writes are this node\'s, as before the restore');
  assert.deepEqual(heard, ['replacing', 'replaced orgs:true cluster_log:false']);
  await meta.close();
});

test('a file that is not a metadata store of this service is refused before anything changes', async () => {
  const meta = open();
  const junk = path.join(path.dirname(meta.db.name), 'junk.sqlite');
  fs.writeFileSync(junk, 'not a database at all, just bytes that happen to be long enough '.repeat(100));
  assert.throws(() => meta.wholeStore.prepareCopy(junk), (err) => err instanceof UnsoundCopyError && /not a SQLite database|integrity_check/.test(err.message));
  await meta.close();
});
