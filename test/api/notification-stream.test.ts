// The notification stream GET /svcapi/notifications/stream (issue 14), checked from the contract
// alone: SPEC "Events", WIRE part 2 "Notifications" and the lead's decisions for issue 14.
// Two kinds of client read it: raw HTTPS (node:https) for the exact bytes and headers, and a real
// EventSource (the `eventsource` package over undici's fetch, trusting the service's CA) for what
// a Node or browser dashboard sees. Waits poll for the thing itself; no duration is asserted.

import assert from 'node:assert/strict';
import type { ClientRequest, IncomingHttpHeaders, IncomingMessage } from 'node:http';
import https from 'node:https';
import { StringDecoder } from 'node:string_decoder';
import { after, before, describe, test } from 'node:test';
import { EventSource, type FetchLikeResponse } from 'eventsource';
import { Agent, fetch as undiciFetch } from 'undici';
import { prng } from '../support/prng.js';
import { waitFor } from '../support/wait-for.js';
import { startService, type HttpResult, type TestService } from './harness.js';
import { parseSseBlock } from '../support/sse-block.js';
import { accountHelpers, filterQuery, USER_PASSWORD, type Account } from './accounts.js';

const STREAM = '/svcapi/notifications/stream';
const PASSWORD = USER_PASSWORD;
const enc = encodeURIComponent;
const filterQ = filterQuery;
const BASE = { severity: 'info', source: 'custom', title: 'stream test', body: 'body' };
/** A payload near the 16384-byte limit: 600 of these are ~9 MB of events, more than the kernel buffers of a loopback connection hold (~4.5 MB). */
const BIG_PAYLOAD = { blob: 'x'.repeat(15_000) };
const BIG_ROWS = 600;

// ---------------------------------------------------------------- raw client

interface SseEvent {
  /** The `event:` field; "message" when the block has none. */
  type: string;
  /** The block's own `id:` line, null when it has none. */
  id: string | null;
  data: string;
  /** The block as sent, with its closing blank line. */
  raw: string;
}

interface RawOptions {
  /** Sent as `Authorization: Bearer <token>`. */
  token?: string;
  /** Sent as the `access_token` query parameter. */
  accessToken?: string;
  /** Sent as the `Last-Event-ID` header. */
  lastEventId?: string | number;
  /** Sent as the `lastEventId` query parameter. */
  lastEventIdQuery?: string | number;
}

/**
 * One stream request on its own connection, parsed as it arrives (the SSE rules: lines, fields,
 * a blank line dispatches). Keeps the whole text, the events and the comment lines.
 */
class RawStream {
  status = 0;
  headers: IncomingHttpHeaders = {};
  text = '';
  events: SseEvent[] = [];
  /** Comment lines, each with the number of events dispatched before it. */
  comments: Array<{ line: string; afterEvents: number }> = [];
  retries: number[] = [];
  /** The response finished or the connection went away. */
  ended = false;
  /** It ended with its framing intact (the service ended it, nothing cut). */
  complete = false;
  error: string | null = null;
  readonly response: Promise<void>;
  private readonly req: ClientRequest;
  private res: IncomingMessage | null = null;
  private readonly decoder = new StringDecoder('utf8');
  private partial = '';
  private block: string[] = [];

  constructor(svc: TestService, opts: RawOptions) {
    const query = new URLSearchParams();
    if (opts.accessToken !== undefined) query.set('access_token', opts.accessToken);
    if (opts.lastEventIdQuery !== undefined) query.set('lastEventId', String(opts.lastEventIdQuery));
    const headers: Record<string, string> = { accept: 'text/event-stream' };
    if (opts.token !== undefined) headers.authorization = `Bearer ${opts.token}`;
    if (opts.lastEventId !== undefined) headers['last-event-id'] = String(opts.lastEventId);
    this.req = https.request({
      host: '127.0.0.1',
      servername: 'localhost',
      port: svc.port,
      method: 'GET',
      path: query.size ? `${STREAM}?${query}` : STREAM,
      headers,
      ca: svc.ca,
      agent: false,
    });
    this.response = new Promise((resolve, reject) => {
      this.req.on('error', (err) => {
        this.error ??= err.message;
        this.ended = true;
        reject(err);
      });
      this.req.on('response', (res) => {
        this.res = res;
        this.status = res.statusCode ?? 0;
        this.headers = res.headers;
        res.on('data', (chunk: Buffer) => this.onText(this.decoder.write(chunk)));
        res.on('end', () => {
          this.complete = res.complete;
          this.ended = true;
        });
        res.on('error', (err) => {
          this.error ??= err.message;
          this.ended = true;
        });
        res.on('close', () => {
          this.ended = true;
        });
        resolve();
      });
    });
    this.response.catch(() => {}); // reported through `error`/`ended` as well
    this.req.end();
  }

