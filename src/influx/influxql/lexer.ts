/**
 * The InfluxQL tokenizer (../shared/WIRE.md part 3 "InfluxDB 1.x compatibility at the root"),
 * behaving as InfluxDB 1.6's scanner does, so that parser.ts can answer the errors InfluxDB
 * answers, at the positions InfluxDB names. Pure TypeScript: no Node built-in, no package.
 *
 * Tokens:
 * - identifiers: a letter or `_` then letters, digits and `_` (ASCII only); keywords are
 *   identifiers looked up case-insensitively (tokens.ts KEYWORDS, and AND, OR, TRUE, FALSE);
 *   `"double quoted"` identifiers are never keywords;
 * - strings: `'single quoted'`; in both quoted forms the escapes are `\n` `\\` `\"` `\'`, any
 *   other escape is a BADESCAPE token, a newline or the end of the text before the closing quote
 *   a BADSTRING token;
 * - numbers: digits are an INTEGER, digits with a fraction (`1.5`, `.5`) a NUMBER (`1.` is the
 *   NUMBER `1`: the dot is eaten, as InfluxDB does); no exponent, no sign (a sign is an operator);
 * - durations: digits followed at once by letters or `µ`, then any letters, digits and `µ`
 *   (`10s`, `1h30m`, `5ms`, `10u`, `10µ`); duration.ts checks the units afterwards;
 * - regular expressions `/…/` only when the parser asks (scanRegex), where InfluxDB's grammar
 *   wants one: elsewhere `/` is division. `\/` stands for `/`; any other backslash is kept;
 * - operators `+ - * / % & | ^ = != <> =~ !~ < <= > >=`, `( ) , ; . : ::`, `$name` bound
 *   parameters, comments `-- to the end of the line` and `/* … *\/`, whitespace (space, tab,
 *   newline; CR and CRLF count as one newline).
 * Anything else is an ILLEGAL token holding the character.
 *
 * Positions are InfluxDB's: line and char count from 1, char counts code points, and they are
 * taken where InfluxDB's reader stands, quirks included: a quoted string or a regular expression
 * is placed on the character before its opening quote or slash, and the end of the text is one
 * char further once the reader has read past it (after an identifier, whitespace, a comment or
 * a peek of the parser). Byte-for-byte equal error texts need these. `start`/`end` are the true
 * UTF-16 offsets of the token's text.
 */

import type { Position } from './ast.js';
import { keywordOf, type Token, type TokenKind } from './tokens.js';

/** The reader's end-of-text mark (a NUL character reads as the end too, as in InfluxDB). */
export const EOF_CH = -1;
const LF = 0x0a;
const CR = 0x0d;
const TAB = 0x09;
const SPACE = 0x20;
const DQUOTE = 0x22;
const SQUOTE = 0x27;
const BACKSLASH = 0x5c;
const SLASH = 0x2f;
const STAR = 0x2a;
const DOT = 0x2e;
const MICRO = 0xb5;

export function isWhitespace(ch: number): boolean {
  return ch === SPACE || ch === TAB || ch === LF;
}
function isLetter(ch: number): boolean {
  return (ch >= 0x61 && ch <= 0x7a) || (ch >= 0x41 && ch <= 0x5a);
}
function isDigit(ch: number): boolean {
  return ch >= 0x30 && ch <= 0x39;
}
function isIdentChar(ch: number): boolean {
  return isLetter(ch) || isDigit(ch) || ch === 0x5f;
}

interface Rune {
  ch: number;
  /** 0-based, as the reader counts. */
  line: number;
  col: number;
  off: number;
}

/**
 * Code points with a three-deep unread, counting lines and chars as InfluxDB's reader does:
 * the end of the text is read as many times as asked, and its char is one further from the
 * second time on; after a NUL nothing but a newline moves the char any more.
 */
class RuneReader {
  private idx = 0;
  private line = 0;
  private col = 0;
  private sawEnd = false;
  private readonly ring: Rune[] = [
    { ch: 0, line: 0, col: 0, off: 0 },
    { ch: 0, line: 0, col: 0, off: 0 },
    { ch: 0, line: 0, col: 0, off: 0 },
  ];
  private at = 0;
  private pending = 0;

  /** `base`: the offset of `text` in a larger text, added to every offset. */
  constructor(
    private readonly text: string,
    private readonly base: number,
  ) {}

