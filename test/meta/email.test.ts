import assert from 'node:assert/strict';
import { test } from 'node:test';
import { checkEmail, normalizeEmail } from '../../src/meta/email.js';

const accepted = (raw: string) => {
  const result = checkEmail(raw);
  assert.ok(result.ok, `${JSON.stringify(raw)} refused: ${result.ok ? '' : result.error}`);
  return result.email;
};
const refused = (raw: string, pattern: RegExp) => {
  const result = checkEmail(raw);
  assert.ok(!result.ok, `${JSON.stringify(raw)} accepted as ${result.ok ? result.email : ''}`);
  assert.match(result.error, pattern, JSON.stringify(raw));
};

test('emails are normalised: NFKC, trimmed, lower-cased', () => {
  assert.equal(normalizeEmail('  Alice@Plant.Test '), 'alice@plant.test');
  assert.equal(accepted('ＡＬＩＣＥ＠ｐｌａｎｔ．ｔｅｓｔ'), 'alice@plant.test', 'full-width forms fold to ASCII');
  assert.equal(accepted('admin@localhost'), 'admin@localhost', 'a one-label domain (the default admin) is fine');
  assert.equal(accepted("o'brien+tag@sub.plant-1.test"), "o'brien+tag@sub.plant-1.test");
});

test('an internationalised domain is kept in one canonical spelling, Unicode or xn--', () => {
  assert.equal(accepted('user@Bücher.de'), 'user@bücher.de');
  assert.equal(accepted('user@xn--bcher-kva.de'), 'user@bücher.de');
  assert.equal(accepted('user@пример.рф'), 'user@пример.рф', 'a domain in one non-Latin script');
  assert.equal(accepted('user@例え.jp'), 'user@例え.jp', 'CJK with a Latin label');
});

test('control, invisible and text-direction characters are refused', () => {
  for (const raw of ['ad\u200Bmin@plant.test', 'a\u0000b@plant.test', 'a\u202Eb@plant.test', 'ab@pla\u2066nt.test', 'a\u00ADb@plant.test', 'a\u0007b@plant.test', 'a\uFEFFb@plant.test']) {
    refused(raw, /control, invisible or text-direction/);
  }
});

test('look-alike addresses are refused with a reason', () => {
  refused('аdmin@plant.test', /before @ must be ASCII/); // Cyrillic а
  refused('admin@аpple.com', /mixes letters of different scripts \(Cyrillic, Latin\)/);
  refused('admin@xn--pple-43d.com', /mixes letters of different scripts/); // the same, spelled xn--
  refused('admin@аррӏе.com', /letters that look like Latin ones/); // whole-script Cyrillic look-alike
  refused('admin@ex\u0430mple.test', /mixes/);
});

test('malformed and over-long addresses are refused', () => {
  for (const raw of ['', '   ', 'no-at-sign', '@plant.test', 'alice@', 'a@@plant.test', 'a@b@plant.test', '.a@plant.test', 'a..b@plant.test', 'a.@plant.test',
    'a b@plant.test', 'a@plant..test', 'a@-plant.test', 'a@plant.test.', 'a@pl_ant.test', '"quoted"@plant.test', 'a@[127.0.0.1]', 'a@xn--zz.test']) {
    assert.equal(checkEmail(raw).ok, false, JSON.stringify(raw));
  }
  refused(`${'a'.repeat(65)}@plant.test`, /at most 64/);
  refused(`a@${Array.from({ length: 5 }, () => 'b'.repeat(60)).join('.')}.test`, /at most 254 bytes/);
  refused(`${'a'.repeat(100_000)}@plant.test`, /at most 254 bytes/);
});
