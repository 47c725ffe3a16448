// The connected notification streams and the fan-out to them.
//
// A stream is registered in the same synchronous step as its replay query: a notification is
// committed and fanned out in one step too (EntityHooks.afterCommit), so a row created while a
// client connects is either in its replay or arrives live, never both and never neither.
//
// Fan-out: one serialisation per notification, then one in-memory visibility match and one
// write per connected stream; nothing here reads the table. What each recipient has had is kept
// as id ranges (delivered-ranges.ts), moved forward only once the bytes of an event have gone
// to the socket, so a client cut off for reading too slowly (its queue past
// notifications.streamQueueBytes) is replayed what it did not get, by Last-Event-ID or, on a
// fresh connect, as undelivered.

import type { Claims } from '../http/caller.js';
import type { ServiceClock } from '../clock.js';
import type { Config } from '../config.js';
import type { ResponseStream } from '../http/route.js';
import type { Logger } from '../log.js';
import type { AccessGrant, NotificationAudienceFields } from '../meta/access-grant.js';
import type { Entity } from '../meta/entities.js';
import type { EntityDef } from '../meta/registry.js';
import type { NotificationTables } from '../meta/tables/notifications.js';
import { toWire } from '../meta/wire.js';
import { Signal } from '../signal.js';
import { DeliveredRanges, type Ranges } from './delivered-ranges.js';
import { KEEPALIVE, notificationEvent, refusedStream, replayCompleteEvent, STREAM_OPENING } from './sse.js';

/** SPEC "Limits": at most 100 rows replayed on connect. */
export const REPLAY_LIMIT = 100;
/** How often a stream's token is checked again (expiry, account deleted, password changed, grants). */
const RECHECK_MS = 1000;
/** Longest the fan-out holds the main thread before letting other work in. */
const FANOUT_SLICE_MS = 4;
/** Rows fanned out together (one write per stream for all of them). */
const FANOUT_BATCH_ROWS = 256;
/** How often recipients' delivered ranges are written to SQLite (a crash replays at most this much again). */
const RANGES_FLUSH_MS = 1000;

export interface StreamRequest {
  claims: Claims;
  /** The token the stream was opened with (bare or `Bearer …`), checked again while it lives (never logged). */
  token: string;
  /** Last-Event-ID: replay rows after this id instead of the undelivered ones. */
  lastEventId: number | null;
  signal: AbortSignal;
}

/** Bytes handed to a stream and the delivered range they complete once they reach the socket. */
interface Cover {
  end: number;
  lo: number;
  hi: number;
}

class NotificationStream {
  /** Bytes written to `out` so far, and bytes of those that reached the socket. */
  private enqueued = 0;
  private flushed = 0;
  private readonly covers: Cover[] = [];
  /** The first id this stream receives live (ids below came, or not, in the replay). */
  liveFrom = 0;
  claims: Claims;
  checkedAt = 0;
  private ended = false;
  private endStream: () => void = () => {};
  readonly finished: Promise<void>;

  constructor(
    readonly out: ResponseStream,
    readonly token: string,
    claims: Claims,
    private readonly queueLimit: number,
    private readonly onCovered: (recipient: string, lo: number, hi: number) => void,
    private readonly onCut: (stream: NotificationStream) => void,
    signal: AbortSignal,
  ) {
    this.claims = claims;
    this.finished = new Promise<void>((resolve) => {
      this.endStream = resolve;
      if (signal.aborted) resolve();
      else signal.addEventListener('abort', () => resolve(), { once: true });
    });
    out.onFlushed((bytes) => this.flushedBytes(bytes));
  }

  get recipient(): string {
    return this.claims.sub;
  }

  get open(): boolean {
    return !this.ended && !this.out.aborted;
  }

  /**
   * Queues `bytes`; `cover` becomes delivered once they reach the socket. False when the stream
   * is gone or was cut. The replay (`bounded`: at most 100 rows of at most about 19 KB) may pass
   * the queue limit, so a client on a slow link is not cut before it could take anything.
   */
  send(bytes: Uint8Array, cover: { lo: number; hi: number } | null, bounded = false): boolean {
    if (!this.open) return false;
    if (!bounded && this.out.queuedBytes + bytes.byteLength > this.queueLimit) {
      this.onCut(this);
      this.out.cut();
      this.end();
      return false;
    }
    this.enqueued += bytes.byteLength;
    // Before the write: the write may reach the socket (and report it) at once.
    if (cover && cover.hi >= cover.lo) this.covers.push({ end: this.enqueued, lo: cover.lo, hi: cover.hi });
    void this.out.write(bytes);
    return true;
  }

