/**
 * The internal result format `f64` of the storage workers' collect (not on the wire to clients):
 * what the main thread reads when it computes on points itself (InfluxQL, PromQL, remote read).
 * Each series is one fragment, little-endian:
 *
 *   u32 key length, u32 points, the key as UTF-8, zero padding to a multiple of 8,
 *   points × f64 timestamps, points × f64 values
 *
 * Values travel as their bytes, so NaN payloads (Prometheus' stale marker) arrive exactly as
 * stored; JSON and msgpack would turn them into null or a plain NaN. Pure TypeScript.
 */

const utf8Encoder = new TextEncoder();
const utf8Decoder = new TextDecoder('utf-8', { fatal: true });

export function encodeF64Fragment(key: string, timestamps: Float64Array, values: Float64Array, count: number): Uint8Array {
  const name = utf8Encoder.encode(key);
  const head = (8 + name.length + 7) & ~7;
  const out = new Uint8Array(head + count * 16);
  const view = new DataView(out.buffer);
  view.setUint32(0, name.length, true);
  view.setUint32(4, count, true);
  out.set(name, 8);
  out.set(new Uint8Array(timestamps.buffer, timestamps.byteOffset, count * 8), head);
  out.set(new Uint8Array(values.buffer, values.byteOffset, count * 8), head + count * 8);
  return out;
}

/** The series of concatenated fragments, by key; an Error naming the byte where they stop making sense. */
export function decodeF64Fragments(bytes: Uint8Array): Map<string, { ts: Float64Array; values: Float64Array }> {
  const out = new Map<string, { ts: Float64Array; values: Float64Array }>();
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  let at = 0;
  while (at < bytes.length) {
    if (at + 8 > bytes.length) throw new Error(`f64 result: truncated fragment header at byte ${at}`);
    const nameLength = view.getUint32(at, true);
    const count = view.getUint32(at + 4, true);
    const head = (8 + nameLength + 7) & ~7;
    const end = at + head + count * 16;
    if (end > bytes.length) throw new Error(`f64 result: fragment at byte ${at} runs past the end`);
    const key = utf8Decoder.decode(bytes.subarray(at + 8, at + 8 + nameLength));
    // Copies into fresh arrays: aligned, and the bytes themselves (no NaN goes through a number).
    const ts = new Float64Array(count);
    const values = new Float64Array(count);
    new Uint8Array(ts.buffer).set(bytes.subarray(at + head, at + head + count * 8));
    new Uint8Array(values.buffer).set(bytes.subarray(at + head + count * 8, end));
    out.set(key, { ts, values });
    at = end;
  }
  return out;
}
