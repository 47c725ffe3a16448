// Saved collectors (WIRE.md part 3 "Plant collectors"): their definitions in the metadata store
// (secrets sealed with the connections key, answered as "********"), who may see and change
// them (any token within the collector's unit reads; read-write and admin write), and running
// them on the node that leads: each as its owner, whose grant every write goes through at the
// time of the write, so a collector never reaches further than the account that saved it.

import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { badRequest, forbidden, notFound, ServiceError } from '../../shared/errors.js';
import { validateScope } from '../../shared/scope-path.js';
import type { Accounts } from '../auth/api.js';
import { SecretBox } from '../secret-box.js';
import type { Claims } from '../http/caller.js';
import type { Logger } from '../log.js';
import type { AccessGrant } from '../meta/access-grant.js';
import type { MetaStore } from '../meta/store.js';
import type { CollectorRow } from '../meta/tables/collectors.js';
import type { Notify } from '../notifications/api.js';
import type { Collections, PointReader, PointWriter } from '../storage/api.js';
import type { CollectedValue, CollectorDefinition, CollectorDriver, CollectorState } from './driver.js';
import { CollectorRun, type CollectorStatus } from './running.js';

export const MASK = '********';
const MAX_ITEMS = 100_000;
/** How long an owner's grant is reused between writes (a changed grant is seen within this). */
const GRANT_TTL_MS = 5_000;

/** A collector as the routes answer it: its definition (secrets masked) and whether it is enabled. */
export type CollectorView = CollectorDefinition & { enabled: boolean };

export interface CollectorServiceOptions {
  meta: MetaStore;
  writer: PointWriter;
  reader: PointReader;
  collections: Collections;
  accounts: Accounts;
  notify: Notify;
  drivers: ReadonlyMap<string, CollectorDriver>;
  dataDir: string;
  leads: () => boolean;
  now: () => number;
  log: Logger;
}

export class CollectorService {
  private readonly runs = new Map<string, CollectorRun>();
  private readonly grants = new Map<string, { grant: AccessGrant; until: number }>();
  private readonly abort = new AbortController();
  private started = false;
  /** Opened at start (it may create the key file): routes are not served before. */
  private box!: SecretBox;
  /** Totals of stopped runs, so the /metrics counters never go down. */
  readonly retired = { stored: new Map<string, number>(), skipped: new Map<string, number>() };

  constructor(private readonly o: CollectorServiceOptions) {}

  // ---- definitions ----------------------------------------------------------------------------

  list(grant: AccessGrant): CollectorView[] {
    return this.o.meta.collectors.all().filter((row) => this.sees(grant, row)).map((row) => this.view(row));
  }

  get(grant: AccessGrant, id: string): CollectorView {
    return this.view(this.visibleRow(grant, id));
  }

  async create(claims: Claims, grant: AccessGrant, body: Record<string, unknown>): Promise<CollectorView> {
    const now = this.o.now();
    const row = this.rowOf(body, null, claims.sub, grant, now);
    this.o.meta.collectors.create(row);
    await this.restart(row);
    return this.view(row);
  }

  async update(claims: Claims, grant: AccessGrant, id: string, body: Record<string, unknown>): Promise<CollectorView> {
    const old = this.visibleRow(grant, id);
    const row = this.rowOf({ ...this.view(old), ...body }, old, claims.sub, grant, this.o.now());
    this.o.meta.collectors.update(row);
    await this.restart(row);
    return this.view(row);
  }

  async remove(grant: AccessGrant, id: string): Promise<void> {
    this.visibleRow(grant, id);
    this.o.meta.collectors.delete(id);
    await this.stopRun(id);
    fs.rmSync(this.stateDir(id), { recursive: true, force: true });
  }

  /** A collector's own files (ids are `col-<hex>`, made here, so they are safe folder names). */
  private stateDir(id: string): string {
    return path.join(this.o.dataDir, 'collectors', id);
  }

