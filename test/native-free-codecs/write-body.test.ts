import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { pack, unpack } from 'msgpackr';
import {
  decodeBinaryBatch,
  decodeJsonWriteBody,
  decodeWriteObject,
  encodeBinaryBatch,
  WriteBodyError,
  type PointBatch,
  type WriteScope,
} from '../../native-free-codecs/write-body.js';
import { SCOPE_FIELDS } from '../../shared/scope.js';
import { prng } from '../support/prng.js';

const encoder = new TextEncoder();
const lenientDecoder = new TextDecoder();

// -- helpers ----------------------------------------------------------------------------------


type Random = () => number;
const int = (r: Random, n: number): number => Math.floor(r() * n);
const pick = <T>(r: Random, items: readonly T[]): T => items[int(r, items.length)];
const chance = (r: Random, p: number): boolean => r() < p;

interface Expected {
  scope: WriteScope;
  tagNames: string[];
  tagStart: number[];
  timestamps: number[];
  values: number[];
}

/** The batch a body should decode to, computed by walking JSON.parse's result (or any decoded object). */
function expectedFromParsed(body: Record<string, unknown>): Expected {
  const out: Expected = { scope: {}, tagNames: [], tagStart: [0], timestamps: [], values: [] };
  for (const f of SCOPE_FIELDS) if (typeof body[f] === 'string') out.scope[f] = body[f] as string;
  const num = (x: unknown): number => (typeof x === 'bigint' ? Number(x) : x instanceof Date ? x.getTime() : (x as number));
  if (body.tags !== undefined) {
    const tags = body.tags as Record<string, unknown[][]>;
    for (const name of Object.keys(tags)) {
      out.tagNames.push(name);
      for (const [t, v] of tags[name]) {
        out.timestamps.push(num(t) + 0);
        out.values.push(num(v));
      }
      out.tagStart.push(out.timestamps.length);
    }
  } else {
    const rows = (body.timestamps as unknown[]).map((t) => num(t) + 0);
    const columns = body.columns as Record<string, unknown[]>;
    for (const name of Object.keys(columns)) {
      out.tagNames.push(name);
      columns[name].forEach((v, r) => {
        if (v === null) return;
        out.timestamps.push(rows[r]);
        out.values.push(num(v));
      });
      out.tagStart.push(out.timestamps.length);
    }
  }
  return out;
}

/** Compares bit for bit (Object.is, so -0 and 0 differ) unless zeroSign is false. */
function assertBatch(got: PointBatch, want: Expected, context: string, zeroSign = true): void {
  assert.deepEqual(got.scope, want.scope, `${context}: scope`);
  assert.deepEqual(got.tagNames, want.tagNames, `${context}: tag names`);
  assert.deepEqual([...got.tagStart], want.tagStart, `${context}: tagStart`);
  assert.equal(got.pointCount, want.timestamps.length, `${context}: pointCount`);
  assert.ok(got.timestamps.length >= got.pointCount && got.values.length >= got.pointCount, `${context}: array lengths`);
  const same = (a: number, b: number): boolean => (zeroSign ? Object.is(a, b) : a === b || (a !== a && b !== b));
  for (let i = 0; i < got.pointCount; i++) {
    if (!same(got.timestamps[i], want.timestamps[i])) assert.fail(`${context}: timestamp ${i} is ${got.timestamps[i]}, want ${want.timestamps[i]}`);
    if (!same(got.values[i], want.values[i])) assert.fail(`${context}: value ${i} is ${got.values[i]}, want ${want.values[i]}`);
  }
}

function decodeText(text: string): PointBatch {
  return decodeJsonWriteBody(encoder.encode(text));
}

/** Asserts `run` throws a WriteBodyError of `kind` whose message contains every fragment. */
function assertWriteError(run: () => unknown, kind: 'malformed' | 'rejected', ...fragments: string[]): void {
  assert.throws(run, (err: unknown) => {
    assert.ok(err instanceof WriteBodyError, `expected WriteBodyError, got ${String(err)}`);
    assert.equal(err.kind, kind, `kind of "${err.message}"`);
    for (const f of fragments) assert.ok(err.message.includes(f), `"${err.message}" should contain ${JSON.stringify(f)}`);
    return true;
  });
}

// -- random JSON text -------------------------------------------------------------------------

function ws(r: Random): string {
  if (chance(r, 0.7)) return '';
  let s = '';
  for (let i = 1 + int(r, 3); i > 0; i--) s += pick(r, [' ', '\t', '\n', '\r', '  ']);
  return s;
}

/** A \\u escape, in either case of hex digits. */
function hex4(r: Random, code: number): string {
  const hex = code.toString(16).padStart(4, '0');
  return `\\u${chance(r, 0.5) ? hex : hex.toUpperCase()}`;
}

/** A JSON string literal for `s`, with random (valid) choices of escapes. */
function jsonString(r: Random, s: string): string {
  let out = '"';
  for (const ch of s) {
    const code = ch.codePointAt(0)!;
    const short: Record<string, string> = { '"': '\\"', '\\': '\\\\', '/': '\\/', '\b': '\\b', '\f': '\\f', '\n': '\\n', '\r': '\\r', '\t': '\\t' };
    if (code > 0xffff) {
      // An astral character: raw UTF-8, or a surrogate pair of \u escapes.
      out += chance(r, 0.5) ? ch : hex4(r, ch.charCodeAt(0)) + hex4(r, ch.charCodeAt(1));
    } else if (ch === '"' || ch === '\\' || code < 0x20) {
      out += short[ch] !== undefined && chance(r, 0.6) ? short[ch] : hex4(r, code);
    } else if (chance(r, 0.1)) {
      out += ch === '/' && chance(r, 0.5) ? '\\/' : hex4(r, code);
    } else out += ch;
  }
  return out + '"';
}

