// What the ingest subsystem offers the others: the credential check of the InfluxDB-compatible
// routes (Bearer/Token with a JWT or an API key, Basic, `u`/`p`; passwords through the login's
// limits), and the ingest clients by name, for the InfluxDB 1.x `/query` whose `db` names one.

import { capability } from '../host/plugin.js';
import type { IngestClient } from './clients.js';
import type { CredentialSource } from './credentials.js';
import type { Claims } from '../http/caller.js';

export type { IngestClient, CredentialSource };

export interface InfluxCredentials {
  /** The caller's claims, or a 401; a promise while a password is checked. */
  authenticate(source: CredentialSource): Claims | Promise<Claims>;
}

export interface IngestClientDirectory {
  /** The enabled client named `clientId`: 404 when there is none or it is disabled, 409 when two rows claim it. */
  resolve(clientId: string): IngestClient;
  /** The names of the usable clients, sorted. */
  names(): string[];
}

export const INFLUX_CREDENTIALS = capability<InfluxCredentials>('ingest.influx-credentials');
export const INGEST_CLIENTS = capability<IngestClientDirectory>('ingest.clients');