  status(grant: AccessGrant, id: string): CollectorStatus {
    const row = this.visibleRow(grant, id);
    const run = this.runs.get(id);
    if (run) return { ...run.status, items: run.itemCount() };
    const state: CollectorState = 'disabled';
    const status: CollectorStatus = { state, since_ms: row.updated_ms, items: 0, values_stored: 0, values_skipped: 0, last_value_ms: null };
    if (row.enabled && !this.o.leads()) status.error = 'collectors run on the leader; this node does not lead';
    else if (row.enabled && !this.o.drivers.has(row.kind)) status.error = `no ${row.kind} driver in this build`;
    return status;
  }

  // ---- running --------------------------------------------------------------------------------

  /** Opens the secrets' key (made on first start, shared with saved connections). */
  open(): void {
    this.box = SecretBox.open(this.o.dataDir);
  }

  /** Starts every enabled collector (this node leads now). */
  async startAll(): Promise<void> {
    if (!this.box) return; // the subsystem did not start
    this.started = true;
    for (const row of this.o.meta.collectors.all()) await this.restart(row);
  }

  /** Stops every collector (this node stopped leading, or the service stops). */
  async stopAll(): Promise<void> {
    this.started = false;
    await Promise.all([...this.runs.keys()].map((id) => this.stopRun(id)));
  }

  /**
   * The metadata store was replaced (a restore): the runs start again from the rows it holds now,
   * with the secrets' key and the OPC UA certificate the restore may have brought.
   */
  async followRestore(): Promise<void> {
    if (!this.started) return;
    this.grants.clear();
    await Promise.all([...this.runs.keys()].map((id) => this.stopRun(id)));
    for (const row of this.o.meta.collectors.all()) await this.restart(row);
  }

  async stop(): Promise<void> {
    this.abort.abort();
    await this.stopAll();
  }

  /** The runs of this node, for /metrics. */
  runningCollectors(): Iterable<CollectorRun> {
    return this.runs.values();
  }

  private async restart(row: CollectorRow): Promise<void> {
    await this.stopRun(row.id);
    const driver = this.o.drivers.get(row.kind);
    if (!this.started || !this.o.leads() || !row.enabled || !driver) return;
    let definition: CollectorDefinition;
    let unopened: string | null = null;
    try {
      definition = this.definitionOf(row, driver, true);
    } catch {
      // Sealed with another key (a metadata restore without its secrets): reported, not fatal to the others.
      definition = this.definitionOf(row, driver, false);
      unopened = "its connection secrets do not open with this data dir's secrets/connections.key (restored without secrets_passphrase?); save the collector again with its password";
    }
    const run = new CollectorRun(definition, {
      store: (d, values, backfill) => this.store(row.owner, d, values, backfill),
      lastStored: (d, tags) => this.lastStored(row.owner, d, tags),
      notify: (input, d) => this.notifyUnit(input, d),
      now: this.o.now,
      log: this.o.log,
    });
    this.runs.set(row.id, run);
    if (unopened) return run.sink().state('failed', unopened);
    try {
      run.attach(driver.start(definition, run.sink(), { secretsDir: path.join(this.o.dataDir, 'secrets'), stateDir: this.stateDir(row.id), now: this.o.now }));
    } catch (err) {
      // A driver must not throw for a server that is down; one that does is reported, not fatal.
      run.sink().state('failed', err instanceof Error ? err.message : String(err));
    }
  }

  private async stopRun(id: string): Promise<void> {
    const run = this.runs.get(id);
    if (!run) return;
    this.runs.delete(id);
    const kind = run.definition.kind;
    this.retired.stored.set(kind, (this.retired.stored.get(kind) ?? 0) + run.status.values_stored);
    this.retired.skipped.set(kind, (this.retired.skipped.get(kind) ?? 0) + run.status.values_skipped);
    try {
      await run.stop();
    } catch (err) {
      this.o.log.warn({ collector: id, err: (err as Error).message }, 'collector did not stop cleanly');
    }
  }