const NAME_START = ['T', 'P', 'F', 'L', 'x', 'é', '温', '😀', '_', '"', '\\', '/', '-'];
const NAME_CHARS = [...'ABCXYZabcxyz0123456789-_.:/ #', '"', '\\', 'é', 'ß', '温度', '😀', '\u2028', '€'];

/** A valid tag name that is not an array index (so JSON.parse keeps its position among the keys). */
function tagName(r: Random): string {
  if (chance(r, 0.02)) return '__proto__';
  let s = pick(r, NAME_START);
  for (let i = int(r, 16); i > 0; i--) s += pick(r, NAME_CHARS);
  return s;
}

/** Any string (scope values may hold control characters). */
function anyString(r: Random): string {
  let s = '';
  for (let i = int(r, 12); i > 0; i--) s += pick(r, [...NAME_CHARS, '\n', '\t', '\u0001', '\u001f', '\b', '\f', '\r', '\u0000', ']', '}', '{', '[', ',']);
  return s;
}

const SPECIAL_NUMBERS = [
  '0', '-0', '-0.0', '0.0', '0e5', '-0E-5', '1e22', '1e23', '-1e22', '5e-324', '4.9e-324', '2.4703282292062328e-324',
  '1.7976931348623157e308', '-1.7976931348623157e308', '2.2250738585072014e-308', '0.30000000000000004',
  '0.1', '0.2', '0.3', '9007199254740991', '9007199254740992', '9007199254740993', '123456789012345678901234567890',
  '3.14159265358979323846264338327950288', '1e-400', '-1e-400', '100e-2', '-1E+2', '1E2', '1e+0', '123.456e-2',
  '0.000001', '1e-7', '89255.0e-22', '8.9255e-18', '1448997445238699', '17976931348623157e292', '0.0000000000000000000001234',
  '7.2057594037927933e16', '1.00000000000000011102230246251565404236316680908203125',
  '1.00000000000000011102230246251565404236316680908203124', '1.00000000000000011102230246251565404236316680908203126',
];

function digits(r: Random, n: number, leadingZero = false): string {
  let s = leadingZero ? '' : String(1 + int(r, 9));
  while (s.length < n) s += String(int(r, 10));
  return s;
}

/** The text of a finite JSON number, in every form the grammar allows. */
function numberText(r: Random): string {
  const sign = chance(r, 0.3) ? '-' : '';
  switch (int(r, 7)) {
    case 0:
      return pick(r, SPECIAL_NUMBERS);
    case 1: // integers, up to past 2^53
      return sign + (chance(r, 0.1) ? '0' : digits(r, 1 + int(r, 20)));
    case 2: {
      // decimals with 1..17 significant digits
      const total = 1 + int(r, 17);
      const intDigits = int(r, total);
      const whole = intDigits === 0 ? '0' : digits(r, intDigits);
      const frac = (chance(r, 0.3) ? '0'.repeat(int(r, 6)) : '') + digits(r, Math.max(1, total - intDigits), true);
      return `${sign}${whole}.${frac}`;
    }
    case 3: {
      // exponents
      const mantissa = chance(r, 0.5) ? digits(r, 1 + int(r, 17)) : `${digits(r, 1)}.${digits(r, 1 + int(r, 16), true)}`;
      const e = pick(r, ['e', 'E']) + pick(r, ['', '+', '-']) + String(int(r, 330));
      const text = sign + mantissa + e;
      return Number.isFinite(Number(text)) ? text : sign + mantissa;
    }
    case 4: {
      // any double, as JavaScript prints it
      const bits = new Uint32Array([(r() * 2 ** 32) >>> 0, (r() * 2 ** 32) >>> 0]);
      const x = new Float64Array(bits.buffer)[0];
      return Number.isFinite(x) ? String(x) : '1';
    }
    case 5: // industrial: 2 decimals, counters, states
      return pick(r, [(r() * 200 - 50).toFixed(2), String(int(r, 1e7)), pick(r, ['0', '1'])]);
    default:
      return String(0.1 * int(r, 100) + 0.2 * int(r, 10)); // 0.1 + 0.2 style, 17 digits
  }
}

/** The text of a valid timestamp (an integer 0..2^53-1), not always written as plain digits. */
function timestampText(r: Random): string {
  const t = pick(r, [0, 1, 999, 1_700_000_000_000 + int(r, 1e9) * 1000, int(r, 2 ** 30), 9007199254740991]);
  switch (int(r, 6)) {
    case 0:
      return `${t}.0`;
    case 1:
      return t === 0 ? '-0' : t.toExponential().replace('+', pick(r, ['+', '']));
    case 2:
      return t === 0 ? '0e-1' : `${t}0e-1`;
    default:
      return String(t);
  }
}

/** Any JSON value, to be skipped as the value of an unknown key. */
function anyJson(r: Random, depth: number): string {
  switch (depth > 2 ? int(r, 4) : int(r, 6)) {
    case 0:
      return jsonString(r, anyString(r) + pick(r, ['"]}', '\\', '{"tags":1}']));
    case 1:
      return numberText(r);
    case 2:
      return pick(r, ['true', 'false', 'null']);
    case 3:
      return ws(r) + '[' + ws(r) + ']';
    case 4: {
      const items = Array.from({ length: int(r, 4) }, () => ws(r) + anyJson(r, depth + 1) + ws(r));
      return `[${items.join(',')}${items.length === 0 ? ws(r) : ''}]`;
    }
    default: {
      const items = Array.from({ length: int(r, 4) }, () => `${ws(r)}${jsonString(r, anyString(r))}${ws(r)}:${ws(r)}${anyJson(r, depth + 1)}${ws(r)}`);
      return `{${items.join(',')}${items.length === 0 ? ws(r) : ''}}`;
    }
  }
}

