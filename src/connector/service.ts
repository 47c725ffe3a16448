// The asset-hierarchy connector (SPEC "Asset-hierarchy connector", WIRE.md part 2): browsing a
// PI Web API (asset servers, databases, elements, attributes) and backfilling recorded values
// into a collection.
//
// A backfill is a background job (process log kind `backfill`) that reads one page of recorded
// values at a time (bounded memory), writes it through the backfill write path (no alarms), and
// records after each page how far each attribute has come, in `connector_backfills`. So a restart
// resumes it from the last written timestamp, under the same job id, and nothing is written twice.

import type { Accounts } from '../auth/api.js';
import type { Config } from '../config.js';
import { checkedSegment } from '../http/upstream-path.js';
import type { Claims } from '../http/caller.js';
import type { Job, ProcessLog } from '../jobs/api.js';
import type { Logger } from '../log.js';
import type { AccessGrant } from '../meta/access-grant.js';
import type { MetaStore } from '../meta/store.js';
import type { BackfillRow } from '../meta/tables/backfills.js';
import type { Collections, PointWriter } from '../storage/api.js';
import { tagNameProblem } from '../../native-free-codecs/point-batch.js';
import { ServiceError, badRequest, forbidden } from '../../shared/errors.js';
import { validateScope } from '../../shared/scope-path.js';
import { Connections, CONNECTION_FIELDS } from './connections.js';
import { PiClient, piTimestampMs, type PiConnection, type PiItem } from './pi-client.js';
import { SecretBox } from '../secret-box.js';

export interface ConnectorOptions {
  settings: Config['connector'] & { dataDir: string };
  meta: MetaStore;
  writer: PointWriter;
  collections: Collections;
  accounts: Accounts;
  jobs: ProcessLog;
  log: Logger;
}

interface BackfillRequest {
  /** `{connection_id}`, or an admin's ad-hoc fields with password/token sealed. */
  connection: Record<string, unknown>;
  attributes: Array<{ web_id: string; tag: string }>;
  scope: { organization: string; site: string; unit: string; grid: string };
  start: number;
  end: number;
}

const BASE_FIELDS = ['WebId', 'Name', 'Path', 'Description'];

export class ConnectorService {
  readonly connections: Connections;
  private readonly box: SecretBox;
  private readonly running = new Map<string, AbortController>();
  private stopping = false;

  constructor(private readonly o: ConnectorOptions) {
    this.box = SecretBox.open(o.settings.dataDir);
    this.connections = new Connections(o.meta.entities, this.box, o.settings.allowedHosts.map((h) => h.toLowerCase()));
  }

  /** Backfills running on this node now. */
  get runningBackfills(): number {
    return this.running.size;
  }

  /** Backfills left running (by a stop, a crash, or a leader that lost the lead) go on here, once this node leads. */
  resumeInterrupted(): void {
    if (this.stopping) return;
    const rows = this.o.meta.backfills.unfinished();
    for (const row of rows) {
      if (this.running.has(row.id)) continue;
      this.o.log.info({ job: row.id }, 'resuming an interrupted connector backfill');
      this.launch(row.id, row.owner, JSON.parse(row.request) as BackfillRequest, JSON.parse(row.cursor) as number[], row.written, row.skipped, true);
    }
  }

  async stop(): Promise<void> {
    this.stopping = true;
    for (const controller of this.running.values()) controller.abort();
  }

  /** This node no longer leads: its backfills stop where they are, and the new leader resumes them. */
  pauseAll(): void {
    for (const controller of this.running.values()) controller.abort();
  }

  // ---- browse ---------------------------------------------------------------

  async listAssetServers(body: Record<string, unknown>, grant: AccessGrant) {
    return this.browse(body, grant, (pi) => pi.list('/assetservers', [...BASE_FIELDS, 'IsConnected']), (i) => ({ ...base(i), is_connected: i.IsConnected ?? null }));
  }

  async listDatabases(body: Record<string, unknown>, grant: AccessGrant) {
    const webId = requiredWebId(body);
    return this.browse(body, grant, (pi) => pi.list(`/assetservers/${encodeURIComponent(webId)}/assetdatabases`, BASE_FIELDS), base);
  }

  async listChildren(body: Record<string, unknown>, grant: AccessGrant) {
    const webId = requiredWebId(body);
    if (typeof body.is_database !== 'boolean') throw badRequest('is_database must be true (web_id is a database) or false (an element)');
    const resource = body.is_database ? `/assetdatabases/${encodeURIComponent(webId)}/elements` : `/elements/${encodeURIComponent(webId)}/elements`;
    return this.browse(body, grant, (pi) => pi.listAll(resource, [...BASE_FIELDS, 'TemplateName', 'HasChildren']), (i) => ({
      ...base(i), template_name: i.TemplateName ?? null, has_children: i.HasChildren ?? false,
    }));
  }

