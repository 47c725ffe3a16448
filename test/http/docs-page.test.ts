import { test } from 'node:test';
import assert from 'node:assert/strict';
import vm from 'node:vm';
import { ERROR_CODES } from '../../shared/errors.js';
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

// ---- the page's own script, run against a minimal DOM ------------------------------------------

/** Just the DOM the page's script uses: elements and text nodes, nothing that parses markup. */
class FakeText {
  constructor(readonly data: string) {}
  get textContent(): string {
    return this.data;
  }
}

class FakeElement {
  readonly children: Array<FakeElement | FakeText> = [];
  readonly attributes: Record<string, string> = {};
  readonly dataset: Record<string, string> = {};
  readonly listeners = new Map<string, () => void>();
  hidden = false;
  open = false;
  value = '';
  constructor(readonly tagName: string) {}
  setAttribute(name: string, value: string): void {
    this.attributes[name] = String(value);
  }
  appendChild<T extends FakeElement | FakeText>(child: T): T {
    assert.ok(child instanceof FakeElement || child instanceof FakeText, 'only nodes are appended');
    this.children.push(child);
    return child;
  }
  replaceChildren(...nodes: Array<FakeElement | FakeText>): void {
    this.children.splice(0, this.children.length, ...nodes);
  }
  addEventListener(type: string, listener: () => void): void {
    this.listeners.set(type, listener);
  }
  get rows(): FakeElement[] {
    return this.children.filter((c): c is FakeElement => c instanceof FakeElement && c.tagName === 'tr');
  }
  get textContent(): string {
    return this.children.map((c) => c.textContent).join('');
  }
  /** This element and every element below it, depth first. */
  *all(): Generator<FakeElement> {
    yield this;
    for (const c of this.children) if (c instanceof FakeElement) yield* c.all();
  }
  /** The text nodes below this element; with `outsideCode`, none inside a code element. */
  *texts(outsideCode = false): Generator<string> {
    for (const c of this.children) {
      if (c instanceof FakeText) yield c.data;
      else if (!(outsideCode && c.tagName === 'code')) yield* c.texts(outsideCode);
    }
  }
}

/** Runs the page's script on its own data block, opens every operation, and returns the body. */
function render(page: string): FakeElement {
  const data = /<script type="application\/json" id="openapi">([\s\S]*?)<\/script>/.exec(page)![1]!;
  const script = /<script>([\s\S]*?)<\/script>/.exec(page)![1]!;
  const body = new FakeElement('body');
  const document = {
    body,
    createElement: (tag: string) => new FakeElement(tag),
    createTextNode: (text: string) => new FakeText(text),
    getElementById: (id: string) => (id === 'openapi' ? { textContent: data } : null),
  };
  const sessionStorage = { getItem: () => null, setItem: () => {} };
  vm.runInNewContext(script, { document, sessionStorage, URLSearchParams, fetch: () => Promise.reject(new Error('no network')) });
  for (const details of [...body.all()].filter((e) => e.tagName === 'details')) {
    details.open = true;
    details.listeners.get('toggle')!();
  }
  return body;
}

test('code spans of the description, the error table and the route texts render as code elements, no backtick left', () => {
  const documented: RouteDef[] = [{
    ...routes[0]!,
    summary: 'Read a `tag`',
    description: 'Returns `{id, name}`.',
    params: { type: 'object', properties: { id: { type: 'string', description: 'the `id` of the tag' } } },
    responses: { 200: { description: '`{id, name}` of the tag', schema: { type: 'object' } } },
  }];
  const body = render(buildDocsPage(buildOpenApi(documented, { description: 'Send `{"a": 1}` or ``a`b``; a lone ` stays.' })));
  const main = [...body.all()].find((e) => e.tagName === 'main')!;
  const codes = [...main.all()].filter((e) => e.tagName === 'code').map((e) => e.textContent);
  assert.ok(codes.includes('{"a": 1}') && codes.includes('a`b'), codes.join(' | '));
  // The error table: every code is a code element of its own cell.
  const table = [...main.all()].find((e) => e.tagName === 'table')!;
  const [header, ...rows] = table.rows;
  assert.deepEqual(header!.children.map((c) => c.textContent), ['Code', 'Status', 'Meaning']);
  assert.equal(rows.length, Object.keys(ERROR_CODES).length);
  for (const row of rows) {
    const first = row.children[0] as FakeElement;
    assert.equal(first.children.length, 1);
    const code = first.children[0] as FakeElement;
    assert.equal(code.tagName, 'code');
    assert.ok(code.textContent in ERROR_CODES, code.textContent);
  }
  // The intro line about error shapes, too.
  assert.ok(codes.includes('{"error": "<message>"}'), codes.join(' | '));
  const outside = [...main.texts(true)];
  assert.deepEqual(outside.filter((t) => t.includes('`')), ['; a lone ` stays.'], 'outside code, only the unmatched backtick is left');
  // Route texts: the summary, description, parameter and response texts.
  for (const expected of ['tag', '{id, name}', 'id']) assert.ok(codes.includes(expected), `${expected} (${codes.join(' | ')})`);
  assert.equal(codes.filter((c) => c === '{id, name}').length, 2, 'in the description and the response');
});

test('markup inside code spans and route texts stays text: no element the script did not make itself', () => {
  const hostileRoutes: RouteDef[] = [{
    ...routes[0]!,
    summary: 'Read `<img src=x onerror=alert(1)>`',
    description: `Returns \`</code><script>alert(1)</script>\` and ${HOSTILE}`,
    responses: { 200: { description: '`<b>bold</b>` <i>x</i>' } },
  }];
  const body = render(buildDocsPage(buildOpenApi(hostileRoutes, { description: '# `<marquee>t</marquee>`\n| `<td>` | `a\\|b` |\n\n`<iframe>`' })));
  const tags = new Set([...body.all()].map((e) => e.tagName));
  for (const tag of ['script', 'img', 'b', 'i', 'iframe', 'marquee']) assert.ok(!tags.has(tag), `no <${tag}> element`);
  const codes = [...body.all()].filter((e) => e.tagName === 'code').map((e) => e.textContent);
  for (const expected of ['<img src=x onerror=alert(1)>', '</code><script>alert(1)</script>', '<b>bold</b>', '<marquee>t</marquee>', '<td>', 'a|b', '<iframe>']) {
    assert.ok(codes.includes(expected), `${expected} is the text of a code element (${codes.join(' | ')})`);
  }
  const texts = [...body.texts()];
  assert.ok(texts.some((t) => t.includes(HOSTILE)), 'text outside code spans is kept as text');
  assert.ok(texts.some((t) => t.includes('<i>x</i>')));
});
