// A node behind what the leader's log keeps takes a full snapshot (WIRE.md part 2 "Cluster"): the
// log is kept for about 2 s here (cluster.queueMaxAgeHours), a secondary is killed, the leader
// takes points, an entity and a user meanwhile and trims its log, and the secondary, restarted on
// its data dir, receives the leader's time series and metadata by snapshot and then follows the
// log again.

import assert from 'node:assert/strict';
import fs from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, test } from 'node:test';
import { waitFor } from '../support/wait-for.js';
import { ETCD_BIN } from './etcd.js';
import { TestCluster, type ClusterNode } from './nodes.js';

const skip = fs.existsSync(ETCD_BIN) ? false : `${ETCD_BIN} is not installed (apt-get install etcd-server; .ci/run does)`;
const SCOPE = { organization: 'plant', site: 'north', unit: 'boiler', grid: 'g' };
const T0 = 1_700_000_000_000;
const KEEP_HOURS = 2 / 3600; // two seconds

describe('cluster: a snapshot for a node the log cannot bring up to date', { skip }, () => {
  const cluster = new TestCluster({ ttlSeconds: 2, writeAck: 'local', ackTimeoutMs: 2000, cluster: { queueMaxAgeHours: KEEP_HOURS } });
  let a: ClusterNode;
  let b: ClusterNode;
  const points = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => [T0 + (from + i) * 1000, (from + i) / 4] as [number, number]);

  before(async () => {
    await cluster.start();
    a = await cluster.startNode('a');
    b = await cluster.startNode('b');
  });
  after(() => cluster.dispose());

  test('a restarted secondary whose missing entries were trimmed gets everything by snapshot, then follows the log', async () => {
    assert.equal((await cluster.write(a, { ...SCOPE, tags: { flow: points(1, 50) } })).status, 200);
    await cluster.waitCaughtUp(a, [b], 'b has the first points');
    await cluster.kill(b);
    assert.equal((await cluster.write(a, { ...SCOPE, tags: { flow: points(51, 120), level: points(1, 10) } })).status, 200);
    const org = await a.svc.request('POST', '/svcapi/orgs', { token: a.token, body: { name: 'made while b was down' } });
    assert.equal(org.status, 200, org.text);
    const user = await a.svc.post('/svcapi/register', { email: 'late@plant.example', password: 'late-password-1', name: 'late' });
    assert.equal(user.body?.success, true, user.text);
    // Every entry b lacks is older than the log's age bound once this has passed, and trimmed.
    await sleep(3000);
    await cluster.restart(b);
    await waitFor(async () => {
      const peers = (await cluster.status(a)).peers;
      return peers.some((p) => p.node_id === 'b' && p.lag_ms === 0);
    }, 'b caught up (by snapshot)', { timeoutMs: 60_000, intervalMs: 200 });
    assert.ok(b.svc.logLines.some((l) => l.includes('installed the leader\'s snapshot')), 'b took a snapshot (its log says so)');
    const expected = await cluster.query(a, SCOPE, ['flow', 'level'], 0, T0 + 10_000_000);
    assert.equal(expected.flow.length, 120);
    assert.deepEqual(await cluster.query(b, SCOPE, ['flow', 'level'], 0, T0 + 10_000_000), expected, 'b holds the leader\'s points');
    const orgs = (await b.svc.get('/svcapi/orgs', b.token)).body as Array<{ name: string }>;
    assert.deepEqual(orgs.map((o) => o.name), ['made while b was down']);
    assert.ok(await b.svc.login('late@plant.example', 'late-password-1'), 'the user registered meanwhile logs in on b');

    // And it follows the log again.
    assert.equal((await cluster.write(a, { ...SCOPE, tags: { flow: points(121, 130) } })).status, 200);
    await waitFor(async () => (await cluster.query(b, SCOPE, ['flow'], 0, T0 + 10_000_000)).flow?.length === 130, 'b receives the next write', { timeoutMs: 20_000 });
  });
});
