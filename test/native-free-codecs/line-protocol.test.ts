import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import {
  LineColumns,
  LineProtocolError,
  lineTagName,
  LineSeriesCache,
  parseLineProtocol,
  partialWriteMessage,
  type LineProtocolBatch,
  type LineProtocolOptions,
  type Precision,
} from '../../native-free-codecs/line-protocol.js';
import { prng } from '../support/prng.js';

const encoder = new TextEncoder();
const NOW = 1_700_000_000_000;

interface Point {
  tag: string;
  scope: Record<string, string>;
  ts: number;
  value: number;
}

function parse(text: string | Uint8Array, options: Partial<LineProtocolOptions> = {}): LineProtocolBatch {
  const body = typeof text === 'string' ? encoder.encode(text) : text;
  return parseLineProtocol(body, { nowMs: NOW, ...options });
}

function pointsOf(batch: LineProtocolBatch): Point[] {
  const out: Point[] = [];
  for (let i = 0; i < batch.pointCount; i++) {
    out.push({ tag: lineTagName(batch, i), scope: { ...batch.series[batch.pointSeries[i]].scope }, ts: batch.timestamps[i], value: batch.values[i] });
  }
  return out;
}

/** The points of a body that must parse without a bad line. */
function good(text: string, options: Partial<LineProtocolOptions> = {}): Point[] {
  const batch = parse(text, options);
  assert.equal(batch.firstError, null, `unexpected error: ${JSON.stringify(batch.firstError)}`);
  assert.equal(batch.rejectedLines, 0);
  return pointsOf(batch);
}

const pt = (tag: string, value: number, ts = NOW, scope: Record<string, string> = {}): Point => ({ tag, scope, ts, value });

// -- the reference, case by case --------------------------------------------------------------

