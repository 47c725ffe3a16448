// The operator console's serving (src/console/, WIRE.md part 3 "Operator console") over real
// HTTPS: the page and the files it names, with their types, the strict Content-Security-Policy,
// ETag and 304, br and gzip, the 404 of anything else (path tricks included), the first-load
// budget, the console in health and the OpenAPI document; and, without a service, the choice of
// content coding, the assets read from a folder, and a console that was not built (its routes
// answer 501 naming the subsystem and how to build it).

import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import zlib from 'node:zlib';
import { parse as parseYaml } from 'yaml';
import { ServiceClock } from '../../src/clock.js';
import { loadConfig } from '../../src/config.js';
import { chooseCoding, loadAssets, type Coding } from '../../src/console/assets.js';
import { consolePluginFor } from '../../src/console/plugin.js';
import { CONTENT_SECURITY_POLICY } from '../../src/console/routes.js';
import { PluginHost } from '../../src/host/host.js';
import { LeadershipState } from '../../src/host/leadership.js';
import type { Core, GrantedRequest } from '../../src/host/plugin.js';
import { createLogger } from '../../src/log.js';
import { ServiceError } from '../../shared/errors.js';
import { startService, type HttpResult, type TestService } from '../api/harness.js';

/** WIRE.md: the whole first load (the page, what it names, the icon), compressed. */
const FIRST_LOAD_BUDGET = 250_000;

const header = (res: HttpResult, name: string) => {
  const value = res.headers[name];
  return Array.isArray(value) ? value.join(', ') : value;
};

/** The directives of a Content-Security-Policy, by name. */
function directives(policy: string): Map<string, string[]> {
  return new Map(policy.split(';').map((d) => d.trim()).filter(Boolean).map((d) => {
    const [name = '', ...sources] = d.split(/\s+/);
    return [name.toLowerCase(), sources];
  }));
}

/** The same-origin paths the page names in `src=` and `href=` (scripts, stylesheets, the icon). */
function referencedPaths(html: string): string[] {
  return [...html.matchAll(/\s(?:src|href)\s*=\s*"([^"]*)"/gi)].map((m) => m[1]!);
}

const CONTENT_TYPES: Array<[RegExp, RegExp]> = [
  [/\.js$/, /^text\/javascript(;|$)/],
  [/\.css$/, /^text\/css(;|$)/],
  [/\.svg$/, /^image\/svg\+xml(;|$)/],
];