  async listAttributes(body: Record<string, unknown>, grant: AccessGrant) {
    const webId = requiredWebId(body);
    return this.browse(body, grant, (pi) => pi.listAll(`/elements/${encodeURIComponent(webId)}/attributes`, [...BASE_FIELDS, 'Type', 'DefaultUnitsName']), (i) => ({
      ...base(i), type: i.Type ?? null, units: i.DefaultUnitsName ?? null,
    }));
  }

  private async browse(body: Record<string, unknown>, grant: AccessGrant, read: (pi: PiClient) => Promise<PiItem[]>, map: (item: PiItem) => Record<string, unknown>) {
    const pi = new PiClient(this.connections.resolve(body, grant));
    try {
      const items = (await read(pi)).map(map);
      return { items, total: items.length };
    } finally {
      pi.close();
    }
  }

  // ---- backfill -------------------------------------------------------------

  /** Checks a backfill body and starts its job; answers the job id at once. */
  startBackfill(body: Record<string, unknown>, claims: Claims): { job_id: string } {
    const grant = this.grantOf(claims.sub);
    this.connections.resolve(body, grant); // its 400, 403 or 404 before anything starts
    const request = this.backfillRequest(body);
    const units = this.o.collections.unitPaths(grant);
    const unitPath = `${request.scope.organization}/${request.scope.site}/${request.scope.unit}`;
    if (units && !units.includes(unitPath)) throw forbidden(`collection ${unitPath}/${request.scope.grid} is outside your access grant`);
    const job = this.o.jobs.begin('backfill', `backfill of ${request.attributes.length} attribute(s) into ${unitPath}/${request.scope.grid}`);
    const cursor = request.attributes.map(() => request.start - 1);
    this.o.meta.backfills.create(job.id, claims.sub, JSON.stringify(request), JSON.stringify(cursor), Date.now());
    this.run(job, claims.sub, request, cursor, 0, 0);
    return { job_id: job.id };
  }

  private backfillRequest(body: Record<string, unknown>): BackfillRequest {
    const connection: Record<string, unknown> = {};
    if (body.connection_id !== undefined) connection.connection_id = body.connection_id;
    for (const field of CONNECTION_FIELDS) {
      if (body[field] === undefined) continue;
      // Ad-hoc secrets are kept sealed in the resumable record, never in plain text.
      connection[field] = (field === 'password' || field === 'token') && typeof body[field] === 'string' ? this.box.seal(body[field] as string) : body[field];
    }
    const attributes = body.attributes;
    if (!Array.isArray(attributes) || attributes.length === 0) throw badRequest('attributes must be a non-empty array of {web_id, tag}');
    if (attributes.length > 10_000) throw badRequest('attributes: at most 10000 a backfill');
    const list = attributes.map((a, i) => {
      const item = a as Record<string, unknown>;
      if (typeof item?.web_id !== 'string' || item.web_id === '') throw badRequest(`attributes[${i}].web_id must be a string`);
      checkedSegment(item.web_id, `attributes[${i}].web_id`);
      if (typeof item.tag !== 'string') throw badRequest(`attributes[${i}].tag must be a string`);
      const problem = tagNameProblem(item.tag);
      if (problem) throw badRequest(`attributes[${i}].tag: ${problem}`);
      return { web_id: item.web_id, tag: item.tag };
    });
    const scope = validateScope({ organization: body.organization, site: body.site, unit: body.unit, grid: body.grid });
    const time = (field: 'start' | 'end') => {
      const v = body[field];
      if (typeof v !== 'number' || !Number.isInteger(v) || v < 0 || v > 2 ** 53 - 1) throw badRequest(`${field} must be epoch ms (a whole number)`);
      return v;
    };
    const start = time('start');
    const end = time('end');
    if (start > end) throw badRequest('start must not be after end');
    return { connection, attributes: list, scope, start, end };
  }

  private launch(id: string, owner: string, request: BackfillRequest, cursor: number[], written: number, skipped: number, resumed: boolean): void {
    const job = this.o.jobs.begin('backfill', `${resumed ? 'resumed ' : ''}backfill of ${request.attributes.length} attribute(s) into ${Object.values(request.scope).join('/')}`, id);
    this.run(job, owner, request, cursor, written, skipped);
  }

