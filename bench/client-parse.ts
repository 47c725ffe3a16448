/**
 * What a client pays to parse one day of one tag (86,400 noisy points at 4 decimals) as JSON, in
 * our `fast_query` shape (`{"tag":[[ts,value],...]}`, SPEC.md) and in VictoriaMetrics'
 * `/api/v1/export` shape (`{"metric":{...},"values":[...],"timestamps":[...]}`): the bound the raw
 * JSON query row of issue 33 meets when the bench's single-threaded client parses every reply.
 *
 *   node dist/bench/client-parse.js [--points 86400] [--rounds 15]
 *
 * The same numbers in both shapes; the best of `--rounds` parses of each, in ns per point.
 */

import { parseArgs } from 'node:util';
import { NoisySignal } from './dataset.js';

const { values } = parseArgs({ options: { points: { type: 'string' }, rounds: { type: 'string' } } });
const points = Number(values.points ?? 86_400);
const rounds = Number(values.rounds ?? 15);

const signal = new NoisySignal('analog', 33);
const filled = new Float64Array(points);
signal.fill(filled);
const readings = Array.from(filled);
const timestamps = readings.map((_, i) => 1_767_225_600_000 + i * 1000);
const shapes = {
  'ours fast_query': JSON.stringify({ 'TI-1001': timestamps.map((t, i) => [t, readings[i]]) }),
  'VM /api/v1/export': JSON.stringify({ metric: { __name__: 'TI-1001' }, values: readings, timestamps }),
};

console.log('| shape | bytes per point | JSON.parse, ns per point (best of rounds) |\n|---|---|---|');
for (const [name, text] of Object.entries(shapes)) {
  let best = Infinity;
  for (let round = 0; round < rounds; round++) {
    const started = process.hrtime.bigint();
    JSON.parse(text);
    best = Math.min(best, Number(process.hrtime.bigint() - started) / points);
  }
  console.log(`| ${name} | ${(text.length / points).toFixed(1)} | ${best.toFixed(1)} |`);
}