  private onText(text: string): void {
    this.text += text;
    this.partial += text;
    const lines = this.partial.split('\n');
    this.partial = lines.pop()!;
    for (const line of lines) this.onLine(line.endsWith('\r') ? line.slice(0, -1) : line);
  }

  private onLine(line: string): void {
    if (line !== '') {
      this.block.push(line);
      if (line.startsWith(':')) this.comments.push({ line, afterEvents: this.events.length });
      return;
    }
    const lines = this.block;
    this.block = [];
    const { event, id, data, retry } = parseSseBlock(lines);
    if (retry !== null) this.retries.push(retry);
    if (event !== null || data !== null) this.events.push({ type: event ?? 'message', id, data: data ?? '', raw: `${lines.join('\n')}\n\n` });
  }

  /** Parsed JSON of a non-stream answer (401, 400). */
  json(): any {
    return JSON.parse(this.text);
  }

  notifications(): SseEvent[] {
    return this.events.filter((e) => e.type === 'notification');
  }

  ids(): number[] {
    return this.notifications().map((e) => Number(e.id));
  }

  replayComplete(): SseEvent | undefined {
    return this.events.find((e) => e.type === 'replay-complete');
  }

  /** Notification ids sent before replay-complete. */
  replayIds(): number[] {
    const end = this.events.findIndex((e) => e.type === 'replay-complete');
    return this.events.slice(0, end < 0 ? this.events.length : end).filter((e) => e.type === 'notification').map((e) => Number(e.id));
  }

  /** Notification ids sent after replay-complete. */
  liveIds(): number[] {
    const end = this.events.findIndex((e) => e.type === 'replay-complete');
    return end < 0 ? [] : this.events.slice(end + 1).filter((e) => e.type === 'notification').map((e) => Number(e.id));
  }

  /** The `replayed` count of replay-complete. */
  replayed(): number {
    const done = this.replayComplete();
    assert.ok(done, 'replay-complete was sent');
    return JSON.parse(done.data).replayed as number;
  }

  pause(): void {
    this.res!.pause();
  }

  resume(): void {
    this.res!.resume();
  }

  close(): void {
    this.req.destroy();
  }

  untilReplayComplete(what: string, timeoutMs = 20_000): Promise<void> {
    return waitFor(() => this.replayComplete() !== undefined || this.ended, `${what}: replay-complete or the end`, { timeoutMs }).then(() => {
      assert.ok(this.replayComplete(), `${what}: replay-complete arrived (status ${this.status}, ended ${this.ended}, text ${this.text.slice(0, 300)})`);
    });
  }

  untilHas(id: number | string, what: string, timeoutMs = 20_000): Promise<void> {
    return waitFor(() => this.ids().includes(Number(id)), `${what}: event ${id} arrives`, { timeoutMs });
  }

  untilEnded(what: string, timeoutMs = 20_000): Promise<void> {
    return waitFor(() => this.ended, `${what}: the stream ends`, { timeoutMs });
  }
}

async function openRaw(svc: TestService, opts: RawOptions): Promise<RawStream> {
  const stream = new RawStream(svc, opts);
  await stream.response;
  return stream;
}

/** The exact bytes of one notification event. */
function expectedBlock(event: SseEvent): string {
  return `id: ${event.id}\nevent: notification\ndata: ${event.data}\n\n`;
}

// ---------------------------------------------------------------- EventSource client

interface EsOptions {
  /** Sent as `Authorization: Bearer <token>` by the fetch the client is given. */
  token?: string;
  accessToken?: string;
  lastEventIdQuery?: string | number;
}

/** A real EventSource client (the `eventsource` package) whose fetch trusts only the service's CA. */
class EsStream {
  readonly es: EventSource;
  events: Array<{ type: string; lastEventId: string; data: string }> = [];
  opens = 0;
  errors: Array<{ code?: number; message?: string }> = [];
  private readonly dispatcher: Agent;

  constructor(svc: TestService, opts: EsOptions) {
    const url = new URL(`https://127.0.0.1:${svc.port}${STREAM}`);
    if (opts.accessToken !== undefined) url.searchParams.set('access_token', opts.accessToken);
    if (opts.lastEventIdQuery !== undefined) url.searchParams.set('lastEventId', String(opts.lastEventIdQuery));
    const dispatcher = (this.dispatcher = new Agent({ connect: { ca: svc.ca, servername: 'localhost' } }));
    const auth: Record<string, string> = opts.token === undefined ? {} : { authorization: `Bearer ${opts.token}` };
    this.es = new EventSource(url, {
      fetch: (input, init) =>
        undiciFetch(input, { ...init, headers: { ...init.headers, ...auth }, dispatcher }) as unknown as Promise<FetchLikeResponse>,
    });
    for (const type of ['notification', 'replay-complete']) {
      this.es.addEventListener(type, (e) => {
        const m = e as unknown as { data: string; lastEventId: string };
        this.events.push({ type, lastEventId: m.lastEventId, data: m.data });
      });
    }
    this.es.addEventListener('open', () => this.opens++);
    this.es.addEventListener('error', (e) => {
      const err = e as unknown as { code?: number; message?: string };
      this.errors.push({ code: err.code, message: err.message });
    });
  }

