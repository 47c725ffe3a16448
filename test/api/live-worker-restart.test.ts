// Found by the soak run of issue 34: after a storage worker died, the first writes its successor
// took from the request ring were stored and acknowledged but never reached the live-data
// subscribers of their tags: the new worker started with no watched tags and learned them only
// once it had answered its first task, while writes do not wait for that.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import WebSocket from 'ws';
import { waitFor } from '../support/wait-for.js';
import { startService } from './harness.js';

const SCOPE = { organization: 'acme', site: 'north', unit: 'boiler-1', grid: 'main' };

test('the first write after a storage worker restart reaches the live subscribers of its tags', { timeout: 120_000 }, async (t) => {
  const svc = await startService({ config: { storage: { shards: 1 }, debug: { crashRoute: true } } });
  t.after(() => svc.dispose());
  const admin = await svc.adminToken();
  assert.equal((await svc.post('/svcapi/create_collection', SCOPE, admin)).status, 200);
  const write = async (value: number) => {
    const res = await svc.post('/svcapi/write_fast', { ...SCOPE, tags: { LIVE: [[Date.UTC(2026, 0, 12) + value, value]] } }, admin);
    assert.equal(res.body?.success, true, res.text);
  };
  await write(0);

  const received = new Set<number>();
  let subscribed = false;
  const ws = new WebSocket(`wss://localhost:${svc.port}/svcapi/ws`, { ca: svc.ca, headers: { authorization: `Bearer ${admin}` } });
  t.after(() => ws.terminate());
  ws.on('message', (data: Buffer) => {
    const message = JSON.parse(data.toString('utf8')) as { op: string; tags?: Record<string, Array<[number, number]>> };
    if (message.op === 'subscribed') subscribed = true;
    if (message.op === 'points') for (const [, value] of message.tags?.LIVE ?? []) received.add(value);
  });
  await new Promise((resolve, reject) => ws.once('open', resolve).once('error', reject));
  ws.send(JSON.stringify({ op: 'subscribe', id: 'a', ...SCOPE, tags: ['LIVE'], format: 'json' }));
  await waitFor(() => subscribed, 'the subscription is acknowledged (points flow from then on)');
  await write(1);
  await waitFor(() => received.has(1), 'a point written before the restart arrives');

  const crash = await svc.post('/svcapi/_debug/crash_shard', { shard: 0 }, admin);
  assert.equal(crash.status, 200, crash.text);
  // Right after the kill, while the successor recovers the shard: these wait in the ring for it.
  for (let value = 2; value <= 4; value++) await write(value);
  await waitFor(() => svc.logLines.filter((l) => l.includes('shard recovered')).length >= 2, 'a new worker recovers the shard');
  await write(5);
  await waitFor(() => received.has(5), 'a point written after the restart arrives');
  assert.deepEqual([...received].sort((a, b) => a - b), [1, 2, 3, 4, 5], 'every acknowledged point reached the subscriber');
});
