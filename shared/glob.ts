/**
 * Tag-name globs (WIRE.md part 3, `GET /svcapi/series?match=`): `*` is any run of characters,
 * `?` one character (one code point), `\` makes the next character literal; everything else
 * matches itself, case-sensitively. Matching is linear-time backtracking to the last `*` (no
 * regular expression, so no pattern can make it exponential). Pure: runs in a browser.
 */

export interface Glob {
  /** The literal text before the first wildcard (names without it cannot match). */
  prefix: string;
  /** Whether a name matches; null when every name with the prefix does (the glob is `prefix*`). */
  matches: ((name: string) => boolean) | null;
}

const ANY_RUN = -1;
const ANY_ONE = -2;

export function compileGlob(glob: string): Glob {
  // The pattern as UTF-16 code units, with the wildcards as negative numbers.
  const pattern: number[] = [];
  for (let i = 0; i < glob.length; i++) {
    const unit = glob.charCodeAt(i);
    if (unit === 0x5c && i + 1 < glob.length) pattern.push(glob.charCodeAt(++i)); // `\x`: x itself
    else if (unit === 0x2a) {
      if (pattern[pattern.length - 1] !== ANY_RUN) pattern.push(ANY_RUN);
    } else if (unit === 0x3f) pattern.push(ANY_ONE);
    else pattern.push(unit);
  }
  let literal = 0;
  while (literal < pattern.length && pattern[literal]! >= 0) literal++;
  const prefix = String.fromCharCode(...pattern.slice(0, literal));
  if (literal === pattern.length - 1 && pattern[literal] === ANY_RUN) return { prefix, matches: null };
  if (literal === pattern.length) return { prefix, matches: (name) => name === prefix };
  const units = Int32Array.from(pattern);
  return { prefix, matches: (name) => matchUnits(units, name) };
}

/** Code units the code point at `t` takes: 2 for a surrogate pair, else 1. */
function width(text: string, t: number): number {
  const unit = text.charCodeAt(t);
  if (unit >= 0xd800 && unit <= 0xdbff && t + 1 < text.length) {
    const next = text.charCodeAt(t + 1);
    if (next >= 0xdc00 && next <= 0xdfff) return 2;
  }
  return 1;
}

function matchUnits(pattern: Int32Array, text: string): boolean {
  let p = 0;
  let t = 0;
  let starP = -1;
  let starT = 0;
  while (t < text.length) {
    const want = p < pattern.length ? pattern[p]! : 0;
    if (p < pattern.length && want === ANY_RUN) {
      starP = p++;
      starT = t;
    } else if (p < pattern.length && want === ANY_ONE) {
      p++;
      t += width(text, t);
    } else if (p < pattern.length && want === text.charCodeAt(t)) {
      p++;
      t++;
    } else if (starP >= 0) {
      p = starP + 1; // let the last `*` take one more character
      starT += width(text, starT);
      t = starT;
    } else {
      return false;
    }
  }
  while (p < pattern.length && pattern[p] === ANY_RUN) p++;
  return p === pattern.length;
}
