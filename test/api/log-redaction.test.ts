// Issue 12 item 14: a token sent as a query parameter never reaches a request
// log line, however the parameter name is encoded and whatever the value.

import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { waitFor } from '../support/wait-for.js';
import { startService, type TestService } from './harness.js';

const NAMES = [
  'access_token', 'access%5Ftoken', 'access%5ftoken', '%61ccess_token', '%61%63%63%65%73%73%5F%74%6F%6B%65%6E', 'ACCESS_TOKEN',
  'Access%5FToken', 'access_token+', '+access_token', '%2561ccess_token', 'access%5Ftoken%', 'token', 'password', 'new%5Fpassword',
  // Issue 34: InfluxDB's `p` in its array and encoded forms, API keys under their usual names, secrets in arrays.
  'p', 'P', 'p[]', 'p%5B%5D', 'p%5b%5d', 'p[0]', 'p%255B%255D', 'api_key', 'apiKey', 'API-Key', 'api%5Fkey', 'secret', 'password[]', 'token%5B%5D',
  'auth[token]',
];
/** Credential parameters of the InfluxDB 1.x write, in the forms a client or an attacker may send. */
const INGEST_NAMES = ['p', 'p[]', 'p%5B%5D', 'p%5b%5d', 'p[0]', 'p[]%20', 'password', 'token', 'api_key', 'apiKey', 'secret'];

describe('request log redaction', () => {
  let svc: TestService;
  before(async () => {
    svc = await startService();
  });
  after(() => svc.dispose());

  test('no request line holds a query token, for each encoding of its name and for values that do not decode', async () => {
    const realToken = await svc.adminToken();
    const cases: Array<{ marker: string; secret: string; query: string }> = [];
    for (const [i, name] of NAMES.entries()) {
      const secret = `s${i}x${crypto.randomBytes(12).toString('hex')}`;
      cases.push({ marker: `case-${i}`, secret, query: `${name}=${secret}` });
      cases.push({ marker: `case-${i}-bad-value`, secret, query: `${name}=${secret}%E0%A4%A` });
    }
    cases.push({ marker: 'case-real', secret: realToken, query: `access%5Ftoken=${realToken}` });
    for (const c of cases) {
      // A public route, an authenticated one and an unknown path all log the request.
      for (const path of ['/ingest/health', '/svcapi/me', '/svcapi/no-such-route']) {
        const res = await svc.request('GET', `${path}?marker=${c.marker}&${c.query}`, { token: realToken });
        assert.ok(res.status < 500, `${path} ${c.marker}: ${res.status}`);
      }
    }
    // The log is written in batches: wait until every request line is there.
    const seen = () => cases.every((c) => svc.logLines.filter((l) => l.includes(`marker=${c.marker}&`)).length === 3);
    await waitFor(seen, 'every request was logged');
    for (const c of cases) {
      for (const line of svc.logLines) assert.ok(!line.includes(c.secret), `${c.marker} leaked: ${line}`);
      assert.ok(svc.logLines.some((l) => l.includes(`marker=${c.marker}&`) && l.includes('[redacted]')), `${c.marker} redacted`);
    }
  });

  test('no credential parameter of an InfluxDB 1.x write reaches the log, whatever its form', async () => {
    const cases = INGEST_NAMES.map((name, i) => ({ marker: `ingest-${i}`, secret: `ps${i}x${crypto.randomBytes(12).toString('hex')}`, name }));
    for (const c of cases) {
      const res = await svc.request('POST', `/ingest/v2/write?db=plant&marker=${c.marker}&u=someone%40plant.test&${c.name}=${c.secret}&${c.name}=${c.secret}2`, {
        rawBody: 'm v=1',
        headers: { 'content-type': 'text/plain' },
      });
      assert.ok(res.status < 500, `${c.marker}: ${res.status}`);
    }
    await waitFor(() => cases.every((c) => svc.logLines.some((l) => l.includes(`marker=${c.marker}&`))), 'every write was logged');
    for (const c of cases) {
      for (const line of svc.logLines) assert.ok(!line.includes(c.secret), `${c.name} leaked: ${line}`);
    }
  });
});
