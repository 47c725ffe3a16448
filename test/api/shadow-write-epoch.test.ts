// Issue 34 item 13: an admin's shadow_write with a huge X-Historian-Epoch made every later write
// with a lower epoch 409 on a single node, for good (the epoch is remembered across restarts).
// With a token (not a node credential) an epoch above the term the node knows is a 400 naming the
// header, and changes nothing.

import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { startService, type TestService } from './harness.js';

const SCOPE = { organization: 'acme', site: 'north', unit: 'boiler-1', grid: 'shadow' };
const T0 = Date.UTC(2026, 0, 10);

describe('shadow_write epochs on a single node', () => {
  let svc: TestService;
  let admin: string;
  const shadow = (epoch: string, seq: number, v: number) =>
    svc.request('POST', '/svcapi/shadow_write', {
      token: admin,
      body: { ...SCOPE, tags: { SH: [[T0 + v, v]] } },
      headers: { 'x-historian-epoch': epoch, 'x-historian-seq': String(seq) },
    });

  before(async () => {
    svc = await startService();
    admin = await svc.adminToken();
    const created = await svc.post('/svcapi/create_collection', SCOPE, admin);
    assert.equal(created.body?.success, true, created.text);
  });
  after(() => svc?.dispose());

  test('an epoch above the term is 400 naming the header; later writes of the current term still apply', async () => {
    for (const epoch of ['999999999999999', '1']) {
      const refused = await shadow(epoch, 1, 1);
      assert.equal(refused.status, 400, `epoch ${epoch}: ${refused.text}`);
      assert.match(refused.body.error, /x-historian-epoch/);
    }
    const applied = await shadow('0', 1, 2);
    assert.equal(applied.status, 200, applied.text);
    assert.deepEqual(applied.body, { success: true, points: 1 });
    assert.equal((await shadow('0', 2, 3)).status, 200);
    assert.deepEqual((await shadow('0', 1, 2)).body, { success: true, points: 1, duplicate: true }, 'still idempotent by (epoch, seq)');
    const q = await svc.get(`/svcapi/fast_query?organization=acme&site=north&unit=boiler-1&grid=shadow&tags=SH&start=0&end=${T0 + 1000}`, admin);
    assert.deepEqual(q.body, { SH: [[T0 + 2, 2], [T0 + 3, 3]] }, 'the refused writes stored nothing');
    assert.equal((await svc.get('/svcapi/cluster/status', admin)).body.epoch, 0);
  });
});
