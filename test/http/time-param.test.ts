// The time grammar of query parameters (src/http/time-param.ts): every accepted form against
// an independent reading (Date.parse of a canonical ISO string, or plain arithmetic), and the
// texts Date.parse would take but the grammar refuses.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { MAX_TIME_MS, parseTimeParam } from '../../src/http/time-param.js';

const NOW = Date.UTC(2024, 5, 1, 12, 0, 0, 0);

function ms(text: string, now = NOW): number {
  const parsed = parseTimeParam(text, now);
  assert.ok(parsed.ok, `${JSON.stringify(text)} should be a time, got ${JSON.stringify(parsed)}`);
  return parsed.ms;
}

function refused(text: string, detail?: RegExp): void {
  const parsed = parseTimeParam(text, NOW);
  assert.equal(parsed.ok, false, `${JSON.stringify(text)} should be refused, got ${JSON.stringify(parsed)}`);
  if (detail && !parsed.ok) assert.match(parsed.detail ?? '', detail, JSON.stringify(text));
}

test('epoch milliseconds, from 0 to 2^53-1', () => {
  assert.equal(ms('0'), 0);
  assert.equal(ms('1717200000000'), 1717200000000);
  assert.equal(ms('0001717200000000'), 1717200000000);
  assert.equal(ms(String(MAX_TIME_MS)), MAX_TIME_MS);
  refused(String(MAX_TIME_MS + 1), /2\^53-1/);
  refused('123456789012345678901234567890', /2\^53-1/);
  for (const text of ['-1', '1.5', '1e12', '0x10', ' 1', '1 ', '+1', '']) refused(text);
});

test('ISO 8601 with Z or an offset, with or without seconds and fractions, equal to Date.parse of the same instant', () => {
  const cases: Array<[string, string]> = [
    ['2024-06-01T00:00:00Z', '2024-06-01T00:00:00.000Z'],
    ['2024-06-01t00:00:00z', '2024-06-01T00:00:00.000Z'],
    ['2024-06-01T02:00:00+02:00', '2024-06-01T00:00:00.000Z'],
    ['2024-06-01T02:00:00.250+02:00', '2024-06-01T00:00:00.250Z'],
    ['2024-05-31T19:30:00-04:30', '2024-06-01T00:00:00.000Z'],
    ['2024-06-01T05:45+0545', '2024-06-01T00:00:00.000Z'],
    ['2024-06-01T09:00+09', '2024-06-01T00:00:00.000Z'],
    ['2024-06-01T00:00Z', '2024-06-01T00:00:00.000Z'],
    ['2024-06-01T00:00:00.5Z', '2024-06-01T00:00:00.500Z'],
    ['2024-06-01T00:00:00.05Z', '2024-06-01T00:00:00.050Z'],
    ['2024-06-01T00:00:00.123456789Z', '2024-06-01T00:00:00.123Z'],
    ['2024-06-01T00:00:00.999999Z', '2024-06-01T00:00:00.999Z'],
    ['2024-02-29T23:59:59.999Z', '2024-02-29T23:59:59.999Z'],
    ['2000-02-29T12:00:00Z', '2000-02-29T12:00:00.000Z'],
    ['1970-01-01T00:00:00Z', '1970-01-01T00:00:00.000Z'],
    ['1970-01-01T01:00:00+01:00', '1970-01-01T00:00:00.000Z'],
    ['9999-12-31T23:59:59.999Z', '9999-12-31T23:59:59.999Z'],
    ['2024-06-01', '2024-06-01T00:00:00.000Z'],
    ['2100-03-01', '2100-03-01T00:00:00.000Z'],
  ];
  for (const [text, canonical] of cases) assert.equal(ms(text), Date.parse(canonical), text);
});

test('a space where the offset sign goes is a "+" that a URL decoder turned into one', () => {
  assert.equal(ms('2024-06-01T02:00:00 02:00'), ms('2024-06-01T02:00:00+02:00'));
  assert.equal(ms(new URLSearchParams('t=2024-06-01T02:00:00+02:00').get('t')!), Date.UTC(2024, 5, 1));
});

test('every day of four years (a leap year and 2100 among them) reads as Date.UTC does', () => {
  for (const year of [2023, 2024, 2100, 2400]) {
    for (let day = Date.UTC(year, 0, 1); day < Date.UTC(year + 1, 0, 1); day += 86_400_000) {
      const iso = new Date(day).toISOString();
      assert.equal(ms(iso), day, iso);
      assert.equal(ms(iso.slice(0, 10)), day, iso.slice(0, 10));
    }
  }
});

test('what Date.parse would take but is not a time here', () => {
  refused('1a');
  refused('June 1, 2024');
  refused('2024-06-01T00:00:00', /offset/); // local time: which zone?
  refused('2024-06-01 00:00:00Z');
  refused('2024-6-1');
  refused('24-06-01');
  refused('2024-06');
  refused('2024-02-30', /no day 30/);
  refused('2023-02-29', /no day 29/);
  refused('2024-13-01', /month 13/);
  refused('2024-06-01T24:00:00Z', /time of day/);
  refused('2024-06-01T23:60:00Z', /time of day/);
  refused('2024-06-01T23:59:60Z', /time of day/);
  refused('2024-06-01T00:00:00+24:00', /offset/);
  refused('2024-06-01T00:00:00.Z');
  refused('2024-06-01T00:00:00.1234567890Z');
  refused('2024-06-01T00:00:00ZZ');
  refused('2024-06-01T09+09:00');
  refused('1969-12-31T23:59:59Z', /before 1970/);
  refused('1970-01-01T00:00:00+00:01', /before 1970/);
  refused('0000-01-01', /before 1970/);
});

test('relative to now: units w d h m s ms, largest first, minus or plus', () => {
  assert.equal(ms('now'), NOW);
  assert.equal(ms('now-15m'), NOW - 15 * 60_000);
  assert.equal(ms('now-1h30m'), NOW - 90 * 60_000);
  assert.equal(ms('now-2w3d4h5m6s7ms'), NOW - (2 * 7 * 86_400_000 + 3 * 86_400_000 + 4 * 3_600_000 + 5 * 60_000 + 6000 + 7));
  assert.equal(ms('now-1500ms'), NOW - 1500);
  assert.equal(ms('now-0s'), NOW);
  assert.equal(ms('now+1d'), NOW + 86_400_000);
  assert.equal(ms('now-90m'), ms('now-1h30m'));
  assert.equal(ms('now-100000w'), 0, 'a relative time before the epoch stops there');
  assert.equal(ms('now-1m', 1_000_000_000_000), 999_999_940_000, 'evaluated against the now it is given');
  refused('now-', /duration/);
  refused('now-1', /duration/);
  refused('now-m', /duration/);
  refused('now-1y', /duration/);
  refused('now-1M', /duration/);
  refused('now-1.5h', /duration/);
  refused('now-1h 30m', /duration/);
  refused('now-30m1h', /largest first/);
  refused('now-1h1h', /largest first/);
  refused('now--1h');
  refused('now*1h');
  refused('nowish');
  refused('NOW');
  refused('now-99999999999999999w', /2\^53-1/);
  refused(`now+${MAX_TIME_MS}ms`, /2\^53-1/);
});
