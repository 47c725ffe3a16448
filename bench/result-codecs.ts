/**
 * In-process cost of the storage worker's per-point codecs on the bench:peers data set (no
 * server): the raw JSON and CSV query writers, and the sealed-block column codec per value mode
 * (bytes per point, encode and decode ns per point).
 *
 *   npx tsc -b && node dist/bench/result-codecs.js [rounds, default 5] [plant|noisy, default plant]
 *
 * Prints the best of the rounds for each row: on a shared 2-core machine the best round is the
 * one least disturbed by other work.
 */
import * as columnCodec from '../native-free-codecs/columns.js';
import { CsvPointWriter } from '../native-free-codecs/result-csv.js';
import { JsonPointWriter } from '../native-free-codecs/result-json.js';
import { Dataset, type DatasetKind } from './dataset.js';
import { markdownTable, num } from './runner.js';

const { ByteReader, ByteWriter, decodeValues, encodeValues, VALUES_MODE_SCALED_PACKED, VALUES_MODE_SCALED_RANS } = columnCodec;
// Looked up rather than imported, so this script also measures builds from before mode 5.
const MODE_5 = (columnCodec as Record<string, unknown>).VALUES_MODE_SCALED_PREDICTED as number | undefined;
const ROUNDS = Number(process.argv[2] ?? 5);
const KIND = (process.argv[3] ?? 'plant') as DatasetKind;
const BLOCK = 16_384; // workers/sealed-file.ts SEALED_BLOCK_POINTS

const dataset = new Dataset({ tags: 100, points: 86_400, tagsPerRequest: 100, pointsPerRequest: 86_400, dataset: KIND });
let timestamps = new Float64Array(0);
const columns: Float64Array[] = [];
for (const chunk of dataset.chunks()) {
  timestamps = Float64Array.from(chunk.timestamps);
  for (const column of chunk.columns) columns.push(Float64Array.from(column.values));
}
const points = timestamps.length * columns.length;

/** Best ns per point over the rounds. */
function best(run: () => void): number {
  let fastest = Infinity;
  for (let r = 0; r < ROUNDS; r++) {
    const start = performance.now();
    run();
    fastest = Math.min(fastest, performance.now() - start);
  }
  return (fastest * 1e6) / points;
}

const rows: string[][] = [];

const writer = new JsonPointWriter(1 << 23);
let jsonBytes = 0;
const jsonNs = best(() => {
  jsonBytes = 0;
  for (const values of columns) {
    writer.reset();
    writer.points(timestamps, values, 0, timestamps.length, false);
    jsonBytes += writer.length;
  }
});
rows.push(['raw JSON query writer, `[ts,value],...`', `${num(jsonBytes / points, 2)} B/point`, `${num(jsonNs, 1)} ns/point`, '']);

for (const timeFormat of ['ms', 'iso'] as const) {
  const csv = new CsvPointWriter(1 << 23, timeFormat);
  let csvBytes = 0;
  const csvNs = best(() => {
    csvBytes = 0;
    for (const [i, values] of columns.entries()) {
      csv.reset();
      csv.beginSeries(dataset.tagNames[i]);
      csv.rows(timestamps, values, 0, timestamps.length);
      csvBytes += csv.length;
    }
  });
  rows.push([`raw CSV query writer, \`time,tag,value\` rows, time_format=${timeFormat}`, `${num(csvBytes / points, 2)} B/point`, `${num(csvNs, 1)} ns/point`, '']);
}

for (const [label, mode] of [
  ['sealed values, writers\u2019 choice', 0],
  ['sealed values, forced packed (mode 3)', VALUES_MODE_SCALED_PACKED],
  ['sealed values, forced rANS (mode 4)', VALUES_MODE_SCALED_RANS],
  ...(MODE_5 === undefined ? [] : ([['sealed values, forced predicted rANS (mode 5)', MODE_5]] as const)),
] as const) {
  const blocks: Uint8Array[] = [];
  const w = new ByteWriter(1 << 20);
  const encodeNs = best(() => {
    blocks.length = 0;
    for (const values of columns) {
      for (let from = 0; from < values.length; from += BLOCK) {
        const n = Math.min(BLOCK, values.length - from);
        w.reset();
        encodeValues(values.subarray(from, from + n), n, w, mode);
        blocks.push(w.bytes().slice());
      }
    }
  });
  const out = new Float64Array(BLOCK);
  const decodeNs = best(() => {
    let b = 0;
    for (const values of columns) {
      for (let from = 0; from < values.length; from += BLOCK) {
        const n = Math.min(BLOCK, values.length - from);
        decodeValues(new ByteReader(blocks[b++]!), n, out);
      }
    }
  });
  const bytes = blocks.reduce((sum, block) => sum + block.length, 0);
  rows.push([label, `${num(bytes / points, 3)} B/point`, `${num(encodeNs, 1)} ns/point`, `${num(decodeNs, 1)} ns/point`]);
}

console.log(`# Per-point codec cost, ${dataset.options.tags} tags × ${dataset.options.points} points (the bench:peers data set \`${KIND}\`), best of ${ROUNDS} rounds\n`);
console.log(markdownTable(['codec', 'size', 'encode', 'decode'], rows));
console.log('\nSealed rows count the value column only (timestamps add about 12 bytes a block; the file adds lz4 framing and a 40-byte footer entry per block).');