function object(r: Random, entries: Array<[string, string]>): string {
  if (entries.length === 0) return `{${ws(r)}}`;
  return `{${entries.map(([k, v]) => `${ws(r)}${jsonString(r, k)}${ws(r)}:${ws(r)}${v}${ws(r)}`).join(',')}}`;
}

function array(r: Random, items: string[]): string {
  if (items.length === 0) return `[${ws(r)}]`;
  return `[${items.map((item) => ws(r) + item + ws(r)).join(',')}]`;
}

function distinctNames(r: Random, n: number): string[] {
  const names = new Set<string>();
  while (names.size < n) names.add(tagName(r));
  return [...names];
}

/** A random valid write body of either JSON shape, with scope, extra keys, whitespace and escapes. */
function randomBody(r: Random): string {
  const entries: Array<[string, string]> = [];
  for (const f of SCOPE_FIELDS) if (chance(r, 0.5)) entries.push([f, jsonString(r, anyString(r))]);
  for (let i = int(r, 3); i > 0; i--) entries.push([pick(r, ['meta', 'x', 'tag', 'Tags', 'columns_', '']) + anyString(r).slice(0, 2), anyJson(r, 0)]);
  const names = distinctNames(r, int(r, 6));
  if (chance(r, 0.5)) {
    const tags = names.map((name): [string, string] => [
      name,
      array(r, Array.from({ length: int(r, 12) }, () => array(r, [timestampText(r), numberText(r)]))),
    ]);
    entries.push(['tags', object(r, tags)]);
  } else {
    const rows = int(r, 12);
    entries.push(['timestamps', array(r, Array.from({ length: rows }, () => timestampText(r)))]);
    const nullShare = r();
    const columns = names.map((name): [string, string] => [
      name,
      array(r, Array.from({ length: rows }, () => (chance(r, nullShare) ? 'null' : numberText(r)))),
    ]);
    entries.push(['columns', object(r, columns)]);
  }
  for (let i = entries.length - 1; i > 0; i--) {
    const j = int(r, i + 1);
    [entries[i], entries[j]] = [entries[j], entries[i]];
  }
  return ws(r) + object(r, entries) + ws(r);
}

// -- JSON: property tests ---------------------------------------------------------------------

describe('decodeJsonWriteBody: random bodies agree with JSON.parse', () => {
  test('3000 random bodies of both shapes', () => {
    const r = prng(20240601);
    for (let i = 0; i < 3000; i++) {
      const text = randomBody(r);
      const want = expectedFromParsed(JSON.parse(text));
      let got: PointBatch;
      try {
        got = decodeText(text);
      } catch (err) {
        assert.fail(`body ${i} ${text}: ${String(err)}`);
      }
      assertBatch(got, want, `body ${i} ${text.slice(0, 300)}`);
    }
  });

  test('every number form decodes bit-identically, as a value and inside a columnar body', () => {
    const r = prng(7);
    const texts = [...SPECIAL_NUMBERS];
    for (let i = 0; i < 20000; i++) texts.push(numberText(r));
    const tagged = `{"tags":{"n":[${texts.map((t, i) => `[${i},${t}]`).join(',')}]}}`;
    const batch = decodeText(tagged);
    assert.equal(batch.pointCount, texts.length);
    texts.forEach((t, i) => {
      if (!Object.is(batch.values[i], JSON.parse(t))) assert.fail(`${t} decoded to ${batch.values[i]}, JSON.parse gives ${JSON.parse(t)}`);
    });
    const columnar = decodeText(`{"columns":{"n":[${texts.join(',')}]},"timestamps":[${texts.map((_, i) => i).join(',')}]}`);
    assertBatch(columnar, expectedFromParsed(JSON.parse(tagged)), 'columnar numbers');
  });

  test('timestamps in any integer form, -0 stored as 0', () => {
    const batch = decodeText('{"tags":{"a":[[1.7e12,1],[17e11,2],[1700000000000.000,3],[-0,4],[9007199254740991,5],[0.5e1,6]]}}');
    assert.deepEqual([...batch.timestamps], [1.7e12, 1.7e12, 1.7e12, 0, 9007199254740991, 5]);
    assert.ok(Object.is(batch.timestamps[3], 0));
  });

  test('random mutations: never a foreign exception, and malformed whenever JSON.parse fails', () => {
    const r = prng(99);
    for (let i = 0; i < 3000; i++) {
      const bytes = encoder.encode(randomBody(r));
      let mutated: Uint8Array;
      const at = int(r, bytes.length);
      switch (int(r, 4)) {
        case 0:
          mutated = bytes.subarray(0, at);
          break;
        case 1:
          mutated = bytes.slice();
          mutated[at] = int(r, 256);
          break;
        case 2:
          mutated = new Uint8Array([...bytes.subarray(0, at), pick(r, [0x22, 0x5c, 0x2c, 0x5b, 0x5d, 0x7b, 0x7d, 0x3a, 0x30, 0x2d, 0x2e, 0x65, 0x6e]), ...bytes.subarray(at)]);
          break;
        default:
          mutated = new Uint8Array([...bytes.subarray(0, at), ...bytes.subarray(at + 1 + int(r, 3))]);
      }
      let parsedOk = true;
      try {
        JSON.parse(lenientDecoder.decode(mutated));
      } catch {
        parsedOk = false;
      }
      try {
        decodeJsonWriteBody(mutated);
        assert.ok(parsedOk, `decoded a body JSON.parse refuses: ${lenientDecoder.decode(mutated)}`);
      } catch (err) {
        if (!(err instanceof WriteBodyError)) assert.fail(`foreign exception ${String(err)} for ${lenientDecoder.decode(mutated)}`);
        if (!parsedOk) assert.equal(err.kind, 'malformed', `${err.message} for ${lenientDecoder.decode(mutated)}`);
      }
    }
  });
});

