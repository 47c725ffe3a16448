// The PromQL lexer of Prometheus 2.42, redone as a first pass before the lezer-promql parser
// (parse.ts). The lezer grammar is newer and more lenient than 2.42 (number literals with `_`,
// `1s1m`-style durations, any escape in a string, `inf` as a label in `by (...)`...), so this pass
// gives the tokens as 2.42 sees them: its lexical errors with 2.42's wording, the kinds that
// decide what a position may hold (a NUMBER is not a DURATION), and the words for "unexpected
// <token>" messages. On the tokens it then finds what 2.42's grammar refuses and lezer's takes
// (tokenProblem). It also bounds the work: lezer recurses on the depth of its tree and overflows
// the stack a few thousand levels down, so parentheses deeper than MAX_DEPTH, a tree that may be
// deeper than MAX_TREE_DEPTH, or more than MAX_TOKENS tokens end the scan before lezer sees them.

import { goQuote, parseDuration, parseNumber } from './check.js';

export const MAX_DEPTH = 256;
export const MAX_TOKENS = 100_000;
/**
 * A bound on lezer's tree depth, checked on the tokens: each token adds at most one level of
 * nesting to its group (between parentheses, brackets, braces or commas), so the tokens of the
 * open groups and the deepest closed group inside each count. A query within MAX_DEPTH levels
 * of expressions stays far below it.
 */
export const MAX_TREE_DEPTH = 1024;

export type TokenKind =
  | 'identifier' // a word without ':' that is no keyword
  | 'metricIdentifier' // a word with ':'
  | 'aggregator' // sum, avg, ... (any case)
  | 'keyword' // by, without, on, ignoring, group_left, group_right, bool, offset
  | 'preprocessor' // start, end
  | 'operator' // + - * / % ^ == != < <= > >= =~ !~ @ and or unless atan2
  | 'number' // decimal, hex, exponent, Inf, NaN (unsigned)
  | 'duration' // 5m, 1h30m (validated where a duration is expected)
  | 'string'
  | 'punct'; // ( ) { } [ ] , = :

export interface Token {
  kind: TokenKind;
  text: string;
  start: number;
  end: number;
  /** Read between `{` and `}` (where every word is a label name). */
  inBraces: boolean;
  /** Read between `[` and `]`. */
  inBrackets: boolean;
}

export interface LexError {
  position: number;
  message: string;
  /** The input is over MAX_TOKENS: not worth parsing what precedes the error. */
  tooLarge: boolean;
}

export interface LexResult {
  tokens: Token[];
  /** The first lexical error; `tokens` holds what came before it. */
  error: LexError | null;
}

const AGGREGATORS = new Set(['sum', 'avg', 'count', 'min', 'max', 'group', 'stddev', 'stdvar', 'topk', 'bottomk', 'count_values', 'quantile']);
const KEYWORDS = new Set(['offset', 'by', 'without', 'on', 'ignoring', 'group_left', 'group_right', 'bool']);
const WORD_OPERATORS = new Set(['and', 'or', 'unless', 'atan2']);

const isSpace = (c: string) => c === ' ' || c === '\t' || c === '\n' || c === '\r';
const isDigit = (c: string) => c >= '0' && c <= '9';
const isAlpha = (c: string) => c === '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
const isAlphaNumeric = (c: string) => isAlpha(c) || isDigit(c);

/** Go's %q of a rune: 'x'. */
function goQuoteRune(ch: string): string {
  if (ch === "'") return "'\\''";
  return `'${goQuote(ch).slice(1, -1).replace(/\\"/g, '"')}'`;
}

/** Go's %#U of a rune: U+0071 'q' (the character only when printable). */
function goRuneName(ch: string): string {
  const code = ch.codePointAt(0)!;
  const name = `U+${code.toString(16).toUpperCase().padStart(4, '0')}`;
  return code < 0x20 || code === 0x7f ? name : `${name} '${ch}'`;
}

