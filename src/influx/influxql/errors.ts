/**
 * The parse errors of InfluxQL in InfluxDB's three forms (`found X, expected A, B at line L,
 * char C`; `<what> at line L, char C`; a bare text), and the quoting InfluxDB uses when it names
 * a string or an identifier in one. Pure TypeScript.
 */

import type { Position } from './ast.js';
import { keywordOf, tokenText, type Token } from './tokens.js';

/**
 * A query InfluxDB would not parse. `message` is InfluxDB's text (without the `error parsing
 * query: ` the HTTP answer puts before it); `pos` is where it points when the text names a
 * position (most then end with `at line L, char C`).
 */
export class InfluxQLParseError extends Error {
  readonly pos: Position | null;

  constructor(message: string, pos: Position | null = null) {
    super(message);
    this.name = 'InfluxQLParseError';
    this.pos = pos;
  }
}

/** The position InfluxDB names when it has none (`too many segments in …`). */
export const FIRST: Position = { offset: 0, line: 1, char: 1 };

export function errorAt(message: string, pos: Position): InfluxQLParseError {
  return new InfluxQLParseError(`${message} at line ${pos.line}, char ${pos.char}`, pos);
}

export function found(tok: Token, expected: readonly string[]): InfluxQLParseError {
  return errorAt(`found ${tokenText(tok)}, expected ${expected.join(', ')}`, tok.pos);
}

export function plain(message: string): InfluxQLParseError {
  return new InfluxQLParseError(message);
}

export function quoteString(s: string): string {
  return `'${s.replace(/[\n\\']/g, (c) => (c === '\n' ? '\\n' : `\\${c}`))}'`;
}

function identNeedsQuotes(ident: string): boolean {
  if (keywordOf(ident) !== null) return true;
  for (let i = 0; i < ident.length; i++) {
    const c = ident[i]!;
    const letter = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c === '_';
    if (!letter && (i === 0 || c < '0' || c > '9')) return true;
  }
  return false;
}

/** InfluxDB's QuoteIdent: segments joined by `.`, quoted where needed. */
export function quoteIdent(segments: readonly string[]): string {
  const last = segments.length - 1;
  return segments
    .map((segment, i) => {
      const quote = identNeedsQuotes(segment) || (i < last && segment !== '') || ((i === 0 || i === last) && segment === '');
      const text = segment.replace(/[\n\\"]/g, (c) => (c === '\n' ? '\\n' : `\\${c}`));
      return quote ? `"${text}"` : text;
    })
    .join('.');
}
