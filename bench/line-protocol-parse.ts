/**
 * The storage worker's line protocol step in-process (no server): parseLineProtocol with the
 * worker's series cache, then linePointsByCollection, over the `bench:line-protocol` bodies
 * (5,000 lines a request in time order). CPU ns per line, median of the rounds:
 *
 *   node dist/bench/line-protocol-parse.js [--tags 100] [--points 8640] [--rounds 7]
 */

import { parseArgs } from 'node:util';
import { LineColumns, LineSeriesCache, parseLineProtocol } from '../native-free-codecs/line-protocol.js';
import { linePointsByCollection } from '../native-free-codecs/write-body-line.js';
import { Dataset, influxLines } from './dataset.js';
import { scopeFor } from './ours.js';

const { values } = parseArgs({ options: { tags: { type: 'string' }, points: { type: 'string' }, rounds: { type: 'string' } } });
const tags = Number(values.tags ?? 100);
const points = Number(values.points ?? 8640);
const rounds = Number(values.rounds ?? 7);
const scope = scopeFor('boiler-lp');
const dataset = new Dataset({ tags, points, tagsPerRequest: tags, pointsPerRequest: Math.max(1, Math.floor(5000 / tags)) });
const bodies = [...dataset.chunks()].map((chunk) => Buffer.from(influxLines('sensor', scope, chunk, 'time')));
const base = { organization: scope.organization, site: scope.site, unit: scope.unit, grid: scope.grid };

const cache = new LineSeriesCache();
const columns = new LineColumns(); // as the storage worker parses
const run = (step: 'parse' | 'both'): number => {
  const cpu = process.cpuUsage();
  let lines = 0;
  for (const body of bodies) {
    const batch = parseLineProtocol(body, { precision: 'ms', nowMs: 0, seriesCache: cache, columns });
    if (step === 'both') linePointsByCollection(batch, base);
    lines += batch.acceptedLines;
  }
  const used = process.cpuUsage(cpu);
  return ((used.user + used.system) * 1000) / lines;
};
for (const step of ['parse', 'both'] as const) {
  const ns = Array.from({ length: rounds }, () => run(step)).sort((a, b) => a - b);
  console.log(`${step === 'parse' ? 'parseLineProtocol' : 'parse + linePointsByCollection'}: ${ns[rounds >> 1].toFixed(1)} ns/line (best ${ns[0].toFixed(1)})`);
}
