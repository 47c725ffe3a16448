// Emails are account identities, so two spellings that a person would read as
// the same address must not become two accounts, and an address that only
// looks like another (Cyrillic "а" for Latin "a", an invisible character, a
// right-to-left override) must not be accepted at all.
//
// Normal form: NFKC, trimmed, lower-cased; an internationalised domain in its
// canonical Unicode form (so `xn--` and Unicode spellings are one identity).
// Accepted: an ASCII local part of RFC 5322 "atext" characters and dots, and a
// domain that is valid under IDNA (UTS #46) whose labels each use one script
// (Latin with Chinese, Japanese or Korean allowed) and are not a Cyrillic or
// Greek spelling made only of letters that look Latin.

import { domainToASCII, domainToUnicode } from 'node:url';

/** RFC 5321 limits: a path of 256 octets leaves 254 for the address. */
export const MAX_EMAIL_BYTES = 254;
const MAX_LOCAL_BYTES = 64;
const MAX_LABEL_BYTES = 63;

export type EmailCheck = { ok: true; email: string } | { ok: false; error: string };

/** Control (Cc), format (Cf: zero-width, bidi overrides, BOM), separators other than space, unassigned and private use. */
const INVISIBLE = /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}\p{Cn}\p{Co}\p{Cs}]/u;
const LOCAL_PART = /^[a-z0-9!#$%&'*+/=?^_`{|}~-]+(\.[a-z0-9!#$%&'*+/=?^_`{|}~-]+)*$/;
const ASCII_LABEL = /^(?!-)[a-z0-9-]+(?<!-)$/;

/** NFKC + trim + lower-case; what every lookup by email uses. */
export function normalizeEmail(email: string): string {
  return email.normalize('NFKC').trim().toLowerCase();
}

/** Normalises and validates an address; the error names what is wrong with it. */
export function checkEmail(raw: string): EmailCheck {
  // Refuse absurd input before normalising it (NFKC can grow a string).
  if (raw.length > 4 * MAX_EMAIL_BYTES) return fail(`email must be at most ${MAX_EMAIL_BYTES} bytes`);
  const email = normalizeEmail(raw);
  if (email.length === 0) return fail('email is required');
  if (INVISIBLE.test(email)) return fail('email must not contain control, invisible or text-direction characters');
  if (/\s/u.test(email)) return fail('email must not contain spaces');
  if (Buffer.byteLength(email) > MAX_EMAIL_BYTES) return fail(`email must be at most ${MAX_EMAIL_BYTES} bytes`);
  const at = email.lastIndexOf('@');
  if (at <= 0 || at === email.length - 1) return fail('email must look like name@host');
  const local = email.slice(0, at);
  const domain = email.slice(at + 1);
  if (local.includes('@')) return fail('email must contain exactly one @');
  if (/[^\x21-\x7e]/.test(local)) return fail('the part of the email before @ must be ASCII letters, digits and punctuation');
  if (!LOCAL_PART.test(local)) return fail('the part of the email before @ is malformed (allowed: letters, digits, !#$%&\'*+/=?^_`{|}~- and single dots inside)');
  if (local.length > MAX_LOCAL_BYTES) return fail(`the part of the email before @ must be at most ${MAX_LOCAL_BYTES} characters`);
  const host = checkDomain(domain);
  if (!host.ok) return host;
  return { ok: true, email: `${local}@${host.email}` };
}

function checkDomain(domain: string): EmailCheck {
  const isAscii = !/[^\x00-\x7f]/.test(domain);
  if (isAscii && !domain.split('.').some((label) => label.startsWith('xn--'))) {
    return asciiLabelsOk(domain) ? { ok: true, email: domain } : fail(malformedDomain);
  }
  // Internationalised: valid only if IDNA maps it to an ASCII form, which is
  // what the address really is; keep its canonical Unicode spelling.
  const ascii = domainToASCII(domain);
  if (!ascii || !asciiLabelsOk(ascii)) return fail('the domain of the email is not a valid internationalised domain name');
  const unicode = domainToUnicode(ascii);
  if (!unicode || INVISIBLE.test(unicode)) return fail('the domain of the email is not a valid internationalised domain name');
  for (const label of unicode.split('.')) {
    const scripts = scriptsOf(label);
    const mixed = scripts.size > 1 && !(scripts.size === 2 && scripts.has('Latin') && scripts.has('CJK'));
    if (mixed) {
      return fail(`the domain label "${label}" mixes letters of different scripts (${[...scripts].join(', ')}), which makes it look like another address`);
    }
    if (scripts.size > 0 && !scripts.has('Latin') && LOOKS_LATIN.test(label)) {
      return fail(`the domain label "${label}" is spelled with letters that look like Latin ones, which makes it look like another address`);
    }
  }
  return { ok: true, email: unicode };
}

const malformedDomain = 'the domain of the email is malformed (labels of letters, digits and inner hyphens, separated by single dots)';

function asciiLabelsOk(domain: string): boolean {
  if (domain.length > 253) return false;
  return domain.split('.').every((label) => label.length <= MAX_LABEL_BYTES && ASCII_LABEL.test(label));
}

/**
 * Scripts a label may not mix (UTS #39 "highly restrictive": one script, or
 * Latin with Chinese/Japanese/Korean, which count as one here). Letters of
 * scripts not listed count as one "other" script.
 */
const SCRIPTS: ReadonlyArray<[string, RegExp]> = [
  ['Latin', /\p{Script=Latin}/u],
  ['Cyrillic', /\p{Script=Cyrillic}/u],
  ['Greek', /\p{Script=Greek}/u],
  ['Armenian', /\p{Script=Armenian}/u],
  ['Georgian', /\p{Script=Georgian}/u],
  ['Hebrew', /\p{Script=Hebrew}/u],
  ['Arabic', /\p{Script=Arabic}/u],
  ['Devanagari', /\p{Script=Devanagari}/u],
  ['Bengali', /\p{Script=Bengali}/u],
  ['Tamil', /\p{Script=Tamil}/u],
  ['Thai', /\p{Script=Thai}/u],
  ['CJK', /[\p{Script=Han}\p{Script=Hiragana}\p{Script=Katakana}\p{Script=Bopomofo}\p{Script=Hangul}]/u],
  ['Cherokee', /\p{Script=Cherokee}/u],
];

/** A Cyrillic or Greek label made only of letters that pass for Latin ones ("аррӏе"). */
const LOOKS_LATIN = /^[-0-9аеорсухѕіјӏһԁԛԝүьαονιкκρυχγ]+$/u;

/** The scripts of the letters of `text` (digits, hyphens, dots and combining marks belong to none). */
function scriptsOf(text: string): Set<string> {
  const found = new Set<string>();
  for (const ch of text) {
    if (!/\p{L}/u.test(ch)) continue;
    const named = SCRIPTS.find(([, pattern]) => pattern.test(ch));
    found.add(named ? named[0] : 'other');
  }
  return found;
}

function fail(error: string): EmailCheck {
  return { ok: false, error };
}
