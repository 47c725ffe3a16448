// The PI Web API simulator (test/support/pi-simulator.ts) is what the connector's tests
// believe PI is, so it gets tests of its own: the documented shapes, WebID 2.0, paging,
// selectedFields, time strings, recorded-data rules, auth, CSRF, faults and TLS.

import assert from 'node:assert/strict';
import http from 'node:http';
import https from 'node:https';
import { after, before, describe, test } from 'node:test';
import {
  decodeWebId,
  encodeWebId,
  formatPiTime,
  parsePiTime,
  PiModel,
  PiSimulator,
  plantModel,
  selectFields,
  TimeStringError,
  WebIdError,
  type PiModelSpec,
  type PiSimulatorOptions,
} from '../support/pi-simulator.js';
import { waitFor } from '../support/wait-for.js';

interface Reply {
  status: number;
  headers: http.IncomingHttpHeaders;
  text: string;
  body: any;
}

interface Call {
  method?: string;
  headers?: Record<string, string>;
  /** Abort after this long without an answer (the request then rejects with code ETIMEDOUT). */
  timeoutMs?: number;
  /** CA to trust; defaults to the simulator's own. Null trusts only the system store. */
  ca?: string | null;
}

/** One request to the simulator; `target` is a path below baseUrl or an absolute URL (from Links). */
function call(sim: PiSimulator, target: string, opts: Call = {}): Promise<Reply> {
  const url = new URL(target.startsWith('http') ? target : `${sim.baseUrl}${target}`);
  const client = url.protocol === 'https:' ? https : http;
  const ca = opts.ca === undefined ? sim.caPem || undefined : (opts.ca ?? undefined);
  return new Promise((resolve, reject) => {
    const req = client.request(url, { method: opts.method ?? 'GET', headers: opts.headers, ca, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        let body: unknown;
        if (/json/.test(res.headers['content-type'] ?? '')) body = JSON.parse(text);
        resolve({ status: res.statusCode!, headers: res.headers, text, body });
      });
    });
    if (opts.timeoutMs !== undefined) {
      req.setTimeout(opts.timeoutMs, () => req.destroy(Object.assign(new Error('client timeout'), { code: 'ETIMEDOUT' })));
    }
    req.on('error', reject);
    req.end();
  });
}

const basicHeader = (user: string, password: string) => ({
  Authorization: `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`,
});

const HISTORY_START = Date.UTC(2024, 0, 1);
const plant = plantModel({ historyStartMs: HISTORY_START });

async function startPlant(t: { after(fn: () => unknown): void }, options: PiSimulatorOptions = {}, spec: PiModelSpec = plant.spec) {
  const sim = await PiSimulator.start({ tls: false, ...options }, spec);
  t.after(() => sim.stop());
  return sim;
}

describe('WebID 2.0', () => {
  test('a WebID from the PI Web API reference decodes to the Id it was documented with', () => {
    // The AssetServer sample of the reference: WebId I1RSDqD5loBNH0erqeqJodtALA, Id 96f9a00e-...
    assert.deepEqual(decodeWebId('I1RSDqD5loBNH0erqeqJodtALA'), {
      type: 'IDOnly',
      kind: 'AssetServer',
      ids: ['96f9a00e-4d80-471f-aba9-ea89a1db402c'],
    });
  });

  test('every kind and type encodes and decodes back, the path upper-cased without its leading \\\\', () => {
    const ids = ['3b1c6896-d33b-4010-9dcd-c03574b3c8c9', '81287151-d347-4005-82dc-bfaaadba1f64', '0f0e0d0c-0b0a-4908-8706-050403020100'];
    const cases = [
      { kind: 'AssetServer', ids: ids.slice(0, 1), path: '\\\\PIAF01', marker: 'RS' },
      { kind: 'AssetDatabase', ids: ids.slice(0, 2), path: '\\\\PIAF01\\Plant', marker: 'RD' },
      { kind: 'Element', ids: ids.slice(0, 2), path: '\\\\PIAF01\\Plant\\Site North', marker: 'Em' },
      { kind: 'Attribute', ids, path: '\\\\PIAF01\\Plant\\Site North|Flow|Hi Limit', marker: 'AbE' },
    ] as const;
    for (const c of cases) {
      const upper = c.path.slice(2).toUpperCase();
      const full = encodeWebId('Full', c.kind, [...c.ids], c.path);
      assert.ok(full.startsWith(`F1${c.marker}`), full);
      assert.match(full, /^[A-Za-z0-9_-]+$/);
      assert.deepEqual(decodeWebId(full), { type: 'Full', kind: c.kind, ids: [...c.ids], path: upper });
      const idOnly = encodeWebId('IDOnly', c.kind, [...c.ids], c.path);
      assert.equal(idOnly.length, 2 + c.marker.length + 22 * c.ids.length);
      assert.deepEqual(decodeWebId(idOnly), { type: 'IDOnly', kind: c.kind, ids: [...c.ids] });
      assert.deepEqual(decodeWebId(encodeWebId('PathOnly', c.kind, [...c.ids], c.path)), { type: 'PathOnly', kind: c.kind, ids: [], path: upper });
    }
  });

  test('strings that are not WebIDs are refused', () => {
    for (const bad of ['', 'X1RSDqD5loBNH0erqeqJodtALA', 'I2RSDqD5loBNH0erqeqJodtALA', 'I1ZZDqD5loBNH0erqeqJodtALA', 'I1RSDqD5lo', 'I1RSDqD5loBNH0erqeqJodtALAxx', 'I1AbXDqD5loBNH0erqeqJodtALA', 'F1RS!!']) {
      assert.throws(() => decodeWebId(bad), WebIdError, bad);
    }
  });

  test('the same seed gives the same WebIDs and values, another seed other WebIDs', async () => {
    const small = { wideElementChildren: 1, wideElementAttributes: 1, historyStartMs: HISTORY_START };
    const same1 = plantModel({ seed: 7, ...small });
    const same2 = plantModel({ seed: 7, ...small });
    const other = plantModel({ seed: 8, ...small });
    const [s1, s2, s3] = await Promise.all([same1, same2, other].map((p) => PiSimulator.start({ tls: false }, p.spec)));
    try {
      const path = same1.paths.bigSeries;
      assert.equal(s1!.webIdOf(path), s2!.webIdOf(path));
      assert.notEqual(s1!.webIdOf(path), s3!.webIdOf(path));
      const minute = [HISTORY_START, HISTORY_START + 60_000] as const;
      assert.deepEqual(s1!.recordedValues(path, ...minute), s2!.recordedValues(path, ...minute));
      assert.equal(s1!.recordedValues(path, ...minute).length, 61);
    } finally {
      await Promise.all([s1, s2, s3].map((s) => s!.stop()));
    }
  });
});

