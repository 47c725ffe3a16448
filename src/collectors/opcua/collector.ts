// One running OPC UA collector: a loop of connections. Each connection is made from scratch
// (client, secure channel, session, browse, subscription) and lives until it breaks; then the loop
// waits with backoff and makes the next one. node-opcua's own reconnection is off (maxRetry 0): a
// fresh session after a server restart must re-browse (new variables join) and re-create the
// subscription anyway, and one path for every kind of loss is easier to trust. While disconnected
// nothing is written; after a reconnect the gap is read back from the server's history where it
// keeps one, and written as back-fill.

import type { CollectorDefinition, CollectorSink, CollectorState, DriverEnvironment, RunningCollector } from '../driver.js';
import { ensureAppCertificate } from './app-certificate.js';
import { ValueBatcher } from './batcher.js';
import { parseConnection, parseItems, type OpcuaConnection, type OpcuaItem } from './config.js';
import { holdSecrets, loadOpcua, scrub, type OpcuaLib } from './library.js';
import { openSession, monitorAll, type Monitored } from './session.js';
import { backfillGap, type GapItem } from './history.js';
import { convertDataValue } from './values.js';
import { Connection, ConnectionEnd, describe } from './connection.js';

const BACKOFF_FIRST_MS = 1000;
const BACKOFF_MAX_MS = 30_000;
/** After a refusal that needs a person (trust, credentials), tries are rarer. */
const BACKOFF_FAILED_MAX_MS = 300_000;
const CLOSE_TIMEOUT_MS = 3000;

/** Answers that mean the server keeps no history (no use asking again). */
const NO_HISTORY = /BadServiceUnsupported|BadHistoryOperationUnsupported|BadHistoryOperationInvalid|BadNotSupported|BadNotReadable|BadUserAccessDenied/;
const BACKFILL_ATTEMPTS = 3;
const BACKFILL_RETRY_MS = 1000;

export class OpcuaCollector implements RunningCollector {
  private stopped = false;
  private current: Connection | null = null;
  private wakeSleep: (() => void) | null = null;
  private loopDone: Promise<void> = Promise.resolve();
  private monitoredCount = 0;
  private reported: { state: CollectorState; error: string | undefined } = { state: 'connecting', error: undefined };
  /** Per tag: the source timestamp of the last live value (a value re-sent unchanged after a reconnect is not stored twice). */
  private readonly lastTs = new Map<string, number>();
  /** Per tag: where its unfilled gap starts (the last value seen before a loss), until a back-fill has covered it. */
  private readonly gapFrom = new Map<string, { nodeId: string; ts: number }>();
  private readonly batcher: ValueBatcher;
  private readonly releaseSecrets: () => void;
  private connection: OpcuaConnection | null = null;
  private items: OpcuaItem[] = [];
  /** Whether the gap since the last values stored before this start (a restart, a new leader) was looked for. */
  private resumed = false;

  constructor(private readonly definition: CollectorDefinition, private readonly sink: CollectorSink, private readonly env: DriverEnvironment) {
    this.batcher = new ValueBatcher(sink);
    const c = definition.connection;
    this.releaseSecrets = holdSecrets([c.password, c.private_key_pem].map((v) => (typeof v === 'string' ? v : undefined)));
  }

  begin(): void {
    try {
      this.connection = parseConnection(this.definition.connection);
      this.items = parseItems(this.definition.items, this.connection.publishingIntervalMs);
    } catch (err) {
      // A definition saved before a rule changed: the collector fails, the service goes on.
      this.report('failed', scrub(err instanceof Error ? err.message : String(err)));
      return;
    }
    this.loopDone = this.loop().catch((err: unknown) => {
      this.sink.log.error({ err: scrub(String(err)) }, 'OPC UA collector loop ended unexpectedly');
      this.report('failed', 'internal error; see the service log');
    });
  }

