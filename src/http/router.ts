// Path matching over the route table. Paths are split into segments and held
// in a tree: a literal segment beats a `{param}` segment at the same depth, and
// matching backtracks, so `/svcapi/units/count` and `/svcapi/units/{id}` can
// live side by side. A path that exists with other methods (or with a method no route is
// declared with, such as OPTIONS) is reported with the methods of every template it matches, so
// the server can answer 405 with an Allow header instead of 404. A last segment `{name+}` takes the
// rest of the path (one segment or more, as sent, not decoded): a route that forwards whatever
// lies below a prefix (/svcapi/adk/{path+}). It is tried after literal and parameter children.

import type { HttpMethod } from './route.js';

interface Node<T> {
  literal: Map<string, Node<T>>;
  param: { name: string; node: Node<T> } | null;
  /** `{name+}`: the rest of the path; its handlers live on `node`. */
  tail: { name: string; node: Node<T> } | null;
  handlers: Map<HttpMethod, T>;
}

export type Match<T> =
  | { kind: 'found'; value: T; params: Record<string, string> }
  | { kind: 'method-not-allowed'; allow: HttpMethod[] }
  | { kind: 'not-found' };

const newNode = <T>(): Node<T> => ({ literal: new Map(), param: null, tail: null, handlers: new Map() });

/** The order of the methods of a 405's Allow. */
const METHOD_ORDER: readonly HttpMethod[] = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'];

export class Router<T> {
  private readonly root: Node<T> = newNode();

  add(method: HttpMethod, template: string, value: T): void {
    let node = this.root;
    const segments = splitPath(template);
    for (let i = 0; i < segments.length; i++) {
      const segment = segments[i];
      const tail = /^\{([A-Za-z_][A-Za-z0-9_]*)\+\}$/.exec(segment);
      const param = /^\{([A-Za-z_][A-Za-z0-9_]*)\}$/.exec(segment);
      if (tail) {
        if (i !== segments.length - 1) throw new Error(`route ${method} ${template}: {${tail[1]}+} must be the last segment`);
        if (node.tail && node.tail.name !== tail[1]) throw new Error(`route ${method} ${template}: {${tail[1]}+} clashes with {${node.tail.name}+}`);
        node.tail ??= { name: tail[1], node: newNode() };
        node = node.tail.node;
      } else if (param) {
        if (node.param && node.param.name !== param[1]) {
          throw new Error(`route ${method} ${template}: parameter {${param[1]}} clashes with {${node.param.name}}`);
        }
        node.param ??= { name: param[1], node: newNode() };
        node = node.param.node;
      } else {
        let next = node.literal.get(segment);
        if (!next) node.literal.set(segment, (next = newNode()));
        node = next;
      }
    }
    if (node.handlers.has(method)) throw new Error(`route ${method} ${template} is declared twice`);
    node.handlers.set(method, value);
  }

  match(method: HttpMethod | string, path: string): Match<T> {
    const segments = splitPath(path);
    const values: string[] = [];
    const names: string[] = [];
    const node = this.walk(this.root, segments, 0, names, values, method);
    if (!node) return { kind: 'not-found' };
    const value = (node as { handlers: Map<HttpMethod, T> }).handlers.get(method as HttpMethod);
    if (value === undefined) return { kind: 'method-not-allowed', allow: this.allowed(segments) };
    const params: Record<string, string> = {};
    for (let i = 0; i < names.length; i++) params[names[i]] = values[i];
    return { kind: 'found', value, params };
  }

  /** The methods of every template `segments` match (a 405 only, never on the way to a handler). */
  private allowed(segments: string[]): HttpMethod[] {
    const methods = new Set<HttpMethod>();
    this.collectMethods(this.root, segments, 0, methods);
    return METHOD_ORDER.filter((method) => methods.has(method));
  }

  private collectMethods(node: Node<T>, segments: string[], depth: number, into: Set<HttpMethod>): void {
    if (depth === segments.length) {
      for (const method of node.handlers.keys()) into.add(method);
      return;
    }
    const literal = node.literal.get(segments[depth]);
    if (literal) this.collectMethods(literal, segments, depth + 1, into);
    if (node.param && decodeSegment(segments[depth]) !== null) this.collectMethods(node.param.node, segments, depth + 1, into);
    if (node.tail) for (const method of node.tail.node.handlers.keys()) into.add(method);
  }

  /**
   * Depth-first: literal child, then parameter child. Prefers a node that has a
   * handler for `method`; otherwise returns the first node with any handler so
   * the caller can answer 405.
   */
  private walk(node: Node<T>, segments: string[], depth: number, names: string[], values: string[], method: string): Pick<Node<T>, 'handlers'> | null {
    if (depth === segments.length) return node.handlers.size > 0 ? node : null;
    let fallback: Pick<Node<T>, 'handlers'> | null = null;
    const literal = node.literal.get(segments[depth]);
    if (literal) {
      const mark = names.length;
      const found = this.walk(literal, segments, depth + 1, names, values, method);
      if (found?.handlers.has(method as HttpMethod)) return found;
      names.length = values.length = mark;
      fallback = found;
    }
    if (node.param) {
      const decoded = decodeSegment(segments[depth]);
      if (decoded !== null) {
        const mark = names.length;
        names.push(node.param.name);
        values.push(decoded);
        const found = this.walk(node.param.node, segments, depth + 1, names, values, method);
        if (found?.handlers.has(method as HttpMethod)) return found;
        names.length = values.length = mark;
        fallback ??= found;
      }
    }
    if (node.tail && !fallback?.handlers.has(method as HttpMethod)) {
      const tail = node.tail.node;
      if (tail.handlers.has(method as HttpMethod) || !fallback) {
        names.push(node.tail.name);
        values.push(segments.slice(depth).join('/'));
        return tail;
      }
    }
    return fallback;
  }
}

function splitPath(path: string): string[] {
  const trimmed = path.length > 1 && path.endsWith('/') ? path.slice(0, -1) : path;
  return trimmed.split('/').slice(1);
}

/** Path parameters are percent-decoded (collection ids carry `/` as %2F). */
function decodeSegment(segment: string): string | null {
  if (segment === '') return null;
  if (!segment.includes('%')) return segment;
  try {
    return decodeURIComponent(segment);
  } catch {
    return null;
  }
}