describe('time strings', () => {
  const now = Date.UTC(2024, 4, 15, 13, 30, 0);

  test('now, relative intervals, today and yesterday', () => {
    assert.equal(parsePiTime('*', now), now);
    assert.equal(parsePiTime('', now), now);
    assert.equal(parsePiTime('*-1d', now), now - 86_400_000);
    assert.equal(parsePiTime('*-2h', now), now - 7_200_000);
    assert.equal(parsePiTime('*+1m', now), now + 60_000);
    assert.equal(parsePiTime('* - 30 seconds', now), now - 30_000);
    assert.equal(parsePiTime('*-1.5h', now), now - 5_400_000);
    assert.equal(parsePiTime('-1w', now), now - 7 * 86_400_000);
    assert.equal(parsePiTime('t', now), Date.UTC(2024, 4, 15));
    assert.equal(parsePiTime('Today+8h', now), Date.UTC(2024, 4, 15, 8));
    assert.equal(parsePiTime('y', now), Date.UTC(2024, 4, 14));
    assert.equal(parsePiTime('*-1mo', now), Date.UTC(2024, 3, 15, 13, 30));
    assert.equal(parsePiTime('*-1y', Date.UTC(2024, 1, 29)), Date.UTC(2023, 1, 28), 'a year before 29 February is 28 February');
  });

  test('ISO 8601 with Z, with an offset, without a zone (the simulated server runs in UTC), quoted with an interval', () => {
    assert.equal(parsePiTime('2024-01-01T00:00:00Z', now), Date.UTC(2024, 0, 1));
    assert.equal(parsePiTime('2024-01-01T00:00:00.25Z', now), Date.UTC(2024, 0, 1) + 250);
    assert.equal(parsePiTime('2024-01-01T02:00:00+02:00', now), Date.UTC(2024, 0, 1));
    assert.equal(parsePiTime('2023-12-31T19:00:00-0500', now), Date.UTC(2024, 0, 1));
    assert.equal(parsePiTime('2024-01-01T00:00:00', now), Date.UTC(2024, 0, 1));
    assert.equal(parsePiTime('2024-01-01', now), Date.UTC(2024, 0, 1));
    assert.equal(parsePiTime("'2024-01-01T00:00:00Z'+1h", now), Date.UTC(2024, 0, 1, 1));
  });

  test('unreadable strings are refused', () => {
    for (const bad of ['bogus', '*-1x', '*-1.5d', '*-1d+2h', '2024-02-30T00:00:00Z', '2024-01-01T25:00:00Z', '1704067200000', '**']) {
      assert.throws(() => parsePiTime(bad, now), TimeStringError, bad);
    }
  });

  test('timestamps are written as PI writes them, fractions only when there are some', () => {
    assert.equal(formatPiTime(Date.UTC(2024, 0, 1)), '2024-01-01T00:00:00Z');
    assert.equal(formatPiTime(Date.UTC(2024, 0, 1) + 500), '2024-01-01T00:00:00.5Z');
    assert.equal(formatPiTime(Date.UTC(2024, 0, 1) + 123), '2024-01-01T00:00:00.123Z');
  });
});

test('selectedFields keeps the named paths through arrays and ignores case', () => {
  const body = { Links: { Self: 'x' }, Items: [{ Name: 'a', WebId: 'w', Path: 'p', Links: { Self: 's', Elements: 'e' } }] };
  assert.deepEqual(selectFields(body, 'Items.Name;items.webid'), { Items: [{ Name: 'a', WebId: 'w' }] });
  assert.deepEqual(selectFields(body, 'Items.Links.Self'), { Items: [{ Links: { Self: 's' } }] });
  assert.deepEqual(selectFields(body, ''), body);
});