  /** A live row this stream does not get (not visible to it, or expired): it is passed all the same. */
  pass(id: number): void {
    if (!this.open) return;
    const last = this.covers[this.covers.length - 1];
    if (last && last.lo === this.liveFrom) last.hi = id;
    else if (this.covers.length === 0 && this.flushed === this.enqueued) this.onCovered(this.recipient, this.liveFrom, id);
    else this.covers.push({ end: this.enqueued, lo: this.liveFrom, hi: id });
  }

  /** Ends the stream cleanly (the response's last chunk follows). */
  end(): void {
    this.ended = true;
    this.endStream();
  }

  private flushedBytes(bytes: number): void {
    this.flushed += bytes;
    while (this.covers.length > 0 && this.covers[0].end <= this.flushed) {
      const cover = this.covers.shift()!;
      this.onCovered(this.recipient, cover.lo, cover.hi);
    }
  }
}

/** One row of a fan-out batch; its event bytes are made the first time a stream may see it. */
interface FanOutRow {
  entity: Entity;
  id: number;
  fields: NotificationAudienceFields;
  bytes: Buffer | null;
  sent: boolean;
}

/** A recipient's delivered ranges while it has streams open. */
interface RecipientState {
  ranges: DeliveredRanges;
  streams: number;
  dirty: boolean;
}

export interface StreamHubOptions {
  tables: NotificationTables;
  /** The `notifications` entity table. */
  def: EntityDef;
  /** What an account may reach now. */
  grantOf(claims: Claims): AccessGrant;
  /** The claims of a stream's token, checked again while it lives; throws a 401 once it no longer holds. */
  verifyToken(token: string): Claims;
  clock: ServiceClock;
  log: Logger;
  settings: Config['notifications'];
}

/** What streams on this node delivered, as written down here (a cluster's secondary sends it to the leader). */
export interface DeliveryMarks {
  ranges: Array<{ recipient: string; ranges: Ranges }>;
  delivered: Array<[id: number, at: number]>;
}

export class StreamHub {
  /** The delivery marks just written down (a cluster's secondary sends them on to the leader). */
  readonly marksWritten = new Signal<[marks: DeliveryMarks]>();
  private readonly streams = new Set<NotificationStream>();
  private readonly recipients = new Map<string, RecipientState>();
  private readonly def: EntityDef;
  /** Audience per claims object (a new object whenever the account changes) and hierarchy version. */
  private audiences = new WeakMap<Claims, { version: number; grant: AccessGrant }>();
  private hierarchyVersion = 0;
  /** Rows first written to a stream, to get deliveredAt set in one statement per turn of the loop. */
  private deliveredNow = new Map<number, number>();
  private deliveredFlush: NodeJS.Immediate | null = null;
  private keepaliveTimer: NodeJS.Timeout | null = null;
  private rangesTimer: NodeJS.Timeout | null = null;
  private stopping = false;
  /** Committed rows waiting for the fan-out, in id order, and the batch being fanned out. */
  private pending: Entity[] = [];
  private batch: { rows: FanOutRow[]; now: number; streams: NotificationStream[]; next: number } | null = null;
  private fanOutTimer: NodeJS.Immediate | null = null;
  /** Events handed to streams (replayed and live), and live events lost with a stream cut for reading too slowly (GET /metrics). */
  eventsDelivered = 0;
  eventsDropped = 0;
  constructor(private readonly o: StreamHubOptions) {
    this.def = o.def;
  }

  get streamCount(): number {
    return this.streams.size;
  }

  start(): void {
    this.keepaliveTimer = setInterval(() => this.keepalive(), this.o.settings.keepaliveSeconds * 1000);
    this.keepaliveTimer.unref();
    this.rangesTimer = setInterval(() => this.flushRanges(), RANGES_FLUSH_MS);
    this.rangesTimer.unref();
  }