describe('decodeJsonWriteBody: shapes', () => {
  test('a repeated tag key merges its points, in order of appearance', () => {
    const batch = decodeText('{"tags":{"a":[[1,1]],"b":[[2,2]],"a":[[3,3],[4,4]],"c":[],"b":[[5,5]]}}');
    assertBatch(batch, { scope: {}, tagNames: ['a', 'b', 'c'], tagStart: [0, 3, 5, 5], timestamps: [1, 3, 4, 2, 5], values: [1, 3, 4, 2, 5] }, 'merge');
    const columnar = decodeText('{"timestamps":[1,2],"columns":{"a":[1,null],"b":[2,2],"a":[null,3]}}');
    assertBatch(columnar, { scope: {}, tagNames: ['a', 'b'], tagStart: [0, 2, 4], timestamps: [1, 2, 1, 2], values: [1, 3, 2, 2] }, 'merge columnar');
  });

  test('tag names that look like integers keep the order of the body', () => {
    assert.deepEqual(decodeText('{"tags":{"20":[[1,1]],"3":[[1,1]],"b":[],"1":[]}}').tagNames, ['20', '3', 'b', '1']);
  });

  test('columns may come before timestamps; scope after the data; unknown keys skipped', () => {
    const text = '{"columns":{"x":[null,1.5]},"note":{"a":["]}\\"",{"b":[[]]}]},"timestamps":[10,20],"site":"s1","grid":"g\\u00e9"}';
    assertBatch(decodeText(text), { scope: { site: 's1', grid: 'gé' }, tagNames: ['x'], tagStart: [0, 1], timestamps: [20], values: [1.5] }, 'order');
  });

  test('empty tag sets decode to zero points', () => {
    assert.equal(decodeText('{"tags":{}}').pointCount, 0);
    assert.equal(decodeText('{"timestamps":[],"columns":{"a":[]}}').pointCount, 0);
    assert.deepEqual([...decodeText(' \n{ "tags" : { "a" : [ ] } } \r\n').tagStart], [0, 0]);
  });

  test('escaped key names are recognised; a leading byte order mark is skipped', () => {
    assert.equal(decodeText('{"t\\u0061gs":{"a":[[1,2]]},"\\u0073ite":"s"}').scope.site, 's');
    const withBom = new Uint8Array([0xef, 0xbb, 0xbf, ...encoder.encode('{"tags":{"a":[[1,2]]}}')]);
    assert.equal(decodeJsonWriteBody(withBom).pointCount, 1);
  });

  test('the output grows past the first estimate', () => {
    const points = Array.from({ length: 5000 }, (_, i) => `[${i},${i / 4}]`).join(',');
    const batch = decodeText(`{"tags":{"a":[${points}]}}`);
    assert.equal(batch.pointCount, 5000);
    assert.equal(batch.values[4999], 4999 / 4);
  });

  test('a Node Buffer (a Uint8Array view into a pool) decodes like any Uint8Array', () => {
    assert.equal(decodeJsonWriteBody(Buffer.from('{"tags":{"é":[[1,2]]}}')).tagNames[0], 'é');
  });
});

describe('decodeJsonWriteBody: malformed (400)', () => {
  const cases: Array<[string, string, ...string[]]> = [
    ['empty body', ''],
    ['not an object', '[]'],
    ['null', 'null'],
    ['truncated', '{"tags":{"a":[[1,2]]}'],
    ['truncated in a number', '{"tags":{"a":[[1,2'],
    ['truncated in a string', '{"tags":{"a'],
    ['trailing garbage', '{"tags":{}} x', "found 'x'"],
    ['two objects', '{"tags":{}}{}'],
    ['tags not an object', '{"tags":[]}', '"tags" must be an object'],
    ['tags null', '{"tags":null}', '"tags" must be an object'],
    ['points not an array', '{"tags":{"TI-101":{}}}', 'tag "TI-101" must be an array'],
    ['a point not an array', '{"tags":{"TI-101":[[1,2],3]}}', 'tag "TI-101" point 1'],
    ['a point of 3', '{"tags":{"TI-101":[[1,2,3]]}}', 'tag "TI-101" point 0', '[timestamp, value]'],
    ['a point of 1', '{"tags":{"TI-101":[[1]]}}', 'tag "TI-101" point 0'],
    ['an empty point', '{"tags":{"TI-101":[[1,2],[]]}}', 'tag "TI-101" point 1'],
    ['column length mismatch', '{"timestamps":[1,2,3],"columns":{"ok":[1,2,3],"FI-7":[1,2]}}', 'column "FI-7" has 2 values but "timestamps" has 3'],
    ['column not an array', '{"timestamps":[1],"columns":{"FI-7":1}}', 'column "FI-7"'],
    ['columns not an object', '{"timestamps":[1],"columns":[]}', '"columns" must be an object'],
    ['timestamps not an array', '{"timestamps":{},"columns":{}}', '"timestamps" must be an array'],
    ['columns without timestamps', '{"columns":{}}', '"timestamps" is missing'],
    ['timestamps without columns', '{"timestamps":[]}', '"columns" is missing'],
    ['neither shape', '{"site":"a"}', 'needs "tags"'],
    ['both shapes', '{"tags":{},"timestamps":[],"columns":{}}', 'not both'],
    ['tags twice', '{"tags":{},"tags":{}}', '"tags" appears twice'],
    ['non-string scope', '{"site":5,"tags":{}}', '"site" must be a string'],
    ['null scope', '{"organization":null,"tags":{}}', '"organization" must be a string'],
    ['leading zero', '{"tags":{"a":[[01,2]]}}', 'leading zero'],
    ['bare minus', '{"tags":{"a":[[1,-]]}}'],
    ['trailing dot', '{"tags":{"a":[[1,1.]]}}', 'decimal point'],
    ['leading dot', '{"tags":{"a":[[1,.5]]}}'],
    ['plus sign', '{"tags":{"a":[[1,+1]]}}'],
    ['empty exponent', '{"tags":{"a":[[1,1e]]}}', 'exponent'],
    ['NaN literal', '{"tags":{"a":[[1,NaN]]}}'],
    ['Infinity literal', '{"tags":{"a":[[1,Infinity]]}}'],
    ['single quotes', "{'tags':{}}"],
    ['bad escape', '{"tags":{"a\\x":[]}}', 'escape'],
    ['short \\u escape', '{"tags":{"a\\u12":[]}}', 'hex'],
    ['raw control character in a string', '{"tags":{"a\tb":[]}}', 'control character'],
    ['trailing comma', '{"tags":{"a":[[1,2],]}}'],
    ['missing colon', '{"tags" {}}'],
    ['bad nested extra value', '{"x":[1,{"a":}],"tags":{}}'],
    ['bad literal in an extra value', '{"x":tru,"tags":{}}', "'true'"],
  ];
  for (const [title, text, ...fragments] of cases) {
    test(title, () => assertWriteError(() => decodeText(text), 'malformed', ...fragments));
  }

  test('invalid UTF-8 in a tag name', () => {
    const bytes = new Uint8Array([...encoder.encode('{"tags":{"a'), 0xff, ...encoder.encode('":[]}}')]);
    assertWriteError(() => decodeJsonWriteBody(bytes), 'malformed', 'UTF-8');
  });

  test('a body that is both rejected and malformed is malformed', () => {
    assertWriteError(() => decodeText('{"tags":{"a":[[1,"x"]],"b":[[1,2]'), 'malformed');
    assertWriteError(() => decodeText('{"timestamps":[1,2],"columns":{"a":["x",1],"b":[1]}}'), 'malformed', 'column "b"');
  });

  test('deep nesting in an unknown key is skipped without recursion', () => {
    const deep = '['.repeat(100000) + ']'.repeat(100000);
    assert.equal(decodeText(`{"x":${deep},"tags":{"a":[[1,2]]}}`).pointCount, 1);
    assertWriteError(() => decodeText(`{"x":${deep.slice(0, -1)},"tags":{}}`), 'malformed');
  });
});

