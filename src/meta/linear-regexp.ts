// A regular-expression test whose cost is linear in the length of the text:
// the pattern becomes a Thompson NFA (a small program of CHAR, SPLIT, JMP,
// ASSERT and MATCH instructions) that is run on every position at once, with
// the sets of states it reaches cached as the states of a lazily built DFA.
// No input can make it backtrack, so `/a*b/` or `/(a+)+$/` over a long value
// costs one step per character once the few states are cached.
//
// It answers only "does the text match anywhere" (RegExp.prototype.test), for
// which greedy and lazy quantifiers and capturing groups make no difference.
// The syntax is JavaScript's (flags i, m, s, u): the pattern must first compile
// as a JavaScript RegExp, and every one-character piece of it (a literal, an
// escape such as \d or \u{1F600}, a class, `.`) is tested against a
// character by a tiny anchored JavaScript RegExp of that piece alone, which
// runs in constant time and gives exactly JavaScript's meaning to classes,
// case folding and Unicode. Backreferences, lookahead and lookbehind have no
// linear-time implementation and are refused.
//
// Work is counted in steps, each a few nanoseconds: one per character through
// a cached DFA state; when a state has to be computed, one per NFA
// instruction visited plus the cost of building it; and 32 when a piece has
// to ask JavaScript about a character it has not met before. A pattern whose
// texts keep overflowing the DFA cache is run from then on as a plain NFA
// simulation (one step per instruction visited, nothing allocated). The
// caller passes a budget; past it, StepBudgetExceeded is thrown.

export interface LinearRegExpOptions {
  /** Overrides the DFA cache bound; tests set 0 to run nearly everything as a plain NFA simulation. */
  maxCacheWeight?: number;
}

/** A pattern this matcher does not run; the message says why. */
export class RegexpRefusal extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'RegexpRefusal';
  }
}

/** Thrown by `test` when the budget's steps run out. */
export class StepBudgetExceeded extends Error {
  constructor() {
    super('regexp step budget exceeded');
    this.name = 'StepBudgetExceeded';
  }
}

/** Steps left; `test` decrements it and throws StepBudgetExceeded below zero. */
export interface StepBudget {
  remaining: number;
}

/** Most NFA instructions one pattern may expand to (counted repeats copy their body). */
export const MAX_PROGRAM_SIZE = 10_000;
/**
 * Cached DFA states of one pattern are dropped and rebuilt past this weight
 * (kernel entries plus cached transitions), which bounds memory per pattern
 * to a few MiB whatever the pattern and the text.
 */
const MAX_CACHE_WEIGHT = 256 * 1024;
const ASCII = 128;
/** Steps charged when a one-character JavaScript RegExp has to run (a character not met before): about 100-250 ns, 30-50 steps. */
const ATOM_EVALUATION_STEPS = 32;

// Instructions
const CHAR = 0; // arg: atom index; next instruction on a match
const SPLIT = 1; // continue at arg and at alt
const JMP = 2; // continue at arg
const ASSERT = 3; // arg: assertion kind; next instruction when it holds
const MATCH = 4;

// Assertions
const LINE_START = 0; // ^
const LINE_END = 1; // $
const WORD_BOUNDARY = 2; // \b
const NOT_WORD_BOUNDARY = 3; // \B

// What an assertion needs to know about the characters either side of a position.
const PLAIN = 0;
const WORD = 1;
const LINE_TERMINATOR = 2;
const EDGE = 3; // no character: the start or the end of the text

type Node =
  | { type: 'char'; atom: number }
  | { type: 'assert'; kind: number }
  | { type: 'seq'; items: Node[] }
  | { type: 'alt'; options: Node[] }
  | { type: 'repeat'; body: Node; min: number; max: number };