  /** Ends every stream cleanly and writes down what was delivered. */
  stop(): void {
    this.stopping = true;
    for (const stream of this.streams) stream.end();
    if (this.fanOutTimer) clearImmediate(this.fanOutTimer);
    this.pending = [];
    this.batch = null;
    if (this.keepaliveTimer) clearInterval(this.keepaliveTimer);
    if (this.rangesTimer) clearInterval(this.rangesTimer);
    this.flushDelivered();
    this.flushRanges();
  }

  /**
   * The metadata store is about to be replaced (a restore, run in the same turn of the event
   * loop): what was delivered is written down, every stream ends (its client reconnects and
   * replays from the restored rows), and nothing of the old store is kept in memory.
   */
  storeReplaced(): void {
    this.flushDelivered();
    this.flushRanges();
    for (const stream of this.streams) stream.end();
    if (this.fanOutTimer) clearImmediate(this.fanOutTimer);
    this.fanOutTimer = null;
    this.pending = [];
    this.batch = null;
    this.recipients.clear();
    this.deliveredNow.clear();
    this.audiences = new WeakMap();
    this.hierarchyVersion++;
  }

  /** Org, site or unit rows changed: grants expanded from them are recomputed on next use. */
  hierarchyChanged(): void {
    this.hierarchyVersion++;
  }

  /**
   * Serves one stream until the client goes, is cut off, loses its token, or the service stops:
   * opening, replay, `replay-complete`, then live events.
   */
  async serve(out: ResponseStream, request: StreamRequest): Promise<void> {
    const { settings, log } = this.o;
    const recipient = request.claims.sub;
    const state = this.recipients.get(recipient);
    if (this.stopping || this.streams.size >= settings.maxStreams || (state?.streams ?? 0) >= settings.maxStreamsPerUser) {
      const why = this.stopping
        ? 'the service is shutting down'
        : this.streams.size >= settings.maxStreams
          ? `too many notification streams (notifications.maxStreams ${settings.maxStreams}); retry later`
          : `too many notification streams for this user (notifications.maxStreamsPerUser ${settings.maxStreamsPerUser}); retry later`;
      log.warn({ user: recipient, streams: this.streams.size }, `notification stream refused: ${why}`);
      void out.write(refusedStream(why));
      return;
    }
    const stream = new NotificationStream(
      out,
      request.token,
      request.claims,
      settings.streamQueueBytes,
      (who, lo, hi) => this.covered(who, lo, hi),
      (cut) => log.warn({ user: cut.recipient, queuedBytes: cut.out.queuedBytes, limit: settings.streamQueueBytes }, 'notification stream cut: the client reads too slowly (notifications.streamQueueBytes); it resumes with Last-Event-ID'),
      request.signal,
    );
    stream.checkedAt = performance.now();
    const recipientState = this.acquire(recipient);
    try {
      // One synchronous step from the replay query to being registered for live rows.
      const now = this.o.clock.now();
      const grant = this.grantOf(request.claims);
      const maxId = this.o.tables.maxId();
      const start = request.lastEventId !== null ? request.lastEventId + 1 : 1;
      const rows = this.replayRows(grant, now, maxId, request.lastEventId === null ? recipientState.ranges : null, start);
      stream.liveFrom = maxId + 1;
      this.streams.add(stream);
      stream.send(STREAM_OPENING, null, true);
      for (const row of rows) {
        const id = Number(row.id);
        if (stream.send(this.eventOf(row, now), { lo: start, hi: id }, true)) this.eventsDelivered++;
        if (row.deliveredAt === null) this.markDelivered(id, now);
      }
      const replayedTo = rows.length < REPLAY_LIMIT ? maxId : Number(rows[rows.length - 1].id);
      stream.send(replayCompleteEvent(rows.length), { lo: start, hi: replayedTo }, true);
      await stream.finished;
    } finally {
      this.streams.delete(stream);
      this.release(recipient);
    }
  }

  /**
   * Queues a committed notification for the streams that may see it. The fan-out runs after the
   * current turn of the event loop (the request that made the row is answered first) and in
   * slices of at most FANOUT_SLICE_MS, so thousands of streams never hold other requests long;
   * rows queued meanwhile go out together, one write per stream. A stream registered after the
   * row was committed had it in its replay (`liveFrom`), so the delay cannot duplicate it.
   */
  publish(entity: Entity): void {
    if (this.streams.size === 0) return;
    this.pending.push(entity);
    this.scheduleFanOut();
  }