  read(): Rune {
    if (this.pending > 0) {
      this.pending--;
      return this.curr();
    }
    const off = this.base + this.idx;
    let ch = EOF_CH;
    if (this.idx < this.text.length) {
      ch = this.text.codePointAt(this.idx)!;
      this.idx += ch > 0xffff ? 2 : 1;
      if (ch === 0) ch = EOF_CH;
      else if (ch === CR) {
        if (this.text.charCodeAt(this.idx) === LF) this.idx++;
        ch = LF;
      }
    }
    this.at = (this.at + 1) % 3;
    const rune: Rune = { ch, line: this.line, col: this.col, off };
    this.ring[this.at] = rune;
    if (ch === LF) {
      this.line++;
      this.col = 0;
    } else if (!this.sawEnd) {
      this.col++;
    }
    if (ch === EOF_CH) this.sawEnd = true;
    return rune;
  }

  unread(): void {
    this.pending++;
  }

  /** The last rune read and not unread. */
  curr(): Rune {
    return this.ring[(this.at - this.pending + 3) % 3]!;
  }

  /** Offset of the next rune read(). */
  nextOffset(): number {
    return this.pending > 0 ? this.ring[(this.at - this.pending + 4) % 3]!.off : this.base + this.idx;
  }
}

function position(rune: Rune): Position {
  return { offset: rune.off, line: rune.line + 1, char: rune.col + 1 };
}

/** Characters to tokens, one at a time; the parser asks for a regex where one may stand. */
export class Lexer {
  private readonly r: RuneReader;

  /** `offsetBase`: where `text` starts in the text offsets should count in. */
  constructor(text: string, offsetBase = 0) {
    this.r = new RuneReader(text, offsetBase);
  }

  /** The next code point without consuming it (EOF_CH at the end, which counts as a read). */
  peekRune(): number {
    const rune = this.r.read();
    if (rune.ch !== EOF_CH) this.r.unread();
    return rune.ch;
  }

  /** The next token, never a REGEX. */
  scan(): Token {
    const start = this.r.nextOffset();
    const first = this.r.read();
    const ch = first.ch;
    const pos = position(first);
    const done = (kind: TokenKind, lit = ''): Token => ({ kind, lit, pos, start, end: this.r.nextOffset() });

    if (isWhitespace(ch)) return this.scanWhitespace(start);
    if (isLetter(ch) || ch === 0x5f || ch === DQUOTE) {
      this.r.unread();
      return this.scanIdent(true, start);
    }
    if (isDigit(ch)) return this.scanNumber(start);

    switch (ch) {
      case EOF_CH:
        return done('EOF');
      case SQUOTE:
        return this.scanString(start);
      case DOT: {
        const next = this.r.read().ch;
        this.r.unread();
        return isDigit(next) ? this.scanNumber(start) : done('.');
      }
      case 0x24: {
        // `$name`: a bound parameter.
        const ident = this.scanIdent(false, start);
        const kind = ident.kind === 'IDENT' ? 'BOUNDPARAM' : ident.kind;
        return { kind, lit: `$${ident.lit}`, pos, start, end: ident.end };
      }
      case 0x2b:
        return done('+');
      case 0x2d: {
        if (this.r.read().ch === 0x2d) {
          this.skipLine();
          return done('COMMENT');
        }
        this.r.unread();
        return done('-');
      }
      case STAR:
        return done('*');
      case SLASH: {
        if (this.r.read().ch === STAR) return this.skipBlockComment() ? done('COMMENT') : done('ILLEGAL');
        this.r.unread();
        return done('/');
      }
      case 0x25:
        return done('%');
      case 0x26:
        return done('&');
      case 0x7c:
        return done('|');
      case 0x5e:
        return done('^');
      case 0x3d: {
        if (this.r.read().ch === 0x7e) return done('=~');
        this.r.unread();
        return done('=');
      }
      case 0x21: {
        const next = this.r.read().ch;
        if (next === 0x3d) return done('!=');
        if (next === 0x7e) return done('!~');
        this.r.unread();
        return done('ILLEGAL', '!');
      }
      case 0x3e: {
        if (this.r.read().ch === 0x3d) return done('>=');
        this.r.unread();
        return done('>');
      }
      case 0x3c: {
        const next = this.r.read().ch;
        if (next === 0x3d) return done('<=');
        if (next === 0x3e) return done('!=');
        this.r.unread();
        return done('<');
      }
      case 0x28:
        return done('(');
      case 0x29:
        return done(')');
      case 0x2c:
        return done(',');
      case 0x3b:
        return done(';');
      case 0x3a: {
        if (this.r.read().ch === 0x3a) return done('::');
        this.r.unread();
        return done(':');
      }
    }
    return done('ILLEGAL', String.fromCodePoint(ch));
  }