describe('line protocol: reference cases', () => {
  const cases: Array<[string, string, Point[]]> = [
    ['a float with a ns timestamp', 'weather,location=us-midwest temperature=82 1465839830100400200', [pt('weather,location=us-midwest.temperature', 82, 1465839830100)]],
    ['no timestamp takes now', 'm f=1', [pt('m.f', 1)]],
    ['several fields', 'm a=1,b=2.5,c=-3', [pt('m.a', 1), pt('m.b', 2.5), pt('m.c', -3)]],
    ['tags sorted by key', 'm,z=1,a=2,m=3 f=1', [pt('m,a=2,m=3,z=1.f', 1)]],
    ['the same series with tags in another order is one series', 'm,b=2,a=1 f=1\nm,a=1,b=2 f=2', [pt('m,a=1,b=2.f', 1), pt('m,a=1,b=2.f', 2)]],
    ['scope tags set the scope and leave the name', 'm,site=s1,unit=u1,x=1,organization=o,grid=g f=1', [pt('m,x=1.f', 1, NOW, { organization: 'o', site: 's1', unit: 'u1', grid: 'g' })]],
    // Escapes.
    ['measurement: escaped comma and space', 'my\\,meas\\ ure f=1', [pt('my,meas ure.f', 1)]],
    ['measurement: = needs no escape, \\= stays', 'a=b\\=c f=1', [pt('a=b\\=c.f', 1)]],
    ['WIRE example', 'esc\\ m,x=a\\,b v=1', [pt('esc m,x=a,b.v', 1)]],
    ['tag key and value: comma, equals, space', 'm,k\\,e\\=y\\ 1=v\\,a\\=l\\ 1 f=1', [pt('m,k,e=y 1=v,a=l 1.f', 1)]],
    ['field key: comma, equals, space', 'm f\\,i\\=e\\ ld=1', [pt('m.f,i=e ld', 1)]],
    ['two backslashes are one', 'my\\\\m,t\\\\k=v\\\\ f\\\\k=1', [pt('my\\m,t\\k=v\\.f\\k', 1)]],
    ['three backslashes before a letter: one escaped, one literal', 'my\\\\\\m f=1', [pt('my\\\\m.f', 1)]],
    ['backslash before another byte is literal', 'm\\x,t=a\\b f\\z=1', [pt('m\\x,t=a\\b.f\\z', 1)]],
    ['quotes are literal in names', 'm"q,t="v" "f"=1', [pt('m"q,t="v"."f"', 1)]],
    ['unicode names', 'température,pièce=salle\\ 1 °C=21.5', [pt('température,pièce=salle 1.°C', 21.5)]],
    ['an escaped space ending a tag value', 'm,t=a\\  f=1', [pt('m,t=a .f', 1)]],
    // String fields: skipped, counted, every escape.
    ['string fields are skipped', 'm s="hello",f=1', [pt('m.f', 1)]],
    ['string escapes: quote and backslash', 'm s="a \\"q\\" \\\\ b, c=d e",f=2', [pt('m.f', 2)]],
    ['other backslashes in strings are literal', 'm s="C:\\temp\\new",f=3', [pt('m.f', 3)]],
    ['string ending in an escaped backslash', 'm s="x\\\\",f=4', [pt('m.f', 4)]],
    ['a string may span lines', 'm s="two\nlines",f=5\nm f=6', [pt('m.f', 5), pt('m.f', 6)]],
    // Integers and unsigned.
    ['integer', 'm i=42i,n=-42i,z=0i,l=007i', [pt('m.i', 42), pt('m.n', -42), pt('m.z', 0), pt('m.l', 7)]],
    ['int64 limits', 'm a=9223372036854775807i,b=-9223372036854775808i', [pt('m.a', 9223372036854775807), pt('m.b', -9223372036854775808)]],
    ['unsigned', 'm u=42u,z=0u,max=18446744073709551615u', [pt('m.u', 42), pt('m.z', 0), pt('m.max', 18446744073709551615)]],
    ['negative zero integer is zero', 'm i=-0i', [pt('m.i', 0)]],
    // Booleans.
    ['booleans, every spelling', 'm a=t,b=T,c=true,d=True,e=TRUE,f=f,g=F,h=false,i=False,j=FALSE', [
      pt('m.a', 1), pt('m.b', 1), pt('m.c', 1), pt('m.d', 1), pt('m.e', 1),
      pt('m.f', 0), pt('m.g', 0), pt('m.h', 0), pt('m.i', 0), pt('m.j', 0),
    ]],
    // Floats in Go's forms.
    ['floats as Go prints them', 'm a=1,b=1.5,c=-1.5e-10,d=1E+20,e=.5,f=5.,g=1e+06,h=5e-324,i=1.7976931348623157e+308,j=-0.000001,k=2.5E-3', [
      pt('m.a', 1), pt('m.b', 1.5), pt('m.c', -1.5e-10), pt('m.d', 1e20), pt('m.e', 0.5), pt('m.f', 5), pt('m.g', 1e6),
      pt('m.h', 5e-324), pt('m.i', 1.7976931348623157e308), pt('m.j', -0.000001), pt('m.k', 0.0025),
    ]],
    ['float with leading zeros, 5.e3, long mantissas', 'm a=007.50,b=5.e3,c=3.14159265358979323846264338327950288,d=123456789012345678901234567890', [
      pt('m.a', 7.5), pt('m.b', 5000), pt('m.c', 3.141592653589793), pt('m.d', 123456789012345678901234567890),
    ]],
    ['negative zero float is zero', 'm f=-0.0', [pt('m.f', 0)]],
    ['underflow is zero', 'm f=1e-400', [pt('m.f', 0)]],
    // Layout: comments, blank lines, CRLF, spaces.
    ['comments and blank lines', '# a comment\n\nm f=1\n   # indented comment\n\n\nm f=2\n', [pt('m.f', 1), pt('m.f', 2)]],
    ['CRLF', 'm f=1 1000000000\r\nm f=2 2000000000\r\n\r\n# c\r\n', [pt('m.f', 1, 1000), pt('m.f', 2, 2000)]],
    ['no final newline, trailing spaces', 'm f=1 1000000000   ', [pt('m.f', 1, 1000)]],
    ['leading whitespace before a line', '  \tm f=1', [pt('m.f', 1)]],
    ['several spaces between sections', 'm  f=1   1000000000', [pt('m.f', 1, 1000)]],
    ['a hash inside a line is not a comment', 'm f=1,g#=2', [pt('m.f', 1), pt('m.g#', 2)]],
    ['an empty body', '', []],
    ['only comments', '# one\n#two\r\n', []],
  ];
  for (const [name, text, expected] of cases) {
    test(name, () => assert.deepEqual(good(text), expected));
  }

  test('string fields are counted, and a line of only strings is good', () => {
    const batch = parse('m s="a",t="b"\nm s="c",f=1\n');
    assert.equal(batch.stringFields, 3);
    assert.equal(batch.acceptedLines, 2);
    assert.equal(batch.pointCount, 1);
  });

  test('a multi-line string counts its lines for later line numbers', () => {
    const batch = parse('m s="one\ntwo\nthree",f=1\nbad\n');
    assert.deepEqual(batch.firstError?.line, 4);
  });
});