describe('console serving over HTTPS', () => {
  let svc: TestService;
  let page: HttpResult;
  /** What the page names (script, stylesheet, icon), as request paths. */
  let assets: string[];

  before(async () => {
    svc = await startService();
    page = await svc.get('/ui/');
    assets = referencedPaths(page.text);
  });
  after(() => svc?.dispose());

  test('GET /ui/ and /ui: the page, no-cache, an ETag, and the exact strict Content-Security-Policy', async () => {
    for (const p of ['/ui/', '/ui']) {
      const res = p === '/ui/' ? page : await svc.get(p);
      assert.equal(res.status, 200, p);
      assert.equal(header(res, 'content-type'), 'text/html; charset=utf-8', p);
      assert.equal(header(res, 'content-security-policy'), CONTENT_SECURITY_POLICY, p);
      assert.equal(header(res, 'x-content-type-options'), 'nosniff', p);
      assert.equal(header(res, 'cache-control'), 'no-cache', p);
      assert.match(header(res, 'etag') ?? '', /^"[^"]+"$/, `${p}: a strong ETag`);
      assert.match(res.text, /^<!doctype html>/i, p);
    }
    // The policy itself: nothing inline, nothing evaluated, nothing from elsewhere, no framing.
    const policy = CONTENT_SECURITY_POLICY;
    assert.doesNotMatch(policy, /unsafe-inline|unsafe-eval|unsafe-hashes|wasm-unsafe-eval|strict-dynamic/);
    assert.doesNotMatch(policy, /https?:|wss?:|\*|nonce-|sha\d+-/, 'no remote origin, wildcard, nonce or hash');
    const d = directives(policy);
    assert.deepEqual(d.get('default-src'), ["'none'"]);
    assert.deepEqual(d.get('script-src'), ["'self'"]);
    assert.deepEqual(d.get('style-src'), ["'self'"]);
    assert.deepEqual(d.get('connect-src'), ["'self'"], 'data calls, the stream and the WebSocket go to this origin only');
    assert.deepEqual(d.get('frame-ancestors'), ["'none'"]);
    assert.deepEqual(d.get('base-uri'), ["'none'"]);
    for (const [name, sources] of d) {
      // Images may also be data: and blob: URLs (a chart exported by the page); nothing else may.
      const allowed = name === 'img-src' ? ["'self'", "'none'", 'data:', 'blob:'] : ["'self'", "'none'"];
      for (const source of sources) assert.ok(allowed.includes(source), `${name} allows only this origin (found ${source})`);
    }
  });

  test('the page has nothing inline: every script has src, no style element, no on*= or style= attribute', () => {
    const html = page.text;
    const scripts = [...html.matchAll(/<script\b([^>]*)>([\s\S]*?)<\/script>/gi)];
    assert.ok(scripts.length >= 1, 'the page loads its module');
    for (const [tag, attrs = '', body = ''] of scripts) {
      assert.match(attrs, /\ssrc\s*=\s*"\/ui\/[^"]+"/, `${tag}: a script from /ui/`);
      assert.equal(body.trim(), '', `${tag}: no inline code`);
    }
    assert.doesNotMatch(html, /<style\b/i);
    assert.doesNotMatch(html, /<[^>]*\son[a-z]+\s*=/i, 'no event handler attribute');
    assert.doesNotMatch(html, /<[^>]*\sstyle\s*=/i, 'no style attribute');
    assert.doesNotMatch(html, /javascript:/i);
    // Everything it names is same-origin, under /ui/.
    assert.ok(assets.length >= 3, `the page names its script, stylesheet and icon (found ${assets.join(', ')})`);
    for (const ref of assets) assert.match(ref, /^\/ui\/[A-Za-z0-9._-]+$/, `${ref}: a file of the console`);
    assert.ok(assets.some((a) => a.endsWith('.js')) && assets.some((a) => a.endsWith('.css')) && assets.includes('/ui/favicon.svg'));
  });

  test('every file the page names is served with its type, the policy, and immutable caching when its name is hashed', async () => {
    for (const ref of assets) {
      const res = await svc.get(ref);
      assert.equal(res.status, 200, ref);
      const type = CONTENT_TYPES.find(([ext]) => ext.test(ref));
      assert.ok(type, `${ref}: a known kind of file`);
      assert.match(header(res, 'content-type') ?? '', type[1], ref);
      assert.equal(header(res, 'x-content-type-options'), 'nosniff', ref);
      assert.equal(header(res, 'content-security-policy'), CONTENT_SECURITY_POLICY, ref);
      assert.match(header(res, 'etag') ?? '', /^"[^"]+"$/, ref);
      const cache = header(res, 'cache-control') ?? '';
      if (/-[0-9a-f]{12}\.[a-z]+$/.test(ref)) {
        assert.match(cache, /\bimmutable\b/, `${ref}: a hashed name never changes`);
        assert.match(cache, /\bmax-age=(\d{7,})\b/, `${ref}: cached for long`);
      } else {
        assert.equal(cache, 'no-cache', `${ref}: an unhashed name is revalidated`);
      }
      assert.ok(res.bytes.length > 0, ref);
    }
    // The script and stylesheet are named by hash (so a new build is never mixed with an old one).
    for (const ext of ['js', 'css']) assert.ok(assets.some((a) => new RegExp(`-[0-9a-f]{12}\\.${ext}$`).test(a)), `a hashed .${ext}`);
  });

  test('If-None-Match: the ETag (strong, weak, in a list, or *) → 304 with no body; another → 200', async () => {
    for (const p of ['/ui/', ...assets]) {
      const first = await svc.get(p);
      const etag = header(first, 'etag')!;
      for (const match of [etag, `W/${etag}`, `"other", ${etag}`, '*']) {
        const res = await svc.request('GET', p, { headers: { 'if-none-match': match } });
        assert.equal(res.status, 304, `${p} If-None-Match: ${match}`);
        assert.equal(res.bytes.length, 0, `${p}: a 304 has no body`);
        assert.equal(header(res, 'etag'), etag, `${p}: the 304 names the ETag`);
        assert.equal(header(res, 'cache-control'), header(first, 'cache-control'));
      }
      const other = await svc.request('GET', p, { headers: { 'if-none-match': '"not-this-one"' } });
      assert.equal(other.status, 200, `${p}: another ETag`);
      assert.deepEqual(other.bytes, first.bytes);
    }
  });

  test('br and gzip: content-encoding, vary, the same bytes once decoded, an ETag of their own; refused codings are not used', async () => {
    const compressible = assets.filter((a) => /\.(js|css)$/.test(a));
    assert.ok(compressible.length >= 2);
    for (const p of compressible) {
      const identity = await svc.get(p);
      assert.equal(header(identity, 'content-encoding'), undefined, `${p}: no coding asked, none sent`);
      assert.equal(header(identity, 'vary'), 'Accept-Encoding', p);
      const etags = new Set([header(identity, 'etag')]);
      for (const [coding, decode] of [['br', zlib.brotliDecompressSync], ['gzip', zlib.gunzipSync]] as const) {
        const res = await svc.request('GET', p, { headers: { 'accept-encoding': coding } });
        assert.equal(res.status, 200);
        assert.equal(header(res, 'content-encoding'), coding, `${p} ${coding}`);
        assert.equal(header(res, 'vary'), 'Accept-Encoding', `${p} ${coding}`);
        assert.ok(res.bytes.length < identity.bytes.length, `${p} ${coding}: smaller (${res.bytes.length} < ${identity.bytes.length})`);
        assert.deepEqual(decode(res.bytes), identity.bytes, `${p} ${coding}: decodes to the same bytes`);
        etags.add(header(res, 'etag'));
        // The identity ETag does not validate the compressed form, nor the other way round.
        const cross = await svc.request('GET', p, { headers: { 'accept-encoding': coding, 'if-none-match': header(identity, 'etag')! } });
        assert.equal(cross.status, 200, `${p}: the identity ETag is not the ${coding} one`);
        const same = await svc.request('GET', p, { headers: { 'accept-encoding': coding, 'if-none-match': header(res, 'etag')! } });
        assert.equal(same.status, 304, `${p}: its own ${coding} ETag → 304`);
        assert.equal(header(same, 'content-encoding'), coding);
      }
      assert.equal(etags.size, 3, `${p}: identity, br and gzip each have their own ETag`);
      // What a browser sends picks br; a client that weighs gzip higher gets gzip.
      assert.equal(header(await svc.request('GET', p, { headers: { 'accept-encoding': 'gzip, deflate, br, zstd' } }), 'content-encoding'), 'br');
      assert.equal(header(await svc.request('GET', p, { headers: { 'accept-encoding': 'br;q=0.5, gzip' } }), 'content-encoding'), 'gzip');
      for (const refused of ['gzip;q=0, br;q=0', 'identity', 'br;q=0, gzip;q=0.000', '*;q=0', 'deflate', 'compress, zstd']) {
        const res = await svc.request('GET', p, { headers: { 'accept-encoding': refused } });
        assert.equal(res.status, 200);
        assert.equal(header(res, 'content-encoding'), undefined, `${p} Accept-Encoding: ${refused}`);
        assert.deepEqual(res.bytes, identity.bytes);
        assert.equal(header(res, 'etag'), header(identity, 'etag'));
      }
    }
  });

  test('an unknown file is a 404 JSON error; path tricks are 404 or 400, never 500 and never a file outside the console', async () => {
    const missing = await svc.get('/ui/no-such-file.js');
    assert.equal(missing.status, 404);
    assert.match(header(missing, 'content-type') ?? '', /^application\/json/);
    assert.equal(typeof missing.body?.error, 'string');

    const packageJson = fs.readFileSync(new URL('../../../package.json', import.meta.url), 'utf8');
    const tricks = [
      '/ui/../package.json', '/ui/%2e%2e/package.json', '/ui/..%2fpackage.json', '/ui/%2e%2e%2f%2e%2e%2fpackage.json',
      '/ui/..%5cpackage.json', '/ui/....//package.json', '/ui/index.html%00', '/ui/index.html%00.js', '/ui/%00',
      '/ui//etc/passwd', '/ui/%2fetc%2fpasswd', '/ui/./index.html/..', '/ui/%ZZ', '/ui/ui-assets/index.html',
      `/ui/${'a'.repeat(5000)}`, `/ui/${'%2e%2e%2f'.repeat(600)}package.json`,
    ];
    for (const p of tricks) {
      const res = await svc.get(p);
      assert.ok(res.status === 404 || res.status === 400, `${p.slice(0, 80)}: ${res.status}`);
      assert.ok(!res.text.includes('"name": "historian"') && !res.text.includes(packageJson.slice(0, 60)), `${p.slice(0, 80)}: not package.json`);
      assert.doesNotMatch(res.text, /root:x?:0:0/, `${p.slice(0, 80)}: not /etc/passwd`);
      assert.doesNotMatch(res.text, /<!doctype html>/i, `${p.slice(0, 80)}: not the page either`);
    }
    const root = await svc.get('/');
    assert.equal(root.status, 302);
    assert.equal(header(root, 'location'), '/ui/');
  });

  test('first load (the page, what it names, the icon) as br bytes is under 250 KB', async (t) => {
    const files = [...new Set(['/ui/', ...assets, '/ui/favicon.svg'])];
    let total = 0;
    const sizes: string[] = [];
    for (const p of files) {
      const res = await svc.request('GET', p, { headers: { 'accept-encoding': 'br' } });
      assert.equal(res.status, 200, p);
      total += res.bytes.length;
      sizes.push(`${p} ${res.bytes.length} B${header(res, 'content-encoding') === 'br' ? ' br' : ''}`);
    }
    t.diagnostic(`first load: ${total} bytes (br) of ${FIRST_LOAD_BUDGET}: ${sizes.join(', ')}`);
    assert.ok(total > 0);
    assert.ok(total < FIRST_LOAD_BUDGET, `first load is ${total} bytes compressed, over ${FIRST_LOAD_BUDGET}`);
  });

  test('health lists the console subsystem ok; the OpenAPI document lists /ui', async () => {
    const health = await svc.get('/svcapi/health');
    assert.equal(health.status, 200);
    assert.deepEqual(health.body.subsystems.console, { status: 'ok' });
    const openapi = await svc.get('/svcapi/openapi.yaml');
    assert.equal(openapi.status, 200);
    const doc = parseYaml(openapi.text) as { paths: Record<string, Record<string, unknown>> };
    assert.ok(doc.paths['/ui']?.get, '/ui is documented');
    assert.ok(Object.keys(doc.paths).some((p) => p.startsWith('/ui/') && doc.paths[p]!.get), 'the console files are documented');
  });
});