  itemCount(): number {
    return this.monitoredCount;
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.current?.end('stopped');
    this.wakeSleep?.();
    await this.loopDone;
    this.batcher.close();
    await Promise.race([this.batcher.idle(), new Promise((resolve) => setTimeout(resolve, 5000).unref())]);
    this.releaseSecrets();
  }

  private async loop(): Promise<void> {
    const lib = await loadOpcua(this.sink.log);
    let failures = 0;
    while (!this.stopped) {
      const conn = new Connection();
      this.current = conn;
      try {
        await this.connectOnce(lib, conn);
      } catch (err) {
        conn.end(describe(err), err instanceof ConnectionEnd && err.fatal);
      }
      const end = conn.ended ?? new ConnectionEnd('connection ended', false);
      await this.close(conn);
      if (this.stopped) break;
      const connected = conn.up;
      if (connected) {
        failures = 0;
        this.markGap();
      }
      failures++;
      const message = scrub(end.message).replace(/\s+/g, ' ').trim();
      this.report(end.fatal ? 'failed' : 'reconnecting', message);
      this.sink.log.info({ error: message, retry: failures }, connected ? 'OPC UA connection lost' : 'OPC UA connection failed');
      const cap = end.fatal ? BACKOFF_FAILED_MAX_MS : BACKOFF_MAX_MS;
      const delay = Math.min(cap, BACKOFF_FIRST_MS * 2 ** Math.min(failures - 1, 20)) * (0.8 + Math.random() * 0.4);
      await this.sleep(delay);
    }
  }

  /** One connection from scratch, until it ends (`conn.up` once every item is monitored). */
  private async connectOnce(lib: OpcuaLib, conn: Connection): Promise<void> {
    const config = this.connection!;
    const cert = ensureAppCertificate(this.env.secretsDir);
    const opened = await openSession(lib, conn, config, cert, this.definition.id);
    const plan = await opened.plan(this.items, this.sink.log);
    if (!this.resumed) await this.resumeFromStorage(plan.monitored);
    const gap = this.gapItems(plan.monitored);
    const monitored = await monitorAll(lib, conn, config, plan.monitored, (item, dv) => this.onValue(item, dv), this.sink.log);
    this.monitoredCount = monitored;
    conn.up = true;
    this.report('connected', undefined);
    this.sink.log.info({ items: monitored, browsed: plan.browsed, security: config.securityMode }, 'OPC UA collector connected');
    if (gap.length > 0) void this.backfill(lib, conn, gap, await opened.serverTime());
    await conn.endedPromise;
  }

  private onValue(item: Monitored, dv: Parameters<typeof convertDataValue>[0]): void {
    const converted = convertDataValue(dv, this.connection!.keepUncertain, this.env.now());
    if (typeof converted === 'string') {
      this.batcher.skip(converted);
      return;
    }
    if (this.lastTs.get(item.tag) === converted.ts) return;
    this.lastTs.set(item.tag, converted.ts);
    this.batcher.add({ tag: item.tag, ts: converted.ts, value: converted.value });
  }

  /**
   * On the first connect of this run: each tag's gap starts at the newest value storage holds
   * for it, so what the service missed while it was down (or another node led) is back-filled
   * from the server's history like a lost connection's gap. Tags never stored have no gap.
   */
  private async resumeFromStorage(monitored: Monitored[]): Promise<void> {
    try {
      const stored = await this.sink.lastStored(monitored.map((m) => m.tag));
      for (const m of monitored) {
        const ts = stored.get(m.tag);
        if (ts !== undefined && !this.gapFrom.has(m.tag) && !this.lastTs.has(m.tag)) this.gapFrom.set(m.tag, { nodeId: m.nodeId, ts });
      }
      this.resumed = true;
    } catch (err) {
      this.sink.log.warn({ error: scrub(describe(err)) }, 'OPC UA collector could not read what storage holds; no back-fill of the time it was down');
      this.resumed = true;
    }
  }

