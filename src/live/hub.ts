// Live data over WebSocket (WIRE.md part 2 "Live data over WebSocket"): GET /svcapi/ws.
//
// A client subscribes to tags of one collection within its grant; the storage worker that owns the
// collection is told which tags are watched (OP.LIVE_WATCH) and hands back, on each write's
// answer, the points of those tags it appended (every live write path: the write routes, ingest,
// line protocol, shadow and replicated writes; never backfills). Nobody watching costs one map
// lookup per write. Points are gathered per subscription and sent at most every ws.batchMs, as
// JSON or as a binary message of format 1 prefixed by the subscription id. A client more than
// ws.maxBufferedBytes behind is closed with 1013; at shutdown every socket gets 1001.
//
// The grant is checked when a subscription is made, and again every second and at once after a
// change of accounts, grants or the org/site/unit hierarchy (grantsChanged): a subscription the
// caller's grant no longer reaches ends with an `error` message naming it, and a token that no
// longer holds (expired, revoked, account deleted, password changed) closes the socket with 1008.
// A user has at most ws.maxSocketsPerUser sockets and ws.maxWatchedTagsPerUser tags in its
// subscriptions; the storage workers are told only what a subscription changes (watch-index.ts).

import type uWS from 'uWebSockets.js';
import type { TokenVerifier } from '../auth/api.js';
import type { Config } from '../config.js';
import type { Claims } from '../http/caller.js';
import type { SocketData, WebSocketEndpoint } from '../http/server.js';
import type { Logger } from '../log.js';
import type { AccessGrant } from '../meta/access-grant.js';
import type { Collections, LiveFeed } from '../storage/api.js';
import { tagNameProblem } from '../../native-free-codecs/point-batch.js';
import { Format1Writer } from '../../native-free-codecs/result-binary.js';
import { collectionId as idOf, parseCollectionId } from '../../shared/scope-path.js';
import type { LivePoints } from '../../shared/protocol.js';
import { WatchIndex } from './watch-index.js';

type Socket = uWS.WebSocket<SocketData>;

const MAX_MESSAGE_BYTES = 64 * 1024;
const MAX_ID_BYTES = 256;
/** How often every socket's token and grant are checked again (a change made elsewhere is seen within it). */
const RECHECK_MS = 1000;
/** How soon waiting messages are looked at again while uWS still holds unsent bytes (drain usually comes first). */
const DRAIN_LOOK_MS = 20;
const SCOPE = ['organization', 'site', 'unit', 'grid'] as const;

interface Subscription {
  id: string;
  socket: Socket;
  collectionId: string;
  tags: Set<string>;
  format: 'json' | 'binary';
  /** Its tags in order, joined: subscriptions with the same key share one encoding per send. */
  key: string;
}

/** Points of one watched tag gathered since the last send, once for all its subscribers. */
interface Gathered {
  timestamps: number[];
  values: number[];
}

interface SocketState {
  subscriptions: Map<string, Subscription>;
  grant: AccessGrant;
  /** The grants version the grant was computed at (LiveHub.grantsVersion). */
  grantsVersion: number;
  /** What the user's socket and tag counts hold for it; null for a socket refused at open. */
  user: UserCounts | null;
  /**
   * Messages waiting for the socket to take what uWS buffered (sent on `drain`): this uWS build
   * can drop a message written after one it could not send whole, so nothing more is written
   * while anything is buffered.
   */
  waiting: Array<{ bytes: number; write: () => void }>;
  waitingBytes: number;
  /** The next look at `waiting` while messages wait (see `drainSoon`), or null. */
  nextDrain: NodeJS.Immediate | NodeJS.Timeout | null;
}

/** Per user (token subject), over all its sockets. */
interface UserCounts {
  sockets: number;
  tags: number;
}

export interface LiveHubOptions {
  grantOf(claims: Claims): AccessGrant;
  tokens: TokenVerifier;
  feed: LiveFeed;
  collections: Collections;
  settings: Config['ws'];
  log: Logger;
}

