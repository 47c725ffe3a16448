/**
 * InfluxQL's tokens: the kinds lexer.ts produces, the keywords (InfluxDB 1.6's, matched in any
 * case), how InfluxDB prints a token in "found X, expected …", and the binary operators with
 * their precedence. Pure TypeScript.
 */

import type { Position } from './ast.js';

/** InfluxQL 1.6 keywords (besides AND, OR, TRUE, FALSE), as InfluxDB names them in errors. */
export const KEYWORDS = [
  'ALL', 'ALTER', 'ANALYZE', 'ANY', 'AS', 'ASC', 'BEGIN', 'BY', 'CARDINALITY', 'CREATE', 'CONTINUOUS',
  'DATABASE', 'DATABASES', 'DEFAULT', 'DELETE', 'DESC', 'DESTINATIONS', 'DIAGNOSTICS', 'DISTINCT', 'DROP',
  'DURATION', 'END', 'EVERY', 'EXACT', 'EXPLAIN', 'FIELD', 'FOR', 'FROM', 'GRANT', 'GRANTS', 'GROUP', 'GROUPS',
  'IN', 'INF', 'INSERT', 'INTO', 'KEY', 'KEYS', 'KILL', 'LIMIT', 'MEASUREMENT', 'MEASUREMENTS', 'NAME', 'OFFSET',
  'ON', 'ORDER', 'PASSWORD', 'POLICY', 'POLICIES', 'PRIVILEGES', 'QUERIES', 'QUERY', 'READ', 'REPLICATION',
  'RESAMPLE', 'RETENTION', 'REVOKE', 'SELECT', 'SERIES', 'SET', 'SHOW', 'SHARD', 'SHARDS', 'SLIMIT', 'SOFFSET',
  'STATS', 'SUBSCRIPTION', 'SUBSCRIPTIONS', 'TAG', 'TO', 'USER', 'USERS', 'VALUES', 'WHERE', 'WITH', 'WRITE',
] as const;

export type Keyword = (typeof KEYWORDS)[number];

export type Operator = '+' | '-' | '*' | '/' | '%' | '&' | '|' | '^' | 'AND' | 'OR' | '=' | '!=' | '=~' | '!~' | '<' | '<=' | '>' | '>=';

export type TokenKind =
  | 'ILLEGAL'
  | 'EOF'
  | 'WS'
  | 'COMMENT'
  | 'IDENT'
  | 'BOUNDPARAM'
  | 'NUMBER'
  | 'INTEGER'
  | 'DURATIONVAL'
  | 'STRING'
  | 'BADSTRING'
  | 'BADESCAPE'
  | 'TRUE'
  | 'FALSE'
  | 'REGEX'
  | 'BADREGEX'
  | Operator
  | '('
  | ')'
  | ','
  | ':'
  | '::'
  | ';'
  | '.'
  | Keyword;

export interface Token {
  kind: TokenKind;
  /**
   * The text that matters: an identifier's name (unquoted, unescaped), a string's value, a
   * number's or duration's digits, a regex's source, whitespace, the character of an ILLEGAL
   * token, `$name`; '' for keywords, operators and punctuation.
   */
  lit: string;
  /** Where InfluxDB places the token (see the file comment). */
  pos: Position;
  /** The token's text is `text.slice(start, end)`. */
  start: number;
  end: number;
}

const KEYWORD_BY_LOWER = new Map<string, TokenKind>([
  ...KEYWORDS.map((k) => [k.toLowerCase(), k] as [string, TokenKind]),
  ['and', 'AND'],
  ['or', 'OR'],
  ['true', 'TRUE'],
  ['false', 'FALSE'],
]);

/** The keyword an identifier spells (any case), or null. */
export function keywordOf(ident: string): TokenKind | null {
  return KEYWORD_BY_LOWER.get(ident.toLowerCase()) ?? null;
}

/** Token kinds InfluxDB prints as nothing: a token of these kinds always has a literal. */
const UNNAMED = new Set<TokenKind>(['COMMENT', 'INTEGER', 'BOUNDPARAM', 'BADREGEX']);

/** How InfluxDB prints a token in "found X, expected …": its literal, else its kind's name. */
export function tokenText(tok: Token): string {
  if (tok.lit !== '') return tok.lit;
  return UNNAMED.has(tok.kind) ? '' : tok.kind;
}

export function isOperator(kind: TokenKind): kind is Operator {
  return PRECEDENCE.has(kind);
}

/** Binary operator precedence: OR < AND < comparisons < + - | ^ < * / % &. */
export const PRECEDENCE: ReadonlyMap<TokenKind, number> = new Map<TokenKind, number>([
  ['OR', 1],
  ['AND', 2],
  ['=', 3], ['!=', 3], ['=~', 3], ['!~', 3], ['<', 3], ['<=', 3], ['>', 3], ['>=', 3],
  ['+', 4], ['-', 4], ['|', 4], ['^', 4],
  ['*', 5], ['/', 5], ['%', 5], ['&', 5],
]);
