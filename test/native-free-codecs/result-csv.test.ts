// The CSV result writer against a reading written here from RFC 4180 alone: fields, quoting,
// CRLF, values that read back to the same double, and ISO times equal to Date#toISOString.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { CSV_HEADER, csvField, CsvPointWriter, type CsvTimeFormat } from '../../native-free-codecs/result-csv.js';
import { civilFromDays } from '../../shared/civil-date.js';
import { resultHead, resultTail } from '../../native-free-codecs/result-envelope.js';

/** RFC 4180 records: fields split on commas outside quotes, "" inside quotes is one quote, records end with CRLF. */
function parseCsv(text: string): string[][] {
  const records: string[][] = [];
  let at = 0;
  while (at < text.length) {
    const record: string[] = [];
    for (;;) {
      let field = '';
      if (text[at] === '"') {
        at++;
        for (;;) {
          const quote = text.indexOf('"', at);
          assert.ok(quote >= 0, 'a quoted field ends');
          field += text.slice(at, quote);
          at = quote + 1;
          if (text[at] === '"') {
            field += '"';
            at++;
          } else break;
        }
      } else {
        while (at < text.length && text[at] !== ',' && text[at] !== '\r' && text[at] !== '\n') field += text[at++];
      }
      record.push(field);
      if (text[at] === ',') {
        at++;
        continue;
      }
      assert.equal(text.slice(at, at + 2), '\r\n', `record ${records.length} ends with CRLF`);
      at += 2;
      break;
    }
    records.push(record);
  }
  return records;
}

function encode(series: Array<{ name: string; ts: number[]; values: number[] }>, timeFormat: CsvTimeFormat = 'ms', slice = 3): string {
  const w = new CsvPointWriter(16, timeFormat);
  for (const s of series) {
    w.beginSeries(s.name);
    const ts = Float64Array.from(s.ts);
    const values = Float64Array.from(s.values);
    // In slices, as the worker writes runs of a day.
    for (let from = 0; from < ts.length; from += slice) w.rows(ts, values, from, Math.min(ts.length, from + slice));
  }
  return CSV_HEADER + new TextDecoder().decode(w.bytes());
}

function seeded(seed: number) {
  return () => {
    seed = (seed * 1664525 + 1013904223) >>> 0;
    return seed / 2 ** 32;
  };
}

