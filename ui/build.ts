// Builds the operator console (ui/) into the static files the service serves at /ui/
// (src/console/): one minified ES module bundle of ui/src (uPlot included), one stylesheet, and
// index.html naming both by content hash, so the bundle and stylesheet can be cached for good
// while index.html is revalidated. Type checking is `tsc -p ui` (run before this by
// `npm run build`); esbuild only strips types and bundles, in tens of milliseconds.
//
// Output: dist/ui-assets/ (replaced whole: a stale bundle never lingers next to a new index),
// each file with its br and gzip forms where they are smaller (`<name>.br`, `<name>.gz`).

import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import { compressedForms } from '../src/console/assets.js';

const root = fileURLToPath(new URL('../../', import.meta.url));
const source = path.join(root, 'ui');
const out = path.join(root, 'dist', 'ui-assets');

/** Browsers the console supports: what Debian's Chromium and current Firefox and Safari run. */
const TARGET = ['chrome100', 'firefox100', 'safari15'];

async function bundle(entry: string, loader: 'ts' | 'css'): Promise<Buffer> {
  const result = await build({
    entryPoints: [path.join(source, entry)],
    bundle: true,
    minify: true,
    format: loader === 'ts' ? 'esm' : undefined,
    target: TARGET,
    write: false,
    legalComments: 'none',
    logLevel: 'warning',
    outdir: out,
  });
  const file = result.outputFiles.find((f) => f.path.endsWith(loader === 'ts' ? '.js' : '.css'));
  if (!file) throw new Error(`esbuild produced no output for ${entry}`);
  return Buffer.from(file.contents);
}

const hashed = (name: string, ext: string, body: Buffer) => `${name}-${createHash('sha256').update(body).digest('hex').slice(0, 12)}.${ext}`;

const [script, style] = await Promise.all([bundle('src/main.ts', 'ts'), bundle('console.css', 'css')]);
const files = new Map<string, Buffer | string>([
  [hashed('console', 'js', script), script],
  [hashed('console', 'css', style), style],
]);
const [scriptName, styleName] = [...files.keys()];
const template = fs.readFileSync(path.join(source, 'index.html'), 'utf8');
if (!template.includes('{{script}}') || !template.includes('{{style}}')) throw new Error('ui/index.html must name {{script}} and {{style}}');
files.set('index.html', template.replace('{{script}}', `/ui/${scriptName}`).replace('{{style}}', `/ui/${styleName}`));
files.set('favicon.svg', fs.readFileSync(path.join(source, 'favicon.svg')));

const staging = `${out}.tmp`;
fs.rmSync(staging, { recursive: true, force: true });
fs.mkdirSync(staging, { recursive: true });
for (const [name, body] of files) {
  fs.writeFileSync(path.join(staging, name), body);
  // The served compressed forms, made once here instead of at every start of the service.
  const { br, gzip } = compressedForms(name, Buffer.from(body));
  if (br) fs.writeFileSync(path.join(staging, `${name}.br`), br);
  if (gzip) fs.writeFileSync(path.join(staging, `${name}.gz`), gzip);
}
fs.rmSync(out, { recursive: true, force: true });
fs.renameSync(staging, out);
