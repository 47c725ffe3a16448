// The console's static files (built by ui/build.ts into dist/ui-assets), read once at start and
// kept in memory with their compressed forms: the whole console is a few hundred kilobytes, and
// a file read, hashed and compressed per request would cost more than it saves. The build writes
// the compressed forms beside each file (`<name>.br`, `<name>.gz`), so a start only reads them;
// a file without them (a folder not made by the build) is compressed here.

import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import zlib from 'node:zlib';

export interface Asset {
  readonly contentType: string;
  /** `no-cache` for index.html and unhashed names; a year, immutable, for content-hashed names. */
  readonly cacheControl: string;
  /** Per content coding (`identity`, `br`, `gzip`): the bytes and their strong ETag. */
  readonly encodings: ReadonlyMap<Coding, { body: Buffer; etag: string }>;
}

export type Coding = 'identity' | 'br' | 'gzip';

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.json': 'application/json',
  '.map': 'application/json',
};

/** Names carrying their content hash (`console-0592fc25f812.js`) never change content. */
const HASHED = /-[0-9a-f]{12}\.[a-z]+$/;

/** Below this size compression does not pay for its header and the work of the client. */
const COMPRESS_FROM = 512;

/**
 * The br and gzip forms of a file, each only where it is smaller than the file: `br` and `gzip`
 * as the build wrote them when given, else made now. Small files and PNGs are not compressed.
 */
export function compressedForms(name: string, body: Buffer, br: Buffer | null = null, gzip: Buffer | null = null): { br: Buffer | null; gzip: Buffer | null } {
  if (body.length < COMPRESS_FROM || path.extname(name) === '.png') return { br: null, gzip: null };
  br ??= zlib.brotliCompressSync(body, { params: { [zlib.constants.BROTLI_PARAM_QUALITY]: 11, [zlib.constants.BROTLI_PARAM_SIZE_HINT]: body.length } });
  gzip ??= zlib.gzipSync(body, { level: 9 });
  return { br: br.length < body.length ? br : null, gzip: gzip.length < body.length ? gzip : null };
}

/** The files of `dir` by name; throws when the console was not built. */
export function loadAssets(dir: string): Map<string, Asset> {
  if (!fs.existsSync(path.join(dir, 'index.html'))) throw new Error(`the console is not built (${dir}/index.html is missing): run npm run build`);
  const assets = new Map<string, Asset>();
  for (const name of fs.readdirSync(dir)) {
    const type = TYPES[path.extname(name)];
    if (!type) continue;
    const body = fs.readFileSync(path.join(dir, name));
    const hash = createHash('sha256').update(body).digest('base64url').slice(0, 22);
    const encodings = new Map<Coding, { body: Buffer; etag: string }>([['identity', { body, etag: `"${hash}"` }]]);
    const built = (suffix: string) => (fs.existsSync(path.join(dir, `${name}${suffix}`)) ? fs.readFileSync(path.join(dir, `${name}${suffix}`)) : null);
    const { br, gzip } = compressedForms(name, body, built('.br'), built('.gz'));
    if (br) encodings.set('br', { body: br, etag: `"${hash}-br"` });
    if (gzip) encodings.set('gzip', { body: gzip, etag: `"${hash}-gz"` });
    const cacheControl = HASHED.test(name) ? 'public, max-age=31536000, immutable' : 'no-cache';
    assets.set(name, { contentType: type, cacheControl, encodings });
  }
  return assets;
}

/**
 * The coding to send for an `Accept-Encoding` header (RFC 9110 12.5.3): the available coding
 * the client weighs highest (`q`, 1 when absent; `*` stands for any coding not named; q=0
 * refuses), br before gzip when they weigh the same; identity when none is acceptable, or when
 * the client names identity with a higher weight.
 */
export function chooseCoding(accept: string | undefined, available: ReadonlyMap<Coding, unknown>): Coding {
  if (!accept) return 'identity';
  const weights = new Map<string, number>();
  for (const part of accept.split(',')) {
    const [name = '', ...params] = part.split(';');
    const coding = name.trim().toLowerCase();
    if (!coding) continue;
    let weight = 1;
    for (const param of params) {
      const q = /^\s*q\s*=\s*([0-9.]+)\s*$/i.exec(param);
      const value = q ? Number(q[1]) : NaN;
      if (Number.isFinite(value)) weight = Math.min(value, 1);
    }
    weights.set(coding, Math.max(weight, weights.get(coding) ?? 0));
  }
  const any = weights.get('*');
  let best: Coding = 'identity';
  let bestWeight = 0;
  for (const coding of ['br', 'gzip'] as const) {
    const weight = weights.get(coding) ?? any ?? 0;
    if (available.has(coding) && weight > bestWeight) [best, bestWeight] = [coding, weight];
  }
  const identity = weights.get('identity');
  return identity !== undefined && identity > bestWeight ? 'identity' : best;
}