/** How 2.42's parser names a token in "unexpected ..." messages (Item.desc); null is the end of input. */
export function describeToken(token: Token | null): string {
  if (token === null) return 'end of input';
  const short = (s: string) => ([...s].length > 10 ? `${goQuote([...s].slice(0, 10).join(''))}...` : goQuote(s));
  switch (token.kind) {
    case 'operator':
      return `<op:${token.text}>`;
    case 'aggregator':
      return `<aggr:${token.text}>`;
    case 'keyword':
      return `<${token.text}>`;
    case 'preprocessor':
    case 'punct':
      return short(token.text);
    case 'identifier':
      return `identifier ${goQuote(token.text)}`;
    case 'metricIdentifier':
      return `metric identifier ${goQuote(token.text)}`;
    default:
      return `${token.kind} ${short(token.text)}`;
  }
}

class LexFailure extends Error {
  constructor(readonly position: number, message: string, readonly tooLarge = false) {
    super(message);
  }
}

/** Splits `input` into 2.42's tokens (comments and spaces dropped), stopping at the first error. */
export function lex(input: string): LexResult {
  const tokens: Token[] = [];
  let pos = 0;
  let parenDepth = 0;
  let braceOpen = false;
  let bracketOpen = false;
  let gotColon = false;

  const peek = (offset = 0) => input[pos + offset] ?? '';
  const fail = (start: number, message: string, tooLarge = false): never => {
    throw new LexFailure(start, message, tooLarge);
  };
  // Per open group: its tokens since its start or last comma, and the deepest group closed in it.
  const groups = [{ tokens: 0, deepest: 0 }];
  let depthBound = 0; // the sum of both over the open groups
  const emit = (kind: TokenKind, start: number) => {
    if (tokens.length >= MAX_TOKENS) fail(start, `expression too large: more than ${MAX_TOKENS} tokens`, true);
    const text = input.slice(start, pos);
    tokens.push({ kind, text, start, end: pos, inBraces: braceOpen, inBrackets: bracketOpen });
    const group = groups.at(-1)!;
    if (kind === 'punct' && (text === ')' || text === ']' || text === '}') && groups.length > 1) {
      groups.pop();
      const parent = groups.at(-1)!;
      const closed = group.tokens + group.deepest;
      depthBound -= closed - Math.max(0, closed - parent.deepest);
      parent.deepest = Math.max(parent.deepest, closed);
    } else if (kind === 'punct' && text === ',') {
      depthBound -= group.tokens + group.deepest;
      group.tokens = group.deepest = 0;
    } else {
      group.tokens++;
      depthBound++;
      if (kind === 'punct' && (text === '(' || text === '[' || text === '{')) groups.push({ tokens: 0, deepest: 0 });
    }
    if (depthBound > MAX_TREE_DEPTH) fail(start, `expression too large: it may nest more than ${MAX_TREE_DEPTH} levels`, true);
  };
  const acceptOne = (set: string) => {
    if (pos < input.length && set.includes(input[pos]!)) {
      pos++;
      return true;
    }
    return false;
  };
  const acceptRun = (set: string) => {
    while (acceptOne(set));
  };

  // The shape of a number; true when what follows cannot continue it (so it is a NUMBER).
  const scanNumber = () => {
    let digits = '0123456789';
    if (acceptOne('0') && acceptOne('xX')) digits = '0123456789abcdefABCDEF';
    acceptRun(digits);
    if (acceptOne('.')) acceptRun(digits);
    if (acceptOne('eE')) {
      acceptOne('+-');
      acceptRun('0123456789');
    }
    return !isAlphaNumeric(peek());
  };
  // Units after the digits of a duration (their order is checked by parseDuration).
  const acceptRemainingDuration = () => {
    if (!acceptOne('smhdwy')) return false;
    acceptOne('s');
    while (acceptOne('0123456789')) {
      acceptRun('0123456789');
      if (!acceptOne('smhdw')) return false;
      acceptOne('s');
    }
    // 2.42 reads the character after the duration; it belongs to a bad one's text.
    if (!isAlphaNumeric(peek())) return true;
    pos++;
    return false;
  };

  const lexNumberOrDuration = (start: number) => {
    if (scanNumber()) return emit('number', start);
    if (acceptRemainingDuration()) return emit('duration', start);
    fail(start, `bad number or duration syntax: ${goQuote(input.slice(start, pos))}`);
  };

  const lexDuration = (start: number) => {
    if (scanNumber()) fail(start, 'missing unit character in duration');
    if (!acceptRemainingDuration()) fail(start, `bad duration syntax: ${goQuote(input.slice(start, pos))}`);
    emit('duration', start);
  };

  // One escape after a backslash, checked as 2.42 does (the value is decoded by unquote).
  const lexEscape = (start: number, quote: string) => {
    let ch = input[pos++] ?? '';
    let n: number;
    let base: number;
    let max: number;
    if ('abfnrtv\\'.includes(ch) && ch !== '') return;
    if (ch === quote) return;
    if (ch >= '0' && ch <= '7') [n, base, max] = [3, 8, 255];
    else if (ch === 'x' || ch === 'u' || ch === 'U') {
      [n, base, max] = ch === 'x' ? [2, 16, 255] : ch === 'u' ? [4, 16, 0x10ffff] : [8, 16, 0x10ffff];
      ch = input[pos++] ?? '';
    } else if (ch === '') return fail(start, 'escape sequence not terminated');
    else return fail(start, `unknown escape sequence ${goRuneName(String.fromCodePoint(input.codePointAt(pos - 1)!))}`);
    let x = 0;
    for (;;) {
      const d = /^[0-9a-fA-F]$/.test(ch) ? parseInt(ch, 16) : 16;
      if (d >= base) {
        if (ch === '') fail(start, 'escape sequence not terminated');
        fail(start, `illegal character ${goRuneName(String.fromCodePoint(input.codePointAt(pos - 1)!))} in escape sequence`);
      }
      x = x * base + d;
      if (--n === 0) break;
      ch = input[pos++] ?? '';
    }
    if (x > max || (x >= 0xd800 && x < 0xe000)) fail(start, 'escape sequence is an invalid Unicode code point');
  };

  const lexString = (start: number, quote: string) => {
    for (;;) {
      const ch = input[pos++];
      if (ch === undefined || ch === '\n') fail(start, 'unterminated quoted string');
      if (ch === '\\') lexEscape(start, quote);
      else if (ch === quote) return emit('string', start);
    }
  };

  const lexRawString = (start: number) => {
    const close = input.indexOf('`', pos);
    if (close < 0) fail(start, 'unterminated raw string');
    pos = close + 1;
    emit('string', start);
  };

  const skipComment = () => {
    while (pos < input.length && input[pos] !== '\n' && input[pos] !== '\r') pos++;
  };

  // Inside `{...}` every word is a label name, keywords included.
  const lexInsideBraces = () => {
    const start = pos;
    const ch = input[pos++];
    if (ch === undefined) return fail(input.length, 'unexpected end of input inside braces');
    if (ch === '#') return skipComment();
    if (isSpace(ch)) return;
    if (isAlpha(ch)) {
      while (isAlphaNumeric(peek())) pos++;
      return emit('identifier', start);
    }
    if (ch === ',') return emit('punct', start);
    if (ch === '"' || ch === "'") return lexString(start, ch);
    if (ch === '`') return lexRawString(start);
    if (ch === '=') {
      if (acceptOne('~')) return emit('operator', start);
      return emit('punct', start);
    }
    if (ch === '!') {
      if (acceptOne('~') || acceptOne('=')) return emit('operator', start);
      return fail(start, `unexpected character after '!' inside braces: ${goQuoteRune(peek() || '\uFFFD')}`);
    }
    if (ch === '{') return fail(start, "unexpected left brace '{'");
    if (ch === '}') {
      emit('punct', start);
      braceOpen = false;
      return;
    }
    fail(start, `unexpected character inside braces: ${goQuoteRune(String.fromCodePoint(input.codePointAt(start)!))}`);
  };

  const lexWord = (start: number) => {
    while (isAlphaNumeric(peek()) || peek() === ':') pos++;
    const lower = input.slice(start, pos).toLowerCase();
    if (lower === 'inf' || lower === 'nan') emit('number', start);
    else if (AGGREGATORS.has(lower)) emit('aggregator', start);
    else if (KEYWORDS.has(lower)) emit('keyword', start);
    else if (WORD_OPERATORS.has(lower)) emit('operator', start);
    else if (lower === 'start' || lower === 'end') emit('preprocessor', start);
    else emit(lower.includes(':') ? 'metricIdentifier' : 'identifier', start);
  };

  const lexStatement = () => {
    if (braceOpen) return lexInsideBraces();
    const start = pos;
    const ch = input[pos++];
    if (ch === undefined) {
      if (parenDepth !== 0) fail(input.length, 'unclosed left parenthesis');
      if (bracketOpen) fail(input.length, 'unclosed left bracket');
      return;
    }
    if (ch === '#') return skipComment();
    if (isSpace(ch)) return;
    if (',*/%+-^@'.includes(ch)) return emit(ch === ',' ? 'punct' : 'operator', start);
    if (ch === '=') {
      if (peek() === '~') fail(start, "unexpected character after '=': '~'");
      return emit(acceptOne('=') ? 'operator' : 'punct', start);
    }
    if (ch === '!') {
      if (!acceptOne('=')) fail(start, `unexpected character after '!': ${goQuoteRune(peek() || '\uFFFD')}`);
      return emit('operator', start);
    }
    if (ch === '<' || ch === '>') {
      acceptOne('=');
      return emit('operator', start);
    }
    if (isDigit(ch) || (ch === '.' && isDigit(peek()))) {
      pos = start;
      return lexNumberOrDuration(start);
    }
    if (ch === '"' || ch === "'") return lexString(start, ch);
    if (ch === '`') return lexRawString(start);
    if (isAlpha(ch) || ch === ':') {
      // Inside brackets 2.42 reads any word character as the subquery's colon (`x[5m y]` is x[5m:]).
      if (!bracketOpen) return lexWord(start);
      if (gotColon) fail(start, `unexpected colon ${goQuoteRune(ch)}`);
      gotColon = true;
      return emit('punct', start);
    }
    if (ch === '(') {
      if (++parenDepth > MAX_DEPTH) fail(start, `expression nested deeper than ${MAX_DEPTH} levels`);
      return emit('punct', start);
    }
    if (ch === ')') {
      // 2.42 has emitted the parenthesis when it notices, so the error is just after it.
      if (--parenDepth < 0) fail(start + 1, "unexpected right parenthesis ')'");
      return emit('punct', start);
    }
    if (ch === '{') {
      emit('punct', start);
      braceOpen = true;
      return;
    }
    if (ch === '[') {
      if (bracketOpen) fail(start, "unexpected left bracket '['");
      gotColon = false;
      emit('punct', start);
      while (isSpace(peek())) pos++;
      bracketOpen = true;
      return lexDuration(pos);
    }
    if (ch === ']') {
      if (!bracketOpen) fail(start, "unexpected right bracket ']'");
      bracketOpen = false;
      return emit('punct', start);
    }
    fail(start, `unexpected character: ${goQuoteRune(String.fromCodePoint(input.codePointAt(start)!))}`);
  };

  try {
    while (pos < input.length || braceOpen || parenDepth !== 0 || bracketOpen) lexStatement();
    return { tokens, error: null };
  } catch (err) {
    if (!(err instanceof LexFailure)) throw err;
    return { tokens, error: { position: err.position, message: err.message, tooLarge: err.tooLarge } };
  }
}