describe('decodeJsonWriteBody: rejected (200, success false)', () => {
  const cases: Array<[string, string, ...string[]]> = [
    ['a string value', '{"tags":{"TI-101":[[1,1],[2,2],[3,3],[4,"12.5"]]}}', 'tag "TI-101" point 3: value must be a finite number', 'a string'],
    ['a null value in tag-keyed', '{"tags":{"TI-101":[[1,null]]}}', 'tag "TI-101" point 0', 'null'],
    ['a boolean value', '{"tags":{"XS-1":[[1,true]]}}', 'tag "XS-1" point 0', 'a boolean'],
    ['an object value', '{"tags":{"a":[[1,{"v":1}]]}}', 'point 0', 'an object'],
    ['an array value', '{"tags":{"a":[[1,[1]]]}}', 'point 0', 'an array'],
    ['an overflowing value', '{"tags":{"a":[[1,-1e999]]}}', 'point 0', '-Infinity'],
    ['"NaN" in a column', '{"timestamps":[1,2],"columns":{"FI-7":[1,"NaN"]}}', 'tag "FI-7" row 1', 'a string'],
    ['Infinity in a column', '{"timestamps":[1,2],"columns":{"FI-7":[1e400,null]}}', 'tag "FI-7" row 0', 'Infinity'],
    ['a negative timestamp', '{"tags":{"TI-101":[[5,1],[-1,2]]}}', 'tag "TI-101" point 1: timestamp must be an integer in 0..2^53-1, got -1'],
    ['a fractional timestamp', '{"tags":{"a":[[1.5,2]]}}', 'point 0', 'got 1.5'],
    ['timestamp 2^53', '{"tags":{"a":[[9007199254740992,2]]}}', 'got 9007199254740992'],
    ['a string timestamp', '{"tags":{"a":[["1700000000000",2]]}}', 'point 0', 'a string'],
    ['a null timestamp', '{"tags":{"a":[[null,2]]}}', 'point 0', 'null'],
    ['a bad row timestamp', '{"timestamps":[1,2.5],"columns":{"a":[1,2]}}', 'timestamps index 1', 'got 2.5'],
    ['an empty tag name', '{"tags":{"":[[1,2]]}}', 'tag ""', 'must not be empty'],
    ['an empty column name', '{"timestamps":[1],"columns":{"":[1]}}', 'must not be empty'],
    ['a control character (escaped newline)', '{"tags":{"a\\nb":[[1,2]]}}', 'control character'],
    ['NUL', '{"tags":{"a\\u0000":[[1,2]]}}', 'U+0000'],
    ['DEL', '{"tags":{"a\u007f":[[1,2]]}}', 'U+007F'],
    ['a C1 control', '{"tags":{"a\\u0085":[[1,2]]}}', 'U+0085'],
    ['an unpaired surrogate', '{"tags":{"a\\ud800":[[1,2]]}}', 'surrogate'],
    ['257 bytes', `{"tags":{"${'a'.repeat(257)}":[[1,2]]}}`, '257 bytes'],
    ['129 two-byte characters', `{"tags":{"${'é'.repeat(129)}":[[1,2]]}}`, '258 bytes'],
  ];
  for (const [title, text, ...fragments] of cases) {
    test(title, () => assertWriteError(() => decodeText(text), 'rejected', ...fragments));
  }

  test('256 bytes of UTF-8 is the longest name', () => {
    assert.equal(decodeText(`{"tags":{"${'é'.repeat(128)}":[[1,2]],"${'a'.repeat(256)}":[]}}`).tagNames.length, 2);
    assert.equal(decodeText(`{"tags":{"${'😀'.repeat(64)}":[]}}`).tagNames[0].length, 128);
  });

  test('the first problem is reported', () => {
    assertWriteError(() => decodeText('{"tags":{"a":[[1,2],[3,"x"]],"b":[[-5,1]]}}'), 'rejected', 'tag "a" point 1');
  });
});