  private run(job: Job, owner: string, request: BackfillRequest, cursor: number[], written: number, skipped: number): void {
    const controller = new AbortController();
    this.running.set(job.id, controller);
    const save = (status: string) => this.o.meta.backfills.progress(job.id, JSON.stringify(cursor), written, skipped, status, Date.now());
    void (async () => {
      let pi: PiClient | null = null;
      try {
        const connection = this.openConnection(request.connection, owner);
        pi = new PiClient(connection);
        const pageSize = this.o.settings.recordedPageSize;
        const span = Math.max(1, request.end - request.start + 1);
        for (let a = 0; a < request.attributes.length; a++) {
          const { web_id: webId, tag } = request.attributes[a];
          let from = cursor[a] + 1;
          while (from <= request.end) {
            if (controller.signal.aborted) return; // stopping: resumed at the next start
            const values = await pi.recorded(webId, from, request.end, pageSize);
            const points: Array<[number, number]> = [];
            let last = from - 1;
            for (const value of values) {
              const ts = piTimestampMs(value.Timestamp);
              if (!(ts >= from && ts <= request.end)) continue; // the page boundary, met again
              if (ts > last) last = ts;
              if (value.Good === false || typeof value.Value !== 'number' || !Number.isFinite(value.Value)) {
                skipped++; // a bad value, or a digital state (an object)
                continue;
              }
              points.push([ts, value.Value]);
            }
            // A page of sparse values may span more UTC days than one write may hold.
            for (const part of byDays(points, this.o.writer.maxDaysPerWrite)) {
              const grant = this.grantOf(owner);
              const body = Buffer.from(JSON.stringify({ ...request.scope, tags: { [tag]: part } }));
              const result = await this.o.writer.write(grant, body, 'application/json', 'fast', controller.signal, { backfill: true, autoCreate: true, route: '(connector backfill)' });
              if (!result.success) throw badRequest(`writing ${tag}: ${result.error}`);
              written += part.length;
            }
            const exhausted = values.length < pageSize || last < from;
            cursor[a] = exhausted ? request.end : last;
            save('running');
            const done = request.attributes.length === 0 ? 1 : (a + (Math.min(cursor[a], request.end) - request.start + 1) / span) / request.attributes.length;
            job.progress(done, `attribute ${a + 1} of ${request.attributes.length}: ${written} values written, ${skipped} skipped`);
            if (exhausted) break;
            from = last + 1;
          }
        }
        save('done');
        job.done(`backfilled ${written} values of ${request.attributes.length} attribute(s) into ${Object.values(request.scope).join('/')}; ${skipped} skipped (bad or digital-state values)`);
      } catch (err) {
        if (controller.signal.aborted && this.stopping) return;
        save('failed');
        const message = err instanceof ServiceError ? err.message : `backfill failed: ${(err as Error).message}`;
        job.fail(`${message} (${written} values written, ${skipped} skipped)`);
      } finally {
        pi?.close();
        this.running.delete(job.id);
      }
    })();
  }

  /** The stored connection of a backfill, its sealed ad-hoc secrets opened, checked as its owner. */
  private openConnection(stored: Record<string, unknown>, owner: string): PiConnection {
    const fields = { ...stored };
    for (const field of ['password', 'token']) if (SecretBox.isSealed(fields[field])) fields[field] = this.box.unseal(fields[field] as string);
    return this.connections.resolve(fields, this.grantOf(owner));
  }

  /** The current grant of an account (a backfill runs as the one who started it); 403 when it is gone. */
  private grantOf(email: string): AccessGrant {
    const account = this.o.accounts.current(email);
    if (!account) throw forbidden(`the account ${email} that started this backfill no longer exists`);
    const claims: Claims = { sub: email, role: account.role, units_id: account.units_id, sites_id: account.sites_id, orgs_id: account.orgs_id, exp: Number.MAX_SAFE_INTEGER };
    return this.o.meta.grantOf(claims);
  }
}

function requiredWebId(body: Record<string, unknown>): string {
  if (typeof body.web_id !== 'string' || body.web_id === '') throw badRequest('web_id must be the WebId of the item to list under');
  // It goes into the upstream path with the connection's saved credentials: `..` would climb out.
  return checkedSegment(body.web_id, 'web_id');
}

function base(item: PiItem): Record<string, unknown> {
  return { web_id: item.WebId ?? null, name: item.Name ?? null, path: item.Path ?? null, description: item.Description ?? '' };
}

/** `points` (in time order) in consecutive parts of at most `maxDays` distinct UTC days each. */
function byDays(points: Array<[number, number]>, maxDays: number): Array<Array<[number, number]>> {
  const parts: Array<Array<[number, number]>> = [];
  const days = new Set<number>();
  let part: Array<[number, number]> = [];
  for (const point of points) {
    const day = Math.floor(point[0] / 86_400_000);
    if (!days.has(day) && days.size === maxDays) {
      parts.push(part);
      part = [];
      days.clear();
    }
    days.add(day);
    part.push(point);
  }
  if (part.length > 0) parts.push(part);
  return parts;
}
