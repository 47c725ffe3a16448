// Issue 12 item 7: `regexp` filters run on the linear-time matcher with a
// per-query step budget (meta.regexpBudgetSteps), never on V8's backtracking
// engine, so no pattern and no stored value can stall the main thread.

import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { startService, type TestService } from './harness.js';

const w = (where: unknown) => `where=${encodeURIComponent(JSON.stringify(where))}`;
const q = (filter: unknown) => `filter=${encodeURIComponent(JSON.stringify(filter))}`;
const A8K = 'a'.repeat(8192);

describe('regexp filters at the default budget', () => {
  let svc: TestService;
  let admin: string;
  let ids: string[] = [];
  before(async () => {
    svc = await startService();
    admin = await svc.adminToken();
    // 200 values of 8,192 a: V8 needs seconds for /a*b/ over them (its old time budget cut it off)
    const rows = Array.from({ length: 200 }, (_, i) => ({ name: i === 199 ? `${A8K}b` : A8K, n: i }));
    const created = await svc.post('/svcapi/labels/bulk', rows, admin);
    assert.equal(created.status, 200, created.text.slice(0, 200));
    ids = created.body.map((row: { id: string }) => row.id);
  });
  after(() => svc.dispose());

  test('the stalling pattern /a*b/ over 200 values of 8 KiB answers from no-grant clients, matching whole values', async () => {
    const clients = await Promise.all([1, 2, 3, 4].map((n) => svc.newUser(`regexp-${n}@example.test`)));
    const replies = await Promise.all(
      clients.flatMap((token) => [
        svc.get(`/svcapi/labels?${q({ where: { name: { regexp: '/a*b/' } }, fields: ['id'] })}`, token),
        svc.get(`/svcapi/labels/count?${w({ name: { regexp: '/a*b/' } })}`, token),
        svc.get('/ingest/health'),
      ]),
    );
    for (let k = 0; k < clients.length; k++) {
      const [list, count, health] = replies.slice(3 * k, 3 * k + 3);
      assert.equal(list.status, 200, list.text);
      assert.deepEqual(list.body, [{ id: ids[199] }], 'the b after 8,192 characters is found: values are not cut');
      assert.deepEqual(count.body, { count: 1 });
      assert.equal(health.status, 200);
    }
  });

  test('patterns that backtrack catastrophically in JavaScript answer; backreferences and lookaround are 400', async () => {
    const nested = await svc.get(`/svcapi/labels/count?${w({ name: { regexp: '/^(a+)+$/' } })}`, admin);
    assert.equal(nested.status, 200, nested.text);
    assert.deepEqual(nested.body, { count: 199 });
    const quantified = await svc.get(`/svcapi/labels/count?${w({ name: { regexp: '/(.*a){20}b$/' } })}`, admin);
    assert.deepEqual(quantified.body, { count: 1 });
    for (const [pattern, reason] of [
      ['/(a)\\1/', /backreferences are not supported/],
      ['/a(?=b)/', /lookahead and lookbehind are not supported/],
      ['/(?<!a)b/', /lookahead and lookbehind are not supported/],
    ] as const) {
      const res = await svc.get(`/svcapi/labels?${q({ where: { name: { regexp: pattern } } })}`, admin);
      assert.equal(res.status, 400, pattern);
      assert.match(res.body.error, reason);
    }
  });
});

describe('regexp step budget (meta.regexpBudgetSteps)', () => {
  let svc: TestService;
  let admin: string;
  let first = 0;
  before(async () => {
    svc = await startService({ config: { meta: { regexpBudgetSteps: 100_000 } } });
    admin = await svc.adminToken();
    const created = await svc.post('/svcapi/connections/bulk', Array.from({ length: 20 }, () => ({ blob: A8K })), admin);
    assert.equal(created.status, 200);
    first = Number(created.body[0].id);
  });
  after(() => svc.dispose());

  test('a query over the budget is a 400 naming it; a narrower where, and the next request, answer', async () => {
    // 20 values of 8,192 characters: about 164,000 steps
    const over = await svc.get(`/svcapi/connections?${w({ blob: { regexp: '/a*b/' } })}`, admin);
    assert.equal(over.status, 400);
    assert.match(over.body.error, /regexp evaluation exceeded its budget of 100000 steps \(meta\.regexpBudgetSteps\)/);
    const deleted = await svc.request('DELETE', `/svcapi/connections?${w({ blob: { regexp: '/a*b/' } })}`, { token: admin });
    assert.equal(deleted.status, 400, 'a delete stops before deleting anything');
    assert.equal((await svc.get('/svcapi/connections/count', admin)).body.count, 20);
    const narrow = await svc.get(`/svcapi/connections/count?${w({ id: { lt: first + 10 }, blob: { regexp: '/a*b/' } })}`, admin);
    assert.equal(narrow.status, 200, narrow.text);
    assert.deepEqual(narrow.body, { count: 0 });
    assert.equal((await svc.get('/ingest/health')).status, 200);
  });
});
