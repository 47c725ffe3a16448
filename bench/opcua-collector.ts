/**
 * OPC UA collector load: `--items` monitored items (default 10,000) at 1 s sampling on one
 * subscription, against the node-opcua test server (test/support/opcua-server.ts, a child
 * process), for `--duration` seconds (default 60). Prints one markdown table. Not part of npm test.
 *
 *   node dist/bench/opcua-collector.js [--items 10000] [--duration 60] [--sign] [--quick]
 *
 * - Server: `--items` variables under Plant (100 lines), every one changing once a second
 *   (value = its change count, so stored values show a missing one), no Bad/Uncertain values.
 * - Ours: a fresh service (`startOurService`, the flags of `npm start`); one collector with the
 *   items listed one by one (node ids), sampling 1,000 ms, publishing 1,000 ms; anonymous over
 *   security None, or `--sign`: Sign + Basic256Sha256 with the thumbprint.
 * - CPU: the service process's CPU seconds (/proc) over the run, minus what the same process used
 *   idle (no collector) over as long before; as cores. The server's CPU is its own process's.
 * - Every value stored: the server is stopped at the end, the collector's status read once its
 *   last batch is written, and the points stored per tag counted back (`count` aggregator): their
 *   sum must equal the status's values_stored, and for the tags whose value rises by a fixed step
 *   per change, (max − min) / step + 1 must equal their count (no value missing between the first
 *   and the last). Values the server's 1 s sampling did not see (its sampling timer and the change
 *   timer drift apart) are the server's sampling, reported apart.
 */

import { BenchError, describeReply, int, machine, markdownTable, num, otherLoad, positiveIntOption, sizeOptions, sleep } from './runner.js';
import { cpuMeter, json, processCpuSeconds, startOurService, waitForQuiet } from './service.js';
import { countStoredPoints, createCollection, scopeFor } from './ours.js';
import { startOpcuaServer, variableInfo } from '../test/support/opcua-server.js';

const { sizes, values } = sizeOptions({ items: { type: 'string' }, duration: { type: 'string' }, sign: { type: 'boolean' } });
const itemCount = positiveIntOption(values, 'items', sizes.quick ? 1000 : 10_000);
const seconds = positiveIntOption(values, 'duration', sizes.quick ? 15 : 60);
const sign = values.sign === true;
const LINES = 100;
const SCOPE = scopeFor('opcua-bench');
/** Value per change count of the monotonic kinds (opcua-server-process.ts KINDS): step, by index % 10. */
const STEP: Record<number, number> = { 0: 1, 1: 1, 2: 1, 3: 2, 4: 1, 5: 1, 6: 3, 9: 1 };