  ids(): number[] {
    return this.events.filter((e) => e.type === 'notification').map((e) => Number(e.lastEventId));
  }

  replayComplete(): { data: string } | undefined {
    return this.events.find((e) => e.type === 'replay-complete');
  }

  untilReplayComplete(what: string, timeoutMs = 20_000): Promise<void> {
    return waitFor(() => this.replayComplete() !== undefined, `${what}: EventSource gets replay-complete (errors ${JSON.stringify(this.errors)})`, { timeoutMs });
  }

  untilHas(id: number | string, what: string, timeoutMs = 20_000): Promise<void> {
    return waitFor(() => this.ids().includes(Number(id)), `${what}: EventSource gets event ${id}`, { timeoutMs });
  }

  async close(): Promise<void> {
    this.es.close();
    await this.dispatcher.destroy();
  }
}

// ---------------------------------------------------------------- service helpers

function helpers(svcRef: () => TestService, adminRef: () => string) {
  const { call, mk, account } = accountHelpers(svcRef, adminRef);
  const notify = async (fields: Record<string, unknown> = {}): Promise<Record<string, any>> => {
    const res = await call(adminRef(), 'POST', '/svcapi/notifications', { ...BASE, ...fields });
    assert.equal(res.status, 201, `create: ${res.status} ${res.text.slice(0, 300)}`);
    return res.body;
  };
  /** Creates `count` rows, `parallel` requests at a time; returns their ids in ascending order. */
  const notifyMany = async (count: number, fields: (i: number) => Record<string, unknown>, parallel = 4): Promise<number[]> => {
    const ids: number[] = [];
    let next = 0;
    await Promise.all(Array.from({ length: parallel }, async () => {
      while (next < count) {
        const i = next++;
        ids.push(Number((await notify(fields(i))).id));
      }
    }));
    return ids.sort((a, b) => a - b);
  };
  /** The largest notification id so far (0 when none): Last-Event-ID for "only what comes next". */
  const maxId = async (): Promise<number> => {
    const res = await call(adminRef(), 'GET', `/svcapi/notifications?${filterQ({ order: 'id DESC', limit: 1 })}`);
    assert.equal(res.status, 200, res.text);
    return res.body.length ? Number(res.body[0].id) : 0;
  };
  return { call, mk, account, notify, notifyMany, maxId };
}

const range = (ids: number[], from: number, to: number) => ids.slice(from, to);

// ---------------------------------------------------------------- tests