// -- decoded objects (msgpack) ----------------------------------------------------------------

/** JSON.parse's result turned msgpack-like: some integers as bigint, some maps as Map, some timestamps as Date. */
function msgpackLike(r: Random, body: Record<string, unknown>): unknown {
  const map = (entries: Array<[string, unknown]>): unknown => (chance(r, 0.3) ? new Map(entries) : Object.fromEntries(entries));
  const integer = (x: unknown): unknown => (typeof x === 'number' && Number.isSafeInteger(x) && !Object.is(x, -0) && chance(r, 0.3) ? BigInt(x) : x);
  // Dates hold at most 8.64e15 ms.
  const timestamp = (x: unknown): unknown => (typeof x === 'number' && x <= 8.64e15 && chance(r, 0.1) ? new Date(x) : integer(x));
  const out: Array<[string, unknown]> = [];
  for (const [key, value] of Object.entries(body)) {
    if (key === 'tags') {
      const tags = Object.entries(value as Record<string, unknown[][]>);
      out.push([key, map(tags.map(([name, points]) => [name, points.map(([t, v]) => [timestamp(t), integer(v)])]))]);
    } else if (key === 'timestamps') out.push([key, (value as unknown[]).map(timestamp)]);
    else if (key === 'columns') {
      const columns = Object.entries(value as Record<string, unknown[]>);
      out.push([key, map(columns.map(([name, values]) => [name, values.map(integer)]))]);
    } else out.push([key, value]);
  }
  return map(out);
}

describe('decodeWriteObject', () => {
  test('random bodies, msgpack-like (bigint, Map, Date), agree with JSON.parse', () => {
    const r = prng(4242);
    for (let i = 0; i < 2000; i++) {
      const parsed = JSON.parse(randomBody(r));
      const want = expectedFromParsed(parsed);
      assertBatch(decodeWriteObject(msgpackLike(r, parsed)), want, `object ${i} ${JSON.stringify(parsed).slice(0, 300)}`);
    }
  });

  test('random bodies through a real msgpackr round trip', () => {
    const r = prng(777);
    for (let i = 0; i < 1000; i++) {
      const parsed = JSON.parse(randomBody(r));
      const want = expectedFromParsed(parsed);
      if (want.tagNames.includes('__proto__')) continue; // msgpackr renames that key on purpose (prototype pollution)
      // msgpack has no negative zero integer: msgpackr writes -0 as 0.
      assertBatch(decodeWriteObject(unpack(pack(parsed))), want, `msgpack ${i}`, false);
    }
  });

  test('malformed and rejected like the JSON decoder', () => {
    assertWriteError(() => decodeWriteObject(null), 'malformed', 'must be an object');
    assertWriteError(() => decodeWriteObject([1]), 'malformed', 'must be an object');
    assertWriteError(() => decodeWriteObject({ tags: [] }), 'malformed', '"tags" must be an object');
    assertWriteError(() => decodeWriteObject({ tags: { a: [[1, 2, 3]] } }), 'malformed', 'tag "a" point 0');
    assertWriteError(() => decodeWriteObject({ tags: { a: [5] } }), 'malformed', 'tag "a" point 0');
    assertWriteError(() => decodeWriteObject({ tags: { a: 5 } }), 'malformed', 'tag "a" must be an array');
    assertWriteError(() => decodeWriteObject({ site: 5, tags: {} }), 'malformed', '"site" must be a string');
    assertWriteError(() => decodeWriteObject({ timestamps: [1, 2], columns: { c: [1] } }), 'malformed', 'column "c" has 1 values');
    assertWriteError(() => decodeWriteObject({ timestamps: [1] }), 'malformed', '"columns" is missing');
    assertWriteError(() => decodeWriteObject({ tags: {}, columns: {} }), 'malformed', 'not both');
    assertWriteError(() => decodeWriteObject(new Map<unknown, unknown>([[1, 2]])), 'malformed');
    assertWriteError(() => decodeWriteObject({ tags: { a: [[1, 1], [2, 'x']] } }), 'rejected', 'tag "a" point 1: value must be a finite number, got a string');
    assertWriteError(() => decodeWriteObject({ tags: { a: [[1, null]] } }), 'rejected', 'tag "a" point 0', 'null');
    assertWriteError(() => decodeWriteObject({ tags: { a: [[1, Infinity]] } }), 'rejected', 'got Infinity');
    assertWriteError(() => decodeWriteObject({ tags: { a: [[2n ** 53n, 1]] } }), 'rejected', 'tag "a" point 0: timestamp', '9007199254740992n');
    assertWriteError(() => decodeWriteObject({ tags: { a: [[-1n, 1]] } }), 'rejected', 'timestamp');
    assertWriteError(() => decodeWriteObject({ tags: { a: [[new Date(NaN), 1]] } }), 'rejected', 'timestamp');
    assertWriteError(() => decodeWriteObject({ timestamps: [1, 0.5], columns: { c: [1, 2] } }), 'rejected', 'timestamps index 1');
    assertWriteError(() => decodeWriteObject({ timestamps: [1], columns: { c: [true] } }), 'rejected', 'tag "c" row 0');
    assertWriteError(() => decodeWriteObject({ tags: { '': [] } }), 'rejected', 'must not be empty');
  });

  test('a bigint value becomes the nearest number', () => {
    const batch = decodeWriteObject({ tags: { a: [[1n, 2n ** 60n]] } });
    assert.equal(batch.values[0], 2 ** 60);
    assert.equal(batch.timestamps[0], 1);
  });
});

