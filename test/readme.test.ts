// The README is where operators look: every setting and every error code must be there.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { ERROR_CODES } from '../shared/errors.js';

const root = (p: string) => fileURLToPath(new URL(`../../${p}`, import.meta.url));
const readme = fs.readFileSync(root('README.md'), 'utf8');

function dottedKeys(obj: Record<string, unknown>, prefix = ''): string[] {
  return Object.entries(obj).flatMap(([k, v]) =>
    v && typeof v === 'object' && !Array.isArray(v) ? dottedKeys(v as Record<string, unknown>, `${prefix}${k}.`) : [`${prefix}${k}`],
  );
}

test('every setting of config/default.json is documented in the README', () => {
  const defaults = JSON.parse(fs.readFileSync(root('config/default.json'), 'utf8')) as Record<string, unknown>;
  for (const key of dottedKeys(defaults)) assert.ok(readme.includes(`\`${key}\``), `README documents ${key}`);
});

test('every error code is documented in the README', () => {
  for (const code of Object.keys(ERROR_CODES)) assert.ok(readme.includes(`\`${code}\``), `README documents ${code}`);
});

test('the README starts with the two commands', () => {
  assert.match(readme, /npm install && npm start/);
  assert.match(readme, /npm install && npm test/);
  const ci = fs.readFileSync(root('.ci/run'), 'utf8');
  assert.match(ci, /npm install && npm test/);
});
