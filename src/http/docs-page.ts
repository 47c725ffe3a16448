// The HTML documentation page: one self-contained file that renders the
// OpenAPI document in the browser. Plants often run without internet access,
// so the page loads nothing from elsewhere (a meta CSP enforces that), and it
// builds the DOM with text nodes only, so route texts cannot inject markup: the
// little Markdown it renders (headings, tables, `code` spans) becomes elements
// the script creates itself, their text still text nodes.

import { createHash } from 'node:crypto';

// Kept inside String.raw: the browser code must reach the page byte for byte
// (no `${` or backticks in it, and backslashes are not interpreted here).
const STYLE = String.raw`
body { font: 15px/1.45 system-ui, sans-serif; margin: 0; color: #1d232a; background: #f6f7f9; }
header { background: #22303c; color: #fff; padding: 14px 24px; display: flex; flex-wrap: wrap; gap: 12px; align-items: center; }
header h1 { font-size: 20px; margin: 0; }
header .version { opacity: .7; }
header label { margin-left: auto; }
header input { width: 320px; }
main { max-width: 1100px; margin: 0 auto; padding: 16px 24px 48px; }
input, textarea, select, button { font: inherit; padding: 4px 6px; }
textarea { width: 100%; min-height: 110px; font-family: ui-monospace, monospace; }
#filter { width: 100%; margin: 12px 0; }
h2 { margin: 28px 0 8px; border-bottom: 1px solid #ccd; }
details.op { background: #fff; border: 1px solid #d5d9e0; border-radius: 4px; margin: 6px 0; }
details.op > summary { cursor: pointer; padding: 6px 10px; display: flex; gap: 10px; align-items: baseline; }
.op .body { padding: 4px 14px 14px; border-top: 1px solid #e3e6ea; }
.method { display: inline-block; min-width: 58px; text-align: center; font-weight: 700; font-size: 12px; color: #fff; border-radius: 3px; padding: 2px 0; }
.GET { background: #2f6fb5; } .POST { background: #2e8a4f; } .PUT { background: #b27b16; } .PATCH { background: #7a52b3; } .DELETE { background: #b8392f; }
.path { font-family: ui-monospace, monospace; font-weight: 600; }
code { font-family: ui-monospace, monospace; font-size: 92%; background: #eceff3; border-radius: 3px; padding: 0 3px; }
.muted { color: #5c6670; }
.text { white-space: pre-line; }
pre { background: #f0f2f5; padding: 8px; overflow: auto; max-height: 360px; margin: 4px 0; }
table { border-collapse: collapse; margin: 6px 0; }
td, th { border: 1px solid #d5d9e0; padding: 3px 8px; text-align: left; vertical-align: top; }
.try { background: #f8faf8; border: 1px dashed #b9c4b9; padding: 8px 10px; margin-top: 10px; }
.try label { display: block; margin: 4px 0; }
.try label span { display: inline-block; min-width: 150px; font-family: ui-monospace, monospace; }
`;