// -- binary batch -----------------------------------------------------------------------------

interface Columns {
  scope: WriteScope;
  timestamps: number[];
  columns: Array<{ name: string; values: number[] }>;
}

function expectedFromColumns(c: Columns): Expected {
  const out: Expected = { scope: c.scope, tagNames: [], tagStart: [0], timestamps: [], values: [] };
  for (const column of c.columns) {
    out.tagNames.push(column.name);
    column.values.forEach((v, r) => {
      if (Number.isNaN(v)) return;
      out.timestamps.push(c.timestamps[r] + 0);
      out.values.push(v);
    });
    out.tagStart.push(out.timestamps.length);
  }
  return out;
}

function randomColumns(r: Random): Columns {
  const scope: WriteScope = {};
  for (const f of SCOPE_FIELDS) if (chance(r, 0.4)) scope[f] = anyString(r);
  const rows = int(r, 40);
  const timestamps = Array.from({ length: rows }, () => pick(r, [0, 1_700_000_000_000 + int(r, 1e9), 9007199254740991, int(r, 1000)]));
  const gaps = r();
  const columns = distinctNames(r, int(r, 7)).map((name) => ({
    name,
    values: Array.from({ length: rows }, () => (chance(r, gaps) ? NaN : Number(numberText(r)))),
  }));
  return { scope, timestamps, columns };
}

/** The same bytes at a misaligned offset of a larger buffer. */
function atOffset(bytes: Uint8Array, offset: number): Uint8Array {
  const buf = new Uint8Array(bytes.length + offset + 5);
  buf.set(bytes, offset);
  return buf.subarray(offset, offset + bytes.length);
}

describe('binary batch', () => {
  test('the layout of WIRE.md, byte for byte', () => {
    const bytes = encodeBinaryBatch({}, [1], [{ name: 'a', values: [2] }]);
    const dv = new DataView(bytes.buffer, bytes.byteOffset, bytes.length);
    assert.equal(lenientDecoder.decode(bytes.subarray(0, 4)), 'HSW1');
    assert.equal(dv.getUint32(4, true), 1); // tags
    assert.equal(dv.getUint32(8, true), 1); // rows
    assert.equal(dv.getUint16(12, true), 2); // scope "{}"
    assert.equal(lenientDecoder.decode(bytes.subarray(14, 16)), '{}');
    assert.equal(dv.getFloat64(16, true), 1); // timestamps at 16 (already a multiple of 8)
    assert.equal(dv.getUint16(24, true), 1);
    assert.equal(bytes[26], 0x61);
    assert.deepEqual([...bytes.subarray(27, 32)], [0, 0, 0, 0, 0]); // padding to 32
    assert.equal(dv.getFloat64(32, true), 2);
    assert.equal(bytes.length, 40);
  });

  test('random batches round trip, aligned and at offset 3', () => {
    const r = prng(31337);
    for (let i = 0; i < 1000; i++) {
      const c = randomColumns(r);
      const bytes = encodeBinaryBatch(c.scope, c.timestamps, c.columns);
      const want = expectedFromColumns(c);
      assertBatch(decodeBinaryBatch(bytes), want, `batch ${i}`);
      assertBatch(decodeBinaryBatch(atOffset(bytes, 3)), want, `batch ${i} at offset 3`);
      assertBatch(decodeBinaryBatch(Buffer.from(bytes)), want, `batch ${i} as a Buffer`);
    }
  });

  test('typed-array input to the encoder, repeated names merged', () => {
    const bytes = encodeBinaryBatch({ site: 's' }, new Float64Array([1, 2]), [
      { name: 'a', values: new Float64Array([1, NaN]) },
      { name: 'b', values: [NaN, NaN] },
      { name: 'a', values: [NaN, 3] },
    ]);
    assertBatch(decodeBinaryBatch(bytes), { scope: { site: 's' }, tagNames: ['a', 'b'], tagStart: [0, 2, 2], timestamps: [1, 2], values: [1, 3] }, 'merge');
  });

  test('every truncation, a trailing byte and a wrong magic are malformed', () => {
    const bytes = encodeBinaryBatch({ unit: 'u1' }, [1, 2, 3], [
      { name: 'TI-101', values: [1, 2, 3] },
      { name: 'é', values: [NaN, 5, 6] },
    ]);
    for (let n = 0; n < bytes.length; n++) assertWriteError(() => decodeBinaryBatch(bytes.subarray(0, n)), 'malformed', 'binary batch');
    assertWriteError(() => decodeBinaryBatch(new Uint8Array([...bytes, 0])), 'malformed', '1 bytes after the last tag');
    const wrong = bytes.slice();
    wrong[3] = 0x32;
    assertWriteError(() => decodeBinaryBatch(wrong), 'malformed', 'HSW1');
  });

  test('absurd counts are refused before anything is allocated for them', () => {
    const bytes = encodeBinaryBatch({}, [1], [{ name: 'a', values: [1] }]);
    const dv = new DataView(bytes.buffer);
    dv.setUint32(4, 0xffffffff, true);
    assertWriteError(() => decodeBinaryBatch(bytes), 'malformed', 'tags declared');
    dv.setUint32(4, 1, true);
    dv.setUint32(8, 0xffffffff, true);
    assertWriteError(() => decodeBinaryBatch(bytes), 'malformed', 'truncated timestamps');
  });

  test('bad scope is malformed', () => {
    const withScope = (json: string): Uint8Array => {
      const scope = encoder.encode(json);
      const bytes = new Uint8Array(Math.ceil((14 + scope.length) / 8) * 8);
      bytes.set(encoder.encode('HSW1'));
      new DataView(bytes.buffer).setUint16(12, scope.length, true);
      bytes.set(scope, 14);
      return bytes;
    };
    assert.deepEqual(decodeBinaryBatch(withScope('{"site":"s","other":1}')).scope, { site: 's' });
    assertWriteError(() => decodeBinaryBatch(withScope('{"site":5}')), 'malformed', '"site" must be a string');
    assertWriteError(() => decodeBinaryBatch(withScope('{"site"')), 'malformed', 'not valid JSON');
    assertWriteError(() => decodeBinaryBatch(withScope('[]')), 'malformed', 'must be a JSON object');
  });

  test('rejected: bad timestamps, infinite values, bad names', () => {
    const one = (ts: number, v: number, name = 'TI-101'): Uint8Array => encodeBinaryBatch({}, [0, ts], [{ name, values: [1, v] }]);
    assertWriteError(() => decodeBinaryBatch(one(-1, 1)), 'rejected', 'timestamps index 1', 'got -1');
    assertWriteError(() => decodeBinaryBatch(one(1.5, 1)), 'rejected', 'timestamps index 1');
    assertWriteError(() => decodeBinaryBatch(one(2 ** 53, 1)), 'rejected', 'timestamps index 1');
    assertWriteError(() => decodeBinaryBatch(one(NaN, 1)), 'rejected', 'got NaN');
    assertWriteError(() => decodeBinaryBatch(one(5, Infinity)), 'rejected', 'tag "TI-101" row 1: value must be a finite number, got Infinity');
    assertWriteError(() => decodeBinaryBatch(one(5, -Infinity)), 'rejected', '-Infinity');
    assertWriteError(() => decodeBinaryBatch(one(5, 1, '')), 'rejected', 'must not be empty');
    assertWriteError(() => decodeBinaryBatch(one(5, 1, 'a\u0001')), 'rejected', 'control character');
    assert.equal(decodeBinaryBatch(one(5, NaN)).pointCount, 1);
  });

  test('the encoder refuses columns of the wrong length', () => {
    assert.throws(() => encodeBinaryBatch({}, [1, 2], [{ name: 'a', values: [1] }]), RangeError);
  });
});