// What 2.42's grammar refuses in a sequence of tokens and lezer's grammar takes, and the words
// its messages give for where an unexpected token is.

/** Functions of Prometheus 2.42 that this engine does not have (others are unknown to 2.42 too). */
const UNSUPPORTED_FUNCTIONS = new Set(
  'acos acosh asin asinh atan atanh cos cosh days_in_month day_of_month day_of_week day_of_year deg histogram_count histogram_sum histogram_fraction holt_winters hour minute month pi predict_linear rad sgn sin sinh tan tanh year'.split(' '),
);

export function unknownFunction(name: string): string {
  return UNSUPPORTED_FUNCTIONS.has(name) ? `function ${JSON.stringify(name)} is not supported` : `unknown function with name ${JSON.stringify(name)}`;
}

export interface Problem {
  position: number;
  what: string;
  /** Offset where 2.42 notices it (a call of an unknown function: its closing parenthesis), to find the first. */
  order: number;
}

/** The subquery's colon: 2.42 reads any word character inside brackets as one. */
export const isColon = (t: Token | undefined) => t !== undefined && t.kind === 'punct' && t.inBrackets && (t.text === ':' || isAlpha(t.text));

const isWord = (t: Token | undefined, word: string) => t !== undefined && t.text.toLowerCase() === word && t.kind !== 'identifier';