const SCRIPT = String.raw`
(function () {
  'use strict';
  var doc = JSON.parse(document.getElementById('openapi').textContent);
  var TOKEN_KEY = 'historian-docs-token';

  // Every node is created here; strings only ever become text nodes.
  function el(tag, attrs, children) {
    var node = document.createElement(tag);
    Object.keys(attrs || {}).forEach(function (k) { node.setAttribute(k, attrs[k]); });
    (children || []).forEach(function (c) {
      if (c != null) node.appendChild(typeof c === 'string' ? document.createTextNode(c) : c);
    });
    return node;
  }
  function pretty(value) { return el('pre', {}, [JSON.stringify(value, null, 2)]); }
  function resolve(schema) {
    var prefix = '#/components/schemas/';
    if (schema && typeof schema.$ref === 'string' && schema.$ref.indexOf(prefix) === 0) {
      return (doc.components.schemas || {})[schema.$ref.slice(prefix.length)] || schema;
    }
    return schema;
  }

  // Code spans: a run of backticks (written \x60 here) up to the next run as long; the text
  // between, one space trimmed off each side if both have one, becomes a code element.
  var CODE_SPAN = /(?<!\x60)(\x60+)(?!\x60)([\s\S]*?[^\x60])\1(?!\x60)/g;
  function inline(text) {
    var source = String(text == null ? '' : text), parts = [], last = 0, m;
    CODE_SPAN.lastIndex = 0;
    while ((m = CODE_SPAN.exec(source)) !== null) {
      var code = m[2];
      if (code.length > 2 && code.charAt(0) === ' ' && code.charAt(code.length - 1) === ' ' && code.trim()) code = code.slice(1, -1);
      if (m.index > last) parts.push(source.slice(last, m.index));
      parts.push(el('code', {}, [code]));
      last = CODE_SPAN.lastIndex;
    }
    if (last < source.length) parts.push(source.slice(last));
    return parts;
  }

  // Just enough markdown for the info text: headings, tables, paragraphs, code spans.
  function markdown(text) {
    var box = el('div'), table = null;
    String(text || '').split('\n').forEach(function (line) {
      if (line.charAt(0) === '|') {
        var cells = line.slice(1, line.lastIndexOf('|')).split(/(?<!\\)\|/).map(function (c) { return c.trim().replace(/\\\|/g, '|'); });
        if (cells.every(function (c) { return /^-+$/.test(c); })) return;
        if (!table) { table = el('table'); box.appendChild(table); }
        table.appendChild(el('tr', {}, cells.map(function (c) { return el(table.rows.length ? 'td' : 'th', {}, inline(c)); })));
        return;
      }
      table = null;
      if (/^#+ /.test(line)) box.appendChild(el('h3', {}, inline(line.replace(/^#+ /, ''))));
      else if (line.trim()) box.appendChild(el('p', {}, inline(line)));
    });
    return box;
  }

  var tokenInput = el('input', { type: 'password', placeholder: 'paste a JWT', autocomplete: 'off' });
  tokenInput.value = sessionStorage.getItem(TOKEN_KEY) || '';
  tokenInput.addEventListener('input', function () { sessionStorage.setItem(TOKEN_KEY, tokenInput.value.trim()); });
  var filterInput = el('input', { id: 'filter', type: 'search', placeholder: 'Filter by path, method, tag or summary' });

  document.body.appendChild(el('header', {}, [
    el('h1', {}, [doc.info.title]), el('span', { 'class': 'version' }, ['v' + doc.info.version]),
    el('label', {}, ['Bearer token ', tokenInput]),
  ]));
  var main = el('main', {}, [markdown(doc.info.description), filterInput]);
  document.body.appendChild(main);

  // Group operations by their first tag, in the order the document lists tags.
  var groups = {}, order = (doc.tags || []).map(function (t) { return t.name; });
  Object.keys(doc.paths).forEach(function (path) {
    Object.keys(doc.paths[path]).forEach(function (method) {
      var op = doc.paths[path][method], tag = (op.tags && op.tags[0]) || 'default';
      if (order.indexOf(tag) < 0) order.push(tag);
      (groups[tag] = groups[tag] || []).push({ path: path, method: method.toUpperCase(), op: op });
    });
  });

  var entries = [];
  order.forEach(function (tag) {
    if (!groups[tag]) return;
    var section = el('section', {}, [el('h2', {}, [tag])]);
    groups[tag].forEach(function (route) {
      var details = el('details', { 'class': 'op' }, [el('summary', {}, [
        el('span', { 'class': 'method ' + route.method }, [route.method]),
        el('span', { 'class': 'path' }, [route.path]), el('span', { 'class': 'muted' }, inline(route.op.summary)),
      ])]);
      // Panels are built on first open; large route tables stay quick to load.
      details.addEventListener('toggle', function () {
        if (details.open && !details.dataset.built) { details.dataset.built = '1'; details.appendChild(panel(route)); }
      });
      section.appendChild(details);
      entries.push({ node: details, section: section, text: [route.method, route.path, tag, route.op.summary].join(' ').toLowerCase() });
    });
    main.appendChild(section);
  });

  filterInput.addEventListener('input', function () {
    var needle = filterInput.value.trim().toLowerCase();
    entries.forEach(function (e) { e.node.hidden = needle !== '' && e.text.indexOf(needle) < 0; });
    entries.forEach(function (e) { e.section.hidden = !Array.prototype.some.call(e.section.querySelectorAll('details.op'), function (d) { return !d.hidden; }); });
  });

  function panel(route) {
    var op = route.op, box = el('div', { 'class': 'body' });
    if (op.description) box.appendChild(el('p', { 'class': 'text' }, inline(op.description)));
    var params = op.parameters || [];
    if (params.length) {
      box.appendChild(el('h4', {}, ['Parameters']));
      box.appendChild(el('table', {}, [el('tr', {}, [el('th', {}, ['Name']), el('th', {}, ['In']), el('th', {}, ['Required']), el('th', {}, ['Schema'])])].concat(
        params.map(function (p) {
          return el('tr', {}, [el('td', {}, [p.name]), el('td', {}, [p.in]), el('td', {}, [p.required ? 'yes' : 'no']),
            el('td', {}, [p.description ? el('div', {}, inline(p.description)) : null, pretty(p.schema)])]);
        }))));
    }
    var content = op.requestBody ? op.requestBody.content : {};
    if (op.requestBody) {
      box.appendChild(el('h4', {}, ['Request body']));
      if (op.requestBody.description) box.appendChild(el('p', { 'class': 'text' }, inline(op.requestBody.description)));
      Object.keys(content).forEach(function (type) { box.appendChild(el('div', { 'class': 'muted' }, [type])); box.appendChild(pretty(resolve(content[type].schema))); });
    }
    box.appendChild(el('h4', {}, ['Responses']));
    Object.keys(op.responses).forEach(function (status) {
      var res = op.responses[status];
      box.appendChild(el('div', {}, [el('strong', {}, [status + ' '])].concat(inline(res.description))));
      Object.keys(res.content || {}).forEach(function (type) {
        box.appendChild(el('div', { 'class': 'muted' }, [type]));
        if (res.content[type].schema) box.appendChild(pretty(resolve(res.content[type].schema)));
      });
    });
    box.appendChild(tryForm(route, params, Object.keys(content)));
    return box;
  }

  function tryForm(route, params, bodyTypes) {
    var form = el('form', { 'class': 'try' }, [el('strong', {}, ['Try it'])]);
    var inputs = params.map(function (p) {
      var isArray = p.schema && p.schema.type === 'array';
      var input = el('input', { placeholder: isArray ? 'comma separated' : (p.required ? 'required' : '') });
      form.appendChild(el('label', {}, [el('span', {}, [p.name + (p.in === 'query' ? ' (query)' : '')]), input]));
      return { param: p, input: input, isArray: isArray };
    });
    var typeSelect = null, bodyInput = null;
    if (bodyTypes.length) {
      typeSelect = el('select', {}, bodyTypes.map(function (t) { return el('option', {}, [t]); }));
      bodyInput = el('textarea', { placeholder: 'request body' });
      form.appendChild(el('label', {}, [el('span', {}, ['Content-Type']), typeSelect]));
      form.appendChild(bodyInput);
    }
    var output = el('div');
    form.appendChild(el('button', { type: 'submit' }, ['Send']));
    form.appendChild(output);
    form.addEventListener('submit', function (event) {
      event.preventDefault();
      var path = route.path, query = new URLSearchParams();
      inputs.forEach(function (i) {
        var value = i.input.value.trim();
        if (i.param.in === 'path') { path = path.split('{' + i.param.name + '}').join(encodeURIComponent(value)); return; }
        if (value === '') return;
        (i.isArray ? value.split(',') : [value]).forEach(function (v) { query.append(i.param.name, v.trim()); });
      });
      var url = path + (query.toString() ? '?' + query.toString() : '');
      var headers = {}, token = tokenInput.value.trim();
      if (token) headers.Authorization = 'Bearer ' + token;
      var init = { method: route.method, headers: headers };
      if (bodyInput && bodyInput.value !== '') { headers['Content-Type'] = typeSelect.value; init.body = bodyInput.value; }
      output.replaceChildren(el('p', { 'class': 'muted' }, [route.method + ' ' + url + ' ...']));
      fetch(url, init).then(function (res) {
        var type = res.headers.get('content-type') || '';
        var isText = /json|text|yaml|xml|javascript|pem/.test(type);
        return (isText ? res.text() : res.arrayBuffer()).then(function (body) {
          var shown = isText ? body : '(binary body, ' + body.byteLength + ' bytes)';
          if (/json/.test(type)) { try { shown = JSON.stringify(JSON.parse(body), null, 2); } catch (e) { /* show as sent */ } }
          var headerLines = [];
          res.headers.forEach(function (v, k) { headerLines.push(k + ': ' + v); });
          output.replaceChildren(el('p', {}, [el('strong', {}, [res.status + ' ' + res.statusText]), ' ' + url]),
            el('pre', {}, [headerLines.join('\n')]), el('pre', {}, [shown]));
        });
      }).catch(function (err) { output.replaceChildren(el('p', {}, ['Request failed: ' + err])); });
    });
    return form;
  }
})();
`;

