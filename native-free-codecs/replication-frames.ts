/**
 * The body of node-to-node replication requests (WIRE.md part 2 "Cluster"; src/cluster/): a
 * sequence of entries, each a u32 (little-endian) header length, the header as UTF-8 JSON, then
 * `header.b` body bytes (absent when `b` is -1). Pure TypeScript: runs in a browser.
 */

export interface ReplicationFrame {
  epoch: number;
  seq: number;
  kind: string;
  meta: string;
  created_ms: number;
  body: Uint8Array | null;
}

interface FrameHeader {
  e: number;
  s: number;
  k: string;
  m: string;
  c: number;
  b: number;
}

const encoder = new TextEncoder();
const decoder = new TextDecoder('utf-8', { fatal: true });

export function encodeFrames(frames: readonly ReplicationFrame[]): Uint8Array {
  const headers = frames.map((f) => encoder.encode(JSON.stringify({ e: f.epoch, s: f.seq, k: f.kind, m: f.meta, c: f.created_ms, b: f.body ? f.body.byteLength : -1 } satisfies FrameHeader)));
  let size = 0;
  for (let i = 0; i < frames.length; i++) size += 4 + headers[i].byteLength + (frames[i].body?.byteLength ?? 0);
  const out = new Uint8Array(size);
  const view = new DataView(out.buffer);
  let at = 0;
  for (let i = 0; i < frames.length; i++) {
    view.setUint32(at, headers[i].byteLength, true);
    out.set(headers[i], at + 4);
    at += 4 + headers[i].byteLength;
    const body = frames[i].body;
    if (body) {
      out.set(body, at);
      at += body.byteLength;
    }
  }
  return out;
}

/** Throws an Error naming what is wrong (the caller answers it as a 400). Bodies are views into `bytes`. */
export function decodeFrames(bytes: Uint8Array): ReplicationFrame[] {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const out: ReplicationFrame[] = [];
  let at = 0;
  while (at < bytes.byteLength) {
    if (at + 4 > bytes.byteLength) throw new Error(`entry ${out.length}: truncated header length`);
    const length = view.getUint32(at, true);
    if (at + 4 + length > bytes.byteLength) throw new Error(`entry ${out.length}: truncated header`);
    let h: FrameHeader;
    try {
      h = JSON.parse(decoder.decode(bytes.subarray(at + 4, at + 4 + length))) as FrameHeader;
    } catch {
      throw new Error(`entry ${out.length}: header is not JSON`);
    }
    at += 4 + length;
    const whole = (v: unknown) => typeof v === 'number' && Number.isSafeInteger(v);
    if (!h || typeof h !== 'object' || !whole(h.e) || !whole(h.s) || h.s < 1 || typeof h.k !== 'string' || typeof h.m !== 'string' || !whole(h.c) || !whole(h.b) || h.b < -1) {
      throw new Error(`entry ${out.length}: header lacks e, s, k, m, c or b`);
    }
    if (at + Math.max(0, h.b) > bytes.byteLength) throw new Error(`entry ${out.length}: truncated body`);
    const body = h.b < 0 ? null : bytes.subarray(at, at + h.b);
    at += Math.max(0, h.b);
    out.push({ epoch: h.e, seq: h.s, kind: h.k, meta: h.m, created_ms: h.c, body });
  }
  return out;
}