/** Whether the token at `i` is where an operand starts (so `offset` there is a metric name). */
export function startsOperand(tokens: readonly Token[], i: number): boolean {
  // and/or/unless are metric names where an operand starts, so a run of them alternates.
  let k = 0;
  while (i - k - 1 >= 0 && ['and', 'or', 'unless'].some((w) => isWord(tokens[i - k - 1], w))) k++;
  if (k > 0) return startsOperandAfter(tokens[i - k - 1]) === (k % 2 === 0);
  return startsOperandAfter(tokens[i - 1]);
}

function startsOperandAfter(previous: Token | undefined): boolean {
  if (!previous) return true;
  if (previous.kind === 'operator') return previous.text !== '@';
  return previous.text === '(' || previous.text === ',' || isWord(previous, 'bool');
}

/** `offset` used as the keyword (2.42 also takes it for a metric name where an operand starts). */
const isOffset = (tokens: readonly Token[], i: number) => isWord(tokens[i], 'offset') && !startsOperand(tokens, i);

/** 2.42's words for where the token at `i` is unexpected (' in <context>, expected <what>'), or ''. */
export function contextOf(tokens: readonly Token[], i: number): string {
  const prev = tokens[i - 1];
  if (!prev) return '';
  if (tokens[i]?.inBraces && (prev.inBraces || prev.text === '{')) {
    if (prev.text === '{' || prev.text === ',') return ' in label matching, expected identifier or "}"';
    if (prev.kind === 'identifier') return ' in label matching, expected label matching operator';
    if (prev.kind === 'operator' || prev.text === '=') return ' in label matching, expected string';
    if (prev.kind === 'string') return ' in label matching, expected "," or "}"';
    return '';
  }
  const signed = prev.text === '-' || prev.text === '+';
  if (prev.text === '@' || ((signed || prev.kind === 'preprocessor') && tokens[i - 2]?.text === '@')) return ' in @, expected timestamp';
  if (prev.text === '(' && ['on', 'ignoring', 'by', 'without', 'group_left', 'group_right'].some((w) => isWord(tokens[i - 2], w))) return ' in grouping opts, expected label';
  if (isOffset(tokens, i - 1) || (prev.text === '-' && isOffset(tokens, i - 2))) return ' in offset, expected duration';
  if (isWord(prev, 'on') || isWord(prev, 'ignoring')) return ' in grouping opts, expected "("';
  const grouping = tokens[i - 2]?.kind === 'aggregator' || tokens[i - 2]?.text === ')';
  if ((isWord(prev, 'by') || isWord(prev, 'without')) && grouping) return ' in grouping opts, expected "("';
  return '';
}