describe('line protocol: timestamps and precisions', () => {
  const cases: Array<[Precision | undefined, string, number]> = [
    [undefined, '1465839830100400200', 1465839830100],
    ['ns', '1465839830100400200', 1465839830100],
    ['ns', '1465839830100999999', 1465839830100], // rounds down
    ['us', '1465839830100400', 1465839830100],
    ['ms', '1465839830100', 1465839830100],
    ['s', '1465839830', 1465839830000],
    ['ns', '0', 0],
    ['ns', '999999', 0],
    ['ms', '9007199254740991', 9007199254740991],
    ['s', '00000001465839830', 1465839830000],
  ];
  for (const [precision, raw, ms] of cases) {
    test(`${raw} at ${precision ?? 'the default'} is ${ms} ms`, () => {
      assert.deepEqual(good(`m f=1 ${raw}`, precision === undefined ? {} : { precision }), [pt('m.f', 1, ms)]);
    });
  }

  test('a line without a timestamp takes now, whatever the precision', () => {
    for (const precision of ['ns', 'us', 'ms', 's'] as const) assert.deepEqual(good('m f=1', { precision, nowMs: 5 }), [pt('m.f', 1, 5)]);
  });

  test('out of range timestamps are bad lines, named', () => {
    const bad: Array<[Precision, string, RegExp]> = [
      ['ns', '-1', /outside 0\.\.2\^53-1/],
      ['s', '-1', /-1000 ms/],
      ['ns', '-1000001', /-2 ms/], // floor, not truncation
      ['ms', '9007199254740992', /outside/],
      ['s', '9007199254741', /outside/],
      ['ns', '9223372036854775808', /int64 range/],
      ['ns', '99999999999999999999', /int64 range/],
      ['ms', '12a', /unexpected "a" after the timestamp/],
      ['ms', '1.5', /unexpected "\." after the timestamp/],
      ['ms', 'x', /invalid timestamp "x"/],
      ['ms', '1 2', /unexpected "2" after the timestamp/],
    ];
    for (const [precision, raw, message] of bad) {
      const batch = parse(`m f=1 ${raw}`, { precision });
      assert.equal(batch.pointCount, 0, raw);
      assert.equal(batch.firstError?.line, 1);
      assert.match(batch.firstError!.message, message, `${precision} ${raw}: ${batch.firstError!.message}`);
    }
  });

  test('before storage.minTimestampMs: a bad line hinting at the precision', () => {
    const batch = parse('m f=1 1700000000', { precision: 'ms', minTimestampMs: 946684800000 });
    assert.equal(batch.pointCount, 0);
    assert.match(batch.firstError!.message, /before storage\.minTimestampMs \(946684800000\); check the precision parameter/);
    assert.deepEqual(good('m f=1 1700000000', { precision: 's', minTimestampMs: 946684800000 }), [pt('m.f', 1, 1700000000000)]);
  });

  test('an unknown precision is the caller\'s mistake: thrown', () => {
    assert.throws(() => parse('m f=1', { precision: 'h' as Precision }), LineProtocolError);
  });
});