  /** One write of a collector's values, as its owner, through the storage write path. */
  private async store(owner: string, d: CollectorDefinition, values: readonly CollectedValue[], backfill: boolean): Promise<void> {
    const tags: Record<string, Array<[number, number]>> = {};
    for (const v of values) (tags[v.tag] ??= []).push([v.ts, v.value]);
    const body = Buffer.from(JSON.stringify({ organization: d.organization, site: d.site, unit: d.unit, grid: d.grid, tags }));
    const result = await this.o.writer.write(this.ownerGrant(owner), body, 'application/json', 'fast', this.abort.signal, { backfill, autoCreate: true, route: `(collector ${d.kind})` });
    // Refused for what it holds (a timestamp out of range, say): the same values would be refused again.
    if (!result.success) throw badRequest(result.error);
  }

  private async lastStored(owner: string, d: CollectorDefinition, tags: readonly string[]): Promise<Map<string, number>> {
    const out = new Map<string, number>();
    if (tags.length === 0 || !this.o.collections.exists(`${d.organization}/${d.site}/${d.unit}/${d.grid}`)) return out;
    const scope = { organization: d.organization, site: d.site, unit: d.unit, grid: d.grid };
    const last = await this.o.reader.lastValues(this.o.reader.resolve(this.ownerGrant(owner), scope, [...tags]));
    for (const [tag, point] of Object.entries(last)) if (point) out.set(tag, point[0]);
    return out;
  }

  private ownerGrant(owner: string): AccessGrant {
    const now = this.o.now();
    const cached = this.grants.get(owner);
    if (cached && cached.until > now) return cached.grant;
    const account = this.o.accounts.current(owner);
    if (!account) throw forbidden(`the account ${owner} that saved this collector no longer exists`);
    const claims: Claims = { sub: owner, role: account.role, units_id: account.units_id, sites_id: account.sites_id, orgs_id: account.orgs_id, exp: Number.MAX_SAFE_INTEGER };
    const grant = this.o.meta.grantOf(claims);
    this.grants.set(owner, { grant, until: now + GRANT_TTL_MS });
    return grant;
  }

  private notifyUnit(input: Parameters<Notify['notify']>[0], d: CollectorDefinition): void {
    const unitsId = this.o.collections.unitIdOf(`${d.organization}/${d.site}/${d.unit}/${d.grid}`);
    try {
      if (unitsId === null) this.o.notify.notifyAdmins(input);
      else this.o.notify.notify({ ...input, unitsId });
    } catch (err) {
      this.o.log.warn({ collector: d.id, err: (err as Error).message }, 'collector notification not sent');
    }
  }

  // ---- rows -----------------------------------------------------------------------------------

  private sees(grant: AccessGrant, row: CollectorRow): boolean {
    return this.o.collections.reachesUnit(grant, row);
  }

  /** The row, when `grant` reaches its unit; 404 otherwise (the same as a missing one). */
  private visibleRow(grant: AccessGrant, id: string): CollectorRow {
    const row = this.o.meta.collectors.get(id);
    if (!row || !this.sees(grant, row)) throw notFound(`collector ${id} not found`);
    return row;
  }

