// storage.minTimestampMs against the real service: a write with a timestamp below it (epoch
// seconds, the usual mistake) is refused as a whole, HTTP 200 {success: false}, with a message
// that says so, on every write route and in every body format; 0 accepts every timestamp.

import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { pack } from 'msgpackr';
import { encodeBinaryBatch } from '../../native-free-codecs/write-body.js';
import { startService, type TestService } from './harness.js';

const SCOPE = { organization: 'acme', site: 'north', unit: 'boiler-1', grid: 'main' };
const MS = Date.UTC(2026, 0, 10); // a timestamp in milliseconds
const SECONDS = Math.floor(MS / 1000); // the same moment in seconds: 1768003200
const DEFAULT_MIN = 100_000_000_000;

const seconds = (where: string) =>
  new RegExp(`^${where}: timestamp ${SECONDS} is before storage\\.minTimestampMs \\(${DEFAULT_MIN}\\); it looks like epoch seconds, send milliseconds$`);

/** The same points (one good, one in seconds) in each body format, and where the message points. */
const BODIES: Array<{ format: string; contentType: string; body: (tag: string) => Buffer; where: (tag: string) => string }> = [
  {
    format: 'JSON, tag keyed',
    contentType: 'application/json',
    body: (tag) => Buffer.from(JSON.stringify({ ...SCOPE, tags: { [tag]: [[MS, 1], [SECONDS, 2]] } })),
    where: (tag) => `tag "${tag}" point 1`,
  },
  {
    format: 'JSON, columnar',
    contentType: 'application/json',
    body: (tag) => Buffer.from(JSON.stringify({ ...SCOPE, timestamps: [MS, SECONDS], columns: { [tag]: [1, 2] } })),
    where: () => 'timestamps index 1',
  },
  {
    format: 'msgpack',
    contentType: 'application/msgpack',
    body: (tag) => pack({ ...SCOPE, tags: { [tag]: [[MS, 1], [SECONDS, 2]] } }),
    where: (tag) => `tag "${tag}" point 1`,
  },
  {
    format: 'HSW1',
    contentType: 'application/octet-stream',
    body: (tag) => Buffer.from(encodeBinaryBatch(SCOPE, [MS, SECONDS], [{ name: tag, values: [1, 2] }])),
    where: () => 'timestamps index 1',
  },
];

const queryUrl = (tag: string) =>
  `/svcapi/fast_query?tags=${encodeURIComponent(tag)}&start=0&end=${MS + 1}&${new URLSearchParams(SCOPE).toString()}`;

describe('storage.minTimestampMs', () => {
  let svc: TestService;
  let admin: string;

  before(async () => {
    svc = await startService({ config: { storage: { shards: 2 } } });
    admin = await svc.adminToken();
    assert.equal((await svc.post('/svcapi/create_collection', SCOPE, admin)).body.success, true);
  });
  after(() => svc.dispose());

  for (const route of ['write', 'write_fast', 'write_buffered']) {
    for (const { format, contentType, body, where } of BODIES) {
      test(`/svcapi/${route}, ${format}: a timestamp in seconds refuses the whole body`, async () => {
        const tag = `${route}-${format}`.replace(/[^A-Za-z0-9]+/g, '-');
        const res = await svc.request('POST', `/svcapi/${route}`, { rawBody: body(tag), token: admin, headers: { 'content-type': contentType } });
        assert.equal(res.status, 200, res.text);
        assert.equal(res.body.success, false);
        assert.match(res.body.error, seconds(where(tag)));
        // Nothing of it was written, not even the good point (nor put in the write buffer).
        const stats = await svc.get('/svcapi/write_buffer_stats', admin);
        assert.equal(stats.status, 200, stats.text);
        assert.equal(stats.body.pendingPoints, 0);
        assert.deepEqual((await svc.get(queryUrl(tag), admin)).body, { [tag]: [] });
      });
    }
  }

  test('/svcapi/write_tag_mapping: the same refusal', async () => {
    const created = await svc.post('/svcapi/tag_mappings', { external: 'opc:ns=2;s=TI101', tag: 'MAPPED', ...SCOPE }, admin);
    assert.equal(created.status, 200, created.text);
    const res = await svc.post('/svcapi/write_tag_mapping', { data: { 'opc:ns=2;s=TI101': [[MS, 1], [SECONDS, 2]] } }, admin);
    assert.equal(res.status, 200, res.text);
    assert.equal(res.body.success, false);
    assert.match(res.body.error, seconds('tag "MAPPED" point 1'));
    assert.deepEqual((await svc.get(queryUrl('MAPPED'), admin)).body, { MAPPED: [] });
  });

  test('the limit itself is accepted; below it, a value that is not seconds-like gets no hint', async () => {
    const ok = await svc.post('/svcapi/write', { ...SCOPE, tags: { EDGE: [[DEFAULT_MIN, 1]] } }, admin);
    assert.deepEqual(ok.body, { success: true, points: 1 });
    const tiny = await svc.post('/svcapi/write', { ...SCOPE, tags: { EDGE: [[5, 1]] } }, admin);
    assert.equal(tiny.body.success, false);
    assert.equal(tiny.body.error, `tag "EDGE" point 0: timestamp 5 is before storage.minTimestampMs (${DEFAULT_MIN})`);
  });
});

describe('storage.minTimestampMs = 0', () => {
  let svc: TestService;

  before(async () => {
    svc = await startService({ config: { storage: { shards: 1, minTimestampMs: 0 } } });
  });
  after(() => svc.dispose());

  test('accepts every timestamp, seconds included', async () => {
    const admin = await svc.adminToken();
    assert.equal((await svc.post('/svcapi/create_collection', SCOPE, admin)).body.success, true);
    const res = await svc.post('/svcapi/write', { ...SCOPE, tags: { OLD: [[0, 1], [SECONDS, 2]] } }, admin);
    assert.deepEqual(res.body, { success: true, points: 2 });
    assert.deepEqual((await svc.get(queryUrl('OLD'), admin)).body, { OLD: [[0, 1], [SECONDS, 2]] });
  });
});