describe('line protocol: bad lines', () => {
  const cases: Array<[string, string, RegExp]> = [
    ['no fields', 'm', /missing fields/],
    ['no fields after tags', 'm,t=1', /missing fields/],
    ['only a space after the measurement', 'm ', /missing fields/],
    ['empty measurement', ',t=1 f=1', /missing measurement/],
    ['a line starting with a space is trimmed, so "=" is the measurement', ' =1', /missing fields/],
    ['empty tag key', 'm,=v f=1', /missing tag key/],
    ['tag without =', 'm,t f=1', /tag "t" has no '='/],
    ['empty tag value', 'm,t= f=1', /tag "t" has an empty value/],
    ['trailing comma in tags', 'm,t=1, f=1', /empty tag/],
    ['duplicate tag', 'm,t=1,t=2 f=1', /tag "t" appears twice/],
    ['empty field key', 'm =1', /missing field key/],
    ['field without =', 'm f', /field "f" has no '=value'/],
    ['field without value', 'm f=', /field "f": missing value/],
    ['field value then a space then nothing is still missing', 'm f= 1', /field "f": missing value/],
    ['trailing comma in fields', 'm f=1,', /missing field key/],
    ['NaN', 'm f=NaN', /NaN is not a value/],
    ['nan', 'm f=nan', /NaN is not a value/],
    ['Inf', 'm f=Inf', /"Inf" is not a value \(values must be finite\)/],
    ['-Inf', 'm f=-Inf', /"-Inf" is not a value/],
    ['+Inf', 'm f=+Inf', /"\+Inf" is not a value/],
    ['infinity', 'm f=infinity', /not a value/],
    ['float overflow', 'm f=1e400', /out of the float64 range/],
    ['float overflow by digits', `m f=${'9'.repeat(400)}`, /out of the float64 range/],
    ['leading +', 'm f=+1', /must not start with '\+'/],
    ['lone dot', 'm f=.', /invalid value "\."/],
    ['lone minus', 'm f=-', /invalid value "-"/],
    ['exponent without digits', 'm f=1e', /exponent without digits/],
    ['exponent sign without digits', 'm f=1e+', /exponent without digits/],
    ['hex float', 'm f=0x1p-2', /unexpected "x" after the value/],
    ['underscores', 'm f=1_000', /unexpected "_"/],
    ['float with i', 'm f=1.5i', /"1\.5i" is not an integer/],
    ['exponent with i', 'm f=1e3i', /is not an integer/],
    ['int64 overflow', 'm f=9223372036854775808i', /out of the int64 range/],
    ['int64 underflow', 'm f=-9223372036854775809i', /out of the int64 range/],
    ['uint64 overflow', 'm f=18446744073709551616u', /out of the uint64 range/],
    ['negative unsigned', 'm f=-1u', /must not be negative/],
    ['bad boolean', 'm f=tru', /invalid boolean "tru"/],
    ['boolean in wrong case', 'm f=tRUE', /invalid boolean/],
    ['unquoted string', 'm f=hello', /invalid value "hello"/],
    ['junk after a string', 'm f="a"b', /unexpected "b" after the value/],
    ['control character in a measurement', 'm\tx f=1', /control characters/],
    ['control character in a field key', 'm f\u0001=1', /control characters/],
    ['name over 256 bytes', `${'m'.repeat(200)} ${'f'.repeat(56)}=1`, /257 bytes of UTF-8, longer than 256/],
    ['measurement over 256 bytes', `${'m'.repeat(257)} f=1`, /longer than 256/],
  ];
  for (const [name, line, message] of cases) {
    test(name, () => {
      const batch = parse(`m ok=1\n${line}\nm ok=2`);
      assert.equal(batch.rejectedLines, 1, JSON.stringify(batch.firstError));
      assert.equal(batch.firstError?.line, 2);
      assert.match(batch.firstError!.message, message);
      assert.deepEqual(pointsOf(batch), [pt('m.ok', 1), pt('m.ok', 2)], 'the good lines are kept');
    });
  }

  test('an unterminated string takes the rest of the body, reported on the line it opened', () => {
    const batch = parse('m ok=1\nm f="abc\nm ok=2\nm ok=3');
    assert.equal(batch.rejectedLines, 1);
    assert.deepEqual(batch.firstError, { line: 2, message: 'field "f": string value has no closing quote' });
    assert.deepEqual(pointsOf(batch), [pt('m.ok', 1)]);
  });

  test('invalid UTF-8 in a name is a bad line', () => {
    const body = new Uint8Array([...encoder.encode('m,t='), 0xff, 0xfe, ...encoder.encode(' f=1\nm f=2')]);
    const batch = parse(body);
    assert.match(batch.firstError!.message, /tag value .* is not valid UTF-8/);
    assert.deepEqual(pointsOf(batch), [pt('m.f', 2)]);
  });

  test('a bad line is dropped whole, with none of its fields', () => {
    const batch = parse('m a=1,b=2,c=oops,d=4\nm a=5');
    assert.deepEqual(pointsOf(batch), [pt('m.a', 5)]);
    assert.equal(batch.series.length, 1);
  });

  test('the first error and the count of dropped lines make the partial-write message', () => {
    const batch = parse('m f=1\r\n# c\r\nm f=x\r\n\r\nm f=2\r\nm\r\nm f=3 bad\r\n');
    assert.equal(batch.rejectedLines, 3);
    assert.equal(batch.acceptedLines, 2);
    assert.deepEqual(batch.firstError, { line: 3, message: 'field "f": invalid value "x"' });
    assert.equal(partialWriteMessage(batch), 'partial write: line 3: field "f": invalid value "x" dropped=3');
    assert.equal(partialWriteMessage(parse('m f=1')), null);
  });

  test('the same bad series on many lines is reported on each', () => {
    const batch = parse('m,t=1,t=2 f=1\nm,t=1,t=2 f=2\nm f=3');
    assert.equal(batch.rejectedLines, 2);
    assert.deepEqual(pointsOf(batch), [pt('m.f', 3)]);
  });
});