/** A one-character piece of the pattern, tested by JavaScript, with its answers remembered. */
class Atom {
  /** Evaluations by JavaScript so far, all atoms together; the matcher charges them to the budget. */
  static evaluations = 0;
  private readonly regexp: RegExp;
  /** 0 unknown, 1 no, 2 yes. */
  private readonly ascii = new Uint8Array(ASCII);
  private readonly other = new Map<number, boolean>();

  constructor(
    source: string,
    flags: string,
    private readonly unicode: boolean,
  ) {
    this.regexp = new RegExp(`^(?:${source})$`, flags);
  }

  matches(c: number): boolean {
    if (c < ASCII) {
      const known = this.ascii[c];
      if (known !== 0) return known === 2;
      Atom.evaluations++;
      const result = this.regexp.test(String.fromCharCode(c));
      this.ascii[c] = result ? 2 : 1;
      return result;
    }
    const known = this.other.get(c);
    if (known !== undefined) return known;
    Atom.evaluations++;
    const result = this.regexp.test(this.unicode ? String.fromCodePoint(c) : String.fromCharCode(c));
    if (this.other.size >= 4096) this.other.clear();
    this.other.set(c, result);
    return result;
  }
}

/** A DFA state: the NFA instructions reached just after a character (not yet closed), and that character's kind. */
class DfaState {
  ascii: Array<DfaState | undefined> | undefined = undefined;
  other: Map<number, DfaState> | undefined = undefined;
  /** Whether the text matches when it ends here: -1 not computed yet, 0 no, 1 yes. */
  matchesAtEnd = -1;

  constructor(
    readonly kernel: Int32Array,
    readonly previous: number,
    /** Nothing can match from here on (anchored pattern, past its start). */
    readonly dead: boolean,
  ) {}
}

const EMPTY_KERNEL = new Int32Array(0);

/** Marks "a match was found" among transitions. */
const MATCHED = new DfaState(EMPTY_KERNEL, PLAIN, false);

export class LinearRegExp {
  private readonly op: Uint8Array;
  private readonly arg: Int32Array;
  private readonly alt: Int32Array;
  private readonly atoms: Atom[];
  private readonly word: Atom | undefined;
  private readonly multiline: boolean;
  private readonly unicode: boolean;
  private readonly lineKinds: boolean;
  /** Whether any assertion looks at characters (only ^ and $ without m look at the edges alone). */
  private readonly kinds: boolean;
  private readonly anchoredAtStart: boolean;

  // Scratch space of the closure; the matcher is not re-entrant.
  private readonly mark: Int32Array;
  private generation = 0;
  private readonly stack: Int32Array;
  private readonly chars: Int32Array;
  private readonly kernelA: Int32Array;
  private readonly kernelB: Int32Array;
  private work = 0;

  private readonly maxCacheWeight: number;
  private states = new Map<string, DfaState>();
  private cacheWeight = 0;
  private start: DfaState | undefined = undefined;
  /** Off once the cache filled up twice during one text: the rest of it runs as a plain NFA simulation. */
  private caching = true;
  private flushesThisTest = 0;
  /** Set once a text defeated the cache: this pattern's DFA is too large to pay off. */
  private thrashes = false;

  /** Throws RegexpRefusal for patterns it does not run; the pattern must already compile as a JavaScript RegExp. */
  constructor(source: string, flags: string, options: LinearRegExpOptions = {}) {
    this.maxCacheWeight = options.maxCacheWeight ?? MAX_CACHE_WEIGHT;
    this.unicode = flags.includes('u');
    this.multiline = flags.includes('m');
    const atomFlags = flags.replace('m', ''); // atoms are tested alone: ^ and $ there mean the character's edges
    const parser = new Parser(source, this.unicode);
    const tree = parser.parse();
    this.atoms = parser.atomSources.map((text) => new Atom(text, atomFlags, this.unicode));
    this.word = parser.hasWordAssertion ? new Atom('\\w', atomFlags, this.unicode) : undefined;
    this.lineKinds = this.multiline && parser.hasLineAnchor;
    this.kinds = this.lineKinds || this.word !== undefined;
    this.anchoredAtStart = !this.multiline && startsWithLineStart(tree);

    const program = new ProgramBuilder();
    program.compile(tree);
    program.emit(MATCH);
    this.op = Uint8Array.from(program.op);
    this.arg = Int32Array.from(program.arg);
    this.alt = Int32Array.from(program.alt);
    const size = this.op.length;
    this.mark = new Int32Array(size);
    this.stack = new Int32Array(3 * size + 2);
    this.chars = new Int32Array(size);
    this.kernelA = new Int32Array(size);
    this.kernelB = new Int32Array(size);
  }

