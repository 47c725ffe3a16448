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
  const segmented = segmentsOf(pattern);
  const slow = (name: string) => matchUnits(units, name);
  if (segmented === null) return { prefix, matches: slow };
  // Runs without `?` are well-formed text: indexOf can only place them on code point boundaries.
  const anyOne = segmented.middle.some((g) => g.wild) || segmented.first?.wild === true || segmented.last?.wild === true;
  return { prefix, matches: anyOne ? (name) => (hasSurrogate(name) ? slow(name) : matchSegments(segmented, name)) : (name) => matchSegments(segmented, name) };
}

/**
 * The fast form of a glob: its runs between stars, as strings when they hold no `?` (found with
 * the native indexOf), else as code units. Leftmost placement of each run is enough for runs
 * separated by `*`. With a `?`, names with surrogate pairs go to matchUnits (`?` is one code point).
 */
interface Segments {
  first: SegmentUnits | null;
  middle: SegmentUnits[];
  last: SegmentUnits | null;
}
type SegmentUnits = { text: string; units: Int32Array; wild: boolean };

function segmentsOf(pattern: readonly number[]): Segments | null {
  const runs: number[][] = [[]];
  for (const unit of pattern) {
    if (unit === ANY_RUN) runs.push([]);
    else runs[runs.length - 1]!.push(unit);
  }
  if (runs.length < 2) return null;
  const toSegment = (run: number[]): SegmentUnits => ({
    text: run.some((u) => u === ANY_ONE) ? '' : String.fromCharCode(...run),
    units: Int32Array.from(run),
    wild: run.some((u) => u === ANY_ONE),
  });
  const first = runs[0]!.length > 0 ? toSegment(runs[0]!) : null;
  const last = runs[runs.length - 1]!.length > 0 ? toSegment(runs[runs.length - 1]!) : null;
  return { first, middle: runs.slice(1, -1).filter((r) => r.length > 0).map(toSegment), last };
}

function hasSurrogate(name: string): boolean {
  for (let i = 0; i < name.length; i++) {
    const unit = name.charCodeAt(i);
    if (unit >= 0xd800 && unit <= 0xdfff) return true;
  }
  return false;
}

/** Whether `segment` matches `name` at `at` (code units; no surrogates in name). */
function segmentAt(segment: SegmentUnits, name: string, at: number): boolean {
  if (!segment.wild) return name.startsWith(segment.text, at);
  const units = segment.units;
  if (at + units.length > name.length) return false;
  for (let k = 0; k < units.length; k++) if (units[k] !== ANY_ONE && units[k] !== name.charCodeAt(at + k)) return false;
  return true;
}

/** The leftmost position >= from where `segment` matches and ends by `limit`, or -1. */
function findSegment(segment: SegmentUnits, name: string, from: number, limit: number): number {
  if (!segment.wild) {
    const at = name.indexOf(segment.text, from);
    return at >= 0 && at + segment.text.length <= limit ? at : -1;
  }
  for (let at = from; at + segment.units.length <= limit; at++) if (segmentAt(segment, name, at)) return at;
  return -1;
}

function matchSegments(g: Segments, name: string): boolean {
  let from = 0;
  let limit = name.length;
  if (g.first) {
    if (!segmentAt(g.first, name, 0)) return false;
    from = g.first.units.length;
  }
  if (g.last) {
    const at = name.length - g.last.units.length;
    if (at < from || !segmentAt(g.last, name, at)) return false;
    limit = at;
  }
  for (const segment of g.middle) {
    const at = findSegment(segment, name, from, limit);
    if (at < 0) return false;
    from = at + segment.units.length;
  }
  return true;
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