// -- guesses: the series and field keys of the previous lines are tried first ------------------

describe('line protocol: lines that differ from the ones before them', () => {
  test('a series followed by another, by itself, by a longer or shorter one; fields in another order, fewer, more, longer', () => {
    const text = [
      'm,a=1 v=1,w=2 1',
      'm,a=2 v=3 2',
      'm,a=1 w=4,v=5 3', // fields in the other order
      'm,a=1 v=6 4',
      'm,a=1 vv=7,v=8,w=9 5', // a key the guess is a prefix of
      'm,a=1 v=10 6',
      'm,a=11 v=11 7', // a series the guess is a prefix of
      'm,a=1 v\\ x=12 8', // an escaped space in a field key
      'm,a=1\\ b v=13 9', // an escaped space in a tag value
      'm,a=1 v=14 10',
    ].join('\n');
    assert.deepEqual(good(text, { precision: 'ms', minTimestampMs: 0 }), [
      pt('m,a=1.v', 1, 1), pt('m,a=1.w', 2, 1), pt('m,a=2.v', 3, 2), pt('m,a=1.w', 4, 3), pt('m,a=1.v', 5, 3), pt('m,a=1.v', 6, 4),
      pt('m,a=1.vv', 7, 5), pt('m,a=1.v', 8, 5), pt('m,a=1.w', 9, 5), pt('m,a=1.v', 10, 6), pt('m,a=11.v', 11, 7), pt('m,a=1.v x', 12, 8),
      pt('m,a=1 b.v', 13, 9), pt('m,a=1.v', 14, 10),
    ]);
  });

  test('timestamps with more or fewer digits than the one before, and past int64 after good ones', () => {
    const batch = parse(
      ['m v=1 1700000000000000000', 'm v=2 1700000000001999999', 'm v=3 170000000000000000', 'm v=4 9223372036854775808', 'm v=5 8999999999999999999', 'm v=6 17000000000000000001', 'm v=7 1700000000002000000', 'm v=8 1x00000000000000000'].join('\n'),
      { precision: 'ns', minTimestampMs: 0 },
    );
    assert.deepEqual(pointsOf(batch), [pt('m.v', 1, 1_700_000_000_000), pt('m.v', 2, 1_700_000_000_001), pt('m.v', 3, 170_000_000_000), pt('m.v', 5, 8_999_999_999_999), pt('m.v', 7, 1_700_000_000_002)]);
    assert.equal(batch.rejectedLines, 3);
    assert.match(batch.firstError!.message, /out of the int64 range/);
  });

  test('a timestamp that is a prefix of the one before, after the digit count changed', () => {
    const batch = parse(['m v=1 17000000000000', 'm v=2 17000000000000', 'm v=3 170000000000', 'm v=4 170000000000', 'm v=5 1700000000000', 'm v=6 1700000000000'].join('\n'), { precision: 'ms', minTimestampMs: 0 });
    assert.deepEqual(pointsOf(batch).map((p) => p.ts), [17e12, 17e12, 17e10, 17e10, 17e11, 17e11]);
  });

  test('a bad line between good ones of the same series leaves the guesses sound', () => {
    const batch = parse('m v=1 1\nm v=oops 2\nm v=3 3\nm,a v=4 4\nm v=5 5', { precision: 'ms', minTimestampMs: 0 });
    assert.deepEqual(pointsOf(batch), [pt('m.v', 1, 1), pt('m.v', 3, 3), pt('m.v', 5, 5)]);
    assert.equal(batch.rejectedLines, 2);
  });
});

// -- round trips against an encoder -----------------------------------------------------------

type FieldValue = { kind: 'float' | 'int' | 'uint'; value: number } | { kind: 'bool'; value: boolean } | { kind: 'string'; value: string };

interface Line {
  measurement: string;
  tags: Array<[string, string]>;
  fields: Array<[string, FieldValue]>;
  ts?: number;
}

const escapeWith = (s: string, chars: string): string => s.replace(/[\\]/g, '\\\\').replace(new RegExp(`[${chars}]`, 'g'), (c) => `\\${c}`);

