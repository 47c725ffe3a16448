// PI WebIDs from requests go into upstream URL paths (`/elements/<web_id>/attributes`) that the
// service asks with a saved connection's credentials (issue 34 item 9). A web_id that is, or
// decodes (once or more) to, `.` or `..`, or that holds `/`, `\` or NUL in any encoding, would
// climb out of the resource it names: each is a 400 naming the field, and the PI Web API
// simulator (test/support/pi-simulator.ts) never sees a request for it. Legitimate WebIDs still
// reach the resource they name.

import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { PiSimulator, plantModel } from '../support/pi-simulator.js';
import { accountHelpers } from './accounts.js';
import { startService, type TestService } from './harness.js';
import { PI_PASSWORD, PI_USER, basicConnection, browseOk, connector } from './connector-support.js';

const plant = plantModel();
const P = plant.paths;
const T0 = Date.UTC(2024, 0, 1);

/** Forms of `..`, `.` and separators an upstream might decode or normalise into a climb. */
const ATTACKS = [
  '..',
  '.',
  '../x',
  '..%2fx',
  '%2e%2e',
  '%2E%2E',
  '%2e.',
  '.%2E',
  '%252e%252e',
  '%25252e%25252e',
  '%2e%2e%2f%2e%2e%2fassetservers',
  '..\\..\\assetservers',
  'x%5c..%5cy',
  'x%255cy',
  'x/y',
  'x%2fy',
  'x%252Fy',
  'x\u0000y',
  'x%00y',
  '%c0%ae%c0%ae',
  '%u002e%u002e',
];

describe('connector: web_id values that would leave their resource', () => {
  let sim: PiSimulator;
  let svc: TestService;
  let admin: string;
  let rw: string;
  let savedId: string;

  before(async () => {
    sim = await PiSimulator.start({ auth: { basic: { username: PI_USER, password: PI_PASSWORD } } }, plant.spec);
    svc = await startService();
    admin = await svc.adminToken();
    const saved = await svc.request('POST', '/svcapi/connections', { body: { name: 'plant-pi', ...basicConnection(sim) }, token: admin });
    assert.equal(saved.status, 200, saved.text);
    savedId = String(saved.body.id);
    rw = (await accountHelpers(() => svc, () => admin).account('pi-web-ids@historian.test')).token;
  });
  after(async () => {
    await svc?.dispose();
    await sim?.stop();
  });

  test('browse routes: each attack form of web_id is a 400 naming web_id, for an admin\'s ad-hoc and a user\'s saved connection; nothing reaches PI', async () => {
    const seen = sim.requests.length;
    const calls: Array<[string, Record<string, unknown>]> = [
      ['list_databases', {}],
      ['list_children', { is_database: true }],
      ['list_children', { is_database: false }],
      ['list_attributes', {}],
    ];
    for (const web_id of ATTACKS) {
      for (const [route, extra] of calls) {
        for (const [who, token, connection] of [['admin', admin, basicConnection(sim)], ['user', rw, { connection_id: savedId }]] as const) {
          const res = await connector(svc, token, route, { ...connection, ...extra, web_id });
          const what = `${route} ${JSON.stringify(extra)} by ${who} with web_id ${JSON.stringify(web_id)}`;
          assert.equal(res.status, 400, `${what}: ${res.status} ${res.text}`);
          assert.match(res.body.error, /^web_id /, what);
        }
      }
    }
    assert.deepEqual(sim.requests.slice(seen).map((r) => r.path), [], 'no request reached the PI Web API');
  });

  test('backfill: an attack form in attributes[i].web_id is a 400 naming it; no job starts and nothing reaches PI', async () => {
    const seen = sim.requests.length;
    const jobsBefore = (await svc.get('/svcapi/process-log?kind=backfill&limit=1000', admin)).body.total_count;
    const good = { web_id: sim.webIdOf(P.integer), tag: 'GOOD' };
    for (const web_id of ATTACKS) {
      const res = await connector(svc, admin, 'backfill', {
        connection_id: savedId, attributes: [good, { web_id, tag: 'BAD' }], organization: 'o', site: 's', unit: 'u', grid: 'g', start: T0, end: T0 + 60_000,
      });
      assert.equal(res.status, 400, `web_id ${JSON.stringify(web_id)}: ${res.status} ${res.text}`);
      assert.match(res.body.error, /^attributes\[1\]\.web_id /, JSON.stringify(web_id));
    }
    assert.equal((await svc.get('/svcapi/process-log?kind=backfill&limit=1000', admin)).body.total_count, jobsBefore, 'no backfill job started');
    assert.deepEqual(sim.requests.slice(seen).map((r) => r.path), [], 'no request reached the PI Web API');
  });

  test('a real WebID still reaches the resource it names, below the base path', async () => {
    const seen = sim.requests.length;
    const items = await browseOk(svc, rw, 'list_attributes', { connection_id: savedId, web_id: sim.webIdOf(P.pump) });
    assert.ok(items.length > 0, 'the pump has attributes');
    const paths = sim.requests.slice(seen).map((r) => r.path);
    assert.ok(paths.length > 0 && paths.every((p) => p.startsWith(`/piwebapi/elements/${sim.webIdOf(P.pump)}/attributes`)), paths.join(', '));
  });
});
