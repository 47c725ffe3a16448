// External ingest (WIRE.md part 2 "Ingest"): a collector names its ingest client (an
// `ingestconfigs` row) and a tag group; its body, in any write format or as rows, InfluxDB
// line protocol or a Prometheus remote write, goes to that client's collection through the same storage write as
// /svcapi/write_fast, decoded and access-checked in the storage worker. Here: the client, the
// rate limit per client and caller, the counters, and backfill's place behind live ingest.

import type { Accounts, Credentials, PasswordCheck } from '../auth/api.js';
import type { ServiceClock } from '../clock.js';
import type { Config } from '../config.js';
import type { GrantedRequest as Request } from '../host/plugin.js';
import { SlidingWindowLimiter } from '../http/rate-limit.js';
import type { IngestClientsTable } from '../meta/tables/ingest-clients.js';
import type { Collections, PointWriter, WriteOptions, WriteResult } from '../storage/api.js';
import type { Precision } from '../../native-free-codecs/line-protocol.js';
import { ServiceError, forbidden } from '../../shared/errors.js';
import { LINE_PROTOCOL, PROM_REMOTE_WRITE } from '../../shared/protocol.js';
import { collectionId, validateScope } from '../../shared/scope-path.js';
import { IngestClients } from './clients.js';
import { IngestCredentials } from './credentials.js';
import { IngestStats, type IngestCounters } from './stats.js';

export interface IngestOptions {
  settings: Config['ingest'];
  clients: IngestClientsTable;
  writer: PointWriter;
  collections: Collections;
  credentials: Credentials;
  passwords: PasswordCheck;
  accounts: Accounts;
  clock: ServiceClock;
}

/** The grid of a client with no grid of its own and no tag group (a line protocol write without `rp`). */
export const DEFAULT_GRID = 'default';

/** Longest a backfill write waits for live ingest to finish before it goes anyway (so it is never starved). */
const BACKFILL_MAX_WAIT_MS = 1000;

export interface IngestRequest {
  clientId: string;
  /** The path's tag group, `rp`, or the bucket's suffix; null when none was given. */
  tagGroup: string | null;
  backfill: boolean;
  /** Line protocol with this timestamp unit; absent for the other bodies. */
  precision?: Precision;
  /** A Prometheus remote write 1.0 body (snappy-compressed protobuf). */
  remoteWrite?: boolean;
}

/** What Prometheus sends (remote write 1.0); a `proto` parameter naming another message is remote write 2.0, which is not spoken here. */
const REMOTE_WRITE_CONTENT_TYPE = 'application/x-protobuf';
const REMOTE_WRITE_1_MESSAGE = 'prometheus.WriteRequest';

export class IngestService {
  readonly stats = new IngestStats();
  readonly credentials: IngestCredentials;
  readonly clients: IngestClients;
  private readonly limiter: SlidingWindowLimiter;
  private liveWrites = 0;
  private liveIdle: Array<() => void> = [];
  /** Backfill writes go one at a time, each behind the live writes running when it starts. */
  private backfillTail: Promise<unknown> = Promise.resolve();

  constructor(private readonly o: IngestOptions) {
    const { settings } = o;
    this.clients = new IngestClients(o.clients);
    this.limiter = new SlidingWindowLimiter(settings.rateLimitPerMinute, 60_000, o.clock.now);
    this.credentials = new IngestCredentials(
      o.credentials.cached(settings.tokenCacheSeconds, settings.tokenCacheMaxEntries),
      o.accounts,
      o.passwords,
      o.clock,
      settings.tokenCacheSeconds,
      settings.tokenCacheMaxEntries,
    );
  }

  /**
   * Writes one ingest body; 404 unknown client, 403 when the client's unit is outside the caller's
   * grant, 429 over the rate, 413 too large once decoded. The rate is charged only after the access
   * check, and per client and caller: a caller refused here, or one over its own budget, never
   * uses up the budget of the collector the client belongs to.
   */
  async write(req: Request, ingest: IngestRequest): Promise<WriteResult> {
    const client = this.clients.resolve(ingest.clientId);
    const grid = client.grid ?? ingest.tagGroup ?? DEFAULT_GRID;
    // The storage worker's check and message, made here first: a refused caller costs no budget.
    if (!this.o.collections.reachesUnit(req.grant, client)) throw forbidden(`collection ${collectionId({ ...client, grid })} is outside your access grant`);
    const counters = this.stats.of(client, grid);
    counters.requests++;
    counters.lastSeen = Date.now();
    const budget = rateKey(client.clientId, req.user?.sub ?? '');
    if (!this.limiter.take(budget)) {
      counters.rateLimited++;
      counters.rejectedRequests++;
      throw new ServiceError('RATE_LIMITED', `ingest client ${JSON.stringify(client.clientId)} is over ingest.rateLimitPerMinute for you (${this.o.settings.rateLimitPerMinute} requests a minute)`, { headers: {
        'retry-after': String(this.limiter.retryAfterSeconds(budget)),
      } });
    }
    try {
      const result = await this.store(req, ingest, { organization: client.organization, site: client.site, unit: client.unit, grid });
      count(counters, result);
      return result;
    } catch (err) {
      counters.rejectedRequests++;
      throw err;
    }
  }