  private scheduleFanOut(): void {
    this.fanOutTimer ??= setImmediate(() => {
      this.fanOutTimer = null;
      this.fanOut();
    });
  }

  private fanOut(): void {
    const began = performance.now();
    if (!this.batch) {
      if (this.pending.length === 0) return;
      const now = this.o.clock.now();
      const rows = this.pending.splice(0, FANOUT_BATCH_ROWS).map((entity) => ({
        entity,
        id: Number(entity.id),
        fields: audienceFields(entity),
        bytes: null as Buffer | null,
        sent: false,
      }));
      this.batch = { rows, now, streams: [...this.streams], next: 0 };
    }
    const batch = this.batch;
    const { rows, now } = batch;
    const parts: Buffer[] = [];
    while (batch.next < batch.streams.length) {
      const stream = batch.streams[batch.next++];
      if (!stream.open) continue;
      parts.length = 0;
      let lastId = 0;
      let grant: AccessGrant | null | undefined;
      for (const row of rows) {
        if (row.id < stream.liveFrom) continue; // it was in this stream's replay
        lastId = row.id;
        const expired = row.fields.expiresAt !== null && row.fields.expiresAt <= now;
        if (expired) continue;
        if (grant === undefined) grant = this.currentGrant(stream);
        if (!grant) break;
        if (!grant.seesNotification(row.fields, now)) continue;
        row.bytes ??= this.eventOf(row.entity, now);
        row.sent = true;
        parts.push(row.bytes);
      }
      if (lastId === 0 || grant === null) continue;
      if (parts.length === 0) stream.pass(lastId);
      else if (stream.send(parts.length === 1 ? parts[0] : Buffer.concat(parts), { lo: stream.liveFrom, hi: lastId })) this.eventsDelivered += parts.length;
      else this.eventsDropped += parts.length;
      if ((batch.next & 63) === 0 && performance.now() - began > FANOUT_SLICE_MS) break;
    }
    if (batch.next >= batch.streams.length) {
      for (const row of rows) if (row.sent && row.entity.deliveredAt === null) this.markDelivered(row.id, now);
      this.batch = null;
    }
    if (this.batch || this.pending.length > 0) this.scheduleFanOut();
  }

  // ---- internals ---------------------------------------------------------

  /** The visible rows to replay: after Last-Event-ID, or (ranges given) those not yet delivered to the recipient. */
  private replayRows(grant: AccessGrant, now: number, maxId: number, ranges: DeliveredRanges | null, start: number): Entity[] {
    const select = this.o.tables.visibleRows(this.def, grant, now);
    // The id gaps the recipient has not had, in order (the whole span with Last-Event-ID).
    const gaps: Array<[number, number]> = [];
    let from = start;
    for (const [lo, hi] of ranges?.list ?? []) {
      if (hi < from) continue;
      if (lo > from) gaps.push([from, Math.min(lo - 1, maxId)]);
      from = Math.max(from, hi + 1);
      if (from > maxId) break;
    }
    if (from <= maxId) gaps.push([from, maxId]);
    const rows: Entity[] = [];
    for (const [lo, hi] of gaps) {
      if (lo > hi) continue;
      const found = select(lo, hi, REPLAY_LIMIT - rows.length);
      for (const row of found) rows.push(toWire(this.def, row));
      if (rows.length >= REPLAY_LIMIT) break;
    }
    return rows;
  }

  private eventOf(entity: Entity, now: number): Buffer {
    const wire = entity.deliveredAt === null || entity.deliveredAt === undefined ? { ...entity, deliveredAt: now } : entity;
    return notificationEvent(Number(entity.id), JSON.stringify(wire));
  }

  /** The grant a stream's caller has now; null (and the stream ended) when its token no longer holds. */
  private currentGrant(stream: NotificationStream): AccessGrant | null {
    const at = performance.now();
    if (at - stream.checkedAt >= RECHECK_MS) {
      stream.checkedAt = at;
      try {
        stream.claims = this.o.verifyToken(stream.token);
      } catch (err) {
        this.o.log.info({ user: stream.recipient, reason: (err as Error).message }, 'notification stream ended: its token no longer holds');
        stream.end();
        return null;
      }
    }
    return this.grantOf(stream.claims);
  }

