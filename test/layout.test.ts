// The folder rules of the layout (README "Layout"), checked on the sources: the main thread
// imports nothing from workers/, shared/ imports neither side, and the codecs, the client and
// the ring stay pure (no Node built-in, no package, directly or through what they import).
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('../../', import.meta.url));

function sources(folder: string): string[] {
  return (fs.readdirSync(path.join(root, folder), { recursive: true }) as string[])
    .filter((f) => f.endsWith('.ts'))
    .map((f) => path.join(folder, f));
}

/** Module specifiers of static imports, re-exports and dynamic imports. */
function importsOf(file: string): string[] {
  const text = fs.readFileSync(path.join(root, file), 'utf8');
  const found: string[] = [];
  for (const m of text.matchAll(/(?:^|\n)\s*(?:import|export)\b[^'"]*?\bfrom\s+['"]([^'"]+)['"]/g)) found.push(m[1]!);
  for (const m of text.matchAll(/(?:^|\n)\s*import\s+['"]([^'"]+)['"]/g)) found.push(m[1]!);
  for (const m of text.matchAll(/\bimport\(\s*['"]([^'"]+)['"]\s*\)/g)) found.push(m[1]!);
  return found;
}

/** The repository-relative .ts file a relative specifier names. */
function resolve(from: string, specifier: string): string {
  return path.normalize(path.join(path.dirname(from), specifier)).replace(/\.js$/, '.ts');
}

test('the main thread (src/) imports nothing from workers/', () => {
  const offending = sources('src').flatMap((file) =>
    importsOf(file).filter((s) => s.startsWith('.') && resolve(file, s).startsWith(`workers${path.sep}`)).map((s) => `${file}: ${s}`),
  );
  assert.deepEqual(offending, []);
});

test('shared/ imports neither src/ nor workers/', () => {
  const offending = sources('shared').flatMap((file) =>
    importsOf(file)
      .filter((s) => s.startsWith('.') && /^(src|workers)[\\/]/.test(resolve(file, s)))
      .map((s) => `${file}: ${s}`),
  );
  assert.deepEqual(offending, []);
});

/**
 * Walks the relative imports from `roots`, and lists every import of a Node built-in or a
 * package, and every file reached outside the `allowed` folders.
 */
function impureImports(roots: readonly string[], allowed: readonly string[]): { seen: Set<string>; offending: string[] } {
  const seen = new Set<string>();
  const offending: string[] = [];
  const inAllowed = (file: string) => allowed.some((folder) => file.startsWith(`${folder}${path.sep}`));
  const folders = allowed.map((folder) => `${folder}/`);
  const outside = `outside ${folders.length > 1 ? `${folders.slice(0, -1).join(', ')} and ${folders.at(-1)}` : folders[0]}`;
  const visit = (file: string) => {
    if (seen.has(file)) return;
    seen.add(file);
    for (const specifier of importsOf(file)) {
      if (!specifier.startsWith('.')) {
        offending.push(`${file}: ${specifier}`);
        continue;
      }
      const target = resolve(file, specifier);
      if (!inAllowed(target)) offending.push(`${file}: ${specifier} (${outside})`);
      else visit(target);
    }
  };
  for (const file of roots) visit(file);
  return { seen, offending };
}

test('native-free-codecs/ and everything it imports use no Node built-in and no package', () => {
  const { seen, offending } = impureImports(sources('native-free-codecs'), ['native-free-codecs', 'shared']);
  assert.deepEqual(offending, []);
  assert.ok([...seen].some((f) => f.startsWith(`shared${path.sep}`)), 'the codecs use shared/scope.ts, so the walk reaches shared/');
});

test('client/ and everything it imports use no Node built-in and no package', () => {
  const roots = sources('client');
  assert.ok(roots.includes(path.join('client', 'historian-client.ts')), 'the walk starts at the client');
  const { seen, offending } = impureImports(roots, ['client', 'native-free-codecs', 'shared']);
  assert.deepEqual(offending, []);
  assert.ok([...seen].some((f) => f.startsWith(`native-free-codecs${path.sep}`)), 'the client decodes with the codecs, so the walk reaches native-free-codecs/');
});

test('shared/ring.ts, which both threads use, and everything it imports use no Node built-in and no package', () => {
  const ring = path.join('shared', 'ring.ts');
  assert.ok(fs.existsSync(path.join(root, ring)), 'shared/ring.ts exists');
  const { offending } = impureImports([ring], ['native-free-codecs', 'shared']);
  assert.deepEqual(offending, []);
});

// ---- the main thread's shape (README "Layout", "How to add a subsystem") ----------------------

/** Infrastructure folders of src/, lowest first; each may import only the ones before it. */
const INFRASTRUCTURE = ['http', 'meta', 'host'] as const;
/** The historian command (src/cli/): above main.ts, which it runs (serve) or starts (target.ts). */
const COMMAND = 'cli';
/** Files allowed to prepare SQL on the metadata store outside src/meta/, and why. */
/** Files over the size bound, because each is one engine that reads best whole. */
const LONG_ENGINES = [path.join('src', 'meta', 'filter.ts'), path.join('src', 'meta', 'linear-regexp.ts')];
const MAX_LINES = 600;
const SQL_OUTSIDE_META: Record<string, string> = {
  [path.join('src', 'cluster', 'change-log.ts')]: "the cluster's replication log: its own tables, and the triggers that record every replicated table",
  [path.join('src', 'data-dir.ts')]: "the data dir's lock: an exclusive transaction on a file of its own (service.lock), not the metadata store",
};

/** The first folder under src/ of a file (src/cli/ is the command's layer), or 'kernel' for src/*.ts (main.ts is 'main'). */
function layerOf(file: string): string {
  const parts = file.split(path.sep);
  if (parts.length === 2) return parts[1] === 'main.ts' ? 'main' : 'kernel';
  return parts[1]!;
}

const subsystems = (fs.readdirSync(path.join(root, 'src'), { withFileTypes: true }) as fs.Dirent[])
  .filter((d) => d.isDirectory() && !(INFRASTRUCTURE as readonly string[]).includes(d.name) && fs.existsSync(path.join(root, 'src', d.name, 'plugin.ts')))
  .map((d) => d.name)
  .sort();

/** Relative imports of src/ files that stay in src/, as [importer, imported file]. */
function srcImports(): Array<[string, string]> {
  return sources('src').flatMap((file) =>
    importsOf(file)
      .filter((s) => s.startsWith('.'))
      .map((s) => [file, resolve(file, s)] as [string, string])
      .filter(([, target]) => target.startsWith(`src${path.sep}`)),
  );
}

test('every folder of src/ is infrastructure, a subsystem with a plugin or the command line (cli/), and main.ts lists every plugin', () => {
  const folders = (fs.readdirSync(path.join(root, 'src'), { withFileTypes: true }) as fs.Dirent[]).filter((d) => d.isDirectory()).map((d) => d.name).sort();
  assert.deepEqual(folders.filter((f) => !subsystems.includes(f) && !(INFRASTRUCTURE as readonly string[]).includes(f) && f !== COMMAND), []);
  assert.ok(subsystems.length >= 14, `the subsystems: ${subsystems.join(', ')}`);
  const main = importsOf(path.join('src', 'main.ts')).map((s) => resolve(path.join('src', 'main.ts'), s));
  assert.deepEqual(subsystems.filter((s) => !main.includes(path.join('src', s, 'plugin.ts'))), [], 'a plugin main.ts does not list');
});

test('the import graph of src/ runs one way: kernel, http, meta, host, subsystems, main, the command', () => {
  const rank = (layer: string) => (layer === 'kernel' ? 0 : layer === 'main' ? 5 : layer === COMMAND ? 6 : (INFRASTRUCTURE as readonly string[]).includes(layer) ? 1 + INFRASTRUCTURE.indexOf(layer as never) : 4);
  const offending = srcImports()
    .filter(([from, to]) => {
      const a = layerOf(from);
      const b = layerOf(to);
      if (a === b) return false;
      return rank(b) > rank(a) || (rank(a) === rank(b) && rank(a) !== 4);
    })
    .map(([from, to]) => `${from} -> ${to}`);
  assert.deepEqual(offending, []);
});

test('a subsystem reaches another only through the interfaces that one declares (its api.ts); only main.ts imports plugins', () => {
  const offending = srcImports()
    .filter(([from, to]) => {
      const a = layerOf(from);
      const b = layerOf(to);
      if (!subsystems.includes(b) || a === b) return false;
      if (a === 'main') return path.basename(to) !== 'plugin.ts' && path.basename(to) !== 'api.ts';
      return path.basename(to) !== 'api.ts';
    })
    .map(([from, to]) => `${from} -> ${to}`);
  assert.deepEqual(offending, []);
});

test('no import cycle anywhere in the sources of both threads', () => {
  const files = ['src', 'shared', 'workers', 'native-free-codecs', 'client'].flatMap(sources);
  const graph = new Map(files.map((f) => [f, importsOf(f).filter((s) => s.startsWith('.')).map((s) => resolve(f, s))]));
  const state = new Map<string, 'open' | 'done'>();
  const cycles: string[] = [];
  const visit = (file: string, trail: string[]) => {
    const seen = state.get(file);
    if (seen === 'done') return;
    if (seen === 'open') {
      cycles.push([...trail.slice(trail.indexOf(file)), file].join(' -> '));
      return;
    }
    state.set(file, 'open');
    for (const next of graph.get(file) ?? []) if (graph.has(next)) visit(next, [...trail, file]);
    state.set(file, 'done');
  };
  for (const file of files) visit(file, []);
  assert.deepEqual(cycles, []);
});

test('only meta/ prepares SQL on the metadata store (and the documented exceptions)', () => {
  const offending = sources('src')
    .filter((file) => !file.startsWith(path.join('src', 'meta') + path.sep) && !(file in SQL_OUTSIDE_META))
    .filter((file) => /\.prepare\s*[<(]|\.pragma\s*\(/.test(fs.readFileSync(path.join(root, file), 'utf8')));
  assert.deepEqual(offending, []);
  // The connection itself reaches no one else: outside meta/, only the exceptions import the database module or the driver.
  const holders = sources('src').filter((file) => !file.startsWith(path.join('src', 'meta') + path.sep) && importsOf(file).some((s) => s === 'better-sqlite3' || (s.startsWith('.') && resolve(file, s) === path.join('src', 'meta', 'database.ts'))));
  assert.deepEqual(holders.sort(), Object.keys(SQL_OUTSIDE_META).sort());
});

test(`no main-thread file is longer than ${MAX_LINES} lines (one-engine files aside)`, () => {
  const long = sources('src')
    .filter((file) => !LONG_ENGINES.includes(file))
    .map((file) => [file, fs.readFileSync(path.join(root, file), 'utf8').split('\n').length] as const)
    .filter(([, lines]) => lines > MAX_LINES)
    .map(([file, lines]) => `${file}: ${lines} lines`);
  assert.deepEqual(long, []);
});
