// The replication log's packed write bodies (src/cluster/entry-body.ts) and trimming what every
// node holds (ChangeLog.trimHeld), on real SQLite files: a packed body unpacks to the bytes
// received; an entry logged by the build before packing (no `z`, the body as received) is still
// shipped and applied as it is; trimming drops only what is held, never a pending write, and a
// node behind a trimmed gap is sent nothing past it.

import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import zlib from 'node:zlib';
import { after, describe, test } from 'node:test';
import { Applier } from '../../src/cluster/applier.js';
import { ChangeLog } from '../../src/cluster/change-log.js';
import { packBody, unpackBody } from '../../src/cluster/entry-body.js';
import { toFrame } from '../../src/cluster/replicator.js';
import { openMetadataDb, type Db } from '../../src/meta/database.js';
import { MetaEvents } from '../../src/meta/events.js';
import type { MetaStore } from '../../src/meta/store.js';
import { Registry } from '../../src/meta/registry.js';
import { syncEntitySchema } from '../../src/meta/schema.js';
import { WholeStore } from '../../src/meta/whole-store.js';
import type { Logger } from '../../src/log.js';
import type { PointWriter, ReplicationHooks } from '../../src/storage/api.js';
import { decodeFrames, encodeFrames } from '../../native-free-codecs/replication-frames.js';
import { encodeBinaryBatch } from '../../native-free-codecs/write-body.js';

const SCOPE = { organization: 'plant', site: 'north', unit: 'boiler', grid: 'g' };

function hsw1Body(rows: number, t0 = 1_700_000_000_000, step = 1000): Uint8Array {
  const ts = Array.from({ length: rows }, (_, i) => t0 + i * step);
  return encodeBinaryBatch(SCOPE, ts, [{ name: 'flow', values: ts.map((_, i) => Math.round(Math.sin(i / 50) * 1e4) / 100) }, { name: 'step', values: ts.map((_, i) => (i >> 6) % 3) }]);
}

