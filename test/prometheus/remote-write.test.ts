// Prometheus remote write 1.0 against the real service (WIRE.md part 3 "Prometheus
// compatibility", "Series identity"): POST /api/v1/write?db=<client> with snappy protobuf
// bodies, read back through the SPEC query routes and GET /svcapi/series. Two storage shards,
// so series whose scope labels name a collection of the other shard are forwarded, NaN values
// and all. Credentials as for ingest; 400 for what does not decode, 403 outside the grant, 413
// for a snappy bomb, 415 for the wrong encoding or type, 429 with Retry-After.

import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { decodeFormat1 } from '../../native-free-codecs/result-binary.js';
import { encodeWriteRequest, type EncodableSeries, type Label } from '../../native-free-codecs/prom-remote.js';
import { snappyCompress } from '../../native-free-codecs/snappy.js';
import { shardOf } from '../../shared/shard-hash.js';
import { accountHelpers, type Account } from '../api/accounts.js';
import { startService, type HttpResult, type TestService } from '../api/harness.js';

const T0 = Date.UTC(2026, 0, 12, 8);
const HOUR = 3_600_000;
const ACME = { organization: 'acme', site: 'north', unit: 'boiler-1', grid: 'default' };
const idOf = (s: typeof ACME) => `${s.organization}/${s.site}/${s.unit}/${s.grid}`;
const STALE_BITS = 0x7ff0000000000002n;
const staleMarker = () => new Float64Array(BigUint64Array.of(STALE_BITS).buffer)[0];
const MAX_BODY = 256 * 1024;
const RATE_LIMIT = 60;

/** A series of `values` a second apart from `start`. */
function series(labels: Label[], values: number[] | Float64Array, start = T0): EncodableSeries {
  return { labels, timestamps: Array.from(values, (_, i) => start + i * 1000), values: values instanceof Float64Array ? values : Float64Array.from(values) };
}

/** A grid name whose collection (acme/north/boiler-1/<grid>) lives on shard `shard` of 2. */
function gridOnShard(shard: number, prefix: string): string {
  for (let i = 0; ; i++) if (shardOf(idOf({ ...ACME, grid: `${prefix}${i}` }), 2) === shard) return `${prefix}${i}`;
}