async function main(): Promise<void> {
  await waitForQuiet(sizes.waitIdle);
  const service = await startOurService();
  const admin = service.client(4);
  try {
    await createCollection(admin, SCOPE);
    const pemReply = await admin.get('/svcapi/collectors/opcua/certificate');
    if (pemReply.status !== 200) throw describeReply('GET /svcapi/collectors/opcua/certificate', pemReply);
    const server = await startOpcuaServer({ variables: itemCount, lines: LINES, periodMs: 1000, faults: false, trustedClientPems: [pemReply.body.toString()] });
    try {
      // Idle baseline: the service with nothing to do, as long as the run.
      const idle0 = processCpuSeconds(service.process.pid);
      await sleep(Math.min(seconds, 20) * 1000);
      const idleCores = (processCpuSeconds(service.process.pid) - idle0) / Math.min(seconds, 20);

      const tags = Array.from({ length: itemCount }, (_, i) => `plant/${variableInfo(i, itemCount, LINES).path}`);
      const items = tags.map((tag, i) => ({ node_id: variableInfo(i, itemCount, LINES).nodeId, tag, sampling_interval_ms: 1000 }));
      const connection = sign
        ? { endpoint_url: server.endpointUrl, security_mode: 'Sign', security_policy: 'Basic256Sha256', publishing_interval_ms: 1000, server_certificate_sha1: server.thumbprint }
        : { endpoint_url: server.endpointUrl, publishing_interval_ms: 1000 };
      const created0 = performance.now();
      const created = await admin.postJson('/svcapi/collectors', { name: 'bench', kind: 'opcua', enabled: true, ...SCOPE, connection, items });
      if (created.status !== 200) throw describeReply('POST /svcapi/collectors', created);
      const id = json(created).id as string;
      const status = async () => json(await admin.get(`/svcapi/collectors/${id}/status`)) as { state: string; items: number; values_stored: number; values_skipped: number; error?: string };
      let s = await status();
      while (s.state !== 'connected' || s.items < itemCount) {
        if (performance.now() - created0 > 120_000) throw new BenchError(`collector not connected with ${itemCount} items: ${JSON.stringify(s)}`);
        await sleep(200);
        s = await status();
      }
      const connectSeconds = (performance.now() - created0) / 1000;
      process.stderr.write(`connected with ${s.items} items in ${connectSeconds.toFixed(1)} s; running ${seconds} s\n`);
      await sleep(5000); // the initial values of every item are past

      const other = cpuMeter();
      const cpu0 = processCpuSeconds(service.process.pid);
      const serverCpu0 = processCpuSeconds(server.pid!);
      const stored0 = (await status()).values_stored;
      const t0 = performance.now();
      await sleep(seconds * 1000);
      const wall = (performance.now() - t0) / 1000;
      const serviceCores = (processCpuSeconds(service.process.pid) - cpu0) / wall;
      const serverCores = (processCpuSeconds(server.pid!) - serverCpu0) / wall;
      const otherCores = other();
      const storedRate = ((await status()).values_stored - stored0) / wall;

      await server.stop('SIGKILL');
      await sleep(3000); // the collector's last batch is written
      const final = await status();
      const stored = await countStoredPoints(admin, SCOPE, tags, 0, Date.now() + 60_000);
      const total = [...stored.values()].reduce((a, b) => a + b, 0);
      const missing = await missingValues(admin, tags, stored);

      const rows = [
        ['monitored items', int(final.items)],
        ['security', sign ? 'Sign, Basic256Sha256' : 'None'],
        ['connect + create items', `${num(connectSeconds, 1)} s`],
        ['values stored per second (run)', int(storedRate)],
        ['service CPU (run)', `${num(serviceCores)} cores`],
        ['service CPU idle (before)', `${num(idleCores)} cores`],
        ['service CPU for the collector', `${num(serviceCores - idleCores)} cores (target < 0.3)`],
        ['OPC UA server CPU', `${num(serverCores)} cores`],
        ['values stored (status)', int(final.values_stored)],
        ['points counted back', int(total)],
        ['values skipped (status)', int(final.values_skipped)],
        ['tags with a value missing between first and last', int(missing.tagsWithGaps)],
        ['values missing there (the server\'s sampling)', int(missing.values)],
      ];
      console.log(`\nOPC UA collector, ${itemCount} items at 1 s, ${seconds} s run; ${machine()}${otherLoad(otherCores)}\n`);
      console.log(markdownTable(['figure', 'value'], rows));
      const ok = total === final.values_stored && serviceCores - idleCores < 0.3;
      console.log(`\n${total === final.values_stored ? 'every value the collector got is stored' : `⚠ stored ${total} ≠ values_stored ${final.values_stored}`}; `
        + `${serviceCores - idleCores < 0.3 ? 'CPU within target' : '⚠ CPU over target'}`);
      if (!ok) process.exitCode = 1;
      await admin.request('DELETE', `/svcapi/collectors/${id}`);
    } finally {
      await server.dispose();
    }
  } finally {
    admin.close();
    await service.dispose();
  }
}

/** For the tags whose value rises by a fixed step: values between their first and last that are not stored. */
async function missingValues(admin: ReturnType<Awaited<ReturnType<typeof startOurService>>['client']>, tags: string[], counts: Map<string, number>): Promise<{ tagsWithGaps: number; values: number }> {
  const monotonic = tags.filter((_, i) => STEP[i % 10] !== undefined);
  const agg = async (name: string) => {
    const reply = await admin.postJson('/svcapi/fast_query', {
      start_absolute: 0, end_absolute: Date.now() + 60_000, ...SCOPE,
      metrics: monotonic.map((tag) => ({ name: tag, aggregators: [{ name, sampling: { value: 3650, unit: 'days' } }] })),
    });
    if (reply.status !== 200) throw describeReply(`POST /svcapi/fast_query (${name})`, reply);
    return json(reply) as Record<string, Array<[number, number]>>;
  };
  const [min, max] = [await agg('min'), await agg('max')];
  let tagsWithGaps = 0;
  let values = 0;
  for (const tag of monotonic) {
    const i = tags.indexOf(tag);
    const lo = min[tag]?.[0]?.[1];
    const hi = max[tag]?.[0]?.[1];
    if (lo === undefined || hi === undefined) continue;
    const expected = Math.round(Math.abs(hi - lo) / STEP[i % 10]!) + 1;
    const gap = expected - (counts.get(tag) ?? 0);
    if (gap !== 0) tagsWithGaps++;
    values += Math.max(0, gap);
  }
  return { tagsWithGaps, values };
}

main().catch((err: unknown) => {
  console.error(err instanceof Error ? err.stack ?? err.message : err);
  process.exit(1);
});