  /** A row from a body (a whole view for an update), validated, its secrets sealed. */
  private rowOf(body: Record<string, unknown>, old: CollectorRow | null, owner: string, grant: AccessGrant, now: number): CollectorRow {
    const name = body.name;
    if (typeof name !== 'string' || name.trim() === '' || name.length > 200) throw badRequest('name must be a non-empty string of at most 200 characters');
    const kind = body.kind;
    if (kind !== 'opcua' && kind !== 'mqtt') throw badRequest('kind must be "opcua" or "mqtt"');
    if (old && old.kind !== kind) throw badRequest('kind cannot change: make a new collector');
    const driver = this.o.drivers.get(kind);
    if (!driver) throw new ServiceError('NOT_IMPLEMENTED', `this build has no ${kind} collector`);
    const enabled = body.enabled ?? true;
    if (typeof enabled !== 'boolean') throw badRequest('enabled must be a boolean');
    const scope = validateScope({ organization: body.organization, site: body.site, unit: body.unit, grid: body.grid });
    if (!this.o.collections.reachesUnit(grant, scope)) throw forbidden(`the unit ${scope.organization}/${scope.site}/${scope.unit} is outside your grant`);
    const connection = body.connection;
    if (!connection || typeof connection !== 'object' || Array.isArray(connection)) throw badRequest('connection must be an object');
    const items = body.items;
    if (!Array.isArray(items) || items.length === 0) throw badRequest('items must be a non-empty array');
    if (items.length > MAX_ITEMS) throw badRequest(`items: at most ${MAX_ITEMS} a collector`);
    items.forEach((item, i) => {
      if (!item || typeof item !== 'object' || Array.isArray(item)) throw badRequest(`items[${i}] must be an object`);
    });
    const plain = this.openSecrets(connection as Record<string, unknown>, old, driver);
    driver.validate(plain, items as Array<Record<string, unknown>>);
    const sealed: Record<string, unknown> = { ...plain };
    for (const field of driver.secretFields) if (typeof sealed[field] === 'string' && sealed[field] !== '') sealed[field] = this.box.seal(sealed[field] as string);
    return {
      id: old?.id ?? `col-${crypto.randomBytes(8).toString('hex')}`,
      owner,
      name: name.trim(),
      kind,
      enabled: enabled ? 1 : 0,
      ...scope,
      connection: JSON.stringify(sealed),
      items: JSON.stringify(items),
      created_ms: old?.created_ms ?? now,
      updated_ms: now,
    };
  }

  /** The connection with its secrets in plain text: "********" keeps the stored one. */
  private openSecrets(connection: Record<string, unknown>, old: CollectorRow | null, driver: CollectorDriver): Record<string, unknown> {
    const stored = old ? (JSON.parse(old.connection) as Record<string, unknown>) : {};
    const out = { ...connection };
    for (const field of driver.secretFields) {
      const value = out[field];
      if (value === MASK) {
        if (typeof stored[field] !== 'string') throw badRequest(`connection.${field}: "${MASK}" keeps a stored secret, and none is stored`);
        out[field] = this.box.unseal(stored[field] as string);
      } else if (value !== undefined && value !== null && typeof value !== 'string') {
        throw badRequest(`connection.${field} must be a string`);
      }
    }
    return out;
  }

  /** The definition a driver gets: its secrets opened, or (`open` false) removed. */
  private definitionOf(row: CollectorRow, driver: CollectorDriver, open: boolean): CollectorDefinition {
    const connection = JSON.parse(row.connection) as Record<string, unknown>;
    for (const field of driver.secretFields) {
      if (typeof connection[field] !== 'string' || !(connection[field] as string).startsWith('enc:')) continue;
      if (open) connection[field] = this.box.unseal(connection[field] as string);
      else delete connection[field];
    }
    return { id: row.id, name: row.name, kind: row.kind, organization: row.organization, site: row.site, unit: row.unit, grid: row.grid, connection, items: JSON.parse(row.items) as Array<Record<string, unknown>> };
  }

  private view(row: CollectorRow): CollectorView {
    const connection = JSON.parse(row.connection) as Record<string, unknown>;
    const driver = this.o.drivers.get(row.kind);
    for (const field of driver?.secretFields ?? ['password', 'private_key_pem', 'token']) if (typeof connection[field] === 'string' && connection[field] !== '') connection[field] = MASK;
    return {
      id: row.id, name: row.name, kind: row.kind, enabled: row.enabled === 1,
      organization: row.organization, site: row.site, unit: row.unit, grid: row.grid,
      connection, items: JSON.parse(row.items) as Array<Record<string, unknown>>,
    };
  }
}