describe('asset hierarchy over HTTPS', () => {
  let sim: PiSimulator;
  before(async () => {
    sim = await PiSimulator.start({ tls: true, nowMs: HISTORY_START + 86_400_000 }, plant.spec);
  });
  after(() => sim.stop());

  test('baseUrl is https://localhost:<port>/piwebapi and the root lists the entry points', async () => {
    assert.equal(sim.baseUrl, `https://localhost:${sim.port}/piwebapi`);
    const root = await call(sim, '');
    assert.equal(root.status, 200);
    assert.equal(root.body.Links.AssetServers, `${sim.baseUrl}/assetservers`);
  });

  test('asset servers: Items with WebId, Id, Name, Path, IsConnected and Links; the WebId decodes to the Id', async () => {
    const res = await call(sim, '/assetservers');
    assert.equal(res.status, 200);
    assert.match(res.headers['content-type']!, /^application\/json/);
    assert.deepEqual(res.body.Links, {});
    assert.deepEqual(
      res.body.Items.map((s: any) => [s.Name, s.Path, s.IsConnected]),
      [
        ['PIAF01', '\\\\PIAF01', true],
        ['PIAF02-DR', '\\\\PIAF02-DR', false],
      ],
    );
    const server = res.body.Items[0];
    assert.deepEqual(Object.keys(server), ['WebId', 'Id', 'Name', 'Description', 'Path', 'IsConnected', 'ServerVersion', 'ServerTime', 'ExtendedProperties', 'Links']);
    assert.deepEqual(decodeWebId(server.WebId), { type: 'Full', kind: 'AssetServer', ids: [server.Id], path: 'PIAF01' });
    assert.equal(server.ServerTime, '2024-01-02T00:00:00Z');
    assert.equal(server.Links.Self, `${sim.baseUrl}/assetservers/${server.WebId}`);
    assert.equal(server.Links.Databases, `${sim.baseUrl}/assetservers/${server.WebId}/assetdatabases`);
    const again = await call(sim, server.Links.Self);
    assert.deepEqual(again.body, server);
  });

  test('databases, root elements, child elements and attributes, each followed through Links', async () => {
    const server = (await call(sim, '/assetservers')).body.Items[0];
    const databases = await call(sim, server.Links.Databases);
    assert.deepEqual(
      databases.body.Items.map((d: any) => d.Path),
      ['\\\\PIAF01\\Plant', '\\\\PIAF01\\Sandbox'],
    );
    const plantDb = databases.body.Items[0];
    assert.deepEqual(decodeWebId(plantDb.WebId).ids, [server.Id, plantDb.Id]);
    assert.equal(plantDb.Links.AssetServer, server.Links.Self);

    const roots = await call(sim, plantDb.Links.Elements);
    assert.deepEqual(
      roots.body.Items.map((e: any) => [e.Name, e.TemplateName, e.HasChildren]),
      [
        ['Site North', 'Site', true],
        ['Site South', 'Site', true],
        ['Utilities', '', true],
      ],
    );
    const site = roots.body.Items[0];
    assert.equal(site.Path, '\\\\PIAF01\\Plant\\Site North');
    assert.equal(site.Links.Database, plantDb.Links.Self);
    assert.equal(site.Links.Parent, undefined, 'a root element has no Parent link');

    const areas = await call(sim, site.Links.Elements);
    assert.deepEqual(areas.body.Items.map((e: any) => e.Name), ['Area 1', 'Area 2', 'Area 3']);
    assert.equal(areas.body.Items[0].Links.Parent, site.Links.Self);

    const pumpWebId = sim.webIdOf(plant.paths.pump);
    const pump = await call(sim, `/elements/${pumpWebId}`);
    assert.equal(pump.body.TemplateName, 'Pump');
    assert.equal(pump.body.HasChildren, false);
    assert.deepEqual((await call(sim, pump.body.Links.Elements)).body.Items, []);

    const attributes = await call(sim, pump.body.Links.Attributes);
    assert.deepEqual(
      attributes.body.Items.map((a: any) => [a.Name, a.Type, a.DefaultUnitsName, a.HasChildren, a.DataReferencePlugIn]),
      [
        ['Flow', 'Double', 'cubic meter per hour', false, 'PI Point'],
        ['Model Number', 'String', '', false, ''],
        ['Pressure', 'Double', 'bar', false, 'PI Point'],
        ['Run Hours', 'Int32', 'hour', false, 'PI Point'],
        ['Status', 'EnumerationValue', '', false, 'PI Point'],
        ['Temperature', 'Double', 'degree Celsius', true, 'PI Point'],
      ],
    );
    const flow = attributes.body.Items[0];
    assert.equal(flow.Path, plant.paths.bigSeries);
    assert.equal(flow.DefaultUnitsNameAbbreviation, 'm3/h');
    assert.equal(flow.Links.Element, pump.body.Links.Self);
    assert.equal(flow.Links.RecordedData, `${sim.baseUrl}/streams/${flow.WebId}/recorded`);
    const parts = decodeWebId(flow.WebId);
    assert.equal(parts.kind, 'Attribute');
    assert.deepEqual(parts.ids, [server.Id, pump.body.Id, flow.Id]);
    assert.equal(attributes.body.Items.find((a: any) => a.Name === 'Status').TypeQualifier, 'Pump Status');

    const temperature = attributes.body.Items.find((a: any) => a.Name === 'Temperature');
    const limits = await call(sim, temperature.Links.Attributes);
    assert.deepEqual(limits.body.Items.map((a: any) => a.Path), [`${plant.paths.withChildAttributes}|Hi Limit`, `${plant.paths.withChildAttributes}|Lo Limit`]);
    assert.equal(limits.body.Items[0].Links.Parent, temperature.Links.Self);
  });

  test('GetByPath and IDOnly and PathOnly WebIDs reach the same objects', async () => {
    for (const type of ['Full', 'IDOnly', 'PathOnly'] as const) {
      assert.equal(sim.nodeOfWebId(sim.webIdOf(plant.paths.bigSeries, type)).path, plant.paths.bigSeries, type);
    }
    const byPath = await call(sim, `/elements?path=${encodeURIComponent(plant.paths.pump)}`);
    assert.equal(byPath.status, 200);
    for (const type of ['IDOnly', 'PathOnly'] as const) {
      const res = await call(sim, `/elements/${sim.webIdOf(plant.paths.pump, type)}?webIdType=${type}`);
      assert.equal(res.body.Id, byPath.body.Id, type);
      assert.equal(decodeWebId(res.body.WebId).type, type, 'answers in the WebID type asked for');
    }
    assert.equal((await call(sim, `/elements?path=${encodeURIComponent('\\\\PIAF01\\Plant\\Nowhere')}`)).status, 404);
  });

  test('searchFullHierarchy and nameFilter narrow an element list', async () => {
    const site = sim.webIdOf(plant.paths.site);
    const pumps = await call(sim, `/elements/${site}/elements?searchFullHierarchy=true&nameFilter=Pump*&maxCount=1000`);
    assert.equal(pumps.body.Items.length, 3 * 4 * 2);
    assert.ok(pumps.body.Items.every((e: any) => e.TemplateName === 'Pump'));
  });

  test('a server that is not connected lists as IsConnected false and its databases answer 502', async () => {
    const res = await call(sim, `/assetservers/${sim.webIdOf(plant.paths.disconnectedServer)}/assetdatabases`);
    assert.equal(res.status, 502);
    assert.equal(res.body.Errors.length, 1);
  });

  test('malformed, mistyped and unknown WebIDs: 400, 400 and 404 with an Errors body', async () => {
    const garbage = await call(sim, '/elements/not-a-webid/elements');
    assert.equal(garbage.status, 400);
    assert.ok(Array.isArray(garbage.body.Errors) && garbage.body.Errors[0].includes('not-a-webid'));

    const elementAsStream = await call(sim, `/streams/${sim.webIdOf(plant.paths.pump)}/recorded`);
    assert.equal(elementAsStream.status, 400);

    const unknown = encodeWebId('Full', 'Element', ['00000000-0000-4000-8000-000000000001', '00000000-0000-4000-8000-000000000002'], '\\\\PIAF01\\Plant\\Gone');
    assert.equal((await call(sim, `/elements/${unknown}/elements`)).status, 404);

    assert.equal((await call(sim, '/elements/%E0%A4%A')).status, 400, 'a malformed percent-escape');

    const unknownRoute = await call(sim, '/dataservers');
    assert.equal(unknownRoute.status, 404);
    assert.ok(unknownRoute.body.Errors[0]);
  });

  test('the CA it exposes is what makes its certificate trusted', async () => {
    assert.match(sim.caPem, /^-----BEGIN CERTIFICATE-----/);
    assert.equal((await call(sim, '/assetservers')).status, 200);
    await assert.rejects(call(sim, '/assetservers', { ca: null }), (err: NodeJS.ErrnoException) => {
      assert.match(err.code ?? '', /SELF_SIGNED_CERT_IN_CHAIN|UNABLE_TO_VERIFY_LEAF_SIGNATURE|UNABLE_TO_GET_ISSUER_CERT/);
      return true;
    });
    const other = await PiSimulator.start({ tls: true }, { servers: [] });
    try {
      await assert.rejects(call(sim, '/assetservers', { ca: other.caPem }), (err: NodeJS.ErrnoException) => {
        assert.ok(err.code, 'a TLS verification error');
        return true;
      });
    } finally {
      await other.stop();
    }
  });
});