  /** At a loss: every tag with a last value and no older unfilled gap gets a gap from that value on. */
  private markGap(): void {
    for (const [tag, ts] of this.lastTs) if (!this.gapFrom.has(tag) && this.nodeOf.has(tag)) this.gapFrom.set(tag, { nodeId: this.nodeOf.get(tag)!, ts });
  }

  private readonly nodeOf = new Map<string, string>();

  private gapItems(monitored: Monitored[]): GapItem[] {
    for (const m of monitored) this.nodeOf.set(m.tag, m.nodeId);
    const out: GapItem[] = [];
    for (const m of monitored) {
      const from = this.gapFrom.get(m.tag);
      if (from && from.nodeId === m.nodeId) out.push({ tag: m.tag, nodeId: m.nodeId, lastTs: from.ts });
    }
    // Gaps of tags no longer served (a browsed variable that went away) cannot be filled.
    const served = new Set(monitored.map((m) => m.tag));
    for (const tag of [...this.gapFrom.keys()]) if (!served.has(tag)) this.gapFrom.delete(tag);
    return out;
  }

  private async backfill(lib: OpcuaLib, conn: Connection, gap: GapItem[], until: Date, attempt = 1): Promise<void> {
    const keepUncertain = this.connection!.keepUncertain;
    try {
      // Values already stored by an earlier attempt come again; storage keeps one per timestamp.
      const result = await backfillGap(
        lib, conn.session!, gap, until,
        (dv) => convertDataValue(dv, keepUncertain, until.getTime()),
        (values) => this.batcher.addBackfill(values),
        () => conn.ended !== null || this.stopped,
      );
      if (conn.ended || this.stopped) return;
      for (const item of gap) this.gapFrom.delete(item.tag);
      if (result.skippedBad > 0) this.batcher.skip('bad status', result.skippedBad);
      this.sink.log.info({ items: gap.length, items_with_history: result.itemsWithHistory, values: result.values }, 'OPC UA gap back-filled from history');
    } catch (err) {
      if (conn.ended || this.stopped) return;
      const error = scrub(describe(err));
      // A timeout or a busy server is worth another try while the connection holds; a server
      // without HistoryRead answers the whole service Bad: the gap stays, nothing is invented.
      if (!NO_HISTORY.test(error) && attempt < BACKFILL_ATTEMPTS) {
        this.sink.log.info({ error, attempt }, 'OPC UA gap back-fill failed; trying again');
        await this.sleep(BACKFILL_RETRY_MS * attempt);
        if (!conn.ended && !this.stopped) return this.backfill(lib, conn, gap, until, attempt + 1);
        return;
      }
      for (const item of gap) this.gapFrom.delete(item.tag);
      this.sink.log.info({ error }, 'OPC UA gap not back-filled: the server gave no history');
    }
  }

  private async close(conn: Connection): Promise<void> {
    for (const t of conn.timers) clearInterval(t);
    const quick = <T>(p: Promise<T> | undefined): Promise<unknown> =>
      p ? Promise.race([p.catch(() => undefined), new Promise((resolve) => setTimeout(resolve, CLOSE_TIMEOUT_MS).unref())]) : Promise.resolve();
    const broken = conn.ended !== null && conn.ended.message !== 'stopped';
    // Over a broken channel there is nobody to tell; on stop the server is told, so it frees the session at once.
    if (!broken && conn.session) await quick(conn.session.close(true));
    if (conn.client) await quick(conn.client.disconnect());
    this.batcher.flush();
  }

  private report(state: Exclude<CollectorState, 'disabled'>, error: string | undefined): void {
    if (this.reported.state === state && this.reported.error === error) return;
    this.reported = { state, error };
    this.sink.state(state, error);
  }

  private sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(done, ms);
      function done(): void {
        clearTimeout(timer);
        resolve();
      }
      this.wakeSleep = done;
    });
  }
}
