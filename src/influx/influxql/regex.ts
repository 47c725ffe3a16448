/**
 * The syntax check InfluxDB applies to a regular expression of a query: Go's regexp (RE2, Perl
 * flavour), not JavaScript's. Grafana writes `/(?i)cpu/`, which JavaScript refuses and RE2
 * takes; `/a\1/` is the other way round. regexSyntaxError() names the first problem as Go's
 * regexp.Compile words it (`error parsing regexp: missing closing ): `(``), or gives null for a
 * valid RE2 expression. Pure TypeScript.
 *
 * Checked, in Go's order while reading left to right: groups `( )`, `(?flags)`,
 * `(?flags:…)`, `(?P<name>…)`; repetitions `* + ? {n} {n,} {n,m}` (each with a lazy `?`),
 * which need something before them, may not follow one another (`a**`) and count up to 1000
 * (`{` not starting a valid count is a literal); classes `[…]` with ranges, `[:alpha:]` names,
 * `\d \s \w`, `\pL`/`\p{Greek}`; escapes (punctuation, `\a \f \n \r \t \v`, octal, `\x41`,
 * `\x{263a}`, `\A \z \b \B`, `\Q…\E`). Not checked: the size limits of compiled programs and of
 * nested repetitions.
 */

const POSIX_CLASSES = new Set(['alnum', 'alpha', 'ascii', 'blank', 'cntrl', 'digit', 'graph', 'lower', 'print', 'punct', 'space', 'upper', 'word', 'xdigit']);

function fail(code: string, expr: string): string {
  return `error parsing regexp: ${code}: \`${expr}\``;
}