describe('notification stream', { timeout: 240_000 }, () => {
  let svc: TestService;
  let admin: string;
  const { call, mk, account, notify, notifyMany, maxId } = helpers(() => svc, () => admin);
  const open: Array<RawStream | EsStream> = [];
  const raw = async (opts: RawOptions) => {
    const s = await openRaw(svc, opts);
    open.push(s);
    return s;
  };
  const es = (opts: EsOptions) => {
    const s = new EsStream(svc, opts);
    open.push(s);
    return s;
  };
  const closeAll = async () => {
    for (const s of open.splice(0)) await s.close();
  };

  before(async () => {
    // A queue large enough that the slow client below is never cut (that case has its own service).
    svc = await startService({ config: { debug: { clockRoute: true }, notifications: { streamQueueBytes: 16 * 1024 * 1024 } } });
    admin = await svc.adminToken();
  });
  after(async () => {
    await closeAll();
    await svc.dispose();
  });

  test('headers, then retry: 3000 and a comment, then replay-complete; 401 and 400 answers are not streams', async () => {
    const user = await account('headers@stream.test');
    const s = await raw({ token: user.token });
    await s.untilReplayComplete('fresh user');
    assert.equal(s.status, 200);
    assert.match(String(s.headers['content-type']), /^text\/event-stream\b/);
    assert.equal(s.headers['cache-control'], 'no-cache');
    assert.equal(s.headers['x-accel-buffering'], 'no');
    assert.match(s.text, /^retry: 3000\n:[^\n]*\n\n/, 'retry: 3000 and a comment line, then a blank line, first');
    assert.deepEqual(s.retries, [3000], 'retry is sent once');
    assert.equal(s.events.length, 1, 'nothing to replay for a fresh user');
    assert.equal(s.events[0].raw, 'event: replay-complete\ndata: {"replayed":0}\n\n', 'replay-complete carries no id line');
    await closeAll();

    const refused: Array<[string, RawOptions, number, RegExp | null]> = [
      ['no token', {}, 401, null],
      ['a bad token in the header', { token: 'not-a-token' }, 401, null],
      ['a bad token in the query', { accessToken: 'not-a-token' }, 401, null],
      ['a malformed Last-Event-ID', { token: user.token, lastEventId: 'abc' }, 400, /Last-Event-ID/i],
      ['a Last-Event-ID with trailing junk', { token: user.token, lastEventId: '12x' }, 400, /Last-Event-ID/i],
      ['a malformed lastEventId', { token: user.token, lastEventIdQuery: 'abc' }, 400, /lastEventId/],
    ];
    for (const [what, opts, status, names] of refused) {
      const r = await raw(opts);
      await r.untilEnded(what);
      assert.equal(r.status, status, `${what}: ${r.text}`);
      assert.doesNotMatch(String(r.headers['content-type']), /event-stream/, `${what}: not a stream`);
      const body = r.json();
      assert.equal(typeof body.error, 'string', `${what}: {error}`);
      if (names) assert.match(body.error, names, `${what}: the error names the parameter`);
    }
    await closeAll();
  });

  test('replay: undelivered rows oldest first, at most 100, then replay-complete {replayed}; the rest on the next connect; Last-Event-ID replays from there', async () => {
    const user = await account('replay@stream.test');
    const ids = await notifyMany(105, (i) => ({ userId: user.email, title: `replay ${i}` }));

    const first = await raw({ token: user.token });
    await first.untilReplayComplete('first connect');
    assert.deepEqual(first.replayIds(), range(ids, 0, 100), 'the 100 oldest, oldest first');
    assert.equal(first.replayComplete()!.raw, 'event: replay-complete\ndata: {"replayed":100}\n\n');
    for (const event of first.notifications()) {
      assert.equal(event.raw, expectedBlock(event), 'id, event and data lines, nothing else');
      const data = JSON.parse(event.data);
      assert.equal(String(data.id), event.id, 'the id line is the notification id');
      assert.equal(data.userId, user.email);
      assert.match(data.title, /^replay \d+$/);
    }
    first.close();

    const second = await raw({ token: user.token });
    await second.untilReplayComplete('second connect');
    assert.deepEqual(second.replayIds(), range(ids, 100, 105), 'the five not yet delivered');
    assert.equal(second.replayed(), 5);
    second.close();

    const third = await raw({ token: user.token });
    await third.untilReplayComplete('third connect');
    assert.equal(third.replayed(), 0, 'everything was delivered');
    third.close();

    // With Last-Event-ID the rows after it come again, delivered or not, at most 100.
    const byHeader = await raw({ token: user.token, lastEventId: ids[2] });
    await byHeader.untilReplayComplete('Last-Event-ID header');
    assert.deepEqual(byHeader.replayIds(), range(ids, 3, 103));
    assert.equal(byHeader.replayed(), 100);
    const byQuery = await raw({ token: user.token, lastEventIdQuery: ids[101] });
    await byQuery.untilReplayComplete('lastEventId query');
    assert.deepEqual(byQuery.replayIds(), range(ids, 102, 105));
    assert.equal(byQuery.replayed(), 3);

    // A real EventSource, token in the query (as a browser sends it), resuming after the first row.
    const client = es({ accessToken: user.token, lastEventIdQuery: ids[0] });
    await client.untilReplayComplete('EventSource');
    assert.deepEqual(client.ids(), range(ids, 1, 101));
    assert.deepEqual(JSON.parse(client.replayComplete()!.data), { replayed: 100 });
    await closeAll();
  });

  test('live: after replay-complete each new row arrives as id/event/data with the stored row; it then counts as delivered', async () => {
    const user = await account('live@stream.test');
    const s = await raw({ token: user.token });
    const client = es({ token: user.token });
    await s.untilReplayComplete('raw');
    await client.untilReplayComplete('EventSource');
    const rows = [
      await notify({ userId: user.email, severity: 'warn', source: 'monitor', title: 'Feed pump trip', body: 'Pump P-2 tripped', link: '/p2', redirect: true, payload: { tag: 'P-2', state: 'trip', é: 'ü' }, sourceRef: 'r-9', expiresAt: Date.now() + 3_600_000 }),
      await notify({ userId: user.email, title: 'second' }),
    ];
    for (const row of rows) {
      await s.untilHas(row.id, 'raw live');
      await client.untilHas(row.id, 'EventSource live');
    }
    assert.deepEqual(s.liveIds(), rows.map((r) => Number(r.id)));
    assert.deepEqual(client.ids(), rows.map((r) => Number(r.id)));
    for (const [i, row] of rows.entries()) {
      const event = s.notifications()[i];
      assert.equal(event.id, row.id);
      assert.equal(event.raw, `id: ${row.id}\nevent: notification\ndata: ${event.data}\n\n`);
      const data = JSON.parse(event.data);
      for (const key of ['userId', 'orgsId', 'sitesId', 'unitsId', 'severity', 'source', 'title', 'body', 'link', 'redirect', 'payload', 'sourceRef', 'expiresAt', 'createdAt', 'readAt']) {
        assert.deepEqual(data[key], row[key], `${key} of the streamed row`);
      }
      assert.equal(String(data.id), row.id);
      assert.ok('deliveredAt' in data, 'the streamed row carries deliveredAt');
      assert.deepEqual(JSON.parse(client.events.find((e) => e.lastEventId === row.id)!.data), data, 'the EventSource client gets the same data');
      // deliveredAt is set the first time the row is written to a stream of a caller who may see it.
      await waitFor(async () => typeof (await call(admin, 'GET', `/svcapi/notifications/${row.id}`)).body.deliveredAt === 'number', `deliveredAt of ${row.id} is set`);
    }
    await closeAll();
    const again = await raw({ token: user.token });
    await again.untilReplayComplete('reconnect');
    assert.equal(again.replayed(), 0, 'rows delivered live are not replayed');
    await closeAll();
  });

  test('per recipient: a broadcast delivered to one user is still replayed to another', async () => {
    const org = await mk('orgs', { name: 'st-recipients' });
    const a = await account('a@recipients.test', { orgs: [org] });
    const b = await account('b@recipients.test', { orgs: [org] });
    const streamA = await raw({ token: a.token });
    await streamA.untilReplayComplete('A');
    assert.equal(streamA.replayed(), 0);
    const row = await notify({ orgsId: org, title: 'to the org' });
    await streamA.untilHas(row.id, 'A live');
    streamA.close();

    const streamB = await raw({ token: b.token });
    await streamB.untilReplayComplete('B');
    assert.deepEqual(streamB.replayIds(), [Number(row.id)], 'B has not received it yet');
    streamB.close();
    for (const [name, token] of [['A', a.token], ['B', b.token]]) {
      const again = await raw({ token });
      await again.untilReplayComplete(`${name} again`);
      assert.equal(again.replayed(), 0, `${name} has received it`);
      again.close();
    }
    await closeAll();
  });

  test('visibility per user, replayed and live: addressed rows, broadcasts by unit/site/org grant, other tenants, admins; expired rows never streamed', async () => {
    const ids: Record<string, string> = {};
    ids.o1 = await mk('orgs', { name: 'sv-acme' });
    ids.s1 = await mk('sites', { name: 'sv-north', orgsId: ids.o1 });
    ids.u1 = await mk('units', { name: 'sv-boiler', siteId: ids.s1 });
    ids.o2 = await mk('orgs', { name: 'sv-evil' });
    ids.s2 = await mk('sites', { name: 'sv-south', orgsId: ids.o2 });
    ids.u2 = await mk('units', { name: 'sv-turbine', siteId: ids.s2 });
    const users: Record<string, Account> = {
      unit: await account('unit@sv.test', { units: [ids.u1] }),
      site: await account('site@sv.test', { sites: [ids.s1] }),
      org: await account('org@sv.test', { orgs: [ids.o1] }),
      other: await account('other@sv.test', { orgs: [ids.o2] }),
    };
    const base = await maxId();
    const streams: Record<string, RawStream> = {};
    for (const [name, user] of Object.entries(users)) streams[name] = await raw({ token: user.token, lastEventId: base });
    streams.admin = await raw({ token: admin, lastEventId: base });
    const orgClient = es({ accessToken: users.org.token, lastEventIdQuery: base });
    for (const [name, s] of Object.entries(streams)) await s.untilReplayComplete(name);
    await orgClient.untilReplayComplete('org EventSource');

    const probe = await notify({ userId: users.unit.email, title: 'probe' });
    const rows: Record<string, Record<string, any>> = {
      probe,
      a: await notify({ userId: users.unit.email, title: 'a: addressed to the unit user' }),
      b: await notify({ unitsId: ids.u1, title: 'b: unit u1' }),
      c: await notify({ sitesId: ids.s1, title: 'c: site s1' }),
      d: await notify({ orgsId: ids.o1, title: 'd: org o1' }),
      e: await notify({ unitsId: ids.u2, title: 'e: unit u2' }),
      f: await notify({ userId: users.other.email, unitsId: ids.u1, title: 'f: addressed to the other user, scoped to u1' }),
      g: await notify({ orgsId: ids.o1, sitesId: ids.s1, unitsId: ids.u1, title: 'g: all three scope columns' }),
      x: await notify({ orgsId: ids.o1, title: 'x: expires', expiresAt: (probe.createdAt as number) + 60_000 }),
    };
    // One last row per user, addressed to them: once it arrives, every row before it has been fanned out.
    for (const name of Object.keys(users)) rows[`end-${name}`] = await notify({ userId: users[name].email, title: `end of ${name}` });
    const expected: Record<string, string[]> = {
      unit: ['probe', 'a', 'b', 'g', 'end-unit'],
      site: ['b', 'c', 'g', 'end-site'],
      org: ['b', 'c', 'd', 'g', 'x', 'end-org'],
      other: ['e', 'f', 'end-other'],
      admin: Object.keys(rows),
    };
    const idsOf = (names: string[]) => names.map((n) => Number(rows[n].id)).sort((p, q) => p - q);
    for (const [name, s] of Object.entries(streams)) {
      const last = name === 'admin' ? 'end-other' : `end-${name}`;
      await s.untilHas(rows[last].id, `${name} live`);
      assert.deepEqual(s.liveIds(), idsOf(expected[name]), `${name}: live rows`);
    }
    await orgClient.untilHas(rows['end-org'].id, 'org EventSource live');
    assert.deepEqual(orgClient.ids(), idsOf(expected.org), 'org EventSource: live rows');
    await closeAll();

    // Once x has expired it is replayed to nobody, admins included.
    const step = await call(admin, 'POST', '/svcapi/_debug/advance_clock', { seconds: 120 });
    assert.equal(step.status, 200, step.text);
    const tokens: Record<string, string> = { admin, ...Object.fromEntries(Object.entries(users).map(([n, u]) => [n, u.token])) };
    for (const [name, token] of Object.entries(tokens)) {
      const s = await raw({ token, lastEventId: base });
      await s.untilReplayComplete(`${name} replay`);
      const want = idsOf(expected[name].filter((n) => n !== 'x'));
      assert.deepEqual(s.replayIds(), want, `${name}: replayed rows`);
      assert.equal(s.replayed(), want.length);
    }
    const orgReplay = es({ token: users.org.token, lastEventIdQuery: base });
    await orgReplay.untilReplayComplete('org EventSource replay');
    assert.deepEqual(orgReplay.ids(), idsOf(expected.org.filter((n) => n !== 'x')));
    await closeAll();
  });

  test('exactly once: rows created while clients connect and replay arrive once each, in order (with Last-Event-ID and without)', async () => {
    const random = prng(14);
    const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

    // Many connects of one user, each resuming from the same Last-Event-ID, while rows keep coming.
    const user = await account('once@stream.test');
    const base = await maxId();
    const created = await notifyMany(20, (i) => ({ userId: user.email, title: `before ${i}` }));
    const clients: Array<RawStream | EsStream> = [];
    const connecting = Promise.all(Array.from({ length: 10 }, async (_, i) => {
      await pause(random() * 400);
      clients.push(i % 5 === 4 ? es({ token: user.token, lastEventIdQuery: base }) : await raw({ token: user.token, lastEventId: base }));
    }));
    const creating = notifyMany(60, (i) => ({ userId: user.email, title: `during ${i}` }), 2);
    await connecting;
    created.push(...(await creating));
    for (const [i, c] of clients.entries()) await c.untilReplayComplete(`client ${i}`);
    const last = await notify({ userId: user.email, title: 'last' });
    created.push(Number(last.id));
    created.sort((p, q) => p - q);
    for (const [i, c] of clients.entries()) {
      await c.untilHas(last.id, `client ${i}`);
      assert.deepEqual(c.ids(), created, `client ${i}: every row once, in order`);
      if (c instanceof RawStream) assert.equal(c.replayed(), c.replayIds().length, `client ${i}: replayed counts the replayed rows`);
    }
    await closeAll();

    // Fresh users of one org, each connecting once without Last-Event-ID (undelivered replay), while broadcasts keep coming.
    const org = await mk('orgs', { name: 'st-once' });
    const members: Account[] = [];
    for (let i = 0; i < 8; i++) members.push(await account(`member${i}@once.test`, { orgs: [org] }));
    const casts = await notifyMany(10, (i) => ({ orgsId: org, title: `cast before ${i}` }));
    const memberClients: Array<RawStream | EsStream> = [];
    const joining = Promise.all(members.map(async (m, i) => {
      await pause(random() * 400);
      memberClients.push(i % 4 === 3 ? es({ accessToken: m.token }) : await raw({ token: m.token }));
    }));
    const casting = notifyMany(40, (i) => ({ orgsId: org, title: `cast during ${i}` }), 2);
    await joining;
    casts.push(...(await casting));
    for (const [i, c] of memberClients.entries()) await c.untilReplayComplete(`member ${i}`);
    const lastCast = await notify({ orgsId: org, title: 'cast last' });
    casts.push(Number(lastCast.id));
    casts.sort((p, q) => p - q);
    for (const [i, c] of memberClients.entries()) {
      await c.untilHas(lastCast.id, `member ${i}`);
      assert.deepEqual(c.ids(), casts, `member ${i}: every broadcast once, in order`);
    }
    await closeAll();
  });

  test('access_token is accepted in the query and appears in no log line', async () => {
    const user = await account('token@stream.test');
    const bogus = 'eyJhbGciOiJIUzI1NiJ9.bogus-claims-4f1e.bogus-signature-77aa';
    const linesBefore = svc.logLines.filter((l) => l.includes(STREAM)).length;
    const s = await raw({ accessToken: user.token });
    await s.untilReplayComplete('raw with access_token');
    const withId = await raw({ accessToken: user.token, lastEventIdQuery: 0 });
    await withId.untilReplayComplete('raw with access_token and lastEventId');
    const client = es({ accessToken: user.token });
    await client.untilReplayComplete('EventSource with access_token');
    const row = await notify({ userId: user.email, title: 'for the query-token clients' });
    await s.untilHas(row.id, 'raw');
    await client.untilHas(row.id, 'EventSource');
    const refused = await raw({ accessToken: bogus });
    await refused.untilEnded('bad access_token');
    assert.equal(refused.status, 401);
    const badId = await raw({ accessToken: user.token, lastEventIdQuery: 'x' });
    await badId.untilEnded('bad lastEventId');
    assert.equal(badId.status, 400);
    // Only the stream takes a token from the URL.
    const elsewhere = await svc.get(`/svcapi/notifications/unread-count?access_token=${enc(user.token)}`);
    assert.equal(elsewhere.status, 401, 'access_token is not a way in for other routes');
    await closeAll();
    // Request lines of streams are written when they end.
    await waitFor(() => svc.logLines.filter((l) => l.includes(STREAM)).length >= linesBefore + 5, 'the five stream requests are logged', { timeoutMs: 20_000 });
    const signature = user.token.split('.').pop()!;
    for (const line of svc.logLines) {
      assert.ok(!line.includes(signature), `a log line holds the token: ${line}`);
      assert.ok(!line.includes('bogus-signature-77aa') && !line.includes('bogus-claims-4f1e'), `a log line holds the refused token: ${line}`);
    }
  });

  test('a slow client that catches up keeps receiving, twice over', async () => {
    const user = await account('slow@stream.test');
    const s = await raw({ token: user.token });
    await s.untilReplayComplete('slow client');
    const created: number[] = [];
    for (const round of [1, 2]) {
      s.pause();
      // ~9 MB while the client reads nothing: the kernel holds ~4.5 MB, the rest waits in the service's queue (16 MiB here).
      created.push(...(await notifyMany(BIG_ROWS, (i) => ({ userId: user.email, title: `slow ${round}.${i}`, payload: BIG_PAYLOAD }))));
      s.resume();
      await waitFor(() => s.ids().length >= created.length || s.ended, `round ${round}: the backlog arrives`, { timeoutMs: 90_000, intervalMs: 100 });
      assert.equal(s.ended, false, `round ${round}: the stream is still open (error ${s.error})`);
      assert.deepEqual(s.ids(), created, `round ${round}: every row once, in order`);
      const live = await notify({ userId: user.email, title: `live after round ${round}` });
      created.push(Number(live.id));
      await s.untilHas(live.id, `round ${round}: live after catching up`);
    }
    assert.deepEqual(s.ids(), created);
    await closeAll();
  });
});