// The CSP allows exactly this script by hash, so nothing else can run even if
// some text ever slipped through as markup.
const SCRIPT_HASH = createHash('sha256').update(SCRIPT).digest('base64');
const CONTENT_SECURITY_POLICY = [
  "default-src 'none'",
  `script-src 'sha256-${SCRIPT_HASH}'`,
  "style-src 'unsafe-inline'",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
].join('; ');

export function buildDocsPage(doc: object): string {
  // `<` escaped keeps `</script>` and `<!--` out of the data block; the JSON
  // parser reads \u003c back as `<`. U+2028/2029 are escaped for old parsers.
  const embedded = JSON.stringify(doc)
    .replace(/</g, '\\u003c')
    .replace(/\u2028/g, '\\u2028')
    .replace(/\u2029/g, '\\u2029');
  const info = (doc as { info?: { title?: unknown } }).info;
  const title = typeof info?.title === 'string' ? info.title : 'API documentation';
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta http-equiv="Content-Security-Policy" content="${CONTENT_SECURITY_POLICY}">
<title>${escapeHtml(title)}</title>
<style>${STYLE}</style>
</head>
<body>
<noscript>This page needs JavaScript to render the API description.</noscript>
<script type="application/json" id="openapi">${embedded}</script>
<script>${SCRIPT}</script>
</body>
</html>
`;
}

function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (ch) => `&#${ch.charCodeAt(0)};`);
}
