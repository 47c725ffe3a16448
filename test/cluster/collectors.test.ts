// Collectors on a cluster (WIRE.md part 3 "Plant collectors": "A collector runs on the leader
// only"): a collector saved on the leader is replicated to the secondary, runs on the leader only
// (the secondary's status says it does not lead), and when the leader is killed the new leader
// runs it: values published after the failover are stored there. Real etcd, real mosquitto.

import assert from 'node:assert/strict';
import fs from 'node:fs';
import { after, before, describe, test } from 'node:test';
import mqtt from 'mqtt';
import { Mosquitto, mosquittoSkip } from '../support/mosquitto.js';
import { waitFor } from '../support/wait-for.js';
import { ETCD_BIN } from './etcd.js';
import { TestCluster, type ClusterNode } from './nodes.js';

const SCOPE = { organization: 'acme', site: 'north', unit: 'line-1', grid: 'main' };
const skip = !fs.existsSync(ETCD_BIN) ? `${ETCD_BIN} is not installed (apt-get install etcd-server; .ci/run does)` : mosquittoSkip;

describe('cluster: a collector runs on the leader, and moves with the lead', { skip }, () => {
  const cluster = new TestCluster({ ttlSeconds: 2, writeAck: 'local', ackTimeoutMs: 2000 });
  let broker: Mosquitto;
  let a: ClusterNode;
  let b: ClusterNode;
  let publisher: mqtt.MqttClient;

  const status = async (node: ClusterNode, id: string) => {
    const res = await node.svc.get(`/svcapi/collectors/${id}/status`, node.token);
    return res.status === 200 ? (res.body as { state: string; error?: string; values_stored: number }) : null;
  };
  const last = async (node: ClusterNode, tag: string): Promise<number | null> => {
    const res = await node.svc.post('/svcapi/lastlist', { ...SCOPE, tags: [tag] }, node.token);
    return res.status === 200 ? (res.body[tag]?.[1] ?? null) : null;
  };

  before(async () => {
    broker = await Mosquitto.start();
    await cluster.start();
    a = await cluster.startNode('a');
    b = await cluster.startNode('b');
    publisher = await mqtt.connectAsync(broker.url, { clientId: 'cluster-test-publisher' });
  });
  after(async () => {
    await publisher?.endAsync(true);
    await cluster.dispose();
    await broker?.dispose();
  });

  test('saved on the leader: runs there only; after the leader is killed the new leader runs it', async () => {
    const created = await a.svc.post('/svcapi/collectors', {
      name: 'line 1', kind: 'mqtt', enabled: true, ...SCOPE,
      connection: { url: broker.url, client_id: 'historian-cluster-line1', clean: false },
      items: [{ topic: 'line1/+', format: 'value' }],
    }, a.token);
    assert.equal(created.status, 200, created.text);
    const id = created.body.id as string;
    await waitFor(async () => (await status(a, id))?.state === 'connected', 'the leader runs it', { timeoutMs: 30_000 });
    await waitFor(async () => (await status(b, id)) !== null, 'the definition reached the secondary', { timeoutMs: 30_000 });
    const onSecondary = (await status(b, id))!;
    assert.equal(onSecondary.state, 'disabled');
    assert.match(onSecondary.error ?? '', /leader/);

    await publisher.publishAsync('line1/speed', '41.5', { qos: 1 });
    await waitFor(async () => (await last(a, 'line1/speed')) === 41.5, 'stored by the leader', { timeoutMs: 30_000 });

    await a.svc.stop('SIGKILL');
    await waitFor(async () => (await status(b, id))?.state === 'connected', 'the new leader runs it', { timeoutMs: 60_000 });
    await publisher.publishAsync('line1/speed', '42.75', { qos: 1 });
    await waitFor(async () => (await last(b, 'line1/speed')) === 42.75, 'stored by the new leader', { timeoutMs: 30_000 });
  });
});