describe('notification stream: a client that stops reading', { timeout: 240_000 }, () => {
  let svc: TestService;
  let admin: string;
  const { account, notify, notifyMany } = helpers(() => svc, () => admin);

  before(async () => {
    svc = await startService({ config: { notifications: { streamQueueBytes: 65_536 } } });
    admin = await svc.adminToken();
  });
  after(() => svc.dispose());

  test('is cut once its queue is over streamQueueBytes; reconnecting with Last-Event-ID loses nothing', async () => {
    const user = await account('paused@stream.test');
    const paused = await openRaw(svc, { token: user.token });
    await paused.untilReplayComplete('paused client');
    paused.pause();
    const created = await notifyMany(BIG_ROWS, (i) => ({ userId: user.email, title: `paused ${i}`, payload: BIG_PAYLOAD }));
    // The service keeps serving others meanwhile.
    const other = await account('bystander@stream.test');
    const bystander = await openRaw(svc, { token: other.token });
    await bystander.untilReplayComplete('bystander');
    paused.resume(); // reads what the kernel held, then sees the end
    await paused.untilEnded('the paused client', 60_000);
    const received = paused.ids();
    assert.ok(received.length < created.length, `the stream was cut before everything was sent (got ${received.length} of ${created.length})`);
    assert.deepEqual(received, created.slice(0, received.length), 'what it got is a prefix, in order');

    // Reconnect as an EventSource client does: Last-Event-ID = the last id seen, until a replay is short of 100.
    const got = [...received];
    for (let attempt = 0; ; attempt++) {
      assert.ok(attempt < 40, 'the reconnects catch up');
      const lastSeen = got.length ? got[got.length - 1] : 0;
      const s = await openRaw(svc, { token: user.token, lastEventId: lastSeen });
      await waitFor(() => s.replayComplete() !== undefined || s.ended, `reconnect ${attempt}: replay ends`, { timeoutMs: 60_000 });
      const ids = s.ids();
      assert.ok(ids.length > 0 || s.replayComplete() !== undefined, `reconnect ${attempt} makes progress`);
      got.push(...ids);
      if (s.replayComplete() !== undefined && s.replayed() < 100) {
        // Caught up: the stream goes on live.
        const live = await notify({ userId: user.email, title: 'after the catch-up' });
        created.push(Number(live.id));
        await s.untilHas(live.id, 'live after the catch-up');
        got.push(...s.liveIds());
        s.close();
        break;
      }
      s.close();
    }
    assert.deepEqual(got, created, 'nothing lost, nothing twice, in order');
    bystander.close();
  });
});