  /**
   * A regular expression `/…/` from the next character: REGEX with its source (`\/` read as
   * `/`), or BADREGEX (no opening slash, a newline, or the end of the text before the closing
   * slash).
   */
  scanRegex(): Token {
    const start = this.r.nextOffset();
    const pos = position(this.r.curr());
    let source = '';
    let ok = this.r.read().ch === SLASH;
    while (ok) {
      const ch = this.r.read().ch;
      if (ch === SLASH) break;
      if (ch === EOF_CH || ch === LF) {
        ok = false;
        break;
      }
      if (ch === BACKSLASH) {
        const next = this.r.read().ch;
        if (next === EOF_CH) {
          ok = false;
          break;
        }
        if (next === SLASH) {
          source += '/';
        } else {
          // Kept as written: the next character is read again on its own.
          this.r.unread();
          source += '\\';
        }
        continue;
      }
      source += String.fromCodePoint(ch);
    }
    const end = this.r.nextOffset();
    return ok ? { kind: 'REGEX', lit: source, pos, start, end } : { kind: 'BADREGEX', lit: '', pos, start, end };
  }

  private scanWhitespace(start: number): Token {
    const first = this.r.curr();
    let text = String.fromCodePoint(first.ch);
    for (;;) {
      const ch = this.r.read().ch;
      if (ch === EOF_CH) break;
      if (!isWhitespace(ch)) {
        this.r.unread();
        break;
      }
      text += String.fromCodePoint(ch);
    }
    return { kind: 'WS', lit: text, pos: position(first), start, end: this.r.nextOffset() };
  }

  /** An identifier, bare (a keyword when `lookup`) or double-quoted. */
  private scanIdent(lookup: boolean, start: number): Token {
    const first = this.r.read();
    this.r.unread();
    const pos = position(first);
    let name = '';
    for (;;) {
      const ch = this.r.read().ch;
      if (ch === EOF_CH) break;
      if (ch === DQUOTE) {
        // A quoted part ends the identifier (what came before it is dropped, as in InfluxDB).
        const quoted = this.scanString(start);
        if (quoted.kind !== 'STRING') return quoted;
        return { kind: 'IDENT', lit: quoted.lit, pos, start, end: quoted.end };
      }
      if (!isIdentChar(ch)) {
        this.r.unread();
        break;
      }
      this.r.unread();
      name += this.scanBareIdent();
    }
    const end = this.r.nextOffset();
    if (lookup) {
      const keyword = keywordOf(name);
      if (keyword !== null) return { kind: keyword, lit: '', pos, start, end };
    }
    return { kind: 'IDENT', lit: name, pos, start, end };
  }

  private scanBareIdent(): string {
    let name = '';
    for (;;) {
      const ch = this.r.read().ch;
      if (ch === EOF_CH) break;
      if (!isIdentChar(ch)) {
        this.r.unread();
        break;
      }
      name += String.fromCodePoint(ch);
    }
    return name;
  }

  /** A quoted text; its opening quote has just been read. */
  private scanString(start: number): Token {
    this.r.unread();
    const pos = position(this.r.curr());
    const quote = this.r.read().ch;
    let value = '';
    for (;;) {
      const ch = this.r.read().ch;
      if (ch === quote) return { kind: 'STRING', lit: value, pos, start, end: this.r.nextOffset() };
      if (ch === EOF_CH || ch === LF) return { kind: 'BADSTRING', lit: value, pos, start, end: this.r.nextOffset() };
      if (ch === BACKSLASH) {
        const next = this.r.read();
        if (next.ch === 0x6e) value += '\n';
        else if (next.ch === BACKSLASH) value += '\\';
        else if (next.ch === DQUOTE) value += '"';
        else if (next.ch === SQUOTE) value += "'";
        else {
          // InfluxDB would print a NUL for a backslash at the very end; the backslash alone is kept.
          const lit = next.ch === EOF_CH ? '\\' : `\\${String.fromCodePoint(next.ch)}`;
          return { kind: 'BADESCAPE', lit, pos: position(this.r.curr()), start, end: this.r.nextOffset() };
        }
        continue;
      }
      value += String.fromCodePoint(ch);
    }
  }

