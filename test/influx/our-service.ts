// Our side of the InfluxDB comparisons: the real service (test/api/harness.ts) with one plant
// (org, site, unit), an ingest client whose id is the Influx database name, and an API key,
// which is what a Grafana datasource or the `influx` CLI is given as its password. Requests go
// as those clients send them: Basic with any user name and the key.

import assert from 'node:assert/strict';
import { accountHelpers } from '../api/accounts.js';
import { startService, type HttpResult, type TestService } from '../api/harness.js';
import { basicAuth, send } from '../api/influx-wire.js';
import { queryRequest, type QueryOptions } from '../support/influxd.js';

export const PLANT = { organization: 'acme', site: 'north', unit: 'boiler-1', grid: 'default' };

export interface OurService {
  svc: TestService;
  admin: string;
  /** An API key of the admin. */
  key: string;
  /** `Authorization` as the CLI and Grafana send it: Basic, any user name, the key. */
  authorization: string;
  /** Writes line protocol through the root `/write` (batches of `batchLines`); throws unless each answer is 204. */
  write(db: string, lines: readonly string[], precision?: 'ns' | 'u' | 'ms' | 's', batchLines?: number): Promise<void>;
  /** `/query`, as queryRequest() forms it for InfluxDB, with the key. */
  query(q: string, opts?: QueryOptions): Promise<HttpResult>;
}

/** Starts the service with the plant, the ingest client `clientId` and an admin API key. */
export async function startOurService(clientId: string): Promise<OurService> {
  const svc = await startService();
  try {
    const admin = await svc.adminToken();
    const helpers = accountHelpers(() => svc, () => admin);
    const org = await helpers.mk('orgs', { name: PLANT.organization });
    const site = await helpers.mk('sites', { name: PLANT.site, orgsId: org });
    await helpers.mk('units', { name: PLANT.unit, siteId: site });
    await helpers.mk('ingestconfigs', { clientId, organization: PLANT.organization, site: PLANT.site, unit: PLANT.unit, grid: PLANT.grid });
    const made = await svc.post('/svcapi/api_keys', { name: 'influx comparison' }, admin);
    assert.equal(made.status, 201, made.text);
    const key = made.body.key as string;
    const authorization = basicAuth('grafana', key);
    const query = (q: string, opts: QueryOptions = {}) => {
      const r = queryRequest(q, opts);
      return send(svc, r.method, r.path, r.body, { headers: { ...r.headers, authorization } });
    };
    return {
      svc,
      admin,
      key,
      authorization,
      async write(db, lines, precision = 'ns', batchLines = 5000) {
        for (let at = 0; at < lines.length; at += batchLines) {
          const body = lines.slice(at, at + batchLines).join('\n');
          const res = await send(svc, 'POST', `/write?${new URLSearchParams({ db, precision })}`, body, { headers: { 'content-type': 'text/plain; charset=utf-8', authorization } });
          if (res.status !== 204) throw new Error(`our /write to ${db} (lines ${at}..): ${res.status} ${res.text}`);
        }
      },
      query,
    };
  } catch (err) {
    await svc.dispose();
    throw err;
  }
}