describe('cluster: packed write bodies and trimming what every node holds', () => {
  const opened: Array<{ db: Db; dir: string }> = [];
  const open = () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'log-packing-'));
    const db = openMetadataDb(dir);
    const registry = new Registry();
    syncEntitySchema(db, registry);
    const wholeStore = new WholeStore(db, registry, new MetaEvents());
    const log = new ChangeLog(db, wholeStore);
    log.installTriggers();
    opened.push({ db, dir });
    return { db, log, wholeStore };
  };
  after(() => {
    for (const s of opened) {
      s.db.close();
      fs.rmSync(s.dir, { recursive: true, force: true });
    }
  });

  test('HSW1 bodies pack (columns coded, or timestamps differenced) and unpack to the bytes received; other bodies pack as they are; compressed ones are kept', () => {
    const hsw1 = hsw1Body(2000);
    const packed = packBody(hsw1, undefined);
    assert.equal(packed.z, 'cols');
    assert.ok(packed.body.byteLength * 4 < hsw1.byteLength, `packed to ${packed.body.byteLength} of ${hsw1.byteLength} bytes`);
    assert.deepEqual(Buffer.from(unpackBody(packed.body, packed.z)), Buffer.from(hsw1));
    // Every bit of a value is kept (gaps, -0, full-precision doubles), and a body not 8-aligned in its buffer packs the same.
    const odd = encodeBinaryBatch(SCOPE, [1, 2, 3, 3, 9], [{ name: 'a', values: [NaN, -0, Math.PI, 1e300, -1.5] }, { name: 'bé', values: [0, 0, 0, 0, 1] }]);
    const shifted = new Uint8Array(odd.byteLength + 3).subarray(3);
    shifted.set(odd);
    const oddPacked = packBody(shifted, undefined);
    assert.equal(oddPacked.z, 'cols');
    assert.deepEqual(Buffer.from(unpackBody(oddPacked.body, oddPacked.z)), Buffer.from(odd));
    // Falling timestamps are not a column the storage codes: their differences are brotli'd.
    const falling = encodeBinaryBatch(SCOPE, Array.from({ length: 100 }, (_, i) => 1_700_000_000_000 - i * 1000), [{ name: 'x', values: Array.from({ length: 100 }, (_, i) => i) }]);
    const dts = packBody(falling, undefined);
    assert.equal(dts.z, 'br-dts');
    assert.deepEqual(Buffer.from(unpackBody(dts.body, dts.z)), Buffer.from(falling));
    // Timestamps that are not whole ms would not come back exactly from their differences.
    const fractional = encodeBinaryBatch(SCOPE, Array.from({ length: 100 }, (_, i) => 1_700_000_000_000.5 + i), [{ name: 'x', values: Array.from({ length: 100 }, (_, i) => i) }]);
    const plain = packBody(fractional, undefined);
    assert.equal(plain.z, 'br');
    assert.deepEqual(Buffer.from(unpackBody(plain.body, plain.z)), Buffer.from(fractional));
    const json = Buffer.from(JSON.stringify({ ...SCOPE, tags: { flow: Array.from({ length: 200 }, (_, i) => [1_700_000_000_000 + i * 1000, i / 4]) } }));
    const packedJson = packBody(json, undefined);
    assert.equal(packedJson.z, 'br');
    assert.deepEqual(Buffer.from(unpackBody(packedJson.body, packedJson.z)), json);
    const gz = zlib.gzipSync(json);
    assert.deepEqual(packBody(gz, 'gzip'), { body: gz }, 'a body that came compressed is kept as it came');
    assert.deepEqual(packBody(Buffer.from('{}'), undefined), { body: Buffer.from('{}') }, 'a tiny body is kept');
    assert.throws(() => unpackBody(packed.body, 'zstd'), /does not know/);
  });

  test('a write entry of the old shape (the body as received) and a packed one both reach the writer as the bytes received', async () => {
    const leader = open();
    leader.log.startRecording(3);
    const body = hsw1Body(500);
    // As the build before packing logged it: no `z`, the body as it came.
    leader.log.append('write', JSON.stringify({ ct: 'application/octet-stream', mode: 'sync', o: {} }), body);
    const packed = packBody(body, undefined);
    leader.log.append('write', JSON.stringify({ ct: 'application/octet-stream', mode: 'sync', o: {}, z: packed.z }), packed.body);
    const frames = decodeFrames(encodeFrames(leader.log.read(0, 10, 1 << 20).map(toFrame)));

    const follower = open();
    const received: Buffer[] = [];
    const writer = { write: async (_grant: unknown, b: Uint8Array) => (received.push(Buffer.from(b)), { success: true, points: 1000 }) } as unknown as PointWriter;
    const meta = { grantAll: () => ({}), wholeStore: follower.wholeStore, events: new MetaEvents() } as unknown as MetaStore;
    const quiet = { info() {}, warn() {}, error() {}, debug() {} } as unknown as Logger;
    const applier = new Applier({ meta, changeLog: follower.log, writer, replication: {} as ReplicationHooks, log: quiet });
    assert.deepEqual(await applier.apply(frames), { held: 2, error: null });
    assert.deepEqual(received, [Buffer.from(body), Buffer.from(body)]);
    // A packed write a crash left pending is stored again from its unpacked body.
    const pendingId = leader.log.appendPending('write', JSON.stringify({ ct: 'application/octet-stream', mode: 'sync', o: {}, z: packed.z }), packed.body);
    const [left] = new ChangeLog(leader.db, leader.wholeStore).leftPending();
    assert.equal(left.id, pendingId);
    received.length = 0;
    assert.equal(await applier.redo(left), true);
    assert.deepEqual(received, [Buffer.from(body)]);
    // The follower keeps each entry in the shape it came in, so it ships them on unchanged.
    assert.deepEqual(follower.log.read(0, 10, 1 << 20).map((e) => [e.seq, e.body!.byteLength, (JSON.parse(e.meta) as { z?: string }).z]), [[1, body.byteLength, undefined], [2, packed.body.byteLength, 'cols']]);
  });

  test('trimming what every node holds drops only that, never a pending write; nothing is sent past a trimmed gap', () => {
    const { log } = open();
    log.startRecording(5);
    for (let i = 1; i <= 6; i++) log.append('collection', JSON.stringify({ i }), null);
    const pending = log.appendPending('write', '{}', Buffer.from('pending'));
    assert.deepEqual(log.position(), { 5: 7 });
    assert.equal(log.trimHeld({ 5: 7 }), 6, 'everything held but the pending write');
    assert.deepEqual(log.leftPending().map((e) => e.id), [pending]);
    log.commit(pending);
    log.append('collection', '{}', null);
    assert.equal(log.trimHeld({ 5: 0 }), 0);
    // A node at seq 3 lacks entries 4-6, which are gone: it gets none of what follows them.
    assert.deepEqual(log.missingFrom({ 5: 3 }, 100, 1 << 20), []);
    assert.equal(log.cursorFor({ 5: 3 }), 'gap');
    assert.deepEqual(log.missingFrom({ 5: 6 }, 100, 1 << 20).map((e) => e.seq), [7, 8]);
    assert.equal(log.totalBytes(), log.read(0, 100, 1 << 20).reduce((n, e) => n + e.bytes, 0), 'the size follows the trimming');
  });
});
