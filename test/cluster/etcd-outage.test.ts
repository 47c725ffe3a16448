// etcd gone and back under a two-node cluster (issue 34, "faults"; WIRE.md part 2 "Cluster").
// Writers keep sending to both nodes the whole time. While etcd is down, once the leader's lease
// could have run out, every write is answered the documented 503 "not the leader" with
// Retry-After 1 (no other answer, no hang), on both nodes: no node accepts writes without etcd,
// so there is never a second writer. When etcd is back the cluster elects a leader by itself,
// which takes writes again, and every acknowledged point is on both nodes.

import assert from 'node:assert/strict';
import fs from 'node:fs';
import { after, before, describe, test } from 'node:test';
import type { HttpResult } from '../api/harness.js';
import { waitFor } from '../support/wait-for.js';
import { ETCD_BIN } from './etcd.js';
import { TestCluster, type ClusterNode, type Points, type Scope } from './nodes.js';

const TTL_SECONDS = 2;
const T0 = 1_700_000_000_000;
const START = T0 - 1000;
const END = T0 + 86_400_000;
const SCOPE: Scope = { organization: 'plant', site: 'north', unit: 'boiler-1', grid: 'outage' };
const skip = fs.existsSync(ETCD_BIN) ? false : `${ETCD_BIN} is not installed (apt-get install etcd-server; .ci/run does)`;

describe('cluster: etcd gone and back', { skip }, () => {
  const cluster = new TestCluster({ ttlSeconds: TTL_SECONDS, writeAck: 'local', ackTimeoutMs: 3000 });
  let a: ClusterNode;
  let b: ClusterNode;

  before(async () => {
    await cluster.start();
    a = await cluster.startNode('a');
    await cluster.waitLeader([a], 'node a, alone, leads');
    b = await cluster.startNode('b');
    await cluster.waitFollowing(a, [b]);
  });
  after(() => cluster.dispose());

  test('writes during the outage get 503 "not the leader" on every node; after it a leader is elected by itself and every acknowledged point is on both nodes', { timeout: 180_000 }, async (t) => {
    const acked = new Map<number, number>(); // ts → value, one tag W
    const answers = { ok: 0, notLeader: 0, other: [] as string[] };
    /** Answers per phase: while etcd is down, after the lease must have run out, nothing may be acknowledged. */
    let phase: 'before' | 'outage' | 'fenced' | 'back' = 'before';
    const ackedWhileFenced: string[] = [];
    let seq = 0;
    let stop = false;

    const writer = async (node: ClusterNode) => {
      while (!stop) {
        const ts = T0 + seq++;
        const at = phase;
        let res: HttpResult;
        try {
          res = await cluster.write(node, { ...SCOPE, tags: { W: [[ts, ts - T0]] } });
        } catch (err) {
          answers.other.push(`${node.id} ${at}: ${(err as Error).message}`);
          continue;
        }
        if (res.status === 200 && res.body?.success === true) {
          answers.ok++;
          acked.set(ts, ts - T0);
          if (at === 'fenced' && phase === 'fenced') ackedWhileFenced.push(`${node.id} ts ${ts}`);
        } else if (res.status === 503 && res.body?.error === 'not the leader' && res.headers['retry-after'] === '1') {
          answers.notLeader++;
        } else {
          answers.other.push(`${node.id} ${at}: ${res.status} ${res.text.slice(0, 200)}`);
        }
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    };
    const writers = [writer(a), writer(b)];
    try {
      await waitFor(() => answers.ok >= 20, 'writes are acknowledged before the outage', { timeoutMs: 20_000 });

      await cluster.etcd!.kill();
      phase = 'outage';
      // The leader refuses writes once its lease could have run out (before another could be elected).
      await new Promise((resolve) => setTimeout(resolve, TTL_SECONDS * 1000 + 500));
      phase = 'fenced';
      const refusedBefore = answers.notLeader;
      await waitFor(() => answers.notLeader >= refusedBefore + 20, 'writes keep being answered (503) while etcd is down', { timeoutMs: 30_000 });
      for (const node of [a, b]) {
        const status = await cluster.tryStatus(node);
        assert.notEqual(status?.role, 'leader', `${node.id} does not call itself leader without etcd: ${JSON.stringify(status)}`);
      }

      await cluster.etcd!.restart();
      phase = 'back';
      const leader = await cluster.waitLeader([a, b], 'a leader is elected by itself once etcd is back', 3 * TTL_SECONDS * 1000 + 30_000);
      const okBack = answers.ok;
      await waitFor(() => answers.ok >= okBack + 20, `the new leader ${leader.id} acknowledges writes again`, { timeoutMs: 30_000 });
      stop = true;
      await Promise.all(writers);

      assert.deepEqual(answers.other, [], 'every write answered 200 or 503 "not the leader" with Retry-After 1');
      assert.deepEqual(ackedWhileFenced, [], 'no write acknowledged while etcd was down past the lease');
      t.diagnostic(`${answers.ok} writes acknowledged, ${answers.notLeader} refused 503 not the leader; leader after the outage: ${leader.id}`);

      const follower = leader === a ? b : a;
      await cluster.waitFollowing(leader, [follower], 30_000);
      await cluster.waitCaughtUp(leader, [follower], `${follower.id} up to date with ${leader.id}`);
      const want: Record<string, Points> = { W: [...acked.entries()].sort((x, y) => x[0] - y[0]) };
      for (const node of [leader, follower]) {
        const got = await cluster.query(node, SCOPE, ['W'], START, END);
        const have = new Set((got.W ?? []).map(([ts]) => ts));
        const missing = want.W!.filter(([ts]) => !have.has(ts));
        assert.deepEqual(missing, [], `every acknowledged point is on ${node.id}`);
      }
    } finally {
      stop = true;
      await Promise.all(writers);
    }
  });
});
