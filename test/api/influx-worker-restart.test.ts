// Found by the soak run of issue 34: an InfluxQL `/query` whose statement was running in a
// storage worker that died had its connection cut, since the answer's head was sent before the
// statement ran. The first statement now runs before the answer starts, so its refusal (503,
// retry) reaches the client as an HTTP status, as on the other query routes.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { waitFor } from '../support/wait-for.js';
import { startService } from './harness.js';

const T0 = Date.UTC(2026, 0, 12, 8);
const SCOPE = { organization: 'acme', site: 'north', unit: 'boiler-1' };

test('InfluxQL queries in flight when a storage worker dies answer 200 or 503, never a cut connection', { timeout: 180_000 }, async (t) => {
  const svc = await startService({ config: { storage: { shards: 1 }, debug: { crashRoute: true }, ingest: { rateLimitPerMinute: 1_000_000 } } });
  t.after(() => svc.dispose());
  const admin = await svc.adminToken();
  assert.equal((await svc.post('/svcapi/ingestconfigs', { clientId: 'q', ...SCOPE, enabled: true }, admin)).status, 200);
  // Enough points that a query spends a few milliseconds in the worker.
  for (let tag = 0; tag < 4; tag++) {
    let body = '';
    for (let i = 0; i < 20_000; i++) body += `m,tag=T${tag} value=${(i % 97) / 10} ${T0 + i * 1000}\n`;
    const res = await svc.request('POST', '/write?db=q&precision=ms', { rawBody: body, token: admin, headers: { 'content-type': 'text/plain' } });
    assert.equal(res.status, 204, res.text);
  }
  const query = (tag: number) => `/query?db=q&epoch=ms&q=${encodeURIComponent(`SELECT mean("value") FROM "m" WHERE "tag" = 'T${tag}' AND time >= ${T0}ms AND time < ${T0 + 20_000_000}ms GROUP BY time(1m)`)}`;

  const outcomes = new Map<string, number>();
  let stop = false;
  const loops = Array.from({ length: 4 }, async (_, k) => {
    while (!stop) {
      const answer = await svc.request('GET', query(k), { token: admin }).then(
        (res) => String(res.status),
        (err: unknown) => `cut: ${err instanceof Error ? err.message : String(err)}`,
      );
      outcomes.set(answer, (outcomes.get(answer) ?? 0) + 1);
    }
  });
  for (let crash = 1; crash <= 3; crash++) {
    await waitFor(() => (outcomes.get('200') ?? 0) >= crash * 20, 'queries are answered');
    assert.equal((await svc.post('/svcapi/_debug/crash_shard', { shard: 0 }, admin)).status, 200);
    await waitFor(() => svc.logLines.filter((l) => l.includes('shard recovered')).length >= crash + 1, 'a new worker recovers the shard');
  }
  stop = true;
  await Promise.all(loops);
  const seen = [...outcomes].map(([answer, n]) => `${answer} ×${n}`).join(', ');
  for (const answer of outcomes.keys()) assert.ok(answer === '200' || answer === '503', `every query answered 200 or 503 (${seen})`);
});