describe('paging and selectedFields', () => {
  test('element and attribute lists page by startIndex and maxCount, 1000 by default', async (t) => {
    const sim = await startPlant(t);
    const wide = sim.webIdOf(plant.paths.wideElement);
    const names: string[] = [];
    const pageSizes: number[] = [];
    for (let startIndex = 0; ; ) {
      const res = await call(sim, `/elements/${wide}/elements?startIndex=${startIndex}&selectedFields=Items.Name`);
      assert.equal(res.status, 200);
      pageSizes.push(res.body.Items.length);
      names.push(...res.body.Items.map((e: any) => e.Name));
      if (res.body.Items.length < 1000) break;
      startIndex += res.body.Items.length;
    }
    assert.deepEqual(pageSizes, [1000, 1000, 500]);
    assert.equal(new Set(names).size, 2500);
    assert.deepEqual(names, [...names].sort());
    assert.equal(sim.count(`/elements/${wide}/elements`), 3);
    assert.equal(sim.requestsTo(`/elements/${wide}/elements`)[2]!.query.get('startIndex'), '2000');

    const small = await call(sim, `/elements/${wide}/elements?startIndex=10&maxCount=5`);
    assert.deepEqual(small.body.Items.map((e: any) => e.Name), ['Sensor 00011', 'Sensor 00012', 'Sensor 00013', 'Sensor 00014', 'Sensor 00015']);
    const beyond = await call(sim, `/elements/${wide}/elements?startIndex=5000`);
    assert.deepEqual(beyond.body.Items, []);

    const attributes = await call(sim, `/elements/${sim.webIdOf(plant.paths.wideAttributesElement)}/attributes`);
    assert.equal(attributes.body.Items.length, 1000);
    const rest = await call(sim, `/elements/${sim.webIdOf(plant.paths.wideAttributesElement)}/attributes?startIndex=1000`);
    assert.equal(rest.body.Items.length, 200);
  });

  test('bad paging parameters are 400 with Errors', async (t) => {
    const sim = await startPlant(t);
    const wide = sim.webIdOf(plant.paths.wideElement);
    for (const query of ['maxCount=0', 'startIndex=-1', 'startIndex=abc', 'maxCount=1.5', 'sortOrder=Sideways', 'searchFullHierarchy=maybe']) {
      const res = await call(sim, `/elements/${wide}/elements?${query}`);
      assert.equal(res.status, 400, query);
      assert.equal(res.body.Errors.length, 1, query);
    }
  });

  test('selectedFields returns only the named fields, on lists and on recorded values', async (t) => {
    const sim = await startPlant(t);
    const list = await call(sim, `/assetdatabases/${sim.webIdOf(plant.paths.database)}/elements?selectedFields=Items.Name;Items.WebId;Items.HasChildren`);
    assert.deepEqual(Object.keys(list.body), ['Items']);
    for (const item of list.body.Items) assert.deepEqual(Object.keys(item), ['WebId', 'Name', 'HasChildren']);

    const recorded = await call(sim, `/streams/${sim.webIdOf(plant.paths.bigSeries)}/recorded?startTime=2024-01-01T00:00:00Z&endTime=2024-01-01T00:00:09Z&selectedFields=Items.Timestamp;Items.Value`);
    assert.equal(recorded.body.Items.length, 10);
    for (const item of recorded.body.Items) assert.deepEqual(Object.keys(item), ['Timestamp', 'Value']);
    assert.equal(sim.requestsTo('/recorded')[0]!.query.get('selectedFields'), 'Items.Timestamp;Items.Value');
  });
});

