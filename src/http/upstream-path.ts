// Request values that become part of an upstream URL (the agent-service proxy's path, a PI
// WebID, a Qdrant collection name). An upstream may decode a path once, twice or not at all, and
// may then normalise `..` and treat `\` as `/`: so a value is judged by what it could turn into
// after any number of decodings, and one that could climb out of its place is refused (400 naming
// the parameter) before anything is sent. What is sent is rebuilt from the checked parts.

import { badRequest } from '../../shared/errors.js';

/** Decoding rounds before a value is refused as too deeply encoded (real names need one). */
const MAX_DECODINGS = 4;

/**
 * Every percent escape (`%2e`) and IIS-style `%u002e` escape replaced by its character, once.
 * Bytes stay one character each: enough to see `.`, `/`, `\` and NUL, whatever the upstream's
 * charset.
 */
function decodeOnce(text: string): string {
  return text
    .replace(/%u([0-9a-f]{4})/gi, (_, hex: string) => String.fromCharCode(parseInt(hex, 16)))
    .replace(/%([0-9a-f]{2})/gi, (_, hex: string) => String.fromCharCode(parseInt(hex, 16)));
}

/**
 * Why `value` may not be one segment of an upstream path (`what` names it), or null. Refused:
 * a `.` or `..` segment, `/` or `\` (a separator to some upstream), NUL and other control
 * characters, at any level of percent-encoding; the overlong UTF-8 forms of `.` and `/`
 * (%c0%ae, %c0%af), which lenient decoders turn into them; more than MAX_DECODINGS levels.
 */
export function segmentProblem(value: string, what: string): string | null {
  let text = value;
  for (let round = 0; ; round++) {
    if (text === '.' || text === '..') return `${what} may not be . or .. (no . or .. segments, in any encoding)`;
    if (/[/\\]/.test(text)) return `${what} may not hold / or \\, in any encoding`;
    if (/[\x00-\x1f\x7f]/.test(text)) return `${what} may not hold NUL or control characters, in any encoding`;
    if (/[\xc0\xc1]/.test(text) && text !== value) return `${what} may not hold overlong UTF-8 escapes (%c0, %c1)`;
    const next = decodeOnce(text);
    if (next === text) return null;
    if (round === MAX_DECODINGS) return `${what} is percent-encoded more than ${MAX_DECODINGS} times over`;
    text = next;
  }
}

/** `value` as an identifier for one upstream path segment: 400 naming `what` unless it is safe. */
export function checkedSegment(value: string, what: string): string {
  const problem = segmentProblem(value, what);
  if (problem) throw badRequest(problem);
  return value;
}

/** A character a path segment cannot carry as it is (RFC 3986 pchar), or a `%` that starts no escape. */
const NOT_PCHAR = /%(?![0-9A-Fa-f]{2})|[^A-Za-z0-9\-._~!$&'()*+,;=:@%]/g;

/**
 * An upstream path (`a/b%20c/d`, as the caller sent it below a proxy prefix) checked segment by
 * segment: 400 naming `what` for a segment that fails segmentProblem. Segments that pass go on
 * as sent (their escapes untouched, so `%2B` stays `%2B`), with any character a path cannot
 * carry percent-encoded.
 */
export function checkedPath(raw: string, what: string): string {
  return raw
    .split('/')
    .map((segment, i) => {
      const problem = segmentProblem(segment, `${what} segment ${i + 1}`);
      if (problem) throw badRequest(problem);
      try {
        return segment.replace(NOT_PCHAR, (c) => encodeURIComponent(c));
      } catch {
        throw badRequest(`${what} segment ${i + 1} is not valid text`);
      }
    })
    .join('/');
}