  private grantOf(claims: Claims): AccessGrant {
    let audience = this.audiences.get(claims);
    if (!audience || audience.version !== this.hierarchyVersion) {
      audience = { version: this.hierarchyVersion, grant: this.o.grantOf(claims) };
      this.audiences.set(claims, audience);
    }
    return audience.grant;
  }

  private keepalive(): void {
    for (const stream of this.streams) {
      if (this.currentGrant(stream)) stream.send(KEEPALIVE, null);
    }
  }

  private acquire(recipient: string): RecipientState {
    let state = this.recipients.get(recipient);
    if (!state) {
      const stored = this.o.tables.rangesOf(recipient);
      state = { ranges: stored === undefined ? new DeliveredRanges() : DeliveredRanges.parse(stored), streams: 0, dirty: false };
      this.recipients.set(recipient, state);
    }
    state.streams++;
    return state;
  }

  private release(recipient: string): void {
    const state = this.recipients.get(recipient);
    if (!state) return;
    if (--state.streams > 0) return;
    if (state.dirty) this.o.tables.setRanges(recipient, JSON.stringify(state.ranges), this.o.clock.now());
    this.recipients.delete(recipient);
  }

  private covered(recipient: string, lo: number, hi: number): void {
    const state = this.recipients.get(recipient);
    if (state && state.ranges.add(lo, hi)) state.dirty = true;
  }

  private flushRanges(): void {
    const dirty = [...this.recipients].filter(([, state]) => state.dirty);
    if (dirty.length === 0) return;
    const at = this.o.clock.now();
    try {
      this.o.tables.transaction(() => {
        for (const [recipient, state] of dirty) {
          this.o.tables.setRanges(recipient, JSON.stringify(state.ranges), at);
          state.dirty = false;
        }
      });
      if (this.marksWritten.observed) this.marksWritten.emit({ ranges: dirty.map(([recipient, state]) => ({ recipient, ranges: state.ranges.toJSON() })), delivered: [] });
    } catch (err) {
      this.o.log.error({ err: String(err) }, 'could not record which notifications were delivered; they may be replayed again');
    }
  }

  /**
   * Marks another node's streams made (a cluster's leader takes its secondaries'): merged into
   * what this node holds, in memory when a stream of the recipient is open here (so its next
   * write-down keeps them), else in the store at once.
   */
  mergeMarks(marks: DeliveryMarks): void {
    const at = this.o.clock.now();
    this.o.tables.transaction(() => {
      for (const { recipient, ranges } of marks.ranges) {
        const open = this.recipients.get(recipient);
        const target = open?.ranges ?? DeliveredRanges.parse(this.o.tables.rangesOf(recipient) ?? '[]');
        let changed = false;
        for (const [lo, hi] of ranges) changed = target.add(lo, hi) || changed;
        if (open) open.dirty ||= changed;
        else if (changed) this.o.tables.setRanges(recipient, JSON.stringify(target), at);
      }
      for (const [id, deliveredAt] of marks.delivered) this.o.tables.setDelivered(id, deliveredAt);
    });
  }

  private markDelivered(id: number, at: number): void {
    if (!this.deliveredNow.has(id)) this.deliveredNow.set(id, at);
    this.deliveredFlush ??= setImmediate(() => this.flushDelivered());
  }

  private flushDelivered(): void {
    if (this.deliveredFlush) clearImmediate(this.deliveredFlush);
    this.deliveredFlush = null;
    if (this.deliveredNow.size === 0) return;
    const batch = this.deliveredNow;
    this.deliveredNow = new Map();
    try {
      this.o.tables.transaction(() => {
        for (const [id, at] of batch) this.o.tables.setDelivered(id, at);
      });
      if (this.marksWritten.observed) this.marksWritten.emit({ ranges: [], delivered: [...batch] });
    } catch (err) {
      this.o.log.error({ err: String(err) }, 'could not set deliveredAt of delivered notifications');
    }
  }
}

/** The columns that decide visibility, from the wire form (ids there are strings). */
function audienceFields(entity: Entity): NotificationAudienceFields {
  const id = (value: unknown) => (value === null || value === undefined ? null : Number(value));
  return {
    userId: typeof entity.userId === 'string' ? entity.userId : null,
    orgsId: id(entity.orgsId),
    sitesId: id(entity.sitesId),
    unitsId: id(entity.unitsId),
    expiresAt: typeof entity.expiresAt === 'number' ? entity.expiresAt : null,
  };
}