describe('recorded values', () => {
  let sim: PiSimulator;
  const start = HISTORY_START;
  before(async () => {
    sim = await PiSimulator.start({ tls: false, nowMs: start + 2 * 86_400_000 }, plant.spec);
  });
  after(() => sim.stop());
  const recorded = (path: string, query: string) => call(sim, `/streams/${sim.webIdOf(path)}/recorded?${query}`);

  test('a stream answers at most 1000 values unless maxCount says otherwise, with PI value fields', async () => {
    const res = await recorded(plant.paths.bigSeries, 'startTime=2024-01-01T00:00:00Z&endTime=*');
    assert.equal(res.status, 200);
    assert.deepEqual(res.body.Links, {});
    assert.equal(res.body.UnitsAbbreviation, 'm3/h');
    assert.equal(res.body.Items.length, 1000);
    assert.deepEqual(Object.keys(res.body.Items[0]), ['Timestamp', 'Value', 'UnitsAbbreviation', 'Good', 'Questionable', 'Substituted', 'Annotated']);
    assert.equal(res.body.Items[0].Timestamp, '2024-01-01T00:00:00Z');
    assert.equal(res.body.Items[999].Timestamp, '2024-01-01T00:16:39Z');
    assert.equal((await recorded(plant.paths.bigSeries, 'startTime=2024-01-01T00:00:00Z&endTime=*&maxCount=7')).body.Items.length, 7);
  });

  test('paging by time through 100,000 values reads each once, bad ones as Good false with a System state', async () => {
    const expected = sim.tally(plant.paths.bigSeries, 0, Number.MAX_SAFE_INTEGER);
    assert.equal(expected.total, 100_000);
    assert.ok(expected.bad > 500 && expected.bad < 1500, `about 1 % bad, got ${expected.bad}`);
    const seen: number[] = [];
    let bad = 0;
    let next = '2024-01-01T00:00:00Z';
    for (;;) {
      const res = await recorded(plant.paths.bigSeries, `startTime=${encodeURIComponent(next)}&endTime=*&maxCount=25000`);
      assert.equal(res.status, 200);
      let items = res.body.Items as any[];
      // Inside includes a value at startTime: the one the previous page ended with.
      if (seen.length > 0 && items[0] && Date.parse(items[0].Timestamp) === seen.at(-1)) items = items.slice(1);
      if (items.length === 0) break;
      for (const item of items) {
        seen.push(Date.parse(item.Timestamp));
        if (!item.Good) {
          bad++;
          assert.equal(typeof item.Value, 'object');
          assert.equal(item.Value.IsSystem, true);
          assert.equal(typeof item.Value.Name, 'string');
          assert.equal(typeof item.Value.Value, 'number');
        } else assert.equal(typeof item.Value, 'number');
      }
      next = items.at(-1).Timestamp;
    }
    assert.equal(seen.length, 100_000);
    assert.ok(seen.every((ms, i) => i === 0 || ms > seen[i - 1]!), 'strictly increasing, no duplicates');
    assert.equal(bad, expected.bad);
    assert.equal(sim.count(`/streams/${sim.webIdOf(plant.paths.bigSeries)}/recorded`) >= 5, true);
  });

  test('enumeration attributes answer digital states as {Name, Value, IsSystem}', async () => {
    const res = await recorded(plant.paths.enumeration, 'startTime=2024-01-01T00:00:00Z&endTime=2024-01-01T23:59:00Z&maxCount=1440');
    const good = res.body.Items.filter((v: any) => v.Good);
    assert.ok(good.length > 1000);
    for (const v of good) {
      assert.deepEqual(Object.keys(v.Value), ['Name', 'Value', 'IsSystem']);
      assert.equal(v.Value.IsSystem, false);
      assert.ok(['Running', 'Stopped', 'Tripped', 'Maintenance'].includes(v.Value.Name));
    }
    assert.equal(sim.tally(plant.paths.enumeration, start, start + 86_400_000).goodNonNumeric, good.length);
  });

  test('relative times follow the simulator clock', async () => {
    sim.setNow(start + 10 * 60_000);
    try {
      const res = await recorded(plant.paths.withChildAttributes, 'startTime=*-5m&endTime=*');
      assert.deepEqual(
        res.body.Items.map((v: any) => v.Timestamp),
        ['05', '06', '07', '08', '09', '10'].map((m) => `2024-01-01T00:${m}:00Z`),
      );
      const defaults = await recorded(plant.paths.withChildAttributes, '');
      assert.equal(defaults.body.Items.length, 11, 'startTime *-1d and endTime * by default');
    } finally {
      sim.setNow(start + 2 * 86_400_000);
    }
  });

  test('endTime before startTime answers newest first; Outside and Interpolated boundaries', async () => {
    const minute = (m: number) => `2024-01-01T00:${String(m).padStart(2, '0')}:00Z`;
    const backwards = await recorded(plant.paths.withChildAttributes, `startTime=${minute(3)}&endTime=${minute(1)}`);
    assert.deepEqual(backwards.body.Items.map((v: any) => v.Timestamp), [minute(3), minute(2), minute(1)]);

    const range = 'startTime=2024-01-01T00:01:30Z&endTime=2024-01-01T00:03:30Z';
    const inside = await recorded(plant.paths.withChildAttributes, range);
    assert.deepEqual(inside.body.Items.map((v: any) => v.Timestamp), [minute(2), minute(3)]);
    const outside = await recorded(plant.paths.withChildAttributes, `${range}&boundaryType=Outside`);
    assert.deepEqual(outside.body.Items.map((v: any) => v.Timestamp), [minute(1), minute(2), minute(3), minute(4)]);
    const interpolated = await recorded(plant.paths.withChildAttributes, `${range}&boundaryType=Interpolated`);
    assert.deepEqual(interpolated.body.Items.map((v: any) => v.Timestamp), ['2024-01-01T00:01:30Z', minute(2), minute(3), '2024-01-01T00:03:30Z']);
    const [at1, at2] = sim.recordedValues(plant.paths.withChildAttributes, start + 60_000, start + 120_000);
    assert.ok(at1!.good && at2!.good, 'the seed gives good values at 00:01 and 00:02');
    const midway = ((at1!.value as number) + (at2!.value as number)) / 2;
    assert.ok(Math.abs(interpolated.body.Items[0].Value - midway) < 1e-9, 'linear between the neighbours');
    const capped = await recorded(plant.paths.withChildAttributes, `${range}&boundaryType=Interpolated&maxCount=3`);
    assert.deepEqual(capped.body.Items.map((v: any) => v.Timestamp), ['2024-01-01T00:01:30Z', minute(2), minute(3)], 'made values count toward maxCount');
  });

  test('bad time strings, boundary types and counts are 400 with Errors', async () => {
    for (const query of ['startTime=yesterday-ish', 'endTime=2024-13-01T00:00:00Z', 'startTime=*-1d%2B1h', 'boundaryType=Sideways', 'maxCount=0', 'maxCount=150001']) {
      const res = await recorded(plant.paths.bigSeries, query);
      assert.equal(res.status, 400, query);
      assert.equal(res.body.Errors.length, 1, query);
    }
  });

  test('an attribute without a data reference has no recorded values', async () => {
    const res = await recorded(plant.paths.staticAttribute, 'startTime=2024-01-01T00:00:00Z&endTime=*');
    assert.equal(res.status, 200);
    assert.deepEqual(res.body.Items, []);
  });

  test('streamsets/recorded answers each stream with its own maxCount; an unknown WebID fails only its own item', async () => {
    const flow = sim.webIdOf(plant.paths.bigSeries);
    const pressure = sim.webIdOf(`${plant.paths.pump}|Pressure`);
    const gone = encodeWebId('IDOnly', 'Attribute', ['00000000-0000-4000-8000-000000000001', '00000000-0000-4000-8000-000000000002', '00000000-0000-4000-8000-000000000003'], '');
    const res = await call(sim, `/streamsets/recorded?webId=${flow}&webId=${pressure}&webId=${gone}&startTime=2024-01-01T00:00:00Z&endTime=*&maxCount=5`);
    assert.equal(res.status, 200);
    assert.deepEqual(res.body.Links, {});
    const [a, b, c] = res.body.Items;
    assert.equal(a.WebId, flow);
    assert.equal(a.Path, plant.paths.bigSeries);
    assert.equal(a.Links.Source, `${sim.baseUrl}/attributes/${flow}`);
    assert.equal(a.Items.length, 5);
    assert.equal(a.UnitsAbbreviation, 'm3/h');
    assert.equal(b.Name, 'Pressure');
    assert.equal(b.Items.length, 5);
    assert.equal(c.WebId, gone);
    assert.equal(c.WebException.StatusCode, 404);
    assert.deepEqual(c.Items, []);
    assert.equal((await call(sim, '/streamsets/recorded?startTime=*-1d')).status, 400, 'no webId');
    assert.equal((await call(sim, `/streamsets/recorded?webId=${flow}&startTime=never`)).status, 400, 'a bad time fails the call');

    const element = await call(sim, `/streamsets/${sim.webIdOf(plant.paths.pump)}/recorded?startTime=2024-01-01T00:00:00Z&endTime=*&maxCount=2`);
    assert.deepEqual(element.body.Items.map((s: any) => s.Name), ['Flow', 'Pressure', 'Run Hours', 'Status', 'Temperature']);
  });

  test('explicit values in a hand-made model come back as given', async (t) => {
    const mine = await startPlant(t, {}, {
      servers: [
        {
          name: 'S',
          databases: [
            {
              name: 'D',
              elements: [
                {
                  name: 'E',
                  attributes: [
                    {
                      name: 'A',
                      units: { name: 'kelvin', abbreviation: 'K' },
                      recorded: [
                        { timestampMs: Date.UTC(2024, 0, 1, 0, 0, 1), value: 1.5 },
                        { timestampMs: Date.UTC(2024, 0, 1), value: { Name: 'Shutdown', Value: 254, IsSystem: true } },
                        { timestampMs: Date.UTC(2024, 0, 1, 0, 0, 2), value: 2, questionable: true },
                      ],
                    },
                  ],
                },
              ],
            },
          ],
        },
      ],
    });
    const res = await call(mine, `/streams/${mine.webIdOf('\\\\S\\D\\E|A')}/recorded?startTime=2024-01-01T00:00:00Z&endTime=2024-01-02T00:00:00Z`);
    assert.deepEqual(
      res.body.Items.map((v: any) => [v.Timestamp, v.Value, v.Good, v.Questionable, v.UnitsAbbreviation]),
      [
        ['2024-01-01T00:00:00Z', { Name: 'Shutdown', Value: 254, IsSystem: true }, false, false, ''],
        ['2024-01-01T00:00:01Z', 1.5, true, false, 'K'],
        ['2024-01-01T00:00:02Z', 2, true, true, 'K'],
      ],
    );
  });

  test('a generated series with a walk drifts slowly and keeps the decimals it is given', () => {
    const series = (walk: number, decimals?: number) =>
      new PiModel({
        servers: [{ name: 'S', databases: [{ name: 'D', elements: [{ name: 'E', attributes: [{ name: 'A', recorded: {
          startMs: HISTORY_START, intervalMs: 1000, count: 100_000, base: 50, amplitude: 0, noise: 0.2, walk, walkEveryValues: 60, decimals, badRatio: 0,
        } }] }] }] }],
      });
    const valuesOf = (model: PiModel) => {
      const attribute = model.byDisplayPath('\\\\S\\D\\E|A');
      if (attribute?.kind !== 'Attribute') throw new Error('no attribute A in the model');
      return [...model.recordedBetween(attribute, 0, Number.MAX_SAFE_INTEGER)].map((v) => v.value as number);
    };
    /** Means of consecutive hours: how far the level moves. */
    const hourMeans = (values: number[]) =>
      Array.from({ length: Math.floor(values.length / 3600) }, (_, h) => values.slice(h * 3600, (h + 1) * 3600).reduce((a, b) => a + b, 0) / 3600);
    const spread = (xs: number[]) => Math.max(...xs) - Math.min(...xs);

    const walking = valuesOf(series(0.2, 2));
    assert.equal(walking.length, 100_000);
    assert.ok(walking.every((v) => Math.round(v * 100) / 100 === v), 'two decimals at most');
    assert.ok(walking.some((v) => Math.round(v * 10) / 10 !== v), 'and two decimals used');
    // Each step moves by the noise and 1/60 of a walk step at most (plus rounding).
    assert.ok(walking.every((v, i) => i === 0 || Math.abs(v - walking[i - 1]!) <= 0.2 + 0.2 / 60 + 0.011));
    assert.ok(spread(hourMeans(walking)) > 1, `the level wanders: hourly means spread ${spread(hourMeans(walking))}`);

    const still = valuesOf(series(0));
    assert.ok(spread(hourMeans(still)) < 0.05, 'without a walk the level stays at base');
    assert.ok(still.some((v) => Math.round(v * 100) / 100 !== v), 'three decimals by default');
  });
});