test('header, one CRLF row per point, tags quoted only when they must be', () => {
  const names = ['TI-101', 'a,b', 'say "hi"', 'line\nbreak', 'cr\rhere', ' spaced ', 'ünï©ødé ✓', '"', ',', ''];
  const text = encode(names.map((name, i) => ({ name, ts: [1717200000000 + i, 1717200001000 + i], values: [i, -i] })));
  const records = parseCsv(text);
  assert.deepEqual(records[0], ['time', 'tag', 'value']);
  assert.equal(records.length, 1 + names.length * 2);
  names.forEach((name, i) => {
    assert.deepEqual(records[1 + i * 2], [String(1717200000000 + i), name, String(i)]);
    assert.deepEqual(records[2 + i * 2], [String(1717200001000 + i), name, i === 0 ? '-0' : String(-i)]);
  });
  assert.match(text, /\r\n1717200000000,TI-101,0\r\n/);
  assert.match(text, /,"a,b",/);
  assert.match(text, /,"say ""hi""",/);
  assert.match(text, /,"line\nbreak",/);
  assert.match(text, /,"cr\rhere",/);
  assert.match(text, /, spaced ,/, 'spaces are part of a field and need no quotes');
  assert.match(text, /,"""",/);
  assert.match(text, /,",",/);
  assert.equal(text.split('\r\n').length - 1, records.length, 'every record, the last too, ends with CRLF');
  assert.equal(csvField('plain').length, 5);
});

test('values read back to the same double; -0 and the infinities are spelled, NaN is an empty field', () => {
  const rnd = seeded(11);
  const values = [0, -0, 0.1, 0.1 + 0.2, -3.07, 1e-300, -1e-300, 5e-324, 1.7976931348623157e308, 123456789.123, 2 ** 53, 1e21, 1e-7, 12.5, Infinity, -Infinity, NaN];
  for (let i = 0; i < 5000; i++) values.push(i % 2 ? Math.round((rnd() - 0.5) * 1e6) / 100 : (rnd() - 0.5) * 10 ** Math.floor(rnd() * 40 - 20));
  const ts = values.map((_, i) => 1717200000000 + i * 1000);
  const records = parseCsv(encode([{ name: 'V', ts, values }])).slice(1);
  assert.equal(records.length, values.length);
  records.forEach(([time, tag, value], i) => {
    assert.equal(Number(time), ts[i]);
    assert.equal(tag, 'V');
    const v = values[i];
    if (Number.isNaN(v)) assert.equal(value, '');
    else assert.ok(Object.is(Number(value), v), `${v} was written as ${value}`);
  });
  assert.deepEqual(records.slice(14, 17).map((r) => r[2]), ['Infinity', '-Infinity', '']);
});

test('time_format iso equals Date#toISOString, across days, leap days, and years past 9999', () => {
  const rnd = seeded(5);
  const ts: number[] = [0, 1, 999, 1000, 86_399_999, 86_400_000, Date.UTC(2024, 1, 29, 23, 59, 59, 999), Date.UTC(2024, 2, 1), Date.UTC(2100, 1, 28, 12), Date.UTC(2100, 2, 1), Date.UTC(9999, 11, 31, 23, 59, 59, 999), Date.UTC(10000, 0, 1), 8.64e15];
  for (let i = 0; i < 3000; i++) ts.push(Math.floor(rnd() * 4e12));
  ts.sort((a, b) => a - b);
  const records = parseCsv(encode([{ name: 'T', ts, values: ts.map(() => 1) }], 'iso', 7)).slice(1);
  records.forEach(([time], i) => assert.equal(time, new Date(ts[i]).toISOString()));
  assert.equal(records.at(-1)![0], '+275760-09-13T00:00:00.000Z');
  // Past Date's range (8.64e15) the calendar arithmetic goes on to 2^53-1.
  const last = parseCsv(encode([{ name: 'T', ts: [9007199254740991], values: [1] }], 'iso'))[1][0];
  assert.equal(last, '+287396-10-12T08:59:00.991Z');
});

test('civilFromDays walks the calendar as Date does, day by day over 800 years', () => {
  for (let day = -1; day < 292_000; day += 1) {
    const d = new Date(day * 86_400_000);
    assert.deepEqual(civilFromDays(day), { year: d.getUTCFullYear(), month: d.getUTCMonth() + 1, dayOfMonth: d.getUTCDate() });
  }
});

test('a pooled writer changes time format between queries; a long tag grows the buffer', () => {
  const w = new CsvPointWriter(16, 'iso');
  w.beginSeries('x');
  w.rows(Float64Array.of(0), Float64Array.of(1), 0, 1);
  assert.equal(new TextDecoder().decode(w.bytes()), '1970-01-01T00:00:00.000Z,x,1\r\n');
  w.reset();
  w.setTimeFormat('ms');
  const long = 'L'.repeat(5000);
  w.beginSeries(long);
  w.rows(Float64Array.of(5, 6), Float64Array.of(1.5, 2.25), 0, 2);
  assert.equal(new TextDecoder().decode(w.bytes()), `5,${long},1.5\r\n6,${long},2.25\r\n`);
});

test('the envelope of a CSV result is the header alone', () => {
  for (const format of ['csv', 'csv-iso'] as const) {
    assert.equal(new TextDecoder().decode(resultHead(format, 3)), 'time,tag,value\r\n');
    assert.equal(resultTail(format).length, 0);
  }
});