describe('minTimestampMs (storage.minTimestampMs)', () => {
  const MIN = 100_000_000_000;
  const limits = { minTimestampMs: MIN };
  const SECONDS_HINT = `timestamp 1700000000 is before storage.minTimestampMs (${MIN}); it looks like epoch seconds, send milliseconds`;
  const json = (body: unknown) => encoder.encode(JSON.stringify(body));

  test('every format rejects a timestamp below it, saying it looks like seconds', () => {
    assertWriteError(() => decodeJsonWriteBody(json({ tags: { 'TI-101': [[1700000000, 1]] } }), limits), 'rejected', `tag "TI-101" point 0: ${SECONDS_HINT}`);
    assertWriteError(() => decodeJsonWriteBody(json({ timestamps: [MIN, 1700000000], columns: { a: [1, 2] } }), limits), 'rejected', `timestamps index 1: ${SECONDS_HINT}`);
    assertWriteError(() => decodeWriteObject({ tags: { 'TI-101': [[1700000000, 1]] } }, limits), 'rejected', `tag "TI-101" point 0: ${SECONDS_HINT}`);
    assertWriteError(() => decodeWriteObject({ tags: { 'TI-101': [[1700000000n, 1]] } }, limits), 'rejected', SECONDS_HINT);
    assertWriteError(() => decodeWriteObject({ timestamps: [new Date(1700000000)], columns: { a: [1] } }, limits), 'rejected', `timestamps index 0: ${SECONDS_HINT}`);
    assertWriteError(() => decodeBinaryBatch(encodeBinaryBatch({}, [1700000000], [{ name: 'a', values: [1] }]), limits), 'rejected', `timestamps index 0: ${SECONDS_HINT}`);
  });

  test('the minimum itself is accepted, and without limits every timestamp is', () => {
    assert.deepEqual([...decodeJsonWriteBody(json({ tags: { a: [[MIN, 1]] } }), limits).timestamps], [MIN]);
    assert.deepEqual([...decodeWriteObject({ tags: { a: [[MIN, 1]] } }, limits).timestamps], [MIN]);
    assert.deepEqual([...decodeBinaryBatch(encodeBinaryBatch({}, [MIN], [{ name: 'a', values: [1] }]), limits).timestamps], [MIN]);
    assert.deepEqual([...decodeJsonWriteBody(json({ tags: { a: [[0, 1], [1700000000, 2]] } })).timestamps], [0, 1700000000]);
  });

  test('a small number that cannot be seconds gets no hint; a bad timestamp keeps its own message', () => {
    assertWriteError(() => decodeJsonWriteBody(json({ tags: { a: [[5, 1]] } }), limits), 'rejected', `tag "a" point 0: timestamp 5 is before storage.minTimestampMs (${MIN})`);
    assert.throws(() => decodeJsonWriteBody(json({ tags: { a: [[5, 1]] } }), limits), (err: Error) => !err.message.includes('seconds'));
    // Above the minimum but older than it as seconds would be: old milliseconds, not seconds.
    assert.throws(() => decodeJsonWriteBody(json({ tags: { a: [[1_500_000_000_000, 1]] } }), { minTimestampMs: 1_600_000_000_000 }), (err: Error) => !err.message.includes('seconds'));
    assertWriteError(() => decodeJsonWriteBody(json({ tags: { a: [[-1, 1]] } }), limits), 'rejected', 'timestamp must be an integer in 0..2^53-1, got -1');
  });
});
