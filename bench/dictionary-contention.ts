/**
 * Issue 34, item 5, through the service: while writers add one new series per request to a
 * collection that holds `--existing` series, what another tenant's writes wait, and the
 * server's RSS per series.
 *
 *   node dist/bench/dictionary-contention.js [--existing 200000] [--seconds 10] [--growers 2]
 *
 * 1. Collection A is grown to `--existing` series (20,000 new series a /svcapi/write_fast
 *    request); the server's RSS before and after gives bytes per series (everything a series
 *    costs: worker dictionary and day-log index, the tag-to-scope table, heap the ingest left).
 * 2. One loop posts one point of a known tag per fsyncing /svcapi/write to collection B of
 *    another organization, for `--seconds` each: alone; beside `--growers` loops writing a known
 *    series of A; beside `--growers` loops each adding one new series to A per request. Latency
 *    of both sides: p50, p99, max.
 */

import { parseArgs } from 'node:util';
import { createCollection } from './ours.js';
import { describeReply } from './runner.js';
import { json, startOurService, vmRssKb, type HttpsClient } from './service.js';

const { values } = parseArgs({ options: { existing: { type: 'string' }, seconds: { type: 'string' }, growers: { type: 'string' } } });
const EXISTING = Number(values.existing ?? 200_000);
const SECONDS = Number(values.seconds ?? 10);
const GROWERS = Number(values.growers ?? 2);
const A = { organization: 'grower', site: 'plant-1', unit: 'dictionary', grid: 'main' };
const B = { organization: 'tenant-b', site: 'plant-2', unit: 'other', grid: 'main' };
const T0 = Date.UTC(2026, 0, 1);

async function write(client: HttpsClient, route: string, body: unknown): Promise<number> {
  const reply = await client.postJson(route, body);
  if (reply.status !== 200 || json(reply).success !== true) throw describeReply(`POST ${route}`, reply);
  return reply.ms;
}

function figures(ms: number[]): string {
  const sorted = [...ms].sort((a, b) => a - b);
  const at = (p: number) => sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))]!;
  return `${sorted.length} requests, p50 ${at(0.5).toFixed(1)} ms, p99 ${at(0.99).toFixed(1)} ms, max ${sorted[sorted.length - 1]!.toFixed(1)} ms`;
}

const service = await startOurService({ storage: { maxSeriesPerCollection: Math.max(1_000_000, EXISTING + 100_000) }, ingest: { rateLimitPerMinute: 10_000_000 } });
try {
  const client = service.client(GROWERS + 2);
  await createCollection(client, A);
  await createCollection(client, B);
  await write(client, '/svcapi/write', { ...B, tags: { 'B-1': [[T0, 0]] } });
  await write(client, '/svcapi/write_fast', { ...A, tags: { 'warm-0': [[T0, 0]] } });
  const rssBefore = vmRssKb(service.process.child.pid!)! * 1024;
  for (let from = 0; from < EXISTING; from += 20_000) {
    const tags: Record<string, Array<[number, number]>> = {};
    for (let k = from; k < Math.min(EXISTING, from + 20_000); k++) tags[`plant.area-${String(k % 100).padStart(2, '0')}.loop-${k}.pv`] = [[T0, k]];
    await write(client, '/svcapi/write_fast', { ...A, tags });
  }
  const rssAfter = vmRssKb(service.process.child.pid!)! * 1024;

  let next = EXISTING;
  /** Another tenant's writes for SECONDS, beside `growers` loops of `grow` (none: alone). */
  const phase = async (growers: number, fresh: boolean): Promise<{ grower: number[]; other: number[] }> => {
    const grower: number[] = [];
    const other: number[] = [];
    const until = performance.now() + SECONDS * 1000;
    const growLoop = async () => {
      while (performance.now() < until) grower.push(await write(client, '/svcapi/write', { ...A, tags: { [fresh ? `new-${next++}` : 'warm-0']: [[T0 + next++, 1]] } }));
    };
    const otherLoop = async () => {
      for (let i = 1; performance.now() < until; i++) other.push(await write(client, '/svcapi/write', { ...B, tags: { 'B-1': [[T0 + i, i]] } }));
    };
    await Promise.all([...Array.from({ length: growers }, growLoop), otherLoop()]);
    return { grower, other };
  };
  const alone = await phase(0, false);
  const known = await phase(GROWERS, false);
  const adding = await phase(GROWERS, true);
  console.log(`${EXISTING.toLocaleString('en')} series: server RSS ${(rssBefore / 2 ** 20).toFixed(0)} -> ${(rssAfter / 2 ** 20).toFixed(0)} MiB, ${Math.round((rssAfter - rssBefore) / EXISTING)} bytes per series`);
  console.log(`another tenant's /svcapi/write alone: ${figures(alone.other)}`);
  console.log(`${GROWERS} loops writing a known series of A: ${figures(known.grower)}; the other tenant meanwhile: ${figures(known.other)}`);
  console.log(`${GROWERS} loops adding one series to A a request: ${figures(adding.grower)}; the other tenant meanwhile: ${figures(adding.other)}`);
} finally {
  await service.dispose();
}