  /** Counters of the clients whose unit the caller can reach (every client for admins). */
  visibleStats(req: Request): IngestCounters[] {
    return this.stats.list((scope) => this.o.collections.reachesUnit(req.grant, scope));
  }

  private async store(req: Request, ingest: IngestRequest, scope: { organization: string; site: string; unit: string; grid: string }): Promise<WriteResult> {
    validateScope(scope); // a tag group that cannot be a folder name is a 400 naming it
    const encoding = (req.headers['content-encoding'] ?? 'identity').trim().toLowerCase();
    if (ingest.remoteWrite) checkRemoteWrite(req.headers['content-type'], encoding);
    else if (encoding !== 'identity' && encoding !== 'gzip' && encoding !== '') {
      throw new ServiceError('UNSUPPORTED_MEDIA_TYPE', `Content-Encoding ${JSON.stringify(encoding)} is not supported (gzip or none)`);
    }
    const settings = this.o.settings;
    // Compressed bodies are decoded in the storage worker, bounded there by ingest.maxBodyBytes.
    const compressed = encoding === 'gzip' || encoding === 'snappy' ? encoding : undefined;
    const options: WriteOptions = {
      defaultScope: scope,
      rows: true,
      autoCreate: true,
      backfill: ingest.backfill || undefined,
      route: req.route,
      ...(compressed ? { contentEncoding: compressed, maxDecodedBytes: settings.maxBodyBytes, maxDecodedSetting: 'ingest.maxBodyBytes' } : {}),
      ...(ingest.precision ? { lineProtocol: { precision: ingest.precision, nowMs: this.o.clock.now() } } : {}),
    };
    const contentType = ingest.precision ? LINE_PROTOCOL : ingest.remoteWrite ? PROM_REMOTE_WRITE : (req.headers['content-type'] ?? 'application/json').toLowerCase();
    const write = () => this.o.writer.write(req.grant, req.rawBody!, contentType, 'fast', req.signal, options);
    return ingest.backfill ? this.behindLive(write) : this.live(write);
  }

  private async live<T>(write: () => Promise<T>): Promise<T> {
    this.liveWrites++;
    try {
      return await write();
    } finally {
      if (--this.liveWrites === 0) for (const wake of this.liveIdle.splice(0)) wake();
    }
  }

  /** Runs a backfill write after the ones queued before it, once live writes pause (or a second has passed). */
  private behindLive<T>(write: () => Promise<T>): Promise<T> {
    const turn = this.backfillTail.then(async () => {
      if (this.liveWrites > 0) {
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, BACKFILL_MAX_WAIT_MS);
          this.liveIdle.push(() => {
            clearTimeout(timer);
            resolve();
          });
        });
      }
      return write();
    });
    this.backfillTail = turn.catch(() => {});
    return turn;
  }
}

/** A remote write body must be snappy-compressed protobuf of remote write 1.0: else 415 naming what came. */
function checkRemoteWrite(contentType: string | undefined, encoding: string): void {
  if (encoding !== 'snappy') {
    throw new ServiceError('UNSUPPORTED_MEDIA_TYPE', `Content-Encoding ${JSON.stringify(encoding)} is not supported by remote write: send Content-Encoding: snappy`);
  }
  if (contentType === undefined) return;
  const [type, ...params] = contentType.split(';').map((part) => part.trim());
  const proto = params.find((p) => p.toLowerCase().startsWith('proto='))?.slice(6);
  if (type.toLowerCase() !== REMOTE_WRITE_CONTENT_TYPE || (proto !== undefined && proto !== REMOTE_WRITE_1_MESSAGE)) {
    throw new ServiceError('UNSUPPORTED_MEDIA_TYPE', `Content-Type ${JSON.stringify(contentType)} is not supported by remote write: send ${REMOTE_WRITE_CONTENT_TYPE} (remote write 1.0, ${REMOTE_WRITE_1_MESSAGE})`);
  }
}

/** One rate budget per client and caller (NUL cannot occur in an email or a client id sent in a URL). */
function rateKey(clientId: string, caller: string): string {
  return `${clientId}\0${caller}`;
}

function count(counters: IngestCounters, result: WriteResult): void {
  if (!result.success) {
    counters.rejectedRequests++;
    return;
  }
  counters.points += result.points;
  if (result.lines) {
    counters.rejectedLines += result.lines.rejected;
    counters.skippedStringFields += result.lines.stringFields;
    if (result.lines.partialError !== null) counters.rejectedRequests++; // answered 400 partial write
  }
}
