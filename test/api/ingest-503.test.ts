// Found by the soak run of issue 34: a line protocol write that meets a full storage request
// ring (or a worker that does not answer in time) was answered 503 without Retry-After, while
// WIRE part 2 (Ingest, /ingest/v2) promises "503 with Retry-After under backpressure", and
// Telegraf and the Influx clients wait that long before they retry. A request ring of 64 KiB
// and bodies of about 24 KiB sent many at once make the ring full on purpose.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { startService } from './harness.js';

const T0 = Date.UTC(2026, 0, 12, 8);
const SCOPE = { organization: 'acme', site: 'north', unit: 'boiler-1' };

/** About 24 KiB of line protocol: less than half the ring, so each body goes as one frame. */
function body(round: number, k: number): string {
  let text = '';
  for (let i = 0; i < 400; i++) text += `bp,tag=T${k % 4} value=${round + i / 1000} ${T0 + round * 100_000 + k * 1000 + i}\n`;
  return text;
}

test('line protocol writes answered 503 by a full storage request ring carry Retry-After (1.x, 2.x and root write)', { timeout: 120_000 }, async (t) => {
  const svc = await startService({ config: { storage: { shards: 1, requestRingBytes: 65536 }, ingest: { rateLimitPerMinute: 1_000_000 } } });
  t.after(() => svc.dispose());
  const admin = await svc.adminToken();
  const client = await svc.post('/svcapi/ingestconfigs', { clientId: 'bp', ...SCOPE, enabled: true }, admin);
  assert.equal(client.status, 200, client.text);
  const paths = ['/ingest/v2/write?db=bp&precision=ms', '/ingest/v2/api/v2/write?bucket=bp&precision=ms', '/write?db=bp&precision=ms'];

  const unavailable: Array<{ path: string; retryAfter: unknown; text: string }> = [];
  const seen = new Set<string>();
  for (let round = 0; round < 40 && seen.size < paths.length; round++) {
    const answers = await Promise.all(
      Array.from({ length: 24 }, async (_, k) => {
        const path = paths[k % paths.length];
        const res = await svc.request('POST', path, { rawBody: body(round, k), token: admin, headers: { 'content-type': 'text/plain' } });
        return { path, res };
      }),
    );
    for (const { path, res } of answers) {
      assert.ok(res.status === 204 || res.status === 503, `${path}: ${res.status} ${res.text}`);
      if (res.status === 503) {
        seen.add(path);
        unavailable.push({ path, retryAfter: res.headers['retry-after'], text: res.text });
      }
    }
  }
  assert.ok(unavailable.length > 0, 'the ring was full at least once (else this test proves nothing)');
  for (const { path, retryAfter, text } of unavailable) {
    assert.match(String(retryAfter), /^\d+$/, `${path}: 503 with Retry-After in seconds (${text})`);
  }
});
