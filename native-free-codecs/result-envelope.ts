// The envelope of a streamed query result: the shards each produce their series as fragments
// (result-json.ts, result-msgpack.ts, result-binary.ts Format1Writer without a header), and the
// main thread sends what goes around them, built here with the same codecs:
//
//   json     `{`  fragments `"tag":[[ts,value],...]` joined by `,`  `}`
//   msgpack  a map header of the series count, then key and value per series
//   binary1  "HSB1" and the u32 series count (format1Header), then the tags
//   csv      the header row `time,tag,value` (result-csv.ts), then the rows of each tag
//
// Pure TypeScript: runs in a browser.

import { MsgpackPointWriter } from './result-msgpack.js';
import { format1Header } from './result-binary.js';
import { CSV_HEADER } from './result-csv.js';

/**
 * How a query's result is encoded: JSON, msgpack, binary format 1 (WIRE.md), CSV with the
 * time in epoch ms (`csv`) or ISO 8601 UTC (`csv-iso`), or, between the threads only, raw
 * float64 columns (`f64`, result-f64.ts: what the main thread computes on).
 */
export type ResultFormat = 'json' | 'msgpack' | 'binary1' | 'csv' | 'csv-iso' | 'f64';

export function isCsv(format: ResultFormat): format is 'csv' | 'csv-iso' {
  return format === 'csv' || format === 'csv-iso';
}

const OPEN_OBJECT = 0x7b;
const CLOSE_OBJECT = 0x7d;

/** What precedes the series fragments of a result holding `seriesCount` series. */
export function resultHead(format: ResultFormat, seriesCount: number): Uint8Array {
  if (format === 'json') return Uint8Array.of(OPEN_OBJECT);
  if (format === 'f64') return new Uint8Array(0);
  if (isCsv(format)) return new TextEncoder().encode(CSV_HEADER);
  if (format === 'msgpack') {
    const w = new MsgpackPointWriter(8);
    w.mapHeader(seriesCount);
    return w.bytes();
  }
  return format1Header(seriesCount);
}

/** What follows the last series fragment (nothing but JSON's closing brace). */
export function resultTail(format: ResultFormat): Uint8Array {
  return format === 'json' ? Uint8Array.of(CLOSE_OBJECT) : new Uint8Array(0);
}
