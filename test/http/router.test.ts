import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Router } from '../../src/http/router.js';

test('literal segments win over parameters, with backtracking', () => {
  const r = new Router<string>();
  r.add('GET', '/svcapi/units/count', 'count');
  r.add('GET', '/svcapi/units/{id}', 'one');
  r.add('GET', '/svcapi/units/{id}/equipment', 'children');
  r.add('DELETE', '/svcapi/units/{id}', 'delete');
  assert.deepEqual(r.match('GET', '/svcapi/units/count'), { kind: 'found', value: 'count', params: {} });
  assert.deepEqual(r.match('GET', '/svcapi/units/7'), { kind: 'found', value: 'one', params: { id: '7' } });
  assert.deepEqual(r.match('GET', '/svcapi/units/count/equipment'), { kind: 'found', value: 'children', params: { id: 'count' } });
  assert.deepEqual(r.match('DELETE', '/svcapi/units/count'), { kind: 'found', value: 'delete', params: { id: 'count' } });
});

test('a known path with another method is reported with the allowed methods', () => {
  const r = new Router<string>();
  r.add('POST', '/svcapi/login', 'login');
  assert.deepEqual(r.match('GET', '/svcapi/login'), { kind: 'method-not-allowed', allow: ['POST'] });
  assert.deepEqual(r.match('GET', '/svcapi/logout'), { kind: 'not-found' });
  assert.deepEqual(r.match('POST', '/svcapi'), { kind: 'not-found' });
});

test('parameters are percent-decoded; a trailing slash is ignored; empty segments do not match', () => {
  const r = new Router<string>();
  r.add('GET', '/svcapi/collection/{id}', 'one');
  assert.deepEqual(r.match('GET', '/svcapi/collection/acme%2Fnorth%2Fb1%2Fmain'), {
    kind: 'found', value: 'one', params: { id: 'acme/north/b1/main' },
  });
  assert.equal(r.match('GET', '/svcapi/collection/x/').kind, 'found');
  assert.equal(r.match('GET', '/svcapi/collection//').kind, 'not-found');
  assert.equal(r.match('GET', '/svcapi/collection/%E0%A4%A').kind, 'not-found');
});

test('duplicate declarations and clashing parameter names are refused at start', () => {
  const r = new Router<string>();
  r.add('GET', '/a/{id}', 'x');
  assert.throws(() => r.add('GET', '/a/{id}', 'y'), /declared twice/);
  assert.throws(() => r.add('POST', '/a/{name}', 'z'), /clashes/);
});

test('a last segment {name+} takes the rest of the path as sent, after literal and parameter children', () => {
  const r = new Router<string>();
  r.add('GET', '/svcapi/adk/{path+}', 'forward');
  r.add('POST', '/svcapi/adk/{path+}', 'forward-post');
  r.add('GET', '/svcapi/adk/own', 'own');
  assert.deepEqual(r.match('GET', '/svcapi/adk/apps/my%20app/users/u%2F1'), { kind: 'found', value: 'forward', params: { path: 'apps/my%20app/users/u%2F1' } });
  assert.deepEqual(r.match('GET', '/svcapi/adk/x'), { kind: 'found', value: 'forward', params: { path: 'x' } });
  assert.deepEqual(r.match('GET', '/svcapi/adk/own'), { kind: 'found', value: 'own', params: {} });
  assert.deepEqual(r.match('POST', '/svcapi/adk/own'), { kind: 'found', value: 'forward-post', params: { path: 'own' } });
  assert.deepEqual(r.match('DELETE', '/svcapi/adk/x/y'), { kind: 'method-not-allowed', allow: ['GET', 'POST'] });
  assert.equal(r.match('GET', '/svcapi/adk').kind, 'not-found', 'the rest is one segment or more');
  assert.equal(r.match('GET', '/svcapi/adk/').kind, 'not-found');
  assert.throws(() => r.add('GET', '/a/{rest+}/b', 'x'), /must be the last segment/);
  assert.throws(() => r.add('PUT', '/svcapi/adk/{other+}', 'x'), /clashes/);
});

test('the allowed methods of a path are those of every template it matches, in a fixed order; a method no route has is told them too', () => {
  const r = new Router<string>();
  r.add('DELETE', '/svcapi/units/{id}', 'delete');
  r.add('GET', '/svcapi/units/count', 'count');
  r.add('POST', '/svcapi/units/{id}', 'update');
  r.add('GET', '/svcapi/tags', 'list');
  r.add('POST', '/svcapi/tags', 'create');
  assert.deepEqual(r.match('PUT', '/svcapi/units/count'), { kind: 'method-not-allowed', allow: ['GET', 'POST', 'DELETE'] });
  assert.deepEqual(r.match('PUT', '/svcapi/units/7'), { kind: 'method-not-allowed', allow: ['POST', 'DELETE'] });
  assert.deepEqual(r.match('OPTIONS', '/svcapi/tags'), { kind: 'method-not-allowed', allow: ['GET', 'POST'] });
  assert.deepEqual(r.match('PROPFIND', '/svcapi/units/count'), { kind: 'method-not-allowed', allow: ['GET', 'POST', 'DELETE'] });
  assert.deepEqual(r.match('OPTIONS', '/svcapi/nothing'), { kind: 'not-found' });
});