/**
 * The first of what 2.42 refuses in these tokens and lezer's grammar may take: a call of a
 * function this engine lacks, a duration where 2.42 takes none (lezer takes `5m` for a number) or
 * an invalid one, `start(` or `end(` not after `@`, more than one duration after offset, duration
 * arithmetic in brackets, quoted label names.
 */
export function tokenProblem(tokens: readonly Token[], isFunction: (name: string) => boolean): Problem | null {
  let first: Problem | null = null;
  const note = (problem: Problem) => {
    if (!first || problem.order < first.order) first = problem;
  };
  const unexpected = (t: Token, i: number, context = contextOf(tokens, i)) => note({ position: t.start, what: `unexpected ${describeToken(t)}${context}`, order: t.start });
  const calls: Array<Token | null> = []; // per open parenthesis, the unknown function it calls
  tokens.forEach((t, i) => {
    const prev = tokens[i - 1];
    if (t.text === '(' && t.kind === 'punct') {
      calls.push(prev?.kind === 'identifier' && !isFunction(prev.text) ? prev : null);
      if (prev?.kind === 'preprocessor' && tokens[i - 2]?.text !== '@') unexpected(t, i, '');
    }
    if (t.text === ')' && t.kind === 'punct') {
      const call = calls.pop();
      if (call) note({ position: call.start, what: unknownFunction(call.text), order: t.start });
    }
    if (t.kind === 'duration' && !t.inBrackets) {
      // After offset, lezer reads signs and parentheses too: those are refused where read.
      let j = i - 1;
      while (tokens[j] && (tokens[j]!.text === '-' || tokens[j]!.text === '+' || tokens[j]!.text === '(')) j--;
      if (!isOffset(tokens, j)) unexpected(t, i);
    }
    // After offset 2.42 takes a duration, or a minus and a duration.
    const afterOffset = isOffset(tokens, i - 1) ? t.text !== '-' : prev?.text === '-' && isOffset(tokens, i - 2);
    if (afterOffset && t.kind !== 'duration') unexpected(t, i);
    // Inside brackets: a duration, then `:` or the end, then a duration or the end (the `]`).
    if (t.inBrackets && prev?.text !== '[') {
      const context = tokens[i - 2]?.text === '[' ? ' in subquery or range, expected ":" or "]"' : isColon(prev) ? ' in subquery selector, expected duration or "]"' : ' in subquery selector, expected "]"';
      const arithmetic = t.kind === 'operator' || t.text === '(' ? ' (duration arithmetic is not supported)' : '';
      if (tokens[i - 2]?.text === '[' ? !isColon(t) : !isColon(prev) || t.kind !== 'duration') unexpected(t, i, context + arithmetic);
    }
    // 2.42 reads the value of a duration or a number where it takes one right after the token,
    // before it reads the next one.
    const readAt = t.end - 0.5;
    if (t.kind === 'duration' && (t.inBrackets || isOffset(tokens, i - 1) || (prev?.text === '-' && isOffset(tokens, i - 2)))) {
      let ms = 1;
      try {
        ms = parseDuration(t.text);
      } catch (err) {
        note({ position: t.start, what: (err as Error).message, order: readAt });
      }
      if (ms === 0) note({ position: t.start, what: 'duration must be greater than 0', order: readAt });
    }
    if (t.kind === 'number' && !afterOffset && !contextOf(tokens, i).includes('grouping')) {
      try {
        parseNumber(t.text);
      } catch (err) {
        note({ position: t.start, what: (err as Error).message, order: readAt });
      }
    }
    // `</` and `>/` are newer operators; to 2.42 a comparison and a division.
    if (t.text === '/' && (prev?.text === '<' || prev?.text === '>') && prev.end === t.start) unexpected(t, i, ` (the ${prev.text}/ operator is not supported)`);
    // Quoted label names are newer than 2.42.
    if (t.kind === 'string' && ((t.inBraces && (prev?.text === '{' || (prev?.text === ',' && prev.inBraces))) || (!t.inBraces && prev?.text === '('))) {
      const context = contextOf(tokens, i);
      if (context.includes('label')) unexpected(t, i, context);
    }
  });
  return first;
}