export class LiveHub {
  private readonly watched: WatchIndex<Subscription>;
  private readonly sockets = new Set<Socket>();
  private readonly users = new Map<string, UserCounts>();
  /** Bumped when accounts, grants or the hierarchy change: every socket's grant is computed again. */
  private grantsVersion = 0;
  private recheckSoon: NodeJS.Immediate | null = null;
  private readonly recheck: NodeJS.Timeout;
  /**
   * True from a message callback until the next turn of the event loop. This uWS build's TLS
   * layer hands over the messages of a large read (more than its receive buffer) in the middle
   * of that read, and anything written then, to any socket, makes it drop the rest of the read:
   * the messages after it are lost and the socket's framing breaks. So what a message makes the
   * hub say waits for the next turn (see `drainSoon`) instead of being written from inside the
   * callback or a promise it settles.
   */
  private insideRead = false;
  private readonly encoder = new TextEncoder();
  private readonly decoder = new TextDecoder('utf-8', { fatal: true });
  /** Sockets open, points messages sent, and sockets closed for falling ws.maxBufferedBytes behind (GET /metrics). */
  socketsOpen = 0;
  messagesSent = 0;
  slowClosed = 0;

  constructor(private readonly o: LiveHubOptions) {
    this.watched = new WatchIndex(o.feed, o.log);
    o.feed.points.subscribe((points) => this.onPoints(points));
    this.recheck = setInterval(() => this.recheckAll(), RECHECK_MS);
    this.recheck.unref();
  }

  /** Tag names sent to the storage workers in watch updates (GET /metrics). */
  get watchTagsSent(): number {
    return this.watched.tagsSent;
  }

  /** Accounts, grants or the hierarchy changed: every socket is checked again in this turn's wake. */
  grantsChanged(): void {
    this.grantsVersion++;
    this.recheckSoon ??= setImmediate(() => {
      this.recheckSoon = null;
      this.recheckAll();
    });
  }

  stop(): void {
    clearInterval(this.recheck);
    if (this.recheckSoon) clearImmediate(this.recheckSoon);
    this.recheckSoon = null;
  }

  endpoint(): WebSocketEndpoint {
    return {
      path: '/svcapi/ws',
      maxPayloadBytes: MAX_MESSAGE_BYTES,
      authenticate: (headers, query) => {
        const fromQuery = headers.authorization === undefined ? query.get('access_token') ?? undefined : undefined;
        return this.o.tokens.verifyHeader(headers.authorization ?? (fromQuery !== undefined ? `Bearer ${fromQuery}` : undefined));
      },
      open: (socket) => this.open(socket),
      message: (socket, message, isBinary) => this.message(socket, message, isBinary),
      close: (socket) => this.close(socket),
      drain: (socket) => this.drain(socket),
    };
  }

  private stateOf(socket: Socket): SocketState {
    return socket.getUserData().state as SocketState;
  }

  private open(socket: Socket): void {
    const data = socket.getUserData();
    const { maxSocketsPerUser } = this.o.settings;
    const state: SocketState = { subscriptions: new Map(), grant: this.o.grantOf(data.claims), grantsVersion: this.grantsVersion, user: null, waiting: [], waitingBytes: 0, nextDrain: null };
    data.state = state;
    let user = this.users.get(data.claims.sub);
    if ((user?.sockets ?? 0) >= maxSocketsPerUser) {
      this.o.log.warn({ user: data.claims.sub, limit: maxSocketsPerUser }, 'live data socket refused: too many sockets for this user (ws.maxSocketsPerUser)');
      socket.end(1008, `too many live data sockets for this user (ws.maxSocketsPerUser ${maxSocketsPerUser})`);
      return;
    }
    if (!user) this.users.set(data.claims.sub, (user = { sockets: 0, tags: 0 }));
    user.sockets++;
    state.user = user;
    this.sockets.add(socket);
    this.socketsOpen++;
  }