function encodeLine(line: Line): string {
  let out = escapeWith(line.measurement, ', ');
  for (const [k, v] of line.tags) out += `,${escapeWith(k, ',= ')}=${escapeWith(v, ',= ')}`;
  out += ' ';
  out += line.fields
    .map(([k, f]) => {
      const key = escapeWith(k, ',= ');
      switch (f.kind) {
        case 'float': return `${key}=${String(f.value)}`;
        case 'int': return `${key}=${f.value}i`;
        case 'uint': return `${key}=${f.value}u`;
        case 'bool': return `${key}=${f.value ? 'true' : 'false'}`;
        case 'string': return `${key}="${f.value.replace(/[\\"]/g, (c) => `\\${c}`)}"`;
      }
    })
    .join(',');
  if (line.ts !== undefined) out += ` ${line.ts}`;
  return out;
}

/** What the parser should make of an encoded line (ms precision). */
function expectedPoints(line: Line): Point[] {
  const scope: Record<string, string> = {};
  const rest: Array<[string, string]> = [];
  for (const [k, v] of [...line.tags].sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0))) {
    if (['organization', 'site', 'unit', 'grid'].includes(k)) scope[k] = v;
    else rest.push([k, v]);
  }
  const prefix = line.measurement + rest.map(([k, v]) => `,${k}=${v}`).join('');
  return line.fields
    .filter(([, f]) => f.kind !== 'string')
    .map(([k, f]) => pt(`${prefix}.${k}`, typeof f.value === 'boolean' ? (f.value ? 1 : 0) : (f.value as number), line.ts ?? NOW, scope));
}

type Random = () => number;
const int = (r: Random, n: number): number => Math.floor(r() * n);
const pick = <T>(r: Random, items: readonly T[]): T => items[int(r, items.length)];

// Bytes that need escaping somewhere, and some that do not.
const NAME_CHARS = ['a', 'b', 'Z', '0', '_', '-', '.', ',', '=', ' ', '\\', '"', '#', 'é', '°', '水', '😀'];

function randomName(r: Random, first = false): string {
  let s = '';
  const len = 1 + int(r, 6);
  for (let i = 0; i < len; i++) s += pick(r, NAME_CHARS);
  if (first && s.startsWith('#')) s = `x${s}`; // a line starting with # is a comment
  return s;
}

function randomField(r: Random): FieldValue {
  switch (int(r, 5)) {
    case 0: return { kind: 'float', value: pick(r, [0, 1, -1.5, 1e21, 1.5e-10, 5e-324, Number.MAX_VALUE, (r() - 0.5) * 10 ** int(r, 40)]) };
    case 1: return { kind: 'int', value: (int(r, 2) ? -1 : 1) * int(r, 2 ** 40) };
    case 2: return { kind: 'uint', value: int(r, 2 ** 40) };
    case 3: return { kind: 'bool', value: r() < 0.5 };
    default: return { kind: 'string', value: randomName(r) + pick(r, ['', '\\', '"', '\n', '\\"']) };
  }
}

function randomLine(r: Random): Line {
  const tags: Array<[string, string]> = [];
  const used = new Set<string>();
  for (let i = int(r, 4); i > 0; i--) {
    const k = r() < 0.2 ? pick(r, ['organization', 'site', 'unit', 'grid']) : randomName(r);
    if (used.has(k)) continue;
    used.add(k);
    tags.push([k, randomName(r)]);
  }
  const fields: Array<[string, FieldValue]> = [];
  for (let i = 1 + int(r, 3); i > 0; i--) fields.push([randomName(r), randomField(r)]);
  return { measurement: randomName(r, true), tags, fields, ts: r() < 0.8 ? 946684800000 + int(r, 2 ** 40) : undefined };
}

