// Live data over WebSocket follows the account as it is now (issue 34 item 2): a subscription the
// caller's grant no longer reaches ends with an `error` message naming it, and no point of its
// tags arrives after that, while a subscription still inside the grant keeps flowing; a deleted
// account or a changed password closes the socket with 1008. Each within the recheck's second,
// not at the next minute's token check.

import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { waitFor } from '../support/wait-for.js';
import { accountHelpers, USER_PASSWORD } from './accounts.js';
import { startService, type TestService } from './harness.js';
import { Client } from './live-ws-support.js';

const T0 = 1_700_000_000_000;
const A = { organization: 'acme', site: 'north', unit: 'boiler-a', grid: 'g1' };
const B = { organization: 'acme', site: 'north', unit: 'boiler-b', grid: 'g1' };
/** Well under the minute of the old token check, and generous for a loaded machine. */
const SOON_MS = 10_000;

describe('live data follows grant changes and account changes', () => {
  let svc: TestService;
  let admin: string;
  const units: Record<string, string> = {};
  const clients: Client[] = [];
  const { call, mk, account } = accountHelpers(() => svc, () => admin);
  const open = async (token: string) => {
    const c = await Client.open(svc, token);
    clients.push(c);
    return c;
  };
  const write = async (scope: typeof A, ts: number, value: number) => {
    const res = await call(admin, 'POST', '/svcapi/write', { ...scope, tags: { flow: [[ts, value]] } });
    assert.equal(res.status, 200, res.text);
  };

  before(async () => {
    svc = await startService({ config: { ws: { batchMs: 20 } } });
    admin = await svc.adminToken();
    const site = await mk('sites', { name: 'north', orgsId: await mk('orgs', { name: 'acme' }) });
    units.a = await mk('units', { name: A.unit, siteId: site });
    units.b = await mk('units', { name: B.unit, siteId: site });
    for (const scope of [A, B]) assert.equal((await call(admin, 'POST', '/svcapi/create_collection', scope)).status, 200);
  });
  after(async () => {
    for (const c of clients) c.ws.terminate();
    await svc.dispose();
  });

  test('a narrowed grant ends the subscription it no longer reaches, with an error naming it; the other keeps flowing', async () => {
    const user = await account('narrowed@plant.test');
    const profile = await mk('userprofiles', { usersId: user.id, accessAllowed: { units: [units.a, units.b] } });
    const c = await open(await svc.login(user.email, USER_PASSWORD));
    c.send({ op: 'subscribe', id: 'a', ...A, tags: ['flow'] });
    c.send({ op: 'subscribe', id: 'b', ...B, tags: ['flow'] });
    await c.next('a subscribed', (m) => m.op === 'subscribed' && m.id === 'a');
    await c.next('b subscribed', (m) => m.op === 'subscribed' && m.id === 'b');
    await write(A, T0 + 1000, 1);
    await write(B, T0 + 1000, 1);
    await waitFor(() => c.points('a').flow?.length === 1 && c.points('b').flow?.length === 1, 'both subscriptions receive their point');

    assert.equal((await call(admin, 'PUT', `/svcapi/userprofiles/${profile}`, { accessAllowed: { units: [units.b] } })).status, 200);
    const ended = await c.next('the ended message of a', (m) => m.op === 'error' && m.id === 'a');
    assert.deepEqual(Object.keys(ended).sort(), ['error', 'id', 'op'], 'the error message of WIRE.md, field for field');
    assert.match(ended.error, /subscription ended: collection acme\/north\/boiler-a\/g1 is no longer within your grant/);
    const endedAt = c.messages.indexOf(ended);

    // Points written after the change: b's arrive, a's never do.
    for (const [i, ts] of [T0 + 2000, T0 + 3000].entries()) {
      await write(A, ts, 10 + i);
      await write(B, ts, 10 + i);
      await waitFor(() => c.points('b').flow?.some(([t]) => t === ts) ?? false, `b's point at ${ts} arrives`);
    }
    assert.deepEqual(c.points('b').flow, [[T0 + 1000, 1], [T0 + 2000, 10], [T0 + 3000, 11]]);
    assert.deepEqual(c.points('a').flow, [[T0 + 1000, 1]], 'nothing of a after the change');
    assert.equal(c.messages.slice(endedAt + 1).filter((m) => m.id === 'a').length, 0, 'no message for a after it ended');
    assert.equal(c.closed, null, 'the socket stays open');

    // Subscribing again is refused like any collection outside the grant; unsubscribing says there is nothing to end.
    c.send({ op: 'subscribe', id: 'a2', ...A, tags: ['flow'] });
    assert.match((await c.next('a2 refused', (m) => m.op === 'error' && m.id === 'a2')).error, /unknown collection/);
    c.send({ op: 'unsubscribe', id: 'a' });
    assert.match((await c.next('no subscription a', (m) => m.op === 'error' && m.id === 'a' && m !== ended)).error, /no subscription/);

    // Widened again: a new subscription works.
    assert.equal((await call(admin, 'PUT', `/svcapi/userprofiles/${profile}`, { accessAllowed: { units: [units.a, units.b] } })).status, 200);
    await waitFor(async () => (await call(user.token, 'GET', `/svcapi/fast_query?tags=flow&start=0&end=${T0 + 10_000}&${new URLSearchParams(A)}`)).status === 200, 'a is readable again');
    c.send({ op: 'subscribe', id: 'a3', ...A, tags: ['flow'] });
    await c.next('a3 subscribed', (m) => m.op === 'subscribed' && m.id === 'a3');
  });

  test('a deleted account\'s socket is closed with 1008', async () => {
    const user = await account('deleted@plant.test', { units: [units.a] });
    const c = await open(user.token);
    c.send({ op: 'subscribe', id: 'a', ...A, tags: ['flow'] });
    await c.next('subscribed', (m) => m.op === 'subscribed');
    assert.equal((await call(admin, 'DELETE', `/svcapi/users/${user.id}`)).status, 200);
    await waitFor(() => c.closed !== null, 'the socket is closed', { timeoutMs: SOON_MS });
    assert.equal(c.closed!.code, 1008);
    assert.match(c.closed!.reason, /no longer exists/);
  });

  test('a password change closes the sockets of older tokens with 1008', async () => {
    const user = await account('changed@plant.test', { units: [units.a] });
    const c = await open(user.token);
    c.send({ op: 'subscribe', id: 'a', ...A, tags: ['flow'] });
    await c.next('subscribed', (m) => m.op === 'subscribed');
    assert.equal((await call(admin, 'PUT', `/svcapi/users/${user.id}`, { password: 'reset-password-1' })).status, 200);
    await waitFor(() => c.closed !== null, 'the socket is closed', { timeoutMs: SOON_MS });
    assert.equal(c.closed!.code, 1008);
    assert.match(c.closed!.reason, /password changed/);
  });
});
