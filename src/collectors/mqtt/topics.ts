// Topic filters and the `json` and `value` formats of MQTT collector items (WIRE.md part 3):
// which items a message's topic matches (a trie over topic levels, so 100,000 items cost the
// levels of one topic, not a scan), and the values a payload gives for one item.

import type { CollectedValue } from '../driver.js';

export type ItemFormat = 'sparkplug_b' | 'json' | 'value';

export interface MqttItem {
  topic: string;
  format: ItemFormat;
  tag?: string;
  /** Dot paths, split. */
  valuePath?: string[];
  timePath?: string[];
}

/** Why `filter` is not a valid MQTT topic filter, or null. */
export function topicFilterProblem(filter: string): string | null {
  if (filter.length === 0) return 'must not be empty';
  if (Buffer.byteLength(filter) > 65535) return 'must be at most 65535 bytes';
  if (filter.includes('\u0000')) return 'must not contain U+0000';
  const levels = filter.split('/');
  for (let i = 0; i < levels.length; i++) {
    const level = levels[i]!;
    if (level.includes('#') && (level !== '#' || i !== levels.length - 1)) return "may have '#' only as the whole last level";
    if (level.includes('+') && level !== '+') return "may have '+' only as a whole level";
  }
  return null;
}

interface TrieNode {
  children: Map<string, TrieNode>;
  /** Items whose filter ends here. */
  items: MqttItem[];
  /** Items whose filter ends with '#' after this node's levels. */
  rest: MqttItem[];
}

const newNode = (): TrieNode => ({ children: new Map(), items: [], rest: [] });

/** The items whose filters match a topic. */
export class TopicMatcher {
  private readonly root = newNode();

  constructor(items: readonly MqttItem[]) {
    for (const item of items) {
      let node = this.root;
      const levels = item.topic.split('/');
      for (let i = 0; i < levels.length; i++) {
        const level = levels[i]!;
        if (level === '#') {
          node.rest.push(item);
          node = null as unknown as TrieNode;
          break;
        }
        let next = node.children.get(level);
        if (!next) node.children.set(level, (next = newNode()));
        node = next;
      }
      if (node) node.items.push(item);
    }
  }

  match(topic: string): MqttItem[] {
    const out: MqttItem[] = [];
    const levels = topic.split('/');
    // Wildcards do not match topics starting with '$' at the first level (MQTT 4.7.2).
    const system = topic.startsWith('$');
    const walk = (node: TrieNode, i: number) => {
      if (!(system && i === 0)) out.push(...node.rest);
      if (i === levels.length) {
        out.push(...node.items);
        return;
      }
      const exact = node.children.get(levels[i]!);
      if (exact) walk(exact, i + 1);
      const plus = node.children.get('+');
      if (plus && !(system && i === 0)) walk(plus, i + 1);
    };
    walk(this.root, 0);
    return out;
  }
}

/** Why a payload gave no value (the reason counted as skipped). */
export class PayloadProblem {
  constructor(readonly reason: string) {}
}

const decoder = new TextDecoder('utf-8', { fatal: false });

/** A number from a JSON value: numbers, booleans (1/0) and numeric strings. */
function numberOf(v: unknown): number | null {
  if (typeof v === 'number') return Number.isFinite(v) ? v : null;
  if (typeof v === 'boolean') return v ? 1 : 0;
  if (typeof v === 'string') return plainNumber(v);
  return null;
}

/** A `value` payload: a number as text (`true`/`false` as 1/0), surrounding whitespace allowed. */
function plainNumber(text: string): number | null {
  const t = text.trim();
  if (t === 'true') return 1;
  if (t === 'false') return 0;
  if (t === '' || !/^[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$/.test(t)) return null;
  const n = Number(t);
  return Number.isFinite(n) ? n : null;
}

/** Follows a dot path through objects (and arrays, by index). */
function pick(root: unknown, path: readonly string[]): unknown {
  let v = root;
  for (const key of path) {
    if (v === null || typeof v !== 'object') return undefined;
    v = (v as Record<string, unknown>)[key];
  }
  return v;
}

/** Below 10^11 a time reads as epoch seconds (as the write routes suggest), else as ms. */
const SECONDS_BELOW = 1e11;

function timeOf(v: unknown): number | null {
  if (typeof v === 'number' && Number.isFinite(v) && v > 0) return Math.round(v < SECONDS_BELOW ? v * 1000 : v);
  if (typeof v === 'string') {
    const n = plainNumber(v);
    if (n !== null) return timeOf(n);
    const parsed = Date.parse(v);
    return Number.isNaN(parsed) ? null : parsed;
  }
  return null;
}

/** The value a `json` or `value` item takes from a message, or the reason it takes none. */
export function plainValue(item: MqttItem, topic: string, payload: Uint8Array, now: number): CollectedValue | PayloadProblem {
  const text = decoder.decode(payload);
  const tag = item.tag ?? topic;
  if (item.format === 'value') {
    const value = plainNumber(text);
    return value === null ? new PayloadProblem('payload is not a number') : { tag, ts: now, value };
  }
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch {
    return new PayloadProblem('payload is not JSON');
  }
  const raw = item.valuePath ? pick(doc, item.valuePath) : doc;
  if (raw === undefined) return new PayloadProblem('value_path not in the payload');
  const value = numberOf(raw);
  if (value === null) return new PayloadProblem('value is not a number');
  let ts = now;
  if (item.timePath) {
    const t = timeOf(pick(doc, item.timePath));
    if (t === null) return new PayloadProblem('time_path is not a time');
    ts = t;
  }
  return { tag, ts, value };
}