describe('line protocol: round trips', () => {
  test('random lines through the encoder parse back to their points', () => {
    const r = prng(16);
    for (let round = 0; round < 300; round++) {
      const lines = Array.from({ length: 1 + int(r, 20) }, () => randomLine(r));
      const eol = pick(r, ['\n', '\r\n']);
      const text = lines.map(encodeLine).join(eol) + (r() < 0.5 ? eol : '');
      const batch = parse(text, { precision: 'ms' });
      assert.equal(batch.firstError, null, `${JSON.stringify(text)}: ${JSON.stringify(batch.firstError)}`);
      assert.deepEqual(pointsOf(batch), lines.flatMap(expectedPoints), JSON.stringify(text));
      const strings = lines.reduce((n, l) => n + l.fields.filter(([, f]) => f.kind === 'string').length, 0);
      assert.equal(batch.stringFields, strings);
    }
  });

  test('every float JavaScript prints and a few formats Go prints come back bit for bit', () => {
    const r = prng(7);
    const values: number[] = [Number.MIN_VALUE, Number.MAX_VALUE, 2 ** 53, 2 ** 53 + 2, 0.1, 0.2 + 0.1, 1 / 3];
    for (let i = 0; i < 2000; i++) {
      const bits = new Float64Array(1);
      new Uint32Array(bits.buffer).set([int(r, 2 ** 32), int(r, 2 ** 32)]);
      if (Number.isFinite(bits[0])) values.push(bits[0]);
    }
    for (const v of values) {
      // JavaScript's shortest form, and the fixed/exponent forms Go's 'e', 'E' and 'f' print.
      const forms = [String(v), v.toExponential(), v.toExponential().toUpperCase(), v.toExponential(16)];
      for (const form of forms) {
        const [p] = good(`m f=${form}`);
        assert.equal(p.value, Number(form) + 0, form);
      }
    }
  });

  test('good lines around bad ones give the same points as the good lines alone', () => {
    const r = prng(99);
    const badLines = ['m f=NaN', 'm', 'm,t f=1', 'm f=1 x', 'm f="open', 'm f=1e999', ',t=1 f=1'];
    for (let round = 0; round < 100; round++) {
      const goodLines = Array.from({ length: 1 + int(r, 10) }, () => encodeLine({ ...randomLine(r), fields: [['f', { kind: 'float', value: int(r, 100) }]] }));
      const mixed: string[] = [];
      let firstBad = 0;
      let dropped = 0;
      for (const line of goodLines) {
        if (r() < 0.3) {
          const bad = pick(r, badLines.slice(0, -3)); // no unterminated string: it eats the rest
          mixed.push(bad);
          dropped++;
          if (firstBad === 0) firstBad = mixed.length;
        }
        mixed.push(line);
      }
      const batch = parse(mixed.join('\n'), { precision: 'ms' });
      assert.deepEqual(pointsOf(batch), pointsOf(parse(goodLines.join('\n'), { precision: 'ms' })));
      assert.equal(batch.rejectedLines, dropped);
      assert.equal(batch.firstError?.line, firstBad === 0 ? undefined : firstBad);
    }
  });

  test('many points grow the output and keep every value', () => {
    const lines: string[] = [];
    for (let i = 0; i < 20000; i++) lines.push(`sensor,id=${i % 100} value=${i}.25,count=${i}i ${1_700_000_000_000 + i}`);
    const batch = parse(lines.join('\n'), { precision: 'ms' });
    assert.equal(batch.pointCount, 40000);
    assert.equal(batch.series.length, 100);
    assert.equal(batch.fieldKeys.length, 2);
    assert.equal(lineTagName(batch, 39999), 'sensor,id=99.count');
    assert.equal(batch.values[39998], 19999.25);
    assert.equal(batch.timestamps[39999], 1_700_000_019_999);
  });
});

// -- fuzz -------------------------------------------------------------------------------------

describe('line protocol: fuzz', () => {
  const FUZZ_BYTES = [...encoder.encode(' ,=\\"#\n\r\tabtTfF0123456789.-+eEiuINn\u00e9')];

  // One cache across every body, as a storage worker keeps it: a body parses the same with it.
  const seriesCache = new LineSeriesCache(500);
  // Columns reused from body to body, as a storage worker parses.
  const columns = new LineColumns();

  function check(body: Uint8Array): void {
    let batch: LineProtocolBatch;
    try {
      batch = parseLineProtocol(body, { nowMs: NOW, precision: 'ms' });
      assert.deepEqual(parseLineProtocol(body, { nowMs: NOW, precision: 'ms', seriesCache }), batch, 'the same with the series cache');
      assert.deepEqual(parseLineProtocol(body, { nowMs: NOW, precision: 'ms', seriesCache, columns }), batch, 'the same into reused columns');
    } catch (e) {
      if (e instanceof assert.AssertionError) throw e;
      assert.fail(`threw ${String(e)} on ${JSON.stringify(new TextDecoder().decode(body))}`);
    }
    assert.ok(batch.pointCount >= 0 && batch.pointCount <= body.length);
    for (let i = 0; i < batch.pointCount; i++) {
      assert.ok(Number.isFinite(batch.values[i]));
      assert.ok(Number.isInteger(batch.timestamps[i]) && batch.timestamps[i] >= 0);
      assert.ok(batch.pointSeries[i] < batch.series.length && batch.pointField[i] < batch.fieldKeys.length);
    }
    assert.equal(batch.firstError === null, batch.rejectedLines === 0);
    if (batch.firstError !== null) assert.ok(batch.firstError.line >= 1 && batch.firstError.line <= body.length + 1);
  }

  test('mutated good bodies and random bytes never throw and always finish', { timeout: 60_000 }, () => {
    const r = prng(2024);
    for (let round = 0; round < 3000; round++) {
      let body: Uint8Array;
      if (round % 3 === 0) {
        body = new Uint8Array(int(r, 80));
        for (let i = 0; i < body.length; i++) body[i] = r() < 0.8 ? pick(r, FUZZ_BYTES) : int(r, 256);
      } else {
        const text = Array.from({ length: 1 + int(r, 5) }, () => encodeLine(randomLine(r))).join('\n');
        body = encoder.encode(text);
        for (let m = 1 + int(r, 4); m > 0; m--) {
          const at = int(r, body.length);
          const op = int(r, 3);
          if (op === 0) body[at] = pick(r, FUZZ_BYTES);
          else if (op === 1) body = new Uint8Array([...body.subarray(0, at), ...body.subarray(at + 1)]);
          else body = new Uint8Array([...body.subarray(0, at), pick(r, FUZZ_BYTES), ...body.subarray(at)]);
        }
      }
      check(body);
    }
  });
});

