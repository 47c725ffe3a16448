/**
 * Write-body decoding speed: native-free-codecs/write-body.ts against JSON.parse plus a walk that
 * does the same validation and fills the same columnar arrays.
 *
 * Body: 10 tags × 1000 points, tag keyed, timestamps 1 s apart as 13-digit integers; values are
 * random walks with 2 decimals, integer counters and 0/1 states. The binary and msgpack rows
 * carry the same points.
 *
 *   npx tsc -b && node dist/bench/write-body-decoders.js [seconds per row, default 2]
 */
import { pack, unpack } from 'msgpackr';
import {
  decodeBinaryBatch,
  decodeJsonWriteBody,
  decodeWriteObject,
  encodeBinaryBatch,
} from '../native-free-codecs/write-body.js';
import { prng } from '../test/support/prng.js';

const TAGS = 10;
const POINTS = 1000;
const SECONDS = Number(process.argv[2] ?? 2);


function buildSeries(): { timestamps: number[]; columns: Array<{ name: string; values: number[] }> } {
  const random = prng(42);
  const timestamps = Array.from({ length: POINTS }, (_, i) => 1_700_000_000_000 + i * 1000);
  const kinds = ['TI', 'PI', 'FI', 'LI', 'FQ', 'XS', 'TI', 'PI', 'FQ', 'XS'];
  const columns = kinds.map((kind, t) => {
    const values: number[] = [];
    let x = kind === 'FQ' ? Math.floor(random() * 1e6) : 20 + random() * 80;
    for (let i = 0; i < POINTS; i++) {
      if (kind === 'FQ') x += Math.floor(random() * 5); // integer counter
      else if (kind === 'XS') x = random() < 0.02 ? 1 - (x > 0.5 ? 1 : 0) : x > 0.5 ? 1 : 0; // 0/1 state
      else x = Math.round((x + (random() - 0.5)) * 100) / 100; // random walk, 2 decimals
      values.push(x);
    }
    return { name: `${kind}-${101 + t}`, values };
  });
  return { timestamps, columns };
}

/** What a server would do with JSON.parse: walk the tree, validate, fill the same arrays. */
function parseAndWalk(text: string): number {
  const body = JSON.parse(text) as { tags: Record<string, unknown[]> };
  let ts = new Float64Array(1024);
  let vs = new Float64Array(1024);
  let n = 0;
  for (const name of Object.keys(body.tags)) {
    const points = body.tags[name];
    if (!Array.isArray(points)) throw new Error('bad shape');
    for (const point of points) {
      if (!Array.isArray(point) || point.length !== 2) throw new Error('bad point');
      const t = point[0];
      const v = point[1];
      if (typeof t !== 'number' || !Number.isInteger(t) || t < 0 || t > Number.MAX_SAFE_INTEGER) throw new Error('bad ts');
      if (typeof v !== 'number' || !Number.isFinite(v)) throw new Error('bad value');
      if (n === ts.length) {
        const t2 = new Float64Array(n * 2);
        t2.set(ts);
        ts = t2;
        const v2 = new Float64Array(n * 2);
        v2.set(vs);
        vs = v2;
      }
      ts[n] = t;
      vs[n] = v;
      n++;
    }
  }
  return n;
}

interface Row {
  name: string;
  bytes: number;
  run: () => number;
}

function measure(row: Row): { pointsPerSecond: number; mbPerSecond: number } {
  const warmUntil = performance.now() + 300;
  while (performance.now() < warmUntil) row.run();
  let points = 0;
  let runs = 0;
  const start = performance.now();
  const stop = start + SECONDS * 1000;
  let now = start;
  while (now < stop) {
    for (let i = 0; i < 10; i++) points += row.run();
    runs += 10;
    now = performance.now();
  }
  const seconds = (now - start) / 1000;
  return { pointsPerSecond: points / seconds, mbPerSecond: (runs * row.bytes) / seconds / 1e6 };
}

const { timestamps, columns } = buildSeries();
const scope = { organization: 'acme', site: 'plant-1', unit: 'boiler-2' };
const tags: Record<string, Array<[number, number]>> = {};
for (const column of columns) tags[column.name] = column.values.map((v, i) => [timestamps[i], v]);
const object = { ...scope, tags };
const text = JSON.stringify(object);
const json = new TextEncoder().encode(text);
const binary = encodeBinaryBatch(scope, timestamps, columns);
const msgpack = pack(object);
const decoder = new TextDecoder();

const rows: Row[] = [
  { name: 'decodeJsonWriteBody (bytes)', bytes: json.length, run: () => decodeJsonWriteBody(json).pointCount },
  { name: 'TextDecoder + JSON.parse + walk', bytes: json.length, run: () => parseAndWalk(decoder.decode(json)) },
  { name: 'JSON.parse + walk (text given)', bytes: json.length, run: () => parseAndWalk(text) },
  { name: 'decodeBinaryBatch', bytes: binary.length, run: () => decodeBinaryBatch(binary).pointCount },
  { name: 'msgpackr unpack + decodeWriteObject', bytes: msgpack.length, run: () => decodeWriteObject(unpack(msgpack)).pointCount },
];

// The decoders must agree before their speeds mean anything.
const expected = decodeJsonWriteBody(json);
for (const row of rows) {
  const got = row.run();
  if (got !== expected.pointCount) throw new Error(`${row.name} decoded ${got} points, expected ${expected.pointCount}`);
}

console.log(`write body: ${TAGS} tags × ${POINTS} points; JSON ${json.length} B, binary ${binary.length} B, msgpack ${msgpack.length} B; ${SECONDS} s per row, node ${process.version}`);
console.log('');
console.log(`${'decoder'.padEnd(38)} ${'points/s'.padStart(14)} ${'MB/s'.padStart(8)}`);
for (const row of rows) {
  const { pointsPerSecond, mbPerSecond } = measure(row);
  console.log(`${row.name.padEnd(38)} ${Math.round(pointsPerSecond).toLocaleString('en-US').padStart(14)} ${mbPerSecond.toFixed(0).padStart(8)}`);
}
