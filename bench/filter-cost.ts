/**
 * Cost of filtered entity reads over meta_data keys on a table of 10,000
 * rows (issue 12 item 6: every json_extract is guarded by json_valid, so a
 * stored row SQLite cannot read never fails the query). Run it on two builds
 * to compare them.
 *
 *   npx tsc -b && node dist/bench/filter-cost.js [--rows 10000] [--rounds 30]
 */

import { parseArgs } from 'node:util';
import { commandLine, int, machine, markdownTable, ms, percentiles } from './runner.js';
import { startOurService } from './service.js';

const { values } = parseArgs({ options: { rows: { type: 'string' }, rounds: { type: 'string' } }, strict: true });
const rowCount = Number(values.rows ?? 10_000);
const rounds = Number(values.rounds ?? 30);

const service = await startOurService({});
const client = service.client(1);
for (let start = 0; start < rowCount; start += 1000) {
  const batch = Array.from({ length: Math.min(1000, rowCount - start) }, (_, k) => {
    const i = start + k;
    return { name: `row ${i}`, kind: i % 7 === 0 ? 'pump' : 'valve', temp: i % 100, note: 'x'.repeat(200), spec: { rpm: i } };
  });
  const reply = await client.postJson('/svcapi/labels/bulk', batch);
  if (reply.status !== 200) throw new Error(`bulk: ${reply.status} ${reply.body.toString().slice(0, 200)}`);
}

const encode = (name: string, value: unknown) => `${name}=${encodeURIComponent(JSON.stringify(value))}`;
const cases: Array<[string, string]> = [
  ['list where kind = pump (1 in 7 rows)', `/svcapi/labels?${encode('filter', { where: { kind: 'pump' } })}`],
  ['list where temp >= 0, order by name (every row)', `/svcapi/labels?${encode('filter', { where: { temp: { gte: 0 } }, order: 'name DESC' })}`],
  ['count where spec.rpm > 5000', `/svcapi/labels/count?${encode('where', { 'spec.rpm': { gt: 5000 } })}`],
];
const rows: string[][] = [];
for (const [label, path] of cases) {
  const latencies: number[] = [];
  for (let round = 0; round < rounds + 3; round++) {
    const reply = await client.get(path);
    if (reply.status !== 200) throw new Error(`${label}: ${reply.status} ${reply.body.toString().slice(0, 200)}`);
    if (round >= 3) latencies.push(reply.ms); // the first rounds warm the page cache and the JIT
  }
  const p = percentiles(latencies);
  rows.push([label, ms(p.p50), ms(p.p99)]);
}
await service.dispose();

console.log(`# Filtered reads over meta_data keys, ${int(rowCount)} rows\n`);
console.log(`\`${commandLine()}\`\n`);
console.log(`${machine()}; ${rounds} rounds per row, one connection\n`);
console.log(markdownTable(['request', 'p50', 'p99'], rows));