// -- differential: a body against its lines one by one ----------------------------------------

describe('line protocol: a body parses like its lines parsed alone', () => {
  // A line alone takes none of the shortcuts that lean on the lines before it (the series,
  // field keys and timestamp of the previous line, the series cache), so this compares those
  // shortcuts with the plain path on bodies made to repeat, almost repeat, and break them.
  const SERIES = ['m,a=1', 'm,a=11', 'm,a=1,b=2', 'm', 'n,a=1', 'm,a=1\\ b'];
  const FIELDS = ['v=1.5', 'v=-0.25,w=3i', 'w=2e3', 'v=007.50', 'v=t', 'vv=1', 'v=1u', 'v=x', 'v=1.5e400', 'v=123456789012345678', 'v=-0'];
  const TIMES = ['1700000000000', '1700000000001', '170000000000', '17000000000000', '1700000000000x', '01700000000000', '9223372036854775807', '9223372036854775808', '8999999999999999999', '-1', '0', ''];
  const MUTATIONS = [...encoder.encode(' ,=\\0123456789\t')];

  function linePoints(batch: LineProtocolBatch): Array<[string, number, number]> {
    return pointsOf(batch).map((p) => [`${JSON.stringify(p.scope)} ${p.tag}`, p.ts, p.value]);
  }

  for (const precision of ['ms', 'ns', 's'] as const) {
    test(`precision ${precision}`, () => {
      const r = prng(precision.length * 31 + 5);
      const seriesCache = new LineSeriesCache(50);
      for (let round = 0; round < 1500; round++) {
        const lines: string[] = [];
        for (let i = 1 + int(r, 12); i > 0; i--) {
          const previous = lines.at(-1);
          let line = previous !== undefined && r() < 0.5 ? previous : `${pick(r, SERIES)} ${pick(r, FIELDS)} ${pick(r, TIMES)}`.trimEnd();
          if (r() < 0.2) {
            const bytes = [...encoder.encode(line)];
            bytes.splice(int(r, bytes.length + 1), int(r, 2), pick(r, MUTATIONS));
            line = new TextDecoder().decode(new Uint8Array(bytes));
          }
          lines.push(line);
        }
        const options = { precision, nowMs: NOW, minTimestampMs: 0 } as const;
        const crlf = r() < 0.2;
        const whole = parseLineProtocol(encoder.encode(lines.join(crlf ? '\r\n' : '\n')), { ...options, seriesCache });
        const alone = lines.map((line) => parseLineProtocol(encoder.encode(line), options));
        const context = JSON.stringify(lines);
        assert.deepEqual(linePoints(whole), alone.flatMap(linePoints), context);
        assert.equal(whole.rejectedLines, alone.reduce((n, b) => n + b.rejectedLines, 0), context);
        assert.equal(whole.acceptedLines, alone.reduce((n, b) => n + b.acceptedLines, 0), context);
        const firstBad = alone.findIndex((b) => b.firstError !== null);
        // (A message may quote the CR of a CRLF that the line alone does not have.)
        assert.deepEqual(whole.firstError?.line, firstBad < 0 ? undefined : firstBad + 1, context);
        if (!crlf) assert.equal(whole.firstError?.message, alone[firstBad]?.firstError!.message, context);
      }
    });
  }
});
