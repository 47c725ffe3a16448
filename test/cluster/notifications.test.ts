// The notification stream on a cluster (WIRE.md part 2 "Cluster": "the notification stream
// work[s] on secondaries; delivery marks made by a secondary's stream are sent to the leader"):
// a real EventSource client on a secondary receives a notification posted on the leader, live;
// what that stream delivered reaches the leader, so a client that reconnects to the leader with
// no Last-Event-ID is not sent it again; and the monitor's alarms are raised by the leader only.

import assert from 'node:assert/strict';
import fs from 'node:fs';
import { after, before, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { EventSource, type FetchLikeResponse } from 'eventsource';
import { Agent, fetch as undiciFetch } from 'undici';
import { waitFor } from '../support/wait-for.js';
import type { TestService } from '../api/harness.js';
import { ETCD_BIN } from './etcd.js';
import { TestCluster, type ClusterNode } from './nodes.js';

const skip = fs.existsSync(ETCD_BIN) ? false : `${ETCD_BIN} is not installed (apt-get install etcd-server; .ci/run does)`;

class Stream {
  readonly ids: number[] = [];
  replayed = false;
  private readonly es: EventSource;
  private readonly dispatcher: Agent;

  constructor(svc: TestService, token: string) {
    this.dispatcher = new Agent({ connect: { ca: svc.ca, servername: 'localhost' } });
    this.es = new EventSource(`https://127.0.0.1:${svc.port}/svcapi/notifications/stream`, {
      fetch: (input, init) => undiciFetch(input, { ...init, headers: { ...init.headers, authorization: `Bearer ${token}` }, dispatcher: this.dispatcher }) as unknown as Promise<FetchLikeResponse>,
    });
    this.es.addEventListener('notification', (e) => this.ids.push(Number((e as unknown as { lastEventId: string }).lastEventId)));
    this.es.addEventListener('replay-complete', () => (this.replayed = true));
  }

  async close(): Promise<void> {
    this.es.close();
    await this.dispatcher.destroy();
  }
}

describe('cluster: the notification stream on a secondary', { skip }, () => {
  const cluster = new TestCluster({ ttlSeconds: 2, writeAck: 'local', ackTimeoutMs: 2000 });
  let a: ClusterNode;
  let b: ClusterNode;

  before(async () => {
    await cluster.start();
    a = await cluster.startNode('a');
    b = await cluster.startNode('b');
  });
  after(() => cluster.dispose());

  test('a notification posted on the leader reaches a stream on the secondary live; its delivery is known to the leader', async () => {
    // The recipient has had a stream on the leader before, so the leader replays what it missed.
    const first = new Stream(a.svc, a.token);
    await waitFor(() => first.replayed, 'a first stream on a has replayed', { timeoutMs: 20_000 });
    await first.close();
    const onB = new Stream(b.svc, b.token);
    try {
      await waitFor(() => onB.replayed, 'the stream on b has replayed', { timeoutMs: 20_000 });
      const posted = await a.svc.request('POST', '/svcapi/notifications', { token: a.token, body: { severity: 'info', source: 'custom', title: 'from the leader', body: 'b must see it' } });
      assert.equal(posted.status, 201, posted.text);
      const id = Number(posted.body.id);
      await waitFor(() => onB.ids.includes(id), 'the stream on the secondary receives the leader\'s notification', { timeoutMs: 20_000 });
      // The secondary wrote down the delivery and sent it to the leader: the leader's row has its
      // deliveredAt, and a stream opened on the leader without Last-Event-ID does not replay it.
      await waitFor(async () => {
        const row = await a.svc.get(`/svcapi/notifications/${id}`, a.token);
        return row.status === 200 && row.body.deliveredAt !== null && row.body.deliveredAt !== undefined;
      }, 'the leader has the delivery the secondary made', { timeoutMs: 20_000, intervalMs: 200 });
      await sleep(2500); // the delivered ranges go out at the secondary's next write-down (every second)
      const onA = new Stream(a.svc, a.token);
      await waitFor(() => onA.replayed, 'the stream on a has replayed', { timeoutMs: 20_000 });
      await onA.close();
      assert.deepEqual(onA.ids, [], 'what the secondary delivered is not replayed by the leader');
    } finally {
      await onB.close();
    }
  });

  test('a secondary refuses to take delivery marks meant for the leader, and node routes refuse tokens', async () => {
    const marks = await b.svc.request('POST', '/svcapi/cluster/deliveries', { token: b.token, body: { ranges: [], delivered: [] } });
    assert.equal(marks.status, 401, 'an admin token is not a node credential');
    const pull = await a.svc.request('POST', '/svcapi/cluster/pull', { token: a.token, body: { position: {} } });
    assert.equal(pull.status, 401);
    const forged = await a.svc.request('POST', '/svcapi/cluster/replicate', { rawBody: '', headers: { authorization: `Node b.${Date.now()}.${'0'.repeat(64)}`, 'content-type': 'application/octet-stream', 'x-historian-epoch': '1' } });
    assert.equal(forged.status, 401, 'a credential not made with the cluster secret');
    assert.match(forged.body.error, /does not verify/);
  });
});
