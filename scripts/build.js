// The build of `npm start` and `npm pack` (prepack): what `npm run build` does, minus the work
// nothing asks for. `tsc -b` is incremental (a run with nothing changed only compares, well under
// a second); the console (type check of ui/ and its bundle) is rebuilt only when one of its
// inputs is newer than the built index.html. `npm run build` and `npm test` still build it all.
//
// Where there is nothing to build from (an installed package: no tsconfig.json, no TypeScript),
// the built dist/ is used as it is.

import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('../', import.meta.url));
const at = (p) => path.join(root, p);

/** What the console bundle is made of: its sources, the codecs and shared files it imports, the build. */
const UI_INPUTS = ['ui/src', 'ui/index.html', 'ui/console.css', 'ui/favicon.svg', 'ui/build.ts', 'ui/tsconfig.json', 'native-free-codecs', 'shared', 'src/console/assets.ts', 'package-lock.json'];
const UI_STAMP = 'dist/ui-assets/index.html';

if (!fs.existsSync(at('tsconfig.json'))) process.exit(0);
let tsc;
try {
  tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
} catch {
  process.stderr.write('historian: TypeScript is not installed, so the sources cannot be built; run `npm install`\n');
  process.exit(1);
}

run(tsc, '-b');
if (newest(UI_INPUTS) >= mtime(UI_STAMP)) {
  run(tsc, '-p', 'ui');
  run(at('dist/ui/build.js'));
}

function run(script, ...args) {
  const { status, signal } = spawnSync(process.execPath, [script, ...args], { cwd: root, stdio: 'inherit' });
  if (status !== 0) process.exit(status ?? 1);
  if (signal) process.exit(1);
}

/** Modification time in ms; -1 when missing, so a missing output is always older. */
function mtime(file) {
  try {
    return fs.statSync(at(file)).mtimeMs;
  } catch {
    return -1;
  }
}

function newest(inputs) {
  let latest = 0;
  for (const input of inputs) {
    const stat = fs.statSync(at(input), { throwIfNoEntry: false });
    if (!stat) continue;
    latest = Math.max(latest, stat.mtimeMs);
    if (!stat.isDirectory()) continue;
    for (const entry of fs.readdirSync(at(input), { recursive: true })) latest = Math.max(latest, mtime(path.join(input, entry)));
  }
  return latest;
}