  /** Number of NFA instructions (what one uncached step can visit at most). */
  get size(): number {
    return this.op.length;
  }

  /** RegExp.prototype.test: whether the pattern matches anywhere in `text`. Spends steps from `budget`. */
  test(text: string, budget: StepBudget): boolean {
    if (this.thrashes) return this.simulate(text, 0, EMPTY_KERNEL, EDGE, budget);
    this.caching = true;
    this.flushesThisTest = 0;
    let state = this.startState();
    let remaining = budget.remaining;
    let delegated = false;
    const length = text.length;
    try {
      for (let i = 0; i < length; ) {
        let c: number;
        if (this.unicode) {
          c = text.codePointAt(i)!;
          i += c > 0xffff ? 2 : 1;
        } else {
          c = text.charCodeAt(i++);
        }
        let next = c < ASCII ? state.ascii?.[c] : state.other?.get(c);
        if (next === undefined) {
          this.work = 0;
          next = this.transition(state, c);
          remaining -= this.work;
        } else {
          remaining -= 1;
        }
        if (remaining < 0) throw new StepBudgetExceeded();
        if (next === MATCHED) return true;
        if (next.dead) return false;
        if (!this.caching) {
          budget.remaining = remaining;
          delegated = true;
          return this.simulate(text, i, next.kernel, next.previous, budget);
        }
        state = next;
      }
      if (state.matchesAtEnd < 0) {
        this.work = 0;
        state.matchesAtEnd = this.closure(state.kernel, state.kernel.length, state.previous, EDGE) < 0 ? 1 : 0;
        remaining -= this.work;
        if (remaining < 0) throw new StepBudgetExceeded();
      }
      return state.matchesAtEnd === 1;
    } finally {
      if (!delegated) budget.remaining = remaining;
    }
  }

  private startState(): DfaState {
    return (this.start ??= this.intern(EMPTY_KERNEL, EDGE));
  }

  /** Computes and caches the state after `c`: closes the kernel (plus a thread starting here), then steps over `c`. */
  private transition(state: DfaState, c: number): DfaState {
    const evaluations = Atom.evaluations;
    const kind = this.kindOf(c);
    const count = this.closure(state.kernel, state.kernel.length, state.previous, kind);
    let next: DfaState;
    if (count < 0) {
      next = MATCHED;
    } else {
      const generation = this.nextGeneration();
      const reached: number[] = [];
      for (let j = 0; j < count; j++) {
        const pc = this.chars[j];
        this.work++;
        if (!this.atoms[this.arg[pc]].matches(c)) continue;
        const to = pc + 1;
        if (this.mark[to] === generation) continue;
        this.mark[to] = generation;
        reached.push(to);
      }
      next = this.intern(Int32Array.from(reached).sort(), kind);
    }
    this.work += (Atom.evaluations - evaluations) * ATOM_EVALUATION_STEPS;
    if (!this.caching) return next;
    if (c < ASCII) {
      if (!state.ascii) {
        state.ascii = new Array<DfaState | undefined>(ASCII);
        this.cacheWeight += ASCII;
      }
      state.ascii[c] = next;
    } else {
      (state.other ??= new Map()).set(c, next);
      this.cacheWeight += 1;
    }
    return next;
  }