describe('content coding choice (chooseCoding)', () => {
  const both = new Map<Coding, unknown>([['identity', 0], ['br', 0], ['gzip', 0]]);
  const gzipOnly = new Map<Coding, unknown>([['identity', 0], ['gzip', 0]]);
  const none = new Map<Coding, unknown>([['identity', 0]]);
  const cases: Array<[string | undefined, ReadonlyMap<Coding, unknown>, Coding]> = [
    [undefined, both, 'identity'],
    ['', both, 'identity'],
    ['br', both, 'br'],
    ['gzip', both, 'gzip'],
    ['gzip, br', both, 'br'],
    ['gzip, deflate, br, zstd', both, 'br'],
    ['BR', both, 'br'],
    ['GZip', both, 'gzip'],
    ['  br  ,  gzip  ', both, 'br'],
    ['br ; q=0 , gzip', both, 'gzip'],
    ['br;Q=0, gzip', both, 'gzip'],
    ['br;q=0.5, gzip', both, 'gzip'],
    ['br;q=0.5, gzip;q=0.4', both, 'br'],
    ['gzip;q=1, br;q=0.999', both, 'gzip'],
    ['br;q=0.8, gzip;q=0.8', both, 'br'],
    ['gzip;q=0, br;q=0', both, 'identity'],
    ['br;q=0.0, gzip;q=0.000', both, 'identity'],
    ['br;q=0', both, 'identity'],
    ['identity', both, 'identity'],
    ['identity;q=1, br;q=0.5', both, 'identity'],
    ['deflate, compress', both, 'identity'],
    ['*', both, 'br'],
    ['*;q=0', both, 'identity'],
    ['*;q=0, gzip', both, 'gzip'],
    ['br;q=0, *', both, 'gzip'],
    ['gzip;q=0, *;q=0.5', both, 'br'],
    ['br', gzipOnly, 'identity'],
    ['br, gzip', gzipOnly, 'gzip'],
    ['*', gzipOnly, 'gzip'],
    ['br, gzip, *', none, 'identity'],
    [',,, ;q=1, br', both, 'br'],
    ['br;q=abc', both, 'br'],
  ];
  for (const [accept, available, expected] of cases) {
    test(`${JSON.stringify(accept)} with ${[...available.keys()].join('+')} → ${expected}`, () => {
      assert.equal(chooseCoding(accept, available), expected);
    });
  }
});