  private recheckAll(): void {
    // Sockets of one account share a claims object: its grant is computed once per pass.
    const grants = new Map<Claims, AccessGrant>();
    for (const socket of this.sockets) this.recheckSocket(socket, grants);
  }

  /**
   * The token again (1008 once it no longer holds), and, when the account or the grants changed,
   * the grant: subscriptions it no longer reaches end, each with an error naming it.
   */
  private recheckSocket(socket: Socket, grants?: Map<Claims, AccessGrant>): void {
    const data = socket.getUserData();
    if (data.closed) return;
    let claims: Claims;
    try {
      claims = this.o.tokens.verifyHeader(data.authorization);
    } catch (err) {
      this.o.log.info({ user: data.claims.sub, reason: (err as Error).message }, 'live data socket closed: its token no longer holds');
      socket.end(1008, `token no longer valid: ${(err as Error).message}`.slice(0, 120));
      return;
    }
    const state = this.stateOf(socket);
    if (state.grantsVersion === this.grantsVersion && sameAccess(claims, data.claims)) return;
    data.claims = claims;
    state.grantsVersion = this.grantsVersion;
    let grant = grants?.get(claims);
    if (!grant) {
      grant = this.o.grantOf(claims);
      grants?.set(claims, grant);
    }
    state.grant = grant;
    for (const sub of [...state.subscriptions.values()]) {
      if (this.o.collections.exists(sub.collectionId) && this.o.collections.canReach(state.grant, sub.collectionId)) continue;
      this.forget(state, sub);
      this.send(socket, { op: 'error', id: sub.id, error: `subscription ended: collection ${sub.collectionId} is no longer within your grant` });
    }
  }

  private close(socket: Socket): void {
    const state = this.stateOf(socket);
    if (state) this.stopDraining(state);
    if (!state?.user) return;
    this.sockets.delete(socket);
    this.socketsOpen--;
    for (const sub of [...state.subscriptions.values()]) this.forget(state, sub);
    const user = state.user;
    if (--user.sockets === 0) this.users.delete(socket.getUserData().claims.sub);
    state.user = null;
  }