  private intern(kernel: Int32Array, previous: number): DfaState {
    const dead = this.anchoredAtStart && kernel.length === 0 && previous !== EDGE;
    if (!this.caching) return new DfaState(kernel, previous, dead);
    const key = `${previous}:${kernel.join(',')}`;
    let state = this.states.get(key);
    if (state) return state;
    if (this.cacheWeight > this.maxCacheWeight) {
      // Start over rather than grow: the states in use stay valid, only sharing is lost.
      this.states = new Map();
      this.cacheWeight = 0;
      this.start = undefined;
      // A text that fills the cache twice gains nothing from it: finish it, and
      // every later text, as a plain NFA simulation (linear too, without the
      // cost of building states that are used once).
      if (++this.flushesThisTest >= 2) {
        this.caching = false;
        this.thrashes = true;
        return new DfaState(kernel, previous, dead);
      }
    }
    state = new DfaState(kernel, previous, dead);
    this.states.set(key, state);
    this.cacheWeight += kernel.length + 8;
    this.work += kernel.length + 16; // the key, the lookup and the allocation
    return state;
  }

  /**
   * The rest of `text` from `start` as a plain NFA simulation, for texts that
   * defeat the DFA cache: two kernel buffers, nothing allocated per character.
   */
  private simulate(text: string, start: number, kernel: Int32Array, previous: number, budget: StepBudget): boolean {
    let current = this.kernelA;
    let following = this.kernelB;
    current.set(kernel);
    let count = kernel.length;
    let remaining = budget.remaining;
    const { atoms, arg, mark, chars } = this;
    try {
      for (let i = start; i < text.length; ) {
        let c: number;
        if (this.unicode) {
          c = text.codePointAt(i)!;
          i += c > 0xffff ? 2 : 1;
        } else {
          c = text.charCodeAt(i++);
        }
        const evaluations = Atom.evaluations;
        const kind = this.kindOf(c);
        this.work = 0;
        const reachable = this.closure(current, count, previous, kind);
        if (reachable < 0) return true;
        const generation = this.nextGeneration();
        let reached = 0;
        for (let j = 0; j < reachable; j++) {
          const pc = chars[j];
          if (!atoms[arg[pc]].matches(c)) continue;
          const to = pc + 1;
          if (mark[to] === generation) continue;
          mark[to] = generation;
          following[reached++] = to;
        }
        remaining -= this.work + reachable + (Atom.evaluations - evaluations) * ATOM_EVALUATION_STEPS;
        if (remaining < 0) throw new StepBudgetExceeded();
        [current, following] = [following, current];
        count = reached;
        previous = kind;
        if (this.anchoredAtStart && count === 0) return false;
      }
      this.work = 0;
      const matched = this.closure(current, count, previous, EDGE) < 0;
      remaining -= this.work;
      if (remaining < 0) throw new StepBudgetExceeded();
      return matched;
    } finally {
      budget.remaining = remaining;
    }
  }

  /**
   * Follows SPLIT, JMP and ASSERT from the kernel and from instruction 0 (a
   * match may start at any position), between characters of kinds
   * `previous` and `next` (the kernel is its first `size` entries). Leaves the CHAR instructions reached in
   * `this.chars` and returns their count, or -1 when MATCH is reachable.
   */
  private closure(kernel: Int32Array, size: number, previous: number, next: number): number {
    const { op, arg, alt, mark, stack, chars } = this;
    const generation = this.nextGeneration();
    let top = 0;
    stack[top++] = 0;
    for (let k = size - 1; k >= 0; k--) stack[top++] = kernel[k];
    let count = 0;
    while (top > 0) {
      const pc = stack[--top];
      if (mark[pc] === generation) continue;
      mark[pc] = generation;
      this.work++;
      switch (op[pc]) {
        case CHAR:
          chars[count++] = pc;
          break;
        case MATCH:
          return -1;
        case JMP:
          stack[top++] = arg[pc];
          break;
        case SPLIT:
          stack[top++] = alt[pc];
          stack[top++] = arg[pc];
          break;
        case ASSERT:
          if (this.holds(arg[pc], previous, next)) stack[top++] = pc + 1;
          break;
      }
    }
    return count;
  }

