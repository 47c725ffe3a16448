/**
 * The parser's view of the tokens: InfluxDB's parser reads them with a three-token push-back,
 * skipping whitespace and comments only where it asks to, and substitutes bound parameters as it
 * scans. TokenReader does the same, plus the small reads every statement needs (an identifier, a
 * string, an integer in a range, a duration, `KEYWORD n`), each failing with InfluxDB's error.
 * Pure TypeScript.
 */

import { bindValue } from './bind.js';
import { INT64_MAX, parseDuration, UINT64_MAX } from './duration.js';
import { errorAt, found } from './errors.js';
import { TokenStream } from './lexer.js';
import type { Token, TokenKind } from './tokens.js';

export interface ParseOptions {
  /** The clock of `GROUP BY time(d, now())` (epoch ms); Date.now() when not given. */
  nowMs?: number;
  /**
   * Values of `$name` bound parameters: InfluxDB's `params` form value, JSON-decoded. A string,
   * boolean or number stands for that literal (an integral number for an integer: JSON `2.0` too,
   * where InfluxDB would see a float); `{"identifier": "m"}`, `{"regex": "^a"}`,
   * `{"duration": "1h"}` (or nanoseconds), `{"string"|"integer"|"float": …}` for the others.
   * A parameter that is not given, or cannot be bound, is InfluxDB's `missing parameter: …`.
   */
  params?: Readonly<Record<string, unknown>>;
}

/** Tokens as InfluxDB's parser reads them, and the small reads built on them. */
export class TokenReader {
  protected readonly s: TokenStream;
  protected readonly nowMs: number;
  private readonly params: Readonly<Record<string, unknown>> | undefined;

  constructor(text: string, offsetBase: number, options: ParseOptions) {
    this.s = new TokenStream(text, offsetBase);
    this.nowMs = options.nowMs ?? Date.now();
    this.params = options.params;
  }

  scan(): Token {
    return this.bind(this.s.scan());
  }

  scanRegex(): Token {
    return this.bind(this.s.scanRegex());
  }

  /** The next token that is not whitespace or a comment. */
  next(): Token {
    for (;;) {
      const tok = this.scan();
      if (tok.kind !== 'WS' && tok.kind !== 'COMMENT') return tok;
    }
  }

  /** A `$name` token stands for its parameter's value, as InfluxDB substitutes it while scanning. */
  private bind(tok: Token): Token {
    if (tok.kind !== 'BOUNDPARAM' || this.params === undefined) return tok;
    const name = tok.lit.startsWith('$') ? tok.lit.slice(1) : tok.lit;
    if (name === '' || !Object.hasOwn(this.params, name)) return tok;
    const [kind, lit] = bindValue(this.params[name]);
    return { ...tok, kind, lit };
  }

  unscan(): void {
    this.s.unscan();
  }

  consumeWhitespace(): void {
    if (this.scan().kind !== 'WS') this.unscan();
  }

  /** The next token must be `kind`. */
  expect(...kinds: TokenKind[]): void {
    for (const kind of kinds) {
      const tok = this.next();
      if (tok.kind !== kind) throw found(tok, [kind]);
    }
  }

  /** Takes the next token when it is `kind`. */
  accept(kind: TokenKind): boolean {
    if (this.next().kind === kind) return true;
    this.unscan();
    return false;
  }

  ident(): string {
    const tok = this.next();
    if (tok.kind !== 'IDENT') throw found(tok, ['identifier']);
    return tok.lit;
  }

  string(): string {
    const tok = this.next();
    if (tok.kind !== 'STRING') throw found(tok, ['string']);
    return tok.lit;
  }

  identList(): string[] {
    const list = [this.ident()];
    while (this.accept(',')) list.push(this.ident());
    return list;
  }

  stringList(): string[] {
    const list = [this.string()];
    while (this.accept(',')) list.push(this.string());
    return list;
  }

  /** An integer in min..max (InfluxDB's ParseInt). */
  int(min: number, max: number): number {
    const tok = this.next();
    if (tok.kind !== 'INTEGER') throw found(tok, ['integer']);
    const n = BigInt(tok.lit);
    if (n > INT64_MAX) throw errorAt(`strconv.Atoi: parsing ${JSON.stringify(tok.lit)}: value out of range`, tok.pos);
    if (n < BigInt(min) || n > BigInt(max)) throw errorAt(`invalid value ${n}: must be ${min} <= n <= ${max}`, tok.pos);
    return Number(n);
  }

  uint64(): void {
    const tok = this.next();
    if (tok.kind !== 'INTEGER') throw found(tok, ['integer']);
    const n = BigInt(tok.lit);
    if (n < 0n) throw errorAt(`strconv.ParseUint: parsing ${JSON.stringify(tok.lit)}: invalid syntax`, tok.pos);
    if (n > UINT64_MAX) throw errorAt(`strconv.ParseUint: parsing ${JSON.stringify(tok.lit)}: value out of range`, tok.pos);
  }

  /** A duration or INF (retention policies). */
  durationOption(): void {
    const tok = this.next();
    if (tok.kind === 'INF') return;
    if (tok.kind !== 'DURATIONVAL') throw found(tok, ['duration']);
    const ns = parseDuration(tok.lit);
    if (typeof ns === 'string') throw errorAt(ns, tok.pos);
  }

  durationValue(): bigint {
    const tok = this.next();
    if (tok.kind !== 'DURATIONVAL') throw found(tok, ['duration']);
    const ns = parseDuration(tok.lit);
    if (typeof ns === 'string') throw errorAt(ns, tok.pos);
    return ns;
  }

  /** `LIMIT n` and the like: 0 when the keyword is not there. */
  optionalInt(keyword: TokenKind): number {
    if (!this.accept(keyword)) return 0;
    const tok = this.next();
    if (tok.kind !== 'INTEGER') throw found(tok, ['integer']);
    const n = BigInt(tok.lit);
    // Negative only from a bound parameter.
    if (n < 0n) throw errorAt(`${keyword} must be >= 0`, tok.pos);
    return Number(n > INT64_MAX ? INT64_MAX : n);
  }

  /** Whether the next token is the identifier `name` (any case), left unread. */
  nextIsIdent(name: string): boolean {
    const tok = this.next();
    this.unscan();
    return tok.kind === 'IDENT' && tok.lit.toLowerCase() === name;
  }
}