function isAlnum(c: string): boolean {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

function isOctal(c: string | undefined): boolean {
  return c !== undefined && c >= '0' && c <= '7';
}

function isHex(c: string | undefined): boolean {
  return c !== undefined && c.length === 1 && ((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'));
}

function isWordChar(c: string): boolean {
  return isAlnum(c) || c === '_';
}

function isUpper(c: string | undefined): boolean {
  return c !== undefined && c >= 'A' && c <= 'Z';
}

function charAt(s: string, i: number): string {
  const cp = s.codePointAt(i);
  return cp === undefined ? '' : String.fromCodePoint(cp);
}

/** Go's Unicode class names: Any, the general categories (`L`, `Lu`, …) and the script names. */
function isUnicodeClassName(name: string): boolean {
  if (name === 'Any') return true;
  if (name === '' || Array.from(name).some((c) => !isWordChar(c) || (c >= '0' && c <= '9'))) return false;
  try {
    if (isUpper(name[0]) && (name.length === 1 || (name.length === 2 && name[1]! >= 'a' && name[1]! <= 'z'))) {
      new RegExp(`\\p{gc=${name}}`, 'u');
      return true;
    }
  } catch {
    // not a category: maybe a script
  }
  try {
    new RegExp(`\\p{sc=${name}}`, 'u');
  } catch {
    return false;
  }
  // JavaScript also takes the four-letter codes (`Grek`), Go only the names.
  return isUpper(name[0]) && (name.length > 4 || SHORT_SCRIPT_NAMES.has(name));
}

const SHORT_SCRIPT_NAMES = new Set(['Ahom', 'Cham', 'Han', 'Lao', 'Lisu', 'Miao', 'Modi', 'Mro', 'Newa', 'Nko', 'Thai', 'Toto', 'Vai', 'Yi']);

/** Go's error text for `source`, or null when RE2 accepts it. */
export function regexSyntaxError(source: string): string | null {
  let i = 0;
  let depth = 0;
  /** Whether the last thing read can be repeated (false at the start, after `(` and `|`). */
  let operand = false;
  /** Where the previous item started, when that item was a repetition. */
  let lastRepeat = -1;

  /** One escape `\…` at `at` (ordinary, not a class or an assertion): the index past it, or an error. */
  const escape = (at: number): number | string => {
    let t = at + 1;
    if (t >= source.length) return fail('trailing backslash at end of expression', '');
    const c = charAt(source, t);
    t += c.length;
    if (c.length === 1 && c < '\u0080' && !isAlnum(c)) return t;
    if (c >= '1' && c <= '7' && !isOctal(source[t])) return fail('invalid escape sequence', source.slice(at, t));
    if (c >= '0' && c <= '7') {
      for (let k = 1; k < 3 && isOctal(source[t]); k++) t++;
      return t;
    }
    if (c === 'x') {
      if (t >= source.length) return fail('invalid escape sequence', source.slice(at, t));
      if (source[t] === '{') {
        t++;
        let digits = 0;
        let value = 0;
        for (;;) {
          if (t >= source.length) return fail('invalid escape sequence', source.slice(at, t));
          const d = charAt(source, t);
          t += d.length;
          if (d === '}') break;
          if (!isHex(d)) return fail('invalid escape sequence', source.slice(at, t));
          value = value * 16 + parseInt(d, 16);
          if (value > 0x10ffff) return fail('invalid escape sequence', source.slice(at, t));
          digits++;
        }
        return digits === 0 ? fail('invalid escape sequence', source.slice(at, t)) : t;
      }
      const x = charAt(source, t);
      t += x.length;
      const y = charAt(source, t);
      t += y.length;
      return isHex(x) && isHex(y) ? t : fail('invalid escape sequence', source.slice(at, t));
    }
    if ('afnrtv'.includes(c)) return t;
    return fail('invalid escape sequence', source.slice(at, t));
  };

  /** `\pN`, `\p{Name}`, `\PN`, `\P{^Name}` at `at`: the index past it, or an error. */
  const unicodeClass = (at: number): number | string => {
    let t = at + 2;
    let seq: string;
    let name: string;
    if (source[t] !== '{') {
      const c = charAt(source, t);
      t += c.length;
      seq = source.slice(at, t);
      name = c;
    } else {
      const end = source.indexOf('}', at);
      if (end < 0) return fail('invalid character class range', source.slice(at));
      seq = source.slice(at, end + 1);
      name = source.slice(at + 3, end);
      t = end + 1;
    }
    if (name.startsWith('^')) name = name.slice(1);
    return isUnicodeClassName(name) ? t : fail('invalid character class range', seq);
  };

  /** A class `[…]` at `at`: the index past it, or an error. */
  const charClass = (at: number): number | string => {
    const whole = source.slice(at);
    let t = at + 1;
    if (source[t] === '^') t++;
    let first = true;
    while (t >= source.length || source[t] !== ']' || first) {
      first = false;
      if (source[t] === '[' && source[t + 1] === ':') {
        const close = source.indexOf(':]', t + 2);
        if (close >= 0) {
          const name = source.slice(t, close + 2);
          const inner = source.slice(t + 2, close);
          const bare = inner.startsWith('^') ? inner.slice(1) : inner;
          if (!POSIX_CLASSES.has(bare)) return fail('invalid character class range', name);
          t = close + 2;
          continue;
        }
      }
      if (source[t] === '\\' && (source[t + 1] === 'p' || source[t + 1] === 'P')) {
        const past = unicodeClass(t);
        if (typeof past === 'string') return past;
        t = past;
        continue;
      }
      if (source[t] === '\\' && t + 1 < source.length && 'dDsSwW'.includes(source[t + 1]!)) {
        t += 2;
        continue;
      }
      const rangeStart = t;
      const lo = classChar(t, whole);
      if (typeof lo === 'string') return lo;
      t = lo.next;
      if (source[t] === '-' && t + 1 < source.length && source[t + 1] !== ']') {
        const hi = classChar(t + 1, whole);
        if (typeof hi === 'string') return hi;
        if (hi.cp < lo.cp) return fail('invalid character class range', source.slice(rangeStart, hi.next));
        t = hi.next;
      }
    }
    return t + 1;
  };

  /** One character of a class at `at`, with its code point. */
  const classChar = (at: number, whole: string): { cp: number; next: number } | string => {
    if (at >= source.length) return fail('missing closing ]', whole);
    if (source[at] !== '\\') {
      const c = charAt(source, at);
      return { cp: c.codePointAt(0)!, next: at + c.length };
    }
    const past = escape(at);
    if (typeof past === 'string') return past;
    return { cp: escapedCodePoint(source.slice(at, past)), next: past };
  };

  const repeat = (at: number, after: number): string | null => {
    let past = after;
    if (source[past] === '?') past++;
    if (lastRepeat >= 0) return fail('invalid nested repetition operator', source.slice(lastRepeat, past));
    if (!operand) return fail('missing argument to repetition operator', source.slice(at, past));
    lastRepeat = at;
    i = past;
    return null;
  };

  while (i < source.length) {
    const c = source[i]!;
    const repeatBefore = lastRepeat;
    lastRepeat = -1;
    switch (c) {
      case '(': {
        if (source[i + 1] === '?') {
          if (source.length - i > 4 && source[i + 2] === 'P' && source[i + 3] === '<') {
            const end = source.indexOf('>', i);
            if (end < 0) return fail('invalid named capture', source.slice(i));
            const name = source.slice(i + 4, end);
            if (name === '' || Array.from(name).some((ch) => !isWordChar(ch))) return fail('invalid named capture', source.slice(i, end + 1));
            depth++;
            operand = false;
            i = end + 1;
            break;
          }
          let t = i + 2;
          let negated = false;
          let sawFlag = false;
          let done = false;
          while (t < source.length && !done) {
            const f = charAt(source, t);
            t += f.length;
            if ('imsU'.includes(f)) {
              sawFlag = true;
            } else if (f === '-' && !negated) {
              negated = true;
              sawFlag = false;
            } else if ((f === ':' || f === ')') && (!negated || sawFlag)) {
              if (f === ':') {
                depth++;
                operand = false;
              }
              done = true;
            } else {
              break;
            }
          }
          if (!done) return fail('invalid or unsupported Perl syntax', source.slice(i, t));
          // `(?i)` changes flags only: what can be repeated stays as it was.
          i = t;
          break;
        }
        depth++;
        operand = false;
        i++;
        break;
      }
      case '|':
        operand = false;
        i++;
        break;
      case ')':
        if (depth === 0) return fail('unexpected )', source);
        depth--;
        operand = true;
        i++;
        break;
      case '^':
      case '$':
      case '.':
        operand = true;
        i++;
        break;
      case '[': {
        const past = charClass(i);
        if (typeof past === 'string') return past;
        operand = true;
        i = past;
        break;
      }
      case '*':
      case '+':
      case '?': {
        lastRepeat = repeatBefore;
        const problem = repeat(i, i + 1);
        if (problem !== null) return problem;
        break;
      }
      case '{': {
        const count = repeatCount(source, i);
        if (count === null) {
          // Not a count: a literal `{`.
          operand = true;
          i++;
          break;
        }
        const { min, max, after } = count;
        if (min < 0 || min > 1000 || max > 1000 || (max >= 0 && min > max)) return fail('invalid repeat count', source.slice(i, after));
        lastRepeat = repeatBefore;
        const problem = repeat(i, after);
        if (problem !== null) return problem;
        break;
      }
      case '\\': {
        const next = source[i + 1];
        if (next !== undefined && 'AbBz'.includes(next)) {
          operand = true;
          i += 2;
          break;
        }
        if (next === 'C') return fail('invalid escape sequence', '\\C');
        if (next === 'Q') {
          // Literal text up to `\E` (or the end).
          const end = source.indexOf('\\E', i + 2);
          const stop = end < 0 ? source.length : end;
          if (stop > i + 2) operand = true;
          i = end < 0 ? source.length : end + 2;
          break;
        }
        if (next === 'p' || next === 'P') {
          const past = unicodeClass(i);
          if (typeof past === 'string') return past;
          operand = true;
          i = past;
          break;
        }
        if (next !== undefined && 'dDsSwW'.includes(next)) {
          operand = true;
          i += 2;
          break;
        }
        const past = escape(i);
        if (typeof past === 'string') return past;
        operand = true;
        i = past;
        break;
      }
      default:
        operand = true;
        i += charAt(source, i).length;
    }
  }
  return depth > 0 ? fail('missing closing )', source) : null;
}

/** A decimal number without leading zeros at `i`: its value (-1 when too large) and end. */
function repeatNumber(s: string, i: number): { n: number; end: number } | null {
  if (s[i] === undefined || s[i]! < '0' || s[i]! > '9') return null;
  if (s[i] === '0' && s[i + 1] !== undefined && s[i + 1]! >= '0' && s[i + 1]! <= '9') return null;
  let end = i;
  while (s[end] !== undefined && s[end]! >= '0' && s[end]! <= '9') end++;
  return { n: end - i > 8 ? -1 : Number(s.slice(i, end)), end };
}

/** `{n}`, `{n,}`, `{n,m}` at `i` (max -1 when open), or null when `{` starts no count. */
function repeatCount(s: string, i: number): { min: number; max: number; after: number } | null {
  const lo = repeatNumber(s, i + 1);
  if (lo === null) return null;
  let max = lo.n;
  let min = lo.n;
  let t = lo.end;
  if (s[t] === ',') {
    t++;
    if (s[t] === '}') {
      max = -1;
    } else {
      const hi = repeatNumber(s, t);
      if (hi === null) return null;
      max = hi.n;
      if (max < 0) min = -1;
      t = hi.end;
    }
  }
  if (s[t] !== '}') return null;
  return { min, max, after: t + 1 };
}

/** The code point an escape that escape() accepted stands for. */
function escapedCodePoint(text: string): number {
  const c = text[1]!;
  if (c === 'x') return parseInt(text[2] === '{' ? text.slice(3, -1) : text.slice(2), 16);
  if (c >= '0' && c <= '7') return parseInt(text.slice(1), 8);
  const controls: Record<string, number> = { a: 7, f: 12, n: 10, r: 13, t: 9, v: 11 };
  return controls[c] ?? text.codePointAt(1)!;
}