  private holds(assertion: number, previous: number, next: number): boolean {
    switch (assertion) {
      case LINE_START:
        return previous === EDGE || (this.multiline && previous === LINE_TERMINATOR);
      case LINE_END:
        return next === EDGE || (this.multiline && next === LINE_TERMINATOR);
      case WORD_BOUNDARY:
        return (previous === WORD) !== (next === WORD);
      default: // NOT_WORD_BOUNDARY
        return (previous === WORD) === (next === WORD);
    }
  }

  /** Only the distinctions some assertion of this pattern makes, so that states are shared as much as possible. */
  private kindOf(c: number): number {
    if (!this.kinds) return PLAIN;
    if (this.lineKinds && (c === 0x0a || c === 0x0d || c === 0x2028 || c === 0x2029)) return LINE_TERMINATOR;
    if (this.word?.matches(c)) return WORD;
    return PLAIN;
  }

  private nextGeneration(): number {
    if (this.generation === 0x3fffffff) {
      this.mark.fill(0);
      this.generation = 0;
    }
    return ++this.generation;
  }
}

/** True when every way through the pattern begins with `^` (and without the m flag, nothing can match after position 0). */
function startsWithLineStart(node: Node): boolean {
  switch (node.type) {
    case 'assert':
      return node.kind === LINE_START;
    case 'seq':
      return node.items.length > 0 && startsWithLineStart(node.items[0]);
    case 'alt':
      return node.options.every(startsWithLineStart);
    case 'repeat':
      return node.min > 0 && startsWithLineStart(node.body);
    default:
      return false;
  }
}

/**
 * Reads a pattern JavaScript has already accepted. Structure (groups,
 * alternation, quantifiers, assertions) is parsed here; each one-character
 * piece is kept as source text for an Atom. Annex B forms that are not one
 * character or need a group count (backreferences, legacy octal escapes, a
 * `\c` without a letter) are refused.
 */
class Parser {
  private i = 0;
  readonly atomSources: string[] = [];
  private readonly atomIndex = new Map<string, number>();
  hasWordAssertion = false;
  hasLineAnchor = false;

  constructor(
    private readonly source: string,
    private readonly unicode: boolean,
  ) {}

  parse(): Node {
    const tree = this.alternation();
    if (this.i < this.source.length) throw new RegexpRefusal(`unexpected '${this.source[this.i]}' at offset ${this.i}`);
    return tree;
  }

  private alternation(): Node {
    const options = [this.sequence()];
    while (this.source[this.i] === '|') {
      this.i++;
      options.push(this.sequence());
    }
    return options.length === 1 ? options[0] : { type: 'alt', options };
  }

  private sequence(): Node {
    const items: Node[] = [];
    while (this.i < this.source.length && this.source[this.i] !== '|' && this.source[this.i] !== ')') {
      items.push(this.quantified(this.term()));
    }
    return items.length === 1 ? items[0] : { type: 'seq', items };
  }

  private term(): Node {
    const { source } = this;
    const c = source[this.i];
    switch (c) {
      case '^':
      case '$':
        this.i++;
        this.hasLineAnchor = true;
        return { type: 'assert', kind: c === '^' ? LINE_START : LINE_END };
      case '(':
        return this.group();
      case '[':
        return this.atom(this.i, classEnd(source, this.i));
      case '.':
        return this.atom(this.i, this.i + 1);
      case '\\':
        return this.escape();
      case '*':
      case '+':
      case '?':
        throw new RegexpRefusal(`nothing to repeat at offset ${this.i}`);
      case '{':
        if (QUANTIFIER_BRACES.test(source.slice(this.i))) throw new RegexpRefusal(`nothing to repeat at offset ${this.i}`);
        return this.atom(this.i, this.i + 1); // Annex B: a brace that is no quantifier is a literal
      default: {
        const width = this.unicode && source.codePointAt(this.i)! > 0xffff ? 2 : 1;
        return this.atom(this.i, this.i + width);
      }
    }
  }