  private message(socket: Socket, raw: ArrayBuffer, isBinary: boolean): void {
    if (!this.insideRead) {
      this.insideRead = true;
      setImmediate(() => (this.insideRead = false));
    }
    let msg: Record<string, unknown>;
    try {
      if (isBinary) throw new Error('messages are JSON text');
      const parsed = JSON.parse(this.decoder.decode(raw)) as unknown;
      if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed)) throw new Error('a message is a JSON object');
      msg = parsed as Record<string, unknown>;
    } catch (err) {
      return this.send(socket, { op: 'error', id: null, error: `bad message: ${(err as Error).message}` });
    }
    if (!this.stateOf(socket).user) return; // refused at open, closing
    const id = msg.id;
    if (typeof id !== 'string' || id.length === 0 || Buffer.byteLength(id) > MAX_ID_BYTES) {
      return this.send(socket, { op: 'error', id: typeof id === 'string' ? id : null, error: `id: a string of 1 to ${MAX_ID_BYTES} bytes is required` });
    }
    if (msg.op === 'subscribe') void this.subscribe(socket, id, msg);
    else if (msg.op === 'unsubscribe') {
      const state = this.stateOf(socket);
      const sub = state.subscriptions.get(id);
      if (!sub) return this.send(socket, { op: 'error', id, error: `no subscription ${JSON.stringify(id)}` });
      this.forget(state, sub);
      this.send(socket, { op: 'unsubscribed', id });
    } else this.send(socket, { op: 'error', id, error: 'op: "subscribe" or "unsubscribe"' });
  }

  private async subscribe(socket: Socket, id: string, msg: Record<string, unknown>): Promise<void> {
    const { settings } = this.o;
    const state = this.stateOf(socket);
    const fail = (error: string) => this.send(socket, { op: 'error', id, error });
    const scope: Record<string, string> = {};
    for (const field of SCOPE) {
      const value = msg[field];
      if (typeof value !== 'string' || value.length === 0) return fail(`${field}: a non-empty string is required`);
      scope[field] = value;
    }
    const format = msg.format ?? 'json';
    if (format !== 'json' && format !== 'binary') return fail('format: "json" or "binary"');
    const tags = msg.tags;
    if (!Array.isArray(tags) || tags.length === 0 || tags.length > settings.maxTagsPerSubscription) return fail(`tags: an array of 1 to ${settings.maxTagsPerSubscription} tag names (ws.maxTagsPerSubscription)`);
    // A name no write could store is refused here: it would only take room in the watch lists.
    for (const tag of tags) {
      const problem = typeof tag === 'string' ? tagNameProblem(tag) : 'name must be a string';
      if (problem !== null) return fail(`tags: ${JSON.stringify(tag).slice(0, 80)}: ${problem}`);
    }
    let collectionId: string;
    try {
      collectionId = idOf(scope as never);
      parseCollectionId(collectionId);
    } catch (err) {
      return fail(`${(err as Error).message}`);
    }
    this.recheckSocket(socket); // the grant as it is now, not as of the last recheck
    if (socket.getUserData().closed) return;
    // One answer for absent and out-of-grant: another tenant learns nothing of what exists.
    if (!this.o.collections.exists(collectionId) || !this.o.collections.canReach(state.grant, collectionId)) {
      return fail(`unknown collection ${collectionId} (none by that scope within your grant)`);
    }
    const previous = state.subscriptions.get(id);
    if (!previous && state.subscriptions.size >= settings.maxSubscriptionsPerSocket) return fail(`too many subscriptions on this socket (ws.maxSubscriptionsPerSocket ${settings.maxSubscriptionsPerSocket})`);
    const tagSet = new Set(tags as string[]);
    const user = state.user!;
    const userTags = user.tags - (previous?.tags.size ?? 0) + tagSet.size;
    if (userTags > settings.maxWatchedTagsPerUser) {
      return fail(`too many watched tags for this user: ${userTags} over all its subscriptions (ws.maxWatchedTagsPerUser ${settings.maxWatchedTagsPerUser}); unsubscribe some first`);
    }
    if (previous) this.forget(state, previous);
    const sub: Subscription = { id, socket, collectionId, tags: tagSet, format, key: `${format}\n${collectionId}\n${[...tagSet].join('\n')}` };
    state.subscriptions.set(id, sub);
    user.tags += tagSet.size;
    try {
      await this.watched.add(sub, collectionId, tagSet);
    } catch (err) {
      if (state.subscriptions.get(id) === sub) this.forget(state, sub);
      return fail(`the subscription could not be made: ${(err as Error).message}`);
    }
    if (state.subscriptions.get(id) !== sub) return; // replaced or dropped meanwhile
    this.send(socket, { op: 'subscribed', id, tags: [...sub.tags] });
  }

  /** Ends a subscription: out of its socket, its user's count and the watch index. */
  private forget(state: SocketState, sub: Subscription): void {
    if (state.subscriptions.get(sub.id) !== sub) return;
    state.subscriptions.delete(sub.id);
    if (state.user) state.user.tags -= sub.tags.size;
    this.watched.remove(sub, sub.collectionId, sub.tags);
  }

  /**
   * Points are gathered once per watched tag, whatever the number of subscribers; every
   * ws.batchMs one pass sends each subscription what its tags gathered, encoded once per distinct
   * (format, collection, tags) and only the id spliced in per subscriber.
   */
  private onPoints(batches: LivePoints[]): void {
    for (const batch of batches) {
      const byTag = this.watched.of(batch.collectionId);
      if (!byTag) continue;
      let at = 0;
      for (let t = 0; t < batch.tags.length; t++) {
        const count = batch.counts[t];
        if (byTag.has(batch.tags[t])) {
          const key = `${batch.collectionId}\n${batch.tags[t]}`;
          let gathered = this.gathered.get(key);
          if (!gathered) this.gathered.set(key, (gathered = { timestamps: [], values: [] }));
          for (let i = at; i < at + count; i++) {
            gathered.timestamps.push(batch.timestamps[i]);
            gathered.values.push(batch.values[i]);
          }
          this.sendTimer ??= setTimeout(() => this.sendGathered(), this.o.settings.batchMs);
        }
        at += count;
      }
    }
  }

  /** By `collection\ntag`. */
  private gathered = new Map<string, Gathered>();
  private sendTimer: NodeJS.Timeout | null = null;

  private sendGathered(): void {
    this.sendTimer = null;
    const gathered = this.gathered;
    this.gathered = new Map();
    const encoded = new Map<string, Uint8Array | null>();
    const subs = new Set<Subscription>();
    for (const key of gathered.keys()) {
      const [collectionId, tag] = key.split('\n', 2) as [string, string];
      const found = this.watched.of(collectionId)?.get(tag);
      if (found) for (const sub of found) subs.add(sub);
    }
    for (const sub of subs) {
      if (sub.socket.getUserData().closed) continue;
      let body = encoded.get(sub.key);
      if (body === undefined) {
        body = this.encode(sub, gathered);
        encoded.set(sub.key, body);
      }
      if (body === null) continue;
      // The shared body goes as a middle fragment: nothing of it is copied per subscriber here.
      if (sub.format === 'json') this.sendFragments(sub.socket, `{"op":"points","id":${JSON.stringify(sub.id)},"tags":`, body, '}', false);
      else {
        const id = this.encoder.encode(sub.id);
        const prefix = new Uint8Array(2 + id.length);
        new DataView(prefix.buffer).setUint16(0, id.length, true);
        prefix.set(id, 2);
        this.sendFragments(sub.socket, prefix, body, null, true);
      }
    }
  }

  /** The tags part of a subscription's message (JSON text as UTF-8, or a format 1 body), or null when its tags gathered nothing. */
  private encode(sub: Subscription, gathered: Map<string, Gathered>): Uint8Array | null {
    const mine: Array<[string, Gathered]> = [];
    for (const tag of sub.tags) {
      const g = gathered.get(`${sub.collectionId}\n${tag}`);
      if (g) mine.push([tag, g]);
    }
    if (mine.length === 0) return null;
    if (sub.format === 'binary') {
      const writer = new Format1Writer();
      for (const [tag, g] of mine) {
        writer.beginTag(tag, g.timestamps.length);
        for (let i = 0; i < g.timestamps.length; i++) writer.point(g.timestamps[i], g.values[i]);
      }
      return writer.finish().slice();
    }
    const parts: string[] = [];
    for (const [tag, g] of mine) {
      const points: string[] = new Array(g.timestamps.length);
      for (let i = 0; i < g.timestamps.length; i++) points[i] = `[${g.timestamps[i]},${numberJson(g.values[i])}]`;
      parts.push(`${JSON.stringify(tag)}:[${points.join(',')}]`);
    }
    return this.encoder.encode(`{${parts.join(',')}}`);
  }

  private send(socket: Socket, message: unknown): void {
    this.sendBytes(socket, JSON.stringify(message), false);
  }

  /** Sends, and closes a client that has fallen too far behind (1013: try again later). */
  private sendBytes(socket: Socket, message: string | Uint8Array, binary: boolean): void {
    if (socket.getUserData().closed) return;
    const write = () => socket.send(message, binary);
    if (this.mayWrite(socket)) socket.cork(write);
    else this.wait(socket, byteLength(message), write);
    this.cutIfBehind(socket);
  }

  /** One message in fragments: a per-subscriber head, the shared body, an optional tail. */
  private sendFragments(socket: Socket, head: string | Uint8Array, body: Uint8Array, tail: string | null, binary: boolean): void {
    if (socket.getUserData().closed) return;
    this.messagesSent++;
    // Head and body are fresh for each pass (encode), never written into again: a waiting message
    // holds them as they are, the body shared with the other subscribers it goes to.
    const write = () => {
      socket.sendFirstFragment(head, binary);
      if (tail === null) socket.sendLastFragment(body);
      else {
        socket.sendFragment(body);
        socket.sendLastFragment(tail);
      }
    };
    if (this.mayWrite(socket)) socket.cork(write);
    else this.wait(socket, byteLength(head) + body.byteLength + (tail?.length ?? 0), write);
    this.cutIfBehind(socket);
  }

  /** Not inside a read (see `insideRead`), nothing waits, and uWS holds nothing unsent for the socket. */
  private mayWrite(socket: Socket): boolean {
    return !this.insideRead && this.stateOf(socket).waiting.length === 0 && socket.getBufferedAmount() === 0;
  }

  private wait(socket: Socket, bytes: number, write: () => void): void {
    const state = this.stateOf(socket);
    state.waiting.push({ bytes, write });
    state.waitingBytes += bytes;
    this.drainSoon(socket);
  }

  /**
   * Sends the first message that waits, once uWS has sent everything before it; the rest follow
   * from `drainSoon`. One message per call: uWS may call `drain` inside its own cork, where a
   * message goes to the cork buffer and the buffered amount still reads 0, so a second message
   * would be written in the same cork after a flush that may fail, which this uWS build can drop.
   */
  private drain(socket: Socket): void {
    const state = this.stateOf(socket);
    if (state.waiting.length === 0 || socket.getUserData().closed) return;
    if (socket.getBufferedAmount() === 0) {
      const next = state.waiting.shift()!;
      state.waitingBytes -= next.bytes;
      socket.cork(next.write);
    }
    if (state.waiting.length > 0) this.drainSoon(socket);
  }

  /**
   * Looks at the waiting messages again in a later turn, outside any cork of uWS's: at once when
   * uWS holds nothing unsent, else after a while. uWS emits `drain` only from a writable event of
   * its own, so a buffer emptied otherwise (its automatic pings write too) would leave the
   * messages waiting for an event that never comes; a subscribe answer was lost that way.
   */
  private drainSoon(socket: Socket): void {
    const state = this.stateOf(socket);
    if (state.nextDrain !== null) return;
    const look = () => {
      state.nextDrain = null;
      this.drain(socket);
    };
    state.nextDrain = socket.getBufferedAmount() === 0 ? setImmediate(look) : setTimeout(look, DRAIN_LOOK_MS);
  }

  private stopDraining(state: SocketState): void {
    if (state.nextDrain === null) return;
    clearImmediate(state.nextDrain as NodeJS.Immediate);
    clearTimeout(state.nextDrain as NodeJS.Timeout);
    state.nextDrain = null;
  }

  private cutIfBehind(socket: Socket): void {
    const data = socket.getUserData();
    const behind = socket.getBufferedAmount() + this.stateOf(socket).waitingBytes;
    if (behind > this.o.settings.maxBufferedBytes) {
      this.slowClosed++;
      this.o.log.warn({ user: data.claims.sub, bufferedBytes: behind, limit: this.o.settings.maxBufferedBytes }, 'live data socket closed: the client reads too slowly (ws.maxBufferedBytes)');
      socket.end(1013, 'too slow: more than ws.maxBufferedBytes behind');
    }
  }
}

function byteLength(message: string | Uint8Array): number {
  return typeof message === 'string' ? Buffer.byteLength(message) : message.byteLength;
}

/** Whether two claims give the same access (a token check may answer a new object for the same account). */
function sameAccess(a: Claims, b: Claims): boolean {
  if (a === b) return true;
  const same = (x: readonly unknown[] | undefined, y: readonly unknown[] | undefined) => x === y || (x !== undefined && y !== undefined && x.length === y.length && x.every((v, i) => v === y[i]));
  return a.sub === b.sub && a.role === b.role && same(a.orgs_id, b.orgs_id) && same(a.sites_id, b.sites_id) && same(a.units_id, b.units_id);
}

/** A value as JSON (values are finite: writes refuse the others). */
function numberJson(value: number): string {
  return Number.isFinite(value) ? String(value) : 'null';
}
