// Leader election and fencing on a real etcd with real nodes (WIRE.md part 2 "Cluster"): one
// leader; a secondary answers mutations 503 naming the leader and serves logins and reads;
// shadow writes are idempotent and refused from an older epoch; a frozen leader (SIGSTOP, a
// partition stand-in) stops accepting mutations once its lease could have run out, another node
// takes over, and the old one comes back as a secondary; a killed leader is replaced.

import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { ADMIN_EMAIL, ADMIN_PASSWORD, startService, tempDir, type TestService } from '../api/harness.js';
import { freePort } from '../support/ports.js';
import { waitFor } from '../support/wait-for.js';
import { ETCD_BIN, shareCa, TestEtcd } from './etcd.js';

const TTL_SECONDS = 2;
const skip = fs.existsSync(ETCD_BIN) ? false : `${ETCD_BIN} is not installed (apt-get install etcd-server; .ci/run does)`;

describe('cluster: election and fencing', { skip }, () => {
  let etcd: TestEtcd;
  const secretFile = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'cluster-secret-')), 'secret');
  const nodes: Array<{ id: string; svc: TestService; url: string; token: string }> = [];

  async function startNode(id: string): Promise<(typeof nodes)[number]> {
    const port = await freePort();
    const url = `https://localhost:${port}`;
    const dataDir = tempDir();
    // Every node's certificate comes from one CA, so nodes verify each other (WIRE: the operator
    // gives every node the same tls/ca.crt and ca.key before first start).
    if (nodes[0]) shareCa(nodes[0].svc.dataDir, dataDir);
    const svc = await startService({
      dataDir,
      config: { server: { port }, storage: { autoCreateCollections: true }, cluster: { enabled: true, nodeId: id, advertiseUrl: url, etcd: { endpoints: [etcd.endpoint] }, electionTtlSeconds: TTL_SECONDS, secretFile } },
    });
    // Only the first leader makes the first admin; the others have it once it replicated.
    let token = '';
    await waitFor(async () => {
      try {
        token = await svc.login(ADMIN_EMAIL, ADMIN_PASSWORD);
        return true;
      } catch {
        return false;
      }
    }, `the admin can log in on node ${id}`, { timeoutMs: 30_000, intervalMs: 100 });
    const node = { id, svc, url, token };
    nodes.push(node);
    return node;
  }

  const status = async (node: (typeof nodes)[number]) => (await node.svc.get('/svcapi/cluster/status', node.token)).body as { role: string; leader: string | null; epoch: number; node_id: string };
  const write = (node: (typeof nodes)[number], value: number) =>
    node.svc.request('POST', '/svcapi/create_collection', { token: node.token, body: { organization: 'o', site: 's', unit: 'u', grid: `g${value}` } });

  before(async () => {
    fs.writeFileSync(secretFile, crypto.randomBytes(48).toString('hex'), { mode: 0o600 });
    etcd = await TestEtcd.start();
  });
  after(async () => {
    for (const node of nodes) {
      try {
        node.svc.child.kill('SIGCONT');
      } catch {
        // already gone
      }
      await node.svc.dispose();
    }
    await etcd?.stop();
  });

  test('one leader; the secondary answers mutations 503 naming it, and serves logins and reads', async () => {
    const a = await startNode('a');
    await waitFor(async () => (await status(a)).role === 'leader', 'node a leads', { timeoutMs: 20_000, intervalMs: 100 });
    const b = await startNode('b');
    await waitFor(async () => (await status(b)).leader === a.url, 'node b knows a leads', { timeoutMs: 20_000, intervalMs: 100 });
    assert.equal((await status(b)).role, 'secondary');
    assert.ok((await status(a)).epoch > 0);

    const refused = await write(b, 1);
    assert.equal(refused.status, 503);
    assert.deepEqual(refused.body, { error: 'not the leader', leader: a.url });
    assert.equal(refused.headers['retry-after'], '1');
    assert.equal(refused.headers['x-historian-leader'], a.url);
    assert.equal((await write(a, 1)).status, 200);
    // Reads and logins on the secondary.
    assert.equal((await b.svc.get('/svcapi/collection', b.token)).status, 200);
    assert.ok(await b.svc.login(ADMIN_EMAIL, ADMIN_PASSWORD));
  });

  test('shadow writes: applied on a secondary, idempotent by (epoch, seq), refused from an older epoch', async () => {
    const [a, b] = nodes;
    const epoch = (await status(a)).epoch;
    const body = JSON.stringify({ organization: 'o', site: 's', unit: 'u', grid: 'g1', tags: { t: [[1_700_000_000_000, 1.5]] } });
    const shadow = (e: number, seq: number) =>
      b.svc.request('POST', '/svcapi/shadow_write', { token: b.token, rawBody: body, headers: { 'content-type': 'application/json', 'x-historian-epoch': String(e), 'x-historian-seq': String(seq) } });
    const first = await shadow(epoch, 1);
    assert.equal(first.status, 200, first.text);
    assert.deepEqual(first.body, { success: true, points: 1 });
    assert.deepEqual((await b.svc.get('/svcapi/fast_query?organization=o&site=s&unit=u&grid=g1&tags=t&start=0&end=1800000000000', b.token)).body, { t: [[1_700_000_000_000, 1.5]] });
    const again = await shadow(epoch, 1);
    assert.equal(again.status, 200);
    assert.deepEqual(again.body, { success: true, points: 1, duplicate: true });
    const stale = await shadow(epoch - 1, 7);
    assert.equal(stale.status, 409, stale.text);
    assert.match(stale.body.error, /older than/);
    const missingHeader = await b.svc.request('POST', '/svcapi/shadow_write', { token: b.token, rawBody: body, headers: { 'content-type': 'application/json' } });
    assert.equal(missingHeader.status, 400);
  });

  test('a frozen leader stops accepting mutations, another takes over, the old one comes back as a secondary', async () => {
    const [a, b] = nodes;
    a.svc.child.kill('SIGSTOP');
    await waitFor(async () => (await status(b)).role === 'leader', 'node b takes over while a is frozen', { timeoutMs: 30_000, intervalMs: 100 });
    assert.equal((await write(b, 2)).status, 200);
    a.svc.child.kill('SIGCONT');
    // The first mutation a sees after waking is refused: its lease ran out while it was frozen.
    const late = await write(a, 3);
    assert.equal(late.status, 503, late.text);
    await waitFor(async () => (await status(a)).leader === b.url, 'node a follows b', { timeoutMs: 20_000, intervalMs: 100 });
    assert.equal((await status(a)).role, 'secondary');
    assert.ok((await status(b)).epoch > 0);
  });

  test('a killed leader is replaced', async () => {
    const [a, b] = nodes;
    await b.svc.stop('SIGKILL');
    await waitFor(async () => (await status(a)).role === 'leader', 'node a leads again', { timeoutMs: 30_000, intervalMs: 100 });
    assert.equal((await write(a, 4)).status, 200);
  });
});