describe('authentication and CSRF', () => {
  test('anonymous: no credentials needed, any are ignored', async (t) => {
    const sim = await startPlant(t);
    assert.equal((await call(sim, '/assetservers')).status, 200);
    assert.equal((await call(sim, '/assetservers', { headers: basicHeader('x', 'y') })).status, 200);
  });

  test('Basic: missing or wrong credentials are 401 with WWW-Authenticate Basic realm; right ones pass', async (t) => {
    const sim = await startPlant(t, { auth: { basic: { username: 'piuser', password: 's3cret:with colon' } } });
    const missing = await call(sim, '/assetservers');
    assert.equal(missing.status, 401);
    assert.equal(missing.headers['www-authenticate'], 'Basic realm="localhost"');
    assert.equal(missing.body.Errors.length, 1);
    assert.equal((await call(sim, '/assetservers', { headers: basicHeader('piuser', 'wrong') })).status, 401);
    assert.equal((await call(sim, '/assetservers', { headers: basicHeader('PIUSER2', 's3cret:with colon') })).status, 401);
    assert.equal((await call(sim, '/assetservers', { headers: { Authorization: 'Bearer s3cret' } })).status, 401);
    assert.equal((await call(sim, '/assetservers', { headers: basicHeader('piuser', 's3cret:with colon') })).status, 200);
    assert.equal(sim.requests.at(-1)!.headers.authorization, basicHeader('piuser', 's3cret:with colon').Authorization, 'requests keep their headers for tests to inspect');

    sim.setAuth({ basic: { username: 'piuser', password: 'rotated' } });
    assert.equal((await call(sim, '/assetservers', { headers: basicHeader('piuser', 's3cret:with colon') })).status, 401);
    assert.equal((await call(sim, '/assetservers', { headers: basicHeader('piuser', 'rotated') })).status, 200);
  });

  test('Bearer: a wrong token is 401 with WWW-Authenticate Bearer; the right one passes', async (t) => {
    const sim = await startPlant(t, { auth: { bearer: { token: 'tok-123' } } });
    const wrong = await call(sim, '/assetservers', { headers: { Authorization: 'Bearer tok-124' } });
    assert.equal(wrong.status, 401);
    assert.equal(wrong.headers['www-authenticate'], 'Bearer');
    assert.equal((await call(sim, '/assetservers', { headers: { Authorization: 'Bearer tok-123' } })).status, 200);
  });

  test('CSRF defence: a POST without X-Requested-With is 403; with it, it reaches routing (405, GET only)', async (t) => {
    const sim = await startPlant(t);
    const refused = await call(sim, '/batch', { method: 'POST', headers: { 'Content-Type': 'application/json' } });
    assert.equal(refused.status, 403);
    assert.match(refused.body.Errors[0], /X-Requested-With/);
    for (const method of ['PUT', 'PATCH', 'DELETE']) assert.equal((await call(sim, '/assetservers', { method })).status, 403, method);
    const allowed = await call(sim, '/batch', { method: 'POST', headers: { 'X-Requested-With': 'XMLHttpRequest' } });
    assert.equal(allowed.status, 405);
    assert.equal(allowed.headers.allow, 'GET');
    assert.equal((await call(sim, '/assetservers')).status, 200, 'GET needs no header');

    const off = await startPlant(t, { csrfDefense: false });
    assert.equal((await call(off, '/batch', { method: 'POST' })).status, 405);
  });

  test('authentication comes before the CSRF check', async (t) => {
    const sim = await startPlant(t, { auth: { basic: { username: 'u', password: 'p' } } });
    assert.equal((await call(sim, '/batch', { method: 'POST' })).status, 401);
    assert.equal((await call(sim, '/batch', { method: 'POST', headers: basicHeader('u', 'p') })).status, 403);
  });
});