  /** A number or a duration; its first character (a digit, or a dot before a digit) has just been read. */
  private scanNumber(start: number): Token {
    const first = this.r.curr();
    const pos = position(first);
    if (first.ch === DOT) {
      this.r.read();
      this.r.unread();
    }
    this.r.unread();
    let text = this.scanDigits();
    let decimal = false;
    if (this.r.read().ch === DOT) {
      decimal = true;
      const next = this.r.read().ch;
      if (isDigit(next)) text += `.${String.fromCodePoint(next)}${this.scanDigits()}`;
      else this.r.unread();
    } else {
      this.r.unread();
    }
    if (decimal) return { kind: 'NUMBER', lit: text, pos, start, end: this.r.nextOffset() };

    const unit = this.r.read().ch;
    if (!isLetter(unit) && unit !== MICRO) {
      this.r.unread();
      return { kind: 'INTEGER', lit: text, pos, start, end: this.r.nextOffset() };
    }
    text += String.fromCodePoint(unit);
    for (;;) {
      const ch = this.r.read().ch;
      if (!isLetter(ch) && ch !== MICRO) {
        this.r.unread();
        break;
      }
      text += String.fromCodePoint(ch);
    }
    for (;;) {
      const ch = this.r.read().ch;
      if (!isLetter(ch) && ch !== MICRO && !isDigit(ch)) {
        this.r.unread();
        break;
      }
      text += String.fromCodePoint(ch);
    }
    return { kind: 'DURATIONVAL', lit: text, pos, start, end: this.r.nextOffset() };
  }

  private scanDigits(): string {
    let digits = '';
    for (;;) {
      const ch = this.r.read().ch;
      if (!isDigit(ch)) {
        this.r.unread();
        return digits;
      }
      digits += String.fromCodePoint(ch);
    }
  }

  private skipLine(): void {
    for (;;) {
      const ch = this.r.read().ch;
      if (ch === LF || ch === EOF_CH) return;
    }
  }

  /** After `/*`: true at `*\/`, false at the end of the text. */
  private skipBlockComment(): boolean {
    for (;;) {
      let ch = this.r.read().ch;
      if (ch === EOF_CH) return false;
      if (ch !== STAR) continue;
      do ch = this.r.read().ch;
      while (ch === STAR);
      if (ch === SLASH) return true;
      if (ch === EOF_CH) return false;
    }
  }
}

/**
 * The lexer behind a three-token push-back, the parser's view: scan() and scanRegex() take the
 * next token (a pushed-back one first, whatever was asked), unscan() pushes the last one back.
 * peekRune() looks at the characters past what the lexer has read, not past the push-back, as
 * InfluxDB's parser does.
 */
export class TokenStream {
  private readonly lexer: Lexer;
  private readonly ring: Token[] = [];
  private at = 0;
  private pending = 0;

  constructor(text: string, offsetBase = 0) {
    this.lexer = new Lexer(text, offsetBase);
  }

  scan(): Token {
    return this.take(false);
  }

  scanRegex(): Token {
    return this.take(true);
  }

  unscan(): void {
    this.pending++;
  }

  peekRune(): number {
    return this.lexer.peekRune();
  }

  private take(regex: boolean): Token {
    if (this.pending > 0) {
      this.pending--;
      return this.ring[(this.at - this.pending + 3) % 3]!;
    }
    this.at = (this.at + 1) % 3;
    const tok = regex ? this.lexer.scanRegex() : this.lexer.scan();
    this.ring[this.at] = tok;
    return tok;
  }
}

/** Every token of `text` up to and with EOF (whitespace and comments included; no regex). */
export function tokenize(text: string): Token[] {
  const lexer = new Lexer(text);
  const tokens: Token[] = [];
  for (;;) {
    const tok = lexer.scan();
    tokens.push(tok);
    if (tok.kind === 'EOF') return tokens;
  }
}
