// Blobs (WIRE.md part 2 "Blobs and attachments", issue 20): streamed uploads and downloads in
// flat memory, content addressing (identical bytes stored once, removed with their last key),
// Range / ETag / If-None-Match / HEAD, the key rules, the body limit, roles, listing, and clients
// that vanish or read slowly. Against the real service; the memory figures are the service
// process's own (/proc/<pid>/status).

import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { waitFor } from '../support/wait-for.js';
import { blobFiles, download, generated, memoryOf, sha256Of, upload } from './blob-support.js';
import { startService, type TestService } from './harness.js';

const MiB = 1024 * 1024;

describe('blobs', () => {
  let svc: TestService;
  let admin: string;
  let readOnly: string;
  let writer: string;

  const put = (key: string, body: string | Buffer, token = admin, contentType = 'application/octet-stream') =>
    svc.request('PUT', `/svcapi/blob/${key}`, { rawBody: body, token, headers: { 'content-type': contentType } });

  before(async () => {
    svc = await startService();
    admin = await svc.adminToken();
    writer = await svc.newUser('writer@plant.test');
    const made = await svc.request('POST', '/svcapi/users', { token: admin, body: { email: 'viewer@plant.test', password: 'viewer-password-1', role: 'read-only' } });
    assert.equal(made.status, 200, made.text);
    readOnly = await svc.login('viewer@plant.test', 'viewer-password-1');
  });
  after(() => svc?.dispose());

  test('a 100 MB upload and download are streamed: byte-exact, and the service\'s peak memory does not grow by anything like the blob', async (t) => {
    const size = 100 * MiB;
    const expected = sha256Of(generated(size, 7));
    const before = memoryOf(svc.child.pid!);
    const put1 = await upload(svc, '/svcapi/blob/big/one.bin', generated(size, 7), { token: admin, contentLength: size });
    assert.equal(put1.status, 201, put1.text);
    assert.equal(put1.body.size_bytes, size);
    assert.equal(put1.body.sha256, expected);
    const afterUpload = memoryOf(svc.child.pid!);
    // The same bytes again, chunked this time (no declared length).
    const put2 = await upload(svc, '/svcapi/blob/big/two.bin', generated(size, 7), { token: admin, contentLength: null });
    assert.equal(put2.status, 201, put2.text);
    assert.equal(put2.body.sha256, expected);
    const got = await download(svc, '/svcapi/blob/big/one.bin', { token: admin });
    assert.equal(got.status, 200);
    assert.equal(got.complete, true);
    assert.equal(got.size, size);
    assert.equal(got.sha256, expected);
    assert.equal(got.headers.etag, `"${expected}"`);
    const afterAll = memoryOf(svc.child.pid!);
    t.diagnostic(`service VmHWM before ${(before.peak / MiB).toFixed(1)} MiB, after upload ${(afterUpload.peak / MiB).toFixed(1)} MiB, after a second (chunked) upload and a download ${(afterAll.peak / MiB).toFixed(1)} MiB; VmRSS now ${(afterAll.rss / MiB).toFixed(1)} MiB`);
    // What growth there is is copied body chunks awaiting the garbage collector (V8 collects once
    // about 64 MiB of external memory has piled up): the same ~35 MiB for a 200 MiB upload, so it
    // does not follow the size of the blob.
    assert.ok(afterAll.peak - before.peak < 60 * MiB, `peak resident memory grew by ${((afterAll.peak - before.peak) / MiB).toFixed(1)} MiB for 100 MiB blobs`);
    // One content file for the two keys.
    assert.deepEqual(blobFiles(svc.dataDir).contents.filter((name) => name === expected), [expected]);
    for (const key of ['big/one.bin', 'big/two.bin']) assert.equal((await svc.request('DELETE', `/svcapi/blob/${key}`, { token: admin })).status, 204);
    assert.ok(!blobFiles(svc.dataDir).contents.includes(expected), 'the content goes with its last key');
  });

  test('round trip is byte-exact and keeps the content type; PUT answers 201 then 200 on replace; DELETE 204, then 404', async () => {
    const bytes = Buffer.concat([...generated(300_001, 11)]);
    const first = await put('docs/manual.pdf', bytes, writer, 'application/pdf');
    assert.equal(first.status, 201, first.text);
    assert.deepEqual(Object.keys(first.body).sort(), ['content_type', 'created_ms', 'key', 'sha256', 'size_bytes']);
    assert.equal(first.body.key, 'docs/manual.pdf');
    assert.equal(first.body.content_type, 'application/pdf');
    const got = await svc.request('GET', '/svcapi/blob/docs/manual.pdf', { token: readOnly });
    assert.equal(got.status, 200);
    assert.equal(got.headers['content-type'], 'application/pdf');
    assert.ok(got.bytes.equals(bytes), 'byte-exact');
    const replaced = await put('docs/manual.pdf', 'v2', writer, 'text/plain');
    assert.equal(replaced.status, 200, replaced.text);
    assert.equal(replaced.body.size_bytes, 2);
    const again = await svc.request('GET', '/svcapi/blob/docs/manual.pdf', { token: writer });
    assert.equal(again.text, 'v2');
    assert.equal(again.headers['content-type'], 'text/plain');
    assert.ok(!blobFiles(svc.dataDir).contents.includes(first.body.sha256), 'the replaced content is gone');
    assert.equal((await svc.request('DELETE', '/svcapi/blob/docs/manual.pdf', { token: writer })).status, 204);
    assert.equal((await svc.request('GET', '/svcapi/blob/docs/manual.pdf', { token: writer })).status, 404);
    assert.equal((await svc.request('DELETE', '/svcapi/blob/docs/manual.pdf', { token: writer })).status, 404);
    assert.equal((await svc.request('HEAD', '/svcapi/blob/docs/manual.pdf', { token: writer })).status, 404);
  });

  test('Range answers 206 with exactly those bytes (also a suffix and an open end); past the end is 416', async () => {
    const bytes = Buffer.concat([...generated(100_000, 5)]);
    assert.equal((await put('range/data.bin', bytes)).status, 201);
    const range = async (header: string) => svc.request('GET', '/svcapi/blob/range/data.bin', { token: readOnly, headers: { range: header } });
    const middle = await range('bytes=1000-1999');
    assert.equal(middle.status, 206);
    assert.equal(middle.headers['content-range'], 'bytes 1000-1999/100000');
    assert.ok(middle.bytes.equals(bytes.subarray(1000, 2000)));
    const suffix = await range('bytes=-500');
    assert.equal(suffix.status, 206);
    assert.equal(suffix.headers['content-range'], 'bytes 99500-99999/100000');
    assert.ok(suffix.bytes.equals(bytes.subarray(99_500)));
    const open = await range('bytes=99990-');
    assert.equal(open.status, 206);
    assert.ok(open.bytes.equals(bytes.subarray(99_990)));
    const clipped = await range('bytes=99000-200000');
    assert.equal(clipped.status, 206);
    assert.ok(clipped.bytes.equals(bytes.subarray(99_000)));
    const beyond = await range('bytes=100000-');
    assert.equal(beyond.status, 416);
    assert.equal(beyond.headers['content-range'], 'bytes */100000');
    assert.equal(beyond.body.error.includes('range'), true);
    assert.equal((await range('bytes=-0')).status, 416);
    const large = await download(svc, '/svcapi/blob/range/data.bin', { token: admin, headers: { range: 'bytes=10-' }, keep: true });
    assert.equal(large.status, 206);
    assert.ok(large.bytes!.equals(bytes.subarray(10)));
  });

  test('ETag is the quoted sha256; If-None-Match with it answers 304 without a body; HEAD gives the headers and the length', async () => {
    const created = await put('etag/x.txt', 'some text', admin, 'text/plain; charset=utf-8');
    const etag = `"${created.body.sha256}"`;
    const got = await svc.request('GET', '/svcapi/blob/etag/x.txt', { token: readOnly });
    assert.equal(got.headers.etag, etag);
    const cached = await svc.request('GET', '/svcapi/blob/etag/x.txt', { token: readOnly, headers: { 'if-none-match': etag } });
    assert.equal(cached.status, 304);
    assert.equal(cached.bytes.length, 0);
    assert.equal(cached.headers.etag, etag);
    const star = await svc.request('GET', '/svcapi/blob/etag/x.txt', { token: readOnly, headers: { 'if-none-match': '*' } });
    assert.equal(star.status, 304);
    const stale = await svc.request('GET', '/svcapi/blob/etag/x.txt', { token: readOnly, headers: { 'if-none-match': '"0000"' } });
    assert.equal(stale.status, 200);
    assert.equal(stale.text, 'some text');
    const head = await svc.request('HEAD', '/svcapi/blob/etag/x.txt', { token: readOnly });
    assert.equal(head.status, 200);
    assert.equal(head.headers['content-length'], '9');
    assert.equal(head.headers['content-type'], 'text/plain; charset=utf-8');
    assert.equal(head.headers.etag, etag);
    assert.equal(head.bytes.length, 0);
  });

  test('identical content under two keys is one content file, kept until its last key goes', async () => {
    const before = blobFiles(svc.dataDir).contents.length;
    const a = await put('dedup/a', 'the same bytes');
    const b = await put('dedup/b', 'the same bytes', admin, 'text/plain');
    assert.equal(a.status, 201);
    assert.equal(b.status, 201);
    assert.equal(a.body.sha256, b.body.sha256);
    const files = blobFiles(svc.dataDir).contents;
    assert.equal(files.length, before + 1);
    assert.equal(files.filter((f) => f === a.body.sha256).length, 1);
    assert.equal((await svc.request('DELETE', '/svcapi/blob/dedup/a', { token: admin })).status, 204);
    assert.ok(blobFiles(svc.dataDir).contents.includes(a.body.sha256), 'still referred to by dedup/b');
    assert.equal((await svc.request('GET', '/svcapi/blob/dedup/b', { token: admin })).text, 'the same bytes');
    assert.equal((await svc.request('DELETE', '/svcapi/blob/dedup/b', { token: admin })).status, 204);
    assert.ok(!blobFiles(svc.dataDir).contents.includes(a.body.sha256), 'gone with its last key');
  });

  test('keys: `..`, `.`, empty segments, percent-encoding, spaces and 1025 bytes are 400 (and touch nothing); 1024 bytes is fine', async () => {
    for (const key of ['..', 'a/../b', 'a/./b', '.', 'a//b', '%2e%2e', 'a/%2e%2e/b', 'a%2Fb', 'a%20b', 'a/', 'x'.repeat(1025), 'ü']) {
      const res = await svc.request('PUT', `/svcapi/blob/${key === 'ü' ? encodeURIComponent(key) : key}`, { rawBody: 'x', token: admin });
      assert.equal(res.status, 400, `PUT ${key.slice(0, 40)}: ${res.status} ${res.text}`);
      assert.equal((await svc.request('GET', `/svcapi/blob/${key === 'ü' ? encodeURIComponent(key) : key}`, { token: admin })).status === 200, false);
    }
    const longest = 'k'.repeat(1020) + '/a.b';
    assert.equal((await put(longest, 'ok')).status, 201);
    assert.equal((await svc.request('GET', `/svcapi/blob/${longest}`, { token: admin })).text, 'ok');
    assert.equal((await svc.request('DELETE', `/svcapi/blob/${longest}`, { token: admin })).status, 204);
    assert.deepEqual(blobFiles(svc.dataDir).temporary, []);
  });

  test('any token reads; read-only callers get 403 on PUT and DELETE; no token is 401', async () => {
    assert.equal((await put('roles/x', 'one', writer)).status, 201);
    const denied = await put('roles/x', 'two', readOnly);
    assert.equal(denied.status, 403);
    assert.equal((await svc.request('DELETE', '/svcapi/blob/roles/x', { token: readOnly })).status, 403);
    assert.equal((await svc.request('GET', '/svcapi/blob/roles/x', { token: readOnly })).text, 'one');
    assert.equal((await svc.request('GET', '/svcapi/blob?prefix=roles/', { token: readOnly })).body.items.length, 1);
    assert.equal((await svc.request('GET', '/svcapi/blob/roles/x')).status, 401);
    assert.equal((await svc.request('PUT', '/svcapi/blob/roles/x', { rawBody: 'three' })).status, 401);
    assert.equal((await svc.request('DELETE', '/svcapi/blob/roles/x', { token: admin })).status, 204);
  });

  test('listing by prefix, in key order, with a limit', async () => {
    for (const key of ['list/b', 'list/a', 'list/c/deep', 'listing/other', 'lis']) assert.equal((await put(key, key, admin, 'text/plain')).status, 201);
    const all = await svc.request('GET', '/svcapi/blob?prefix=list/', { token: readOnly });
    assert.equal(all.status, 200);
    assert.deepEqual(all.body.items.map((i: { key: string }) => i.key), ['list/a', 'list/b', 'list/c/deep']);
    const item = all.body.items[0];
    assert.deepEqual(Object.keys(item).sort(), ['content_type', 'created_ms', 'key', 'sha256', 'size_bytes']);
    assert.equal(item.size_bytes, 6);
    assert.equal(item.content_type, 'text/plain');
    const two = await svc.request('GET', '/svcapi/blob?prefix=list&limit=2', { token: readOnly });
    assert.deepEqual(two.body.items.map((i: { key: string }) => i.key), ['list/a', 'list/b']);
    assert.equal((await svc.request('GET', '/svcapi/blob?prefix=nothing-here', { token: readOnly })).body.items.length, 0);
    assert.equal((await svc.request('GET', '/svcapi/blob?limit=0', { token: readOnly })).status, 400);
  });

  test('a client that vanishes mid-upload leaves no temporary file, no key and no content', async () => {
    const contentsBefore = blobFiles(svc.dataDir).contents;
    const declared = await upload(svc, '/svcapi/blob/vanish/declared', generated(20 * MiB, 3), { token: admin, contentLength: 20 * MiB, vanishAfter: 4 * MiB });
    assert.equal(declared.status, 0);
    const chunked = await upload(svc, '/svcapi/blob/vanish/chunked', generated(20 * MiB, 4), { token: admin, contentLength: null, vanishAfter: 4 * MiB });
    assert.equal(chunked.status, 0);
    await waitFor(() => blobFiles(svc.dataDir).temporary.length === 0, 'the partial uploads are removed');
    for (const key of ['vanish/declared', 'vanish/chunked']) assert.equal((await svc.request('GET', `/svcapi/blob/${key}`, { token: admin })).status, 404);
    assert.deepEqual(blobFiles(svc.dataDir).contents, contentsBefore);
    assert.equal((await put('vanish/after', 'still serving')).status, 201);
  });

  test('a slow reader gets the whole download; one that vanishes part-way does not disturb the next', async () => {
    const size = 16 * MiB;
    const expected = sha256Of(generated(size, 9));
    assert.equal((await upload(svc, '/svcapi/blob/slow/data', generated(size, 9), { token: admin, contentLength: size })).status, 201);
    const slow = await download(svc, '/svcapi/blob/slow/data', { token: readOnly, pauseEvery: 512 * 1024, pauseMs: 25 });
    assert.equal(slow.complete, true);
    assert.equal(slow.size, size);
    assert.equal(slow.sha256, expected);
    const gone = await download(svc, '/svcapi/blob/slow/data', { token: readOnly, vanishAfter: 2 * MiB });
    assert.equal(gone.complete, false);
    const next = await download(svc, '/svcapi/blob/slow/data', { token: readOnly });
    assert.equal(next.sha256, expected);
    assert.equal((await svc.get('/svcapi/health', admin)).status, 200);
  });
});

