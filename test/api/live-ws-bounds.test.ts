// What one user can make the live data service hold (issue 34 item 3): at most
// ws.maxSocketsPerUser sockets and ws.maxWatchedTagsPerUser tags over all its subscriptions, each
// refusal naming its setting; names no write could store are refused; the storage workers are
// told what a subscription changes, not the collection's whole list again (counted by
// historian_websocket_watch_tags_sent_total), and forget a socket's tags when it closes
// (historian_websocket_watched_tags). A read-only user sending 3 sockets × 20 subscriptions ×
// 1,000 made-up names, round after round, leaves the service's memory where it was.

import assert from 'node:assert/strict';
import fs from 'node:fs';
import { after, before, describe, test } from 'node:test';
import { waitFor } from '../support/wait-for.js';
import { accountHelpers, USER_PASSWORD } from './accounts.js';
import { startService, type TestService } from './harness.js';
import { Client } from './live-ws-support.js';

const SCOPE = { organization: 'acme', site: 'north', unit: 'boiler', grid: 'g1' };
const MAX_SOCKETS = 3;
const MAX_TAGS = 10_000;
const NAMES_PER_SUBSCRIPTION = 1000;
const SUBSCRIPTIONS_PER_SOCKET = 20;
const ROUNDS = 12;

describe('live data bounds per user', () => {
  let svc: TestService;
  let admin: string;
  let reader: string;
  const clients: Client[] = [];
  const { mk } = accountHelpers(() => svc, () => admin);
  const open = async (token: string) => {
    const c = await Client.open(svc, token);
    clients.push(c);
    return c;
  };
  /** One sample of GET /metrics (no labels); NaN when the family is not there (every comparison with it fails). */
  const metric = async (name: string): Promise<number> => {
    const res = await svc.request('GET', '/metrics', { token: admin });
    assert.equal(res.status, 200, res.text);
    const line = res.text.split('\n').find((l) => l.startsWith(`${name} `));
    return line ? Number(line.slice(name.length + 1)) : NaN;
  };
  /** The service process's resident memory, from /proc. */
  const rssBytes = () => Number(/VmRSS:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${svc.child.pid}/status`, 'utf8'))![1]) * 1024;
  const closeAll = async (sockets: Client[]) => {
    for (const c of sockets) c.ws.close();
    await waitFor(() => sockets.every((c) => c.closed !== null), 'the sockets are closed');
  };

  before(async () => {
    svc = await startService({ config: { ws: { batchMs: 20, maxSocketsPerUser: MAX_SOCKETS, maxWatchedTagsPerUser: MAX_TAGS } } });
    admin = await svc.adminToken();
    const unit = await mk('units', { name: SCOPE.unit, siteId: await mk('sites', { name: SCOPE.site, orgsId: await mk('orgs', { name: SCOPE.organization }) }) });
    assert.equal((await svc.request('POST', '/svcapi/create_collection', { token: admin, body: SCOPE })).status, 200);
    const user = await mk('users', { email: 'reader@plant.test', password: USER_PASSWORD, role: 'read-only' });
    await mk('userprofiles', { usersId: user, accessAllowed: { units: [unit] } });
    reader = await svc.login('reader@plant.test', USER_PASSWORD);
  });
  after(async () => {
    for (const c of clients) c.ws.terminate();
    await svc.dispose();
  });

  test('one socket more than ws.maxSocketsPerUser is closed with 1008 naming the setting; a closed one makes room', async () => {
    const sockets = [];
    for (let i = 0; i < MAX_SOCKETS; i++) sockets.push(await open(reader));
    const extra = await open(reader);
    await waitFor(() => extra.closed !== null, 'the extra socket is closed');
    assert.equal(extra.closed!.code, 1008);
    assert.match(extra.closed!.reason, new RegExp(`ws\\.maxSocketsPerUser ${MAX_SOCKETS}`));
    // Another user is not counted with this one.
    const other = await open(admin);
    other.send({ op: 'subscribe', id: 'o', ...SCOPE, tags: ['flow'] });
    await other.next('subscribed', (m) => m.op === 'subscribed');
    await closeAll([sockets[0]]);
    const again = await open(reader);
    again.send({ op: 'subscribe', id: 's', ...SCOPE, tags: ['flow'] });
    await again.next('subscribed', (m) => m.op === 'subscribed');
    assert.equal(again.closed, null);
    await closeAll([...sockets.slice(1), again, other]);
  });

  test('names no write could store are refused, naming the problem', async () => {
    const c = await open(reader);
    c.send({ op: 'subscribe', id: 'long', ...SCOPE, tags: ['ok', 'x'.repeat(300)] });
    assert.match((await c.next('long refused', (m) => m.op === 'error' && m.id === 'long')).error, /longer than 256/);
    c.send({ op: 'subscribe', id: 'ctl', ...SCOPE, tags: ['a\u0001b'] });
    assert.match((await c.next('control refused', (m) => m.op === 'error' && m.id === 'ctl')).error, /control characters/);
    await closeAll([c]);
  });

  test('made-up names, round after round: ws.maxWatchedTagsPerUser refuses past the limit, the workers get deltas, memory stays put, a close frees the watch', async (t) => {
    const sockets: Client[] = [];
    for (let i = 0; i < MAX_SOCKETS; i++) sockets.push(await open(reader));
    const accepted = MAX_TAGS / NAMES_PER_SUBSCRIPTION;
    const attempts = MAX_SOCKETS * SUBSCRIPTIONS_PER_SOCKET;
    const sentBefore = await metric('historian_websocket_watch_tags_sent_total');
    let rssFirst = 0;
    /** Every socket sends its subscriptions of fresh names; the answers are counted. */
    const round = async (r: number) => {
      const from = sockets.map((c) => c.messages.length);
      sockets.forEach((c, s) => {
        for (let i = 0; i < SUBSCRIPTIONS_PER_SOCKET; i++) {
          const tags = Array.from({ length: NAMES_PER_SUBSCRIPTION }, (_, t) => `made-up/r${r}/s${s}/sub${i}/tag-${t}`);
          c.send({ op: 'subscribe', id: `r${r}-${i}`, ...SCOPE, tags });
        }
      });
      const answers = () => sockets.flatMap((c, s) => c.messages.slice(from[s]).filter((m) => m.op === 'subscribed' || m.op === 'error'));
      try {
        await waitFor(() => answers().length >= attempts, `round ${r}: every subscribe is answered`, { timeoutMs: 30_000 });
      } catch (err) {
        // What each socket got, and what the service said about live data, so a hang shows its cause.
        const seen = sockets.map((c, s) => `socket ${s}: ${c.messages.length - from[s]} messages, closed ${JSON.stringify(c.closed)}, last ${JSON.stringify(c.messages.at(-1)).slice(0, 160)}`);
        const said = svc.logLines.filter((l) => /live data|watch/.test(l)).slice(-10);
        throw new Error(`${(err as Error).message}\n${seen.join('\n')}\n${said.join('\n')}`);
      }
      const subscribed = answers().filter((m) => m.op === 'subscribed');
      const refused = answers().filter((m) => m.op === 'error');
      assert.equal(subscribed.length, accepted, `round ${r}: ${accepted} subscriptions of ${NAMES_PER_SUBSCRIPTION} names fit in ws.maxWatchedTagsPerUser`);
      assert.equal(refused.length, attempts - accepted);
      for (const m of refused) assert.match(m.error, new RegExp(`ws\\.maxWatchedTagsPerUser ${MAX_TAGS}`));
      await waitFor(async () => (await metric('historian_websocket_watched_tags')) === MAX_TAGS, `round ${r}: the workers watch exactly the accepted names`);
      return subscribed;
    };
    for (let r = 0; r < ROUNDS; r++) {
      const subscribed = await round(r);
      for (const m of subscribed) sockets.find((c) => c.messages.includes(m))!.send({ op: 'unsubscribe', id: m.id });
      await waitFor(() => sockets.reduce((n, c) => n + c.messages.filter((m) => m.op === 'unsubscribed' && m.id.startsWith(`r${r}-`)).length, 0) === accepted, `round ${r}: unsubscribed`);
      await waitFor(async () => (await metric('historian_websocket_watched_tags')) === 0, `round ${r}: the workers forget the names`);
      if (r === 1) rssFirst = rssBytes(); // after a warm-up round
    }
    // Each accepted name went to the worker once when added and once when removed: nothing grows with what is already watched.
    assert.equal((await metric('historian_websocket_watch_tags_sent_total')) - sentBefore, ROUNDS * MAX_TAGS * 2);
    const rssLast = rssBytes();
    t.diagnostic(`service RSS ${Math.round(rssFirst / 1048576)} MB after round 2, ${Math.round(rssLast / 1048576)} MB after round ${ROUNDS}`);
    assert.ok(rssLast < rssFirst + 150 * 1024 * 1024, `RSS ${Math.round(rssLast / 1048576)} MB after ${ROUNDS} rounds, ${Math.round(rssFirst / 1048576)} MB after the second`);

    // Closing sockets with live subscriptions frees what the workers watch for them.
    await round(ROUNDS);
    await closeAll(sockets);
    await waitFor(async () => (await metric('historian_websocket_watched_tags')) === 0, 'the workers forget the names of closed sockets');
    assert.equal(await metric('historian_websocket_sockets_open'), 0);
  });
});