describe('console assets read from a folder (loadAssets)', () => {
  const dirs: string[] = [];
  const temp = () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'console-assets-'));
    dirs.push(dir);
    return dir;
  };
  after(() => { for (const dir of dirs) fs.rmSync(dir, { recursive: true, force: true }); });

  test('an empty folder (the console not built) is an error that says to run npm run build', () => {
    const dir = temp();
    assert.throws(() => loadAssets(dir), (err: Error) => err.message.includes('npm run build') && err.message.includes(dir));
  });

  test('types, caching by name, and compressed forms only where they pay', () => {
    const dir = temp();
    const big = `${'const value = 1;\n'.repeat(200)}`;
    fs.writeFileSync(path.join(dir, 'index.html'), '<!doctype html><title>t</title>');
    fs.writeFileSync(path.join(dir, 'console-0123456789ab.js'), big);
    fs.writeFileSync(path.join(dir, 'console-0123456789ab.css'), `${'a{color:red}\n'.repeat(100)}`);
    fs.writeFileSync(path.join(dir, 'favicon.svg'), '<svg xmlns="http://www.w3.org/2000/svg"/>');
    fs.writeFileSync(path.join(dir, 'notes.txt'), 'not served');
    const assets = loadAssets(dir);
    assert.deepEqual([...assets.keys()].sort(), ['console-0123456789ab.css', 'console-0123456789ab.js', 'favicon.svg', 'index.html']);
    assert.equal(assets.get('index.html')!.contentType, 'text/html; charset=utf-8');
    assert.equal(assets.get('index.html')!.cacheControl, 'no-cache');
    assert.equal(assets.get('favicon.svg')!.cacheControl, 'no-cache');
    assert.match(assets.get('console-0123456789ab.js')!.cacheControl, /immutable/);
    assert.deepEqual([...assets.get('index.html')!.encodings.keys()], ['identity'], 'a small file is not compressed');
    const js = assets.get('console-0123456789ab.js')!;
    assert.deepEqual([...js.encodings.keys()].sort(), ['br', 'gzip', 'identity']);
    assert.equal(zlib.brotliDecompressSync(js.encodings.get('br')!.body).toString(), big);
    assert.equal(new Set([...js.encodings.values()].map((e) => e.etag)).size, 3);
  });

  test('a service whose console is not built: the console fails to start and its routes answer 501 naming it and npm run build', async () => {
    const dir = temp();
    const log = createLogger('silent');
    const core = { log, clock: new ServiceClock(), meta: {} as Core['meta'], leadership: new LeadershipState(false) } satisfies Core;
    const host = new PluginHost([consolePluginFor(dir)], core, loadConfig({ HISTORIAN_DATA_DIR: dir }), {});
    await host.start(log);
    const health = host.health();
    assert.equal(health.subsystems.console?.status, 'failed');
    assert.match(health.subsystems.console?.reason ?? '', /npm run build/);
    for (const route of host.routes().filter((r) => r.path.startsWith('/ui'))) {
      const req = { params: { file: 'index.html' }, headers: {} } as unknown as GrantedRequest;
      assert.throws(() => route.handler(req), (err: unknown) =>
        err instanceof ServiceError && err.status === 501 && /\bconsole subsystem\b/.test(err.message) && /npm run build/.test(err.message), route.path);
    }
  });
});
