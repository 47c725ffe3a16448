/**
 * Write-body decoders for ../shared/WIRE.md "Write bodies":
 *
 * - JSON, tag keyed: `{scope…, "tags": {"<tag>": [[ts, value], …]}}`
 * - JSON, columnar: `{scope…, "timestamps": [ts, …], "columns": {"<tag>": [value|null, …]}}`
 * - the same two shapes already decoded by another parser (msgpack): decodeWriteObject
 * - binary columnar batch "HSW1": u32 tags, u32 rows, u16 scope length + scope JSON, pad to 8,
 *   rows × f64 timestamps; per tag u16 name length, UTF-8 name, pad to 8, rows × f64 values
 *   (NaN = no value). Little-endian; padding counts from the start of the body.
 *
 * Every decoder returns one columnar PointBatch (no per-point objects or arrays).
 *
 * Errors: WriteBodyError `malformed` (not JSON, wrong shape: HTTP 400) is thrown where it is
 * found. `rejected` (well formed but not acceptable: HTTP 200 success:false) is sticky: the first
 * one is kept and the decoder goes on, so a body that is also malformed further on is reported
 * as malformed, and the rejection is thrown once at the end.
 *
 * Rules shared by all decoders:
 * - scope fields (organization, site, unit, grid) are strings, else malformed;
 * - a timestamp is an integer in 0..2^53-1 (-0 is stored as 0), and not below
 *   DecodeLimits.minTimestampMs when given (rejected, with a hint when it looks like epoch
 *   seconds); a value is a finite number;
 * - a tag name is 1..256 bytes of UTF-8, with no control character (Unicode Cc: U+0000..U+001F,
 *   U+007F..U+009F) and no unpaired surrogate;
 * - a tag named twice (a repeated JSON key, a repeated binary name) has its points merged,
 *   in order of appearance.
 *
 * The decoders live one per format (write-body-json.ts, write-body-object.ts,
 * write-body-hsw1.ts) on what they share (point-batch.ts); this module is the one callers
 * import. Pure TypeScript: runs in a browser (TextDecoder/TextEncoder are the only globals used
 * beyond the language).
 */

export { WriteBodyError, type DecodeLimits, type PointBatch, type SeriesLabels, type WriteScope } from './point-batch.js';
export { decodeJsonWriteBody } from './write-body-json.js';
export { decodeRowsObject, decodeWriteObject, isRowsObject } from './write-body-object.js';
export { decodeBinaryBatch, encodeBinaryBatch } from './write-body-hsw1.js';