describe('blob.maxBytes', () => {
  let svc: TestService;
  let admin: string;

  before(async () => {
    svc = await startService({ config: { blob: { maxBytes: MiB } } });
    admin = await svc.adminToken();
  });
  after(() => svc?.dispose());

  test('a declared length over blob.maxBytes is 413 naming the setting before any byte is read; a chunked body passing it is 413 and leaves nothing behind', async () => {
    const declared = await upload(svc, '/svcapi/blob/too/big', [], { token: admin, contentLength: 2 * MiB, headOnly: true });
    assert.equal(declared.status, 413);
    assert.match(declared.body.error, /blob\.maxBytes/);
    const chunked = await upload(svc, '/svcapi/blob/too/big', generated(MiB + 128 * 1024, 1, 64 * 1024), { token: admin, contentLength: null });
    assert.equal(chunked.status, 413);
    assert.match(chunked.body.error, /blob\.maxBytes/);
    await waitFor(() => blobFiles(svc.dataDir).temporary.length === 0, 'the partial upload is removed');
    assert.deepEqual(blobFiles(svc.dataDir).contents, []);
    assert.equal((await svc.request('GET', '/svcapi/blob/too/big', { token: admin })).status, 404);
    const exact = await upload(svc, '/svcapi/blob/just/fits', generated(MiB, 2), { token: admin, contentLength: MiB });
    assert.equal(exact.status, 201, exact.text);
  });
});
