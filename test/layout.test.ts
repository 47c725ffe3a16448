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
