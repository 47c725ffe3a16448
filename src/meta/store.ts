// The metadata store: one SQLite file (WAL mode) owned by the main thread, opened once, and
// everything the rest of the service reads and writes of it. The entity store (entities.ts) is
// the generic CRUD of every registry table, with row scoping; the table repositories under
// tables/ are the only other code that prepares SQL on these tables (the cluster's replication
// log keeps its own tables: see README "Layout"); the events (events.ts) tell caches what
// changed outside the entity store.

import type { ServiceClock } from '../clock.js';
import type { Logger } from '../log.js';
import type { Claims } from '../http/caller.js';
import { AccessGrant } from './access-grant.js';
import { WalCheckpointer } from './checkpointer.js';
import { metadataMetricSources } from './metrics.js';
import type { MetricSource } from '../metric-source.js';
import { openMetadataDb, type Db } from './database.js';
import { EntityStore } from './entities.js';
import { MetaEvents } from './events.js';
import { registerSqlFunctions } from './filter.js';
import { Registry } from './registry.js';
import { syncEntitySchema } from './schema.js';
import { AccountsTable } from './tables/accounts.js';
import { AlarmTables } from './tables/alarms.js';
import { ApiKeysTable } from './tables/api-keys.js';
import { BackfillsTable } from './tables/backfills.js';
import { CollectorsTable } from './tables/collectors.js';
import { BlobTables } from './tables/blobs.js';
import { Hierarchy } from './tables/hierarchy.js';
import { IngestClientsTable } from './tables/ingest-clients.js';
import { NotificationTables } from './tables/notifications.js';
import { ProcessJobsTable } from './tables/process-jobs.js';
import { ShadowWritesTable } from './tables/shadow-writes.js';
import { TagMappingStore } from './tables/tag-mappings.js';
import { TagScopesTable } from './tables/tag-scopes.js';
import { WholeStore } from './whole-store.js';

export interface MetaSettings {
  dataDir: string;
  /** Most rows a list of entities returns (meta.maxListRows). */
  maxListRows: number;
  /** Steps a `regexp` filter may take per query (meta.regexpBudgetSteps). */
  regexpBudgetSteps: number;
}

export class MetaStore {
  readonly registry = new Registry();
  readonly events = new MetaEvents();
  readonly entities: EntityStore;
  readonly wholeStore: WholeStore;
  readonly accounts: AccountsTable;
  readonly apiKeys: ApiKeysTable;
  readonly hierarchy: Hierarchy;
  readonly tagScopes: TagScopesTable;
  readonly tagMappings: TagMappingStore;
  readonly alarms: AlarmTables;
  readonly jobs: ProcessJobsTable;
  readonly backfills: BackfillsTable;
  readonly collectors: CollectorsTable;
  readonly blobs: BlobTables;
  readonly notifications: NotificationTables;
  readonly ingestClients: IngestClientsTable;
  readonly shadowWrites: ShadowWritesTable;
  private readonly checkpointer: WalCheckpointer;

  private constructor(
    /**
     * The connection, for the one allowed user outside this folder: the cluster's replication
     * log (cluster/change-log.ts), which keeps its own tables and triggers on every replicated one.
     */
    readonly db: Db,
    settings: MetaSettings,
    clock: ServiceClock,
    log: Logger,
  ) {
    syncEntitySchema(db, this.registry);
    registerSqlFunctions(db, { regexpBudgetSteps: settings.regexpBudgetSteps });
    this.checkpointer = new WalCheckpointer(db, db.name, log);
    this.entities = new EntityStore(db, this.registry, settings.maxListRows, clock.now);
    this.wholeStore = new WholeStore(db, this.registry, this.events);
    this.accounts = new AccountsTable(db);
    this.apiKeys = new ApiKeysTable(db);
    this.hierarchy = new Hierarchy(db);
    this.tagScopes = new TagScopesTable(db);
    this.tagMappings = new TagMappingStore(db);
    this.alarms = new AlarmTables(db);
    this.jobs = new ProcessJobsTable(db);
    this.backfills = new BackfillsTable(db);
    this.collectors = new CollectorsTable(db);
    this.blobs = new BlobTables(db);
    this.notifications = new NotificationTables(db);
    this.ingestClients = new IngestClientsTable(db);
    this.shadowWrites = new ShadowWritesTable(db);
  }

  /** Opens (creating and migrating as needed) `<dataDir>/metadata.sqlite`. */
  static open(settings: MetaSettings, clock: ServiceClock, log: Logger): MetaStore {
    const db = openMetadataDb(settings.dataDir);
    try {
      return new MetaStore(db, settings, clock, log);
    } catch (err) {
      db.close();
      throw err;
    }
  }

  /** What `claims` may reach, with the hierarchy as it is now. */
  grantOf(claims: Pick<Claims, 'sub' | 'role' | 'orgs_id' | 'sites_id' | 'units_id'>): AccessGrant {
    return AccessGrant.of(this.hierarchy, this.registry, claims);
  }

  /** Everything, for the service's own work; `subject` names who acts (`system`, `cluster`). */
  grantAll(subject: string): AccessGrant {
    return AccessGrant.everything(this.registry, subject);
  }

  /** The store's families for GET /metrics: file sizes and checkpoints. */
  metricSources(): MetricSource[] {
    return metadataMetricSources(this.db.name, () => this.checkpointer.stats());
  }

  /** Stops the checkpointer (its connection first), then closes the store. */
  async close(): Promise<void> {
    await this.checkpointer.stop();
    this.db.close();
  }
}
