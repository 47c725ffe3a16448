// Helpers shared by the monitor API tests (monitor.test.ts, monitor-alarms.test.ts): a plant of
// org/site/unit rows with collections bound to them, accounts with grants, writes with rising
// timestamps, "a tick of this collection has run since" (a heartbeat tag seen in the snapshot),
// and a small raw Server-Sent Events reader for the notification stream.

import assert from 'node:assert/strict';
import type { ClientRequest, IncomingMessage } from 'node:http';
import https from 'node:https';
import { StringDecoder } from 'node:string_decoder';
import { waitFor } from '../support/wait-for.js';
import type { HttpResult, TestService } from './harness.js';
import { parseSseBlock } from '../support/sse-block.js';

export const M = '/svcapi/monitor';
export const enc = encodeURIComponent;
export const q = (params: Record<string, string | number | boolean>) => new URLSearchParams(Object.entries(params).map(([k, v]): [string, string] => [k, String(v)])).toString();

export interface Scope {
  organization: string;
  site: string;
  unit: string;
  grid: string;
}

export const collectionIdOf = (s: Scope) => `${s.organization}/${s.site}/${s.unit}/${s.grid}`;

/** Rising timestamps near the wall clock: the last value of a tag is the one written last. */
let lastTs = 0;
export function nextTs(): number {
  lastTs = Math.max(Date.now(), lastTs + 1);
  return lastTs;
}
/** Reserves `n` consecutive timestamps; returns the first. */
export function nextTsRun(n: number): number {
  const first = nextTs();
  lastTs = first + n - 1;
  return first;
}

/** Tag of a rule that never triggers, written to learn that a tick of its collection has run. */
export const HEARTBEAT = 'HB-0';

export class Plant {
  private readonly orgs = new Map<string, string>();
  private readonly sites = new Map<string, string>();
  private readonly units = new Map<string, string>();

  constructor(
    private readonly svc: () => TestService,
    private readonly admin: () => string,
  ) {}

  call(token: string | undefined, method: string, urlPath: string, body?: unknown): Promise<HttpResult> {
    return this.svc().request(method, urlPath, { body, token });
  }

  private async mk(url: string, body: object): Promise<string> {
    const res = await this.call(this.admin(), 'POST', `/svcapi/${url}`, body);
    assert.equal(res.status, 200, `${url}: ${res.text}`);
    return String(res.body.id);
  }

  /** The unit row named by the scope (its org and site made when missing); returns its id. */
  async unitOf(s: Scope): Promise<string> {
    let org = this.orgs.get(s.organization);
    if (!org) this.orgs.set(s.organization, (org = await this.mk('orgs', { name: s.organization })));
    const siteKey = `${s.organization}/${s.site}`;
    let site = this.sites.get(siteKey);
    if (!site) this.sites.set(siteKey, (site = await this.mk('sites', { name: s.site, orgsId: org })));
    const unitKey = `${siteKey}/${s.unit}`;
    let unit = this.units.get(unitKey);
    if (!unit) this.units.set(unitKey, (unit = await this.mk('units', { name: s.unit, siteId: site })));
    return unit;
  }

  /** Makes the unit rows and the collection; with `tickRateMs`, enables its monitoring at that rate. Returns the collection id. */
  async collection(s: Scope, tickRateMs?: number): Promise<string> {
    await this.unitOf(s);
    const res = await this.call(this.admin(), 'POST', '/svcapi/create_collection', { ...s, description: `collection ${s.grid}` });
    assert.equal(res.body?.success, true, `create_collection: ${res.text}`);
    const id = collectionIdOf(s);
    if (tickRateMs !== undefined) {
      const en = await this.call(this.admin(), 'PUT', `${M}/collections/${enc(id)}/enable`, { tick_rate_ms: tickRateMs });
      assert.equal(en.status, 200, `enable ${id}: ${en.text}`);
    }
    return id;
  }

  /** An account with `role` and a grant on the given units; returns its email and token. */
  async account(email: string, role: 'read-write' | 'read-only', units: string[]): Promise<{ email: string; token: string }> {
    const password = 'monitor-password-1';
    const user = await this.mk('users', { email, password, role });
    await this.mk('userprofiles', { usersId: user, accessAllowed: { orgs: [], sites: [], units } });
    return { email, token: await this.svc().login(email, password) };
  }

  async write(s: Scope, tags: Record<string, Array<[number, number]>>, token = this.admin()): Promise<void> {
    const res = await this.call(token, 'POST', '/svcapi/write', { ...s, tags });
    assert.deepEqual(res.body?.success, true, `write ${JSON.stringify(tags)}: ${res.text}`);
  }

  /** Writes one value at a fresh timestamp; returns the timestamp. */
  async writeValue(s: Scope, tag: string, value: number): Promise<number> {
    const ts = nextTs();
    await this.write(s, { [tag]: [[ts, value]] });
    return ts;
  }

  /** POST /rule as admin (or `token`); asserts 201 and returns the id. */
  async rule(body: Record<string, unknown>, token = this.admin()): Promise<string> {
    const res = await this.call(token, 'POST', `${M}/rule`, body);
    assert.equal(res.status, 201, `create rule ${JSON.stringify(body)}: ${res.text}`);
    assert.equal(typeof res.body.id, 'string');
    return res.body.id as string;
  }

