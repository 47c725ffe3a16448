// One chunk's points as a /svcapi/write body for the target collection. HSW1 (the binary
// columnar batch) when the tags share their timestamps, as a collector's data does: 8 bytes a
// value, nothing for the server to parse. Sparse points (each tag its own times) would leave a
// columnar batch mostly empty, so they go as tag-keyed JSON instead. Within a body, a tag and
// time given twice keeps the later line's value, as the store does across writes.

import { encodeBinaryBatch } from '../../native-free-codecs/write-body.js';
import type { CollectionScope } from '../../shared/scope.js';
import type { ChunkPoints } from './import-parse.js';

export interface WriteBody {
  body: Uint8Array;
  contentType: string;
}

/** HSW1 while its cells (rows × tags) are at most this many times the points. */
const MAX_EMPTY_RATIO = 2;

export function encodeChunk(scope: CollectionScope, points: ChunkPoints): WriteBody {
  const rows = distinctSorted(points.timestamps.subarray(0, points.pointCount));
  const tags = points.tagNames.length;
  if (rows.length * tags <= MAX_EMPTY_RATIO * points.pointCount + 64) return { body: columnar(scope, points, rows), contentType: 'application/octet-stream' };
  return { body: Buffer.from(tagKeyedJson(scope, points)), contentType: 'application/json' };
}

function distinctSorted(ts: Float64Array): Float64Array {
  const sorted = Float64Array.from(ts).sort();
  let n = 0;
  for (let i = 0; i < sorted.length; i++) if (i === 0 || sorted[i] !== sorted[n - 1]) sorted[n++] = sorted[i];
  return sorted.subarray(0, n);
}

function columnar(scope: CollectionScope, points: ChunkPoints, rows: Float64Array): Uint8Array {
  const columns = points.tagNames.map((name, t) => {
    const values = new Float64Array(rows.length).fill(NaN); // NaN: no value at that row
    let row = 0;
    for (let i = points.tagStart[t]; i < points.tagStart[t + 1]; i++) {
      const ts = points.timestamps[i];
      // A tag's times mostly ascend: look from the previous row before searching.
      if (rows[row] !== ts) row = rows[row + 1] === ts ? row + 1 : search(rows, ts);
      values[row] = points.values[i];
    }
    return { name, values };
  });
  return encodeBinaryBatch(scope, rows, columns);
}

function search(rows: Float64Array, ts: number): number {
  let lo = 0;
  let hi = rows.length - 1;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (rows[mid] < ts) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

function tagKeyedJson(scope: CollectionScope, points: ChunkPoints): string {
  const parts: string[] = [`{"organization":${JSON.stringify(scope.organization)},"site":${JSON.stringify(scope.site)},"unit":${JSON.stringify(scope.unit)},"grid":${JSON.stringify(scope.grid)},"tags":{`];
  points.tagNames.forEach((name, t) => {
    let text = `${t > 0 ? ',' : ''}${JSON.stringify(name)}:[`;
    for (let i = points.tagStart[t]; i < points.tagStart[t + 1]; i++) {
      const v = points.values[i];
      // String() is the shortest text that reads back to the same double; JSON can say -0 too.
      text += `${i > points.tagStart[t] ? ',' : ''}[${points.timestamps[i]},${Object.is(v, -0) ? '-0' : v}]`;
    }
    parts.push(`${text}]`);
  });
  parts.push('}}');
  return parts.join('');
}