describe('notification stream: caps, keepalive and shutdown', { timeout: 120_000 }, () => {
  let svc: TestService;
  let admin: string;
  const { account } = helpers(() => svc, () => admin);
  const streams: Record<string, RawStream> = {};
  let esC: EsStream;
  let userC: Account;
  let userD: Account;

  before(async () => {
    svc = await startService({ config: { notifications: { keepaliveSeconds: 1, maxStreamsPerUser: 2, maxStreams: 3 } } });
    admin = await svc.adminToken();
    userC = await account('c@caps.test');
    userD = await account('d@caps.test');
  });
  after(async () => {
    for (const s of Object.values(streams)) s.close();
    await esC?.close();
    await svc.dispose();
  });

  /** The answer over a cap: 200, retry: 30000, and the stream ends without a replay. */
  function assertRefused(s: RawStream, what: string): void {
    assert.equal(s.status, 200, `${what}: ${s.text}`);
    assert.match(String(s.headers['content-type']), /^text\/event-stream\b/, what);
    assert.equal(s.retries.at(-1), 30000, `${what}: retry: 30000 (text ${JSON.stringify(s.text)})`);
    assert.equal(s.events.length, 0, `${what}: no replay-complete, no event`);
  }

  test('over maxStreamsPerUser and over maxStreams: 200, retry: 30000, and the stream ends', async () => {
    streams.c1 = await openRaw(svc, { token: userC.token });
    esC = new EsStream(svc, { token: userC.token });
    await streams.c1.untilReplayComplete('c1');
    await esC.untilReplayComplete('c2 (EventSource)');

    const c3 = await openRaw(svc, { token: userC.token });
    await c3.untilEnded('c3, a third stream of one user');
    assertRefused(c3, 'c3');

    streams.d1 = await openRaw(svc, { token: userD.token });
    await streams.d1.untilReplayComplete('d1, the third stream overall');
    const d2 = await openRaw(svc, { token: userD.token });
    await d2.untilEnded('d2, a fourth stream overall');
    assertRefused(d2, 'd2');

    // A real EventSource client over the cap opens, gets the long retry and no event.
    const over = new EsStream(svc, { accessToken: userD.token });
    await waitFor(() => over.errors.length > 0, 'the refused EventSource sees its stream end');
    assert.equal(over.events.length, 0);
    await over.close();

    // Once a stream closes there is room again.
    streams.c1.close();
    await waitFor(async () => {
      const attempt = await openRaw(svc, { token: userD.token });
      await waitFor(() => attempt.replayComplete() !== undefined || attempt.ended, 'an answer');
      if (attempt.replayComplete()) {
        streams.d2 = attempt;
        return true;
      }
      assertRefused(attempt, 'while the closed stream is still counted');
      return false;
    }, 'a stream is accepted after one closed', { timeoutMs: 20_000, intervalMs: 100 });
  });

  test('keepalive: a comment line every keepaliveSeconds', async () => {
    // d1 from the test above; a stream of its own when that one failed before opening it.
    const s = (streams.d1 ??= await openRaw(svc, { token: userD.token }));
    await s.untilReplayComplete('keepalive stream');
    await waitFor(() => s.comments.filter((c) => c.afterEvents >= 1).length >= 2, 'two keepalive comments after replay-complete', { timeoutMs: 15_000 });
    assert.equal(s.ended, false);
    assert.equal(s.events.length, 1, 'keepalives are comments, not events');
  });

  test('shutdown (SIGTERM) ends every stream cleanly and the process exits 0', async () => {
    // Whatever the tests above left open, and at least one stream.
    if (!Object.values(streams).some((s) => !s.ended)) streams.last = await openRaw(svc, { token: userD.token });
    const open = Object.values(streams).filter((s) => !s.ended);
    assert.ok(open.length >= 1);
    for (const [i, s] of open.entries()) await s.untilReplayComplete(`stream ${i} before shutdown`);
    const errorsBefore = esC.errors.length;
    const exit = await svc.stop('SIGTERM');
    assert.deepEqual(exit, { code: 0, signal: null });
    for (const [i, s] of open.entries()) {
      await s.untilEnded(`stream ${i}`);
      assert.equal(s.complete, true, `stream ${i} ended with its framing intact (error ${s.error})`);
    }
    await waitFor(() => esC.errors.length > errorsBefore, 'the EventSource client sees its stream end');
    await esC.close();
    const errors = svc.logs().filter((l) => typeof l.level === 'number' && l.level >= 50);
    assert.deepEqual(errors, [], 'no error logged at shutdown');
  });
});