  private group(): Node {
    const { source } = this;
    if (source.startsWith('(?', this.i)) {
      if (source.startsWith('(?:', this.i)) this.i += 3;
      else if (/^\(\?<?[=!]/.test(source.slice(this.i, this.i + 4))) throw new RegexpRefusal('lookahead and lookbehind are not supported');
      else if (source.startsWith('(?<', this.i)) this.i = source.indexOf('>', this.i) + 1; // a named group: names mean nothing here
      else throw new RegexpRefusal(`unsupported group syntax at offset ${this.i}`);
    } else {
      this.i++;
    }
    const body = this.alternation();
    if (source[this.i] !== ')') throw new RegexpRefusal('unterminated group');
    this.i++;
    return body;
  }

  private escape(): Node {
    const { source, i } = this;
    const next = source[i + 1] ?? '';
    if (next === 'b' || next === 'B') {
      this.i += 2;
      this.hasWordAssertion = true;
      return { type: 'assert', kind: next === 'b' ? WORD_BOUNDARY : NOT_WORD_BOUNDARY };
    }
    if (/[1-9]/.test(next) || next === 'k') throw new RegexpRefusal('backreferences are not supported');
    let end = i + 2;
    switch (next) {
      case '0':
        if (/[0-9]/.test(source[i + 2] ?? '')) throw new RegexpRefusal('octal escapes are not supported (use \\xHH)');
        break;
      case 'c':
        if (!/[A-Za-z]/.test(source[i + 2] ?? '')) throw new RegexpRefusal('\\c must be followed by a letter');
        end = i + 3;
        break;
      case 'x':
        if (/^[0-9A-Fa-f]{2}$/.test(source.slice(i + 2, i + 4))) end = i + 4;
        break;
      case 'u':
        if (this.unicode && source[i + 2] === '{') {
          end = source.indexOf('}', i) + 1;
        } else if (isHex4(source, i + 2)) {
          end = i + 6;
          // with u, an escaped surrogate pair is one code point
          const unit = parseInt(source.slice(i + 2, i + 6), 16);
          if (this.unicode && unit >= 0xd800 && unit <= 0xdbff && source.startsWith('\\u', end) && isHex4(source, end + 2)) {
            const trail = parseInt(source.slice(end + 2, end + 6), 16);
            if (trail >= 0xdc00 && trail <= 0xdfff) end += 6;
          }
        }
        break;
      case 'p':
      case 'P':
        if (this.unicode) end = source.indexOf('}', i) + 1;
        break;
      default:
        // \d \w \s \t \n ..., or an identity escape; with u an escaped character is ASCII anyway
        break;
    }
    return this.atom(i, end);
  }

  private quantified(node: Node): Node {
    const { source } = this;
    let min: number;
    let max: number;
    const c = source[this.i];
    if (c === '*' || c === '+' || c === '?') {
      min = c === '+' ? 1 : 0;
      max = c === '?' ? 1 : Infinity;
      this.i++;
    } else if (c === '{') {
      const braces = QUANTIFIER_BRACES.exec(source.slice(this.i));
      if (!braces) return node; // Annex B literal brace, read as the next term
      min = Number(braces[1]);
      max = braces[2] === undefined ? min : braces[3] === '' ? Infinity : Number(braces[3]);
      this.i += braces[0].length;
    } else {
      return node;
    }
    if (source[this.i] === '?') this.i++; // lazy: the same strings match
    return { type: 'repeat', body: node, min, max };
  }

  private atom(start: number, end: number): Node {
    const text = this.source.slice(start, end);
    this.i = end;
    let index = this.atomIndex.get(text);
    if (index === undefined) {
      index = this.atomSources.length;
      this.atomSources.push(text);
      this.atomIndex.set(text, index);
    }
    return { type: 'char', atom: index };
  }
}

/** Whether compiling the node emits anything (every copy of a repeated body that does costs at least one instruction). */
function emitsInstructions(node: Node): boolean {
  switch (node.type) {
    case 'char':
    case 'assert':
      return true;
    case 'seq':
      return node.items.some(emitsInstructions);
    case 'alt':
      return true;
    case 'repeat':
      return node.max > 0 && emitsInstructions(node.body);
  }
}

const QUANTIFIER_BRACES = /^\{(\d+)(,(\d*))?\}/;

function isHex4(text: string, at: number): boolean {
  return /^[0-9A-Fa-f]{4}$/.test(text.slice(at, at + 4));
}

/** Index just past the `]` that closes the class opening at `start` (a `]` right after `[` or `[^` closes it too, as in JavaScript). */
function classEnd(source: string, start: number): number {
  let i = start + 1;
  while (i < source.length) {
    if (source[i] === '\\') i += 2;
    else if (source[i] === ']') return i + 1;
    else i += 1;
  }
  throw new RegexpRefusal('unterminated character class');
}

/** Thompson's construction; counted repeats are expanded into copies of their body. */
class ProgramBuilder {
  readonly op: number[] = [];
  readonly arg: number[] = [];
  readonly alt: number[] = [];

