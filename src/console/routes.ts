// GET /ui/ and its files (WIRE.md part 3 "Operator console"). Public: the files hold no data;
// every data call the console makes carries the signed-in user's token. Every answer carries a
// strict Content-Security-Policy: scripts and styles only from this origin, no inline script,
// no remote origin, no framing.

import { notFound } from '../../shared/errors.js';
import type { Route } from '../host/plugin.js';
import { S } from '../http/compile.js';
import { chooseCoding, type Asset } from './assets.js';

export const CONTENT_SECURITY_POLICY = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data: blob:",
  "connect-src 'self'",
  "font-src 'self'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join('; ');

const SECURITY_HEADERS = {
  'content-security-policy': CONTENT_SECURITY_POLICY,
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'x-frame-options': 'DENY',
};

export function consoleRoutes(assets: () => ReadonlyMap<string, Asset>): Route[] {
  const tag = 'Console';
  const serve = (name: string, headers: Readonly<Record<string, string>>) => {
    const asset = assets().get(name);
    if (!asset) throw notFound(`no console file ${JSON.stringify(name.length > 200 ? `${name.slice(0, 200)}…` : name)}`);
    const coding = chooseCoding(headers['accept-encoding'], asset.encodings);
    const { body, etag } = asset.encodings.get(coding)!;
    const common: Record<string, string> = { ...SECURITY_HEADERS, 'cache-control': asset.cacheControl, etag, vary: 'Accept-Encoding' };
    if (coding !== 'identity') common['content-encoding'] = coding;
    // If-None-Match compares weakly (RFC 9110 13.1.2): W/ is ignored; `*` matches any file.
    const match = headers['if-none-match'];
    if (match && match.split(',').some((tag) => tag.trim() === '*' || tag.trim().replace(/^W\//, '') === etag)) return { status: 304, contentType: asset.contentType, body: '', headers: common };
    return { contentType: asset.contentType, body, headers: common };
  };
  return [
    {
      method: 'GET', path: '/', auth: 'public', tag,
      summary: 'Sends a browser to the console (302 to /ui/)',
      responses: { 302: { description: 'redirect to /ui/' } },
      handler: () => ({ status: 302, contentType: 'text/plain; charset=utf-8', body: 'See /ui/\n', headers: { location: '/ui/' } }),
    },
    {
      method: 'GET', path: '/ui', auth: 'public', tag,
      summary: 'The operator console (a single page; works offline)',
      description: 'Trends, alarms, notifications and system state in the browser. The page and its files are public; every data call it makes carries the signed-in user\'s token.',
      responses: { 200: { description: 'HTML page', contentType: 'text/html; charset=utf-8' }, 304: { description: 'not modified (If-None-Match)' } },
      handler: (req) => serve('index.html', req.headers),
    },
    {
      method: 'GET', path: '/ui/{file+}', auth: 'public', tag,
      params: S.object({ file: S.string() }, ['file']),
      summary: 'A file of the console (script, stylesheet, icon)',
      description: 'Content-hashed names are cached for a year (immutable); index.html is revalidated by ETag. Compressed with br or gzip when the client accepts it.',
      responses: { 200: { description: 'the file' }, 304: { description: 'not modified (If-None-Match)' }, 404: { description: 'no such file' } },
      handler: (req) => serve(req.params.file!, req.headers),
    },
  ];
}