describe('fault injection and request counts', () => {
  test('failNext answers the next N matching requests with the status, as an HTML page, then recovers', async (t) => {
    const sim = await startPlant(t);
    sim.failNext(2, 503);
    const first = await call(sim, '/assetservers');
    assert.equal(first.status, 503);
    assert.match(first.headers['content-type']!, /^text\/html/);
    assert.equal((await call(sim, '/assetservers')).status, 503);
    assert.equal((await call(sim, '/assetservers')).status, 200);

    sim.failNext(1, 502, '/recorded');
    assert.equal((await call(sim, '/assetservers')).status, 200, 'not matching: untouched');
    assert.equal((await call(sim, `/streams/${sim.webIdOf(plant.paths.bigSeries)}/recorded`)).status, 502);
    assert.equal((await call(sim, `/streams/${sim.webIdOf(plant.paths.bigSeries)}/recorded`)).status, 200);
  });

  test('failMatching fails every matching request until clearFaults', async (t) => {
    const sim = await startPlant(t);
    sim.failMatching(/\/elements\/[^/]+\/attributes/, 502);
    const attributes = `/elements/${sim.webIdOf(plant.paths.pump)}/attributes`;
    for (let i = 0; i < 3; i++) assert.equal((await call(sim, attributes)).status, 502);
    assert.equal((await call(sim, `/elements/${sim.webIdOf(plant.paths.pump)}/elements`)).status, 200);
    sim.clearFaults();
    assert.equal((await call(sim, attributes)).status, 200);
    assert.deepEqual(sim.requestsTo('/attributes').map((r) => r.status), [502, 502, 502, 200]);
  });

  test('latency holds matching requests back: a client with a short timeout gives up, others are served', async (t) => {
    const sim = await startPlant(t);
    sim.setLatency(60_000, '/assetservers');
    await assert.rejects(call(sim, '/assetservers', { timeoutMs: 200 }), { code: 'ETIMEDOUT' });
    assert.equal((await call(sim, '')).status, 200, 'the root is not delayed');
    sim.setLatency(0);
    assert.equal((await call(sim, '/assetservers')).status, 200);
  });

  test('hang never answers; the hung request is released when the client gives up', async (t) => {
    const sim = await startPlant(t);
    sim.hang('/assetdatabases', 1);
    const pending = call(sim, `/assetservers/${sim.webIdOf(plant.paths.server)}/assetdatabases`, { timeoutMs: 300 });
    pending.catch(() => {}); // awaited below
    await waitFor(() => sim.hungCount === 1, 'the request hangs');
    await assert.rejects(pending, { code: 'ETIMEDOUT' });
    await waitFor(() => sim.hungCount === 0, 'the hung request is dropped once the client closed');
    assert.equal(sim.requestsTo('/assetdatabases')[0]!.status, undefined);
    assert.equal((await call(sim, `/assetservers/${sim.webIdOf(plant.paths.server)}/assetdatabases`)).status, 200, 'count 1: the next is served');
  });

  test('stop ends hung requests too', async (t) => {
    const sim = await startPlant(t);
    sim.hang();
    const pending = call(sim, '/assetservers');
    pending.catch(() => {}); // awaited below; a failed wait must not leave it unhandled
    await waitFor(() => sim.hungCount === 1, 'the request hangs');
    await sim.stop();
    await assert.rejects(pending);
  });

  test('resetConnections drops the connection without an answer', async (t) => {
    const sim = await startPlant(t);
    sim.resetConnections('/assetservers', 1);
    await assert.rejects(call(sim, '/assetservers'), (err: NodeJS.ErrnoException) => /ECONNRESET|socket hang up/.test(`${err.code} ${err.message}`));
    assert.equal((await call(sim, '/assetservers')).status, 200);
  });

  test('every request is counted per path, refused and faulted ones included', async (t) => {
    const sim = await startPlant(t, { auth: { basic: { username: 'u', password: 'p' } } });
    sim.failNext(1, 503);
    await call(sim, '/assetservers', { headers: basicHeader('u', 'p') });
    await call(sim, '/assetservers');
    await call(sim, '/assetservers?selectedFields=Items.Name', { headers: basicHeader('u', 'p') });
    assert.equal(sim.count('/assetservers'), 3);
    assert.equal(sim.count(/selectedFields=Items\.Name/), 1);
    assert.deepEqual([...sim.countsByPath()], [['/piwebapi/assetservers', 3]]);
    assert.deepEqual(sim.requests.map((r) => r.status), [503, 401, 200]);
    sim.clearRequests();
    assert.equal(sim.count(), 0);
  });
});
