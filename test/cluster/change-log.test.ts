// The replication log on real SQLite files (src/cluster/change-log.ts): the triggers record every
// row change of a replicated table while the node records, in the change's own transaction, and
// nothing while it does not or while it applies another node's changes; positions, the shipping
// cursor and its gap after trimming; and a row change replayed on a second store gives the same row.

import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, describe, test } from 'node:test';
import { ChangeLog } from '../../src/cluster/change-log.js';
import { openMetadataDb, type Db } from '../../src/meta/database.js';
import { MetaEvents } from '../../src/meta/events.js';
import { Registry } from '../../src/meta/registry.js';
import { syncEntitySchema } from '../../src/meta/schema.js';
import { WholeStore } from '../../src/meta/whole-store.js';
import { decodeFrames, encodeFrames } from '../../native-free-codecs/replication-frames.js';

function store(): { db: Db; log: ChangeLog; dir: string } {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'change-log-'));
  const db = openMetadataDb(dir);
  const registry = new Registry();
  syncEntitySchema(db, registry);
  const log = new ChangeLog(db, new WholeStore(db, registry, new MetaEvents()));
  log.installTriggers();
  return { db, log, dir };
}

describe('cluster: the replication log', () => {
  const opened: Array<{ db: Db; dir: string }> = [];
  const open = () => {
    const s = store();
    opened.push(s);
    return s;
  };
  after(() => {
    for (const s of opened) {
      s.db.close();
      fs.rmSync(s.dir, { recursive: true, force: true });
    }
  });

  test('row changes are recorded only while recording, in order, with the epoch and counting seq', () => {
    const { db, log } = open();
    db.prepare("INSERT INTO users (email, password, meta_data) VALUES ('early@x.io', 'h', '{}')").run();
    assert.equal(log.lastId(), 0, 'nothing is recorded before the node leads');
    log.startRecording(7);
    db.prepare("INSERT INTO users (email, password, meta_data) VALUES ('a@x.io', 'h', '{\"role\":\"admin\"}')").run();
    db.prepare("UPDATE users SET username = 'A' WHERE email = 'a@x.io'").run();
    db.prepare("DELETE FROM users WHERE email = 'a@x.io'").run();
    db.prepare("INSERT INTO process_jobs (id, kind, status, started_ms, progress, message) VALUES ('j', 'k', 'running', 1, 0, '')").run();
    const entries = log.read(0, 100, 1 << 20);
    assert.deepEqual(entries.map((e) => [e.epoch, e.seq, e.kind, (JSON.parse(e.meta) as { op: string }).op]), [[7, 1, 'row', 'insert'], [7, 2, 'row', 'update'], [7, 3, 'row', 'delete']], 'the process log is node-local and not recorded');
    const update = JSON.parse(entries[1].meta) as { t: string; c: string[]; v: unknown[][] };
    assert.equal(update.t, 'users');
    const row = Object.fromEntries(update.c.map((c, i) => [c, update.v.flat()[i]]));
    assert.equal(row.email, 'a@x.io');
    assert.equal(row.username, 'A');
    assert.deepEqual(log.position(), { 7: 3 });

    // A rolled back change leaves no entry.
    assert.throws(() => db.transaction(() => {
      db.prepare("INSERT INTO users (email, password, meta_data) VALUES ('b@x.io', 'h', '{}')").run();
      throw new Error('roll back');
    })());
    assert.equal(log.lastId(), 3);
    // Changes applied from another node are silent.
    log.silently(() => db.prepare("INSERT INTO users (email, password, meta_data) VALUES ('c@x.io', 'h', '{}')").run());
    assert.equal(log.lastId(), 3);
    assert.equal(log.term().recording, true);
    log.stopRecording();
    db.prepare("INSERT INTO users (email, password, meta_data) VALUES ('d@x.io', 'h', '{}')").run();
    assert.equal(log.lastId(), 3);
  });

  test('positions, what a peer lacks, the shipping cursor, and a gap once the log is trimmed', () => {
    const { log } = open();
    log.startRecording(3);
    for (let i = 0; i < 5; i++) log.append('write', JSON.stringify({ ct: 'application/json', mode: 'sync', o: {} }), Buffer.from(`body ${i}`));
    log.startRecording(9);
    for (let i = 0; i < 2; i++) log.append('write', '{}', Buffer.from('x'));
    assert.deepEqual(log.position(), { 3: 5, 9: 2 });
    assert.deepEqual(log.missingFrom({ 3: 3 }, 100, 1 << 20).map((e) => [e.epoch, e.seq]), [[3, 4], [3, 5], [9, 1], [9, 2]]);
    assert.deepEqual(log.missingFrom({ 3: 5, 9: 2 }, 100, 1 << 20), []);
    assert.equal(log.cursorFor({ 3: 3 }), 3, 'shipping resumes after the third entry');
    assert.equal(log.cursorFor({ 3: 5, 9: 2 }), 7);
    assert.equal(log.trim(1 << 30, 3_600_000, Date.now() + 7_200_000), 7, 'everything is older than the age bound');
    assert.equal(log.cursorFor({ 3: 3 }), 'gap');
    const cursor = log.cursorFor({ 3: 5, 9: 2 });
    assert.notEqual(cursor, 'gap', 'a peer that holds everything has no gap');
    assert.deepEqual(log.read(cursor as number, 10, 1 << 20), []);
    log.append('write', '{}', Buffer.from('y'));
    assert.deepEqual(log.read(cursor as number, 10, 1 << 20).map((e) => [e.epoch, e.seq]), [[9, 3]], 'the next entry is the first shipped');
  });

  test('a write logged before it is stored ships only once stored; a refused one becomes a no-op; a crash leaves it for the next start', () => {
    const { db, log, dir } = open();
    log.startRecording(2);
    const first = log.appendPending('write', '{"ct":"application/json"}', Buffer.from('one'));
    const second = log.appendPending('write', '{"ct":"application/json"}', Buffer.from('two'));
    log.append('collection', '{}', null);
    assert.deepEqual(log.read(0, 10, 1 << 20), [], 'nothing at or after a pending write ships');
    assert.deepEqual(log.missingFrom({}, 10, 1 << 20), [], 'nor is it pulled');
    log.commit(first);
    assert.deepEqual(log.read(0, 10, 1 << 20).map((e) => [e.seq, e.kind]), [[1, 'write']]);
    log.abandon(second);
    assert.deepEqual(log.read(0, 10, 1 << 20).map((e) => [e.seq, e.kind, e.body]), [[1, 'write', Buffer.from('one')], [2, 'void', null], [3, 'collection', null]], 'the refused write keeps its seq, as a no-op');
    const third = log.appendPending('write', '{}', Buffer.from('three'));
    // The process dies here: the next start finds the entry still pending.
    const reopened = new ChangeLog(db, new WholeStore(db, new Registry(), new MetaEvents()));
    assert.deepEqual(reopened.leftPending().map((e) => [e.id, e.seq, e.body]), [[third, 4, Buffer.from('three')]]);
    assert.equal(reopened.read(3, 10, 1 << 20).length, 0);
    reopened.commit(third);
    assert.deepEqual(reopened.read(3, 10, 1 << 20).map((e) => e.seq), [4]);
    assert.ok(dir);
  });

  test('trimming by size keeps the newest entries within the bound, and the size follows', () => {
    const { log } = open();
    log.startRecording(1);
    for (let i = 0; i < 10; i++) log.append('write', '{}', new Uint8Array(98)); // 100 bytes each with the meta
    assert.equal(log.totalBytes(), 1000);
    assert.equal(log.trim(350, 3_600_000), 7);
    assert.equal(log.totalBytes(), 300);
    assert.deepEqual(log.read(0, 100, 1 << 20).map((e) => e.seq), [8, 9, 10]);
    assert.equal(log.trim(350, 3_600_000), 0, 'nothing more goes while within both bounds');
  });

  test('a recorded row change replays on another store as the same row, through the frame codec', () => {
    const leader = open();
    leader.log.startRecording(1);
    leader.db.prepare("INSERT INTO tag_mappings (external, tag, organization, site, unit, grid, meta_data) VALUES ('pi:\\\\srv\\t1', 't1', 'o', 's', 'u', 'g', '{\"k\":\"it''s\"}')").run();
    const frames = decodeFrames(encodeFrames(leader.log.read(0, 10, 1 << 20).map((e) => ({ epoch: e.epoch, seq: e.seq, kind: e.kind, meta: e.meta, created_ms: e.created_ms, body: e.body }))));
    assert.equal(frames.length, 1);
    const change = JSON.parse(frames[0].meta) as { t: string; c: string[]; v: unknown[][] };
    const follower = open();
    const values = change.v.flat();
    follower.db.prepare(`INSERT OR REPLACE INTO ${change.t} (${change.c.map((c) => `"${c}"`).join(', ')}) VALUES (${change.c.map(() => '?').join(', ')})`).run(values);
    assert.deepEqual(follower.db.prepare('SELECT * FROM tag_mappings').all(), leader.db.prepare('SELECT * FROM tag_mappings').all());
  });

  test('the frame codec refuses truncated and malformed bodies', () => {
    const bytes = encodeFrames([{ epoch: 1, seq: 1, kind: 'write', meta: '{}', created_ms: 5, body: new Uint8Array([1, 2, 3]) }]);
    assert.equal(decodeFrames(bytes)[0].body!.length, 3);
    assert.throws(() => decodeFrames(bytes.subarray(0, bytes.length - 1)), /truncated body/);
    assert.throws(() => decodeFrames(bytes.subarray(0, 2)), /truncated header length/);
    const bad = new Uint8Array(8);
    new DataView(bad.buffer).setUint32(0, 4, true);
    bad.set([0x7b, 0x7d, 0x20, 0x20], 4);
    assert.throws(() => decodeFrames(bad), /lacks/);
  });
});
