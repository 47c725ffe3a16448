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

test('the contents list every section heading, in order, with links that resolve', () => {
  const slug = (title: string) => title.trim().toLowerCase().replace(/[^\w\- ]/g, '').replace(/ /g, '-');
  const headings: string[] = [];
  let inCode = false;
  for (const line of readme.split('\n')) {
    if (line.startsWith('```')) inCode = !inCode;
    const m = !inCode && /^(##|###) (.+)$/.exec(line);
    if (m && m[2] !== 'Contents') headings.push(`${m[1] === '##' ? '' : '  '}- [${m[2]!.replaceAll('`', '')}](#${slug(m[2]!)})`);
  }
  const start = readme.indexOf('<!-- contents:');
  assert.ok(start > 0);
  const listed = readme.slice(readme.indexOf('\n', start) + 1, readme.indexOf('\n## ', start)).trim().split('\n');
  assert.deepEqual(listed, headings);
  // Every in-page link of the README names a heading.
  const anchors = new Set(headings.map((h) => /\(#([^)]+)\)/.exec(h)![1]));
  const broken = [...readme.matchAll(/\]\(#([^)]+)\)/g)].map((m) => m[1]!).filter((a) => !anchors.has(a));
  assert.deepEqual(broken, []);
});

test('the README links no file outside the repository', () => {
  const outside = [...readme.matchAll(/\]\((\.\.\/[^)]+)\)/g)].map((m) => m[1]);
  assert.deepEqual(outside, []);
});