  async events(params: Record<string, string | number>, token = this.admin()): Promise<{ events: any[]; total_count: number; has_more: boolean }> {
    const res = await this.call(token, 'GET', `${M}/alarm/events?${q(params)}`);
    assert.equal(res.status, 200, `events ${JSON.stringify(params)}: ${res.text}`);
    return res.body;
  }

  async ruleEvents(ruleId: string): Promise<any[]> {
    return (await this.events({ rule_id: ruleId, limit: 1000 })).events;
  }

  /** Waits until the rule has an event matching `match`; returns it. */
  async untilEvent(ruleId: string, what: string, match: (e: any) => boolean = () => true, timeoutMs = 15_000): Promise<any> {
    let found: any;
    await waitFor(async () => {
      found = (await this.ruleEvents(ruleId)).find(match);
      return found !== undefined;
    }, what, { timeoutMs, intervalMs: 50 });
    return found;
  }

  async snapshot(token = this.admin()): Promise<any> {
    const res = await this.call(token, 'GET', `${M}/alarm/snapshot`);
    assert.equal(res.status, 200, `snapshot: ${res.text}`);
    return res.body;
  }

  async snapshotTag(collectionId: string, tag: string): Promise<any> {
    const snap = await this.snapshot();
    return snap.collections?.find((c: any) => c.collection_id === collectionId)?.tags?.find((t: any) => t.tag === tag);
  }

  /** Waits until a tick of the collection has read the tag's value at `ts`; returns the snapshot entry. */
  async untilSeen(collectionId: string, tag: string, ts: number, timeoutMs = 15_000): Promise<any> {
    let entry: any;
    await waitFor(async () => {
      entry = await this.snapshotTag(collectionId, tag);
      return entry !== undefined && entry.ts >= ts;
    }, `a tick of ${collectionId} reads ${tag} at ${ts} (last entry ${JSON.stringify(entry)})`, { timeoutMs, intervalMs: 30 });
    return entry;
  }

  /** A rule that never triggers on HEARTBEAT, so the tag shows in the snapshot. */
  async heartbeat(s: Scope): Promise<void> {
    await this.writeValue(s, HEARTBEAT, 0);
    await this.rule({ collection_id: collectionIdOf(s), tag: HEARTBEAT, limHi: 1e12, notify: false });
  }

  /** Waits until a whole tick of the collection has run after this call (and so after everything written before it). */
  async tickPassed(s: Scope): Promise<void> {
    const ts = await this.writeValue(s, HEARTBEAT, 0);
    await this.untilSeen(collectionIdOf(s), HEARTBEAT, ts);
  }
}

// ---------------------------------------------------------------- notification stream

export interface StreamEvent {
  type: string;
  id: string | null;
  data: string;
}

/** One notification stream on its own connection, parsed as it arrives. */
export class NotificationStream {
  events: StreamEvent[] = [];
  status = 0;
  ended = false;
  private readonly req: ClientRequest;
  private readonly decoder = new StringDecoder('utf8');
  private partial = '';
  private block: string[] = [];
  readonly response: Promise<void>;

  constructor(svc: TestService, token: string) {
    this.req = https.request({
      host: '127.0.0.1',
      servername: 'localhost',
      port: svc.port,
      method: 'GET',
      path: '/svcapi/notifications/stream',
      headers: { accept: 'text/event-stream', authorization: `Bearer ${token}` },
      ca: svc.ca,
      agent: false,
    });
    this.response = new Promise((resolve, reject) => {
      this.req.on('error', (err) => {
        this.ended = true;
        reject(err);
      });
      this.req.on('response', (res: IncomingMessage) => {
        this.status = res.statusCode ?? 0;
        res.on('data', (chunk: Buffer) => this.onText(this.decoder.write(chunk)));
        res.on('close', () => (this.ended = true));
        resolve();
      });
    });
    this.response.catch(() => {});
    this.req.end();
  }

  private onText(text: string): void {
    this.partial += text;
    const lines = this.partial.split('\n');
    this.partial = lines.pop()!;
    for (const raw of lines) {
      const line = raw.endsWith('\r') ? raw.slice(0, -1) : raw;
      if (line !== '') {
        this.block.push(line);
        continue;
      }
      const { event, id, data } = parseSseBlock(this.block);
      if (data !== null) this.events.push({ type: event ?? 'message', id, data });
      this.block = [];
    }
  }

  /** Every notification received, parsed. */
  notifications(): any[] {
    return this.events.filter((e) => e.type === 'notification').map((e) => JSON.parse(e.data));
  }

  /** Resolves once the replay is over, so what follows is live. */
  async ready(): Promise<void> {
    await this.response;
    assert.equal(this.status, 200, 'the notification stream answers 200');
    await waitFor(() => this.events.some((e) => e.type === 'replay-complete') || this.ended, 'the stream sends replay-complete', { timeoutMs: 15_000 });
    assert.ok(!this.ended, 'the stream is still open after its replay');
  }

  async untilNotification(what: string, match: (n: any) => boolean, timeoutMs = 15_000): Promise<any> {
    let found: any;
    await waitFor(() => (found = this.notifications().find(match)) !== undefined, `${what} arrives on the notification stream`, { timeoutMs });
    return found;
  }

  close(): void {
    this.req.destroy();
  }
}