  emit(op: number, arg = 0, alt = 0): number {
    if (this.op.length >= MAX_PROGRAM_SIZE) {
      throw new RegexpRefusal(`the pattern expands to more than ${MAX_PROGRAM_SIZE} states (large counted repeats such as {1000})`);
    }
    this.op.push(op);
    this.arg.push(arg);
    this.alt.push(alt);
    return this.op.length - 1;
  }

  get next(): number {
    return this.op.length;
  }

  compile(node: Node): void {
    switch (node.type) {
      case 'char':
        this.emit(CHAR, node.atom);
        return;
      case 'assert':
        this.emit(ASSERT, node.kind);
        return;
      case 'seq':
        for (const item of node.items) this.compile(item);
        return;
      case 'alt': {
        const exits: number[] = [];
        node.options.forEach((option, index) => {
          if (index === node.options.length - 1) {
            this.compile(option);
            return;
          }
          const split = this.emit(SPLIT);
          this.arg[split] = split + 1;
          this.compile(option);
          exits.push(this.emit(JMP));
          this.alt[split] = this.next;
        });
        for (const exit of exits) this.arg[exit] = this.next;
        return;
      }
      case 'repeat':
        this.compileRepeat(node.body, node.min, node.max);
        return;
    }
  }

  private compileRepeat(body: Node, min: number, max: number): void {
    // An empty body repeated is empty; skipping it also keeps `(?:){1000000000}` from looping here.
    if (max === 0 || !emitsInstructions(body)) return;
    if (max === Infinity) {
      if (min > 0) {
        // body{min-1} then body+ : the last copy loops back to itself
        for (let k = 0; k < min - 1; k++) this.compile(body);
        const loop = this.next;
        this.compile(body);
        const split = this.emit(SPLIT, loop);
        this.alt[split] = split + 1;
      } else {
        const split = this.emit(SPLIT);
        this.arg[split] = split + 1;
        this.compile(body);
        this.emit(JMP, split);
        this.alt[split] = this.next;
      }
      return;
    }
    for (let k = 0; k < min; k++) this.compile(body);
    const skips: number[] = [];
    for (let k = min; k < max; k++) {
      const split = this.emit(SPLIT);
      this.arg[split] = split + 1;
      skips.push(split);
      this.compile(body);
    }
    for (const split of skips) this.alt[split] = this.next;
  }
}