describe('Prometheus remote write: POST /api/v1/write (2 shards)', () => {
  let svc: TestService;
  let admin: string;
  let writer: Account;
  let key: string;
  const helpers = accountHelpers(() => svc, () => admin);

  /** POSTs a body to /api/v1/write?db=<db>; snappy protobuf of `body` unless given as bytes. */
  function remoteWrite(body: EncodableSeries[] | Uint8Array, opts: { db?: string; auth?: string | null; encoding?: string | null; contentType?: string | null; raw?: boolean } = {}): Promise<HttpResult> {
    const bytes = body instanceof Uint8Array ? (opts.raw ? body : snappyCompress(body)) : snappyCompress(encodeWriteRequest(body));
    const headers: Record<string, string> = {};
    if (opts.contentType !== null) headers['content-type'] = opts.contentType ?? 'application/x-protobuf';
    if (opts.encoding !== null) headers['content-encoding'] = opts.encoding ?? 'snappy';
    if (opts.auth !== null) headers.authorization = opts.auth ?? `Bearer ${key}`;
    headers['x-prometheus-remote-write-version'] = '0.1.0';
    return svc.request('POST', `/api/v1/write?db=${encodeURIComponent(opts.db ?? 'prom')}`, { rawBody: Buffer.from(bytes), headers });
  }

  function written(res: HttpResult, what: string): void {
    assert.equal(res.status, 204, `${what}: ${res.status} ${res.text}`);
    assert.equal(res.text, '');
  }

  /** Points of tags of one collection, through the KairosDB-like POST /svcapi/fast_query (tag names hold commas). */
  async function points(scope: typeof ACME, tags: string[], format: 'json' | 'binary' = 'json'): Promise<any> {
    const body = { start_absolute: T0 - HOUR, end_absolute: T0 + HOUR, ...scope, metrics: tags.map((name) => ({ name })) };
    const res = await svc.post(format === 'json' ? '/svcapi/fast_query' : '/svcapi/fast_query_binary', body, admin);
    assert.equal(res.status, 200, res.text);
    return format === 'json' ? res.body : decodeFormat1(new Uint8Array(res.bytes));
  }

  async function listSeries(collection: string): Promise<Array<{ tag: string; labels?: Record<string, string>; last_ms: number | null; last_value: number | null }>> {
    const res = await svc.get(`/svcapi/series?collection=${encodeURIComponent(collection)}&limit=1000`, admin);
    assert.equal(res.status, 200, res.text);
    return res.body.series;
  }

  before(async () => {
    svc = await startService({ config: { storage: { shards: 2 }, ingest: { maxBodyBytes: MAX_BODY, rateLimitPerMinute: RATE_LIMIT } } });
    admin = await svc.adminToken();
    const org = await helpers.mk('orgs', { name: 'acme' });
    const site = await helpers.mk('sites', { name: 'north', orgsId: org });
    await helpers.mk('units', { name: 'boiler-1', siteId: site });
    await helpers.mk('units', { name: 'boiler-2', siteId: site });
    const other = await helpers.mk('orgs', { name: 'other' });
    await helpers.mk('units', { name: 'u', siteId: await helpers.mk('sites', { name: 's', orgsId: other }) });
    writer = await helpers.account('prom-writer@plant.test', { orgs: [org] });
    for (const clientId of ['prom', 'prom-burst']) await helpers.mk('ingestconfigs', { clientId, organization: 'acme', site: 'north', unit: 'boiler-1' });
    const made = await svc.post('/svcapi/api_keys', { name: 'prometheus' }, writer.token);
    assert.equal(made.status, 201, made.text);
    key = made.body.key;
  });
  after(() => svc?.dispose());

  test('series arrive as tags `<__name__>{k="v",…}` with their labels; scope labels choose the collection', async () => {
    written(await remoteWrite([
      series([['__name__', 'up'], ['instance', 'localhost:9090'], ['job', 'prometheus']], [1, 1, 0]),
      series([['__name__', 'temperature_celsius'], ['sensor', 'a "quoted"\nname']], [20.5, 21.25]),
      series([['__name__', 'pressure'], ['unit', 'boiler-2'], ['grid', 'fast'], ['line', 'B']], [3.5]),
      series([['job', 'nameless']], [7]),
    ]), 'first write');
    const own = await points(ACME, ['up{instance="localhost:9090",job="prometheus"}', 'temperature_celsius{sensor="a \\"quoted\\"\\nname"}', '{job="nameless"}']);
    assert.deepEqual(own, {
      'up{instance="localhost:9090",job="prometheus"}': [[T0, 1], [T0 + 1000, 1], [T0 + 2000, 0]],
      'temperature_celsius{sensor="a \\"quoted\\"\\nname"}': [[T0, 20.5], [T0 + 1000, 21.25]],
      '{job="nameless"}': [[T0, 7]],
    });
    const b2 = { ...ACME, unit: 'boiler-2', grid: 'fast' };
    assert.deepEqual(await points(b2, ['pressure{line="B"}']), { 'pressure{line="B"}': [[T0, 3.5]] });
    const listed = new Map((await listSeries(idOf(ACME))).map((s) => [s.tag, s]));
    assert.deepEqual(listed.get('up{instance="localhost:9090",job="prometheus"}')?.labels, { __name__: 'up', instance: 'localhost:9090', job: 'prometheus' });
    assert.deepEqual(listed.get('{job="nameless"}')?.labels, { job: 'nameless' });
    assert.deepEqual((await listSeries(idOf(b2))).map((s) => [s.tag, s.labels]), [['pressure{line="B"}', { __name__: 'pressure', line: 'B' }]], 'scope labels are not kept');
  });

  test('out-of-order samples are stored in time order; a timestamp sent twice keeps the later sample', async () => {
    const name = 'order_test';
    written(await remoteWrite([{ labels: [['__name__', name]], timestamps: [T0 + 2000, T0, T0 + 1000, T0 + 1000], values: Float64Array.of(3, 1, 2, 20) }]), 'out of order');
    written(await remoteWrite([series([['__name__', name]], [30], T0 + 2000)]), 'the same timestamp again');
    assert.deepEqual((await points(ACME, [name]))[name], [[T0, 1], [T0 + 1000, 20], [T0 + 2000, 30]]);
  });

  test('NaN, ±Inf and the stale marker are stored as values, here and through a forward to the other shard', async () => {
    const home = shardOf(idOf(ACME), 2);
    const grids = [gridOnShard(home, 'same'), gridOnShard(1 - home, 'other')];
    const special = new Float64Array([1.5, Infinity, -Infinity, NaN, 0, 2.5]);
    special[4] = staleMarker();
    for (const grid of grids) {
      written(await remoteWrite([series([['__name__', 'special'], ['grid', grid]], special)]), `grid ${grid}`);
      const scope = { ...ACME, grid };
      // JSON has no NaN or Infinity: they read as null, at their timestamps.
      assert.deepEqual(await points(scope, ['special']), { special: [[T0, 1.5], [T0 + 1000, null], [T0 + 2000, null], [T0 + 3000, null], [T0 + 4000, null], [T0 + 5000, 2.5]] }, grid);
      const [binary] = await points(scope, ['special'], 'binary');
      assert.deepEqual([...binary.timestamps], Array.from(special, (_, i) => T0 + i * 1000), grid);
      const v = [...binary.values];
      assert.deepEqual([v[0], v[1], v[2], v[5]], [1.5, Infinity, -Infinity, 2.5], `${grid}: ±Inf through format 1`);
      assert.ok(Number.isNaN(v[3]) && Number.isNaN(v[4]), `${grid}: NaN and the stale marker are NaN in format 1 (f32: the payload does not fit)`);
      const [listed] = await listSeries(idOf(scope));
      assert.deepEqual([listed.last_ms, listed.last_value], [T0 + 5000, 2.5]);
    }
    // The last point a stale marker: the listing shows its time and no value.
    written(await remoteWrite([series([['__name__', 'special'], ['grid', grids[1]]], Float64Array.of(staleMarker()), T0 + 9000)]), 'stale last');
    const [listed] = await listSeries(idOf({ ...ACME, grid: grids[1] }));
    assert.deepEqual([listed.last_ms, listed.last_value], [T0 + 9000, null]);
  });

  test('credentials: the API key, a JWT and Basic with the key are accepted; none is 401; an unknown client 404', async () => {
    written(await remoteWrite([series([['__name__', 'cred'], ['as', 'key']], [1])]), 'API key');
    written(await remoteWrite([series([['__name__', 'cred'], ['as', 'jwt']], [1])], { auth: `Bearer ${writer.token}` }), 'JWT');
    written(await remoteWrite([series([['__name__', 'cred'], ['as', 'basic']], [1])], { auth: `Basic ${Buffer.from(`prometheus:${key}`).toString('base64')}` }), 'Basic');
    assert.equal((await remoteWrite([series([['__name__', 'cred']], [1])], { auth: null })).status, 401);
    const unknown = await remoteWrite([series([['__name__', 'cred']], [1])], { db: 'nobody' });
    assert.equal(unknown.status, 404, unknown.text);
    assert.match(unknown.body.error, /nobody/);
  });

  test('a series outside the caller\'s grant: 403, and nothing of the body is written', async () => {
    const res = await remoteWrite([series([['__name__', 'granted_part']], [1]), series([['__name__', 'x'], ['organization', 'other'], ['site', 's'], ['unit', 'u']], [1])]);
    assert.equal(res.status, 403, res.text);
    assert.match(res.body.error, /other\/s\/u\/default is outside your access grant/);
    assert.deepEqual(await points(ACME, ['granted_part']), { granted_part: [] });
  });

  test('bodies that do not decode: 400 naming the problem (Prometheus drops the batch)', async () => {
    const cases: Array<[string, Uint8Array, boolean, RegExp]> = [
      ['not snappy', Uint8Array.of(0x0a, 0xff, 0xff), true, /not valid snappy \(Content-Encoding: snappy\): snappy: /],
      ['snappy of a broken protobuf', Uint8Array.of(0x0a, 0x05, 0x0a), false, /protobuf: TimeSeries of 5 bytes .* runs past/],
      ['a bad label name', encodeWriteRequest([series([['__name__', 'ok'], ['bad-name', 'x']], [1])]), false, /label name "bad-name" must match/],
      ['a timestamp in seconds', encodeWriteRequest([series([['__name__', 'secs']], [1], 1_768_000_000)]), false, /sample 0: timestamp 1768000000 is before storage.minTimestampMs .*epoch seconds/],
      ['a scope label that cannot be a folder', encodeWriteRequest([series([['__name__', 'x'], ['grid', 'a/b']], [1])]), false, /label grid: /],
    ];
    for (const [name, bytes, raw, pattern] of cases) {
      const res = await remoteWrite(bytes, { raw });
      assert.equal(res.status, 400, `${name}: ${res.text}`);
      assert.match(res.body.error, pattern, name);
    }
  });

  test('a snappy bomb is 413 naming ingest.maxBodyBytes, refused from its preamble; a body over the limit too', async () => {
    // Five bytes of preamble claiming 100 MB, then a few literal bytes.
    const bomb = Uint8Array.of(0x80, 0xc2, 0xd7, 0x2f, 0x00, 0x00, 0x0a);
    const res = await remoteWrite(bomb, { raw: true });
    assert.equal(res.status, 413, res.text);
    assert.match(res.body.error, /100000000 bytes, more than 262144 bytes \(ingest.maxBodyBytes\)/);
    const big = await remoteWrite(new Uint8Array(MAX_BODY + 1), { raw: true });
    assert.equal(big.status, 413, big.text);
    assert.match(big.body.error, /ingest.maxBodyBytes/);
  });

  test('415 for another Content-Encoding or Content-Type, naming what came', async () => {
    const body = [series([['__name__', 'x']], [1])];
    for (const [opts, pattern] of [
      [{ encoding: null }, /Content-Encoding "identity" is not supported by remote write: send Content-Encoding: snappy/],
      [{ encoding: 'gzip' }, /Content-Encoding "gzip"/],
      [{ contentType: 'application/json' }, /Content-Type "application\/json" is not supported by remote write/],
      [{ contentType: 'application/x-protobuf;proto=io.prometheus.write.v2.Request' }, /remote write 1.0/],
    ] as const) {
      const res = await remoteWrite(body, opts);
      assert.equal(res.status, 415, `${JSON.stringify(opts)}: ${res.text}`);
      assert.match(res.body.error, pattern);
    }
    written(await remoteWrite(body, { contentType: 'application/x-protobuf; proto=prometheus.WriteRequest' }), 'the 1.0 message named');
  });

  test(`over ingest.rateLimitPerMinute (${RATE_LIMIT}) a client is answered 429 with Retry-After`, async () => {
    let limited: HttpResult | null = null;
    for (let i = 0; i <= RATE_LIMIT && !limited; i++) {
      const res = await remoteWrite([series([['__name__', 'burst']], [i], T0 + i)], { db: 'prom-burst' });
      if (res.status === 429) limited = res;
      else written(res, `request ${i}`);
    }
    assert.ok(limited, 'a request over the limit was refused');
    assert.ok(Number(limited.headers['retry-after']) >= 1, `Retry-After: ${limited.headers['retry-after']}`);
  });

  test('the ingest counters count remote writes', async () => {
    const res = await svc.get('/svcapi/ingest/stats', admin);
    assert.equal(res.status, 200, res.text);
    const prom = res.body.clients.find((c: { clientId: string }) => c.clientId === 'prom');
    assert.ok(prom.requests >= 10 && prom.points >= 20, JSON.stringify(prom));
    assert.ok(prom.rejectedRequests >= 5, 'the refused bodies count');
  });
});
