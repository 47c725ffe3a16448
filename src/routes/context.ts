// What route groups are built from: the long-lived services of the process.
// Each route file exports a function `(ctx) => RouteDef[]`; routes/index.ts
// groups them into the subsystems of the service.

import type { Config } from '../config.js';
import type { AccountStore } from '../auth/users.js';
import type { PasswordLogin } from '../auth/password-login.js';
import type { JobLog } from '../jobs/job-log.js';
import type { TokenService } from '../auth/tokens.js';
import type { TlsFiles } from '../http/certificates.js';
import type { Db } from '../meta/database.js';
import type { EntityStore } from '../meta/entities.js';
import type { Logger } from '../log.js';
import type { StorageService } from '../storage/service.js';
import type { NotificationService } from '../notifications/service.js';
import type { MonitorService } from '../monitor/service.js';
import type { BackupService } from '../backup/service.js';
import type { ConnectorService } from '../connector/service.js';
import type { ClusterService } from '../cluster/service.js';
import type { LiveHub } from '../live/hub.js';
import type { BlobService } from '../files/blobs.js';
import type { RouteDef } from '../http/route.js';
import type { ServiceHealth } from '../subsystems.js';

export interface ServiceContext {
  readonly config: Config;
  readonly log: Logger;
  readonly db: Db;
  readonly accounts: AccountStore;
  readonly tokens: TokenService;
  /** The one password check (login, ingest Basic credentials) with its rate limits and lockout. */
  readonly passwordLogin: PasswordLogin;
  /** The process log: long work registers its jobs here. */
  readonly jobs: JobLog;
  readonly tls: TlsFiles;
  readonly entities: EntityStore;
  readonly storage: StorageService;
  /** The producer API (`notify`) and the live streams. */
  readonly notifications: NotificationService;
  /** Alarm rules, ticks and events. */
  readonly monitor: MonitorService;
  /** Backups, restores and their schedule. */
  readonly backups: BackupService;
  /** The PI Web API connector: browse and backfill. */
  readonly connector: ConnectorService;
  /** Leader election and fencing (a single node leads). */
  readonly cluster: ClusterService;
  /** Live data over WebSocket (GET /svcapi/ws). */
  readonly live: LiveHub;
  /** Blobs and attachments (content files under <dataDir>/blobs). */
  readonly blobs: BlobService;
  /** The secret every node of a cluster shares (node credentials); null on a single node. */
  readonly clusterSecret: Buffer | null;
  /** The port actually bound (differs from config when it is 0). */
  boundPort(): number;
  /** Health of every subsystem (GET /svcapi/health). */
  health(): ServiceHealth;
  /** Every mounted route (for the OpenAPI document). */
  routeTable(): readonly RouteDef[];
}
