/**
 * Load on our read routes: 1-minute range queries and lastlist at several
 * concurrency levels, and N concurrent Server-Sent-Events clients on the
 * notification stream (connect time and delivery latency of notifications an
 * admin posts while they listen).
 *
 *   npm run bench:load -- [--tags 100] [--points 86400] [--seconds 5] [--levels 1,4,16]
 *                         [--sse-clients 100] [--notifications 20] [--quick] [--keep] [--wait-idle 120]
 *
 * The data set is written with HSW1 and sealed first, so queries read sealed days.
 */

import { Dataset } from './dataset.js';
import { createCollection, ingestOurs, lastlistQueries, sealAndMeasure, scopeFor, smallRangeQueries } from './ours.js';
import { commandLine, int, machine, markdownTable, mib, ms, num, Phases, sizeOptions, type RateResult } from './runner.js';
import { startOurService, waitForQuiet } from './service.js';
import { streamLoad } from './sse.js';

const { sizes, values } = sizeOptions({ levels: { type: 'string' }, 'sse-clients': { type: 'string' }, notifications: { type: 'string' } });
const levels = String(values.levels ?? (sizes.quick ? '1,4' : '1,4,16'))
  .split(',')
  .map(Number)
  .filter((n) => Number.isInteger(n) && n > 0);
const sseClients = Number(values['sse-clients'] ?? (sizes.quick ? 20 : 100));
const notificationCount = Number(values.notifications ?? (sizes.quick ? 5 : 20));
const dataset = new Dataset(sizes);
const scope = scopeFor('boiler-load');
const phases = new Phases();
const rows: string[][] = [];

await waitForQuiet(sizes.waitIdle);
process.stderr.write(`starting the service; loading ${int(dataset.totalPoints)} points with HSW1\n`);
const service = await startOurService({});
const admin = service.client(4);
await phases.run('load data', async () => {
  await createCollection(admin, scope);
  await ingestOurs({ label: 'HSW1 write_fast', client: admin, connections: 4, dataset, scope, encoding: 'hsw1' });
  await sealAndMeasure(admin, service, scope);
});

const rateRow = (label: string, c: number, r: RateResult | null) =>
  rows.push([label, String(c), r ? int(r.perSecond) : 'FAILED', r ? ms(r.p50) : '', r ? ms(r.p99) : '', r ? ms(r.max) : '', r ? num(r.otherCores, 1) : '']);
for (const c of levels) {
  const client = service.client(c);
  rateRow('fast_query, 1 tag × 1 minute (60 points)', c, await phases.run(`1-minute queries ×${c}`, () => smallRangeQueries(`1-minute queries ×${c}`, client, c, sizes.seconds, dataset, scope)));
  rateRow('lastlist, 10 tags', c, await phases.run(`lastlist ×${c}`, () => lastlistQueries(`lastlist ×${c}`, client, c, sizes.seconds, dataset, scope)));
  client.close();
}

const sse = await phases.run('notification stream', () => streamLoad(service, sseClients, notificationCount));

console.log('# Load: our read routes\n');
console.log(`\`${commandLine()}\`\n`);
console.log(`${machine()}; data set ${int(dataset.options.tags)} tags × ${int(dataset.options.points)} points (sealed), ${sizes.seconds} s per row, default settings\n`);
console.log(markdownTable(['route', 'connections', 'requests/s', 'p50', 'p99', 'max', 'cores used by other processes'], rows));
console.log('');
if (sse && 'absent' in sse) {
  console.log(`Notification stream (\`/svcapi/notifications/stream\`): n/a, the route is not there (probe with the token in the header ${sse.absent}).`);
} else if (sse) {
  console.log(
    markdownTable(
      ['notification stream', 'value'],
      [
        ['clients connected', `${sse.connected} of ${sseClients}`],
        ['connect until replay-complete', `p50 ${ms(sse.connect.p50)}, p99 ${ms(sse.connect.p99)}, max ${ms(sse.connect.max)}`],
        ['notifications posted (admin, 100 ms apart)', `${sse.posted}; POST p50 ${ms(sse.post.p50)}, p99 ${ms(sse.post.p99)}`],
        ['deliveries (clients × notifications)', `${int(sse.delivered)} of ${int(sse.connected * sse.posted)}`],
        ['delivery latency (POST sent → event received)', `p50 ${ms(sse.delivery.p50)}, p99 ${ms(sse.delivery.p99)}, max ${ms(sse.delivery.max)}`],
      ],
    ),
  );
}
console.log('');
console.log(`Peak RSS of the service (VmHWM): ${mib(service.process.peakRssBytes())}`);
console.log(phases.report(() => service.process.logTail(30)));

if (sizes.keep) process.stderr.write(`data dir kept: ${service.dataDir}\n`);
else await service.dispose();
process.exitCode = phases.failures.length > 0 ? 1 : 0;
