import { test } from 'node:test';
import assert from 'node:assert/strict';
import { buildDocsPage } from '../../src/http/docs-page.js';
import { buildOpenApi } from '../../src/http/openapi.js';
import type { RouteDef } from '../../src/http/route.js';

const HOSTILE = '</script><script>alert(1)</script>';

const routes: RouteDef[] = [
  {
    method: 'GET', path: '/svcapi/tag/{id}', auth: 'jwt', tag: 'tags', summary: 'Read a tag',
    description: `Returns the tag. ${HOSTILE}`,
    params: { type: 'object', properties: { id: { type: 'string' } } },
    responses: { 200: { description: 'the tag', schema: { type: 'object' } } },
    handler: () => ({}),
  },
];

function embeddedDocument(page: string): unknown {
  const match = /<script type="application\/json" id="openapi">([\s\S]*?)<\/script>/.exec(page);
  assert.ok(match, 'data block present');
  return JSON.parse(match[1]!);
}

test('the page embeds the document', () => {
  const doc = buildOpenApi(routes);
  const page = buildDocsPage(doc);
  assert.deepEqual(embeddedDocument(page), JSON.parse(JSON.stringify(doc)));
  assert.match(page, /<title>Historian API<\/title>/);
});

test('the page loads nothing from elsewhere', () => {
  const page = buildDocsPage(buildOpenApi(routes));
  assert.doesNotMatch(page, /https?:\/\//);
  assert.doesNotMatch(page, /\b(src|href)\s*=/i);
  assert.doesNotMatch(page, /@import|url\(/i);
  assert.match(page, /default-src 'none'/);
});

test('route texts cannot close the data block', () => {
  const page = buildDocsPage(buildOpenApi(routes));
  assert.ok(!page.includes(HOSTILE));
  assert.ok(!page.includes('alert(1)</script>'));
  // Exactly the two script blocks the page itself writes.
  assert.equal(page.match(/<script\b/g)!.length, 2);
  assert.equal(page.match(/<\/script>/g)!.length, 2);
  // The hostile text still reaches the browser intact, as data.
  const doc = embeddedDocument(page) as { paths: Record<string, { get: { description: string } }> };
  assert.ok(doc.paths['/svcapi/tag/{id}']!.get.description.includes(HOSTILE));
});

test('the page never assigns markup from strings', () => {
  const page = buildDocsPage(buildOpenApi(routes));
  assert.doesNotMatch(page, /innerHTML|outerHTML|insertAdjacentHTML|document\.write/);
});
